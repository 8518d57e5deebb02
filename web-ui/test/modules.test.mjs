// Unit tests of src/modules.ts (the library share view's arithmetic; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { barWidth, moduleShares, share } = await loadTs('modules.ts');

test('modules by self samples, then total, then name; shares of the samples', () => {
  const input = [
    { name: 'libz.so.1', self: 10, total: 12 },
    { name: '[kernel]', self: 30, total: 45 },
    { name: 'svc', self: 10, total: 100 },
    { name: 'libc.so.6', self: 50, total: 60 },
    { name: '[unknown]', self: 0, total: 5 },
    { name: 'b.so', self: 10, total: 12 },
  ];
  const copy = structuredClone(input);
  const rows = moduleShares(input, 100);
  assert.deepEqual(
    rows.map((m) => m.name),
    ['libc.so.6', '[kernel]', 'svc', 'b.so', 'libz.so.1', '[unknown]'],
  );
  assert.deepEqual(rows[0], { name: 'libc.so.6', self: 50, total: 60, selfShare: 0.5, totalShare: 0.6 });
  assert.equal(rows.at(-1).selfShare, 0);
  assert.equal(rows.at(-1).totalShare, 0.05);
  assert.deepEqual(input, copy, 'the input is left as it was');
});

test('no modules, no samples, more than the samples: empty, zero shares, clamped', () => {
  assert.deepEqual(moduleShares([], 100), []);
  assert.deepEqual(moduleShares([{ name: 'x', self: 3, total: 3 }], 0), [{ name: 'x', self: 3, total: 3, selfShare: 0, totalShare: 0 }]);
  assert.equal(share(5, 4), 1);
  assert.equal(share(0, 4), 0);
  assert.equal(share(1, 3), 1 / 3);
  assert.equal(share(1, NaN), 0);
});

test('bar widths: percent with at most one decimal, within 0–100 %', () => {
  assert.equal(barWidth(0), '0%');
  assert.equal(barWidth(1), '100%');
  assert.equal(barWidth(0.425), '42.5%');
  assert.equal(barWidth(1 / 3), '33.3%');
  assert.equal(barWidth(0.00001), '0%');
  assert.equal(barWidth(2), '100%');
  assert.equal(barWidth(-1), '0%');
  assert.equal(barWidth(NaN), '0%');
});
