// The window view: every lane drawn with the counts the API gives, zoom moving every lane
// together, a selection's flame graph equal to the API's profile, the comparison with a known
// change, the trace export; and the figures on ten busy minutes of a 16-CPU host.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { T0, S, SHOTS, figures, synth, api, newPage, go, withToken, assertNoConsoleErrors, shoot } from '../harness.mjs';

const sum = (a) => a.reduce((s, v) => s + Number(v), 0);

/** What each lane group of the page says it holds: kind → [lanes, items, view]. */
async function groups(page) {
  return page.$$eval('.wl-group', (gs) => Object.fromEntries(gs.map((g) => [g.dataset.kind, [Number(g.dataset.lanes), Number(g.dataset.items), g.dataset.view]])));
}

/** Coloured pixels of a group's canvas right of the labels: something was drawn. */
async function inkOf(page, kind) {
  return page.evaluate((k) => {
    const c = document.querySelector(`.wl-group[data-kind="${k}"] canvas`);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const left = Math.round(140 * (c.width / c.clientWidth));
    let n = 0;
    for (let y = 0; y < c.height; y++) {
      for (let x = left; x < c.width; x++) {
        const p = (y * c.width + x) * 4;
        if (d[p + 3] > 200 && Math.max(d[p], d[p + 1], d[p + 2]) - Math.min(d[p], d[p + 1], d[p + 2]) > 60) n++;
      }
    }
    return n;
  }, kind);
}

test('window: every lane as the API gives it, zoom moves them all, a selection’s flame graph is the API’s profile', async () => {
  const page = await newPage({ width: 1400, height: 1000 });
  await withToken(page);
  const from = T0 + 60n * S;
  const to = T0 + 65n * S;
  await go(page, `#/window?from=${from}&to=${to}`);
  await page.waitForSelector('#window-lanes[data-drawn="true"]');
  const w = await api(`/api/v1/window?from=${from}&to=${to}&columns=1000`);
  const g = await groups(page);
  assert.deepEqual(g.traffic.slice(0, 2), [w.traffic.length, sum(w.traffic.map((l) => l.series[0].values.length))]);
  assert.deepEqual(g.cpus.slice(0, 2), [w.cpus.length, sum(w.cpus.map((c) => c.samples))]);
  assert.deepEqual(g.probes.slice(0, 2), [w.probes.length, sum(w.probes.map((c) => c.calls))]);
  assert.deepEqual(g.programs.slice(0, 2), [1, 1500], 'pktloop’s 500 iterations of 3 events');
  for (const kind of ['traffic', 'cpus', 'probes', 'programs']) assert.ok((await inkOf(page, kind)) > 50, `${kind} lanes drawn`);
  // The legend names the processes the ticks are coloured by.
  assert.deepEqual(await page.$$eval('#window-processes li', (lis) => lis.map((l) => l.dataset.pid).sort()), ['100', '200']);

  // Zoom with the wheel on the CPU lanes: every group shows the same, narrower range.
  const cpus = page.locator('.wl-group[data-kind="cpus"] canvas');
  const box = await cpus.boundingBox();
  await page.mouse.move(box.x + box.width * 0.6, box.y + 30);
  for (let i = 0; i < 3; i++) await page.mouse.wheel(0, -200);
  await page.waitForFunction(() => document.querySelector('#window-lanes').dataset.view !== '0,5000000000');
  const zoomed = await groups(page);
  const views = Object.values(zoomed).map((v) => v[2]);
  assert.equal(new Set(views).size, 1, `one range for every lane: ${views}`);
  const [v0, v1] = views[0].split(',').map(Number);
  assert.ok(v1 - v0 < 5e9 * 0.6 && v0 > 0, `zoomed in: ${views[0]}`);
  figures.window_zoom_redraw_ms = await page.evaluate(() => window.__loupe.timings.windowZoomDraw);

  // Hover a tick: its process and stack.
  await page.keyboard.press('Escape');
  await page.dblclick('.wl-group[data-kind="cpus"] canvas', { position: { x: 400, y: 30 } });

  // Select one second by dragging on the timeline lanes: the flame graph below is the API's.
  const prog = page.locator('.wl-group[data-kind="programs"] canvas');
  const pb = await prog.boundingBox();
  const plot = pb.width - 132;
  const xAt = (sec) => pb.x + 132 + (plot * sec) / 5;
  await page.mouse.move(xAt(1), pb.y + 35);
  await page.mouse.down();
  await page.mouse.move(xAt(2), pb.y + 35, { steps: 5 });
  await page.mouse.up();
  await page.waitForSelector('#window-flame .flame');
  const sel = await page.$eval('#window-selection-range', (e) => [e.dataset.from, e.dataset.to]);
  const prof = await api(`/api/v1/profile?from=${sel[0]}&to=${sel[1]}&min_share=0.0001`);
  assert.ok(prof.samples > 0);
  assert.equal(await page.getAttribute('#window-flame', 'data-samples'), String(prof.samples));
  assert.equal(await page.getAttribute('#window-flame .flame', 'data-total'), String(prof.flamegraph.value));
  assert.match(page.url(), /sel_from=\d+&sel_to=\d+/, 'the selection is in the URL');
  await shoot(page, SHOTS, 'window');

  // The export: a trace file with the window's samples, calls and events.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#window-export')]);
  const trace = JSON.parse(readFileSync(await download.path(), 'utf8'));
  const count = (cat) => trace.traceEvents.filter((e) => e.cat === cat && (e.ph === 'i' || e.ph === 'X')).length;
  assert.deepEqual([count('sample'), count('probe'), count('timeline')], [sum(w.cpus.map((c) => c.samples)), sum(w.probes.map((c) => c.calls)), 1500]);
  await page.close();
  assertNoConsoleErrors();
});

