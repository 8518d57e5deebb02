// What a run's series mean: units, totals, bursts and ingress stalls.
//
// Bursts: slots whose ingress (in_bytes) is above 4 × the run's *busy baseline* AND above a
// floor of 10 Mbit/s; consecutive slots form one burst. The busy baseline is the median of the
// slots that carried any ingress at all (in_bytes > 0), not of all slots: idle slots say the
// link was quiet, not how big its traffic usually is when it flows. For steady traffic (no
// idle slots) this is the plain median, as before; for sparse traffic — a 10 ms run where 70 %
// of slots are empty, say — the median of all slots is 0, so "4 × median" was 0 and the floor
// alone decided, and every ordinary packet train above 10 Mbit/s was called a burst (hundreds
// of them, shading the whole chart). Judged against its own busy slots, sparse traffic has
// bursts only where a slot is several times bigger than its typical busy slot. The median (not
// the mean, nor mean + k·σ) keeps the baseline blind to the bursts themselves, and it moves
// smoothly as the share of idle slots grows, with no jump at 50 % idle. The floor keeps a
// near-idle run's noise (a few hundred bytes, 4 × of almost nothing) from being a burst.
// Stalls: 3 or more consecutive slots with no ingress packets in a run whose median slot has
// some (a NIC or queue that stopped delivering while traffic was flowing; in sparse traffic,
// empty slots are just idle).

import type { MetricName, Metrics } from './types';

export const BURST_FACTOR = 4;
export const BURST_FLOOR_BPS = 10e6;
export const STALL_MIN_SLOTS = 3;

export type MetricKind = 'bytes' | 'packets' | 'conns';

export const METRIC_INFO: Record<MetricName, { title: string; kind: MetricKind }> = {
  in_bytes: { title: 'Ingress', kind: 'bytes' },
  out_bytes: { title: 'Egress', kind: 'bytes' },
  in_packets: { title: 'Ingress packets', kind: 'packets' },
  out_packets: { title: 'Egress packets', kind: 'packets' },
  in_ce_bytes: { title: 'Ingress ECN-CE', kind: 'bytes' },
  in_retx_bytes: { title: 'Ingress retransmits', kind: 'bytes' },
  out_retx_bytes: { title: 'Egress retransmits', kind: 'bytes' },
  in_conns: { title: 'Ingress connections', kind: 'conns' },
  out_conns: { title: 'Egress connections', kind: 'conns' },
  in_cross_region_bytes: { title: 'Ingress cross-region', kind: 'bytes' },
  out_cross_region_bytes: { title: 'Egress cross-region', kind: 'bytes' },
};

export function unitOf(kind: MetricKind): string {
  return kind === 'bytes' ? 'bit/s' : kind === 'packets' ? 'pkt/s' : 'conns';
}

/** A slot's value in display units: bytes → bit/s, packets → packets/s, connections as is. */
export function toRate(values: ArrayLike<number>, kind: MetricKind, intervalNs: number): Float64Array {
  const out = new Float64Array(values.length);
  const f = kind === 'bytes' ? 8e9 / intervalNs : kind === 'packets' ? 1e9 / intervalNs : 1;
  for (let i = 0; i < values.length; i++) out[i] = values[i] * f;
  return out;
}

export function sum(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i];
  return s;
}

export function peak(a: ArrayLike<number>): { value: number; slot: number } {
  let value = -Infinity;
  let slot = -1;
  for (let i = 0; i < a.length; i++)
    if (a[i] > value) {
      value = a[i];
      slot = i;
    }
  return { value: slot < 0 ? 0 : value, slot };
}

export function median(a: ArrayLike<number>): number {
  if (!a.length) return 0;
  const s = Float64Array.from(a).sort();
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export interface Span {
  start: number; // first slot
  end: number; // one past the last slot
  peak: number; // largest slot value (bytes or packets)
  total: number;
}

/** The median of the non-zero slots (0 when every slot is 0) and how many there are. */
export function busyBaseline(a: ArrayLike<number>): { baseline: number; busy: number } {
  const busy: number[] = [];
  for (let i = 0; i < a.length; i++) if (a[i] > 0) busy.push(a[i]);
  return { baseline: median(busy), busy: busy.length };
}

export interface Bursts {
  spans: Span[];
  /** Bytes per slot a burst slot exceeds: max(BURST_FACTOR × baseline, the floor). */
  threshold: number;
  /** Median of the slots with ingress (bytes). */
  baseline: number;
  /** Slots with ingress. */
  busy: number;
}

export function bursts(inBytes: ArrayLike<number>, intervalNs: number): Bursts {
  const { baseline, busy } = busyBaseline(inBytes);
  const floor = (BURST_FLOOR_BPS * intervalNs) / 8e9;
  const threshold = Math.max(BURST_FACTOR * baseline, floor);
  const spans: Span[] = [];
  let cur: Span | null = null;
  for (let i = 0; i < inBytes.length; i++) {
    const v = inBytes[i];
    if (v > threshold) {
      if (!cur) cur = { start: i, end: i + 1, peak: v, total: 0 };
      cur.end = i + 1;
      cur.peak = Math.max(cur.peak, v);
      cur.total += v;
    } else if (cur) {
      spans.push(cur);
      cur = null;
    }
  }
  if (cur) spans.push(cur);
  return { spans, threshold, baseline, busy };
}

export function stalls(inPackets: ArrayLike<number>): Span[] {
  if (median(inPackets) <= 0) return [];
  const spans: Span[] = [];
  let start = -1;
  for (let i = 0; i <= inPackets.length; i++) {
    const zero = i < inPackets.length && inPackets[i] === 0;
    if (zero && start < 0) start = i;
    if (!zero && start >= 0) {
      if (i - start >= STALL_MIN_SLOTS) spans.push({ start, end: i, peak: 0, total: 0 });
      start = -1;
    }
  }
  return spans;
}

export interface RunTotals {
  in_bytes: number;
  out_bytes: number;
  in_packets: number;
  out_packets: number;
  in_ce_bytes: number;
  retx_bytes: number;
  peak_in_bps: number;
  peak_out_bps: number;
  bursts: number;
  max_conns: number;
}

export function runTotals(m: Metrics, intervalNs: number): RunTotals {
  const f = 8e9 / intervalNs;
  return {
    in_bytes: sum(m.in_bytes),
    out_bytes: sum(m.out_bytes),
    in_packets: sum(m.in_packets),
    out_packets: sum(m.out_packets),
    in_ce_bytes: sum(m.in_ce_bytes),
    retx_bytes: sum(m.in_retx_bytes) + sum(m.out_retx_bytes),
    peak_in_bps: peak(m.in_bytes).value * f,
    peak_out_bps: peak(m.out_bytes).value * f,
    bursts: bursts(m.in_bytes, intervalNs).spans.length,
    max_conns: Math.max(peak(m.in_conns).value, peak(m.out_conns).value),
  };
}
