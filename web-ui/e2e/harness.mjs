// The browser tests' harness. `setup`/`teardown` (run.mjs's before and after): a temp data dir
// filled by `loupe-synth --wide-stacks 30000`, timeline events that a real `loupe agent` stored
// from two real writer processes (`loupe-tl-testwriter`), a team token, `loupe serve` on port 0
// with a 2-s analysis time limit, and Chromium; then the figures the views measured, printed.
// The views' tests (views/*.mjs) use its pages, navigation, API, screenshots and console-error
// checks. What fleet.mjs needs too (binaries, Chromium, JSON, screenshots) is here as well.
//
// Env: as run.mjs's header says (LOUPE_BIN, LOUPE_SYNTH_BIN, LOUPE_TL_WRITER_BIN, LOUPE_WASM_DIR,
// CHROMIUM, LOUPE_E2E_STATIC; fleet.mjs adds LOUPE_RACK_DEMO_BIN).

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
/** A binary of the workspace: `$env` if set, else `<target>/release/<name>`. */
export const releaseBin = (env, name) => process.env[env] ?? join(targetDir, 'release', name);
export const LOUPE = releaseBin('LOUPE_BIN', 'loupe');
export const SYNTH = releaseBin('LOUPE_SYNTH_BIN', 'loupe-synth');
/** The timeline crate's test writer (`cargo build --release -p loupe-timeline --bin loupe-tl-testwriter`). */
const TL_WRITER = releaseBin('LOUPE_TL_WRITER_BIN', 'loupe-tl-testwriter');
/** Where the udf-sdk components are: the testbed's one locator says (`loupe-synth --wasm-dir`). */
function wasmDir() {
  if (process.env.LOUPE_WASM_DIR) return process.env.LOUPE_WASM_DIR;
  if (!existsSync(SYNTH)) return join(repo, 'udf-sdk', 'target', 'wasm32-wasip2', 'release'); // reported by setup
  try {
    return execFileSync(SYNTH, ['--wasm-dir'], { encoding: 'utf8' }).trim();
  } catch (e) {
    throw new Error(`finding the analyses: ${String(e.stderr ?? e.message).trim()}`);
  }
}
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
/** Chromium's flags in both browser tests: headless, no sandbox, no GPU, nothing fetched on its own. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const SHOTS = join(here, 'screenshots');
// The UI's own count and percentage formatting, lag formatting and the probe views' wording: what
// the tests expect the page to show. (Loaded here, the one module with a top-level await, so the
// views' files still run in the order run.mjs imports them.)
export const { count: countText, percent } = await loadTs('format.ts');
export const { lagText } = await loadTs('timeline.ts');
export const { rateText, targetText } = await loadTs('probes.ts');
export const T0 = 1795392000000000000n; // 2026-11-23T00:00:00Z
export const S = 1_000_000_000n;

/** JSON with big integers (≥ 16 digits) kept as strings, as the UI parses it. */
export function parseJsonBig(text) {
  return JSON.parse(text.replace(/"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\d.eE])/g, (m) => (m[0] === '"' ? m : `"${m}"`)));
}

/** Screenshots of the page in both themes (`<dir>/<name>-light.png`, `-dark.png`), then light again. */
export async function shoot(page, dir, name) {
  for (const theme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: theme });
    // Charts and canvases redraw in the new colours on the next frame.
    await page.waitForFunction((t) => document.documentElement.dataset.resolvedTheme === t, theme);
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(dir, `${name}-${theme}.png`), fullPage: true });
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => document.documentElement.dataset.resolvedTheme === 'light');
}

