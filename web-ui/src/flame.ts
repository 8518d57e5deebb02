// A canvas flame graph (icicle layout: the root on top, callees below). Built for size: the
// tree is flattened once into typed arrays (pre-order, so each depth's nodes are already sorted
// by x); drawing walks only the nodes inside the zoomed range, skips those narrower than half a
// pixel, and fills rectangles batched by colour (one path per colour). Hit testing is a binary
// search in the hovered row. Keyboard: arrows move a focused frame, Enter zooms into it,
// Backspace zooms out one level, Escape resets; the search box highlights matching functions.

import { h } from './dom';
import { count, duration, percent } from './format';
import { flattenTree } from './flametree';
import { KIND_SHADES, PALETTE, WARM_SHADES, paletteIndex } from './framekinds';
import { themeColor } from './palette';
import type { FlameNode } from './types';

const ROW = 18;
const MAX_CANVAS_CSS_HEIGHT = 16000;
// Buckets: 0..PALETTE-1 palette (warm native frames, then the kernel's, JIT code's and
// Python's hues: framekinds.ts), then highlighted, dimmed, and merged narrow frames.
const HIGHLIGHT = PALETTE;
const DIMMED = PALETTE + 1;
const MERGED = PALETTE + 2;
const BUCKETS = PALETTE + 3;

export interface FlameTimings {
  layoutMs: number;
  drawMs: number;
  nodes: number;
}

export class FlameGraph {
  readonly el: HTMLElement;
  readonly timings: FlameTimings = { layoutMs: 0, drawMs: 0, nodes: 0 };
  private readonly canvas: HTMLCanvasElement;
  private readonly scroller: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly status: HTMLElement;
  private readonly crumb: HTMLElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchInfo: HTMLElement;

  // The flattened tree.
  private n = 0;
  private depth!: Uint16Array;
  private x!: Float64Array;
  private val!: Float64Array;
  private selfv!: Float64Array;
  private parent!: Int32Array;
  private nameId!: Int32Array;
  private names: string[] = [];
  private colorOfName!: Uint8Array;
  private byDepth: Int32Array[] = [];
  private maxDepth = 0;
  private total = 0;

  // The view.
  private zoomNode = 0;
  private zx0 = 0;
  private zx1 = 1;
  private focusNode = -1;
  private hoverNode = -1;
  private matchedName: Uint8Array | null = null;
  private width = 0;
  private drawQueued = false;
  private readonly ro: ResizeObserver;
  private readonly charW: number;

  /** Said when a search matches no drawn frame: why some may not be drawn. */
  private readonly missingNote: string;
  /** A node's value as said: samples, or time waited (an off-CPU profile's values are ns). */
  private readonly amount: (v: number) => string;

  /** A differential flame graph: each node coloured by how its share changed against the baseline. */
  private readonly diff: { baseTotal: number } | null;
  private colorOfNode: Uint8Array | null = null;
  private base: Float64Array | null = null;

