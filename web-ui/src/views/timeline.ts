// Application timeline of a window: the programs that logged events in it (events, lost), per
// event its count and lag percentiles, and for one program a canvas of its events (one lane per
// level, each event a bar as long as its lag, coloured by name), with the same window's network
// runs and a link to its profile beside it.

import { api, apiUrl } from '../api';
import { field, h } from '../dom';
import { count, duration } from '../format';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { argsText, capOf, colorSlots, extent, fetchCapped, lagText, offsetText, pad, toColumns, unixNs, type Columns } from '../timeline';
import { SLOTS, TimelineChart } from '../timelinechart';
import type { EventStats, RunListEntry, TimelineEvent, TimelineEventsPage, TimelineSource, TimelineSummary } from '../types';
import { rfc3339, isNs, rangeText } from '../time';
import { quickRanges, rangeForm, setFilter } from '../rangeform';
import { errorBox, kv, loading, tableWrap } from '../ui';

/** How far before the window a run may start and still overlap it (a run of 2,000 × 10 ms is 20 s). */
const RUN_LOOKBACK_NS = 600n * 1_000_000_000n;
/** Rows of the "events in view" table. */
const VIEW_ROWS = 100;


export async function timelineView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Timeline · Loupe';
  const q = ctx.query;
  root.append(h('h1', null, 'Timeline'));

  const pidIn = h('input', { type: 'text', inputmode: 'numeric', id: 'timeline-pid', value: q.get('pid') ?? '', pattern: '\\d*', size: '8' });
  const commIn = h('input', { type: 'text', id: 'timeline-comm', value: q.get('comm') ?? '', size: '14', spellcheck: 'false' });
  const eventIn = h('input', { type: 'text', id: 'timeline-event', value: q.get('event') ?? '', size: '14', spellcheck: 'false' });
  const form = rangeForm({
    name: 'timeline',
    route: '#/timeline',
    query: q,
    placeholders: ['2026-11-23T00:01:00Z', '2026-11-23T00:01:30Z'],
    submit: 'Load timeline',
    fields: [field('PID', pidIn), field('Command', commIn), field('Event', eventIn)],
    filters: (nq) => {
      setFilter(nq, 'pid', pidIn, true);
      setFilter(nq, 'comm', commIn);
      setFilter(nq, 'event', eventIn);
      if (q.get('max')) nq.set('max', q.get('max')!);
    },
    allWhenEmpty: true,
  });
  root.append(
    form,
    h(
      'p',
      { class: 'muted small form-note' },
      'Events that programs log with the timeline library (docs/timeline.md). Times: RFC 3339 in UTC, Unix ns, now, or an offset (-1h). Command and event are exact names.',
    ),
  );

  const from = q.get('from');
  const to = q.get('to');
  if (!from && !to) return quickRanges(root, ctx, '#/timeline', 'Load timeline', (d) => d.date, true);

  const base = { from: from ?? undefined, to: to ?? undefined, comm: q.get('comm') ?? undefined, event: q.get('event') ?? undefined };
  const pidParam = q.get('pid');
  const range = rangeText(from, to);
  const body = h('div', null, loading(`Loading the timeline of ${range}…`));
  root.append(body);

  // Programs and per-event statistics of the window (every program: the list to choose from).
  const summary = await api<TimelineSummary>(apiUrl('timeline', base), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  body.replaceChildren();
  const sources = summary.sources;
  const selected: TimelineSource | undefined = pidParam ? sources.find((s) => String(s.pid) === pidParam) : sources.length === 1 ? sources[0] : undefined;
  const totalEvents = sources.reduce((a, s) => a + s.events, 0);
  const totalLost = sources.reduce((a, s) => a + s.lost, 0);
  const filters = [base.comm && `comm ${base.comm}`, base.event && `event ${base.event}`].filter(Boolean).join(', ');
  body.append(
    h(
      'div',
      { class: 'timeline-summary', 'data-programs': String(sources.length), 'data-events': String(totalEvents), 'data-lost': String(totalLost) },
      kv([
        ['range (UTC)', h('span', { class: 'mono' }, range)],
        ['programs', count(sources.length)],
        ['events', count(totalEvents)],
        ['lost', totalLost ? h('span', { class: 'warn-text' }, count(totalLost)) : '0'],
        ['filters', filters || 'none'],
      ]),
    ),
  );
  if (!sources.length) {
    body.append(h('p', { class: 'muted', id: 'timeline-empty' }, 'No timeline events in this window', filters ? ` with these filters (${filters})` : '', '.'));
    return;
  }

  const hrefWith = (pid: number | string) => {
    const nq = new URLSearchParams(q);
    nq.set('pid', String(pid));
    return `#/timeline?${nq.toString()}`;
  };
  body.append(programsTable(sources, selected?.pid, hrefWith));
  if (pidParam && !selected) {
    body.append(h('p', { class: 'muted', id: 'timeline-empty' }, `No timeline events of pid ${pidParam} in this window; choose a program above.`));
  } else if (!selected) {
    body.append(h('p', { class: 'muted', id: 'timeline-choose' }, 'Choose a program above to see its events on a timeline.'));
  }

  // The event names of the shown program(s), by level then name: their colours (stable per program).
  const stats = selected ? summary.events.filter((e) => e.pid === selected.pid) : summary.events;
  const names = [...new Set(stats.map((e) => e.name))];
  const slots = colorSlots(names, SLOTS);

  let processDone: Promise<void> = Promise.resolve();
  if (selected) {
    const section = h('section', { id: 'timeline-process', 'data-pid': String(selected.pid), 'aria-labelledby': 'timeline-process-heading' });
    body.append(section);
    processDone = processSection(section, ctx, selected, base, names, slots, from, to);
  }
  body.append(statsTable(stats, !selected, selected ? slots : null));
  await processDone;
}

