// End-to-end tests of the web UI against a real `loupe serve` (node's test runner +
// playwright-core driving Debian's Chromium). Sets everything up itself: a temp data dir filled
// by `loupe-synth --wide-stacks 30000`, a team token, `loupe serve` on port 0 with a 2-s
// analysis time limit; then drives the page the binary serves at `/`.
//
// Env: LOUPE_BIN, LOUPE_SYNTH_BIN (default ../target/release/{loupe,loupe-synth}, honouring
// CARGO_TARGET_DIR), LOUPE_WASM_DIR (default: what `loupe-synth --wasm-dir` says — the Rust
// tests' locator: $CARGO_TARGET_DIR, then udf-sdk/target), CHROMIUM (default /usr/bin/chromium),
// LOUPE_E2E_STATIC=1 (development only: serve web-ui/dist from this script, proxying /api and
// /metrics to loupe, for a binary that does not embed the UI yet).

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { loadTs } from '../test/load-ts.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const webUi = resolve(here, '..');
const repo = resolve(webUi, '..');
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, 'target');
const LOUPE = process.env.LOUPE_BIN ?? join(targetDir, 'release', 'loupe');
const SYNTH = process.env.LOUPE_SYNTH_BIN ?? join(targetDir, 'release', 'loupe-synth');
/** Where the udf-sdk components are: the testbed's one locator says (`loupe-synth --wasm-dir`). */
function wasmDir() {
  if (process.env.LOUPE_WASM_DIR) return process.env.LOUPE_WASM_DIR;
  if (!existsSync(SYNTH)) return join(repo, 'udf-sdk', 'target', 'wasm32-wasip2', 'release'); // reported below
  try {
    return execFileSync(SYNTH, ['--wasm-dir'], { encoding: 'utf8' }).trim();
  } catch (e) {
    throw new Error(`finding the analyses: ${String(e.stderr ?? e.message).trim()}`);
  }
}
const WASM_DIR = wasmDir();
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(here, 'screenshots');
const { percent } = await loadTs('format.ts'); // the UI's own percentage formatting
const T0 = 1795392000000000000n; // 2026-11-23T00:00:00Z
const S = 1_000_000_000n;

// ---- helpers ----

/** JSON with big integers (≥ 16 digits) kept as strings, as the UI parses it. */
function parseJsonBig(text) {
  return JSON.parse(text.replace(/"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\d.eE])/g, (m) => (m[0] === '"' ? m : `"${m}"`)));
}

function run(bin, args) {
  return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
}

let server; // child process
let serverLog = '';
let staticServer;
let base; // http://127.0.0.1:PORT of the page
let apiBase; // http://127.0.0.1:PORT of loupe
let token;
let synth;
let dataDir;
let userDataDir;
let context;
const figures = {};
const consoleErrors = [];
let allowed = []; // regexes of console errors a test expects (HTTP errors it provokes)

async function api(path, opts = {}) {
  const res = await fetch(apiBase + path, { ...opts, headers: { Authorization: `Bearer ${token}`, ...(opts.headers ?? {}) } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return parseJsonBig(text);
}

function startServe() {
  return new Promise((resolvePromise, reject) => {
    server = spawn(LOUPE, ['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--retention', '36500days', '--udf-time-limit', '2s'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => reject(new Error(`loupe serve did not start in 30 s:\n${serverLog}`)), 30_000);
    server.stdout.on('data', (d) => {
      out += d;
      serverLog += d;
      const m = /serving .* on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolvePromise(m[1]);
      }
    });
    server.stderr.on('data', (d) => {
      serverLog += d;
      if (serverLog.length > 200_000) serverLog = serverLog.slice(-100_000);
    });
    server.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`loupe serve exited with ${code}:\n${serverLog}`));
    });
  });
}

