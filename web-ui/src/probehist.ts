// A probed function's latency histogram on a small canvas: the buckets as the API gives them
// (log-linear, measured durations) as bars on a log-scaled x axis shared by the session's
// functions, so their shapes compare, each as tall as its calls per log-width (probes.ts:
// histBars); hover (or focus and ←/→) names a bucket and its calls.

import { h } from './dom';
import { count, duration, percent } from './format';
import { barAt, histBars, histTicks, type Bar, type Bucket } from './probes';
import { lagText } from './timeline';
import { themeColor } from './palette';

const H = 96;
const AXIS_H = 16;
const PAD_TOP = 4;

export class Histogram {
  readonly el: HTMLElement;
  /** Time of the last draw, ms. */
  lastDrawMs = 0;
  private readonly canvas: HTMLCanvasElement;
  private readonly readout: HTMLElement;
  private bars: Bar[] = [];
  private hover = -1;
  private queued = false;
  private readonly ro: ResizeObserver;
  private readonly total: number;

  constructor(
    parent: HTMLElement,
    private readonly buckets: readonly Bucket[],
    private readonly domain: [number, number],
    label: string,
  ) {
    this.total = buckets.reduce((a, b) => a + b.count, 0);
    this.canvas = h('canvas', { class: 'hist-canvas', role: 'img', tabindex: '0', 'aria-label': label });
    this.readout = h('p', { class: 'hist-readout muted small', 'aria-live': 'polite' }, '\u00a0');
    this.el = h('div', { class: 'hist', 'data-buckets': String(buckets.length), 'data-timed': String(this.total) }, this.canvas, this.readout);
    parent.appendChild(this.el);
    this.canvas.addEventListener('mousemove', (e) => this.setHover(barAt(this.bars, e.offsetX)));
    this.canvas.addEventListener('mouseleave', () => this.setHover(-1));
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.ro = new ResizeObserver(() => this.queue());
    this.ro.observe(this.el);
    window.addEventListener('loupe:theme', this.onTheme);
    this.draw();
  }

  private readonly onTheme = () => this.queue();

  destroy(): void {
    window.removeEventListener('loupe:theme', this.onTheme);
    this.ro.disconnect();
    this.el.remove();
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
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(120, Math.floor(this.el.clientWidth));
    if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(H * dpr)) {
      this.canvas.width = Math.round(W * dpr);
      this.canvas.height = Math.round(H * dpr);
      this.canvas.style.width = `${W}px`;
      this.canvas.style.height = `${H}px`;
    }
    const plotH = H - AXIS_H - PAD_TOP;
    // One call in the tallest bucket's thousands still shows: at least 2 px.
    this.bars = histBars(this.buckets, this.domain, W, 2 / plotH);
    const ctx = this.canvas.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const base = PAD_TOP + plotH;

    // Decade grid and labels.
    const ticks = histTicks(this.domain);
    const [d0, d1] = this.domain;
    const xOf = (v: number) => (Math.log(v / d0) / Math.log(d1 / d0)) * W;
    ctx.strokeStyle = themeColor('--grid');
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const v of ticks) {
      const x = Math.round(xOf(v)) + 0.5;
      ctx.moveTo(x, PAD_TOP);
      ctx.lineTo(x, base + 3);
    }
    ctx.moveTo(0, base + 0.5);
    ctx.lineTo(W, base + 0.5);
    ctx.stroke();
    ctx.fillStyle = themeColor('--fg-muted');
    ctx.font = '10px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    let lastRight = -Infinity;
    for (const v of ticks) {
      const text = duration(v);
      const w = ctx.measureText(text).width;
      const x = Math.min(W - w, Math.max(0, xOf(v) - w / 2));
      if (x < lastRight + 6) continue;
      ctx.fillText(text, x, base + 4);
      lastRight = x + w;
    }

    // Bars: one path; the hovered one outlined.
    ctx.fillStyle = themeColor('--series-1');
    ctx.beginPath();
    for (const b of this.bars) {
      const y = base - b.h * plotH;
      const w = b.x1 - b.x0;
      ctx.rect(b.x0, y, w > 3 ? w - 0.5 : w, base - y);
    }
    ctx.fill();
    const hb = this.bars.find((b) => b.index === this.hover);
    if (hb) {
      ctx.strokeStyle = themeColor('--fg');
      ctx.lineWidth = 1.5;
      const y = base - hb.h * plotH;
      ctx.strokeRect(hb.x0 - 1, y - 1, Math.max(2, hb.x1 - hb.x0) + 2, base - y + 1);
    }
    this.el.dataset.bars = String(this.bars.length);
    this.lastDrawMs = performance.now() - t0;
  }

  private setHover(i: number): void {
    if (i === this.hover) return;
    this.hover = i;
    const b = this.buckets[i];
    this.readout.textContent = b
      ? `${lagText(b.low_ns)} – ${lagText(b.high_ns)}: ${count(b.count)} call${b.count === 1 ? '' : 's'} (${percent(b.count, this.total)})`
      : '\u00a0';
    this.queue();
  }

  /** ←/→ step through the buckets with calls, Home/End the first/last, Escape clears. */
  private onKey(e: KeyboardEvent): void {
    if (!this.bars.length) return;
    const pos = this.bars.findIndex((b) => b.index === this.hover);
    let next = pos;
    if (e.key === 'ArrowRight') next = pos < 0 ? 0 : Math.min(this.bars.length - 1, pos + 1);
    else if (e.key === 'ArrowLeft') next = pos < 0 ? this.bars.length - 1 : Math.max(0, pos - 1);
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = this.bars.length - 1;
    else if (e.key === 'Escape') next = -1;
    else return;
    e.preventDefault();
    this.setHover(next < 0 ? -1 : this.bars[next].index);
  }
}
