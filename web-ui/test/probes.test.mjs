// Unit tests of src/probes.ts (the probe views' arithmetic; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { barAt, heaviestPath, histBars, histDomain, histTicks, overlapQuery, rateText, splitFunctions, splitList, targetText, treeRows } = await loadTs('probes.ts');

test('targets, rates and lists in words', () => {
  assert.equal(targetText({ pids: [4242], binary: null }), 'PID 4242');
  assert.equal(targetText({ pids: [1, 2, 3] }), 'PIDs 1, 2, 3');
  assert.equal(targetText({ pids: [1, 2, 3, 4, 5, 6] }), 'PIDs 1, 2, 3, 4 and 2 more');
  assert.equal(targetText({ pids: [], binary: '/usr/local/bin/nf' }), '/usr/local/bin/nf');
  assert.equal(targetText({ pids: [] }), '—');
  assert.equal(rateText(19134.0), '19,134');
  assert.equal(rateText(99.96), '100');
  assert.equal(rateText(12.345), '12.3');
  assert.equal(rateText(0.5), '0.5');
  assert.equal(rateText(0), '0');
  assert.equal(rateText(NaN), '—');
  assert.deepEqual(splitList(' 1, 2 3,,'), ['1', '2', '3']);
  assert.deepEqual(splitFunctions('handle, parse,lookup ,'), ['handle', 'parse', 'lookup']);
  assert.deepEqual(splitFunctions('f(int, char), std::map<K, V>::find, libc.so.6:malloc'), ['f(int, char)', 'std::map<K, V>::find', 'libc.so.6:malloc']);
});

test('a window in Unix ns asks from an hour before it and keeps the sessions ending after its start', () => {
  const w0 = 1795392000000000000n;
  const { query, keep } = overlapQuery(w0.toString(), (w0 + 2_000_000_000n).toString());
  assert.deepEqual(query, { from: (w0 - 3600n * 1_000_000_000n).toString(), to: (w0 + 2_000_000_000n).toString() });
  assert.equal(keep({ end_unix_ns: (w0 + 1n).toString() }), true);
  assert.equal(keep({ end_unix_ns: w0.toString() }), false, 'a session ending at the window’s start does not overlap it');
  // Near the epoch, never below 0; relative forms go to the API as they are.
  assert.deepEqual(overlapQuery('5', null).query, { from: '0', to: undefined });
  const rel = overlapQuery('-1h', 'now');
  assert.deepEqual(rel.query, { from: '-1h', to: 'now' });
  assert.equal(rel.keep({ end_unix_ns: '1' }), true);
  assert.deepEqual(overlapQuery(null, null).query, { from: undefined, to: undefined });
});

test('histograms: a shared log domain in whole decades, bars in order with heights per log-width, the tail visible, ticks', () => {
  const a = [
    { low_ns: 240, high_ns: 256, count: 100 },
    { low_ns: 256, high_ns: 272, count: 40 },
    { low_ns: 9728, high_ns: 10240, count: 1 },
  ];
  const b = [{ low_ns: 120, high_ns: 128, count: 5 }];
  const domain = histDomain([a, b, []]);
  assert.deepEqual(domain, [100, 30000]);
  assert.deepEqual(histDomain([[], [{ low_ns: 5, high_ns: 6, count: 0 }]]), [10, 1e4], 'nothing timed: a default');
  const bars = histBars(a, domain, 500, 0.02);
  assert.equal(bars.length, 3);
  assert.deepEqual(bars.map((x) => x.index), [0, 1, 2]);
  // Heights: calls per log-width (the bucket after 256 ns is wider on a log axis than the one before).
  assert.equal(bars[0].h, 1);
  assert.ok(Math.abs(bars[1].h - (40 / Math.log(272 / 256)) / (100 / Math.log(256 / 240))) < 1e-12);
  assert.ok(bars[1].h > 0.4, 'a wider bucket is not taller for its width');
  assert.equal(bars[2].h, 0.02, 'one call in a tail bucket keeps the minimum height');
  for (const x of bars) assert.ok(x.x0 >= 0 && x.x1 <= 500 && x.x1 - x.x0 >= 1);
  assert.ok(bars[0].x1 <= bars[1].x0 + 1e-9 && bars[1].x1 < bars[2].x0, 'bars in order, no overlap');
  // log x: 1 µs sits at log(1000/100) / log(30000/100) of the width.
  const at1us = (Math.log(10) / Math.log(300)) * 500;
  assert.ok(bars[1].x1 < at1us && bars[2].x0 > at1us);
  assert.deepEqual(histTicks([100, 30000]), [100, 300, 1000, 3000, 10000, 30000]);
  assert.deepEqual(histTicks([10, 1e7]), [10, 100, 1000, 1e4, 1e5, 1e6, 1e7]);
  assert.equal(barAt(bars, bars[1].x0 + 0.1), 1);
  assert.equal(barAt(bars, 499.9), -1);
  assert.equal(barAt(bars, bars[2].x1 + 2), 2, 'the nearest bar within 3 px');
});

const node = (fn, d, self, entry, children = []) => ({ function: fn, tid: 7, entry_unix_ns: entry, duration_ns: d, self_ns: self, children });

test('call trees: pre-order rows, depths, the heaviest child of each call, offsets, bounded', () => {
  const T = 1795392000500000000n;
  const at = (ns) => (T + BigInt(ns)).toString();
  const tree = node('handle', 11_000, 400, at(0), [
    node('parse', 300, 300, at(50)),
    node('lookup', 250, 250, at(400)),
    node('lookup', 260, 260, at(700)),
    node('forward', 9_800, 9_000, at(1000), [node('retransmit', 800, 800, at(5000))]),
  ]);
  const { rows, omitted } = treeRows(tree, 100);
  assert.equal(omitted, 0);
  assert.deepEqual(
    rows.map((r) => [r.node.function, r.depth, r.heaviest]),
    [
      ['handle', 0, false],
      ['parse', 1, false],
      ['lookup', 1, false],
      ['lookup', 1, false],
      ['forward', 1, true],
      ['retransmit', 2, false],
    ],
    'an only child is not marked',
  );
  assert.equal(rows[0].share, 1);
  assert.equal(rows[4].share, 9_800 / 11_000);
  assert.deepEqual(rows.map((r) => r.offsetNs), [0, 50, 400, 700, 1000, 5000]);
  assert.deepEqual(heaviestPath(tree), ['handle', 'forward', 'retransmit']);
  const cut = treeRows(tree, 3);
  assert.deepEqual(cut.rows.map((r) => r.node.function), ['handle', 'parse', 'lookup']);
  assert.equal(cut.omitted, 3);
  // Deep trees do not overflow the stack.
  let deep = node('leaf', 1, 1, at(0));
  for (let i = 0; i < 50_000; i++) deep = node('f', 2, 1, at(0), [deep]);
  const d = treeRows(deep, 10);
  assert.equal(d.rows.length, 10);
  assert.equal(d.omitted, 50_001 - 10);
  assert.equal(d.rows[9].depth, 9);
});
