// What changed against a baseline (`GET /api/v1/profile/diff`) as a page section: the
// differential flame graph (the selection's shape, each frame coloured by how its share of the
// samples changed), its legend, the functions only one side has, and the functions by change.
// Users found diffs without a legend confusing: the legend says which colour is more, and that
// both sides are shares of their own samples (so a busier baseline does not read as "less").

import { h } from './dom';
import { DIFF_CLASSES, FlameGraph, diffColours } from './flame';
import { count, percent } from './format';
import type { ProfileDiff } from './types';
import { tableWrap } from './ui';

/** Percentage points, signed: `+25.0 pp`. */
function pp(share: number): string {
  const v = share * 100;
  return `${v >= 0 ? '+' : '−'}${Math.abs(v).toFixed(1)} pp`;
}

function legend(onDestroy: (f: () => void) => void): HTMLElement {
  const swatches = Array.from({ length: DIFF_CLASSES }, () => h('span', { class: 'diff-swatch' }));
  const paint = () => diffColours().forEach((c, i) => (swatches[i].style.background = c));
  paint();
  window.addEventListener('loupe:theme', paint);
  onDestroy(() => window.removeEventListener('loupe:theme', paint));
  return h(
    'div',
    { class: 'diff-legend', id: 'diff-legend' },
    h('span', null, 'less'),
    h('span', { class: 'diff-scale', 'aria-hidden': 'true' }, ...swatches),
    h('span', null, 'more'),
    h(
      'span',
      { class: 'muted small' },
      ' — a frame is red when it holds a larger share of the selection’s samples than of the baseline’s, blue when smaller, grey when the same; each side is normalized by its own total samples.',
    ),
  );
}

/** The diff's section; `onDestroy` receives what to release when the page changes. */
export function diffSection(d: ProfileDiff, title: string, onDestroy: (f: () => void) => void): HTMLElement {
  const el = h('section', { class: 'diff', id: 'window-diff', 'data-samples': String(d.samples), 'data-base-samples': String(d.base_samples) });
  el.append(
    h('h3', null, title),
    h('p', { class: 'muted' }, `${count(d.samples)} samples in the selection, ${count(d.base_samples)} in the baseline.`),
    legend(onDestroy),
  );
  if (!d.samples) {
    el.append(h('p', { class: 'empty' }, 'No samples in the selection to compare.'));
    return el;
  }
  const graph = h('div', { class: 'diff-flame' });
  el.append(graph);
  const fg = new FlameGraph(graph, d.flamegraph, { title: 'Differential flame graph', diff: { baseTotal: d.base_samples } });
  onDestroy(() => fg.destroy());
  const list = (id: string, label: string, names: string[]) =>
    h(
      'div',
      { class: 'diff-only', id },
      h('h4', null, `${label} (${names.length})`),
      names.length ? h('ul', { class: 'mono small' }, ...names.slice(0, 50).map((n) => h('li', null, n))) : h('p', { class: 'muted small' }, 'none'),
      names.length > 50 ? h('p', { class: 'muted small' }, `… and ${names.length - 50} more`) : null,
    );
  el.append(h('div', { class: 'diff-lists' }, list('diff-new', 'Only in the selection (new)', d.new), list('diff-gone', 'Only in the baseline (gone)', d.gone)));
  const rows = d.functions.slice(0, 40).map((f) =>
    h(
      'tr',
      { 'data-function': f.name },
      h('td', { class: 'mono' }, f.name),
      h('td', { class: 'num' }, `${percent(f.base_self, d.base_samples)} → ${percent(f.self, d.samples)}`),
      h('td', { class: `num ${f.self_change > 0 ? 'more' : f.self_change < 0 ? 'less' : ''}` }, pp(f.self_change)),
      h('td', { class: 'num' }, `${percent(f.base_total, d.base_samples)} → ${percent(f.total, d.samples)}`),
      h('td', { class: `num ${f.total_change > 0 ? 'more' : f.total_change < 0 ? 'less' : ''}` }, pp(f.total_change)),
      h('td', { class: 'num' }, f.total_ratio == null ? (f.base_total ? 'gone' : 'new') : `${f.total_ratio.toFixed(2)}×`),
    ),
  );
  el.append(
    h('h4', null, 'Functions by change'),
    tableWrap(
      h(
        'table',
        { class: 'data', id: 'diff-table' },
        h(
          'thead',
          null,
          h('tr', null, h('th', null, 'function'), h('th', null, 'self share'), h('th', null, 'self change'), h('th', null, 'total share'), h('th', null, 'total change'), h('th', null, 'total now / before')),
        ),
        h('tbody', null, ...rows),
      ),
      'Functions by change of their share',
    ),
  );
  return el;
}
