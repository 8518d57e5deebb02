// The profile view: flame graph (search, keyboard, zoom), filters, the Libraries table, waits off
// the CPU, whole stacks, pprof, and the wide profile's figures.
// Run by e2e/run.mjs against its one `loupe serve` (e2e/harness.mjs), in its order.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { T0, S, SHOTS, figures, synth, api, newPage, go, withToken, assertNoConsoleErrors, shoot, percent } from '../harness.mjs';

function countNodes(root) {
  let n = 0;
  const stack = [root];
  while (stack.length) {
    const x = stack.pop();
    n++;
    for (const c of x.children ?? []) stack.push(c);
  }
  return n;
}

/**
 * The profile page's Libraries table shows exactly `GET /api/v1/profile`'s modules for the
 * page's own query (from its hash): the same names in the same order, self samples and self %.
 * Returns the API's modules.
 */
async function assertModulesTable(page) {
  const hash = new URL(page.url()).hash;
  assert.match(hash, /^#\/profile\?/);
  const prof = await api(`/api/v1/profile?${hash.slice(hash.indexOf('?') + 1)}`);
  assert.ok(prof.modules.length > 0, 'the profile has modules');
  await page.waitForSelector('#modules-table');
  const more = page.locator('section.modules > button');
  if (await more.isVisible()) {
    if ((await more.textContent()).startsWith('Show all')) await more.click();
  }
  const rows = await page.$$eval('#modules-table tbody tr', (trs) =>
    trs.map((tr) => ({ name: tr.dataset.module, shown: tr.querySelector('th').textContent, self: tr.dataset.self, selfText: tr.cells[1].textContent, selfPct: tr.querySelector('.share-text').textContent, width: tr.querySelector('.share-fill').style.width })),
  );
  assert.deepEqual(
    rows.map((r) => [r.name, r.shown, r.self, r.selfText, r.selfPct]),
    prof.modules.map((m) => [m.name, m.name, String(m.self), m.self.toLocaleString('en-US'), percent(m.self, prof.samples)]),
    'Libraries rows equal the API’s modules',
  );
  // The bars: the widest is the first row's, in proportion to the self share.
  for (const [i, r] of rows.entries()) {
    assert.ok(Math.abs(parseFloat(r.width) - (100 * prof.modules[i].self) / prof.samples) <= 0.051, `${r.name}: bar ${r.width}`);
  }
  assert.equal(await page.getAttribute('#modules-table', 'data-top-module'), prof.modules[0].name);
  return prof.modules;
}

test('profile of run B window: hot_leaf on top, search, keyboard zoom, pprof download', async () => {
  const page = await newPage();
  await withToken(page);
  await go(page, `#/run/${synth.run_b}`);
  assert.equal(await page.getAttribute('article.run', 'data-bursts'), '10-14');
  await page.click('#profile-link');
  await page.waitForFunction(() => window.__loupe.view === 'profile' && window.__loupe.ready === true);
  await page.waitForSelector('#functions-table');
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'hot_leaf');
  assert.equal(await page.textContent('#functions-table tbody tr:first-child th'), 'hot_leaf');
  // Libraries: the module shares the API gives for the same range.
  await assertModulesTable(page);
  // Search highlights.
  await page.fill('.flame-search', 'hot_leaf');
  await page.press('.flame-search', 'Enter');
  assert.ok(Number(await page.getAttribute('.flame', 'data-matches')) > 0);
  // Keyboard: focus the graph, go down to the heaviest child, zoom in, reset.
  await page.focus('.flame-canvas');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom !== '');
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom === '');
  // Hover shows a tooltip.
  const box = await page.locator('.flame-canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 5);
  await page.waitForSelector('.flame-tooltip:not([hidden])');
  // Filter by comm: only "batch" (other_leaf).
  await page.fill('#profile-comm', 'batch');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => window.__loupe.ready === true && document.querySelector('#functions-table')?.dataset.topFunction === 'other_leaf');
  await page.fill('#profile-comm', '');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => window.__loupe.ready === true && document.querySelector('#functions-table')?.dataset.topFunction === 'hot_leaf');
  // pprof: fetched with the Authorization header, saved via a Blob.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#pprof-download')]);
  const path = await download.path();
  const bytes = readFileSync(path);
  assert.ok(bytes.length > 20 && bytes[0] === 0x1f && bytes[1] === 0x8b, 'pprof is gzip');
  await page.fill('.flame-search', 'hot_leaf');
  await page.press('.flame-search', 'Enter');
  await shoot(page, SHOTS, 'profile');
  await page.close();
  assertNoConsoleErrors();
});

