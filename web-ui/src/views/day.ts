// A day's runs, filterable by interval and interface, with per-run totals fetched lazily (the
// list has none): the visible page's runs are fetched a few at a time and cached.

import { api, apiUrl, pool } from '../api';
import { h } from '../dom';
import { bytes, count, duration, si } from '../format';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { runTotals, type RunTotals } from '../runstats';
import type { RunListEntry, RunView } from '../types';
import { dayStartNs, NS_PER_DAY, rfc3339 } from '../time';
import { loading, tableWrap } from '../ui';

const PAGE = 50;
const CONCURRENCY = 4;
const totalsCache = new Map<string, RunTotals | Error>();

export async function dayView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  const date = ctx.params[0];
  document.title = `${date} · Loupe`;
  const start = dayStartNs(date);
  if (start === null) throw new Error(`bad date ${date}`);
  const prev = new Date(Date.UTC(+date.slice(0, 4), +date.slice(5, 7) - 1, +date.slice(8, 10) - 1)).toISOString().slice(0, 10);
  const next = new Date(Date.UTC(+date.slice(0, 4), +date.slice(5, 7) - 1, +date.slice(8, 10) + 1)).toISOString().slice(0, 10);
  const end = start + NS_PER_DAY;
  root.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Overview'), ' › ', date),
    h(
      'div',
      { class: 'title-row' },
      h('h1', null, `Runs of ${date} (UTC)`),
      h('a', { href: `#/day/${prev}`, class: 'button' }, '← ', prev),
      h('a', { href: `#/day/${next}`, class: 'button' }, next, ' →'),
      h('a', { href: `#/profile?from=${start}&to=${end}`, class: 'button' }, 'Profile of this day'),
      h('a', { href: `#/timeline?from=${start}&to=${end}`, class: 'button', id: 'day-timeline-link' }, 'Timeline of this day'),
      h('a', { href: `#/window?from=${start}&to=${end}`, class: 'button', id: 'day-window-link' }, 'Everything this day'),
    ),
  );
  const body = h('div', null, loading());
  root.append(body);
  const runs = await api<RunListEntry[]>(apiUrl('runs', { from: start.toString(), to: end.toString() }), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  body.replaceChildren();
  if (!runs.length) {
    body.append(h('p', { class: 'muted' }, 'No runs started on this day.'));
    return;
  }

  const intervals = [...new Set(runs.map((r) => r.interval_ns))].sort((a, b) => a - b);
  const ifaces = [...new Set(runs.map((r) => r.iface))].sort();
  const intervalSel = h(
    'select',
    { id: 'filter-interval' },
    h('option', { value: '' }, 'all'),
    intervals.map((i) => h('option', { value: String(i) }, duration(i))),
  );
  const ifaceSel = h('select', { id: 'filter-iface' }, h('option', { value: '' }, 'all'), ifaces.map((i) => h('option', { value: i }, i)));
  intervalSel.value = ctx.query.get('interval') ?? '';
  ifaceSel.value = ctx.query.get('iface') ?? '';
  let page = Math.max(0, Number(ctx.query.get('page') ?? 0) || 0);
  const summary = h('p', { class: 'muted', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const pager = h('div', { class: 'pager' });

  const filtered = () =>
    runs.filter((r) => (!intervalSel.value || String(r.interval_ns) === intervalSel.value) && (!ifaceSel.value || r.iface === ifaceSel.value));

  const render = () => {
    const rows = filtered();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    const q = new URLSearchParams();
    if (intervalSel.value) q.set('interval', intervalSel.value);
    if (ifaceSel.value) q.set('iface', ifaceSel.value);
    if (page) q.set('page', String(page));
    ctx.setQuery(q);
    const visible = rows.slice(page * PAGE, page * PAGE + PAGE);
    summary.textContent = `${count(rows.length)} of ${count(runs.length)} runs${pages > 1 ? ` · page ${page + 1} of ${pages}` : ''}`;
    tbody.replaceChildren(...visible.map(runRow));
    pager.replaceChildren(
      h('button', { type: 'button', disabled: page === 0, onclick: () => ((page -= 1), render()) }, '← Previous'),
      h('button', { type: 'button', disabled: page >= pages - 1, onclick: () => ((page += 1), render()) }, 'Next →'),
    );
    pager.hidden = pages <= 1;
    void fillTotals(visible, tbody, ctx.signal);
  };
  intervalSel.addEventListener('change', () => ((page = 0), render()));
  ifaceSel.addEventListener('change', () => ((page = 0), render()));

  body.append(
    h('div', { class: 'filters' }, h('label', null, 'Interval ', intervalSel), h('label', null, 'Interface ', ifaceSel), summary),
    tableWrap(
      h(
        'table',
        { class: 'data', id: 'runs-table' },
        h('caption', { class: 'sr-only' }, `Runs of ${date}`),
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            ...['Start (UTC)', 'Run', 'Interface', 'Interval', 'Slots', 'CPUs'].map((t) => h('th', { scope: 'col' }, t)),
            ...['In bytes', 'Out bytes', 'Peak in', 'Peak out', 'CE bytes', 'Retx bytes', 'Bursts', 'Stored'].map((t) => h('th', { scope: 'col', class: 'num' }, t)),
          ),
        ),
        tbody,
      ),
      'Runs',
    ),
    pager,
  );
  render();
}

