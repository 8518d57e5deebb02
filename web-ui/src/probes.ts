// Function probes' arithmetic, apart from the DOM: a session's target in words, calls per
// second as shown, the window a list covers (sessions overlapping it), a latency histogram's
// log-scaled geometry and ticks, and a call tree flattened into bounded rows with each node's
// heaviest child marked. Self-contained (type-only imports), so the unit tests load it in node
// (test/probes.test.mjs).

import type { Big } from './types';

/** Longest probe session (the API's limit): a session overlapping a window started at most this long before it. */
export const MAX_SESSION_NS = 3600n * 1_000_000_000n;

/** What a session probed: `PID 4242`, `PIDs 1, 2, 3`, or the binary (every process mapping it). */
export function targetText(s: { pids: readonly number[]; binary?: string | null }): string {
  if (s.pids.length === 1) return `PID ${s.pids[0]}`;
  if (s.pids.length > 1) return s.pids.length > 4 ? `PIDs ${s.pids.slice(0, 4).join(', ')} and ${s.pids.length - 4} more` : `PIDs ${s.pids.join(', ')}`;
  return s.binary ?? '—';
}

/** Calls per second as the table shows them: whole numbers with separators from 100 up, 3 significant digits below. */
export function rateText(v: number): string {
  if (!Number.isFinite(v) || v < 0) return '—';
  if (v >= 99.95) return Math.round(v).toLocaleString('en-US');
  if (v === 0) return '0';
  return String(Number(v.toPrecision(3)));
}

/** Why a session ended, in words. */
export function endedText(ended: string): string {
  return (
    {
      duration: 'its length ran out',
      stopped: 'stopped',
      budget: 'over its cost budget (detached)',
      exited: 'its processes exited',
      shutdown: 'the agent shut down',
    }[ended] ?? ended
  );
}

/**
 * The list's query for sessions overlapping the window [from, to): the API lists sessions by
 * start, so a window given in Unix ns asks from an hour earlier (the longest session) and keeps
 * those ending after its start (`keep`). Other forms (`-1h`, `now`) go to the API as they are:
 * sessions that started in the range.
 */
export function overlapQuery(from: string | null, to: string | null): { query: { from?: string; to?: string }; keep: (s: { end_unix_ns: Big }) => boolean } {
  if (from && /^\d+$/.test(from)) {
    const w0 = BigInt(from);
    const lookFrom = w0 > MAX_SESSION_NS ? w0 - MAX_SESSION_NS : 0n;
    return { query: { from: lookFrom.toString(), to: to ?? undefined }, keep: (s) => BigInt(String(s.end_unix_ns)) > w0 };
  }
  return { query: { from: from ?? undefined, to: to ?? undefined }, keep: () => true };
}

