// Outside a fleet: no Fleet link; the fleet view says how to join one (e2e/fleet.mjs drives a real
// rack).
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, go, withToken, assertNoConsoleErrors } from '../harness.mjs';

test('outside a fleet there is no Fleet link, and the fleet view says how to join one', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/fleet');
  assert.equal(await page.isVisible('#nav-fleet'), false);
  assert.match(await page.textContent('#fleet-absent'), /not in a fleet.*--nats URL --rack R/s);
  await page.close();
  assertNoConsoleErrors();
});