/** Development fallback: dist/ + a proxy of /api and /metrics to loupe. */
function startStatic(target) {
  const dist = join(webUi, 'dist');
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };
  const t = new URL(target);
  staticServer = createServer((req, res) => {
    if (req.url.startsWith('/api/') || req.url.startsWith('/metrics')) {
      const p = httpRequest({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      req.pipe(p);
      p.on('error', (e) => (res.writeHead(502), res.end(String(e))));
      return;
    }
    const path = join(dist, decodeURIComponent(req.url.split('?')[0]));
    const file = existsSync(path) && statSync(path).isFile() ? path : join(dist, 'index.html');
    res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  return new Promise((r) => staticServer.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${staticServer.address().port}`)));
}

async function newPage({ width = 1280, height = 720, dark = false } = {}) {
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = `${msg.text()} (${msg.location()?.url ?? ''})`;
    if (allowed.some((re) => re.test(msg.text()))) return;
    consoleErrors.push(`[${page.url()}] ${text}`);
  });
  page.on('pageerror', (err) => consoleErrors.push(`[${page.url()}] pageerror: ${err.stack ?? err}`));
  return page;
}

/** Navigates inside the app (hash change) and waits for the view to finish. */
async function go(page, hash) {
  if (!page.url().startsWith(base)) {
    await page.goto(`${base}/${hash}`);
  } else {
    await page.evaluate((h) => {
      window.__loupe.ready = false;
      location.hash = h;
    }, hash);
  }
  await page.waitForFunction(() => window.__loupe && window.__loupe.ready === true, null, { timeout: 60_000 });
}

/** The page starts with the team token in its session (as if entered before). */
async function withToken(page) {
  await page.addInitScript((t) => sessionStorage.setItem('loupe.token', t), token);
}

async function shoot(page, name) {
  for (const theme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: theme });
    // Charts and canvases redraw in the new colours on the next frame.
    await page.waitForFunction((t) => document.documentElement.dataset.resolvedTheme === t, theme);
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(SHOTS, `${name}-${theme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => document.documentElement.dataset.resolvedTheme === 'light');
}

function assertNoConsoleErrors() {
  const errs = consoleErrors.splice(0);
  assert.deepEqual(errs, [], `console errors:\n${errs.join('\n')}`);
}

function sum(a) {
  return a.reduce((s, v) => s + v, 0);
}

function countNodes(root) {
  let n = 0;
  const stack = [root];
  while (stack.length) {
    const x = stack.pop();
    n++;
    for (const c of x.children ?? []) stack.push(c);
  }
  return n;
}

/**
 * The profile page's Libraries table shows exactly `GET /api/v1/profile`'s modules for the
 * page's own query (from its hash): the same names in the same order, self samples and self %.
 * Returns the API's modules.
 */
async function assertModulesTable(page) {
  const hash = new URL(page.url()).hash;
  assert.match(hash, /^#\/profile\?/);
  const prof = await api(`/api/v1/profile?${hash.slice(hash.indexOf('?') + 1)}`);
  assert.ok(prof.modules.length > 0, 'the profile has modules');
  await page.waitForSelector('#modules-table');
  const more = page.locator('section.modules > button');
  if (await more.isVisible()) {
    if ((await more.textContent()).startsWith('Show all')) await more.click();
  }
  const rows = await page.$$eval('#modules-table tbody tr', (trs) =>
    trs.map((tr) => ({ name: tr.dataset.module, shown: tr.querySelector('th').textContent, self: tr.dataset.self, selfText: tr.cells[1].textContent, selfPct: tr.querySelector('.share-text').textContent, width: tr.querySelector('.share-fill').style.width })),
  );
  assert.deepEqual(
    rows.map((r) => [r.name, r.shown, r.self, r.selfText, r.selfPct]),
    prof.modules.map((m) => [m.name, m.name, String(m.self), m.self.toLocaleString('en-US'), percent(m.self, prof.samples)]),
    'Libraries rows equal the API’s modules',
  );
  // The bars: the widest is the first row's, in proportion to the self share.
  for (const [i, r] of rows.entries()) {
    assert.ok(Math.abs(parseFloat(r.width) - (100 * prof.modules[i].self) / prof.samples) <= 0.051, `${r.name}: bar ${r.width}`);
  }
  assert.equal(await page.getAttribute('#modules-table', 'data-top-module'), prof.modules[0].name);
  return prof.modules;
}

// ---- setup ----

before(async () => {
  for (const [what, p] of [
    ['loupe', LOUPE],
    ['loupe-synth', SYNTH],
    ['chromium', CHROMIUM],
    ['burst_detector.wasm', join(WASM_DIR, 'burst_detector.wasm')],
    ['hostile_infinite_loop.wasm', join(WASM_DIR, 'hostile_infinite_loop.wasm')],
  ]) {
    if (!existsSync(p)) throw new Error(`${what} not found at ${p} (see web-ui/README.md: LOUPE_BIN, LOUPE_SYNTH_BIN, LOUPE_WASM_DIR, CHROMIUM)`);
  }
  mkdirSync(SHOTS, { recursive: true });
  dataDir = mkdtempSync(join(tmpdir(), 'loupe-e2e-data-'));
  userDataDir = mkdtempSync(join(tmpdir(), 'loupe-e2e-chromium-'));
  const synthOut = run(SYNTH, ['--data-dir', dataDir, '--wide-stacks', '30000']);
  const line = synthOut.trim().split('\n').reverse().find((l) => l.trim().startsWith('{'));
  synth = parseJsonBig(line);
  synth.run_a = String(synth.run_a);
  synth.run_b = String(synth.run_b);
  token = /loupe_[0-9a-f]{64}/.exec(run(LOUPE, ['token', 'add', 'e2e', '--data-dir', dataDir]))?.[0];
  assert.ok(token, 'loupe token add printed a token');
  apiBase = await startServe();
  if (process.env.LOUPE_E2E_STATIC === '1') {
    base = await startStatic(apiBase);
    console.log(`# LOUPE_E2E_STATIC=1: page from web-ui/dist on ${base}, API ${apiBase}`);
  } else {
    base = apiBase;
    const res = await fetch(`${base}/`);
    const body = await res.text();
    if (!res.ok || !/<html/i.test(body)) {
      throw new Error(
        `loupe serve does not serve the web UI at / (GET / → ${res.status}). Build web-ui (npm run build) before the loupe binary, which embeds web-ui/dist. ` +
          '(LOUPE_E2E_STATIC=1 serves dist/ from the test instead, for development.)',
      );
    }
  }
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    acceptDownloads: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 720 },
  });
  for (const p of context.pages()) await p.close();
});

after(async () => {
  await context?.close().catch(() => {});
  server?.removeAllListeners('exit');
  server?.kill('SIGTERM');
  staticServer?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  // Figures: printed, never asserted.
  const dist = join(webUi, 'dist');
  if (existsSync(dist)) {
    let gz = 0;
    let raw = 0;
    const walk = (d) => {
      for (const n of readdirSync(d)) {
        const p = join(d, n);
        if (statSync(p).isDirectory()) walk(p);
        else {
          const b = readFileSync(p);
          raw += b.length;
          gz += gzipSync(b, { level: 9 }).length;
        }
      }
    };
    walk(dist);
    figures.bundle_raw_kb = +(raw / 1024).toFixed(1);
    figures.bundle_gzip_kb = +(gz / 1024).toFixed(1);
  }
  const f = (v) => (typeof v === 'number' ? v.toFixed(1) : '?');
  if (figures.run_drawn_ms === undefined && figures.flame_render_ms === undefined) console.log('\n# (the tests did not get far enough to measure the views)');
  console.log('\n# ---- web-ui figures (goals: run view ≤ 300 ms, flame graph ≤ 300 ms, bundle well under 300 KB gzipped) ----');
  console.log(`# run view, 11 metrics × 2,000 points: navigation → charts drawn ${f(figures.run_drawn_ms)} ms (data → drawn ${f(figures.run_render_ms)} ms; fetch+parse ${f(figures.run_fetch_ms)} ms); cold page load → drawn ${f(figures.run_cold_drawn_ms)} ms`);
  console.log(`# flame graph, wide profile ${figures.flame_nodes} nodes: render ${f(figures.flame_render_ms)} ms (layout ${f(figures.flame_layout_ms)} + draw ${f(figures.flame_draw_ms)}); fetch+parse ${f(figures.profile_fetch_ms)} ms; redraw after zoom ${f(figures.flame_redraw_ms)} ms`);
  console.log(`# bundle: ${figures.bundle_gzip_kb} KB gzipped (${figures.bundle_raw_kb} KB raw)`);
  writeFileSync(join(SHOTS, 'figures.json'), JSON.stringify(figures, null, 2) + '\n');
});

// ---- tests ----

test('a bad token shows a clear error, the token field, then a good token works', async () => {
  allowed = [/status of 401/];
  const page = await newPage();
  await page.goto(`${base}/#/`);
  await page.waitForFunction(() => window.__loupe?.ready === true);
  // health says auth is on and there is no token: the token field is open.
  await page.waitForSelector('#token-panel:not([hidden])');
  await page.fill('#token-input', 'loupe_' + '0'.repeat(64));
  await page.click('#token-panel button[type=submit]');
  await page.waitForSelector('.auth-banner:not([hidden])');
  const banner = await page.textContent('.auth-banner');
  assert.match(banner, /unknown or revoked/i);
  assert.match(banner, /401/);
  assert.ok(await page.isVisible('#token-input'), 'token field shown after 401');
  const box = await page.textContent('main .error');
  assert.match(box, /401/);
  assert.match(box, /unauthorized/);
  await shoot(page, 'token-error');
  await page.fill('#token-input', token);
  await page.click('#token-panel button[type=submit]');
  await page.waitForSelector('#days-table');
  assert.equal(await page.isVisible('.auth-banner'), false);
  await page.close();
  allowed = [];
  assertNoConsoleErrors();
});

test('overview: host, store size and retained days', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  await page.waitForSelector('#days-table');
  const stats = await api('/api/v1/stats');
  const health = await api('/api/v1/health');
  assert.equal(await page.getAttribute('[data-total-bytes]', 'data-total-bytes'), String(stats.total_bytes));
  assert.equal(await page.getAttribute('[data-disk-bytes]', 'data-disk-bytes'), String(stats.disk_bytes));
  assert.equal(await page.getAttribute('[data-hostname]', 'data-hostname'), health.hostname);
  assert.equal(await page.getAttribute('[data-collecting]', 'data-collecting'), 'false');
  assert.ok(await page.isVisible('#days-table tr[data-date="2026-11-23"]'));
  assert.ok(await page.isVisible('a.cal-cell[href="#/day/2026-11-23"]'));
  await shoot(page, 'overview');
  // The theme toggle: auto → light → dark → auto, whatever the system prefers.
  const theme = page.locator('header button', { hasText: 'Theme:' });
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.resolvedTheme), 'dark');
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme ?? 'auto'), 'auto');
  await page.close();
  assertNoConsoleErrors();
});

