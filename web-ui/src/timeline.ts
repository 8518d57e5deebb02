// The timeline view's arithmetic: paging with a cap, events as columns, lanes by level, bar
// geometry from time and lag, hit testing, axis ticks, lag formatting. Self-contained
// (type-only imports), so the unit tests load it in node (test/timeline.test.mjs).
//
// Times inside the view are nanoseconds relative to a base (a BigInt Unix-ns instant, the first
// event's time) as doubles: exact up to 2^53 ns (104 days), far beyond any window drawn.

import type { Big, TimelineEvent } from './types';

/** Events fetched for a window unless the URL's `max` says otherwise. */
export const DEFAULT_CAP = 10_000;
/** The most a URL may ask for (`max`). */
export const MAX_CAP = 100_000;
/** Events per request (the API allows 1 to 10,000). */
export const PAGE_SIZE = 10_000;
/** Levels an event may have (0–9). */
export const LEVELS = 10;

export interface Page<E> {
  events: E[];
  next?: string | null;
}

export interface Capped<E> {
  events: E[];
  /** More events follow the last one kept (the cap was hit). */
  truncated: boolean;
  /** Requests made. */
  pages: number;
}

/**
 * Fetches pages (`after` = the previous page's `next`) until there are no more or `cap` events
 * are kept; never asks for more than the cap leaves room for. `truncated` says the cap was hit
 * with more to come. A page with no events ends the loop whatever its `next` says.
 */
export async function fetchCapped<E>(fetchPage: (after: string | null, limit: number) => Promise<Page<E>>, cap: number, pageSize = PAGE_SIZE): Promise<Capped<E>> {
  const events: E[] = [];
  let after: string | null = null;
  let pages = 0;
  const limit0 = Math.max(1, Math.floor(cap));
  for (;;) {
    const room = limit0 - events.length;
    if (room <= 0) return { events, truncated: after !== null, pages };
    const page = await fetchPage(after, Math.min(pageSize, room));
    pages++;
    for (const e of page.events.length > room ? page.events.slice(0, room) : page.events) events.push(e);
    after = page.next ?? null;
    if (after === null || page.events.length === 0) return { events, truncated: page.events.length > room, pages };
  }
}

/** Clamps the URL's `max` to [100, MAX_CAP]; the default when absent or not a number. */
export function capOf(text: string | null | undefined): number {
  const v = Number(text);
  if (!text || !Number.isFinite(v)) return DEFAULT_CAP;
  return Math.min(MAX_CAP, Math.max(100, Math.floor(v)));
}

/** Which lane each level is drawn in: one lane per level present, level 0 (or the lowest) on top. */
export interface Lanes {
  /** The levels present, ascending: lane i shows `levels[i]`. */
  levels: number[];
  /** Lane of each level 0–9, -1 if absent. */
  laneOf: Int8Array;
}

export function laneLayout(levels: Iterable<number>): Lanes {
  const present = new Set<number>();
  for (const l of levels) if (Number.isInteger(l) && l >= 0 && l < LEVELS) present.add(l);
  const sorted = [...present].sort((a, b) => a - b);
  const laneOf = new Int8Array(LEVELS).fill(-1);
  sorted.forEach((l, i) => (laneOf[l] = i));
  return { levels: sorted, laneOf };
}

/** Events as typed columns, in time order, with per-lane indexes for drawing and hit testing. */
export interface Columns {
  n: number;
  /** Unix ns of t = 0. */
  base: bigint;
  /** Time of each event, ns after `base`. */
  t: Float64Array;
  /** Lag in ns, -1 when the event has none (the first of its level on its thread). */
  lag: Float64Array;
  lane: Uint8Array;
  /** Index into `names`. */
  nameId: Uint16Array;
  names: string[];
  lanes: Lanes;
  /** Per lane, the events' indices in time order. */
  byLane: Int32Array[];
  /** Per lane, the largest lag (bounds how far a hit test scans). */
  maxLag: Float64Array;
  /** The events, in the same (time) order. */
  events: TimelineEvent[];
}

function big(v: Big): bigint {
  return BigInt(typeof v === 'number' ? Math.round(v) : v);
}

/**
 * Columns of `events` (sorted by time if they are not already). `names` fixes the order of
 * name ids (e.g. the summary's, for stable colours); names not in it are appended.
 */
