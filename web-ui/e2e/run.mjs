// End-to-end tests of the web UI against a real `loupe serve` (node's test runner +
// playwright-core driving Debian's Chromium). Sets everything up itself: a temp data dir filled
// by `loupe-synth --wide-stacks 30000`, timeline events that a real `loupe agent` stored from
// two real writer processes (`loupe-tl-testwriter`), a team token, `loupe serve` on port 0 with
// a 2-s analysis time limit; then drives the page the binary serves at `/`.
//
// Env: LOUPE_BIN, LOUPE_SYNTH_BIN (default ../target/release/{loupe,loupe-synth}, honouring
// CARGO_TARGET_DIR), LOUPE_TL_WRITER_BIN (default ../target/release/loupe-tl-testwriter, same
// rule), LOUPE_WASM_DIR (default: what `loupe-synth --wasm-dir` says — the Rust
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
import { parseJsonBig, shoot } from './shared.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const webUi = resolve(here, '..');
const repo = resolve(webUi, '..');
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(repo, 'target');
const LOUPE = process.env.LOUPE_BIN ?? join(targetDir, 'release', 'loupe');
const SYNTH = process.env.LOUPE_SYNTH_BIN ?? join(targetDir, 'release', 'loupe-synth');
/** The timeline crate's test writer (`cargo build --release -p loupe-timeline --bin loupe-tl-testwriter`). */
const TL_WRITER = process.env.LOUPE_TL_WRITER_BIN ?? join(targetDir, 'release', 'loupe-tl-testwriter');
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
const { count: countText, percent } = await loadTs('format.ts'); // the UI's own count and percentage formatting
const { lagText } = await loadTs('timeline.ts'); // the UI's own lag formatting
const { rateText, targetText } = await loadTs('probes.ts'); // the probe views' own wording
const T0 = 1795392000000000000n; // 2026-11-23T00:00:00Z
const S = 1_000_000_000n;

// ---- helpers ----

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
let timeline; // { lagsPid, wallPid }: the writers whose events the agent stored
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

/**
 * Real timeline events in the data dir: a `loupe agent` (no stacks, no HTTP, no interfaces)
 * tails a ring directory while two real writer processes log into it — `lags 1000` (8,000
 * events on levels 0–3: loop, phase, step, detail, loop_end) and `wall 300` (level 0, 1 ms
 * apart, arg0 a Unix-ns clock reading > 2^53) — then, once every ring was drained and retired,
 * is stopped with SIGTERM, before `loupe serve` opens the store.
 */
