// One probe session: what was probed and how (target, window, sampling, the probes' bias, why
// it ended, notes), per function its calls, calls/s, timed calls and bias-corrected percentiles,
// each function's latency histogram (log-scaled, one x axis for all), and the slowest calls as
// small call trees.

import { api, apiUrl } from '../api';
import { callTrees } from '../calltree';
import { h } from '../dom';
import { count, duration } from '../format';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { Histogram } from '../probehist';
import { endedText, histDomain, rateText, targetText } from '../probes';
import { lagText } from '../timeline';
import type { ProbeFunction, ProbeView } from '../types';
import { rfc3339 } from '../time';
import { kv, loading, tableWrap } from '../ui';

export async function probeView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  const id = ctx.params[0];
  document.title = `Probe session ${id} · Loupe`;
  const timings = window.__loupe.timings;
  const note = loading(`Loading probe session ${id}…`);
  root.append(note);
  const s = await api<ProbeView>(apiUrl(`probes/${id}`), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  const tFetched = performance.now();
  timings.probeFetched = tFetched - ctx.t0;
  note.remove();

  const start = str(s.start_unix_ns);
  const end = str(s.end_unix_ns);
  const lengthNs = Number(BigInt(end) - BigInt(start));
  const pidParam = s.pids.length === 1 ? `&pid=${s.pids[0]}` : '';
  const again = new URLSearchParams();
  if (s.pids.length) again.set('pid', s.pids.join(','));
  else if (s.binary) again.set('binary', s.binary);
  again.set('functions', s.functions.map((f) => f.name).join(','));
  if (s.sample_every > 1) again.set('sample', String(s.sample_every));

  const article = h('article', { class: 'probe-session', 'data-id': str(s.id), 'data-recorded': String(s.calls_recorded) });
  root.append(article);
  article.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/probes' }, 'Probes'), ' › ', `session ${str(s.id)}`),
    h(
      'div',
      { class: 'title-row' },
      h('h1', null, 'Probe session ', h('span', { class: 'mono' }, str(s.id))),
      h('a', { class: 'button', href: `#/window?from=${start}&to=${end}`, id: 'probe-window-link' }, 'Everything in this window'),
      h('a', { class: 'button', href: `#/profile?from=${start}&to=${end}${pidParam}`, id: 'probe-profile-link' }, 'Profile of this window'),
      h('a', { class: 'button', href: `#/timeline?from=${start}&to=${end}${pidParam}`, id: 'probe-timeline-link' }, 'Timeline of this window'),
      h('a', { class: 'button', href: `#/probes/start?${again.toString()}`, id: 'probe-again-link' }, 'Probe again…'),
    ),
    kv([
      ['target', h('span', { class: 'mono' }, targetText(s))],
      ['window (UTC)', h('span', { class: 'mono' }, `${rfc3339(start, 6)} → ${rfc3339(end, 6)}`)],
      ['length', duration(lengthNs)],
      ['ended', `${s.ended} — ${endedText(s.ended)}`],
      ['timed', s.sample_every > 1 ? `1 in ${count(s.sample_every)} outermost calls, with all their callees` : 'every call'],
      ['probes’ bias', s.bias_ns ? `${lagText(s.bias_ns)} per call, subtracted from the percentiles` : 'not calibrated (0)'],
      ['calls recorded', s.calls_recorded ? `${count(s.calls_recorded)}${s.calls_lost ? ` (${count(s.calls_lost)} lost)` : ''}` : 'none (counts and histograms only)'],
    ]),
  );
  if (s.notes.length) {
    article.append(
      h(
        'div',
        { class: 'lost-note probe-notes', role: 'note', id: 'probe-notes' },
        h('strong', null, s.notes.length === 1 ? 'Note' : 'Notes'),
        h('ul', null, s.notes.map((n) => h('li', null, n))),
      ),
    );
  }

  article.append(h('h2', { id: 'probe-functions-heading' }, 'Functions'), functionsTable(s.functions, s.bias_ns));

  // Histograms: one x axis (log) for all, so their shapes and positions compare.
  const tHist = performance.now();
  const domain = histDomain(s.functions.map((f) => f.histogram));
  const grid = h('div', { class: 'hist-grid', id: 'probe-histograms' });
  article.append(
    h('h2', null, 'Latency histograms'),
    h('p', { class: 'muted small' }, `Timed calls by measured duration (the probes’ ${lagText(s.bias_ns)} included) on a log scale shared by the functions; each bar one of the probes’ buckets (1/16 of an octave), as tall as its calls per width on this scale. Hover, or focus one and use ←/→, to read a bucket’s calls.`),
    grid,
  );
  const hists: Histogram[] = [];
  let histDraw = 0;
  for (const f of s.functions) {
    const fig = h(
      'figure',
      { class: 'hist-card', 'data-function': f.name },
      h('figcaption', null, h('span', { class: 'mono' }, f.name), h('span', { class: 'muted' }, ` · ${count(f.timed)} timed`)),
    );
    grid.append(fig);
    if (!f.histogram.length) {
      fig.append(h('p', { class: 'muted small' }, 'No timed calls.'));
      continue;
    }
    const hist = new Histogram(fig, f.histogram, domain, `Latency histogram of ${f.name}: ${count(f.timed)} timed calls, p50 ${lagText(f.p50_ns)}, p99 ${lagText(f.p99_ns)}, max ${lagText(f.max_ns)}`);
    histDraw += hist.lastDrawMs;
    hists.push(hist);
  }
  ctx.onCleanup(() => hists.forEach((x) => x.destroy()));
  timings.probeHistograms = performance.now() - tHist;
  timings.probeHistDraw = histDraw;

  // The slowest calls.
  const trees = h('div', { class: 'call-trees', id: 'probe-slowest' });
  article.append(h('h2', null, 'Slowest calls'), trees);
  if (s.slowest.length) {
    trees.append(
      h(
        'p',
        { class: 'muted small' },
        `The ${count(s.slowest.length)} slowest outermost recorded calls, slowest first, each with its probed callees: total time, self time (less its recorded callees’), and its share of the call. The slowest of each call’s children is marked `,
        h('span', { class: 'heaviest-badge' }, 'heaviest'),
        '.',
      ),
    );
    timings.probeTreeRows = callTrees(trees, s.slowest, start);
  } else {
    trees.append(
      h(
        'p',
        { class: 'muted', id: 'probe-no-calls' },
        s.calls_recorded ? 'No outermost calls were recorded.' : 'This session recorded no calls (it ran without ',
        s.calls_recorded ? null : h('code', null, '--calls'),
        s.calls_recorded ? null : '), so there are no call trees; the counts and histograms above are complete.',
      ),
    );
    timings.probeTreeRows = 0;
  }
  timings.probeDrawn = performance.now() - ctx.t0;
  timings.probeRender = performance.now() - tFetched;
  article.dataset.drawnMs = timings.probeDrawn.toFixed(1);
}

