// One run: every metric at full resolution (uPlot, shared cursor and zoom), totals, bursts and
// stalls highlighted, a CPUs × time heatmap, and the profile of the same window.

import { api, apiUrl } from '../api';
import { ChartGroup, type Band } from '../charts';
import { h } from '../dom';
import { bytes, count, duration, offset, si } from '../format';
import { Heatmap } from '../heatmap';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { BURST_FACTOR, BURST_FLOOR_BPS, METRIC_INFO, STALL_MIN_SLOTS, bursts, peak, stalls, sum, toRate, unitOf } from '../runstats';
import { METRICS, type MetricName, type RunView } from '../types';
import { addNs, rfc3339, utcDate } from '../time';
import { kv, loading, tableWrap } from '../ui';

export async function runView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  const id = ctx.params[0];
  // `?host=h3`: another host of the fleet, read through this agent (the fleet view's rows).
  const fleetHost = ctx.query.get('host');
  document.title = `Run ${id}${fleetHost ? ` on ${fleetHost}` : ''} · Loupe`;
  const timings = window.__loupe.timings;
  const note = loading(`Loading run ${id}${fleetHost ? ` from ${fleetHost}` : ''}…`);
  root.append(note);
  const url = fleetHost ? apiUrl(`fleet/hosts/${encodeURIComponent(fleetHost)}/runs/${id}`) : apiUrl(`runs/${id}`, { per_cpu: true });
  const run = await api<RunView>(url, { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  const tFetched = performance.now();
  timings.runFetched = tFetched - ctx.t0;
  note.remove();

  const start = str(run.start_unix_ns);
  const dt = run.interval_ns / 1e9;
  const windowNs = BigInt(run.samples) * BigInt(run.interval_ns);
  const end = addNs(start, windowNs);
  const date = utcDate(start);
  const n = run.metrics.in_bytes.length;
  const xs = new Float64Array(n);
  for (let i = 0; i < n; i++) xs[i] = i * dt;
  const xValue = (v: number) => `slot ${count(Math.round(v / dt))} · ${offset(v)}`;

  const b = bursts(run.metrics.in_bytes, run.interval_ns);
  const st = stalls(run.metrics.in_packets);
  const bands: Band[] = [
    ...b.spans.map((s) => ({ from: s.start * dt, to: s.end * dt, kind: 'burst' as const })),
    ...st.map((s) => ({ from: s.start * dt, to: s.end * dt, kind: 'stall' as const })),
  ];
  const totalIn = sum(run.metrics.in_bytes);
  const group = new ChartGroup(`run-${id}`);
  ctx.onCleanup(() => group.destroy());

  const profileHref = `#/profile?from=${start}&to=${end}${fleetHost ? `&host=${encodeURIComponent(fleetHost)}` : ''}`;
  const article = h('article', {
    class: 'run',
    'data-run-id': str(run.id),
    'data-total-bytes': String(totalIn),
    'data-total-in-bytes': String(totalIn),
    'data-total-out-bytes': String(sum(run.metrics.out_bytes)),
    'data-bursts': b.spans.map(slotRange).join(','),
    'data-stalls': st.map(slotRange).join(','),
  });
  root.append(article);
  article.append(
    fleetHost
      ? h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/fleet' }, 'Fleet'), ' › ', fleetHost, ' › ', `run ${id}`)
      : h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Overview'), ' › ', h('a', { href: `#/day/${date}` }, date), ' › ', `run ${id}`),
    h(
      'div',
      { class: 'title-row' },
      h('h1', null, `Run `, h('span', { class: 'mono' }, str(run.id)), ...(fleetHost ? [' on ', h('span', { class: 'mono' }, fleetHost)] : [])),
      h('a', { class: 'button primary', href: profileHref, id: 'profile-link' }, 'Profile of this window'),
      // The timeline and probes are this agent's own; another host's are not read over the fleet.
      ...(fleetHost
        ? []
        : [
            h('a', { class: 'button', href: `#/window?from=${start}&to=${end}`, id: 'window-link' }, 'Everything in this window'),
            h('a', { class: 'button', href: `#/timeline?from=${start}&to=${end}`, id: 'timeline-link' }, 'Timeline of this window'),
            h('a', { class: 'button', href: `#/probes?from=${start}&to=${end}`, id: 'probes-link' }, 'Probes in this window'),
          ]),
      h('button', { type: 'button', onclick: () => group.resetZoom() }, 'Reset zoom'),
    ),
    kv([
      ['interface', run.iface],
      ['host', run.rack ? `${run.host} (rack ${run.rack})` : run.host],
      ['window (UTC)', h('span', { class: 'mono' }, `${rfc3339(start)} → ${rfc3339(end)}`)],
      ['slots', `${count(run.samples)} × ${duration(run.interval_ns)} = ${duration(Number(windowNs))}`],
      ['CPUs', run.cpus.join(', ')],
      ['local prefixes', run.local_prefixes.length ? run.local_prefixes.join(', ') : '—'],
      ['source', run.source],
    ]),
  );

  // Totals per metric.
  article.append(
    h('h2', null, 'Totals'),
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'run-totals' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Metric'), ...['Total', 'Mean', 'Peak', 'Peak at'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
        h(
          'tbody',
          null,
          METRICS.map((m) => {
            const info = METRIC_INFO[m];
            const vals = run.metrics[m];
            const total = sum(vals);
            const p = peak(vals);
            const f = info.kind === 'bytes' ? 8 / dt : info.kind === 'packets' ? 1 / dt : 1;
            const unit = unitOf(info.kind);
            return h(
              'tr',
              { 'data-metric': m, 'data-total': String(total) },
              h('th', { scope: 'row' }, info.title, h('span', { class: 'muted mono' }, ` ${m}`)),
              h('td', { class: 'num' }, info.kind === 'bytes' ? bytes(total) : info.kind === 'packets' ? count(total) : `max ${count(p.value)}`),
              h('td', { class: 'num' }, si((total / Math.max(1, vals.length)) * f, unit)),
              h('td', { class: 'num' }, si(p.value * f, unit)),
              h('td', { class: 'num' }, p.slot >= 0 && p.value > 0 ? xValue(p.slot * dt) : '—'),
            );
          }),
        ),
      ),
      'Totals per metric',
    ),
  );

  // Bursts and stalls.
  const spanList = (title: string, spans: typeof b.spans, describe: (s: (typeof b.spans)[number]) => string, cls: string) =>
    h(
      'div',
      { class: `spans ${cls}` },
      h('h3', null, title, ` (${spans.length})`),
      spans.length
        ? h(
            'ul',
            null,
            spans.slice(0, 50).map((s) =>
              h(
                'li',
                null,
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'linklike',
                    onclick: () => {
                      const pad = Math.max(5, (s.end - s.start) * 4) * dt;
                      group.charts[0]?.setScale('x', { min: Math.max(0, s.start * dt - pad), max: Math.min(xs[n - 1], s.end * dt + pad) });
                    },
                  },
                  s.end - s.start > 1 ? `slots ${s.start}–${s.end - 1}` : `slot ${s.start}`,
                ),
                ` · ${offset(s.start * dt)} · ${describe(s)}`,
                // What else happened then: the span and as much again each side, on one axis.
                fleetHost
                  ? null
                  : h(
                      'a',
                      {
                        class: 'window-at',
                        href: `#/window?from=${addNs(start, BigInt(Math.max(0, s.start - (s.end - s.start))) * BigInt(run.interval_ns))}&to=${addNs(start, BigInt(s.end + (s.end - s.start)) * BigInt(run.interval_ns))}`,
                      },
                      ' · everything then',
                    ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'none'),
    );
  article.append(
    h(
      'section',
      { class: 'findings' },
      spanList('Bursts', b.spans, (s) => `peak ${si((s.peak * 8) / dt, 'bit/s')} (${bytes(s.peak)}/slot)`, 'bursts'),
      spanList('Ingress stalls', st, (s) => `${s.end - s.start} slots without ingress packets`, 'stalls'),
      h(
        'p',
        { class: 'muted small' },
        `Burst: a slot whose ingress is above ${BURST_FACTOR}× the run's typical busy slot (the median of the ${count(b.busy)} slots with ingress: ${bytes(b.baseline)}) and above ${si(BURST_FLOOR_BPS, 'bit/s')} — threshold ${bytes(b.threshold)}/slot. `,
        `Stall: ≥ ${STALL_MIN_SLOTS} consecutive slots without ingress packets while the median slot has some. Both are shaded in the charts; click one to zoom.`,
      ),
    ),
  );

  // Charts: all metrics, full resolution, one group (shared cursor and zoom).
  const grid = h('div', { class: 'chart-grid', id: 'run-charts' });
  article.append(h('h2', null, 'Series ', h('span', { class: 'muted small' }, `(${count(n)} points each; drag to zoom, double-click to reset)`)), grid);
  const cells = METRICS.map((m) => {
    const plot = h('div', { class: 'chart-plot' });
    const info = METRIC_INFO[m];
    grid.append(h('figure', { class: 'chart', 'data-metric': m }, h('figcaption', null, info.title, h('span', { class: 'muted' }, ` (${unitOf(info.kind)})`)), plot));
    return { m, plot };
  });
  const width = Math.floor(cells[0].plot.clientWidth) || 600;
  for (const { m, plot } of cells) {
    const info = METRIC_INFO[m];
    group.add(plot, { title: info.title, xs, series: [{ label: m, unit: unitOf(info.kind), values: toRate(run.metrics[m], info.kind, run.interval_ns) }], height: 140, xValue, bands }, width);
  }
  group.seal();
  group.autoResize((u) => u.root.parentElement!);

  // Per-CPU heatmap.
  if (run.per_cpu && run.per_cpu.length) {
    const perCpu = run.per_cpu;
    const metricSel = h('select', { id: 'heatmap-metric', 'aria-label': 'Heatmap metric' }, METRICS.map((m) => h('option', { value: m }, m)));
    metricSel.value = 'in_bytes';
    const holder = h('div', { class: 'heatmap-holder' });
    article.append(
      h(
        'section',
        { class: 'heatmap-section' },
        h('div', { class: 'title-row' }, h('h2', null, 'Per CPU'), h('label', null, 'Metric ', metricSel)),
        h('p', { class: 'muted small' }, 'Rows are CPUs, columns time (the charts\u2019 zoom); colour is a log scale of the largest slot, blank is zero — a stalled queue shows as one CPU going blank while others carry on.'),
        holder,
      ),
    );
    const rowsOf = (m: MetricName) => perCpu.map((c) => ({ label: `CPU ${c.cpu}`, values: c.metrics[m] }));
    const describe = (m: MetricName) => (v: number) => {
      const kind = METRIC_INFO[m].kind;
      return kind === 'bytes' ? `${bytes(v)} (${si((v * 8) / dt, 'bit/s')})` : kind === 'packets' ? `${count(v)} packets` : `${count(v)} connections`;
    };
    let heat = new Heatmap(holder, rowsOf('in_bytes'), { slotSeconds: dt, unit: 'in_bytes', xValue, describe: describe('in_bytes') });
    metricSel.addEventListener('change', () => {
      const m = metricSel.value as MetricName;
      heat.destroy();
      heat = new Heatmap(holder, rowsOf(m), { slotSeconds: dt, unit: m, xValue, describe: describe(m) });
      const sx = group.charts[0]?.scales.x;
      if (sx?.min != null && sx.max != null) heat.setRange(sx.min, sx.max + dt);
    });
    group.onScale = (min, max) => heat.setRange(min, max + dt);
    ctx.onCleanup(() => heat.destroy());
  }

  await group.drawn;
  const tDrawn = performance.now();
  timings.runDrawn = tDrawn - ctx.t0;
  timings.runRender = tDrawn - tFetched;
  article.dataset.drawnMs = timings.runDrawn.toFixed(1);
}

/** `100-109`, or `1999` for one slot. */
function slotRange(s: { start: number; end: number }): string {
  return s.end - s.start > 1 ? `${s.start}-${s.end - 1}` : String(s.start);
}
