// The timeline view over the events the harness's agent stored: programs, the per-event table,
// lanes, hover, zoom, keyboard, the cap, runs and profile beside it.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T0, S, SHOTS, figures, synth, timeline, allow, api, newPage, go, withToken, assertNoConsoleErrors, shoot, lagText } from '../harness.mjs';

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
  allow(/status of 404/);
  await p.click('#timeline-profile-link');
  await p.waitForFunction(() => window.__loupe.view === 'profile' && window.__loupe.ready === true);
  assert.equal(new URL(p.url()).hash, `#/profile?from=${from}&to=${to}&pid=${timeline.lagsPid}`);
  assert.equal(await p.getAttribute('main .error', 'data-code'), 'no_samples');
  allow();
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
  // Arguments by the names the writer defined (`realtime_before`), exact.
  const named = (e) => e.arg_names.map((n, k) => `${n}=${e.args[k]}`).concat(e.args.slice(e.arg_names.length).flatMap((a, k) => (String(a) === '0' ? [] : [`arg${k + e.arg_names.length}=${a}`]))).join(' ');
  assert.deepEqual(first[0].arg_names, ['realtime_before']);
  assert.equal(await page.textContent('.tl-tooltip .tl-tip-args'), named(first[0]));
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction((a) => document.querySelector('.tl-tooltip .tl-tip-args')?.textContent === a, named(first[1]));
  assert.match(await page.textContent('#timeline-process .sr-only[aria-live]'), /^wall, level 0/);
  // The events-in-view table (for keyboards and screen readers).
  await page.click('.tl-view-events summary');
  await page.waitForSelector('#timeline-view-table tbody tr');
  assert.equal(await page.textContent('#timeline-view-table tbody tr:first-child td:last-child'), named(first[0]));
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
  allow(/status of 400/);
  await go(page, '#/timeline?from=yesterday-ish');
  assert.equal(await page.getAttribute('main .error', 'data-status'), '400');
  allow();
  // Reachable from the day page and the run view.
  await go(page, '#/day/2026-11-23');
  assert.equal(await page.getAttribute('#day-timeline-link', 'href'), `#/timeline?from=${T0}&to=${T0 + 86_400n * S}`);
  await go(page, `#/run/${synth.run_a}`);
  assert.match(await page.getAttribute('#timeline-link', 'href'), /^#\/timeline\?from=\d+&to=\d+$/);
  await page.close();
  assertNoConsoleErrors();
});