test('day: runs with per-run totals, filter by interval', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/day/2026-11-23');
  await page.waitForSelector(`#runs-table tr[data-run-id="${synth.run_a}"][data-total-in-bytes]`);
  await page.waitForSelector(`#runs-table tr[data-run-id="${synth.run_b}"][data-total-in-bytes]`);
  for (const id of [synth.run_a, synth.run_b]) {
    const r = await api(`/api/v1/runs/${id}`);
    assert.equal(await page.getAttribute(`tr[data-run-id="${id}"]`, 'data-total-in-bytes'), String(sum(r.metrics.in_bytes)));
  }
  await shoot(page, 'day');
  await page.selectOption('#filter-interval', '1000000');
  assert.equal(await page.locator('#runs-table tbody tr').count(), 1);
  assert.ok(await page.isVisible(`tr[data-run-id="${synth.run_a}"]`));
  await page.close();
  assertNoConsoleErrors();
});

test('ids and times above 2^53 stay exact (answers stubbed in the browser)', async () => {
  const page = await newPage();
  await withToken(page);
  const id = '18446744073709551615';
  const start = '1893456000123456789'; // 2030-01-01T00:00:00.123456789Z
  const run = (withMetrics) =>
    `{"id": ${id}, "iface": "eth9", "host": "h", "start_unix_ns": ${start}, "interval_ns": 1000000, "samples": 3, "cpus": [0], "stored_bytes": 10` +
    (withMetrics ? `, "local_prefixes": [], "source": "agent", "metrics": {${['in_bytes', 'out_bytes', 'in_packets', 'out_packets', 'in_ce_bytes', 'in_retx_bytes', 'out_retx_bytes', 'in_conns', 'out_conns', 'in_cross_region_bytes', 'out_cross_region_bytes'].map((m) => `"${m}": [1, 2, 3]`).join(', ')}}` : '') +
    '}';
  await page.route(/\/api\/v1\/runs\?/, (r) => r.fulfill({ status: 200, contentType: 'application/json', body: `[${run(false)}]` }));
  await page.route(new RegExp(`/api/v1/runs/${id}`), (r) => r.fulfill({ status: 200, contentType: 'application/json', body: run(true) }));
  await go(page, '#/day/2030-01-01');
  await page.waitForSelector(`tr[data-run-id="${id}"][data-total-in-bytes="6"]`);
  assert.equal(await page.getAttribute(`tr[data-run-id="${id}"] a`, 'href'), `#/run/${id}`);
  assert.match(await page.textContent(`tr[data-run-id="${id}"] td`), /^00:00:00\.123456Z$/);
  await go(page, `#/run/${id}`);
  assert.equal(await page.getAttribute('article.run', 'data-run-id'), id);
  assert.equal(await page.getAttribute('#profile-link', 'href'), `#/profile?from=${start}&to=${BigInt(start) + 3_000_000n}`);
  assert.match(await page.textContent('article.run .kv'), /2030-01-01T00:00:00\.123456789Z → 2030-01-01T00:00:00\.126456789Z/);
  await page.close();
  assertNoConsoleErrors();
});