test('profile: the Libraries table equals the API’s module shares; an empty list is said plainly', async () => {
  const page = await newPage();
  await withToken(page);
  // The whole day, every process: the program's own binaries of both synthetic workloads.
  await go(page, `#/profile?from=${T0}&to=${T0 + 86_400n * S}`);
  const modules = await assertModulesTable(page);
  assert.ok(modules.length >= 2, `${modules.length} modules`);
  assert.equal(await page.getAttribute('#modules-table thead th:nth-child(2)', 'aria-sort'), 'descending');
  assert.equal(await page.getAttribute('section.modules .table-wrap', 'aria-label'), 'Libraries: each module’s share of the samples');
  await shoot(page, SHOTS, 'profile-libraries');
  // A profile with samples but no modules (answer stubbed in the browser).
  await page.route(/\/api\/v1\/profile\?/, (r) =>
    r.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({ samples: 3, lost: 0, functions: [{ name: 'f', self: 3, total: 3 }], modules: [], flamegraph: { name: 'all', value: 3, children: [{ name: 'f', value: 3 }] } }),
    }),
  );
  await go(page, `#/profile?from=${T0}&to=${T0 + S}`);
  await page.waitForSelector('#modules-empty');
  assert.equal(await page.locator('#modules-table').count(), 0);
  assert.match(await page.textContent('#modules-empty'), /No module information/);
  await page.close();
  assertNoConsoleErrors();
});

test('profile: waits off the CPU in time waited, from the form’s checkbox to the API’s sums', async () => {
  const page = await newPage();
  await withToken(page);
  // The synthetic waits (loupe-synth: testbed's synthetic::waits): svc 3 × 10 ms, batch 2 × 5 ms kept 1 in 4.
  const from = T0, to = T0 + 86_400n * S;
  await go(page, `#/profile?from=${from}&to=${to}`);
  assert.equal(await page.getAttribute('.profile-summary', 'data-kind'), 'on_cpu');
  await page.check('#profile-off-cpu');
  await page.click('.profile-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('.profile-summary')?.getAttribute('data-kind') === 'off_cpu' && window.__loupe.ready === true);
  assert.match(await page.evaluate(() => location.hash), /kind=off_cpu/);
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}&kind=off_cpu`);
  assert.equal(prof.kind, 'off_cpu');
  assert.equal(Number(prof.flamegraph.value), 70_000_000);
  assert.equal(await page.getAttribute('.profile-summary', 'data-samples'), '5');
  assert.equal(await page.getAttribute('.profile-summary', 'data-waited'), '70000000');
  assert.equal(await page.textContent('#time-waited'), '70 ms');
  // Functions in time waited, with shares of all of it: lock_table called the kernel's
  // schedule (the leaf: all 70 ms of self time) for 40 ms of the 70.
  const row = page.locator('#functions-table tbody tr[data-function="lock_table"] td');
  assert.deepEqual(await row.allTextContents().then((c) => c.slice(1, 5)), ['0 ns', '0.0%', '40 ms', '57.1%']);
  assert.equal(prof.functions[0].name, 'schedule');
  assert.equal(await page.getAttribute('#functions-table', 'data-top-function'), 'schedule');
  const leaf = page.locator('#functions-table tbody tr[data-function="schedule"] td');
  assert.deepEqual(await leaf.allTextContents().then((c) => c.slice(1, 3)), ['70 ms', '100.0%']);
  // The flame graph says time too.
  assert.match(await page.textContent('.flame-crumb'), /^70 ms waited · /);
  await shoot(page, SHOTS, 'profile-off-cpu');
  await page.close();
  assertNoConsoleErrors();
});

test('profile: the share of whole stacks is the API’s, and cut stacks are named and flagged', async () => {
  const page = await newPage();
  await withToken(page);
  const from = T0, to = T0 + 86_400n * S;
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}`);
  await go(page, `#/profile?from=${from}&to=${to}`);
  await page.waitForSelector('#whole-stacks');
  assert.equal(await page.getAttribute('#whole-stacks', 'data-whole'), String(prof.user_stacks.whole));
  assert.equal(await page.getAttribute('#whole-stacks', 'data-samples'), String(prof.user_stacks.samples));
  // Stacks cut short (answer stubbed in the browser): the share, each reason, and a warning.
  await page.route(/\/api\/v1\/profile\?/, (r) =>
    r.fulfill({
      status: 200,
      contentType: 'application/json',
      body: JSON.stringify({
        samples: 200, lost: 0, functions: [{ name: 'f', self: 200, total: 200 }], modules: [],
        flamegraph: { name: 'all', value: 200, children: [{ name: 'f', value: 200 }] },
        user_stacks: { samples: 200, whole: 150, cut: [{ reason: 'truncated: no unwind info', samples: 40 }, { reason: 'frame-pointer walk', samples: 10 }] },
      }),
    }),
  );
  await go(page, `#/profile?from=${T0}&to=${T0 + S}`);
  await page.waitForSelector('#whole-stacks');
  const text = await page.textContent('#whole-stacks');
  assert.match(text, /75\.0 % of 200/);
  assert.match(text, /truncated: no unwind info: 40/);
  assert.match(text, /frame-pointer walk: 10/);
  assert.match(await page.getAttribute('#whole-stacks', 'class'), /warn-text/);
  await page.close();
  assertNoConsoleErrors();
});