async function addTimelineEvents() {
  const rings = mkdtempSync(join(tmpdir(), 'loupe-e2e-rings-'));
  let log = '';
  const agent = spawn(LOUPE, ['agent', '--no-stacks', '--no-http', '--data-dir', dataDir, '--timeline-dir', rings, '--retention', '36500days'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  agent.stderr.on('data', (d) => (log += d));
  const agentExit = new Promise((r) => agent.on('exit', (code, signal) => r({ code, signal })));
  const writer = (args) =>
    new Promise((resolvePromise, reject) => {
      const c = spawn(TL_WRITER, args, { env: { ...process.env, LOUPE_TIMELINE_DIR: rings }, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (d) => (err += d));
      c.on('exit', (code) => (code === 0 ? resolvePromise(c.pid) : reject(new Error(`${TL_WRITER} ${args.join(' ')} exited with ${code}: ${err}`))));
    });
  try {
    const [lagsPid, wallPid] = await Promise.all([writer(['lags', '1000']), writer(['wall', '300'])]);
    // The agent drains a ring whose writer exited, stores its last batch, then removes the file.
    const deadline = Date.now() + 30_000;
    while (readdirSync(rings).length) {
      if (Date.now() > deadline) throw new Error(`the agent did not retire the rings in 30 s: ${readdirSync(rings)}\n${log}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    agent.kill('SIGTERM');
    const { code, signal } = await agentExit;
    if (code !== 0) throw new Error(`loupe agent exited with ${code ?? signal}:\n${log}`);
    timeline = { lagsPid, wallPid };
  } finally {
    agent.kill('SIGKILL');
    rmSync(rings, { recursive: true, force: true });
  }
}

/** Coloured (saturated) pixels of each lane of the timeline canvas: bars, not the grey lanes or grid. */
async function lanePixels(page) {
  return page.evaluate(() => {
    const chart = document.querySelector('.tl-chart');
    const canvas = chart.querySelector('canvas');
    const axis = Number(chart.dataset.axisH);
    const laneH = Number(chart.dataset.laneH);
    const lanes = chart.dataset.lanes.split(',').length;
    const k = canvas.width / canvas.clientWidth;
    const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const out = [];
    for (let l = 0; l < lanes; l++) {
      let n = 0;
      for (let y = Math.ceil((axis + l * laneH) * k); y < Math.floor((axis + (l + 1) * laneH) * k); y++) {
        for (let x = 0; x < canvas.width; x++) {
          const p = (y * canvas.width + x) * 4;
          const [r, g, b, a] = [data[p], data[p + 1], data[p + 2], data[p + 3]];
          if (a > 200 && Math.max(r, g, b) - Math.min(r, g, b) > 60) n++;
        }
      }
      out.push(n);
    }
    return out;
  });
}

// ---- setup ----

before(async () => {
  for (const [what, p] of [
    ['loupe', LOUPE],
    ['loupe-synth', SYNTH],
    ['loupe-tl-testwriter', TL_WRITER],
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
  await addTimelineEvents();
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
  if (figures.flame_nodes_all !== undefined) {
    const all = figures.profile_fetch_all_ms + figures.flame_render_all_ms;
    const opened = figures.profile_fetch_ms + figures.flame_render_ms;
    console.log(`# wide profile as it opens (nodes under 0.01 % left out): ${figures.flame_nodes} nodes, fetch+parse+draw ${f(opened)} ms; every node (${figures.flame_nodes_all}): ${f(all)} ms (fetch+parse ${f(figures.profile_fetch_all_ms)}); ratio ${(opened / all).toFixed(3)}`);
    console.log(`BENCH ${JSON.stringify({ name: 'ui_wide_profile_open_ms', value: Number(opened.toFixed(1)), unit: 'ms', baseline: Number(all.toFixed(1)) })}`);
  }
  console.log(`# timeline, ${figures.timeline_events} events of one process (${figures.timeline_pages} pages): navigation → drawn ${f(figures.timeline_drawn_ms)} ms (events fetch+parse ${f(figures.timeline_fetch_ms)} ms, draw ${f(figures.timeline_draw_ms)} ms); redraw after a zoom ${f(figures.timeline_redraw_ms)} ms`);
  console.log(`# probes: session of ${figures.probe_functions} functions (${figures.probe_buckets} histogram buckets, ${figures.probe_tree_rows} call-tree rows): navigation → drawn ${f(figures.probe_drawn_ms)} ms (fetch+parse ${f(figures.probe_fetch_ms)} ms, histograms ${f(figures.probe_hist_ms)} ms of which drawing ${f(figures.probe_hist_draw_ms)} ms); list of ${figures.probes_listed} sessions fetched in ${f(figures.probes_list_fetch_ms)} ms`);
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
  await shoot(page, SHOTS, 'token-error');
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
  await shoot(page, SHOTS, 'overview');
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
  await shoot(page, SHOTS, 'day');
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
  await shoot(page, SHOTS, 'run');
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
  await shoot(page, SHOTS, 'profile');
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
  await shoot(page, SHOTS, 'profile-libraries');
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

test('profile: waits off the CPU in time waited, from the form’s checkbox to the API’s sums', async () => {
  const page = await newPage();
  await withToken(page);
  // The synthetic waits (loupe-synth: testbed's synthetic::waits): svc 3 × 10 ms, batch 2 × 5 ms kept 1 in 4.
  const from = T0, to = T0 + 86_400n * S;
  await go(page, `#/profile?from=${from}&to=${to}`);
  assert.equal(await page.getAttribute('.profile-summary', 'data-kind'), 'on_cpu');
  await page.check('#profile-off-cpu');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('.profile-summary')?.getAttribute('data-kind') === 'off_cpu' && window.__loupe.ready === true);
  assert.match(await page.evaluate(() => location.hash), /kind=off_cpu/);
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}&kind=off_cpu`);
  assert.equal(prof.kind, 'off_cpu');
  assert.equal(Number(prof.flamegraph.value), 70_000_000);
  assert.equal(await page.getAttribute('.profile-summary', 'data-samples'), '5');
  assert.equal(await page.getAttribute('.profile-summary', 'data-waited'), '70000000');
  assert.equal(await page.textContent('#time-waited'), '70 ms');
  // Functions in time waited, with shares of all of it: lock_table called the kernel's
  // schedule (the leaf: all 70 ms of self time) for 40 ms of the 70.
  const row = page.locator('#functions-table tbody tr[data-function="lock_table"] td');
  assert.deepEqual(await row.allTextContents().then((c) => c.slice(1, 5)), ['0 ns', '0.0%', '40 ms', '57.1%']);
  assert.equal(prof.functions[0].name, 'schedule');
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'schedule');
  const leaf = page.locator('#functions-table tbody tr[data-function="schedule"] td');
  assert.deepEqual(await leaf.allTextContents().then((c) => c.slice(1, 3)), ['70 ms', '100.0%']);
  // The flame graph says time too.
  assert.match(await page.textContent('.flame-crumb'), /^70 ms waited · /);
  await shoot(page, SHOTS, 'profile-off-cpu');
  await page.close();
  assertNoConsoleErrors();
});

test('profile: the share of whole stacks is the API’s, and cut stacks are named and flagged', async () => {
  const page = await newPage();
  await withToken(page);
  const from = T0, to = T0 + 86_400n * S;
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}`);
  await go(page, `#/profile?from=${from}&to=${to}`);
  await page.waitForSelector('#whole-stacks');
  assert.equal(await page.getAttribute('#whole-stacks', 'data-whole'), String(prof.user_stacks.whole));
  assert.equal(await page.getAttribute('#whole-stacks', 'data-samples'), String(prof.user_stacks.samples));
  // Stacks cut short (answer stubbed in the browser): the share, each reason, and a warning.
  await page.route(/\/api\/v1\/profile\?/, (r) =>
    r.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        samples: 200, lost: 0, functions: [{ name: 'f', self: 200, total: 200 }], modules: [],
        flamegraph: { name: 'all', value: 200, children: [{ name: 'f', value: 200 }] },
        user_stacks: { samples: 200, whole: 150, cut: [{ reason: 'truncated: no unwind info', samples: 40 }, { reason: 'frame-pointer walk', samples: 10 }] },
      }),
    }),
  );
  await go(page, `#/profile?from=${T0}&to=${T0 + S}`);
  await page.waitForSelector('#whole-stacks');
  const text = await page.textContent('#whole-stacks');
  assert.match(text, /75\.0 % of 200/);
  assert.match(text, /truncated: no unwind info: 40/);
  assert.match(text, /frame-pointer walk: 10/);
  assert.match(await page.getAttribute('#whole-stacks', 'class'), /warn-text/);
  await page.close();
  assertNoConsoleErrors();
});

