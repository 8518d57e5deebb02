// Unit tests of src/timeline.ts (the timeline view's arithmetic; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const tl = await loadTs('timeline.ts');
const { barSpan, capOf, colorSlots, extent, fetchCapped, hitTest, indexInLane, lagText, laneLayout, nearestInLane, niceStep, offsetText, pan, tickLabel, ticks, toColumns, unixNs, zoom } = tl;

const BASE = 1795466046607643112n; // > 2^53, as the API's times are

/** An event as the UI receives it: time as a decimal string (json.ts), big args as strings. */
function ev(dt, level, name, lag, extra = {}) {
  return { time_unix_ns: String(BASE + BigInt(dt)), pid: 7, tid: 7, cpu: 0, comm: 'w', name, level, args: [1, 2, 3, '18446744073709551615'], lag_ns: lag, ...extra };
}

test('fetchCapped: follows next until the end; no cap hit', async () => {
  const all = Array.from({ length: 25 }, (_, i) => i);
  const calls = [];
  const fetchPage = async (after, limit) => {
    calls.push([after, limit]);
    const from = after === null ? 0 : Number(after);
    const events = all.slice(from, from + limit);
    return { events, next: from + limit < all.length ? String(from + limit) : null };
  };
  const r = await fetchCapped(fetchPage, 100, 10);
  assert.deepEqual(r.events, all);
  assert.equal(r.truncated, false);
  assert.equal(r.pages, 3);
  assert.deepEqual(calls, [
    [null, 10],
    ['10', 10],
    ['20', 10],
  ]);
});

test('fetchCapped: stops at the cap, asks only for the room left, says it was hit', async () => {
  const calls = [];
  const fetchPage = async (after, limit) => {
    calls.push(limit);
    const from = after === null ? 0 : Number(after);
    return { events: Array.from({ length: limit }, (_, i) => from + i), next: String(from + limit) };
  };
  const r = await fetchCapped(fetchPage, 25, 10);
  assert.equal(r.events.length, 25);
  assert.deepEqual(r.events.slice(-2), [23, 24]);
  assert.equal(r.truncated, true);
  assert.deepEqual(calls, [10, 10, 5]);
});

test('fetchCapped: exactly the cap with nothing more is not truncated; a server ignoring limit is cut; empty pages end', async () => {
  const exact = await fetchCapped(async () => ({ events: [1, 2, 3], next: null }), 3, 10);
  assert.deepEqual([exact.events, exact.truncated], [[1, 2, 3], false]);
  const greedy = await fetchCapped(async () => ({ events: [1, 2, 3, 4, 5], next: 'x' }), 3, 10);
  assert.deepEqual([greedy.events, greedy.truncated], [[1, 2, 3], true]);
  let n = 0;
  const empty = await fetchCapped(async () => (n++, { events: [], next: 'again' }), 100, 10);
  assert.deepEqual([empty.events, empty.truncated, n], [[], false, 1]);
});

test('capOf: default, clamped, garbage', () => {
  assert.equal(capOf(null), 10_000);
  assert.equal(capOf(''), 10_000);
  assert.equal(capOf('abc'), 10_000);
  assert.equal(capOf('3000'), 3000);
  assert.equal(capOf('5'), 100);
  assert.equal(capOf('1e9'), 100_000);
});

test('laneLayout: one lane per level present, 0 on top, others skipped', () => {
  const l = laneLayout([3, 0, 3, 1, 0, 12, -1]);
  assert.deepEqual(l.levels, [0, 1, 3]);
  assert.deepEqual([...l.laneOf], [0, 1, -1, 2, -1, -1, -1, -1, -1, -1]);
  assert.deepEqual(laneLayout([]).levels, []);
  assert.deepEqual(laneLayout([5]).levels, [5]);
});