function runRow(r: RunListEntry): HTMLElement {
  const id = str(r.id);
  return h(
    'tr',
    { 'data-run-id': id },
    h('td', { class: 'mono' }, rfc3339(str(r.start_unix_ns), 6).slice(11)),
    h('th', { scope: 'row' }, h('a', { href: `#/run/${id}`, class: 'mono' }, id)),
    h('td', null, r.iface),
    h('td', null, duration(r.interval_ns)),
    h('td', { class: 'num' }, count(r.samples)),
    h('td', { class: 'num' }, count(r.cpus.length)),
    ...['in', 'out', 'pin', 'pout', 'ce', 'retx', 'bursts'].map((k) => h('td', { class: 'num totals', 'data-k': k }, '…')),
    h('td', { class: 'num' }, bytes(r.stored_bytes)),
  );
}

function showTotals(tr: HTMLElement, t: RunTotals | Error): void {
  const cells = tr.querySelectorAll<HTMLElement>('td.totals');
  if (t instanceof Error) {
    cells.forEach((c, i) => (c.textContent = i === 0 ? 'error' : ''));
    cells[0].title = t.message;
    return;
  }
  const values = [bytes(t.in_bytes), bytes(t.out_bytes), si(t.peak_in_bps, 'bit/s'), si(t.peak_out_bps, 'bit/s'), bytes(t.in_ce_bytes), bytes(t.retx_bytes), count(t.bursts)];
  cells.forEach((c, i) => (c.textContent = values[i]));
  tr.dataset.totalInBytes = String(t.in_bytes);
  tr.dataset.totalOutBytes = String(t.out_bytes);
}

async function fillTotals(visible: RunListEntry[], tbody: HTMLElement, signal: AbortSignal): Promise<void> {
  const rowOf = (id: string) => tbody.querySelector<HTMLElement>(`tr[data-run-id="${id}"]`);
  const missing: RunListEntry[] = [];
  for (const r of visible) {
    const id = str(r.id);
    const cached = totalsCache.get(id);
    const tr = rowOf(id);
    if (cached && tr) showTotals(tr, cached);
    else missing.push(r);
  }
  await pool(missing, CONCURRENCY, async (r) => {
    if (signal.aborted) return;
    const id = str(r.id);
    try {
      const run = await api<RunView>(apiUrl(`runs/${id}`), { signal });
      totalsCache.set(id, runTotals(run.metrics, run.interval_ns));
    } catch (e) {
      if ((e as Error).name === 'AbortError') return;
      totalsCache.set(id, e as Error);
    }
    const tr = rowOf(id);
    if (tr) showTotals(tr, totalsCache.get(id)!);
  });
  if (totalsCache.size > 5000) totalsCache.clear();
}
