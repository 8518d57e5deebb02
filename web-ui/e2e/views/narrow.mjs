// Every view at 800 px: no horizontal page overflow.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { T0, S, SHOTS, synth, timeline, api, newPage, go, withToken, assertNoConsoleErrors } from '../harness.mjs';

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
