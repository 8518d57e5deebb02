// uPlot line charts: one value series per chart (or a few with the same unit), x in seconds
// relative to a start instant, synced cursors and zoom across a group, highlighted x bands.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h } from './dom';
import { si } from './format';
import { themeColor } from './palette';

export interface SeriesSpec {
  label: string;
  values: ArrayLike<number | null>;
  unit: string;
}

export interface Band {
  from: number; // x (s)
  to: number; // x (s)
  kind: 'burst' | 'stall';
}

export interface ChartSpec {
  title: string;
  xs: ArrayLike<number>;
  series: SeriesSpec[];
  height?: number;
  /** Legend text of an x value (seconds from start). */
  xValue?: (v: number) => string;
  bands?: Band[];
}

/** A colour uPlot evaluates at each draw, so a theme change only needs a redraw. */
function themed(name: string): () => string {
  return () => themeColor(name);
}

const SERIES_COLORS = ['--series-1', '--series-2', '--series-3', '--series-4', '--series-5', '--series-6'];

/** A value with its unit: SI prefixes for rates and sizes, plain for ratios and percentages. */
export function withUnit(v: number, unit: string): string {
  if (unit === '' || unit === 'ratio') return String(Number(v.toPrecision(4)));
  if (unit === '%' || unit === 'percent') return `${Number(v.toPrecision(4))}%`;
  return si(v, unit);
}

/** Tick label for x (seconds): seconds from 0.1-s increments up, ms or µs below. */
export function xTick(v: number, incr: number): string {
  const decimals = (step: number) => Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  if (incr >= 60) return `${Number((v / 60).toFixed(2))} min`;
  if (incr >= 0.1) return `${v.toFixed(decimals(incr))} s`;
  if (incr >= 1e-4) return `${(v * 1e3).toFixed(decimals(incr * 1e3))} ms`;
  return `${(v * 1e6).toFixed(decimals(incr * 1e6))} µs`;
}

/**
 * A group of charts with a shared cursor (uPlot sync) and shared x zoom: dragging on one zooms
 * all; double-click resets. `onScale` hears every x-range change (e.g. to redraw a heatmap).
 */
export class ChartGroup {
  readonly charts: uPlot[] = [];
  private syncing = false;
  private readonly key: string;
  private pendingDraws = 0;
  private drawnResolve: (() => void) | null = null;
  /** Resolves once every chart has drawn once (after `seal()`). */
  drawn: Promise<void>;
  onScale: ((min: number, max: number) => void) | null = null;
  private ro: ResizeObserver | null = null;

  private readonly onTheme = () => {
    for (const c of this.charts) {
      c.redraw(false, true);
      // Legend markers take their colour once, at creation.
      c.root.querySelectorAll<HTMLElement>('.u-series .u-marker').forEach((m, i) => {
        const s = c.series[i];
        if (s && typeof s.stroke === 'function') m.style.borderColor = (s.stroke as (u: uPlot, i: number) => string)(c, i);
      });
    }
  };

  constructor(key: string) {
    this.key = key;
    this.drawn = new Promise((r) => (this.drawnResolve = r));
    window.addEventListener('loupe:theme', this.onTheme);
  }

