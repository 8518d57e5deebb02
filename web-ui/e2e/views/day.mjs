// The day page: its runs with per-run totals, the interval filter.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHOTS, synth, api, newPage, go, withToken, assertNoConsoleErrors, sum, shoot } from '../harness.mjs';

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
  // Run A and the busy window's ten runs are the day's 1-ms runs.
  const oneMs = await api('/api/v1/runs?from=2026-11-23T00:00:00Z&to=2026-11-24T00:00:00Z&interval=1ms');
  assert.equal(oneMs.length, 11);
  assert.equal(await page.locator('#runs-table tbody tr').count(), oneMs.length);
  assert.ok(await page.isVisible(`tr[data-run-id="${synth.run_a}"]`));
  await page.close();
  assertNoConsoleErrors();
});