function programsTable(sources: TimelineSource[], selected: number | undefined, hrefWith: (pid: number) => string): HTMLElement {
  return h(
    'section',
    { class: 'timeline-programs', 'aria-labelledby': 'timeline-programs-heading' },
    h('h2', { id: 'timeline-programs-heading' }, 'Programs'),
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'timeline-programs' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            h('th', { scope: 'col' }, 'Program'),
            h('th', { scope: 'col', class: 'num' }, 'PID'),
            h('th', { scope: 'col' }, 'First event (UTC)'),
            h('th', { scope: 'col' }, 'Last event (UTC)'),
            h('th', { scope: 'col', class: 'num' }, 'Events'),
            h('th', { scope: 'col', class: 'num' }, 'Lost'),
            h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Timeline')),
          ),
        ),
        h(
          'tbody',
          null,
          sources.map((s) =>
            h(
              'tr',
              { 'data-pid': String(s.pid), 'data-events': String(s.events), 'data-lost': String(s.lost), class: s.pid === selected ? 'selected' : null, 'aria-current': s.pid === selected ? 'true' : null },
              h('th', { scope: 'row', class: 'mono' }, s.comm),
              h('td', { class: 'num mono' }, String(s.pid)),
              h('td', { class: 'mono' }, rfc3339(str(s.first_unix_ns), 6)),
              h('td', { class: 'mono' }, rfc3339(str(s.last_unix_ns), 6)),
              h('td', { class: 'num' }, count(s.events)),
              h(
                'td',
                { class: 'num' },
                s.lost ? h('span', { class: 'lost-badge', title: 'Records overwritten in the program’s ring before the agent read them' }, `${count(s.lost)} lost`) : '0',
              ),
              h('td', null, s.pid === selected ? h('span', { class: 'muted' }, 'shown below') : h('a', { href: hrefWith(s.pid), 'aria-label': `Show the timeline of ${s.comm} (pid ${s.pid})` }, 'Show timeline')),
            ),
          ),
        ),
      ),
      'Programs with timeline events in the window',
    ),
  );
}