/** Navigates inside the app served at `base` (a hash change) and waits for the view to finish. */
export async function goTo(base, page, hash) {
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

/**
 * LOUPE_E2E_STATIC=1 (development): web-ui/dist served from the test, /api and /metrics proxied to
 * the loupe at `target`, for a binary that embeds no UI or an older one. Resolves to the page's
 * URL and the server (to close).
 */
export function serveDist(target) {
  const dist = join(webUi, 'dist');
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' };
  const t = new URL(target);
  const server = createServer((req, res) => {
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
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r({ url: `http://127.0.0.1:${server.address().port}`, server })));
}

// ---- the `loupe serve` harness ----

function run(bin, args) {
  return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
}

let server; // child process
let serverLog = '';
let staticServer;
/** http://127.0.0.1:PORT of the page. */
export let base;
let apiBase; // http://127.0.0.1:PORT of loupe
/** The team token (`loupe token add`). */
export let token;
/** What loupe-synth stored: `run_a`, `run_b` (ids as strings), … */
export let synth;
let dataDir;
let userDataDir;
let context;
/** `{ lagsPid, wallPid }`: the writers whose events the agent stored. */
export let timeline;
/** Where the udf-sdk components are (the analyses the tests upload). */
export let WASM_DIR;
/** What the views measured: printed by `teardown`, never asserted. */
export const figures = {};
const consoleErrors = [];
let allowed = []; // regexes of console errors a test expects (HTTP errors it provokes)

/** Console errors matching these are expected (the HTTP errors a test provokes); none: back to none allowed. */
export function allow(...res) {
  allowed = res;
}

/** An API path of the loupe under test (GET unless `opts` say), with the token; big integers kept exact. */
export async function api(path, opts = {}) {
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

/** A page of the browser; its console errors and page errors are collected (`assertNoConsoleErrors`). */
export async function newPage({ width = 1280, height = 720, dark = false } = {}) {
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

/**
 * A page in a browser of its own, with Playwright context `options` (e.g. `ignoreHTTPSErrors`);
 * its console and page errors collected in `page.consoleErrors`. `close` ends the browser.
 */
export async function newPageIn(options) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const own = await browser.newContext({ viewport: { width: 1280, height: 720 }, ...options });
  const page = await own.newPage();
  page.consoleErrors = [];
  page.on('console', (msg) => msg.type() === 'error' && page.consoleErrors.push(`${msg.text()} (${msg.location()?.url ?? ''})`));
  page.on('pageerror', (err) => page.consoleErrors.push(`pageerror: ${err.stack ?? err}`));
  return { page, close: () => browser.close() };
}

/** Navigates inside the app (hash change) and waits for the view to finish. */
export function go(page, hash) {
  return goTo(base, page, hash);
}

/** The page starts with the team token in its session (as if entered before). */
export async function withToken(page) {
  await page.addInitScript((t) => sessionStorage.setItem('loupe.token', t), token);
}

export function assertNoConsoleErrors() {
  const errs = consoleErrors.splice(0);
  assert.deepEqual(errs, [], `console errors:\n${errs.join('\n')}`);
}

export function sum(a) {
  return a.reduce((s, v) => s + v, 0);
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

/**
 * Stops `child` and resolves once it has exited: SIGTERM, then SIGKILL after `graceMs`. A store
 * is removed only after this — `loupe serve` still writes its data dir while it shuts down, and
 * removing it then failed CI with ENOTEMPTY.
 */
export function stopChild(child, graceMs = 10_000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolvePromise) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolvePromise();
    });
    child.kill('SIGTERM');
  });
}

/** Everything the views' tests need, started (run.mjs's `before`). */
export async function setup() {
  WASM_DIR = wasmDir();
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
  const synthOut = run(SYNTH, ['--data-dir', dataDir, '--wide-stacks', '30000', '--busy-window', '--changed']);
  const line = synthOut.trim().split('\n').reverse().find((l) => l.trim().startsWith('{'));
  synth = parseJsonBig(line);
  synth.run_a = String(synth.run_a);
  synth.run_b = String(synth.run_b);
  // Every scope but admin: the pages that start runs and probes reach the server's own answer.
  token = /loupe_[0-9a-f]{64}/.exec(run(LOUPE, ['token', 'add', 'e2e', '--scopes', 'read,invoke,upload,run,probe,fleet', '--data-dir', dataDir]))?.[0];
  assert.ok(token, 'loupe token add printed a token');
  await addTimelineEvents();
  apiBase = await startServe();
  if (process.env.LOUPE_E2E_STATIC === '1') {
    ({ url: base, server: staticServer } = await serveDist(apiBase));
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
    args: [...CHROMIUM_ARGS, '--disable-quic'],
    viewport: { width: 1280, height: 720 },
  });
  for (const p of context.pages()) await p.close();
}

/** Everything stopped and removed, then the figures printed (run.mjs's `after`). */
export async function teardown() {
  await context?.close().catch(() => {});
  server?.removeAllListeners('exit');
  await stopChild(server);
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
  if (figures.window_drawn_ms !== undefined) {
    console.log(`# window, 10 busy minutes of 16 CPUs (${figures.window_samples} samples, ${figures.window_events} timeline events, ${figures.window_calls} probe calls, 10 runs): navigation → every lane drawn ${f(figures.window_drawn_ms)} ms (fetch+parse ${f(figures.window_fetch_ms)} ms); zoom redraw ${f(figures.window_busy_zoom_ms)} ms (goals ≤ 500 and ≤ 50)`);
    console.log(`BENCH ${JSON.stringify({ name: 'ui_window_drawn_ms', value: Number(figures.window_drawn_ms.toFixed(1)), unit: 'ms', goal: 500 })}`);
    console.log(`BENCH ${JSON.stringify({ name: 'ui_window_zoom_ms', value: Number(figures.window_busy_zoom_ms.toFixed(1)), unit: 'ms', goal: 50 })}`);
  }
  console.log(`# bundle: ${figures.bundle_gzip_kb} KB gzipped (${figures.bundle_raw_kb} KB raw)`);
  writeFileSync(join(SHOTS, 'figures.json'), JSON.stringify(figures, null, 2) + '\n');
}
