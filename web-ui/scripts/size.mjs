// Prints each asset of dist/ with its raw and gzip size, and the gzip total (the bundle goal is
// well under 300 KB gzipped).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

const root = new URL('../dist/', import.meta.url).pathname;
const files = [];
(function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else files.push(p);
  }
})(root);
let raw = 0;
let gz = 0;
for (const f of files.sort()) {
  const bytes = readFileSync(f);
  const g = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gz += g;
  console.log(`  ${relative(root, f).padEnd(40)} ${(bytes.length / 1024).toFixed(1).padStart(8)} KB  gzip ${(g / 1024).toFixed(1).padStart(7)} KB`);
}
console.log(`bundle: ${files.length} files, ${(raw / 1024).toFixed(1)} KB raw, ${(gz / 1024).toFixed(1)} KB gzipped`);
