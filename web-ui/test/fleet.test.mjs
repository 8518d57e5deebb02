// Unit tests of src/fleet.ts (node's test runner; `npm test`): the rack sum of a synchronized
// run and the fleet-hot-functions table as the fleet view shows it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { hotTables, rackSum } = await loadTs('fleet.ts');

test('the rack sum adds every host per slot, a short host over the slots it has', () => {
  assert.deepEqual(rackSum([[1, 2, 3], [10, 20, 30], [100]], 3), [111, 22, 33]);
  assert.deepEqual(rackSum([], 2), [0, 0]);
  assert.deepEqual(rackSum([[5, 5, 5, 5]], 2), [5, 5], 'slots past the run are not summed');
});

const COLUMNS = ['kind', 'function', 'module', 'host', 'samples', 'percent'].map((name) => ({ name, unit: '' }));

test('hot functions: libraries and functions over all hosts, each with its hosts, most first', () => {
  // As fleet-hot-functions answers: host rows, libraries, functions (per host and `*`).
  const rows = [
    ['host', '', '', '*', 30, 100],
    ['host', '', '', 'h1', 10, 100],
    ['host', '', '', 'h0', 20, 100],
    ['library', '', 'libz.so', '*', 18, 60],
    ['library', '', 'libz.so', 'h0', 18, 90],
    ['library', '', 'libc.so', '*', 12, 40],
    ['library', '', 'libc.so', 'h1', 10, 100],
    ['library', '', 'libc.so', 'h0', 2, 10],
    ['function', 'memcpy', 'libc.so', '*', 12, 40],
    ['function', 'memcpy', 'libc.so', 'h0', 2, 10],
    ['function', 'memcpy', 'libc.so', 'h1', 10, 100],
    ['function', 'deflate', 'libz.so', '*', 18, 60],
    ['function', 'deflate', 'libz.so', 'h0', 18, 90],
    // A host's function outside the fleet's list (its own [other]) is not listed.
    ['function', 'lonely', 'app', 'h1', 1, 10],
  ];
  const t = hotTables(COLUMNS, rows);
  assert.equal(t.samples, 30);
  assert.deepEqual(t.hosts, [{ host: 'h0', samples: 20 }, { host: 'h1', samples: 10 }]);
  assert.deepEqual(t.libraries.map((l) => [l.module, l.samples, l.percent]), [['libz.so', 18, 60], ['libc.so', 12, 40]]);
  assert.deepEqual(t.libraries[1].hosts, [{ host: 'h1', samples: 10 }, { host: 'h0', samples: 2 }]);
  assert.deepEqual(t.functions.map((f) => f.function), ['deflate', 'memcpy']);
  assert.deepEqual(t.functions[1].hosts, [{ host: 'h1', samples: 10 }, { host: 'h0', samples: 2 }]);
  // Every host's part of a function adds up to the function.
  for (const f of t.functions) assert.equal(f.hosts.reduce((a, x) => a + x.samples, 0), f.samples, f.function);
  // Big counts arrive as strings (json.ts keeps 16+ digits exact).
  const big = hotTables(COLUMNS, [['host', '', '', '*', '12345678901234567', 100]]);
  assert.equal(big.samples, 12345678901234567);
});

test('a table of another shape is refused with its columns named', () => {
  assert.throws(() => hotTables([{ name: 'slot', unit: '' }], []), /not a fleet-hot-functions table: columns slot/);
});
