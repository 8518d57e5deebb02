// The window view's lanes on one time axis: a `WindowAxis` (the view [v0, v1] and the selection,
// in ns after the window's start) shared by a few `LaneGroup`s — traffic, CPUs, probe calls,
// timeline events — each one canvas of lanes. Zooming or panning any group moves the axis, and
// every group redraws in the same animation frame, so their time ranges stay equal.
//
// Built for the 10-minute window of a 16-CPU host (96,000 ticks, 2,000 calls, tens of
// thousands of events): a lane's items are typed columns sorted by time, drawing binary-searches
// the view's first item and batches fills by colour; a summarized lane (the server's per-column
// counts) draws one bar per column.
//
// Mouse: wheel zooms around the pointer, drag selects a span (its flame graph and comparisons
// appear below the lanes), double-click resets. Keyboard on a group: + and − zoom, Shift+←/→
// pan, Escape resets.

import { h } from './dom';
import { count } from './format';
import { themeColor } from './palette';
import { offsetText, tickLabel, ticks, xOf, timeAt, zoom as zoomView, pan as panView } from './timeline';

export const LABEL_W = 132;
export const AXIS_H = 20;

/** What a lane says under the pointer: lines of text. */
export type Tip = (string | HTMLElement)[];

/** One lane of a group: its height, how to draw it and what it says under the pointer. */
export interface Lane {
  label: string;
  /** A second, muted label line (e.g. "summarized"). */
  note?: string;
  height: number;
  /** Items in the lane (samples, calls, events, slots), for the page's counts. */
  items: number;
  draw(d: DrawCtx, y: number): void;
  hit?(t: number, tol: number, dy: number): Tip | null;
}

export interface DrawCtx {
  ctx: CanvasRenderingContext2D;
  /** Plot area: x from `x0` to `x0 + w`. */
  x0: number;
  w: number;
  v0: number;
  v1: number;
  /** The x of time `t` (ns after the window's start). */
  x(t: number): number;
}

type Listener = () => void;

export class WindowAxis {
  v0: number;
  v1: number;
  sel: [number, number] | null = null;
  private readonly listeners = new Set<Listener>();
  private queued = false;
  /** Called after a redraw with the view, for the page (URL, links, timings). */
  onChange: ((zoomed: boolean) => void) | null = null;
  lastDrawMs = 0;

  constructor(readonly len: number) {
    this.v0 = 0;
    this.v1 = len;
  }

  listen(f: Listener): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  setView(a: number, b: number): void {
    if (!(b > a)) return;
    this.v0 = Math.max(0, a);
    this.v1 = Math.min(this.len, b);
    if (this.v1 - this.v0 < 1000) {
      const m = (this.v0 + this.v1) / 2;
      [this.v0, this.v1] = [Math.max(0, m - 500), Math.min(this.len, m + 500)];
    }
    this.queue();
  }

  zoomAt(at: number, factor: number): void {
    const [a, b] = zoomView(this.v0, this.v1, at, factor, 0, this.len, 1000);
    this.setView(a, b);
  }

  pan(frac: number): void {
    const [a, b] = panView(this.v0, this.v1, frac, 0, this.len);
    this.setView(a, b);
  }

  reset(): void {
    this.setView(0, this.len);
  }

  zoomed(): boolean {
    return this.v0 > 0 || this.v1 < this.len;
  }

  setSelection(s: [number, number] | null): void {
    this.sel = s;
    this.queue();
  }

  queue(): void {
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.drawNow();
    });
  }

  /** Redraws every group now (also what a zoom's timing measures). */
  drawNow(): void {
    const t0 = performance.now();
    for (const f of this.listeners) f();
    this.lastDrawMs = performance.now() - t0;
    this.onChange?.(this.zoomed());
  }
}

interface Colours {
  grid: string;
  text: string;
  muted: string;
  laneBg: string;
  sel: string;
  fg: string;
}

function colours(): Colours {
  return {
    grid: themeColor('--grid'),
    text: themeColor('--fg'),
    muted: themeColor('--fg-muted'),
    laneBg: themeColor('--bg-sunken'),
    sel: themeColor('--focus'),
    fg: themeColor('--fg'),
  };
}