test('run view: exact totals, bursts and stall, timings; narrow screen', async () => {
  const run = await api(`/api/v1/runs/${synth.run_a}?per_cpu=true`);
  assert.equal(String(run.id), synth.run_a, 'ids stay exact');
  const page = await newPage();
  await withToken(page);
  // Cold: a page load straight into the run view.
  await page.goto(`${base}/#/run/${synth.run_a}`);
  await page.waitForFunction(() => window.__loupe.ready === true && window.__loupe.timings.runDrawn > 0, null, { timeout: 60_000 });
  figures.run_cold_drawn_ms = await page.evaluate(() => window.__loupe.timings.runDrawn);
  // Warm: in-app navigation from the overview (what a user clicking a run sees).
  await go(page, '#/');
  await page.evaluate(() => delete window.__loupe.timings.runDrawn);
  await go(page, `#/run/${synth.run_a}`);
  await page.waitForFunction(() => window.__loupe.timings.runDrawn > 0);
  const t = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.run_drawn_ms = t.runDrawn;
  figures.run_render_ms = t.runRender;
  figures.run_fetch_ms = t.runFetched;

  const article = page.locator('article.run');
  assert.equal(await article.getAttribute('data-run-id'), synth.run_a);
  assert.equal(await article.getAttribute('data-total-bytes'), String(sum(run.metrics.in_bytes)));
  assert.equal(await article.getAttribute('data-total-out-bytes'), String(sum(run.metrics.out_bytes)));
  assert.equal(await article.getAttribute('data-bursts'), '100-109,500-502,1999');
  // The synthetic data has a 10-slot NIC stall and a short (3-slot) one.
  assert.equal(await article.getAttribute('data-stalls'), '1200-1209,1500-1502');
  assert.equal(await page.locator('#run-charts .uplot').count(), 11);
  assert.equal(await page.locator('.heatmap-label').count(), run.per_cpu.length);
  for (const m of Object.keys(run.metrics)) {
    assert.equal(await page.getAttribute(`#run-totals tr[data-metric="${m}"]`, 'data-total'), String(sum(run.metrics[m])), m);
  }
  const start = BigInt(run.start_unix_ns);
  const href = await page.getAttribute('#profile-link', 'href');
  assert.equal(href, `#/profile?from=${start}&to=${start + BigInt(run.samples) * BigInt(run.interval_ns)}`);
  // Zoom via a burst button: every chart follows.
  await page.click('.spans.bursts button >> nth=0');
  const ranges = () => page.evaluate(() => [...new Set([...document.querySelectorAll('#run-charts .uplot')].map((u) => u.dataset.xRange))]);
  assert.deepEqual(await ranges(), ['0.06,0.15'], 'every chart zoomed to the first burst (slots 100–109 ± 40)');
  await page.click('text=Reset zoom');
  assert.deepEqual(await ranges(), ['0,1.999']);
  await shoot(page, 'run');
  // Narrow laptop screen: no horizontal page overflow.
  await page.setViewportSize({ width: 800, height: 720 });
  await page.waitForTimeout(300);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `page overflows by ${overflow}px at 800 px`);
  await page.screenshot({ path: join(SHOTS, 'run-800px-light.png'), fullPage: false });
  await page.close();
  assertNoConsoleErrors();
});

