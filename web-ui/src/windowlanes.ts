// The window's data as lanes (windowchart.ts draws them): a run's slots, a CPU's ticks and
// waits, a thread's probe calls, a program's timeline events. Each builder turns one lane of
// `GET /api/v1/window` into typed columns once, then draws only what is inside the view.

import { h } from './dom';
import { bytes, count, duration } from './format';
import { str } from './json';
import { themeColor } from './palette';
import { bursts } from './runstats';
import { lagText, offsetText } from './timeline';
import type { CpuLane, ProgramLane, ThreadCalls, TrafficLane, WindowView } from './types';
import { lowerBound, type DrawCtx, type Lane, type Tip } from './windowchart';

/** Colour slots (`--tl-0` … `--tl-9`). */
const SLOTS = 10;
const slotColours = (): string[] => Array.from({ length: SLOTS }, (_, i) => themeColor(`--tl-${i}`));

const f64 = (a: ArrayLike<number>): Float64Array => Float64Array.from(a);

/** Times of the items of each colour slot, in time order: drawing one slot is one search and one path. */
function bySlot(t: Float64Array, slotOf: (i: number) => number, keep: (i: number) => boolean = () => true): Float64Array[] {
  const counts = new Int32Array(SLOTS);
  for (let i = 0; i < t.length; i++) if (keep(i)) counts[slotOf(i)]++;
  const out = Array.from(counts, (c) => new Float64Array(c));
  const fill = new Int32Array(SLOTS);
  for (let i = 0; i < t.length; i++) if (keep(i)) out[slotOf(i)][fill[slotOf(i)]++] = t[i];
  return out;
}

/** One 1-px-wide tick per pixel column for the times of `ts` inside the view (many share a pixel at a wide view). */
function ticksPath(d: DrawCtx, ts: Float64Array, y: number, hgt: number, w = 1): void {
  let last = -1;
  for (let i = lowerBound(ts, d.v0), n = ts.length; i < n && ts[i] <= d.v1; i++) {
    const x = Math.floor(d.x(ts[i]));
    if (x === last) continue;
    last = x;
    d.ctx.rect(x, y, w, hgt);
  }
}

/** Per-column summaries: bars of `count` (scaled to the lane's largest), coloured by `colour`. */
function drawColumns(d: DrawCtx, y: number, height: number, len: number, counts: number[], colour: (k: number) => string): void {
  const n = counts.length;
  if (!n) return;
  let max = 1;
  for (const c of counts) if (c > max) max = c;
  const k0 = Math.max(0, Math.floor((d.v0 / len) * n));
  const k1 = Math.min(n, Math.ceil((d.v1 / len) * n));
  for (let k = k0; k < k1; k++) {
    if (!counts[k]) continue;
    const a = d.x((k * len) / n);
    const b = d.x(((k + 1) * len) / n);
    const hgt = Math.max(1, (counts[k] / max) * (height - 4));
    d.ctx.fillStyle = colour(k);
    d.ctx.fillRect(a, y + height - 2 - hgt, Math.max(1, b - a - 0.5), hgt);
  }
}

function columnTip(t: number, len: number, counts: number[], what: string, extra?: (k: number) => string): Tip | null {
  const k = Math.floor((t / len) * counts.length);
  if (k < 0 || k >= counts.length) return null;
  return [`${count(counts[k])} ${what} in ${offsetText(Math.round((k * len) / counts.length))} … (summarized)`, extra?.(k) ?? ''];
}

