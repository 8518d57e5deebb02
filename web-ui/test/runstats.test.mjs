// Unit tests of src/runstats.ts (node's test runner; `npm test`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadTs } from './load-ts.mjs';

const { bursts, busyBaseline, stalls } = await loadTs('runstats.ts');

const MS = 1_000_000;
const ranges = (spans) => spans.map((s) => (s.end - s.start === 1 ? `${s.start}` : `${s.start}-${s.end - 1}`)).join(',');

/** A small deterministic PRNG (mulberry32), so "random" traffic is the same every run. */
function rng(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test('sparse traffic: 95 % idle slots, similar busy slots and 3 real spikes → 3 bursts, not one per busy slot', () => {
  // 10 ms slots: the floor is 12,500 B. 100 busy slots of 20–40 KB (16–32 Mbit/s, all above
  // the floor), spread out, never adjacent; 3 of them are 500 KB spikes.
  const r = rng(7);
  const a = new Array(2000).fill(0);
  for (let i = 0; i < 100; i++) a[i * 20 + 3] = 20_000 + Math.floor(r() * 20_000);
  a[403] = a[1203] = a[1803] = 500_000;
  const b = bursts(a, 10 * MS);
  assert.equal(ranges(b.spans), '403,1203,1803');
  assert.equal(b.busy, 100);
  assert.ok(b.baseline >= 20_000 && b.baseline <= 40_000, `baseline ${b.baseline}`);
  assert.equal(b.threshold, 4 * b.baseline);
  // (The old rule, 4 × the median of all slots = 0, left the floor alone: 100 "bursts".)
});

test('demo-like traffic (incast fan-ins every 5–60 ms, 10 ms slots): the biggest few, not every fan-in', () => {
  // What `loupe agent --demo` sends: 1–40 flows × 1–8 datagrams of 1,442 B on the wire, at
  // random gaps of 5–60 ms; ~70 % of the 10 ms slots are empty.
  const r = rng(1);
  const ri = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const a = new Array(2000).fill(0);
  for (let t = r() * 20 * MS; t < 2000 * 10 * MS; t += ri(5, 60) * MS + 0.3 * MS) a[Math.floor(t / (10 * MS))] += ri(1, 40) * ri(1, 8) * 1442;
  const busy = a.filter((v) => v > 0).length;
  const b = bursts(a, 10 * MS);
  assert.equal(b.busy, busy);
  assert.ok(busy > 500, `${busy} busy slots`);
  // The old rule (threshold = the floor) called ~460 of these ~590 fan-ins bursts.
  assert.ok(b.spans.length >= 1 && b.spans.length <= 20, `${b.spans.length} bursts`);
  for (const s of b.spans) assert.ok(s.peak > 4 * b.baseline);
});

test('steady traffic: the baseline is the plain median (the testbed runs A and B)', () => {
  // Run A: 1 ms slots, 200 B baseline, bursts at 100..110, 500..503, 1999, stalls at 0 B.
  const a = new Array(2000).fill(200);
  for (let i = 100; i < 110; i++) a[i] = 50_000;
  for (let i = 500; i < 503; i++) a[i] = 20_000;
  a[1999] = 60_000;
  for (let i = 1200; i < 1210; i++) a[i] = 0;
  const ba = bursts(a, MS);
  assert.equal(ranges(ba.spans), '100-109,500-502,1999');
  assert.equal(ba.baseline, 200);
  assert.equal(ba.threshold, 1250); // the floor: 10 Mbit/s × 1 ms
  // Run B: 10 ms slots, 1,000 B baseline, one burst at 10..15 of 200,000 B.
  const b = new Array(2000).fill(1000);
  for (let i = 10; i < 15; i++) b[i] = 200_000;
  assert.equal(ranges(bursts(b, 10 * MS).spans), '10-14');
  // Busy steady traffic: 4 × the median decides, not the floor.
  const c = new Array(2000).fill(100_000);
  c[42] = 399_999;
  c[43] = 400_001;
  const bc = bursts(c, MS);
  assert.equal(bc.threshold, 400_000);
  assert.equal(ranges(bc.spans), '43');
});

test('idle and near-idle runs: no bursts (the floor)', () => {
  assert.deepEqual(bursts(new Array(2000).fill(0), MS), { spans: [], threshold: 1250, baseline: 0, busy: 0 });
  const noise = new Array(2000).fill(0).map((_, i) => (i % 50 === 0 ? 300 : 0));
  noise[1000] = 1200; // 4 × 300 is exceeded, 10 Mbit/s is not
  assert.equal(bursts(noise, MS).spans.length, 0);
  assert.deepEqual(bursts([], MS).spans, []);
});

test('busyBaseline is the median of the non-zero slots', () => {
  assert.deepEqual(busyBaseline([0, 0, 0, 5, 0, 1, 9]), { baseline: 5, busy: 3 });
  assert.deepEqual(busyBaseline([0, 4, 2, 0]), { baseline: 3, busy: 2 });
  assert.deepEqual(busyBaseline([0, 0]), { baseline: 0, busy: 0 });
});

test('stalls: only while traffic flows (median slot has packets)', () => {
  const p = new Array(100).fill(2);
  for (let i = 10; i < 13; i++) p[i] = 0;
  p[50] = p[51] = 0; // too short
  assert.deepEqual(stalls(p).map((s) => [s.start, s.end]), [[10, 13]]);
  const sparse = new Array(100).fill(0);
  sparse[5] = 3;
  assert.deepEqual(stalls(sparse), []);
});