test('wide profile: ≥ 50,000-node flame graph renders and stays interactive', async () => {
  const from = (T0 + 120n * S).toString();
  const to = (T0 + 86_400n * S).toString();
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}&pid=300`);
  const nodes = countNodes(prof.flamegraph);
  assert.ok(nodes >= 50_000, `wide flame graph has ${nodes} nodes`);
  // What the view fetches: nodes under 0.01 % of the samples left out, and counted.
  const pruned = await api(`/api/v1/profile?from=${from}&to=${to}&pid=300&min_share=0.0001`);
  const kept = countNodes(pruned.flamegraph);
  assert.equal(kept + Number(pruned.pruned_nodes), nodes, 'kept + pruned = every node');
  assert.ok(kept < nodes, `${kept} of ${nodes} nodes kept`);
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  // Every node (`&all=true`, the "Show every call path" link): fetch + parse timed.
  await page.evaluate(() => (window.__loupe.timings = {}));
  await go(page, `#/profile?from=${from}&to=${to}&pid=300&all=true`);
  await page.waitForSelector('.flame');
  assert.equal(Number(await page.getAttribute('.flame', 'data-nodes')), nodes);
  assert.equal(await page.locator('#flame-pruned').count(), 0, 'nothing left out, nothing said');
  const whole = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.flame_nodes_all = whole.flameNodes;
  figures.profile_fetch_all_ms = whole.profileFetched;
  figures.flame_render_all_ms = whole.flameRender;
  // The view as it opens: the pruned profile, with a way to every node.
  await page.evaluate(() => (window.__loupe.timings = {}));
  await go(page, `#/profile?from=${from}&to=${to}&pid=300`);
  await page.waitForSelector('.flame');
  assert.equal(Number(await page.getAttribute('.flame', 'data-nodes')), kept);
  assert.match(await page.textContent('#flame-pruned'), new RegExp(`${Number(pruned.pruned_nodes).toLocaleString('en-US')} call paths`));
  assert.match(await page.getAttribute('#flame-show-all', 'href'), /all=true/);
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
  // A function drawn in the pruned graph is found; one whose every call path is narrower than
  // 0.01 % (a function spread thin) is said to be possibly among those left out.
  const drawn = new Set();
  for (const stack = [pruned.flamegraph]; stack.length; ) {
    const n = stack.pop();
    drawn.add(n.name);
    stack.push(...(n.children ?? []));
  }
  const shown = prof.functions.find((fn) => drawn.has(fn.name));
  await page.fill('.flame-search', shown.name);
  await page.press('.flame-search', 'Enter');
  assert.ok(Number(await page.getAttribute('.flame', 'data-matches')) > 0);
  const thin = prof.functions.find((fn) => !drawn.has(fn.name));
  if (thin) {
    await page.fill('.flame-search', thin.name);
    await page.press('.flame-search', 'Enter');
    assert.equal(await page.getAttribute('.flame', 'data-matches'), '0');
    assert.match(await page.textContent('.flame-search-info'), /no drawn frame matches \(.* narrow call paths are left out\)/);
  }
  await shoot(page, SHOTS, 'flame-wide');
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
  await shoot(page, SHOTS, 'analyses');
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
  await shoot(page, SHOTS, 'analysis-error');
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
  await shoot(page, SHOTS, 'analysis-series');
  // RFC 3339 input: run B's window (the flame graph of its samples: hot_leaf on top).
  await invoke('flame', ['2026-11-23T00:01:00Z', '2026-11-23T00:01:20Z']);
  assert.equal(await page.getAttribute('#invoke-result', 'data-kind'), 'flamegraph');
  assert.ok(Number(await page.getAttribute('#result-flame .flame', 'data-nodes')) > 1);
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'hot_leaf');
  await shoot(page, SHOTS, 'analysis-flame');
  await invoke('noop');
  assert.equal(await page.getAttribute('#invoke-result', 'data-kind'), 'text');
  assert.equal((await page.textContent('#result-text')).trim(), 'ok');
  await page.close();
  assertNoConsoleErrors();
});