  add(target: HTMLElement, spec: ChartSpec, width: number): uPlot {
    const fg = themed('--fg-muted');
    const grid = themed('--grid');
    const unit = spec.series[0]?.unit ?? '';
    const bands = spec.bands ?? [];
    let firstDraw = true;
    this.pendingDraws++;
    const opts: uPlot.Options = {
      width,
      height: spec.height ?? 150,
      pxAlign: 0,
      cursor: {
        sync: { key: this.key, setSeries: false },
        drag: { x: true, y: false, setScale: true },
        focus: { prox: 16 },
      },
      select: { show: true, left: 0, top: 0, width: 0, height: 0 },
      scales: { x: { time: false }, y: { range: (_u, min, max) => [min < 0 ? min * 1.05 : 0, max > 0 ? max * 1.05 : 1] } },
      legend: { live: true },
      series: [
        { label: 'time', value: (_u, v) => (v == null ? '–' : spec.xValue ? spec.xValue(v) : `${v} s`) },
        ...spec.series.map((s, i) => ({
          label: s.label,
          stroke: themed(SERIES_COLORS[i % SERIES_COLORS.length]),
          width: 1,
          points: { show: spec.xs.length <= 200 },
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : withUnit(v, s.unit)),
        })),
      ],
      axes: [
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          values: (_u, splits, _ax, _space, incr) => splits.map((v) => xTick(v, incr)),
          font: '11px system-ui, sans-serif',
        },
        {
          stroke: fg,
          grid: { stroke: grid, width: 1 },
          ticks: { stroke: grid, width: 1 },
          size: 78,
          values: (_u, splits) => splits.map((v) => withUnit(v, unit)),
          font: '11px system-ui, sans-serif',
        },
      ],
      hooks: {
        drawClear: [
          (u) => {
            if (!bands.length) return;
            const ctx = u.ctx;
            const { top, height } = u.bbox;
            ctx.save();
            for (const b of bands) {
              const x0 = u.valToPos(b.from, 'x', true);
              const x1 = u.valToPos(b.to, 'x', true);
              if (x1 < u.bbox.left || x0 > u.bbox.left + u.bbox.width) continue;
              ctx.fillStyle = b.kind === 'burst' ? themeColor('--band-burst') : themeColor('--band-stall');
              const l = Math.max(u.bbox.left, x0);
              const r = Math.min(u.bbox.left + u.bbox.width, x1);
              ctx.fillRect(l, top, Math.max(r - l, 2 * (window.devicePixelRatio || 1)), height);
            }
            ctx.restore();
          },
        ],
        draw: [
          () => {
            if (firstDraw) {
              firstDraw = false;
              this.pendingDraws--;
              this.checkDrawn();
            }
          },
        ],
        setScale: [
          (u, key) => {
            if (key !== 'x') return;
            const { min, max } = u.scales.x;
            if (min == null || max == null) return;
            u.root.dataset.xRange = `${+min.toFixed(6)},${+max.toFixed(6)}`;
            if (this.syncing) return;
            this.syncing = true;
            for (const o of this.charts) if (o !== u) o.setScale('x', { min, max });
            this.syncing = false;
            this.onScale?.(min, max);
          },
        ],
      },
    };
    const data: uPlot.AlignedData = [Array.from(spec.xs), ...spec.series.map((s) => Array.from(s.values))] as uPlot.AlignedData;
    const chart = new uPlot(opts, data, target);
    this.charts.push(chart);
    return chart;
  }

  private sealed = false;

  /** No more charts will be added: `drawn` resolves once all have drawn. */
  seal(): void {
    this.sealed = true;
    this.checkDrawn();
  }

  private checkDrawn(): void {
    if (this.sealed && this.pendingDraws === 0 && this.drawnResolve) {
      this.drawnResolve();
      this.drawnResolve = null;
    }
  }

  /** Resets every chart to the full x range. */
  resetZoom(): void {
    const c = this.charts[0];
    if (!c) return;
    const xs = c.data[0];
    c.setScale('x', { min: xs[0], max: xs[xs.length - 1] });
  }

  /** Keeps every chart as wide as its cell. */
  autoResize(cellOf: (u: uPlot) => HTMLElement): void {
    let queued = false;
    this.ro = new ResizeObserver(() => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        for (const c of this.charts) {
          const w = Math.floor(cellOf(c).clientWidth);
          if (w > 0 && Math.abs(w - c.width) > 1) c.setSize({ width: w, height: c.height });
        }
      });
    });
    for (const c of this.charts) this.ro.observe(cellOf(c));
  }

  destroy(): void {
    window.removeEventListener('loupe:theme', this.onTheme);
    this.ro?.disconnect();
    for (const c of this.charts) c.destroy();
    this.charts.length = 0;
  }
}

/** A standalone chart card: heading + plot, sized to its container. */
export function chartCard(title: string, extra?: Node | null): { card: HTMLElement; plot: HTMLElement } {
  const plot = h('div', { class: 'chart-plot' });
  const card = h('figure', { class: 'chart' }, h('figcaption', null, title, extra ?? null), plot);
  return { card, plot };
}
