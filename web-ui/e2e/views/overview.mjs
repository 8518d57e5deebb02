// The overview (host, store size, retained days, the theme toggle) and the token panel a bad token
// opens.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHOTS, allow, api, base, newPage, go, token, withToken, assertNoConsoleErrors, shoot } from '../harness.mjs';

test('a bad token shows a clear error, the token field, then a good token works', async () => {
  allow(/status of 401/);
  const page = await newPage();
  await page.goto(`${base}/#/`);
  await page.waitForFunction(() => window.__loupe?.ready === true);
  // health says auth is on and there is no token: the token field is open.
  await page.waitForSelector('#token-panel:not([hidden])');
  await page.fill('#token-input', 'loupe_' + '0'.repeat(64));
  await page.click('#token-panel button[type=submit]');
  await page.waitForSelector('.auth-banner:not([hidden])');
  const banner = await page.textContent('.auth-banner');
  assert.match(banner, /unknown or revoked/i);
  assert.match(banner, /401/);
  assert.ok(await page.isVisible('#token-input'), 'token field shown after 401');
  const box = await page.textContent('main .error');
  assert.match(box, /401/);
  assert.match(box, /unauthorized/);
  await shoot(page, SHOTS, 'token-error');
  await page.fill('#token-input', token);
  await page.click('#token-panel button[type=submit]');
  await page.waitForSelector('#days-table');
  assert.equal(await page.isVisible('.auth-banner'), false);
  await page.close();
  allow();
  assertNoConsoleErrors();
});

test('overview: host, store size and retained days', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  await page.waitForSelector('#days-table');
  const stats = await api('/api/v1/stats');
  const health = await api('/api/v1/health');
  assert.equal(await page.getAttribute('[data-total-bytes]', 'data-total-bytes'), String(stats.total_bytes));
  assert.equal(await page.getAttribute('[data-disk-bytes]', 'data-disk-bytes'), String(stats.disk_bytes));
  assert.equal(await page.getAttribute('[data-hostname]', 'data-hostname'), health.hostname);
  assert.equal(await page.getAttribute('[data-collecting]', 'data-collecting'), 'false');
  assert.ok(await page.isVisible('#days-table tr[data-date="2026-11-23"]'));
  assert.ok(await page.isVisible('a.cal-cell[href="#/day/2026-11-23"]'));
  await shoot(page, SHOTS, 'overview');
  // The theme toggle: auto → light → dark → auto, whatever the system prefers.
  const theme = page.locator('header button', { hasText: 'Theme:' });
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.resolvedTheme), 'dark');
  await theme.click();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme ?? 'auto'), 'auto');
  await page.close();
  assertNoConsoleErrors();
});