function statsTable(stats: EventStats[], withProgram: boolean, slots: Map<string, number> | null): HTMLElement {
  const lagCell = (v: number | null | undefined) => h('td', { class: 'num', title: v === null || v === undefined ? 'no lag (no earlier event of equal or lower level)' : `${count(v)} ns` }, lagText(v));
  return h(
    'section',
    { class: 'timeline-stats', 'aria-labelledby': 'timeline-stats-heading' },
    h('h2', { id: 'timeline-stats-heading' }, 'Events'),
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'timeline-events' },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            withProgram ? h('th', { scope: 'col' }, 'Program') : null,
            h('th', { scope: 'col' }, 'Event'),
            h('th', { scope: 'col', class: 'num' }, 'Level'),
            h('th', { scope: 'col', class: 'num' }, 'Count'),
            h('th', { scope: 'col', class: 'num' }, 'Lag p50'),
            h('th', { scope: 'col', class: 'num' }, 'Lag p99'),
            h('th', { scope: 'col', class: 'num' }, 'Lag max'),
          ),
        ),
        h(
          'tbody',
          null,
          stats.map((e) =>
            h(
              'tr',
              {
                'data-pid': String(e.pid),
                'data-name': e.name,
                'data-level': String(e.level),
                'data-count': String(e.count),
                'data-lag-p50': e.lag_p50_ns == null ? '' : String(e.lag_p50_ns),
                'data-lag-p99': e.lag_p99_ns == null ? '' : String(e.lag_p99_ns),
                'data-lag-max': e.lag_max_ns == null ? '' : String(e.lag_max_ns),
              },
              withProgram ? h('td', { class: 'mono' }, `${e.comm} (${e.pid})`) : null,
              h('th', { scope: 'row', class: 'mono' }, slots ? swatch(slots.get(e.name) ?? 0) : null, e.name),
              h('td', { class: 'num' }, String(e.level)),
              h('td', { class: 'num' }, count(e.count)),
              lagCell(e.lag_p50_ns),
              lagCell(e.lag_p99_ns),
              lagCell(e.lag_max_ns),
            ),
          ),
        ),
      ),
      'Events: count and lag percentiles',
    ),
    h(
      'p',
      { class: 'muted small table-note' },
      'Lag: the time since the previous event of equal or lower level on the same thread (the lag of a loop’s last event is the iteration). Percentiles within 1.6 %, the maximum exact.',
    ),
  );
}

function swatch(slot: number): HTMLElement {
  return h('span', { class: 'tl-swatch', 'aria-hidden': 'true', style: { background: `var(--tl-${slot})` } });
}