test('profile of run B window: hot_leaf on top, search, keyboard zoom, pprof download', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, `#/run/${synth.run_b}`);
  assert.equal(await page.getAttribute('article.run', 'data-bursts'), '10-14');
  await page.click('#profile-link');
  await page.waitForFunction(() => window.__loupe.view === 'profile' && window.__loupe.ready === true);
  await page.waitForSelector('#functions-table');
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'hot_leaf');
  assert.equal(await page.textContent('#functions-table tbody tr:first-child th'), 'hot_leaf');
  // Libraries: the module shares the API gives for the same range.
  await assertModulesTable(page);
  // Search highlights.
  await page.fill('.flame-search', 'hot_leaf');
  await page.press('.flame-search', 'Enter');
  assert.ok(Number(await page.getAttribute('.flame', 'data-matches')) > 0);
  // Keyboard: focus the graph, go down to the heaviest child, zoom in, reset.
  await page.focus('.flame-canvas');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom !== '');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom === '');
  // Hover shows a tooltip.
  const box = await page.locator('.flame-canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 5);
  await page.waitForSelector('.flame-tooltip:not([hidden])');
  // Filter by comm: only "batch" (other_leaf).
  await page.fill('#profile-comm', 'batch');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => window.__loupe.ready === true && document.querySelector('#functions-table')?.dataset.topFunction === 'other_leaf');
  await page.fill('#profile-comm', '');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => window.__loupe.ready === true && document.querySelector('#functions-table')?.dataset.topFunction === 'hot_leaf');
  // pprof: fetched with the Authorization header, saved via a Blob.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#pprof-download')]);
  const path = await download.path();
  const bytes = readFileSync(path);
  assert.ok(bytes.length > 20 && bytes[0] === 0x1f && bytes[1] === 0x8b, 'pprof is gzip');
  await page.fill('.flame-search', 'hot_leaf');
  await page.press('.flame-search', 'Enter');
  await shoot(page, 'profile');
  await page.close();
  assertNoConsoleErrors();
});