test('window: comparing with a baseline shows the known change (more, new, gone) with a legend', async () => {
  const page = await newPage({ width: 1400, height: 1000 });
  await withToken(page);
  // The synthetic change (loupe_testbed::synthetic::fill_changed): pid 400, T0+660…690 s against T0+600…630 s.
  const [a, b] = [T0 + 650n * S, T0 + 700n * S];
  const [sf, st, bf, bt] = [T0 + 660n * S, T0 + 690n * S, T0 + 600n * S, T0 + 630n * S];
  await go(page, `#/window?from=${a}&to=${b}&sel_from=${sf}&sel_to=${st}&base_from=${bf}&base_to=${bt}`);
  await page.waitForSelector('#window-diff .flame');
  assert.equal(await page.getAttribute('#window-diff', 'data-samples'), '400');
  assert.equal(await page.getAttribute('#window-diff', 'data-base-samples'), '400');
  assert.match(await page.textContent('#diff-legend'), /less.*more/s);
  assert.deepEqual(await page.$$eval('#diff-new li', (l) => l.map((x) => x.textContent)), ['new_path']);
  assert.deepEqual(await page.$$eval('#diff-gone li', (l) => l.map((x) => x.textContent)), ['old_path']);
  const row = (name) => page.$eval(`#diff-table tr[data-function="${name}"]`, (tr) => [...tr.cells].map((c) => c.textContent));
  assert.deepEqual((await row('hash')).slice(2, 6), ['+25.0 pp', '25.0% → 50.0%', '+25.0 pp', '2.00×']);
  assert.equal((await row('copy'))[5], '0.50×');
  assert.equal((await row('new_path'))[5], 'new');
  // The same as the CLI's and the API's diff.
  const d = await api(`/api/v1/profile/diff?from=${sf}&to=${st}&base_from=${bf}&base_to=${bt}`);
  const rows = await page.$$eval('#diff-table tbody tr', (trs) => trs.map((tr) => tr.dataset.function));
  assert.deepEqual(rows, d.functions.slice(0, 40).map((f) => f.name));
  // The differential flame graph: red where more (hash), blue where less (copy).
  await shoot(page, SHOTS, 'window-diff');
  // "Compare with the same length just before": the baseline right before the selection.
  await page.click('#compare-before');
  await page.waitForFunction((from) => new URL(location.href).hash.includes(`base_to=${from}`), String(sf));
  await page.close();
  assertNoConsoleErrors();
});

test('window: ten busy minutes of a 16-CPU host (figures)', async () => {
  const busy = synth.busy;
  assert.ok(busy, 'loupe-synth --busy-window filled the busy minutes');
  const start = T0 + 3600n * S;
  const end = start + 600n * S;
  const page = await newPage({ width: 1400, height: 1000 });
  await withToken(page);
  await go(page, '#/');
  await go(page, `#/window?from=${start}&to=${end}`);
  await page.waitForSelector('#window-lanes[data-drawn="true"]');
  const t = await page.evaluate(() => window.__loupe.timings);
  const g = await groups(page);
  assert.deepEqual(g.cpus.slice(0, 2), [16, Number(busy.samples)]);
  assert.deepEqual(g.programs.slice(0, 2), [5, Number(busy.events)]);
  assert.deepEqual(g.probes[1], Number(busy.calls));
  assert.deepEqual(g.traffic[0], 10);
  figures.window_samples = Number(busy.samples);
  figures.window_events = Number(busy.events);
  figures.window_calls = Number(busy.calls);
  figures.window_fetch_ms = t.windowFetch;
  figures.window_drawn_ms = t.windowDrawn;
  // A zoom: every lane redrawn.
  await page.focus('.wl-group[data-kind="cpus"] canvas');
  const before = await page.$eval('#window-lanes', (e) => e.dataset.view);
  await page.keyboard.press('+');
  await page.waitForFunction((v) => document.querySelector('#window-lanes').dataset.view !== v, before);
  figures.window_busy_zoom_ms = await page.evaluate(() => window.__loupe.timings.windowZoomDraw);
  await shoot(page, SHOTS, 'window-busy');
  await page.close();
  assertNoConsoleErrors();
});
