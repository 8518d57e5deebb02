// A canvas timeline of one process's events: one lane per level (0 on top), each event a bar
// from `time - lag` to `time` (its lag: the time since the previous event of equal or lower
// level on its thread), coloured by event name. Built for ~10,000+ events: the events are typed
// columns (src/timeline.ts), bars are filled batched by colour (one path per colour), hit testing
// is a binary search in the hovered lane. Drag to select a sub-window (zoom), double-click or
// Escape to reset; keyboard: ←/→ previous/next event in the lane, ↑/↓ lanes, Home/End, +/−
// zoom, Shift+←/→ pan; the selected event is shown in the tooltip and announced.

import { h } from './dom';
import { count } from './format';
import { str } from './json';
import { rfc3339 } from './time';
import { themeColor } from './palette';
import {
  argsText,
  barSpan,
  hitTest,
  indexInLane,
  lagText,
  nearestInLane,
  offsetText,
  pan,
  tickLabel,
  ticks,
  timeAt,
  unixNs,
  xOf,
  zoom,
  type Columns,
} from './timeline';

export const AXIS_H = 22;
export const LANE_H = 30;
const BAR_PAD = 5;
/** Colour slots (`--tl-0` … `--tl-9` in style.css). */
export const SLOTS = 10;

export interface TimelineChartOptions {
  /** Colour slot of each name id (`cols.names`). */
  slotOf: (nameId: number) => number;
  /** The full view [v0, v1] (ns relative to `cols.base`): what Reset shows. */
  full: [number, number];
  /** Called (at most once a frame) after the view changed, with the view in ns relative to `cols.base`. */
  onView?: (v0: number, v1: number, zoomed: boolean) => void;
  label: string;
}

interface Palette {
  slots: string[];
  grid: string;
  text: string;
  laneBg: string;
  focus: string;
  fg: string;
}

function palette(): Palette {
  return {
    slots: Array.from({ length: SLOTS }, (_, i) => themeColor(`--tl-${i}`)),
    grid: themeColor('--grid'),
    text: themeColor('--fg-muted'),
    laneBg: themeColor('--bg-sunken'),
    focus: themeColor('--focus'),
    fg: themeColor('--fg'),
  };
}

export class TimelineChart {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  /** Milliseconds of the last draw. */
  lastDrawMs = 0;
  private readonly body: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly status: HTMLElement;
  private readonly selBox: HTMLElement;
  private readonly byBucket: Int32Array[];
  private v0: number;
  private v1: number;
  private width = 0;
  private hover = -1;
  private selected = -1;
  private drag: { x0: number; x1: number } | null = null;
  private queued = false;
  private readonly ro: ResizeObserver;