test('profile: the Libraries table equals the API’s module shares; an empty list is said plainly', async () => {
  const page = await newPage();
  await withToken(page);
  // The whole day, every process: the program's own binaries of both synthetic workloads.
  await go(page, `#/profile?from=${T0}&to=${T0 + 86_400n * S}`);
  const modules = await assertModulesTable(page);
  assert.ok(modules.length >= 2, `${modules.length} modules`);
  assert.equal(await page.getAttribute('#modules-table thead th:nth-child(2)', 'aria-sort'), 'descending');
  assert.equal(await page.getAttribute('section.modules .table-wrap', 'aria-label'), 'Libraries: each module’s share of the samples');
  await shoot(page, 'profile-libraries');
  // A profile with samples but no modules (answer stubbed in the browser).
  await page.route(/\/api\/v1\/profile\?/, (r) =>
    r.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({ samples: 3, lost: 0, functions: [{ name: 'f', self: 3, total: 3 }], modules: [], flamegraph: { name: 'all', value: 3, children: [{ name: 'f', value: 3 }] } }),
    }),
  );
  await go(page, `#/profile?from=${T0}&to=${T0 + S}`);
  await page.waitForSelector('#modules-empty');
  assert.equal(await page.locator('#modules-table').count(), 0);
  assert.match(await page.textContent('#modules-empty'), /No module information/);
  await page.close();
  assertNoConsoleErrors();
});