test('toColumns: exact relative times, lags, lanes by level, names in the given order', () => {
  const events = [ev(0, 0, 'loop', null), ev(100, 1, 'phase', 100), ev(250, 2, 'step', 150), ev(1000, 0, 'loop_end', 1000)];
  const c = toColumns(events, ['loop_end', 'loop']);
  assert.equal(c.n, 4);
  assert.equal(c.base, BASE);
  assert.deepEqual([...c.t], [0, 100, 250, 1000]);
  assert.deepEqual([...c.lag], [-1, 100, 150, 1000]);
  assert.deepEqual([...c.lane], [0, 1, 2, 0]);
  assert.deepEqual(c.names, ['loop_end', 'loop', 'phase', 'step']);
  assert.deepEqual([...c.nameId], [1, 2, 3, 0]);
  assert.deepEqual(c.byLane.map((a) => [...a]), [[0, 3], [1], [2]]);
  assert.deepEqual([...c.maxLag], [1000, 100, 150]);
  assert.equal(unixNs(c, 250), BASE + 250n);
  assert.deepEqual(extent(c), [0, 1000]);
});

test('toColumns: out-of-order input is sorted by exact time (ties keep their order)', () => {
  const c = toColumns([ev(50, 0, 'b', 1), ev(10, 0, 'a', 1), ev(50, 0, 'c', 1)]);
  assert.deepEqual(c.events.map((e) => e.name), ['a', 'b', 'c']);
  assert.deepEqual([...c.t], [0, 40, 40]);
});

test('barSpan: from time - lag to time, scaled; min width ending at the event; clipped; null outside', () => {
  // View 0..1000 ns on 100 px: 10 ns a pixel.
  assert.deepEqual(barSpan(500, 200, 0, 1000, 100), [30, 50]);
  // No lag: a 1-px tick ending at the event.
  assert.deepEqual(barSpan(500, -1, 0, 1000, 100), [49, 50]);
  // Shorter than a pixel: widened to the left.
  assert.deepEqual(barSpan(500, 3, 0, 1000, 100, 2), [48, 50]);
  // Starts before the view: clipped at 0; ends after it: clipped at the width.
  assert.deepEqual(barSpan(200, 500, 0, 1000, 100), [0, 20]);
  assert.deepEqual(barSpan(1500, 1000, 0, 1000, 100), [50, 100]);
  // Entirely before or after.
  assert.equal(barSpan(-10, 5, 0, 1000, 100), null);
  assert.equal(barSpan(2000, 500, 0, 1000, 100), null);
  // Zoomed view 400..600 on 200 px.
  assert.deepEqual(barSpan(500, 50, 400, 600, 200), [50, 100]);
});

test('hitTest: inside beats near, shortest inside wins, tolerance, other lanes ignored', () => {
  // Lane 0: loop (t 0, no lag), loop_end (t 1000, lag 1000); lane 1: phases at 100 (lag 100), 600 (lag 500).
  const c = toColumns([ev(0, 0, 'loop', null), ev(100, 1, 'phase', 100), ev(600, 1, 'phase', 500), ev(1000, 0, 'loop_end', 1000)]);
  assert.equal(c.events[hitTest(c, 0, 500, 5)].name, 'loop_end');
  assert.equal(hitTest(c, 1, 50, 5), 1);
  assert.equal(hitTest(c, 1, 300, 5), 2);
  assert.equal(hitTest(c, 1, 800, 5), -1);
  assert.equal(hitTest(c, 1, 603, 5), 2, 'just after its end, within the tolerance');
  // The lag-less loop event at 0 is found near its instant; at 0 both touch: the shortest (the tick) wins.
  assert.equal(hitTest(c, 0, 0, 5), 0);
  assert.equal(hitTest(c, 0, -3, 5), 0);
  assert.equal(hitTest(c, 7, 0, 5), -1);
});

test('nearestInLane and indexInLane', () => {
  const c = toColumns([ev(0, 0, 'a', null), ev(100, 1, 'p', 100), ev(600, 1, 'p', 500), ev(1000, 0, 'e', 1000)]);
  assert.equal(nearestInLane(c, 1, 0), 1);
  assert.equal(nearestInLane(c, 1, 340), 1);
  assert.equal(nearestInLane(c, 1, 360), 2);
  assert.equal(nearestInLane(c, 1, 5000), 2);
  assert.equal(nearestInLane(c, 0, 700), 3);
  assert.equal(indexInLane(c, 3), 1);
  assert.equal(indexInLane(c, 2), 1);
  assert.equal(indexInLane(c, 0), 0);
});