export function toColumns(input: TimelineEvent[], names: string[] = []): Columns {
  let events = input;
  const n = events.length;
  const times = new Array<bigint>(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    times[i] = big(events[i].time_unix_ns);
    if (i > 0 && times[i] < times[i - 1]) sorted = false;
  }
  if (!sorted) {
    const order = [...events.keys()].sort((a, b) => (times[a] < times[b] ? -1 : times[a] > times[b] ? 1 : a - b));
    events = order.map((i) => input[i]);
    const ts = order.map((i) => times[i]);
    for (let i = 0; i < n; i++) times[i] = ts[i];
  }
  const base = n ? times[0] : 0n;
  const nameList = [...names];
  const nameIndex = new Map(nameList.map((s, i) => [s, i]));
  const t = new Float64Array(n);
  const lag = new Float64Array(n);
  const nameId = new Uint16Array(n);
  const lanes = laneLayout(events.map((e) => e.level));
  const lane = new Uint8Array(n);
  const counts = new Int32Array(lanes.levels.length);
  for (let i = 0; i < n; i++) {
    const e = events[i];
    t[i] = Number(times[i] - base);
    lag[i] = e.lag_ns === null || e.lag_ns === undefined ? -1 : Number(e.lag_ns);
    let id = nameIndex.get(e.name);
    if (id === undefined) {
      id = nameList.length;
      nameList.push(e.name);
      nameIndex.set(e.name, id);
    }
    nameId[i] = id;
    lane[i] = Math.max(0, lanes.laneOf[e.level] ?? 0);
    counts[lane[i]]++;
  }
  const byLane = Array.from(counts, (c) => new Int32Array(c));
  const fill = new Int32Array(counts.length);
  const maxLag = new Float64Array(counts.length);
  for (let i = 0; i < n; i++) {
    const l = lane[i];
    byLane[l][fill[l]++] = i;
    if (lag[i] > maxLag[l]) maxLag[l] = lag[i];
  }
  return { n, base, t, lag, lane, nameId, names: nameList, lanes, byLane, maxLag, events };
}

/** The time range the events occupy: first to last event time (a single instant widened to 1 µs). */
export function extent(c: Columns): [number, number] {
  if (!c.n) return [0, 1];
  const a = c.t[0];
  const b = c.t[c.n - 1];
  if (b - a < 1000) return [a - 500, a + 500];
  return [a, b];
}

/** [a, b] padded by `frac` of its span on each side. */
export function pad([a, b]: [number, number], frac = 0.02): [number, number] {
  const p = (b - a) * frac;
  return [a - p, b + p];
}

/**
 * The pixel span of an event's bar: from `t - lag` to `t` (lag: the time since the previous
 * event of equal or lower level), in a view [v0, v1] drawn `width` pixels wide. At least
 * `minPx` wide, ending at the event (an event without a lag is a `minPx` tick). Clipped to the
 * canvas; null when the bar is outside the view.
 */
export function barSpan(t: number, lag: number, v0: number, v1: number, width: number, minPx = 1): [number, number] | null {
  const start = lag > 0 ? t - lag : t;
  const k = width / (v1 - v0);
  const x1 = (t - v0) * k;
  let x0 = (start - v0) * k;
  if (x1 - x0 < minPx) x0 = x1 - minPx;
  if (x1 < 0 || x0 > width) return null;
  return [Math.max(0, x0), Math.min(width, x1)];
}

/** The x (pixels) of time `t` in the view. */
export function xOf(t: number, v0: number, v1: number, width: number): number {
  return ((t - v0) * width) / (v1 - v0);
}

/** The time at pixel `x` in the view. */
export function timeAt(x: number, v0: number, v1: number, width: number): number {
  return v0 + (x * (v1 - v0)) / width;
}

/**
 * The event in `lane` whose bar is at time `at` (within `tol` ns): inside a bar beats near one;
 * among bars it is inside, the shortest (the most specific); among near ones, the closest.
 * -1 if none.
 */
export function hitTest(c: Columns, lane: number, at: number, tol: number): number {
  const ids = c.byLane[lane];
  if (!ids || !ids.length) return -1;
  // First event of the lane whose time is at or after `at - tol`.
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (c.t[ids[mid]] < at - tol) lo = mid + 1;
    else hi = mid;
  }
  const limit = at + tol + c.maxLag[lane];
  let best = -1;
  let bestDist = Infinity;
  let bestLen = Infinity;
  for (let j = lo; j < ids.length; j++) {
    const i = ids[j];
    const t = c.t[i];
    if (t > limit) break;
    const start = c.lag[i] > 0 ? t - c.lag[i] : t;
    const dist = at < start ? start - at : at > t ? at - t : 0;
    if (dist > tol) continue;
    const len = t - start;
    if (dist < bestDist || (dist === bestDist && len < bestLen)) {
      best = i;
      bestDist = dist;
      bestLen = len;
    }
  }
  return best;
}

/** The event of `lane` nearest in time to `at` (for keyboard moves between lanes); -1 if none. */
export function nearestInLane(c: Columns, lane: number, at: number): number {
  const ids = c.byLane[lane];
  if (!ids || !ids.length) return -1;
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (c.t[ids[mid]] < at) lo = mid + 1;
    else hi = mid;
  }
  if (lo === ids.length) return ids[lo - 1];
  if (lo === 0) return ids[0];
  return at - c.t[ids[lo - 1]] <= c.t[ids[lo]] - at ? ids[lo - 1] : ids[lo];
}

