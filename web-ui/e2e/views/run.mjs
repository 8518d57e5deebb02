// The run view: exact ids and times above 2^53 (answers stubbed), totals, bursts and stalls, zoom,
// timings, a narrow screen.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SHOTS, base, figures, synth, api, newPage, go, withToken, assertNoConsoleErrors, sum, shoot } from '../harness.mjs';

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