test('wide profile: ≥ 50,000-node flame graph renders and stays interactive', async () => {
  const from = (T0 + 120n * S).toString();
  const to = (T0 + 86_400n * S).toString();
  const prof = await api(`/api/v1/profile?from=${from}&to=${to}&pid=300`);
  const nodes = countNodes(prof.flamegraph);
  assert.ok(nodes >= 50_000, `wide flame graph has ${nodes} nodes`);
  // What the view fetches: nodes under 0.01 % of the samples left out, and counted.
  const pruned = await api(`/api/v1/profile?from=${from}&to=${to}&pid=300&min_share=0.0001`);
  const kept = countNodes(pruned.flamegraph);
  assert.equal(kept + Number(pruned.pruned_nodes), nodes, 'kept + pruned = every node');
  assert.ok(kept < nodes, `${kept} of ${nodes} nodes kept`);
  const page = await newPage();
  await withToken(page);
  await go(page, '#/');
  // Every node (`&all=true`, the "Show every call path" link): fetch + parse timed.
  await page.evaluate(() => (window.__loupe.timings = {}));
  await go(page, `#/profile?from=${from}&to=${to}&pid=300&all=true`);
  await page.waitForSelector('.flame');
  assert.equal(Number(await page.getAttribute('.flame', 'data-nodes')), nodes);
  assert.equal(await page.locator('#flame-pruned').count(), 0, 'nothing left out, nothing said');
  const whole = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.flame_nodes_all = whole.flameNodes;
  figures.profile_fetch_all_ms = whole.profileFetched;
  figures.flame_render_all_ms = whole.flameRender;
  // The view as it opens: the pruned profile, with a way to every node.
  await page.evaluate(() => (window.__loupe.timings = {}));
  await go(page, `#/profile?from=${from}&to=${to}&pid=300`);
  await page.waitForSelector('.flame');
  assert.equal(Number(await page.getAttribute('.flame', 'data-nodes')), kept);
  assert.match(await page.textContent('#flame-pruned'), new RegExp(`${Number(pruned.pruned_nodes).toLocaleString('en-US')} call paths`));
  assert.match(await page.getAttribute('#flame-show-all', 'href'), /all=true/);
  const t = await page.evaluate(() => ({ ...window.__loupe.timings }));
  figures.flame_nodes = t.flameNodes;
  figures.flame_render_ms = t.flameRender;
  figures.flame_layout_ms = t.flameLayout;
  figures.flame_draw_ms = t.flameDraw;
  figures.profile_fetch_ms = t.profileFetched;
  // Interactive: click to zoom, hover, search, and time a redraw.
  const box = await page.locator('.flame-canvas').boundingBox();
  await page.mouse.click(box.x + box.width / 3, box.y + 18 * 3 + 5);
  await page.waitForFunction(() => document.querySelector('.flame').dataset.zoom !== '');
  figures.flame_redraw_ms = await page.evaluate(
    () =>
      new Promise((r) => {
        const t0 = performance.now();
        document.querySelector('.flame-canvas').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
        requestAnimationFrame(() => r(performance.now() - t0));
      }),
  );
  await page.mouse.move(box.x + box.width / 2, box.y + 18 * 4 + 5);
  await page.waitForSelector('.flame-tooltip:not([hidden])');
  // A function drawn in the pruned graph is found; one whose every call path is narrower than
  // 0.01 % (a function spread thin) is said to be possibly among those left out.
  const drawn = new Set();
  for (const stack = [pruned.flamegraph]; stack.length; ) {
    const n = stack.pop();
    drawn.add(n.name);
    stack.push(...(n.children ?? []));
  }
  const shown = prof.functions.find((fn) => drawn.has(fn.name));
  await page.fill('.flame-search', shown.name);
  await page.press('.flame-search', 'Enter');
  assert.ok(Number(await page.getAttribute('.flame', 'data-matches')) > 0);
  const thin = prof.functions.find((fn) => !drawn.has(fn.name));
  if (thin) {
    await page.fill('.flame-search', thin.name);
    await page.press('.flame-search', 'Enter');
    assert.equal(await page.getAttribute('.flame', 'data-matches'), '0');
    assert.match(await page.textContent('.flame-search-info'), /no drawn frame matches \(.* narrow call paths are left out\)/);
  }
  await shoot(page, SHOTS, 'flame-wide');
  await page.close();
  assertNoConsoleErrors();
});