function functionsTable(functions: ProbeFunction[], bias: number): HTMLElement {
  const pct = (v: number | null | undefined) => h('td', { class: 'num', title: v == null ? 'no timed calls' : `${count(v)} ns` }, lagText(v));
  const data = (v: number | null | undefined) => (v == null ? '' : String(v));
  return h(
    'div',
    null,
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'probe-functions', 'aria-labelledby': 'probe-functions-heading' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            h('th', { scope: 'col' }, 'Function'),
            ...['Calls', 'Calls/s', 'Timed', 'p50', 'p90', 'p99', 'Max'].map((t) => h('th', { scope: 'col', class: 'num' }, t)),
          ),
        ),
        h(
          'tbody',
          null,
          functions.map((f) =>
            h(
              'tr',
              {
                'data-function': f.name,
                'data-calls': String(f.calls),
                'data-calls-per-s': String(f.calls_per_s),
                'data-timed': String(f.timed),
                'data-p50': data(f.p50_ns),
                'data-p90': data(f.p90_ns),
                'data-p99': data(f.p99_ns),
                'data-max': String(f.max_ns),
              },
              h('th', { scope: 'row', class: 'mono', title: `${f.symbol} in ${f.binary} at 0x${BigInt(str(f.address)).toString(16)}${f.probe_offset ? ` + ${f.probe_offset}` : ''}` }, f.name),
              h('td', { class: 'num' }, count(f.calls)),
              h('td', { class: 'num' }, rateText(f.calls_per_s)),
              h('td', { class: 'num' }, count(f.timed)),
              pct(f.p50_ns),
              pct(f.p90_ns),
              pct(f.p99_ns),
              h('td', { class: 'num', title: `${count(f.max_ns)} ns` }, lagText(f.max_ns)),
            ),
          ),
        ),
      ),
      'Probed functions: calls and latency percentiles',
    ),
    h(
      'p',
      { class: 'muted small table-note' },
      `Calls: every call, timed or not (exact). Timed: the calls the figures come from. Percentiles within ±3.2 %, less the probes’ own ${lagText(bias)} per call; max exact, as measured.`,
    ),
  );
}
