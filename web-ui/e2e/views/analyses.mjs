// The analyses view: upload through the file input, run, and each result kind; a time limit said
// plainly.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SHOTS, WASM_DIR, allow, newPage, go, withToken, assertNoConsoleErrors, shoot } from '../harness.mjs';

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
  // Runs A and B's minutes (the busy window's runs, an hour later, have bursts of their own).
  await page.fill('#invoke-from', '2026-11-23T00:00:00Z');
  await page.fill('#invoke-to', '2026-11-23T00:02:00Z');
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
  allow(/status of 408/);
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
  allow();
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