async function processSection(
  section: HTMLElement,
  ctx: ViewCtx,
  src: TimelineSource,
  base: { from?: string; to?: string; comm?: string; event?: string },
  names: string[],
  slots: Map<string, number>,
  from: string | null,
  to: string | null,
): Promise<void> {
  const timings = window.__loupe.timings;
  const cap = capOf(ctx.query.get('max'));
  // The window in exact Unix ns: as asked when given in ns, else the program's events.
  const w0 = isNs(from) ? BigInt(from) : BigInt(str(src.first_unix_ns));
  const w1 = isNs(to) ? BigInt(to) : BigInt(str(src.last_unix_ns)) + 1n;
  const pidQuery = { pid: String(src.pid) };

  const profileLink = h('a', { class: 'button primary', id: 'timeline-profile-link', href: profileHref(w0, w1, src.pid) }, 'Profile of this window');
  const windowLink = h('a', { class: 'button', id: 'timeline-window-link', href: `#/window?from=${w0}&to=${w1}` }, 'Everything in this window');
  const runsBox = h('div', { id: 'timeline-runs', 'aria-live': 'polite' }, loading('Loading runs…'));
  const aside = h(
    'aside',
    { class: 'timeline-aside', 'aria-label': 'The same window' },
    h('h3', null, 'Stack samples'),
    h('p', { class: 'muted small' }, 'What this program ran on the CPUs in the window (or the zoomed range):'),
    profileLink,
    windowLink,
    h('h3', null, 'Network runs'),
    runsBox,
  );
  const main = h('div', { class: 'timeline-main' }, loading(`Loading the events of pid ${src.pid}…`));
  section.append(h('h2', { id: 'timeline-process-heading' }, h('span', { class: 'mono' }, src.comm), ` (pid ${src.pid})`));
  if (src.lost) {
    section.append(
      h(
          'p',
          { class: 'lost-note', role: 'note', id: 'timeline-lost' },
          h('strong', null, `${count(src.lost)} events lost: `),
          'overwritten in the program’s ring before the agent read them, so the timeline has gaps where they were.',
        ),
    );
  }
  section.append(h('div', { class: 'timeline-layout' }, main, aside));

  const runsDone = overlappingRuns(w0, w1, ctx.signal).then(
    (runs) => runsBox.replaceChildren(runsList(runs)),
    (e) => {
      if ((e as Error).name !== 'AbortError') runsBox.replaceChildren(errorBox(e, 'runs'));
    },
  );

  const tFetch = performance.now();
  let fetched;
  try {
    fetched = await fetchCapped<TimelineEvent>(
      (after, limit) => api<TimelineEventsPage>(apiUrl('timeline/events', { ...base, ...pidQuery, limit, after }), { signal: ctx.signal }),
      cap,
    );
  } catch (e) {
    if (ctx.signal.aborted) return;
    main.replaceChildren(errorBox(e, 'events'));
    await runsDone;
    return;
  }
  if (ctx.signal.aborted) return;
  timings.timelineFetched = performance.now() - tFetch;
  timings.timelineEvents = fetched.events.length;
  timings.timelinePages = fetched.pages;
  main.replaceChildren();
  if (!fetched.events.length) {
    main.append(h('p', { class: 'muted', id: 'timeline-empty' }, 'No timeline events in this window.'));
    await runsDone;
    return;
  }

  const tids = [...new Set(fetched.events.map((e) => e.tid))].sort((a, b) => a - b);
  const threadSel = h('select', { id: 'timeline-thread' }, h('option', { value: '' }, `all (${tids.length})`), tids.map((t) => h('option', { value: String(t) }, String(t))));
  const resetBtn = h('button', { type: 'button', id: 'timeline-reset', disabled: true }, 'Reset zoom');
  const viewText = h('span', { class: 'muted small', id: 'timeline-view-range' });
  const holder = h('div', { class: 'tl-holder' });
  const legend = h('ul', { class: 'tl-legend', 'aria-label': 'Event colours' });
  const viewTable = h('tbody');
  const details = h(
    'details',
    { class: 'tl-view-events' },
    h('summary', null, 'Events in view (table)'),
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'timeline-view-table' },
        h(
          'thead',
          null,
          h('tr', null, ...['Time (UTC)', 'Offset', 'Event', 'Level', 'Lag', 'Thread', 'CPU', 'Args'].map((t, i) => h('th', { scope: 'col', class: [1, 3, 4, 5, 6].includes(i) ? 'num' : null }, t))),
        ),
        viewTable,
      ),
      'Events in view',
    ),
  );
  main.append(
    h(
      'div',
      { class: 'filters tl-toolbar' },
      h('label', null, 'Thread ', threadSel),
      resetBtn,
      viewText,
    ),
    holder,
    legend,
  );
  if (fetched.truncated) {
    const last = fetched.events[fetched.events.length - 1];
    const nq = new URLSearchParams(ctx.query);
    nq.set('from', str(last.time_unix_ns));
    main.append(
      h(
        'p',
        { class: 'lost-note', id: 'timeline-cap', role: 'note' },
        h('strong', null, `Showing the first ${count(fetched.events.length)} events`),
        ` of this window (to ${rfc3339(str(last.time_unix_ns))}): the page stops there to stay fast. Narrow the window, choose an event, or `,
        h('a', { href: `#/timeline?${nq.toString()}` }, 'continue from there'),
        '.',
      ),
    );
  }
  main.append(details);

  let chart: TimelineChart | null = null;
  let cols: Columns;
  let full: [number, number];
  let pending = false;
  const fillViewTable = () => {
    if (!chart || !details.open) return;
    const [v0, v1] = chart.view();
    const rows: HTMLElement[] = [];
    for (let i = 0; i < cols.n && rows.length < VIEW_ROWS; i++) {
      if (cols.t[i] < v0 || cols.t[i] > v1) continue;
      const e = cols.events[i];
      rows.push(
        h(
          'tr',
          null,
          // The time opens the event's moment with everything else: its lag (or 1 ms) each side.
          h('td', { class: 'mono' }, h('a', { href: eventWindowHref(str(e.time_unix_ns), e.lag_ns), title: 'Everything at this moment' }, rfc3339(str(e.time_unix_ns)))),
          h('td', { class: 'num mono' }, offsetText(cols.t[i] - full[0])),
          h('th', { scope: 'row', class: 'mono' }, swatch(slots.get(e.name) ?? 0), e.name),
          h('td', { class: 'num' }, String(e.level)),
          h('td', { class: 'num' }, lagText(e.lag_ns)),
          h('td', { class: 'num' }, String(e.tid)),
          h('td', { class: 'num' }, String(e.cpu)),
          h('td', { class: 'mono' }, argsText(e.arg_names, e.args.map((a) => str(a)))),
        ),
      );
    }
    viewTable.replaceChildren(...rows);
  };
  details.addEventListener('toggle', fillViewTable);

  const onView = (v0: number, v1: number, zoomed: boolean) => {
    resetBtn.disabled = !zoomed;
    const span = v1 - v0;
    viewText.textContent = `${zoomed ? 'Zoomed to' : 'Showing'} ${offsetText(v0 - full[0])} → ${offsetText(v1 - full[0])} (${lagText(span)})${zoomed ? '' : ' · drag to zoom'}`;
    if (zoomed) {
      const a = unixNs(cols, Math.floor(v0));
      const b = unixNs(cols, Math.ceil(v1));
      profileLink.href = profileHref(a, b, src.pid);
      profileLink.textContent = 'Profile of the zoomed range';
      windowLink.href = `#/window?from=${a}&to=${b}`;
    } else {
      profileLink.href = profileHref(w0, w1, src.pid);
      profileLink.textContent = 'Profile of this window';
      windowLink.href = `#/window?from=${w0}&to=${w1}`;
    }
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => ((pending = false), fillViewTable()));
    }
  };

  const build = () => {
    chart?.destroy();
    const tid = threadSel.value;
    const events = tid ? fetched.events.filter((e) => String(e.tid) === tid) : fetched.events;
    cols = toColumns(events, names);
    // Names the summary did not list (none, normally) get the next colours.
    for (const n of cols.names) if (!slots.has(n)) slots.set(n, slots.size % SLOTS);
    full = pad(extent(cols));
    const slotOfId = cols.names.map((n) => slots.get(n) ?? 0);
    chart = new TimelineChart(holder, cols, {
      slotOf: (id) => slotOfId[id],
      full,
      onView,
      label: `Timeline of ${src.comm} (pid ${src.pid})${tid ? `, thread ${tid}` : ''}`,
    });
    const inView = new Map<string, number>();
    for (const e of events) inView.set(e.name, (inView.get(e.name) ?? 0) + 1);
    legend.replaceChildren(
      ...cols.names
        .filter((n) => inView.has(n))
        .map((n) => h('li', { 'data-name': n }, swatch(slots.get(n) ?? 0), h('span', { class: 'mono' }, n), h('span', { class: 'muted' }, ` ${count(inView.get(n)!)}`))),
    );
  };
  threadSel.addEventListener('change', build);
  resetBtn.addEventListener('click', () => chart?.reset());
  ctx.onCleanup(() => chart?.destroy());

  build();
  timings.timelineDraw = chart!.lastDrawMs;
  timings.timelineDrawn = performance.now() - ctx.t0;
  holder.dataset.drawnMs = timings.timelineDrawn.toFixed(1);
  await runsDone;
}