/** One run: `in_bytes` as bars per slot, `out_bytes` as a line, bursts shaded. */
export function trafficLane(l: TrafficLane): Lane {
  const series = new Map(l.series.map((s) => [s.name, f64(s.values)]));
  const inB = series.get('in_bytes') ?? new Float64Array(0);
  const first = series.values().next().value ?? new Float64Array(0);
  const n = first.length;
  const iv = l.interval_ns;
  const off = l.offset_ns;
  let max = 1;
  for (const a of series.values()) for (let i = 0; i < a.length; i++) if (a[i] > max) max = a[i];
  const spans = inB.length ? bursts(inB, iv).spans : [];
  const height = 56;
  return {
    label: `${l.iface} · run ${str(l.run)}`,
    note: `${duration(iv)} slots`,
    height,
    items: n,
    draw(d, y) {
      const ctx = d.ctx;
      const i0 = Math.max(0, Math.floor((d.v0 - off) / iv));
      const i1 = Math.min(n, Math.ceil((d.v1 - off) / iv));
      const yOf = (v: number) => y + height - 3 - (v / max) * (height - 8);
      ctx.fillStyle = themeColor('--band-burst');
      for (const s of spans) {
        if (s.end <= i0 || s.start >= i1) continue;
        const a = d.x(off + s.start * iv);
        ctx.fillRect(a, y, Math.max(2, d.x(off + s.end * iv) - a), height);
      }
      if (inB.length) {
        ctx.fillStyle = themeColor('--series-1');
        ctx.beginPath();
        for (let i = i0; i < i1; i++) {
          if (!inB[i]) continue;
          const a = d.x(off + i * iv);
          const w = Math.max(1, d.x(off + (i + 1) * iv) - a);
          const top = yOf(inB[i]);
          ctx.rect(a, top, w > 2 ? w - 0.5 : w, y + height - 3 - top);
        }
        ctx.fill();
      }
      // Other series as lines (out_bytes first).
      let s = 2;
      for (const [name, a] of [...series.entries()].sort(([x], [y2]) => (x === 'out_bytes' ? -1 : y2 === 'out_bytes' ? 1 : 0))) {
        if (name === 'in_bytes') continue;
        ctx.strokeStyle = themeColor(`--series-${s++}`);
        ctx.lineWidth = 1.25;
        ctx.beginPath();
        for (let i = i0; i < i1; i++) {
          const x = d.x(off + (i + 0.5) * iv);
          if (i === i0) ctx.moveTo(x, yOf(a[i]));
          else ctx.lineTo(x, yOf(a[i]));
        }
        ctx.stroke();
      }
    },
    hit(t) {
      const i = Math.floor((t - off) / iv);
      if (i < 0 || i >= n) return null;
      const lines: Tip = [`slot ${l.first_slot + i} at ${offsetText(off + i * iv)}`];
      for (const [name, a] of series) lines.push(`${name} ${name.endsWith('bytes') ? bytes(a[i]) : count(a[i])}`);
      if (spans.some((s) => i >= s.start && i < s.end)) lines.push('in a burst');
      return lines;
    },
  };
}

/** A sample's stack as lines, leaf first (at most 16). */
function stackLines(w: WindowView, stack: number): string[] {
  const s = w.stacks[stack] ?? [];
  const lines = s.slice(0, 16).map((f) => w.functions[f]?.name ?? '?');
  if (s.length > 16) lines.push(`… ${s.length - 16} more frames`);
  return lines;
}

/** One CPU: a tick per sample coloured by process, waits off the CPU as thin spans below. */
export function cpuLane(c: CpuLane, w: WindowView, len: number, processSlot: (p: number) => number): Lane {
  const t = c.ticks;
  const ts = f64(t.t_ns);
  const wt = f64(c.wait_spans.t_ns);
  const wd = f64(c.wait_spans.dur_ns);
  const height = 22;
  const items = c.samples;
  const slots = bySlot(ts, (i) => processSlot(t.process[i]) % SLOTS);
  return {
    label: `CPU ${c.cpu}`,
    height,
    items,
    draw(d, y) {
      const ctx = d.ctx;
      const cols = slotColours();
      if (t.summarized) {
        drawColumns(d, y, height - 5, len, t.column_count, (k) => cols[processSlot(t.column_process[k]) % SLOTS]);
      } else {
        // One path per colour.
        for (let slot = 0; slot < SLOTS; slot++) {
          if (!slots[slot].length) continue;
          ctx.fillStyle = cols[slot];
          ctx.beginPath();
          ticksPath(d, slots[slot], y + 3, height - 10, 2);
          ctx.fill();
        }
      }
      if (c.wait_spans.summarized) {
        drawColumns(d, y + height - 6, 6, len, c.wait_spans.column_count, () => themeColor('--fg-muted'));
      } else if (wt.length) {
        ctx.fillStyle = themeColor('--fg-muted');
        ctx.beginPath();
        for (let i = 0; i < wt.length; i++) {
          if (wt[i] > d.v1 || wt[i] + wd[i] < d.v0) continue;
          const a = d.x(wt[i]);
          ctx.rect(a, y + height - 5, Math.max(1, d.x(wt[i] + wd[i]) - a), 3);
        }
        ctx.fill();
      }
    },
    hit(at, tol, dy) {
      if (t.summarized) {
        return columnTip(at, len, t.column_count, 'samples', (k) => {
          const p = w.processes[t.column_process[k]];
          return p ? `most: ${p.comm} (${p.pid})` : '';
        });
      }
      if (dy >= height - 6 && wt.length) {
        for (let i = 0; i < wt.length; i++) {
          if (at >= wt[i] - tol && at <= wt[i] + wd[i] + tol) {
            const p = w.processes[c.wait_spans.process[i]];
            return [`off the CPU ${lagText(wd[i])} from ${offsetText(wt[i])}`, `${p?.comm} (${p?.pid}) tid ${c.wait_spans.tid[i]}`, ...stackLines(w, c.wait_spans.stack[i])];
          }
        }
      }
      let i = lowerBound(ts, at - tol);
      if (i >= ts.length || ts[i] > at + tol) return null;
      // The nearest inside the tolerance.
      while (i + 1 < ts.length && ts[i + 1] <= at + tol && Math.abs(ts[i + 1] - at) < Math.abs(ts[i] - at)) i++;
      const p = w.processes[t.process[i]];
      return [`${p?.comm} (pid ${p?.pid}, tid ${t.tid[i]}) at ${offsetText(ts[i])}`, ...stackLines(w, t.stack[i])];
    },
  };
}