  /**
   * `missing`: set when the graph is not every call path (narrow ones left out by the
   * server); a search that matches nothing says it, since the function may be in those.
   * `waited`: the values are nanoseconds waited off the CPU, not samples.
   * `diff`: the nodes carry `base`, the baseline's samples on the same path, of `baseTotal`.
   */
  constructor(parent: HTMLElement, root: FlameNode, opts: { title?: string; missing?: string; waited?: boolean; diff?: { baseTotal: number } } = {}) {
    this.diff = opts.diff ?? null;
    this.missingNote = opts.missing ?? '';
    this.amount = opts.waited ? (v) => `${duration(v)} waited` : (v) => `${count(v)} samples`;
    const t0 = performance.now();
    this.flatten(root);
    this.timings.layoutMs = performance.now() - t0;
    this.timings.nodes = this.n;

    this.searchInput = h('input', {
      type: 'search',
      placeholder: 'function name or /regex/',
      'aria-label': 'Search functions in the flame graph',
      class: 'flame-search',
      onkeydown: (e: KeyboardEvent) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          this.setSearch(this.searchInput.value);
        } else if (e.key === 'Escape') {
          this.searchInput.value = '';
          this.setSearch('');
        }
      },
      oninput: () => {
        if (this.searchInput.value === '') this.setSearch('');
      },
    });
    this.searchInfo = h('span', { class: 'muted flame-search-info', 'aria-live': 'polite' });
    this.crumb = h('span', { class: 'flame-crumb' });
    this.canvas = h('canvas', {
      class: 'flame-canvas',
      tabindex: '0',
      role: 'application',
      'aria-roledescription': 'flame graph',
      'aria-label': `${opts.title ?? 'Flame graph'}: ${count(this.n)} frames. Arrow keys move between frames, Enter zooms in, Backspace zooms out, Escape resets.`,
    });
    this.tooltip = h('div', { class: 'flame-tooltip', role: 'tooltip', hidden: true });
    this.status = h('div', { class: 'sr-only', 'aria-live': 'polite' });
    this.scroller = h('div', { class: 'flame-scroll' }, this.canvas);
    this.el = h(
      'div',
      { class: 'flame', 'data-nodes': String(this.n), 'data-total': String(this.total) },
      h(
        'div',
        { class: 'flame-toolbar' },
        this.searchInput,
        h('button', { type: 'button', onclick: () => this.setSearch(this.searchInput.value) }, 'Highlight'),
        h('button', { type: 'button', onclick: () => this.zoomTo(0), title: 'Reset zoom (Escape)' }, 'Reset zoom'),
        this.searchInfo,
      ),
      this.crumb,
      h('div', { class: 'flame-body' }, this.scroller, this.tooltip),
      this.status,
    );
    parent.appendChild(this.el);

    const ctx = this.ctx();
    ctx.font = this.font();
    this.charW = ctx.measureText('M').width || 7;

    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => this.setHover(-1, 0, 0));
    this.canvas.addEventListener('click', (e) => {
      const i = this.hit(e.offsetX, e.offsetY);
      if (i >= 0) {
        this.focusNode = i;
        this.zoomTo(i);
      }
    });
    this.canvas.addEventListener('keydown', (e) => this.onKey(e));
    this.canvas.addEventListener('focus', () => {
      if (this.focusNode < 0) this.setFocus(this.zoomNode);
      else this.queueDraw();
    });
    this.canvas.addEventListener('blur', () => this.queueDraw());

    this.zx0 = 0;
    this.zx1 = this.total || 1;
    this.updateCrumb();
    const t1 = performance.now();
    this.draw();
    this.timings.drawMs = performance.now() - t1;
    this.el.dataset.renderMs = (this.timings.layoutMs + this.timings.drawMs).toFixed(1);
    this.ro = new ResizeObserver(() => {
      if (this.scroller.clientWidth !== this.width) this.queueDraw();
    });
    this.ro.observe(this.scroller);
    window.addEventListener('loupe:theme', this.onTheme);
  }

  private readonly onTheme = () => this.queueDraw();

  destroy(): void {
    window.removeEventListener('loupe:theme', this.onTheme);
    this.ro.disconnect();
    this.el.remove();
  }

  // ---- layout ----

  private flatten(root: FlameNode): void {
    const t = flattenTree(root, !!this.diff);
    this.n = t.n;
    this.depth = t.depth;
    this.x = t.x;
    this.val = t.val;
    this.selfv = t.selfv;
    this.parent = t.parent;
    this.nameId = t.nameId;
    this.names = t.names;
    this.byDepth = t.byDepth;
    this.maxDepth = t.maxDepth;
    this.total = t.total;
    this.colorOfName = new Uint8Array(this.names.length);
    for (let k = 0; k < this.names.length; k++) this.colorOfName[k] = paletteIndex(t.kinds[k], hash(this.names[k]));
    if (this.diff && t.base) {
      this.base = t.base;
      this.colorOfNode = new Uint8Array(this.n);
      for (let k = 0; k < this.n; k++) this.colorOfNode[k] = diffClass(this.val[k] / (this.total || 1), t.base[k] / (this.diff.baseTotal || 1));
    }
  }

  // ---- drawing ----

  private ctx(): CanvasRenderingContext2D {
    return this.canvas.getContext('2d', { alpha: true })!;
  }

  private font(): string {
    return '11px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';
  }

  private queueDraw(): void {
    if (this.drawQueued) return;
    this.drawQueued = true;
    requestAnimationFrame(() => {
      this.drawQueued = false;
      this.draw();
    });
  }

  /** Draws the current view. */
  draw(): void {
    const dpr = window.devicePixelRatio || 1;
    const W = Math.max(100, this.scroller.clientWidth);
    this.width = this.scroller.clientWidth;
    const rows = this.maxDepth + 1;
    const H = Math.min(MAX_CANVAS_CSS_HEIGHT, rows * ROW);
    if (this.canvas.width !== Math.round(W * dpr) || this.canvas.height !== Math.round(H * dpr)) {
      this.canvas.width = Math.round(W * dpr);
      this.canvas.height = Math.round(H * dpr);
      this.canvas.style.width = `${W}px`;
      this.canvas.style.height = `${H}px`;
    }
    const ctx = this.ctx();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    const colors = themeColors();

    const zx0 = this.zx0;
    const zx1 = this.zx1;
    const scale = W / (zx1 - zx0 || 1);
    // Frames narrower than half a pixel are not drawn one by one: runs of adjacent narrow
    // frames in a row are merged into one "more frames here" rectangle (highlighted if any of
    // them matches the search), so deep, wide trees still show their shape.
    const minW = 0.5;
    const cap = 1024;
    let rx = new Float64Array(cap);
    let rw = new Float64Array(cap);
    let rd = new Int32Array(cap);
    let rnode = new Int32Array(cap);
    let rb = new Uint8Array(cap);
    let nr = 0;
    const bucketCount = new Int32Array(BUCKETS);
    const push = (x: number, w: number, d: number, node: number, b: number) => {
      if (nr === rx.length) {
        const grow = <T extends Float64Array | Int32Array | Uint8Array>(a: T): T => {
          const g = new (a.constructor as new (n: number) => T)(a.length * 2);
          g.set(a);
          return g;
        };
        rx = grow(rx);
        rw = grow(rw);
        rd = grow(rd);
        rnode = grow(rnode);
        rb = grow(rb);
      }
      if (x < 0) {
        w += x;
        x = 0;
      }
      if (x + w > W) w = W - x;
      rx[nr] = x;
      rw[nr] = w;
      rd[nr] = d;
      rnode[nr] = node;
      rb[nr] = b;
      bucketCount[b]++;
      nr++;
    };
    const matched = this.matchedName;
    const maxRow = Math.min(rows, Math.floor(H / ROW));
    for (let d = 0; d < maxRow; d++) {
      const ids = this.byDepth[d];
      // First node whose right edge is past zx0.
      let lo = 0;
      let hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        const k = ids[mid];
        if (this.x[k] + this.val[k] <= zx0) lo = mid + 1;
        else hi = mid;
      }
      let mStart = -1;
      let mEnd = -1;
      let mHit = false;
      const flush = () => {
        if (mStart < 0) return;
        push(mStart, Math.max(1, mEnd - mStart), d, -1, matched ? (mHit ? HIGHLIGHT : DIMMED) : MERGED);
        mStart = -1;
      };
      for (let j = lo; j < ids.length; j++) {
        const k = ids[j];
        const x = this.x[k];
        if (x >= zx1) break;
        const w = this.val[k] * scale;
        const nid = this.nameId[k];
        const px = (x - zx0) * scale;
        if (w < minW) {
          if (mStart < 0 || px > mEnd + 0.5) {
            flush();
            mStart = px;
            mEnd = px + w;
            mHit = false;
          } else mEnd = px + w;
          if (matched && matched[nid]) mHit = true;
          continue;
        }
        flush();
        const colour = this.colorOfNode ? this.colorOfNode[k] : this.colorOfName[nid];
        push(px, w, d, k, matched ? (matched[nid] ? HIGHLIGHT : DIMMED) : colour);
      }
      flush();
    }
    // Fill by colour: one path per bucket.
    const order = new Int32Array(nr);
    const start = new Int32Array(BUCKETS + 1);
    for (let b = 0; b < BUCKETS; b++) start[b + 1] = start[b] + bucketCount[b];
    const pos = start.slice();
    for (let j = 0; j < nr; j++) order[pos[rb[j]]++] = j;
    for (let b = 0; b < BUCKETS; b++) {
      if (start[b] === start[b + 1]) continue;
      const pal = this.diff ? colors.diff : colors.palette;
      ctx.fillStyle = b === HIGHLIGHT ? colors.highlight : b === DIMMED ? colors.dimmed : b === MERGED ? colors.merged : pal[b];
      ctx.beginPath();
      for (let o = start[b]; o < start[b + 1]; o++) {
        const j = order[o];
        const pw = rw[j];
        ctx.rect(rx[j], rd[j] * ROW, pw > 2 ? pw - 1 : pw, ROW - 1);
      }
      ctx.fill();
    }
    // Labels where they fit.
    ctx.font = this.font();
    ctx.textBaseline = 'middle';
    const cw = this.charW;
    const minLabel = cw * 3 + 6;
    for (let j = 0; j < nr; j++) {
      const k = rnode[j];
      const pw = rw[j];
      if (k < 0 || pw < minLabel) continue;
      const name = this.names[this.nameId[k]];
      const fit = Math.floor((pw - 6) / cw);
      const label = name.length <= fit ? name : name.slice(0, Math.max(1, fit - 1)) + '…';
      ctx.fillStyle = rb[j] === DIMMED ? colors.dimmedText : colors.text;
      ctx.fillText(label, rx[j] + 3, rd[j] * ROW + ROW / 2);
    }
    // Hover and keyboard focus outlines.
    const outline = (k: number, color: string, width: number) => {
      if (k < 0) return;
      const px = Math.max(0, (this.x[k] - zx0) * scale);
      const pe = Math.min(W, (this.x[k] + this.val[k] - zx0) * scale);
      if (pe <= 0 || px >= W) return;
      ctx.strokeStyle = color;
      ctx.lineWidth = width;
      ctx.strokeRect(px + width / 2, this.depth[k] * ROW + width / 2, Math.max(1, pe - px - width), ROW - width);
    };
    outline(this.hoverNode, colors.text, 1);
    if (document.activeElement === this.canvas) outline(this.focusNode, colors.focus, 2);
  }

  // ---- interaction ----

  private hit(mx: number, my: number): number {
    const d = Math.floor(my / ROW);
    if (d < 0 || d > this.maxDepth) return -1;
    const W = this.scroller.clientWidth || 1;
    const vx = this.zx0 + (mx / W) * (this.zx1 - this.zx0);
    const ids = this.byDepth[d];
    let lo = 0;
    let hi = ids.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.x[ids[mid]] <= vx) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0) return -1;
    const k = ids[found];
    return vx < this.x[k] + this.val[k] ? k : -1;
  }

  private onMove(e: MouseEvent): void {
    const k = this.hit(e.offsetX, e.offsetY);
    this.setHover(k, e.offsetX, e.offsetY);
  }

  private describe(k: number): string {
    const name = this.names[this.nameId[k]];
    return `${name}: ${this.amount(this.val[k])} (${percent(this.val[k], this.total)} of all), self ${this.amount(this.selfv[k])}`;
  }

  private setHover(k: number, mx: number, my: number): void {
    if (k !== this.hoverNode) {
      this.hoverNode = k;
      this.queueDraw();
    }
    if (k < 0) {
      this.tooltip.hidden = true;
      return;
    }
    const name = this.names[this.nameId[k]];
    const zoomVal = this.zx1 - this.zx0;
    this.tooltip.replaceChildren(
      h('strong', null, name),
      h('br'),
      `${this.amount(this.val[k])} · ${percent(this.val[k], this.total)} of all`,
      zoomVal < this.total ? ` · ${percent(this.val[k], zoomVal)} of view` : '',
      h('br'),
      `self ${this.amount(this.selfv[k])} (${percent(this.selfv[k], this.total)}) · depth ${this.depth[k]}`,
      this.base && this.diff ? h('br') : '',
      this.base && this.diff ? `baseline ${this.amount(this.base[k])} (${percent(this.base[k], this.diff.baseTotal)}) → ${percent(this.val[k], this.total)} now` : '',
    );
    this.tooltip.hidden = false;
    const body = this.tooltip.parentElement!;
    const bw = body.clientWidth;
    const tw = this.tooltip.offsetWidth;
    const left = Math.min(Math.max(0, mx + 14), Math.max(0, bw - tw - 4));
    const top = my - this.scroller.scrollTop + 18;
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top}px`;
  }

  private setFocus(k: number): void {
    if (k < 0 || k >= this.n) return;
    this.focusNode = k;
    this.status.textContent = this.describe(k);
    // Keep the focused row in view inside the scroller.
    const y = this.depth[k] * ROW;
    const s = this.scroller;
    if (y < s.scrollTop) s.scrollTop = y;
    else if (y + ROW > s.scrollTop + s.clientHeight) s.scrollTop = y + ROW - s.clientHeight;
    // And horizontally inside the zoom: zoom out to the parent range if it left the view.
    if (this.x[k] + this.val[k] <= this.zx0 || this.x[k] >= this.zx1) this.zoomTo(0);
    else this.queueDraw();
  }

  private visibleSibling(k: number, dir: 1 | -1): number {
    const ids = this.byDepth[this.depth[k]];
    let lo = 0;
    let hi = ids.length - 1;
    let idx = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ids[mid] === k) {
        idx = mid;
        break;
      }
      if (this.x[ids[mid]] < this.x[k] || (this.x[ids[mid]] === this.x[k] && ids[mid] < k)) lo = mid + 1;
      else hi = mid - 1;
    }
    if (idx < 0) idx = ids.indexOf(k);
    const W = this.scroller.clientWidth || 1;
    const scale = W / (this.zx1 - this.zx0 || 1);
    for (let j = idx + dir; j >= 0 && j < ids.length; j += dir) {
      const c = ids[j];
      if (this.x[c] >= this.zx1 || this.x[c] + this.val[c] <= this.zx0) return -1;
      if (this.val[c] * scale >= 0.5) return c;
    }
    return -1;
  }

  private heaviestChild(k: number): number {
    // Children follow their parent in pre-order; scan the next depth's nodes inside k's range.
    const d = this.depth[k] + 1;
    if (d > this.maxDepth) return -1;
    const ids = this.byDepth[d];
    let lo = 0;
    let hi = ids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.x[ids[mid]] < this.x[k]) lo = mid + 1;
      else hi = mid;
    }
    let best = -1;
    for (let j = lo; j < ids.length; j++) {
      const c = ids[j];
      if (this.x[c] >= this.x[k] + this.val[k]) break;
      if (this.parent[c] === k && (best < 0 || this.val[c] > this.val[best])) best = c;
    }
    return best;
  }

  private onKey(e: KeyboardEvent): void {
    let k = this.focusNode < 0 ? this.zoomNode : this.focusNode;
    switch (e.key) {
      case 'ArrowUp':
        if (this.parent[k] >= 0) k = this.parent[k];
        break;
      case 'ArrowDown': {
        const c = this.heaviestChild(k);
        if (c >= 0) k = c;
        break;
      }
      case 'ArrowLeft':
      case 'ArrowRight': {
        const s = this.visibleSibling(k, e.key === 'ArrowLeft' ? -1 : 1);
        if (s >= 0) k = s;
        break;
      }
      case 'Home':
        k = this.zoomNode;
        break;
      case 'Enter':
      case ' ':
        e.preventDefault();
        this.zoomTo(k);
        return;
      case 'Backspace':
        e.preventDefault();
        this.zoomTo(Math.max(0, this.parent[this.zoomNode]));
        return;
      case 'Escape':
        this.zoomTo(0);
        return;
      default:
        return;
    }
    e.preventDefault();
    this.setFocus(k);
  }

  /** Zooms into node k's range (0: the whole graph). */
  zoomTo(k: number): void {
    if (k < 0 || k >= this.n) return;
    this.zoomNode = k;
    this.zx0 = this.x[k];
    this.zx1 = this.x[k] + (this.val[k] || 1);
    this.updateCrumb();
    this.setHover(-1, 0, 0);
    this.status.textContent = k === 0 ? 'Zoom reset' : `Zoomed into ${this.describe(k)}`;
    this.queueDraw();
  }

  private updateCrumb(): void {
    const k = this.zoomNode;
    this.el.dataset.zoom = k === 0 ? '' : this.names[this.nameId[k]];
    if (k === 0) {
      this.crumb.textContent = `${this.amount(this.total)} · ${count(this.n)} frames · click a frame to zoom`;
      return;
    }
    const path: number[] = [];
    for (let p = k; p >= 0; p = this.parent[p]) path.unshift(p);
    this.crumb.replaceChildren(
      'Zoomed: ',
      ...path.flatMap((p, i) => [
        i ? ' › ' : '',
        h('button', { type: 'button', class: 'linklike', onclick: () => this.zoomTo(p) }, this.names[this.nameId[p]]),
      ]),
      ` — ${percent(this.val[k], this.total)} of samples`,
    );
  }

  /** Highlights functions whose name contains `term` (case-insensitive) or matches `/regex/`. */
  setSearch(term: string): { frames: number; samples: number } {
    const t = term.trim();
    if (!t) {
      this.matchedName = null;
      this.searchInfo.textContent = '';
      this.el.dataset.matches = '';
      this.queueDraw();
      return { frames: 0, samples: 0 };
    }
    let test: (s: string) => boolean;
    const re = /^\/(.+)\/([a-z]*)$/.exec(t);
    if (re) {
      try {
        const r = new RegExp(re[1], re[2].includes('i') ? 'i' : '');
        test = (s) => r.test(s);
      } catch (e) {
        this.searchInfo.textContent = `bad regex: ${(e as Error).message}`;
        return { frames: 0, samples: 0 };
      }
    } else {
      const lower = t.toLowerCase();
      test = (s) => s.toLowerCase().includes(lower);
    }
    const m = new Uint8Array(this.names.length);
    for (let i = 0; i < this.names.length; i++) m[i] = test(this.names[i]) ? 1 : 0;
    this.matchedName = m;
    // Frames that match, and samples under a match (counted once: topmost matches only).
    let frames = 0;
    let samples = 0;
    const covered = new Uint8Array(this.n);
    for (let k = 0; k < this.n; k++) {
      const p = this.parent[k];
      const hit = m[this.nameId[k]] === 1;
      if (hit) frames++;
      if (hit && (p < 0 || !covered[p])) samples += this.val[k];
      covered[k] = hit || (p >= 0 && covered[p]) ? 1 : 0;
    }
    this.searchInfo.textContent =
      frames === 0 && this.missingNote ? `no drawn frame matches (${this.missingNote})` : `${count(frames)} frames match · ${percent(samples, this.total)} of samples`;
    this.el.dataset.matches = String(frames);
    this.queueDraw();
    return { frames, samples };
  }

  /** Puts `term` in the search box and highlights it. */
  search(term: string): void {
    this.searchInput.value = term;
    this.setSearch(term);
  }
}

/** Classes of change a differential graph is coloured in (0 much less … 10 much more). */
export const DIFF_CLASSES = 11;
const DIFF_MID = 5;

/**
 * The class of a node whose share of the samples went from `before` to `now` (both 0–1): the
 * change relative to the larger share, so a path that doubled reads +50 %, one that is new +100 %,
 * and a tiny path's noise stays near the middle unless it changed by a large part of itself.
 */
export function diffClass(now: number, before: number): number {
  const larger = Math.max(now, before);
  if (larger <= 0) return DIFF_MID;
  const d = (now - before) / larger;
  return Math.max(0, Math.min(DIFF_CLASSES - 1, Math.round(DIFF_MID + d * DIFF_MID)));
}

/** The colours of the classes of change, in the current theme (the legend's swatches). */
export function diffColours(): string[] {
  return themeColors().diff;
}

function hash(s: string): number {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) {
    x ^= s.charCodeAt(i);
    x = Math.imul(x, 16777619);
  }
  return x >>> 0;
}

interface FlameColors {
  palette: string[];
  diff: string[];
  merged: string;
  highlight: string;
  dimmed: string;
  dimmedText: string;
  text: string;
  focus: string;
}

let cached: { key: string; colors: FlameColors } | null = null;

function themeColors(): FlameColors {
  const dark = document.documentElement.dataset.resolvedTheme === 'dark';
  const key = dark ? 'dark' : 'light';
  if (cached && cached.key === key) return cached.colors;
  // The frames' warm hues and their greys are the flame graph's own, generated here: not the
  // page's palette (style.css), of which only the focus outline (the link colour) is used.
  const palette: string[] = [];
  for (let i = 0; i < WARM_SHADES; i++) {
    // Warm hues (red → yellow), as flame graphs are read.
    const hue = 8 + ((i * 37) % 48);
    const sat = 70 + ((i * 7) % 20);
    const light = dark ? 42 + ((i * 5) % 14) : 60 + ((i * 5) % 14);
    palette.push(`hsl(${hue} ${sat}% ${light}%)`);
  }
  // Then each kind of code its own hue, as perf's flame graphs tell the kernel (orange-brown)
  // and JIT code (green) apart; Python blue. Order: framekinds.ts's KINDS.
  for (const [hue, sat] of [[28, 45], [120, 45], [212, 55]]) {
    for (let i = 0; i < KIND_SHADES; i++) {
      const light = dark ? 36 + i * 4 : 62 + i * 4;
      palette.push(`hsl(${hue} ${sat + i * 5}% ${light}%)`);
    }
  }
  // A differential graph's classes, from much less (0, blue) through unchanged (5, grey) to
  // much more (10, red) — the usual reading (red grew, blue shrank).
  const diff: string[] = [];
  for (let c = 0; c < DIFF_CLASSES; c++) {
    const d = (c - DIFF_MID) / DIFF_MID;
    const hue = d > 0 ? 4 : 215;
    const sat = Math.round(8 + 72 * Math.abs(d));
    const light = dark ? 40 + Math.round(8 * (1 - Math.abs(d))) : 78 - Math.round(22 * Math.abs(d));
    diff.push(`hsl(${hue} ${sat}% ${light}%)`);
  }
  const colors: FlameColors = {
    palette,
    diff,
    merged: dark ? 'hsl(25 35% 36%)' : 'hsl(28 45% 78%)',
    highlight: dark ? 'hsl(190 85% 50%)' : 'hsl(195 90% 62%)',
    dimmed: dark ? 'hsl(220 8% 26%)' : 'hsl(220 10% 86%)',
    dimmedText: dark ? 'hsl(220 8% 62%)' : 'hsl(220 8% 40%)',
    // Labels on those hues: not --fg (lighter in the dark theme, for the darker frames).
    text: dark ? '#f4f4f5' : '#1b1b1f',
    focus: themeColor('--link'),
  };
  cached = { key, colors };
  return colors;
}