test('timeline: programs, the per-event table equals the API, lanes drawn, hover, zoom, runs and profile beside', async () => {
  const all = await api('/api/v1/timeline');
  const src = all.sources.find((s) => s.pid === timeline.lagsPid);
  assert.ok(src, `the lags writer (pid ${timeline.lagsPid}) has events: ${JSON.stringify(all.sources)}`);
  assert.equal(src.events, 8000);
  // A window covering both writers (they run side by side, but either may finish before the
  // other logs its first event), so the programs table lists both and links to each.
  const wall = all.sources.find((s) => s.pid === timeline.wallPid);
  assert.ok(wall, `the wall writer (pid ${timeline.wallPid}) has events`);
  const min = (a, b) => (BigInt(a) < BigInt(b) ? BigInt(a) : BigInt(b));
  const max = (a, b) => (BigInt(a) > BigInt(b) ? BigInt(a) : BigInt(b));
  const from = min(src.first_unix_ns, wall.first_unix_ns).toString();
  const to = (max(src.last_unix_ns, wall.last_unix_ns) + 1n).toString();
  const p = await newPage();
  await withToken(p);
  await go(p, `#/timeline?from=${from}&to=${to}`);
  assert.equal(await p.getAttribute('nav a[data-nav="timeline"]', 'aria-current'), 'page');
  const win = await api(`/api/v1/timeline?from=${from}&to=${to}`);
  const rows = await p.$$eval('#timeline-programs tbody tr', (trs) => trs.map((tr) => [Number(tr.dataset.pid), tr.dataset.events, tr.dataset.lost]));
  assert.deepEqual(rows, win.sources.map((s) => [s.pid, String(s.events), String(s.lost)]));
  assert.ok(rows.some(([pid]) => pid === timeline.lagsPid), 'the lags writer is listed');
  // Into its timeline through the program's link (in-app navigation: the figure).
  await p.evaluate(() => (window.__loupe.timings = {}));
  await p.click(`#timeline-programs tr[data-pid="${timeline.lagsPid}"] a`);
  await p.waitForFunction((pid) => window.__loupe.ready === true && document.querySelector('#timeline-process')?.dataset.pid === String(pid), timeline.lagsPid);
  const hash = new URL(p.url()).hash;
  const query = hash.slice(hash.indexOf('?') + 1);
  assert.equal(new URLSearchParams(query).get('pid'), String(timeline.lagsPid));
  const t = await p.evaluate(() => ({ ...window.__loupe.timings }));
  figures.timeline_events = t.timelineEvents;
  figures.timeline_pages = t.timelinePages;
  figures.timeline_fetch_ms = t.timelineFetched;
  figures.timeline_draw_ms = t.timelineDraw;
  figures.timeline_drawn_ms = t.timelineDrawn;
  assert.equal(t.timelineEvents, 8000);

  // The per-event table: exactly GET /api/v1/timeline for the page's query, in order.
  const stats = await api(`/api/v1/timeline?${query}`);
  const shown = await p.$$eval('#timeline-events tbody tr', (trs) =>
    trs.map((tr) => ({
      data: [tr.dataset.name, Number(tr.dataset.level), tr.dataset.count, tr.dataset.lagP50, tr.dataset.lagP99, tr.dataset.lagMax],
      text: [...tr.cells].map((c) => c.textContent.trim()),
    })),
  );
  const str = (v) => (v === null || v === undefined ? '' : String(v));
  assert.deepEqual(
    shown.map((r) => r.data),
    stats.events.map((e) => [e.name, e.level, String(e.count), str(e.lag_p50_ns), str(e.lag_p99_ns), str(e.lag_max_ns)]),
  );
  assert.deepEqual(
    shown.map((r) => r.text),
    stats.events.map((e) => [e.name, String(e.level), e.count.toLocaleString('en-US'), lagText(e.lag_p50_ns), lagText(e.lag_p99_ns), lagText(e.lag_max_ns)]),
  );
  assert.deepEqual(stats.events.map((e) => e.name).sort(), ['detail', 'loop', 'loop_end', 'phase', 'step']);

  // The canvas: a lane per level (0–3), bars drawn in every lane.
  assert.equal(await p.getAttribute('.tl-chart', 'data-lanes'), '0,1,2,3');
  assert.equal(await p.getAttribute('.tl-chart', 'data-events'), '8000');
  const px = await lanePixels(p);
  assert.equal(px.length, 4);
  for (const [l, n] of px.entries()) assert.ok(n > 50, `lane ${l}: ${n} coloured pixels`);
  assert.deepEqual(await p.$$eval('.tl-legend li', (lis) => lis.map((li) => li.dataset.name).sort()), ['detail', 'loop', 'loop_end', 'phase', 'step']);
  // Hover over level 0 (loop_end bars span whole iterations): the tooltip names the event.
  const box = await p.locator('.tl-canvas').boundingBox();
  let tip = '';
  for (let f = 0.5; f < 0.95 && !tip; f += 0.01) {
    await p.mouse.move(box.x + box.width * f, box.y + 22 + 15);
    if (await p.isVisible('.tl-tooltip')) tip = await p.textContent('.tl-tooltip .tl-tip-name');
  }
  assert.ok(['loop', 'loop_end'].includes(tip), `tooltip: ${tip}`);
  assert.match(await p.textContent('.tl-tooltip'), /tid \d+ · cpu \d+/);
  // Beside it: the profile of the same window and pid, and the runs overlapping it.
  assert.equal(await p.getAttribute('#timeline-profile-link', 'href'), `#/profile?from=${from}&to=${to}&pid=${timeline.lagsPid}`);
  const lookback = (BigInt(from) - 600n * S).toString();
  const runs = (await api(`/api/v1/runs?from=${lookback}&to=${to}`)).filter((r) => BigInt(r.start_unix_ns) + BigInt(r.samples) * BigInt(r.interval_ns) > BigInt(from));
  assert.equal(await p.locator('#timeline-runs li[data-run-id]').count(), runs.length);
  if (!runs.length) assert.match(await p.textContent('#timeline-runs'), /No network runs overlap this window/);
  await shoot(p, SHOTS, 'timeline');
  // Drag to zoom into the middle third: the view narrows, the profile link follows, Reset restores.
  const full = await p.getAttribute('.tl-chart', 'data-view');
  await p.mouse.move(box.x + box.width / 3, box.y + 60);
  await p.mouse.down();
  await p.mouse.move(box.x + box.width / 2, box.y + 60, { steps: 4 });
  await p.mouse.up();
  await p.waitForFunction((f) => document.querySelector('.tl-chart').dataset.view !== f, full);
  const [a, b] = (await p.getAttribute('.tl-chart', 'data-view')).split(',').map(Number);
  const [fa, fb] = full.split(',').map(Number);
  assert.ok(b - a < (fb - fa) / 4, `zoomed ${a},${b} of ${fa},${fb}`);
  assert.equal(await p.textContent('#timeline-profile-link'), 'Profile of the zoomed range');
  const [, zf, zt] = /from=(\d+)&to=(\d+)/.exec(await p.getAttribute('#timeline-profile-link', 'href'));
  assert.ok(BigInt(zf) > BigInt(from) && BigInt(zt) < BigInt(to), 'the zoomed range is inside the window');
  figures.timeline_redraw_ms = Number(await p.getAttribute('.tl-chart', 'data-draw-ms'));
  await p.click('#timeline-reset');
  await p.waitForFunction((f) => document.querySelector('.tl-chart').dataset.view === f, full);
  assert.equal(await p.textContent('#timeline-profile-link'), 'Profile of this window');
  // The link opens the profile of the same window and pid. The agent ran with --no-stacks, so
  // the profile view says there are no samples of that pid (the API's 404 no_samples).
  allowed = [/status of 404/];
  await p.click('#timeline-profile-link');
  await p.waitForFunction(() => window.__loupe.view === 'profile' && window.__loupe.ready === true);
  assert.equal(new URL(p.url()).hash, `#/profile?from=${from}&to=${to}&pid=${timeline.lagsPid}`);
  assert.equal(await p.getAttribute('main .error', 'data-code'), 'no_samples');
  allowed = [];
  await p.close();
  assertNoConsoleErrors();
});