/** One thread's probe calls: a bar per call in its depth's row, slow ones in the error colour. */
export function callsLane(c: ThreadCalls, w: WindowView, len: number): Lane {
  const ts = f64(c.t_ns);
  const du = f64(c.dur_ns);
  let maxDepth = 0;
  for (const d of c.depth) if (d > maxDepth) maxDepth = d;
  const ROW = 9;
  const rows = c.summarized ? 2 : Math.min(8, maxDepth + 1);
  const height = Math.max(24, 6 + rows * ROW);
  // Calls are in entry order; one long call may start before the view, so look back by the longest.
  let longest = 0;
  for (let i = 0; i < du.length; i++) if (du[i] > longest) longest = du[i];
  const fnName = (i: number) => w.probe_functions[c.function[i]]?.name ?? '?';
  return {
    label: `thread ${c.tid}`,
    note: `pid ${c.pid}`,
    height,
    items: c.calls,
    draw(d, y) {
      const ctx = d.ctx;
      if (c.summarized) {
        drawColumns(d, y, height, len, c.column_count, () => themeColor('--series-4'));
        return;
      }
      const cols = slotColours();
      const i0 = lowerBound(ts, d.v0 - longest);
      const i1 = lowerBound(ts, d.v1);
      for (const slow of [false, true]) {
        for (let slot = 0; slot < SLOTS; slot++) {
          if (slow && slot > 0) break;
          ctx.fillStyle = slow ? themeColor('--err') : cols[slot];
          ctx.beginPath();
          for (let i = i0; i < i1; i++) {
            if (c.slow[i] !== slow || (!slow && c.function[i] % SLOTS !== slot)) continue;
            if (ts[i] + du[i] < d.v0) continue;
            const a = d.x(ts[i]);
            const row = Math.min(rows - 1, c.depth[i]);
            ctx.rect(a, y + 3 + row * ROW, Math.max(1, d.x(ts[i] + du[i]) - a - 0.5), ROW - 2);
          }
          ctx.fill();
        }
      }
    },
    hit(at, tol, dy) {
      if (c.summarized) return columnTip(at, len, c.column_count, 'calls');
      const row = Math.max(0, Math.floor((dy - 3) / ROW));
      const i0 = lowerBound(ts, at - longest - tol);
      let best = -1;
      for (let i = i0; i < ts.length && ts[i] <= at + tol; i++) {
        if (at >= ts[i] - tol && at <= ts[i] + du[i] + tol && Math.min(rows - 1, c.depth[i]) <= row) {
          if (best < 0 || c.depth[i] >= c.depth[best]) best = i;
        }
      }
      if (best < 0) return null;
      const f = w.probe_functions[c.function[best]];
      return [`${fnName(best)}: ${lagText(du[best])}${c.slow[best] ? ' (slow: at or past its p99 ' + lagText(f?.slow_ns) + ')' : ''}`, `entered at ${offsetText(ts[best])}, depth ${c.depth[best]}`];
    },
  };
}

