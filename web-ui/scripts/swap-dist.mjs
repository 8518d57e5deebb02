// `vite build` writes to .dist-new/; this swaps it in for dist/ with renames, so a `cargo build`
// running meanwhile (which embeds dist/) never sees a half-written or empty directory.
import { existsSync, renameSync, rmSync } from 'node:fs';

const root = new URL('../', import.meta.url).pathname;
const dist = `${root}dist`;
const fresh = `${root}.dist-new`;
const old = `${root}.dist-old`;
if (!existsSync(`${fresh}/index.html`)) {
  console.error('swap-dist: .dist-new/index.html missing: did vite build fail?');
  process.exit(1);
}
rmSync(old, { recursive: true, force: true });
if (existsSync(dist)) renameSync(dist, old);
renameSync(fresh, dist);
rmSync(old, { recursive: true, force: true });