test('timeline: exact big arguments by keyboard, the cap said plainly, runs beside it, no data, errors', async () => {
  const page = await newPage();
  await withToken(page);
  const all = await api('/api/v1/timeline');
  const wall = all.sources.find((s) => s.pid === timeline.wallPid);
  const from = String(wall.first_unix_ns);
  const to = (BigInt(wall.last_unix_ns) + 1n).toString();
  await go(page, `#/timeline?from=${from}&to=${to}&pid=${timeline.wallPid}`);
  assert.equal(await page.getAttribute('.tl-chart', 'data-lanes'), '0');
  // Keyboard: focus the canvas, Home selects the lane's first event; its args stay exact (> 2^53).
  const first = (await api(`/api/v1/timeline/events?from=${from}&to=${to}&pid=${timeline.wallPid}&limit=2`)).events;
  assert.ok(BigInt(first[0].args[0]) > 2n ** 53n, 'arg0 is a clock reading above 2^53');
  await page.focus('.tl-canvas');
  await page.keyboard.press('Home');
  await page.waitForSelector('.tl-tooltip:not([hidden])');
  assert.equal(await page.textContent('.tl-tooltip .tl-tip-args'), first[0].args.map(String).join(', '));
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction((a) => document.querySelector('.tl-tooltip .tl-tip-args')?.textContent === a, first[1].args.map(String).join(', '));
  assert.match(await page.textContent('#timeline-process .sr-only[aria-live]'), /^wall, level 0/);
  // The events-in-view table (for keyboards and screen readers).
  await page.click('.tl-view-events summary');
  await page.waitForSelector('#timeline-view-table tbody tr');
  assert.equal(await page.textContent('#timeline-view-table tbody tr:first-child td:last-child'), first[0].args.map(String).join(', '));
  // The same window's runs: answers stubbed in the browser, one overlapping, one ended before.
  const runAt = (id, start, samples) => ({ id, iface: 'eth0', host: 'h', start_unix_ns: start, interval_ns: 1_000_000, samples, cpus: [0], stored_bytes: 1 });
  await page.route(/\/api\/v1\/runs\?/, (r) =>
    r.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify([runAt(41, '__A__', 2000), runAt(42, '__B__', 2000)])
        .replace('"__A__"', (BigInt(from) - 100n * S).toString())
        .replace('"__B__"', (BigInt(from) - S).toString()),
    }),
  );
  await go(page, `#/timeline?from=${from}&to=${to}&pid=${timeline.wallPid}&max=120`);
  assert.deepEqual(await page.$$eval('#timeline-runs li[data-run-id]', (lis) => lis.map((li) => [li.dataset.runId, li.querySelector('a').getAttribute('href')])), [['42', '#/run/42']]);
  await page.unroute(/\/api\/v1\/runs\?/);
  // The cap (max=120 of 300 events): said plainly, with a way on.
  assert.equal(await page.getAttribute('.tl-chart', 'data-events'), '120');
  assert.match(await page.textContent('#timeline-cap'), /Showing the first 120 events/);
  assert.match(await page.getAttribute('#timeline-cap a', 'href'), new RegExp(`^#/timeline\\?from=\\d+&to=${to}&pid=${timeline.wallPid}&max=120$`));
  await shoot(page, SHOTS, 'timeline-wall');
  // No events in a window: said so.
  await go(page, `#/timeline?from=${T0}&to=${T0 + S}`);
  assert.match(await page.textContent('#timeline-empty'), /No timeline events in this window/);
  // A bad range: the server's 400 shown like every view's errors.
  allowed = [/status of 400/];
  await go(page, '#/timeline?from=yesterday-ish');
  assert.equal(await page.getAttribute('main .error', 'data-status'), '400');
  allowed = [];
  // Reachable from the day page and the run view.
  await go(page, '#/day/2026-11-23');
  assert.equal(await page.getAttribute('#day-timeline-link', 'href'), `#/timeline?from=${T0}&to=${T0 + 86_400n * S}`);
  await go(page, `#/run/${synth.run_a}`);
  assert.match(await page.getAttribute('#timeline-link', 'href'), /^#\/timeline\?from=\d+&to=\d+$/);
  await page.close();
  assertNoConsoleErrors();
});