/** One canvas of lanes sharing the window's axis (one kind of data). */
export class LaneGroup {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly body: HTMLElement;
  private readonly tooltip: HTMLElement;
  private width = 0;
  private drag: { x0: number; t0: number; moved: boolean } | null = null;
  private readonly off: () => void;
  private readonly ro: ResizeObserver;

  constructor(
    readonly kind: string,
    title: string,
    private readonly lanes: Lane[],
    private readonly axis: WindowAxis,
  ) {
    const items = lanes.reduce((n, l) => n + l.items, 0);
    this.canvas = h('canvas', {
      class: 'wl-canvas',
      tabindex: '0',
      role: 'application',
      'aria-roledescription': 'time lanes',
      'aria-label': `${title}: ${lanes.length} lanes, ${count(items)} items. Plus and minus zoom, Shift with left or right pans, Escape resets; drag with the mouse to select a span.`,
    });
    this.tooltip = h('div', { class: 'flame-tooltip wl-tooltip', role: 'tooltip', hidden: true });
    this.body = h('div', { class: 'wl-body' }, this.canvas, this.tooltip);
    this.el = h(
      'section',
      { class: 'wl-group', 'data-kind': kind, 'data-lanes': String(lanes.length), 'data-items': String(items) },
      h('h2', null, title),
      this.body,
    );
    this.canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const at = this.timeOf(e.offsetX);
      this.axis.zoomAt(at, e.deltaY < 0 ? 0.8 : 1.25);
    }, { passive: false });
    this.canvas.addEventListener('mousedown', (e) => {
      if (e.button !== 0 || e.offsetX < LABEL_W) return;
      this.drag = { x0: e.offsetX, t0: this.timeOf(e.offsetX), moved: false };
      const up = (ev: MouseEvent) => {
        window.removeEventListener('mouseup', up);
        const d = this.drag;
        this.drag = null;
        if (!d || !d.moved) return;
        const t1 = this.timeOf(ev.clientX - this.canvas.getBoundingClientRect().left);
        this.axis.setSelection([Math.min(d.t0, t1), Math.max(d.t0, t1)]);
        this.el.dispatchEvent(new CustomEvent('wl:select', { bubbles: true }));
      };
      window.addEventListener('mouseup', up);
    });
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => (this.tooltip.hidden = true));
    this.canvas.addEventListener('dblclick', () => this.axis.reset());
    this.canvas.addEventListener('keydown', (e) => {
      const mid = (this.axis.v0 + this.axis.v1) / 2;
      if (e.key === '+' || e.key === '=') this.axis.zoomAt(mid, 0.5);
      else if (e.key === '-' || e.key === '_') this.axis.zoomAt(mid, 2);
      else if (e.shiftKey && (e.key === 'ArrowLeft' || e.key === 'ArrowRight')) this.axis.pan(e.key === 'ArrowLeft' ? -0.25 : 0.25);
      else if (e.key === 'Escape') this.axis.reset();
      else return;
      e.preventDefault();
    });
    this.off = axis.listen(() => this.draw());
    window.addEventListener('loupe:theme', this.onTheme);
    this.ro = new ResizeObserver(() => {
      if (Math.floor(this.body.clientWidth) !== this.width) this.axis.queue();
    });
    this.ro.observe(this.body);
  }

  /** Another theme: every colour is read again on the next draw. */
  private readonly onTheme = () => this.axis.queue();

  destroy(): void {
    this.off();
    this.ro.disconnect();
    window.removeEventListener('loupe:theme', this.onTheme);
  }

  private timeOf(x: number): number {
    return timeAt(x - LABEL_W, this.axis.v0, this.axis.v1, Math.max(1, this.width - LABEL_W));
  }

  draw(): void {
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(LABEL_W + 100, Math.floor(this.body.clientWidth));
    this.width = W;
    const H = AXIS_H + this.lanes.reduce((n, l) => n + l.height, 0);
    if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(H * dpr)) {
      this.canvas.width = Math.round(W * dpr);
      this.canvas.height = Math.round(H * dpr);
      this.canvas.style.width = `${W}px`;
      this.canvas.style.height = `${H}px`;
    }
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const c = colours();
    const { v0, v1 } = this.axis;
    const pw = W - LABEL_W;
    const d: DrawCtx = { ctx, x0: LABEL_W, w: pw, v0, v1, x: (t) => LABEL_W + xOf(t, v0, v1, pw) };
    // Lanes: alternate ones shaded, labels in the gutter.
    let y = AXIS_H;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    this.lanes.forEach((lane, i) => {
      if (i % 2 === 0) {
        ctx.fillStyle = c.laneBg;
        ctx.fillRect(0, y, W, lane.height);
      }
      ctx.fillStyle = c.text;
      ctx.fillText(fit(ctx, lane.label, LABEL_W - 8), 4, y + 3);
      if (lane.note && lane.height >= 28) {
        ctx.fillStyle = c.muted;
        ctx.fillText(fit(ctx, lane.note, LABEL_W - 8), 4, y + 16);
      }
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, y, pw, lane.height);
      ctx.clip();
      lane.draw(d, y);
      ctx.restore();
      y += lane.height;
    });
    // The time grid and its labels (ns after the window's start).
    const tk = ticks(v0, v1, Math.max(2, Math.floor(pw / 110)));
    ctx.strokeStyle = c.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const v of tk.at) {
      const x = Math.round(d.x(v)) + 0.5;
      ctx.moveTo(x, AXIS_H - 5);
      ctx.lineTo(x, H);
    }
    ctx.stroke();
    ctx.fillStyle = c.muted;
    ctx.textBaseline = 'top';
    for (const v of tk.at) {
      const x = d.x(v);
      const label = tickLabel(v, tk.step);
      const lw = ctx.measureText(label).width;
      if (x - lw / 2 < LABEL_W || x + lw / 2 > W) continue;
      ctx.fillText(label, x - lw / 2, 3);
    }
    // The selection, on every group.
    const s = this.axis.sel;
    if (s) {
      const a = Math.max(LABEL_W, d.x(s[0]));
      const b = Math.min(W, d.x(s[1]));
      if (b > a) {
        ctx.globalAlpha = 0.18;
        ctx.fillStyle = c.sel;
        ctx.fillRect(a, AXIS_H, Math.max(1, b - a), H - AXIS_H);
        ctx.globalAlpha = 1;
        ctx.strokeStyle = c.sel;
        ctx.strokeRect(a + 0.5, AXIS_H + 0.5, Math.max(1, b - a - 1), H - AXIS_H - 1);
      }
    }
    this.el.dataset.view = `${Math.round(v0)},${Math.round(v1)}`;
  }

  private onMove(e: MouseEvent): void {
    if (this.drag) {
      if (Math.abs(e.offsetX - this.drag.x0) > 3) this.drag.moved = true;
      if (this.drag.moved) this.axis.setSelection([Math.min(this.drag.t0, this.timeOf(e.offsetX)), Math.max(this.drag.t0, this.timeOf(e.offsetX))]);
      return;
    }
    if (e.offsetX < LABEL_W) {
      this.tooltip.hidden = true;
      return;
    }
    let y = AXIS_H;
    const t = this.timeOf(e.offsetX);
    const tol = (3 * (this.axis.v1 - this.axis.v0)) / Math.max(1, this.width - LABEL_W);
    for (const lane of this.lanes) {
      if (e.offsetY >= y && e.offsetY < y + lane.height) {
        const tip = lane.hit?.(t, tol, e.offsetY - y) ?? null;
        if (!tip) break;
        this.tooltip.replaceChildren(h('strong', null, lane.label), h('br'), ...tip.flatMap((l, i) => (i ? [h('br'), l] : [l])));
        this.tooltip.hidden = false;
        this.tooltip.style.left = `${Math.max(0, Math.min(e.offsetX + 14, this.width - this.tooltip.offsetWidth - 4))}px`;
        this.tooltip.style.top = `${e.offsetY + 16}px`;
        return;
      }
      y += lane.height;
    }
    this.tooltip.hidden = true;
  }
}

/** `text` cut to `width` pixels with an ellipsis. */
function fit(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (ctx.measureText(text).width <= width) return text;
  let n = text.length;
  while (n > 1 && ctx.measureText(text.slice(0, n) + '…').width > width) n--;
  return text.slice(0, n) + '…';
}

/** The first index of sorted `t` at or after `v` (binary search). */
export function lowerBound(t: ArrayLike<number>, v: number): number {
  let lo = 0;
  let hi = t.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (t[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export { offsetText };