/** The position of event `i` in its lane's index, or -1. */
export function indexInLane(c: Columns, i: number): number {
  const ids = c.byLane[c.lane[i]];
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (c.t[ids[mid]] < c.t[i] || (c.t[ids[mid]] === c.t[i] && ids[mid] < i)) lo = mid + 1;
    else hi = mid;
  }
  return ids[lo] === i ? lo : -1;
}

/** A 1-2-5 step (ns) giving about `target` ticks over `span` ns. */
export function niceStep(span: number, target = 8): number {
  if (!(span > 0)) return 1;
  const raw = span / Math.max(1, target);
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  const step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  return Math.max(1, step);
}

/** Tick times (multiples of the step) inside [v0, v1]. */
export function ticks(v0: number, v1: number, target = 8): { step: number; at: number[] } {
  const step = niceStep(v1 - v0, target);
  const at: number[] = [];
  for (let v = Math.ceil(v0 / step) * step; v <= v1 && at.length < 1000; v += step) at.push(v);
  return { step, at };
}

/**
 * A tick's label, an offset from t = 0 in the step's unit: `+0`, `+250 µs`, `+1.5 ms`, `-2 s`.
 * Digits enough to tell neighbouring ticks apart.
 */
export function tickLabel(v: number, step: number): string {
  if (Math.abs(v) < step / 2) return '+0';
  const [div, unit] = step >= 1e8 ? [1e9, 's'] : step >= 1e5 ? [1e6, 'ms'] : step >= 1e2 ? [1e3, 'µs'] : [1, 'ns'];
  const decimals = Math.max(0, Math.min(9, -Math.floor(Math.log10(step / div) + 1e-9)));
  const x = v / div;
  return `${x < 0 ? '-' : '+'}${Math.abs(x).toFixed(decimals)} ${unit}`;
}

/**
 * An event's arguments as `name=value`: the named ones, then any other that is not zero (as
 * `arg<i>`) — as `loupe timeline show` prints them. Values are exact decimal strings.
 */
export function argsText(names: readonly string[], args: readonly (string | number)[]): string {
  const named = names.map((n, k) => `${n}=${String(args[k] ?? 0)}`);
  const rest: string[] = [];
  for (let k = names.length; k < args.length; k++) if (String(args[k]) !== '0') rest.push(`arg${k}=${String(args[k])}`);
  return [...named, ...rest].join(' ');
}

/** A lag or duration in ns, 3 significant digits: `850 ns`, `2.34 µs`, `16.6 ms`, `1.10 s`; null → `—`. */
export function lagText(ns: number | null | undefined): string {
  if (ns === null || ns === undefined || !Number.isFinite(ns) || ns < 0) return '—';
  if (ns < 999.5) return `${Math.round(ns)} ns`;
  const units: [number, string][] = [
    [1e3, 'µs'],
    [1e6, 'ms'],
    [1e9, 's'],
  ];
  const fmt = (x: number) => (x >= 99.95 ? x.toFixed(0) : x >= 9.995 ? x.toFixed(1) : x.toFixed(2));
  let k = ns < 1e6 ? 0 : ns < 1e9 ? 1 : 2;
  let s = fmt(ns / units[k][0]);
  // 999.7 µs would read "1000 µs": say 1.00 ms.
  if (Number(s) >= 1000 && k < 2) s = fmt(ns / units[++k][0]);
  return `${s} ${units[k][1]}`;
}

/** An offset from t = 0 for the tooltip: `+1.234567 ms` (to the ns). */
export function offsetText(ns: number): string {
  const sign = ns < 0 ? '-' : '+';
  const a = Math.abs(ns);
  if (a < 1e3) return `${sign}${a} ns`;
  if (a < 1e6) return `${sign}${(a / 1e3).toFixed(3)} µs`;
  if (a < 1e9) return `${sign}${(a / 1e6).toFixed(6)} ms`;
  return `${sign}${(a / 1e9).toFixed(9)} s`;
}

/** [v0, v1] zoomed by `factor` (< 1 in) around `at`, kept inside [min, max] and at least `minSpan` wide. */
export function zoom(v0: number, v1: number, at: number, factor: number, min: number, max: number, minSpan = 100): [number, number] {
  let span = Math.max(minSpan, (v1 - v0) * factor);
  span = Math.min(span, max - min);
  const f = (at - v0) / (v1 - v0 || 1);
  let a = at - span * f;
  a = Math.max(min, Math.min(max - span, a));
  return [a, a + span];
}

/** [v0, v1] moved by `frac` of its span, kept inside [min, max]. */
export function pan(v0: number, v1: number, frac: number, min: number, max: number): [number, number] {
  const span = v1 - v0;
  const a = Math.max(min, Math.min(max - span, v0 + span * frac));
  return [a, a + span];
}

/** Colour slots by name: the i-th name gets slot i mod `slots` (names ordered by the caller). */
export function colorSlots(names: string[], slots: number): Map<string, number> {
  return new Map(names.map((n, i) => [n, i % slots]));
}

/** Exact Unix ns of a column time: `base + t`. */
export function unixNs(c: Columns, t: number): bigint {
  return c.base + BigInt(Math.round(t));
}