/** Nodes of a call tree (the API's `slowest` entries). */
function treeSize(t) {
  let n = 0;
  const stack = [t];
  while (stack.length) {
    const x = stack.pop();
    n++;
    stack.push(...x.children);
  }
  return n;
}

test('probes: the list and a session equal the API; histograms drawn; the slow packet’s tree has forward heaviest', async () => {
  const all = await api('/api/v1/probes');
  assert.equal(all.sessions.length, 3, 'loupe-synth stores three probe sessions');
  assert.deepEqual(all.active, [], 'nothing runs under loupe serve');
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  await page.click('nav a[data-nav="probes"]');
  await page.waitForFunction(() => window.__loupe.view === 'probes' && window.__loupe.ready === true);
  assert.equal(await page.getAttribute('nav a[data-nav="probes"]', 'aria-current'), 'page');
  figures.probes_list_fetch_ms = await page.evaluate(() => window.__loupe.timings.probesFetched);
  // The list: every stored session, newest first, with the API's figures and words.
  const rows = await page.$$eval('#probes-table tbody tr', (trs) =>
    trs.map((tr) => ({ data: [tr.dataset.id, tr.dataset.calls, tr.dataset.recorded, tr.dataset.ended], text: [...tr.cells].map((c) => c.textContent.trim()) })),
  );
  const newest = [...all.sessions].reverse();
  figures.probes_listed = rows.length;
  assert.deepEqual(rows.map((r) => r.data), newest.map((s) => [String(s.id), String(s.calls), String(s.recorded_calls), s.ended]));
  assert.deepEqual(
    rows.map((r) => [r.text[0], r.text[3], r.text[4], r.text[5], r.text[6], r.text[7]]),
    newest.map((s) => [`#${s.id}`, targetText(s), s.functions.join(', '), countText(s.calls), s.recorded_calls ? countText(s.recorded_calls) : '—', s.ended]),
  );
  assert.ok(rows.some((r) => r.text[3] === '/usr/local/bin/nf'), 'the session on the binary names it as its target');
  assert.match(await page.textContent('#probes-serve-note'), /only serves a store/);
  await shoot(page, SHOTS, 'probes');

  // The sampled session with the most recorded calls, through its link (in-app navigation: the figure).
  const entry = [...all.sessions].sort((a, b) => b.recorded_calls - a.recorded_calls)[0];
  await page.evaluate(() => (window.__loupe.timings = {}));
  await page.click(`#probes-table tr[data-id="${entry.id}"] a`);
  await page.waitForFunction((id) => window.__loupe.ready === true && document.querySelector('article.probe-session')?.dataset.id === String(id), entry.id);
  const t = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.probe_drawn_ms = t.probeDrawn;
  figures.probe_fetch_ms = t.probeFetched;
  figures.probe_hist_ms = t.probeHistograms;
  figures.probe_hist_draw_ms = t.probeHistDraw;
  figures.probe_tree_rows = t.probeTreeRows;
  const view = await api(`/api/v1/probes/${entry.id}`);
  figures.probe_functions = view.functions.length;
  figures.probe_buckets = view.functions.reduce((a, f) => a + f.histogram.length, 0);
  assert.deepEqual(view.functions.map((f) => f.name), ['handle', 'parse', 'lookup', 'forward']);
  assert.equal(await page.getAttribute('article.probe-session', 'data-recorded'), String(view.calls_recorded));

  // The per-function table: exactly the API's figures, and as the UI words them.
  const str = (v) => (v === null || v === undefined ? '' : String(v));
  const shown = await page.$$eval('#probe-functions tbody tr', (trs) =>
    trs.map((tr) => ({
      data: [tr.dataset.function, tr.dataset.calls, tr.dataset.callsPerS, tr.dataset.timed, tr.dataset.p50, tr.dataset.p90, tr.dataset.p99, tr.dataset.max],
      text: [...tr.cells].map((c) => c.textContent.trim()),
    })),
  );
  assert.deepEqual(
    shown.map((r) => r.data),
    view.functions.map((f) => [f.name, String(f.calls), String(f.calls_per_s), String(f.timed), str(f.p50_ns), str(f.p90_ns), str(f.p99_ns), String(f.max_ns)]),
  );
  assert.deepEqual(
    shown.map((r) => r.text),
    view.functions.map((f) => [f.name, countText(f.calls), rateText(f.calls_per_s), countText(f.timed), lagText(f.p50_ns), lagText(f.p90_ns), lagText(f.p99_ns), lagText(f.max_ns)]),
  );
  assert.ok(view.functions.every((f) => f.timed < f.calls), '1 in 16 timed: fewer timed than called');

  // Histograms: one per function, every bucket the API gives drawn, coloured pixels on each.
  const hists = await page.$$eval('#probe-histograms .hist-card', (figs) =>
    figs.map((fig) => {
      const el = fig.querySelector('.hist');
      const c = fig.querySelector('canvas');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let coloured = 0;
      for (let p = 0; p < d.length; p += 4) if (d[p + 3] > 200 && Math.max(d[p], d[p + 1], d[p + 2]) - Math.min(d[p], d[p + 1], d[p + 2]) > 60) coloured++;
      return [fig.dataset.function, el.dataset.buckets, el.dataset.bars, el.dataset.timed, coloured];
    }),
  );
  assert.deepEqual(
    hists.map((x) => x.slice(0, 4)),
    view.functions.map((f) => [f.name, String(f.histogram.length), String(f.histogram.length), String(f.histogram.reduce((a, b) => a + b.count, 0))]),
  );
  for (const [name, , , , coloured] of hists) assert.ok(coloured > 100, `${name}: ${coloured} coloured pixels`);
  assert.equal(hists[0][3], String(view.functions[0].timed), 'a histogram holds the timed calls');
  // Keyboard: Home names the first bucket with its calls.
  await page.focus('#probe-histograms .hist-card[data-function="forward"] canvas');
  await page.keyboard.press('Home');
  const fb = view.functions[3].histogram[0];
  assert.equal(
    await page.textContent('#probe-histograms .hist-card[data-function="forward"] .hist-readout'),
    `${lagText(fb.low_ns)} – ${lagText(fb.high_ns)}: ${countText(fb.count)} call${fb.count === 1 ? '' : 's'} (${percent(fb.count, view.functions[3].timed)})`,
  );

  // The slowest calls: the API's trees, slowest first; the slowest is a slow packet whose
  // heaviest child is its 10×-slow forward.
  const boxes = await page.$$eval('#probe-slowest details.call-tree-box', (ds) => ds.map((d) => [d.dataset.function, d.dataset.duration, Number(d.dataset.rows)]));
  assert.deepEqual(
    boxes,
    view.slowest.map((tr) => [tr.function, String(tr.duration_ns), Math.min(64, treeSize(tr))]),
  );
  assert.equal(t.probeTreeRows, boxes.reduce((a, b) => a + b[2], 0));
  const slow = view.slowest[0];
  assert.equal(slow.function, 'handle');
  const heaviest = slow.children.reduce((a, b) => (b.duration_ns > a.duration_ns ? b : a));
  assert.equal(heaviest.function, 'forward');
  assert.ok(heaviest.duration_ns > 5 * view.functions[3].p50_ns, `the slow forward (${heaviest.duration_ns} ns) is several times the median`);
  const first = page.locator('#probe-slowest details.call-tree-box').first();
  assert.equal(await first.getAttribute('open'), '');
  const treeRowsShown = await first.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.dataset.function, Number(tr.dataset.depth), tr.dataset.duration, tr.dataset.self, tr.dataset.heaviest === 'true']));
  assert.deepEqual(treeRowsShown, [
    ['handle', 0, String(slow.duration_ns), String(slow.self_ns), false],
    ...slow.children.map((c) => [c.function, 1, String(c.duration_ns), String(c.self_ns), c === heaviest]),
  ]);
  const hv = first.locator('tbody tr.heaviest');
  assert.equal(await hv.count(), 1);
  assert.match(await hv.locator('th').textContent(), /^└ forward\s*heaviest$/);
  assert.deepEqual(await hv.locator('td').evaluateAll((tds) => tds.slice(1, 3).map((td) => td.textContent)), [lagText(heaviest.duration_ns), lagText(heaviest.self_ns)]);
  // Its row is highlighted (the accent colour), its siblings are not.
  const colours = await first.locator('tbody tr[data-depth="1"] th').evaluateAll((ths) => ths.map((th) => getComputedStyle(th).color));
  assert.equal(new Set(colours).size, 2, 'the heaviest child stands out');
  assert.match(await first.locator('summary').textContent(), /heaviest: handle › forward/);
  await shoot(page, SHOTS, 'probe-session');
  await page.close();
  assertNoConsoleErrors();
});

