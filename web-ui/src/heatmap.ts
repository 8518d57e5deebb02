// A canvas heatmap of CPUs × time: each row a CPU, each pixel column the maximum of the slots
// it covers, colour on a log scale of the run's maximum. Zero is drawn as "no traffic" so a
// stalled queue (one CPU going dark while others carry on) stands out.

import { h } from './dom';
import { count } from './format';

export interface HeatRow {
  label: string;
  values: ArrayLike<number>;
  /** The row's label links here (a host's run in the fleet view). */
  href?: string;
}

const ROW_H = 16;

export class Heatmap {
  readonly el: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly tooltip: HTMLElement;
  private readonly labels: HTMLElement;
  private rows: HeatRow[];
  private slots: number;
  private s0 = 0;
  private s1: number;
  private max = 1;
  private lut = new Uint8ClampedArray(256 * 4);
  private queued = false;
  private readonly ro: ResizeObserver;

  constructor(
    parent: HTMLElement,
    rows: HeatRow[],
    private readonly opts: {
      slotSeconds: number;
      unit: string;
      xValue: (s: number) => string;
      describe: (v: number) => string;
      /** What a row is, for the canvas' description (default `CPU`). */
      rowNoun?: string;
      /** A click on a cell: its row and its busiest slot. */
      onPick?: (row: number, slot: number) => void;
    },
  ) {
    this.rows = rows;
    this.slots = rows[0]?.values.length ?? 0;
    this.s1 = this.slots;
    this.canvas = h('canvas', { class: 'heatmap-canvas', role: 'img' });
    this.tooltip = h('div', { class: 'flame-tooltip', role: 'tooltip', hidden: true });
    this.labels = h('div', { class: 'heatmap-labels', 'aria-hidden': 'true' });
    this.el = h(
      'div',
      { class: 'heatmap' },
      this.labels,
      h('div', { class: 'heatmap-body' }, this.canvas, this.tooltip),
    );
    parent.appendChild(this.el);
    this.setRows(rows);
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => (this.tooltip.hidden = true));
    const pick = opts.onPick;
    if (pick) {
      this.canvas.classList.add('pickable');
      this.canvas.addEventListener('click', (e) => {
        const cell = this.cellAt(e.offsetX, e.offsetY);
        if (!cell) return;
        // The cell's busiest slot (a pixel column may cover several).
        const vals = this.rows[cell.row].values;
        let best = cell.slot;
        for (let s = cell.slot; s < cell.end && s < this.slots; s++) if (vals[s] > vals[best]) best = s;
        pick(cell.row, best);
      });
    }
    this.ro = new ResizeObserver(() => this.queue());
    this.ro.observe(this.canvas.parentElement!);
    window.addEventListener('loupe:theme', this.onTheme);
  }

  private readonly onTheme = () => this.queue();

  setRows(rows: HeatRow[]): void {
    this.rows = rows;
    this.slots = rows[0]?.values.length ?? 0;
    let max = 0;
    for (const r of rows) for (let i = 0; i < r.values.length; i++) if (r.values[i] > max) max = r.values[i];
    this.max = max || 1;
    this.labels.replaceChildren(...rows.map((r) => h('div', { class: 'heatmap-label' }, r.href ? h('a', { href: r.href }, r.label) : r.label)));
    const noun = this.opts.rowNoun ?? 'CPU';
    this.canvas.setAttribute('aria-label', `Heatmap of ${this.opts.unit} per ${noun} over time, ${rows.length} ${noun}s × ${this.slots} slots; maximum ${this.opts.describe(max)}`);
    this.queue();
  }

  /** Shows slots [x0, x1) given in seconds from the start (the charts' zoom). */
  setRange(x0: number, x1: number): void {
    const dt = this.opts.slotSeconds;
    this.s0 = Math.max(0, Math.floor(x0 / dt));
    this.s1 = Math.min(this.slots, Math.max(this.s0 + 1, Math.ceil(x1 / dt)));
    this.queue();
  }

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

  private buildLut(): void {
    const dark = document.documentElement.dataset.resolvedTheme === 'dark';
    // A perceptual ramp (dark blue → teal → yellow), like viridis: the heatmap's own, in both themes.
    const stops: [number, number, number][] = [
      [68, 1, 84],
      [59, 82, 139],
      [33, 145, 140],
      [94, 201, 98],
      [253, 231, 37],
    ];
    for (let i = 0; i < 256; i++) {
      const t = (i / 255) * (stops.length - 1);
      const a = Math.floor(t);
      const b = Math.min(stops.length - 1, a + 1);
      const f = t - a;
      for (let c = 0; c < 3; c++) this.lut[i * 4 + c] = stops[a][c] + (stops[b][c] - stops[a][c]) * f;
      this.lut[i * 4 + 3] = 255;
    }
    // Index 0 is reserved for zero: the page background, nearly (a shade of its own, not style.css's).
    const zero = dark ? [24, 24, 27] : [241, 242, 244];
    this.lut.set([...zero, 255], 0);
  }

  draw(): void {
    const body = this.canvas.parentElement!;
    const W = Math.max(50, Math.floor(body.clientWidth));
    const H = this.rows.length * ROW_H;
    this.canvas.width = W;
    this.canvas.height = H;
    this.canvas.style.width = `${W}px`;
    this.canvas.style.height = `${H}px`;
    this.buildLut();
    const ctx = this.canvas.getContext('2d')!;
    const img = ctx.createImageData(W, H);
    const px = img.data;
    const span = this.s1 - this.s0;
    const logMax = Math.log1p(this.max);
    for (let r = 0; r < this.rows.length; r++) {
      const vals = this.rows[r].values;
      for (let col = 0; col < W; col++) {
        const a = this.s0 + Math.floor((col * span) / W);
        const b = Math.max(a + 1, this.s0 + Math.floor(((col + 1) * span) / W));
        let m = 0;
        for (let s = a; s < b && s < this.slots; s++) if (vals[s] > m) m = vals[s];
        const idx = m <= 0 ? 0 : Math.max(1, Math.round((Math.log1p(m) / logMax) * 255));
        const o = idx * 4;
        for (let y = r * ROW_H; y < (r + 1) * ROW_H - 1; y++) {
          const p = (y * W + col) * 4;
          px[p] = this.lut[o];
          px[p + 1] = this.lut[o + 1];
          px[p + 2] = this.lut[o + 2];
          px[p + 3] = 255;
        }
      }
    }
    ctx.putImageData(img, 0, 0);
  }

  /** The row and the slots [a, b) under a point of the canvas, if any. */
  private cellAt(x: number, y: number): { row: number; slot: number; end: number } | null {
    const r = Math.floor(y / ROW_H);
    const W = this.canvas.clientWidth || 1;
    const span = this.s1 - this.s0;
    const a = this.s0 + Math.floor((x * span) / W);
    const b = Math.max(a + 1, this.s0 + Math.floor(((x + 1) * span) / W));
    if (!this.rows[r] || a >= this.slots) return null;
    return { row: r, slot: a, end: b };
  }

  private onMove(e: MouseEvent): void {
    const cell = this.cellAt(e.offsetX, e.offsetY);
    if (!cell) {
      this.tooltip.hidden = true;
      return;
    }
    const { slot: a, end: b } = cell;
    const row = this.rows[cell.row];
    let m = 0;
    for (let s = a; s < b && s < this.slots; s++) if (row.values[s] > m) m = row.values[s];
    const slotText = b - a > 1 ? `slots ${count(a)}–${count(b - 1)} (max)` : `slot ${count(a)}`;
    this.tooltip.replaceChildren(
      h('strong', null, row.label),
      h('br'),
      `${slotText} · ${this.opts.xValue(a * this.opts.slotSeconds)}`,
      h('br'),
      this.opts.describe(m),
    );
    this.tooltip.hidden = false;
    const bw = this.canvas.parentElement!.clientWidth;
    this.tooltip.style.left = `${Math.min(e.offsetX + 14, Math.max(0, bw - this.tooltip.offsetWidth - 4))}px`;
    this.tooltip.style.top = `${e.offsetY + 18}px`;
  }
}
