// Function probes: the sessions stored (those running at any time in a window, or all), and
// those running on the agent with a stop button. A session opens its own page (views/probe.ts);
// "Start a probe" opens the form (views/probestart.ts).

import { api, apiUrl } from '../api';
import { h } from '../dom';
import { count, duration } from '../format';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { endedText, overlapQuery, targetText } from '../probes';
import type { ProbeList, ProbeListEntry } from '../types';
import { rfc3339, rangeText } from '../time';
import { rangeForm } from '../rangeform';
import { loading, tableWrap } from '../ui';
import { activeTable } from './probestart';


export async function probesView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Probes · Loupe';
  const q = ctx.query;
  const from = q.get('from');
  const to = q.get('to');
  root.append(
    h(
      'div',
      { class: 'title-row' },
      h('h1', null, 'Probes'),
      h('a', { class: 'button primary', href: '#/probes/start', id: 'probe-start-link' }, 'Start a probe…'),
    ),
  );

  root.append(
    rangeForm({
      name: 'probes',
      route: '#/probes',
      query: q,
      placeholders: ['2026-11-23T00:00:00Z', 'now'],
      submit: 'Show sessions',
      after: [h('a', { href: '#/probes', class: 'button' }, 'All')],
    }),
    h(
      'p',
      { class: 'muted small form-note' },
      'Function probes time every call (or 1 in N) of named functions of running processes: ',
      h('code', null, 'loupe probe --pid P --func handle,parse --calls'),
      '. With a window, the sessions running at any time in it (started up to an hour before it); without one, every stored session (at most 1,000). Times: RFC 3339 in UTC, Unix ns, now, or an offset (-1h).',
    ),
  );

  const body = h('div', null, loading('Loading probe sessions…'));
  root.append(body);
  const { query, keep } = overlapQuery(from, to);
  const t0 = performance.now();
  const list = await api<ProbeList>(apiUrl('probes', query), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  window.__loupe.timings.probesFetched = performance.now() - t0;
  body.replaceChildren();

  // Running on the agent (none under `loupe serve`).
  if (list.active.length) {
    body.append(h('section', { 'aria-labelledby': 'probes-active-heading' }, h('h2', { id: 'probes-active-heading' }, 'Running'), activeTable(list.active, ctx.signal)));
  } else if (ctx.health?.mode !== 'agent') {
    body.append(h('p', { class: 'muted small', id: 'probes-serve-note' }, 'This server only serves a store (', h('code', null, 'loupe serve'), '): probes start on a collecting agent, and their sessions show here once stored.'));
  }

  // Newest first.
  const sessions = list.sessions.filter(keep).reverse();
  const range = from || to ? rangeText(from, to) : null;
  body.append(
    h(
      'h2',
      { id: 'probes-sessions-heading' },
      'Sessions',
      h('span', { class: 'muted small' }, ` (${count(sessions.length)}${range ? ` running in ${range}` : ''})`),
    ),
  );
  if (!sessions.length) {
    body.append(h('p', { class: 'muted', id: 'probes-empty' }, range ? 'No probe sessions ran in this window.' : 'No probe sessions stored yet.'));
    return;
  }
  body.append(sessionsTable(sessions));
}

function sessionsTable(sessions: ProbeListEntry[]): HTMLElement {
  return tableWrap(
    h(
      'table',
      { class: 'data compact', id: 'probes-table', 'aria-labelledby': 'probes-sessions-heading' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', { scope: 'col' }, 'Session'),
          h('th', { scope: 'col' }, 'Started (UTC)'),
          h('th', { scope: 'col', class: 'num' }, 'Length'),
          h('th', { scope: 'col' }, 'Target'),
          h('th', { scope: 'col' }, 'Functions'),
          h('th', { scope: 'col', class: 'num' }, 'Calls'),
          h('th', { scope: 'col', class: 'num' }, 'Recorded'),
          h('th', { scope: 'col' }, 'Ended'),
        ),
      ),
      h(
        'tbody',
        null,
        sessions.map((s) => {
          const id = str(s.id);
          const start = str(s.start_unix_ns);
          const length = Number(BigInt(str(s.end_unix_ns)) - BigInt(start));
          return h(
            'tr',
            { 'data-id': id, 'data-calls': String(s.calls), 'data-recorded': String(s.recorded_calls), 'data-ended': s.ended },
            h('th', { scope: 'row' }, h('a', { href: `#/probes/${id}`, 'aria-label': `Probe session ${id}` }, `#${id}`)),
            h('td', { class: 'mono' }, rfc3339(start, 6)),
            h('td', { class: 'num' }, duration(length)),
            h('td', { class: 'mono target' }, targetText(s)),
            h('td', { class: 'mono' }, s.functions.join(', ')),
            h('td', { class: 'num' }, count(s.calls)),
            h('td', { class: 'num' }, s.recorded_calls ? count(s.recorded_calls) : h('span', { class: 'muted' }, '—')),
            h('td', { title: endedText(s.ended) }, s.ended),
          );
        }),
      ),
    ),
    'Probe sessions',
  );
}