test('probes: from a run’s window, notes, a session without calls; a profile’s "Probe" prefills the start form, and a refused start says 409 plainly', async () => {
  const all = await api('/api/v1/probes');
  const page = await newPage();
  await withToken(page);
  // Run A's window: the probes overlapping it, as the API lists them (started up to an hour before, ending after its start).
  for (const runId of [synth.run_a, synth.run_b]) {
    const run = await api(`/api/v1/runs/${runId}`);
    const w0 = BigInt(run.start_unix_ns);
    const w1 = w0 + BigInt(run.samples) * BigInt(run.interval_ns);
    await go(page, `#/run/${runId}`);
    assert.equal(await page.getAttribute('#probes-link', 'href'), `#/probes?from=${w0}&to=${w1}`);
    await page.click('#probes-link');
    await page.waitForFunction(() => window.__loupe.view === 'probes' && window.__loupe.ready === true);
    const listed = (await api(`/api/v1/probes?from=${w0 - 3600n * S}&to=${w1}`)).sessions.filter((s) => BigInt(s.end_unix_ns) > w0);
    assert.equal(listed.length, 1, `one synthetic session overlaps run ${runId}`);
    assert.deepEqual(await page.$$eval('#probes-table tbody tr', (trs) => trs.map((tr) => tr.dataset.id)), listed.map((s) => String(s.id)).reverse());
  }
  // The session whose budget raised its sampling: its note, and 1 in 64.
  const budget = all.sessions.find((s) => s.ended === 'stopped');
  const bv = await api(`/api/v1/probes/${budget.id}`);
  await go(page, `#/probes/${budget.id}`);
  assert.equal(bv.notes.length, 1);
  assert.equal(await page.textContent('#probe-notes li'), bv.notes[0]);
  assert.match(bv.notes[0], /sampling raised from 1 in 1 to 1 in 64/);
  assert.match(await page.textContent('article.probe-session .kv'), /1 in 64 outermost calls/);
  // The session without calls: counts and histograms, no trees, said so.
  const counts = all.sessions.find((s) => s.recorded_calls === 0);
  const cv = await api(`/api/v1/probes/${counts.id}`);
  await go(page, `#/probes/${counts.id}`);
  assert.match(await page.textContent('#probe-no-calls'), /recorded no calls/);
  assert.equal(await page.locator('#probe-histograms .hist').count(), cv.functions.length);
  assert.deepEqual(await page.$$eval('#probe-functions tbody tr', (trs) => trs.map((tr) => tr.dataset.timed)), cv.functions.map((f) => String(f.calls)), 'every call timed');
  assert.equal(await page.getAttribute('#probe-again-link', 'href'), `#/probes/start?binary=%2Fusr%2Flocal%2Fbin%2Fnf&functions=handle%2Cparse%2Clookup%2Cforward`);
  await shoot(page, SHOTS, 'probe-session-no-calls');

  // A profile filtered by PID: each function's "Probe…" opens the start form with its name and the PID.
  const from = (T0 + 60n * S).toString();
  const to = (T0 + 80n * S).toString();
  await go(page, `#/profile?from=${from}&to=${to}&pid=100`);
  await page.waitForSelector('#functions-table');
  const link = page.locator('#functions-table tr[data-function="hot_leaf"] a.probe-link');
  assert.equal(await link.getAttribute('href'), '#/probes/start?functions=hot_leaf&pid=100');
  assert.equal(await link.getAttribute('aria-label'), 'Probe hot_leaf');
  await link.click();
  await page.waitForFunction(() => window.__loupe.view === 'probe-start' && window.__loupe.ready === true);
  assert.equal(await page.getAttribute('nav a[data-nav="probes"]', 'aria-current'), 'page');
  assert.equal(await page.inputValue('#probe-functions'), 'hot_leaf');
  assert.equal(await page.inputValue('#probe-pids'), '100');
  assert.equal(await page.inputValue('#probe-seconds'), '10');
  assert.equal(await page.isChecked('#probe-calls'), true);
  assert.equal(await page.textContent('#probe-cli'), 'loupe probe --pid 100 --func hot_leaf --seconds 10 --calls');
  assert.match(await page.textContent('#probe-start-serve-note'), /only serves a store/);
  // Without a PID filter the link carries the name only.
  await go(page, `#/profile?from=${from}&to=${to}`);
  assert.equal(await page.getAttribute('#functions-table tr[data-function="hot_leaf"] a.probe-link', 'href'), '#/probes/start?functions=hot_leaf');
  await go(page, '#/probes/start?functions=hot_leaf&pid=100');
  // A form error is said before anything is sent.
  await page.fill('#probe-functions', ' , ');
  await page.click('#probe-start-submit');
  assert.equal(await page.textContent('#probe-start-form .form-error'), 'name at least one function');
  // Posting: `loupe serve` has no agent, so 409 not_collecting, shown plainly; nothing running.
  await page.fill('#probe-functions', 'hot_leaf');
  allowed = [/status of 409/];
  const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/api/v1/probes') && r.request().method() === 'POST'), page.click('#probe-start-submit')]);
  assert.equal(res.status(), 409);
  assert.deepEqual(JSON.parse(res.request().postData()), { pids: [100], binary: null, functions: ['hot_leaf'], seconds: 10, sample_every: 1, calls: true, budget_percent: 1 });
  await page.waitForSelector('#probe-start-result .error');
  assert.equal(await page.getAttribute('#probe-start-result .error', 'data-status'), '409');
  assert.equal(await page.getAttribute('#probe-start-result .error', 'data-code'), 'not_collecting');
  const text = await page.textContent('#probe-start-result .error');
  assert.match(text, /Start probe: 409 not_collecting/);
  assert.match(text, /only serves a store/);
  assert.match(await page.textContent('#probe-start-hint'), /Nothing was attached/);
  assert.equal(await page.locator('#probe-active').count(), 0);
  await shoot(page, SHOTS, 'probe-start-refused');
  allowed = [];
  await page.close();
  assertNoConsoleErrors();
});

