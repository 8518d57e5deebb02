// End-to-end test of the web UI's fleet view on a real simulated rack: `loupe-rack-demo` (the
// testbed's rack: a real nats-server, a real `loupe agent` per host in its own network namespace,
// an incast at h0 every second) with host 0's web UI driven in Debian's Chromium. Needs root and
// nats-server (scripts/setup installs it); elsewhere it skips with one line (never in CI).
//
// Env: LOUPE_BIN, LOUPE_RACK_DEMO_BIN (default ../target/release/{loupe,loupe-rack-demo},
// honouring CARGO_TARGET_DIR), CHROMIUM (default /usr/bin/chromium), LOUPE_E2E_STATIC=1 (as for
// run.mjs: the page from web-ui/dist, the API proxied to host 0's agent). Shares e2e/harness.mjs.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS, LOUPE, SHOTS, countText as count, goTo, parseJsonBig, releaseBin, serveDist, shoot } from './harness.mjs';

const RACK_DEMO = releaseBin('LOUPE_RACK_DEMO_BIN', 'loupe-rack-demo');
const HOSTS = 3;

function skipReason() {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, tc programs)';
  try {
    execFileSync('nats-server', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'nats-server not installed (scripts/setup installs it)';
  }
  return null;
}
const skip = skipReason();
if (skip) {
  if (process.env.CI) throw new Error(`fleet e2e cannot run in CI: ${skip}`);
  console.log(`SKIP fleet e2e: ${skip}`);
}

let demo;
let demoLog = '';
let dir;
let ui; // host 0's agent: its API (and its page)
let pageBase; // where the page is: `ui`, or with LOUPE_E2E_STATIC=1 web-ui/dist served by the test
let staticServer;
let token;
let readyAt; // ns, when the demo said it was ready
let context;
const consoleErrors = [];

async function api(path) {
  const res = await fetch(ui + path, { headers: { Authorization: `Bearer ${token}` } });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return parseJsonBig(text);
}

/** The generator's incasts so far: per incast, each sender's `{host, first_unix_ns, last_unix_ns, payload_bytes}`. */
function readIncasts() {
  const lines = readFileSync(join(dir, 'incasts.jsonl'), 'utf8').split('\n').filter(Boolean).map(parseJsonBig);
  const incasts = [];
  // One line per sender, the senders of one incast written together.
  for (let i = 0; i + HOSTS - 1 <= lines.length; i += HOSTS - 1) incasts.push(lines.slice(i, i + HOSTS - 1));
  return incasts;
}

async function newPage() {
  const page = await context.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.addInitScript((t) => sessionStorage.setItem('loupe.token', t), token);
  page.on('console', (msg) => msg.type() === 'error' && consoleErrors.push(`[${page.url()}] ${msg.text()}`));
  page.on('pageerror', (err) => consoleErrors.push(`[${page.url()}] pageerror: ${err.stack ?? err}`));
  return page;
}

function go(page, hash) {
  return goTo(pageBase, page, hash);
}

before(async () => {
  if (skip) return;
  mkdirSync(SHOTS, { recursive: true });
  dir = mkdtempSync(join(tmpdir(), 'loupe-fleet-e2e-'));
  demo = spawn(RACK_DEMO, ['--hosts', String(HOSTS), '--dir', dir, '--loupe', LOUPE, '--incast-log', join(dir, 'incasts.jsonl')], { stdio: ['ignore', 'ignore', 'pipe'] });
  ({ ui, token } = await new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error(`loupe-rack-demo was not ready in 90 s:\n${demoLog}`)), 90_000);
    demo.stderr.on('data', (d) => {
      demoLog += d;
      const m = /rack-demo ready: ui=(\S+) token=(\S+)/.exec(demoLog);
      if (m) {
        clearTimeout(timer);
        resolvePromise({ ui: m[1], token: m[2] });
      }
    });
    demo.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`loupe-rack-demo exited with ${code}:\n${demoLog}`));
    });
  }));
  readyAt = BigInt(Date.now()) * 1_000_000n;
  pageBase = ui;
  if (process.env.LOUPE_E2E_STATIC === '1') {
    ({ url: pageBase, server: staticServer } = await serveDist(ui));
    console.log(`# LOUPE_E2E_STATIC=1: page from web-ui/dist on ${pageBase}, API ${ui}`);
  }
  // Every agent registered, and some stack samples stored (batches are written every few seconds).
  for (let i = 0; i < 60; i++) {
    const hosts = await api('/api/v1/fleet/hosts?rack=demo').catch(() => null);
    if (hosts?.up === HOSTS) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  context = await chromium.launchPersistentContext(join(dir, 'chromium'), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  for (const p of context.pages()) await p.close();
});