test('ticks: 1-2-5 steps, multiples inside the view, labels in the step’s unit', () => {
  assert.equal(niceStep(1000, 10), 100);
  assert.equal(niceStep(21_000_000, 8), 5_000_000);
  assert.equal(niceStep(1500, 8), 200);
  assert.equal(niceStep(0), 1);
  const t = ticks(150, 1000, 5);
  assert.equal(t.step, 200);
  assert.deepEqual(t.at, [200, 400, 600, 800, 1000]);
  assert.equal(tickLabel(0, 5e6), '+0');
  assert.equal(tickLabel(5e6, 5e6), '+5 ms');
  assert.equal(tickLabel(1.5e6, 5e5), '+1.5 ms');
  assert.equal(tickLabel(250e3, 50e3), '+250 µs');
  assert.equal(tickLabel(-2e9, 1e9), '-2 s');
  assert.equal(tickLabel(300, 100), '+0.3 µs');
  assert.equal(tickLabel(30, 10), '+30 ns');
  assert.equal(tickLabel(1.02e6, 2e4), '+1020 µs');
  assert.equal(tickLabel(2e8, 1e8), '+0.2 s');
});

test('lagText and offsetText: ns, µs, ms, s with 3 significant digits; none is a dash', () => {
  assert.equal(lagText(null), '—');
  assert.equal(lagText(undefined), '—');
  assert.equal(lagText(0), '0 ns');
  assert.equal(lagText(850), '850 ns');
  assert.equal(lagText(2335), '2.33 µs');
  assert.equal(lagText(16639), '16.6 µs');
  assert.equal(lagText(137746), '138 µs');
  assert.equal(lagText(999_700), '1.00 ms');
  assert.equal(lagText(1097727), '1.10 ms');
  assert.equal(lagText(4771148), '4.77 ms');
  assert.equal(lagText(1.5e9), '1.50 s');
  assert.equal(lagText(3600e9), '3600 s');
  assert.equal(offsetText(0), '+0 ns');
  assert.equal(offsetText(1234567), '+1.234567 ms');
  assert.equal(offsetText(2500), '+2.500 µs');
});

test('zoom and pan stay inside the extent', () => {
  assert.deepEqual(zoom(0, 1000, 500, 0.5, 0, 1000), [250, 750]);
  assert.deepEqual(zoom(0, 1000, 0, 0.5, 0, 1000), [0, 500]);
  assert.deepEqual(zoom(250, 750, 500, 4, 0, 1000), [0, 1000]);
  assert.deepEqual(zoom(0, 1000, 500, 0.001, 0, 1000, 100), [450, 550]);
  assert.deepEqual(pan(0, 500, 0.25, 0, 1000), [125, 625]);
  assert.deepEqual(pan(400, 900, 0.5, 0, 1000), [500, 1000]);
  assert.deepEqual(pan(100, 600, -1, 0, 1000), [0, 500]);
});

test('colorSlots: by the order given, cycling', () => {
  const m = colorSlots(['a', 'b', 'c'], 2);
  assert.deepEqual([...m], [
    ['a', 0],
    ['b', 1],
    ['c', 0],
  ]);
});

test('argsText: named arguments, then unnamed ones that are not zero', async () => {
  const { argsText } = await loadTs('timeline.ts');
  assert.equal(argsText(['packets', 'bytes'], ['32', '2048', '0', '0']), 'packets=32 bytes=2048');
  assert.equal(argsText([], ['0', '7', '0', '18446744073709551615']), 'arg1=7 arg3=18446744073709551615');
  assert.equal(argsText(['i'], ['0', '0', '0', '0']), 'i=0');
});