test('outside a fleet there is no Fleet link, and the fleet view says how to join one', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/fleet');
  assert.equal(await page.isVisible('#nav-fleet'), false);
  assert.match(await page.textContent('#fleet-absent'), /not in a fleet.*--nats URL --rack R/s);
  await page.close();
  assertNoConsoleErrors();
});

test('every view fits a narrow laptop screen (800 px) without horizontal page overflow', async () => {
  const page = await newPage({ width: 800, height: 720 });
  await withToken(page);
  const from = (T0 + 60n * S).toString();
  const to = (T0 + 80n * S).toString();
  const tlHash = `#/timeline?from=0&pid=${timeline.lagsPid}`;
  const probeId = (await api('/api/v1/probes')).sessions.find((s) => s.recorded_calls > 0).id;
  for (const hash of ['#/', '#/day/2026-11-23', `#/run/${synth.run_a}`, `#/profile?from=${from}&to=${to}`, '#/analyses/burst-detector', tlHash, '#/probes', `#/probes/${probeId}`, '#/probes/start?functions=hot_leaf&pid=100']) {
    await go(page, hash);
    await page.waitForTimeout(200);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${hash} overflows by ${overflow}px at 800 px`);
  }
  await page.screenshot({ path: join(SHOTS, 'analyses-800px-light.png'), fullPage: true });
  await page.close();
  assertNoConsoleErrors();
});