test('wide profile: ≥ 50,000-node flame graph renders and stays interactive', async () => {
  const from = (T0 + 120n * S).toString();
  const to = (T0 + 86_400n * S).toString();
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}&pid=300`);
  const nodes = countNodes(prof.flamegraph);
  assert.ok(nodes >= 50_000, `wide flame graph has ${nodes} nodes`);
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  await page.evaluate(() => (window.__loupe.timings = {}));
  await go(page, `#/profile?from=${from}&to=${to}&pid=300`);
  await page.waitForSelector('.flame');
  assert.equal(Number(await page.getAttribute('.flame', 'data-nodes')), nodes);
  const t = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.flame_nodes = t.flameNodes;
  figures.flame_render_ms = t.flameRender;
  figures.flame_layout_ms = t.flameLayout;
  figures.flame_draw_ms = t.flameDraw;
  figures.profile_fetch_ms = t.profileFetched;
  // Interactive: click to zoom, hover, search, and time a redraw.
  const box = await page.locator('.flame-canvas').boundingBox();
  await page.mouse.click(box.x + box.width / 3, box.y + 18 * 3 + 5);
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom !== '');
  figures.flame_redraw_ms = await page.evaluate(
    () =>
      new Promise((r) => {
        const t0 = performance.now();
        document.querySelector('.flame-canvas').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
        requestAnimationFrame(() => r(performance.now() - t0));
      }),
  );
  await page.mouse.move(box.x + box.width / 2, box.y + 18 * 4 + 5);
  await page.waitForSelector('.flame-tooltip:not([hidden])');
  await page.fill('.flame-search', prof.functions[0].name);
  await page.press('.flame-search', 'Enter');
  assert.ok(Number(await page.getAttribute('.flame', 'data-matches')) > 0);
  await shoot(page, 'flame-wide');
  await page.close();
  assertNoConsoleErrors();
});

test('analyses: upload burst-detector through the file input, run it: a 4-row table', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/analyses');
  await page.setInputFiles('#upload-file', join(WASM_DIR, 'burst_detector.wasm'));
  await page.fill('#upload-name', 'burst-detector');
  await page.click('#upload-form button[type=submit]');
  await page.waitForSelector('[data-uploaded="burst-detector"]', { timeout: 60_000 });
  await page.waitForSelector('#udfs-table tr[data-udf="burst-detector"]');
  await go(page, '#/analyses/burst-detector');
  assert.equal(await page.getAttribute('#param-threshold_bps', 'required'), '');
  await page.fill('#param-threshold_bps', '10000000');
  await page.click('#invoke-run');
  await page.waitForSelector('#result-table', { timeout: 60_000 });
  assert.equal(await page.getAttribute('#result-table', 'data-rows'), '4');
  assert.equal(await page.locator('#result-table tbody tr').count(), 4);
  assert.ok(Number(await page.getAttribute('.result-meta', 'data-elapsed-ns')) > 0);
  await shoot(page, 'analyses');
  await page.close();
  assertNoConsoleErrors();
});