after(async () => {
  await context?.close().catch(() => {});
  staticServer?.close();
  if (demo) {
    demo.removeAllListeners('exit');
    const exited = new Promise((r) => demo.once('exit', r));
    demo.kill('SIGINT'); // the demo stops its agents and removes its namespaces
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(consoleErrors, [], 'console errors');
});

test('the fleet view: hosts and health, a synchronized run as hosts × time, a host\u2019s run and profile, hot functions', { skip: skip ?? false, timeout: 240_000 }, async () => {
  const page = await newPage();
  await go(page, '#/fleet');
  assert.equal(await page.isVisible('#nav-fleet'), true, 'the Fleet link shows on an agent in a fleet');

  // Hosts and their health, as the registry says.
  const registry = await api('/api/v1/fleet/hosts?rack=demo');
  assert.equal(await page.getAttribute('#fleet-hosts', 'data-up'), String(HOSTS));
  const rows = await page.$$eval('#fleet-hosts tbody tr', (trs) => trs.map((tr) => [tr.dataset.host, tr.dataset.status]));
  assert.deepEqual(rows, registry.hosts.map((h) => [h.host, h.status]));
  assert.deepEqual(rows.map((r) => r[1]), Array(HOSTS).fill('up'));

  // A synchronized run from the page: every host ran it from one start.
  await page.selectOption('#fleet-interval', '1ms');
  await page.fill('#fleet-samples', '2000');
  await page.click('#fleet-run-start');
  await page.waitForSelector('.fleet-run-summary', { timeout: 60_000 });
  const summary = await page.$eval('.fleet-run-summary', (el) => ({ ...el.dataset }));
  assert.equal(summary.hosts, String(HOSTS));
  assert.equal(summary.missed, '');
  const links = await page.$$eval('#fleet-heatmap .heatmap-label a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
  assert.equal(links.length, HOSTS);
  // Each host's own stored run, read over the fleet: one start, and the rack sum drawn is theirs.
  const runs = {};
  for (const [host, href] of links) {
    const id = /#\/run\/(\d+)\?host=/.exec(href)[1];
    runs[host] = await api(`/api/v1/fleet/hosts/${host}/runs/${id}`);
    assert.equal(String(runs[host].start_unix_ns), summary.start, `${host}'s run starts at the common instant`);
  }
  const inSum = Object.values(runs).reduce((a, r) => a + r.metrics.in_bytes.reduce((x, y) => x + y, 0), 0);
  assert.equal(summary.rackInBytes, String(inSum), 'the rack sum is the hosts\u2019 runs summed');
  // The incast, against what the generator did (its --incast-log: for each sender and incast,
  // when its first datagram left and when its last had been sent). On a loaded 2-core machine
  // the senders' threads can fire milliseconds apart or more and h0's queue drains for up to its
  // 20 ms latency after, so the test places bytes by these instants, not by each other.
  const start = BigInt(summary.start);
  const interval = BigInt(runs.h0.interval_ns);
  const slotOf = (ns) => Number((BigInt(ns) - start) / interval);
  // Slots from an incast's first datagram to 100 after its last: the shaped port's 20 ms of
  // queue at 100 Mbit/s, with room for a delayed softirq.
  const incastWindow = (fired) => [Math.min(...fired.map((f) => slotOf(f.first_unix_ns))), Math.max(...fired.map((f) => slotOf(f.last_unix_ns))) + 100];
  const h0 = runs.h0.metrics.in_bytes;
  const incasts = readIncasts().filter((fired) => fired.every((f) => slotOf(f.first_unix_ns) >= 1 && slotOf(f.last_unix_ns) < h0.length - 1));
  assert.ok(incasts.length >= 1, `no whole incast inside the ${h0.length}-slot run (the generator fires one a second)`);
  for (const fired of incasts) {
    // Each sender's bytes are in its own run, in the slots it sent them in (±1 for the clocks).
    for (const f of fired) {
      const out = runs[f.host].metrics.out_bytes.slice(slotOf(f.first_unix_ns) - 1, slotOf(f.last_unix_ns) + 2).reduce((a, b) => a + b, 0);
      assert.ok(f.payload_bytes > 0 && out >= f.payload_bytes, `${f.host} sent ${f.payload_bytes} B in slots ${slotOf(f.first_unix_ns)}–${slotOf(f.last_unix_ns)}; its run has ${out} B out there`);
    }
    // h0 receives the incast from its first datagram until the shaped port's queue has drained
    // (20 ms of queue at 100 Mbit/s; 100 slots leave room for a delayed softirq): at least the
    // token bucket's 32 KB pass at once, whatever the queue then drops.
    const [from, to] = incastWindow(fired);
    const received = h0.slice(from, to + 1).reduce((a, b) => a + b, 0);
    assert.ok(received >= 20 * 1400, `h0 received ${received} B in slots ${from}–${to} of an incast`);
  }
  // h0's busiest slot is one of those incasts.
  const peak = h0.indexOf(Math.max(...h0));
  assert.ok(h0[peak] > 10_000, `no incast at h0 in the run: peak ${h0[peak]} B`);
  const windows = readIncasts().map(incastWindow);
  assert.ok(windows.some(([a, b]) => a <= peak && peak <= b), `h0's peak at slot ${peak} is in no incast's window ${JSON.stringify(windows)}`);

  // The heatmap's h0 row is coloured at the peak; a click there opens that host's window.
  const box = await page.locator('#fleet-heatmap canvas').boundingBox();
  const x = box.x + ((peak + 0.5) / h0.length) * box.width;
  const row = links.findIndex(([host]) => host === 'h0');
  await page.mouse.click(x, box.y + row * 16 + 8);
  await page.waitForSelector('#fleet-pick .card');
  assert.equal(await page.getAttribute('#fleet-pick .card', 'data-host'), 'h0');
  const slot = Number(await page.getAttribute('#fleet-pick .card', 'data-slot'));
  assert.ok(Math.abs(slot - peak) <= 2, `clicked slot ${slot}, peak ${peak}`);
  await shoot(page, SHOTS, 'fleet');
  // Egress per host: the senders' rows light up instead.
  await page.selectOption('#fleet-heat-direction', 'out_bytes');
  assert.match(await page.getAttribute('#fleet-heatmap canvas', 'aria-label'), /^Heatmap of out_bytes per host over time, 3 hosts/);
  // A click where the generator says a sender fired picks that sender's row at that slot.
  const sender = incasts[0][0];
  const senderSlot = slotOf(sender.first_unix_ns);
  const senderBox = await page.locator('#fleet-heatmap canvas').boundingBox();
  const senderRow = links.findIndex(([host]) => host === sender.host);
  await page.mouse.click(senderBox.x + ((senderSlot + 0.5) / h0.length) * senderBox.width, senderBox.y + senderRow * 16 + 8);
  await page.waitForSelector(`#fleet-pick .card[data-host="${sender.host}"]`);
  const picked = Number(await page.getAttribute('#fleet-pick .card', 'data-slot'));
  assert.ok(Math.abs(picked - senderSlot) <= 2, `clicked ${sender.host} at slot ${senderSlot}, picked ${picked}`);

  await page.mouse.click(x, box.y + row * 16 + 8);
  await page.waitForSelector('#fleet-pick .card[data-host="h0"]');
  await page.evaluate(() => (window.__loupe.ready = false));
  await page.click('#fleet-pick-run');
  await page.waitForFunction(() => window.__loupe.view === 'run' && window.__loupe.ready === true, null, { timeout: 60_000 });
  assert.equal(await page.getAttribute('article.run', 'data-total-in-bytes'), String(h0.reduce((a, b) => a + b, 0)));
  assert.match(await page.textContent('h1'), /Run \d+ on h0/);
  assert.equal(await page.getAttribute('nav[aria-label="Main"] a[aria-current="page"]', 'data-nav'), 'fleet');

  // h0's profile of the run's window, over the fleet: what h0 itself answers for that range,
  // its samples and its waits off the CPU. The window has just ended and h0 writes a batch every
  // 10 s (later on a loaded machine: a fresh check beside a CPU hog drew the page with 0 of the
  // window's 40 samples). Once a sample and a wait from after the window are stored, all of the
  // window's are (batches hold everything taken before them, in order); only then is it drawn.
  const profileHref = await page.getAttribute('#profile-link', 'href');
  const q = new URLSearchParams(profileHref.split('?')[1]);
  const after = BigInt(q.get('to')) + 1_000_000_000n;
  for (let i = 0; ; i++) {
    const now = BigInt(Date.now()) * 1_000_000n;
    const later = await Promise.all(['on_cpu', 'off_cpu'].map((kind) => api(`/api/v1/fleet/hosts/h0/profile?kind=${kind}&from=${after}&to=${now}`)));
    if (later.every((p) => p.samples > 0)) break;
    assert.ok(i < 120, `h0 stored no samples (${later[0].samples}) or no waits (${later[1].samples}) taken after the window within 60 s`);
    await new Promise((r) => setTimeout(r, 500));
  }
  await go(page, profileHref);
  const remote = await api(`/api/v1/fleet/hosts/h0/profile?from=${q.get('from')}&to=${q.get('to')}`);
  assert.equal(await page.getAttribute('.profile-summary', 'data-host'), 'h0');
  assert.equal(await page.getAttribute('.profile-summary', 'data-samples'), String(remote.samples));
  // Its waits off the CPU (h0's agent takes them): the box reloads the page in time waited.
  await page.evaluate(() => (window.__loupe.ready = false));
  await page.check('#profile-off-cpu');
  await page.waitForFunction(() => window.__loupe.ready === true && /kind=off_cpu/.test(location.hash), null, { timeout: 30_000 });
  const waits = await api(`/api/v1/fleet/hosts/h0/profile?kind=off_cpu&from=${q.get('from')}&to=${q.get('to')}`);
  assert.equal(waits.kind, 'off_cpu');
  assert.ok(waits.samples > 0, 'h0 took no waits off the CPU in the window');
  assert.equal(await page.getAttribute('.profile-summary', 'data-kind'), 'off_cpu');
  assert.equal(await page.getAttribute('.profile-summary', 'data-samples'), String(waits.samples));
  assert.equal(await page.getAttribute('.profile-summary', 'data-waited'), String(waits.flamegraph.value));
  assert.match(await page.textContent('#time-waited'), /\d+(\.\d+)? (ns|µs|ms|s|min|h)$/);

  // Fleet hot functions over a closed range whose samples are stored: each host's count equals
  // its own profile of that range, and the libraries' shares add up to the whole.
  await go(page, '#/fleet');
  const from = readyAt;
  const to = readyAt + 10_000_000_000n;
  // The range's samples are all stored once every host has stored a sample from a second after
  // it: the agents write a batch every 10 s (later on a loaded machine), each holding every sample
  // taken before it, in order.
  for (let i = 0; ; i++) {
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    const later = await Promise.all(links.map(([host]) => api(`/api/v1/fleet/hosts/${host}/profile?from=${to + 1_000_000_000n}&to=${nowNs}`).catch(() => ({ samples: 0 }))));
    if (later.every((p) => p.samples > 0)) break;
    assert.ok(i < 120, 'the agents stored no samples taken after the range within 60 s');
    await new Promise((r) => setTimeout(r, 500));
  }
  await page.fill('#fleet-hot-from', from.toString());
  await page.fill('#fleet-hot-to', to.toString());
  await page.click('#fleet-hot-start');
  await page.waitForSelector('.fleet-hot-summary', { timeout: 30_000 });
  const hot = await page.$eval('.fleet-hot-summary', (el) => ({ ...el.dataset }));
  assert.deepEqual(hot.answered.split(',').sort(), links.map(([h]) => h).sort());
  let total = 0;
  const text = await page.textContent('.fleet-hot-summary');
  for (const [host] of links) {
    const own = await api(`/api/v1/fleet/hosts/${host}/profile?from=${from}&to=${to}`);
    total += own.samples;
    assert.ok(new RegExp(`${host} ${count(own.samples)}[,)]`).test(text), `${host}'s samples: ${count(own.samples)} in ${text}`);
  }
  assert.equal(hot.samples, String(total), 'the fleet total is the hosts\u2019 own profiles summed');
  assert.ok(total > 0, 'the agents sampled nothing in 10 s');
  const libs = await page.$$eval('#fleet-hot-libraries tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.samples)));
  assert.ok(libs.length > 0, 'no libraries');
  assert.ok(libs.reduce((a, b) => a + b, 0) <= total);
  await page.waitForSelector('#fleet-hot-functions tbody tr');
  await shoot(page, SHOTS, 'fleet-hot');
  await page.close();
});