/** Splits `1, 2 3` (commas or spaces) into items, empty ones left out. */
export function splitList(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Splits function names at commas outside brackets, so a demangled C++ name keeps its own
 * (`f(int, char)`, `std::map<K, V>::find`); names are trimmed, empty ones left out.
 */
export function splitFunctions(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if ('(<['.includes(ch)) depth++;
    else if (')>]'.includes(ch)) depth = Math.max(0, depth - 1);
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out.map((s) => s.trim()).filter(Boolean);
}

// ---- histograms ----

export interface Bucket {
  low_ns: number;
  high_ns: number;
  count: number;
}

/** The log-scaled x domain shared by a session's histograms: from the smallest low to the largest high, whole decades around them. */
export function histDomain(histograms: readonly (readonly Bucket[])[]): [number, number] {
  let lo = Infinity;
  let hi = 0;
  for (const hs of histograms) {
    for (const b of hs) {
      if (b.count <= 0) continue;
      lo = Math.min(lo, Math.max(1, b.low_ns));
      hi = Math.max(hi, Math.max(b.high_ns, b.low_ns + 1));
    }
  }
  if (!Number.isFinite(lo) || hi <= lo) return [10, 1e4];
  // Whole decades, or halves of one, either side: ticks land on the edges.
  const down = (v: number) => {
    const d = 10 ** Math.floor(Math.log10(v));
    return v >= 3 * d ? 3 * d : d;
  };
  const up = (v: number) => {
    const d = 10 ** Math.floor(Math.log10(v));
    return v <= d ? d : v <= 3 * d ? 3 * d : 10 * d;
  };
  return [down(lo), up(hi)];
}

export interface Bar {
  /** Index in the histogram as given. */
  index: number;
  x0: number;
  x1: number;
  /** Height in [0, 1] of the plot: the count over the tallest, at least `minH` for any count. */
  h: number;
}

/**
 * Bars of a histogram on a log x axis of `width` px over `domain` (ns): every bucket with calls,
 * at least 1 px wide. A bar's height is its density on that axis (calls over the bucket's
 * log-width), the densest `h = 1`: the probes' buckets are 1/16 of an octave wide in ns, so on a
 * log axis the first after each power of two is twice as wide as the last before it, and raw
 * counts would jump there. `minH` keeps one call in a tail bucket visible.
 */
export function histBars(buckets: readonly Bucket[], domain: [number, number], width: number, minH = 0): Bar[] {
  const [d0, d1] = domain;
  const l0 = Math.log(d0);
  const span = Math.log(d1) - l0 || 1;
  const x = (v: number) => ((Math.log(Math.max(v, d0 / 10)) - l0) / span) * width;
  const density = (b: Bucket) => b.count / Math.log(Math.max(b.high_ns, b.low_ns + 1) / Math.max(1, b.low_ns));
  let max = 0;
  for (const b of buckets) if (b.count > 0) max = Math.max(max, density(b));
  const bars: Bar[] = [];
  buckets.forEach((b, index) => {
    if (b.count <= 0) return;
    const x0 = Math.max(0, x(Math.max(1, b.low_ns)));
    const x1 = Math.min(width, Math.max(x0 + 1, x(b.high_ns)));
    bars.push({ index, x0, x1, h: Math.max(minH, density(b) / max) });
  });
  return bars;
}

/** Ticks of a log axis over `domain` (ns): each decade, plus 3× marks when few decades are shown. */
export function histTicks(domain: [number, number]): number[] {
  const [d0, d1] = domain;
  const ticks: number[] = [];
  const decades = Math.log10(d1 / d0);
  for (let e = Math.floor(Math.log10(d0)); 10 ** e <= d1 * 1.0001; e++) {
    for (const m of decades <= 3 ? [1, 3] : [1]) {
      const v = m * 10 ** e;
      if (v >= d0 * 0.9999 && v <= d1 * 1.0001) ticks.push(v);
    }
  }
  return ticks;
}

/** The bucket under `px` (x in the plot), or -1: the bar whose span holds it, else the nearest within 3 px. */
export function barAt(bars: readonly Bar[], px: number): number {
  let best = -1;
  let dist = 3;
  for (const b of bars) {
    if (px >= b.x0 && px < b.x1) return b.index;
    const d = px < b.x0 ? b.x0 - px : px - b.x1;
    if (d < dist) {
      dist = d;
      best = b.index;
    }
  }
  return best;
}

// ---- call trees ----

export interface TreeNode {
  function: string;
  tid: number;
  entry_unix_ns: Big;
  duration_ns: number;
  self_ns: number;
  children: TreeNode[];
}

export interface TreeRow {
  node: TreeNode;
  depth: number;
  /** The slowest of its parent's children (only where the parent has more than one). */
  heaviest: boolean;
  /** Its duration over the root's, in [0, 1]. */
  share: number;
  /** Start after the root's entry, ns. */
  offsetNs: number;
}

/**
 * A call tree in pre-order (each node before its children, children in entry order), at most
 * `maxRows` rows; `omitted` counts the calls left out. Iterative, so a deep tree cannot
 * overflow the stack.
 */
export function treeRows(root: TreeNode, maxRows: number): { rows: TreeRow[]; omitted: number } {
  const rows: TreeRow[] = [];
  let total = 0;
  const rootEntry = BigInt(String(root.entry_unix_ns));
  const whole = root.duration_ns || 1;
  const stack: { node: TreeNode; depth: number; heaviest: boolean }[] = [{ node: root, depth: 0, heaviest: false }];
  while (stack.length) {
    const { node, depth, heaviest } = stack.pop()!;
    total++;
    if (rows.length < maxRows) {
      let offsetNs = 0;
      try {
        offsetNs = Number(BigInt(String(node.entry_unix_ns)) - rootEntry);
      } catch {
        offsetNs = 0;
      }
      rows.push({ node, depth, heaviest, share: Math.min(1, Math.max(0, node.duration_ns / whole)), offsetNs });
    }
    const kids = node.children ?? [];
    let top = -1;
    if (kids.length > 1) {
      top = 0;
      for (let i = 1; i < kids.length; i++) if (kids[i].duration_ns > kids[top].duration_ns) top = i;
    }
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i], depth: depth + 1, heaviest: i === top });
  }
  return { rows, omitted: total - rows.length };
}

/** The heaviest path from the root: the function names down the slowest children (for a summary line). */
export function heaviestPath(root: TreeNode, maxDepth = 8): string[] {
  const path = [root.function];
  let node = root;
  while (node.children?.length && path.length < maxDepth) {
    node = node.children.reduce((a, b) => (b.duration_ns > a.duration_ns ? b : a));
    path.push(node.function);
  }
  return path;
}