/** The window around an event: its lag (or 1 ms when it has none) on each side. */
function eventWindowHref(time: string, lag: number | null | undefined): string {
  const pad = BigInt(Math.max(1_000_000, Math.round(lag ?? 0)));
  return `#/window?from=${BigInt(time) - pad}&to=${BigInt(time) + pad + 1n}`;
}

function profileHref(from: bigint, to: bigint, pid: number): string {
  return `#/profile?from=${from}&to=${to}&pid=${pid}`;
}

/** Runs overlapping [w0, w1): those that started up to RUN_LOOKBACK_NS before it and end after w0. */
async function overlappingRuns(w0: bigint, w1: bigint, signal: AbortSignal): Promise<RunListEntry[]> {
  const lookFrom = w0 > RUN_LOOKBACK_NS ? w0 - RUN_LOOKBACK_NS : 0n;
  const runs = await api<RunListEntry[]>(apiUrl('runs', { from: lookFrom.toString(), to: w1.toString() }), { signal });
  return runs.filter((r) => BigInt(str(r.start_unix_ns)) + BigInt(r.samples) * BigInt(r.interval_ns) > w0);
}

function runsList(runs: RunListEntry[]): HTMLElement {
  if (!runs.length) return h('p', { class: 'muted', id: 'timeline-no-runs' }, 'No network runs overlap this window.');
  return h(
    'ul',
    { class: 'tl-runs' },
    runs.slice(0, 50).map((r) => {
      const id = str(r.id);
      const start = BigInt(str(r.start_unix_ns));
      const end = start + BigInt(r.samples) * BigInt(r.interval_ns);
      return h(
        'li',
        { 'data-run-id': id },
        h('a', { href: `#/run/${id}`, class: 'mono' }, `run ${id}`),
        ` · ${r.iface} · ${count(r.samples)} × ${duration(r.interval_ns)}`,
        h('br'),
        h('span', { class: 'muted small mono' }, `${rfc3339(start, 6).slice(11)} → ${rfc3339(end, 6).slice(11)}`),
      );
    }),
    runs.length > 50 ? h('li', { class: 'muted' }, `and ${count(runs.length - 50)} more`) : null,
  );
}
