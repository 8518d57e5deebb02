// The probes views: the list, a session (tables, histograms, call trees), notes, the start form
// from a profile, a refused start.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, S, SHOTS, figures, synth, allow, api, newPage, go, withToken, assertNoConsoleErrors, shoot, countText, percent, lagText, rateText, targetText } from '../harness.mjs';

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
  assert.equal(all.sessions.length, 4, 'loupe-synth stores three probe sessions, and the busy window’s');
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
  allow(/status of 409/);
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
  allow();
  await page.close();
  assertNoConsoleErrors();
});