/** One program's timeline: iterations (level-0 events with a lag) as bars, every event a tick. */
export function programLane(p: ProgramLane, len: number): Lane {
  const ts = f64(p.t_ns);
  const n = ts.length;
  const lag = new Float64Array(n);
  for (let i = 0; i < n; i++) lag[i] = p.lag_ns[i] ?? -1;
  const defs = p.definitions;
  const height = 40;
  let longest = 0;
  for (let i = 0; i < n; i++) if (defs[p.event[i]]?.level === 0 && lag[i] > longest) longest = lag[i];
  // Iterations by end time (the events' order), and the events' times per colour and level.
  const isIter = (i: number) => defs[p.event[i]]?.level === 0 && lag[i] >= 0;
  let ni = 0;
  for (let i = 0; i < n; i++) if (isIter(i)) ni++;
  const iterStart = new Float64Array(ni);
  const iterEnd = new Float64Array(ni);
  const iterSlot = new Uint8Array(ni);
  for (let i = 0, k = 0; i < n; i++) {
    if (!isIter(i)) continue;
    iterStart[k] = ts[i] - lag[i];
    iterEnd[k] = ts[i];
    iterSlot[k++] = p.event[i] % SLOTS;
  }
  const eventTicks = Array.from({ length: SLOTS }, (_, slot) =>
    Array.from({ length: 4 }, (_, level) => bySlot(ts, () => 0, (i) => p.event[i] % SLOTS === slot && Math.min(3, defs[p.event[i]]?.level ?? 0) === level)[0]),
  );
  return {
    label: `${p.comm} (${p.pid})`,
    note: p.summarized ? 'summarized' : `${defs.length} events defined`,
    height,
    items: p.events,
    draw(d, y) {
      const ctx = d.ctx;
      const cols = slotColours();
      if (p.summarized) {
        drawColumns(d, y, height, len, p.column_count, () => cols[0]);
        return;
      }
      // Iterations (top): bars from their start to their end, one path per colour; a bar
      // ending in the pixel column the previous one ended in is left out.
      const i0 = lowerBound(iterEnd, d.v0);
      for (let slot = 0; slot < SLOTS; slot++) {
        ctx.fillStyle = cols[slot];
        ctx.beginPath();
        let last = -1;
        for (let k = i0; k < iterEnd.length && iterEnd[k] - longest <= d.v1; k++) {
          if (iterSlot[k] !== slot || iterStart[k] > d.v1) continue;
          const b = d.x(iterEnd[k]);
          if (Math.floor(b) === last) continue;
          last = Math.floor(b);
          const a = d.x(iterStart[k]);
          ctx.rect(a, y + 4, Math.max(1, b - a - 0.5), 14);
        }
        ctx.fill();
        // Events (below): a row of ticks per level (0–3; deeper ones with 3).
        ctx.beginPath();
        for (let level = 0; level < 4; level++) ticksPath(d, eventTicks[slot][level], y + 21 + level * 4, 4);
        ctx.fill();
      }
    },
    hit(at, tol, dy) {
      if (p.summarized) return columnTip(at, len, p.column_count, 'events', (k) => (p.column_max_lag_ns[k] ? `longest level-0 lag ${lagText(p.column_max_lag_ns[k])}` : ''));
      let best = -1;
      if (dy < 20) {
        // An iteration bar.
        for (let i = lowerBound(ts, at); i < n && ts[i] - (lag[i] > 0 ? lag[i] : 0) <= at + longest; i++) {
          if (defs[p.event[i]]?.level === 0 && lag[i] >= 0 && at >= ts[i] - lag[i] - tol && at <= ts[i] + tol) {
            best = i;
            break;
          }
        }
      } else {
        let i = lowerBound(ts, at - tol);
        if (i < n && ts[i] <= at + tol) {
          while (i + 1 < n && ts[i + 1] <= at + tol && Math.abs(ts[i + 1] - at) < Math.abs(ts[i] - at)) i++;
          best = i;
        }
      }
      if (best < 0) return null;
      const def = defs[p.event[best]];
      const args = (def?.arg_names ?? []).map((name, k) => `${name}=${str(p.args[k]?.[best] ?? 0)}`).join(' ');
      return [`${def?.name} (level ${def?.level}) at ${offsetText(ts[best])}`, `lag ${lagText(lag[best] >= 0 ? lag[best] : null)} · tid ${p.tid[best]}`, args ? `args ${args}` : 'no arguments'];
    },
  };
}

/** The processes' colours in the CPU lanes, as a legend (the first `max`, by samples). */
export function processLegend(w: WindowView, max = 12): HTMLElement {
  const samples = new Map<number, number>();
  for (const c of w.cpus) for (const p of c.ticks.process) samples.set(p, (samples.get(p) ?? 0) + 1);
  const order = [...samples.entries()].sort((a, b) => b[1] - a[1]).slice(0, max);
  const cols = slotColours();
  return h(
    'ul',
    { class: 'tl-legend', id: 'window-processes', 'aria-label': 'Processes by colour' },
    ...order.map(([p, n]) =>
      h('li', { 'data-pid': String(w.processes[p]?.pid) }, h('span', { class: 'tl-swatch', style: { background: cols[p % SLOTS] } }), ` ${w.processes[p]?.comm} (${w.processes[p]?.pid}) · ${count(n)} samples`),
    ),
  );
}