  constructor(
    parent: HTMLElement,
    private readonly cols: Columns,
    private readonly opts: TimelineChartOptions,
  ) {
    [this.v0, this.v1] = opts.full;
    // Events of each colour, in time order: one path per colour when drawing.
    const counts = new Int32Array(SLOTS);
    for (let i = 0; i < cols.n; i++) counts[opts.slotOf(cols.nameId[i])]++;
    this.byBucket = Array.from(counts, (c) => new Int32Array(c));
    const fill = new Int32Array(SLOTS);
    for (let i = 0; i < cols.n; i++) {
      const b = opts.slotOf(cols.nameId[i]);
      this.byBucket[b][fill[b]++] = i;
    }
    const lanes = cols.lanes.levels;
    this.canvas = h('canvas', {
      class: 'tl-canvas',
      tabindex: '0',
      role: 'application',
      'aria-roledescription': 'timeline',
      'aria-label': `${opts.label}: ${count(cols.n)} events in ${lanes.length} lanes (levels ${lanes.join(', ')}). Arrow keys move between events (left/right in a lane, up/down between lanes), Home and End go to the first and last, plus and minus zoom, Shift with left/right pans, Escape resets the zoom. Drag with the mouse to zoom into a range.`,
    });
    this.tooltip = h('div', { class: 'flame-tooltip tl-tooltip', role: 'tooltip', hidden: true });
    this.status = h('div', { class: 'sr-only', 'aria-live': 'polite' });
    this.selBox = h('div', { class: 'tl-selection', hidden: true });
    this.body = h('div', { class: 'tl-body' }, this.canvas, this.selBox, this.tooltip);
    const labels = h(
      'div',
      { class: 'tl-labels', 'aria-hidden': 'true' },
      h('div', { class: 'tl-axis-label', style: { height: `${AXIS_H}px` } }, 'level'),
      lanes.map((l) => h('div', { class: 'tl-lane-label', style: { height: `${LANE_H}px`, lineHeight: `${LANE_H}px` } }, String(l))),
    );
    this.el = h(
      'div',
      { class: 'tl-chart', 'data-events': String(cols.n), 'data-lanes': lanes.join(','), 'data-axis-h': String(AXIS_H), 'data-lane-h': String(LANE_H) },
      labels,
      this.body,
      this.status,
    );
    parent.append(this.el);

    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => {
      if (!this.drag) this.setHover(-1);
    });
    this.canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      this.drag = { x0: e.offsetX, x1: e.offsetX };
      const up = (ev: MouseEvent) => {
        window.removeEventListener('mouseup', up);
        const d = this.drag;
        this.drag = null;
        this.selBox.hidden = true;
        if (!d) return;
        const x1 = ev.clientX - this.canvas.getBoundingClientRect().left;
        if (Math.abs(x1 - d.x0) > 4) {
          const a = timeAt(Math.min(d.x0, x1), this.v0, this.v1, this.width);
          const b = timeAt(Math.max(d.x0, x1), this.v0, this.v1, this.width);
          this.setView(Math.max(a, this.minT()), Math.min(b, this.maxT()));
        } else {
          const i = this.hit(d.x0, e.offsetY);
          if (i >= 0) this.select(i);
        }
      };
      window.addEventListener('mouseup', up);
    });
    this.canvas.addEventListener('dblclick', () => this.reset());
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.canvas.addEventListener('blur', () => this.queue());
    this.ro = new ResizeObserver(() => {
      if (Math.floor(this.body.clientWidth) !== this.width) this.queue();
    });
    this.ro.observe(this.body);
    window.addEventListener('loupe:theme', this.onTheme);
    this.draw();
  }

  private readonly onTheme = () => this.queue();

  destroy(): void {
    window.removeEventListener('loupe:theme', this.onTheme);
    this.ro.disconnect();
    this.el.remove();
  }

  /** The view, ns relative to the columns' base. */
  view(): [number, number] {
    return [this.v0, this.v1];
  }

  zoomed(): boolean {
    return this.v0 !== this.opts.full[0] || this.v1 !== this.opts.full[1];
  }

  reset(): void {
    this.setView(this.opts.full[0], this.opts.full[1]);
  }

  setView(a: number, b: number): void {
    if (!(b > a)) return;
    if (b - a < 100) {
      const m = (a + b) / 2;
      a = m - 50;
      b = m + 50;
    }
    this.v0 = a;
    this.v1 = b;
    this.queue();
  }

  private minT(): number {
    return Math.min(this.opts.full[0], this.cols.n ? this.cols.t[0] : 0);
  }

  private maxT(): number {
    return Math.max(this.opts.full[1], this.cols.n ? this.cols.t[this.cols.n - 1] : 1);
  }

  private queue(): void {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.draw();
    });
  }

  draw(): void {
    const t0 = performance.now();
    const c = this.cols;
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(100, Math.floor(this.body.clientWidth));
    this.width = W;
    const nl = c.lanes.levels.length;
    const H = AXIS_H + nl * LANE_H;
    if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(H * dpr)) {
      this.canvas.width = Math.round(W * dpr);
      this.canvas.height = Math.round(H * dpr);
      this.canvas.style.width = `${W}px`;
      this.canvas.style.height = `${H}px`;
    }
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const p = palette();
    const { v0, v1 } = this;

    // Lanes (alternate ones shaded), then the time grid and its labels.
    ctx.fillStyle = p.laneBg;
    for (let l = 0; l < nl; l += 2) ctx.fillRect(0, AXIS_H + l * LANE_H, W, LANE_H);
    const tk = ticks(v0, v1, Math.max(2, Math.floor(W / 110)));
    ctx.strokeStyle = p.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const v of tk.at) {
      const x = Math.round(xOf(v, v0, v1, W)) + 0.5;
      ctx.moveTo(x, AXIS_H - 5);
      ctx.lineTo(x, H);
    }
    ctx.stroke();
    ctx.fillStyle = p.text;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    for (const v of tk.at) {
      const x = xOf(v, v0, v1, W);
      const label = tickLabel(v, tk.step);
      const w = ctx.measureText(label).width;
      if (x - w / 2 < 0 || x + w / 2 > W) continue;
      ctx.fillText(label, x - w / 2, 3);
    }

    // Bars, one path per colour.
    const barH = LANE_H - 2 * BAR_PAD;
    for (let b = 0; b < SLOTS; b++) {
      const ids = this.byBucket[b];
      if (!ids.length) continue;
      ctx.fillStyle = p.slots[b];
      ctx.beginPath();
      // Events before v0 cannot show; those after v1 may still reach into the view by their lag.
      for (let j = 0; j < ids.length; j++) {
        const i = ids[j];
        if (c.t[i] < v0) continue;
        const s = barSpan(c.t[i], c.lag[i], v0, v1, W, 1);
        if (!s) continue;
        const w = s[1] - s[0];
        // A 1-px gap at the end of bars wide enough to keep neighbours apart.
        ctx.rect(s[0], AXIS_H + c.lane[i] * LANE_H + BAR_PAD, w > 3 ? w - 1 : w, barH);
      }
      ctx.fill();
    }
    // Hovered and selected events: outlined.
    for (const [i, colour] of [
      [this.hover, p.fg],
      [this.selected, p.focus],
    ] as const) {
      if (i < 0) continue;
      const s = barSpan(c.t[i], c.lag[i], v0, v1, W, 3);
      if (!s) continue;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2;
      ctx.strokeRect(s[0] + 1, AXIS_H + c.lane[i] * LANE_H + BAR_PAD - 2, Math.max(2, s[1] - s[0] - 2), barH + 4);
    }
    this.lastDrawMs = performance.now() - t0;
    this.el.dataset.view = `${v0},${v1}`;
    this.el.dataset.drawMs = this.lastDrawMs.toFixed(2);
    this.opts.onView?.(v0, v1, this.zoomed());
  }

  /** The event under (x, y) in canvas CSS pixels, or -1. */
  hit(x: number, y: number): number {
    const lane = Math.floor((y - AXIS_H) / LANE_H);
    if (lane < 0 || lane >= this.cols.lanes.levels.length) return -1;
    const at = timeAt(x, this.v0, this.v1, this.width);
    const tol = (3 * (this.v1 - this.v0)) / this.width;
    return hitTest(this.cols, lane, at, tol);
  }

  private onMove(e: MouseEvent): void {
    if (this.drag) {
      this.drag.x1 = e.offsetX;
      const a = Math.max(0, Math.min(this.drag.x0, this.drag.x1));
      const b = Math.min(this.width, Math.max(this.drag.x0, this.drag.x1));
      this.selBox.hidden = b - a < 2;
      this.selBox.style.left = `${a}px`;
      this.selBox.style.width = `${b - a}px`;
      this.selBox.style.height = `${this.canvas.clientHeight}px`;
      return;
    }
    this.setHover(this.hit(e.offsetX, e.offsetY), e.offsetX, e.offsetY);
  }

  private setHover(i: number, x = 0, y = 0): void {
    if (i !== this.hover) {
      this.hover = i;
      this.queue();
    }
    if (i < 0) {
      // The selected event keeps its tooltip.
      if (this.selected >= 0) this.showTooltip(this.selected);
      else this.tooltip.hidden = true;
      return;
    }
    this.showTooltip(i, x, y);
  }

  /** The tooltip of event `i`, near (x, y), or under its bar. */
  private showTooltip(i: number, x?: number, y?: number): void {
    const c = this.cols;
    const e = c.events[i];
    const lag = c.lag[i];
    this.tooltip.replaceChildren(
      h('strong', { class: 'tl-tip-name' }, e.name),
      ` level ${e.level}`,
      h('br'),
      h('span', { class: 'mono' }, rfc3339(str(e.time_unix_ns))),
      h('br'),
      `${offsetText(c.t[i] - this.opts.full[0])} from the start · lag ${lagText(lag >= 0 ? lag : null)}`,
      h('br'),
      `tid ${e.tid} · cpu ${e.cpu}`,
      h('br'),
      'args ',
      h('span', { class: 'mono tl-tip-args' }, argsText(e.arg_names, e.args.map((a) => str(a)))),
    );
    this.tooltip.dataset.event = String(i);
    this.tooltip.hidden = false;
    const W = this.width;
    if (x === undefined || y === undefined) {
      const s = barSpan(c.t[i], lag, this.v0, this.v1, W, 1);
      x = s ? s[1] : W / 2;
      y = AXIS_H + (c.lane[i] + 1) * LANE_H - 8;
    }
    this.tooltip.style.left = `${Math.max(0, Math.min(x + 14, W - this.tooltip.offsetWidth - 4))}px`;
    this.tooltip.style.top = `${y + 16}px`;
  }

  /** Selects event `i`: outlined, its tooltip shown, announced; scrolled into the view if needed. */
  select(i: number): void {
    const c = this.cols;
    if (i < 0 || i >= c.n) return;
    this.selected = i;
    const t = c.t[i];
    if (t < this.v0 || t > this.v1) {
      const span = this.v1 - this.v0;
      const a = Math.max(this.minT(), Math.min(this.maxT() - span, t - span / 2));
      this.v0 = a;
      this.v1 = a + span;
    }
    const e = c.events[i];
    this.status.textContent = `${e.name}, level ${e.level}, ${offsetText(t - this.opts.full[0])}, lag ${lagText(c.lag[i] >= 0 ? c.lag[i] : null)}, thread ${e.tid}, CPU ${e.cpu}, args ${argsText(e.arg_names, e.args.map((a) => str(a)))}`;
    this.el.dataset.selected = String(i);
    this.queue();
    requestAnimationFrame(() => this.showTooltip(i));
  }

  private onKey(e: KeyboardEvent): void {
    const c = this.cols;
    if (!c.n) return;
    const mid = (this.v0 + this.v1) / 2;
    const cur = this.selected >= 0 ? this.selected : -1;
    const laneOf = (i: number) => (i >= 0 ? c.lane[i] : 0);
    let handled = true;
    if ((e.key === 'ArrowLeft' || e.key === 'ArrowRight') && e.shiftKey) {
      [this.v0, this.v1] = pan(this.v0, this.v1, e.key === 'ArrowLeft' ? -0.25 : 0.25, this.minT(), this.maxT());
      this.queue();
    } else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
      if (cur < 0) this.select(nearestInLane(c, 0, mid));
      else {
        const ids = c.byLane[laneOf(cur)];
        const k = indexInLane(c, cur) + (e.key === 'ArrowLeft' ? -1 : 1);
        if (k >= 0 && k < ids.length) this.select(ids[k]);
      }
    } else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
      const lane = Math.max(0, Math.min(c.lanes.levels.length - 1, laneOf(cur) + (cur < 0 ? 0 : e.key === 'ArrowUp' ? -1 : 1)));
      this.select(nearestInLane(c, lane, cur >= 0 ? c.t[cur] : mid));
    } else if (e.key === 'Home' || e.key === 'End') {
      const ids = c.byLane[laneOf(cur)];
      this.select(e.key === 'Home' ? ids[0] : ids[ids.length - 1]);
    } else if (e.key === '+' || e.key === '=' || e.key === '-' || e.key === '_') {
      const at = cur >= 0 && c.t[cur] >= this.v0 && c.t[cur] <= this.v1 ? c.t[cur] : mid;
      [this.v0, this.v1] = zoom(this.v0, this.v1, at, e.key === '+' || e.key === '=' ? 0.5 : 2, this.minT(), this.maxT());
      this.queue();
    } else if (e.key === 'Escape') {
      this.reset();
    } else handled = false;
    if (handled) e.preventDefault();
  }

  /** Exact Unix ns of the view's ends (for links). */
  viewUnix(): [bigint, bigint] {
    return [unixNs(this.cols, Math.floor(this.v0)), unixNs(this.cols, Math.ceil(this.v1))];
  }
}