test('analyses: a time-limited module shows 408 time_limit plainly', async () => {
  allowed = [/status of 408/];
  const page = await newPage();
  await withToken(page);
  await go(page, '#/analyses');
  await page.setInputFiles('#upload-file', join(WASM_DIR, 'hostile_infinite_loop.wasm'));
  await page.fill('#upload-name', 'loop');
  await page.click('#upload-form button[type=submit]');
  await page.waitForSelector('[data-uploaded="loop"]', { timeout: 60_000 });
  await go(page, '#/analyses/loop');
  await page.click('#invoke-run');
  await page.waitForSelector('#invoke-result .error', { timeout: 60_000 });
  assert.equal(await page.getAttribute('#invoke-result .error', 'data-status'), '408');
  assert.equal(await page.getAttribute('#invoke-result .error', 'data-code'), 'time_limit');
  const text = await page.textContent('#invoke-result .error');
  assert.match(text, /408/);
  assert.match(text, /time_limit/);
  await shoot(page, 'analysis-error');
  await page.close();
  allowed = [];
  assertNoConsoleErrors();
});

test('analyses: series, flame graph and text results render', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/analyses');
  for (const [file, name] of [
    ['cross_region_share.wasm', 'xr'],
    ['flame.wasm', 'flame'],
    ['noop.wasm', 'noop'],
  ]) {
    await page.setInputFiles('#upload-file', join(WASM_DIR, file));
    await page.fill('#upload-name', name);
    await page.click('#upload-form button[type=submit]');
    await page.waitForSelector(`[data-uploaded="${name}"]`, { timeout: 60_000 });
  }
  const invoke = async (name, range) => {
    await go(page, `#/analyses/${name}`);
    if (range) {
      await page.fill('#invoke-from', range[0]);
      await page.fill('#invoke-to', range[1]);
    }
    await page.click('#invoke-run');
    await page.waitForFunction(() => document.querySelector('#invoke-result')?.dataset.status, null, { timeout: 60_000 });
    assert.equal(await page.getAttribute('#invoke-result', 'data-status'), '200');
  };
  await invoke('xr');
  assert.equal(await page.getAttribute('#invoke-result', 'data-kind'), 'series');
  assert.ok((await page.locator('#result-series .uplot').count()) >= 1);
  await shoot(page, 'analysis-series');
  // RFC 3339 input: run B's window (the flame graph of its samples: hot_leaf on top).
  await invoke('flame', ['2026-11-23T00:01:00Z', '2026-11-23T00:01:20Z']);
  assert.equal(await page.getAttribute('#invoke-result', 'data-kind'), 'flamegraph');
  assert.ok(Number(await page.getAttribute('#result-flame .flame', 'data-nodes')) > 1);
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'hot_leaf');
  await shoot(page, 'analysis-flame');
  await invoke('noop');
  assert.equal(await page.getAttribute('#invoke-result', 'data-kind'), 'text');
  assert.equal((await page.textContent('#result-text')).trim(), 'ok');
  await page.close();
  assertNoConsoleErrors();
});

test('every view fits a narrow laptop screen (800 px) without horizontal page overflow', async () => {
  const page = await newPage({ width: 800, height: 720 });
  await withToken(page);
  const from = (T0 + 60n * S).toString();
  const to = (T0 + 80n * S).toString();
  for (const hash of ['#/', '#/day/2026-11-23', `#/run/${synth.run_a}`, `#/profile?from=${from}&to=${to}`, '#/analyses/burst-detector']) {
    await go(page, hash);
    await page.waitForTimeout(200);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${hash} overflows by ${overflow}px at 800 px`);
  }
  await page.screenshot({ path: join(SHOTS, 'analyses-800px-light.png'), fullPage: true });
  await page.close();
  assertNoConsoleErrors();
});
