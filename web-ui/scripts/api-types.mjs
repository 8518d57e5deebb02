// The API's TypeScript types, generated from its OpenAPI document by openapi-typescript, so
// the UI's types (src/types.ts, aliases of these) cannot drift from what the server sends.
//
//   node scripts/api-types.mjs --write   (npm run api:gen)    regenerate src/api-schema.d.ts
//   node scripts/api-types.mjs --check   (npm run api:check)  fail, with a diff, if it differs
//
// The document comes from `loupe openapi` (the binary: LOUPE_BIN, else
// $CARGO_TARGET_DIR/release/loupe, else ../target/release/loupe), or from a saved file with
// `--doc FILE`. The generated file is committed: `npm run build` reads it and never needs the
// binary (scripts/setup builds the UI before the binary exists); `npm run e2e` runs the check
// first, when the binary has just been built.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const webUi = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repo = resolve(webUi, '..');
const OUT = join(webUi, 'src', 'api-schema.d.ts');

const HEADER = `// Generated from the HTTP API's OpenAPI document (\`loupe openapi\`) by openapi-typescript
// (web-ui/scripts/api-types.mjs). Do not edit: \`npm run api:gen --prefix web-ui\` regenerates it,
// \`npm run api:check --prefix web-ui\` (run by \`npm run e2e\`) fails when it is out of date.
// 64-bit integers are \`number\` here; src/types.ts says which ones json.ts keeps exact (Big).

`;

function loupeBin() {
  if (process.env.LOUPE_BIN) return resolve(process.env.LOUPE_BIN);
  const target = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, 'target');
  return join(target, 'release', 'loupe');
}

function readDoc(docFile) {
  if (docFile) return readFileSync(docFile, 'utf8');
  const bin = loupeBin();
  if (!existsSync(bin)) {
    fail(`the loupe binary is not at ${bin}: build it (cargo build --release) or set LOUPE_BIN (or CARGO_TARGET_DIR), or pass --doc FILE`);
  }
  try {
    return execFileSync(bin, ['openapi'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  } catch (e) {
    fail(`\`${bin} openapi\` failed: ${(e.stderr || e.message).trim()}`);
  }
}

export async function generate(docText) {
  const doc = JSON.parse(docText);
  const ast = await openapiTS(doc, { silent: true, alphabetize: false });
  return HEADER + astToString(ast);
}

function fail(msg) {
  console.error(`api-types: ${msg}`);
  process.exit(1);
}

/** A unified diff of two texts (diff -u when there is one, else the first differing line). */
function diffText(oldText, newText, oldName, newName) {
  const dir = mkdtempSync(join(tmpdir(), 'loupe-api-types-'));
  try {
    const a = join(dir, 'a');
    const b = join(dir, 'b');
    writeFileSync(a, oldText);
    writeFileSync(b, newText);
    try {
      execFileSync('diff', ['-u', '--label', oldName, '--label', newName, a, b], { encoding: 'utf8' });
      return '';
    } catch (e) {
      if (e.status === 1) return e.stdout;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const ol = oldText.split('\n');
  const nl = newText.split('\n');
  const i = ol.findIndex((l, k) => l !== nl[k]);
  return `first difference at line ${i + 1}:\n- ${ol[i]}\n+ ${nl[i]}\n`;
}

async function main() {
  const args = process.argv.slice(2);
  const mode = args.includes('--write') ? 'write' : args.includes('--check') ? 'check' : null;
  const docAt = args.indexOf('--doc');
  const docFile = docAt >= 0 ? args[docAt + 1] : undefined;
  if (!mode || (docAt >= 0 && !docFile)) fail('usage: node scripts/api-types.mjs --write|--check [--doc openapi.json]');
  const source = docFile ?? `${loupeBin()} openapi`;
  const text = await generate(readDoc(docFile));
  const rel = relative(process.cwd(), OUT) || OUT;
  if (mode === 'write') {
    const before = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
    writeFileSync(OUT, text);
    console.log(before === text ? `api-types: ${rel} already up to date (${source})` : `api-types: wrote ${rel} from ${source}`);
    return;
  }
  const committed = existsSync(OUT) ? readFileSync(OUT, 'utf8') : '';
  if (committed === text) {
    console.log(`api-types: ${rel} matches ${source}`);
    return;
  }
  const diff = diffText(committed, text, `${rel} (committed)`, `${rel} (from ${source})`);
  console.error(diff);
  fail(
    `${rel} is out of date: the HTTP API's OpenAPI document changed (diff above: - committed, + what the API says now).\n` +
      '  Regenerate it with `npm run api:gen --prefix web-ui` (which then type-checks the UI against it):\n' +
      '  any UI code reading a field the API no longer has stops compiling; fix it (or src/types.ts), and commit both.',
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
