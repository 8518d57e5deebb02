// Overview: the host, whether it collects, lost samples, the store against its cap, and the
// retained days as a calendar and a list.

import { api, metricsText, promValue } from '../api';
import { h } from '../dom';
import { bytes, count, duration } from '../format';
import type { ViewCtx } from '../view';
import type { Day, Stats } from '../types';
import { card, errorBox, kv, loading, tableWrap } from '../ui';

export async function overviewView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Overview · Loupe';
  const health = ctx.health;
  root.append(h('h1', null, 'Overview'));
  const grid = h('div', { class: 'cards' });
  root.append(grid);

  // Host (health needs no token).
  grid.append(
    card(
      'Host',
      health
        ? kv([
            ['hostname', h('strong', { 'data-hostname': health.hostname }, health.hostname)],
            ['version', health.version],
            ['mode', health.mode === 'agent' ? 'agent (collecting)' : 'serve (a store, not collecting)'],
            ['interfaces', health.ifaces.length ? health.ifaces.join(', ') : '—'],
            ['auth', health.auth ? 'on (team tokens)' : 'off (--no-auth, loopback only)'],
            ['uptime', duration(health.uptime_s * 1e9)],
          ])
        : h('p', null, 'The server did not answer /api/v1/health.'),
    ),
  );

  const agentCard = card('Agent', loading());
  const storeCard = card('Store', loading());
  grid.append(agentCard, storeCard);
  const daysSection = h('section', { class: 'days' }, h('h2', null, 'Retained days (UTC)'), loading());
  root.append(daysSection);

  const [stats, days, metrics] = await Promise.allSettled([
    api<Stats>('/api/v1/stats', { signal: ctx.signal }),
    api<Day[]>('/api/v1/days', { signal: ctx.signal }),
    metricsText(ctx.signal),
  ]);
  if (ctx.signal.aborted) return;

  // Agent: collecting = mode; lost samples from /metrics.
  const collecting = health?.mode === 'agent';
  const lost = metrics.status === 'fulfilled' ? promValue(metrics.value, 'loupe_lost_stack_samples') : null;
  const stackSamples = metrics.status === 'fulfilled' ? promValue(metrics.value, 'loupe_stack_samples') : null;
  const invocations = metrics.status === 'fulfilled' ? sumFamily(metrics.value, 'loupe_analysis_invocations_total') : null;
  agentCard.replaceChildren(
    h('h2', null, 'Agent'),
    h('p', null, h('span', { class: `badge ${collecting ? 'ok' : 'idle'}`, 'data-collecting': String(collecting) }, collecting ? 'collecting' : 'not collecting')),
    kv([
      ['interfaces sampled', collecting ? (health?.ifaces.join(', ') || '—') : '— (loupe serve)'],
      ['stack samples kept', stackSamples === null ? '—' : count(stackSamples)],
      ['lost stack samples', lost === null ? '— (/metrics unavailable)' : h('span', { class: lost > 0 ? 'warn-text' : '', 'data-lost': String(lost) }, count(lost))],
      ['analysis invocations', invocations === null ? '—' : count(invocations)],
    ]),
  );

  if (stats.status === 'fulfilled') {
    const s = stats.value;
    const cap = typeof s.max_bytes === 'number' && s.max_bytes > 0 ? s.max_bytes : null;
    storeCard.replaceChildren(
      h('h2', null, 'Store'),
      ...(cap
        ? [h(
            'div',
            { class: 'meter-row' },
            h('meter', { min: '0', max: String(cap), value: String(s.total_bytes), high: String(cap * 0.9), 'aria-label': 'store size against its cap' }),
            h('span', null, `${bytes(s.total_bytes)} of ${bytes(cap)} cap`),
          )]
        : []),
      kv([
        ['size (all stored)', h('strong', { 'data-total-bytes': String(s.total_bytes) }, bytes(s.total_bytes))],
        ['on disk', h('span', { 'data-disk-bytes': String(s.disk_bytes) }, bytes(s.disk_bytes))],
        ['cap', cap ? bytes(cap) : null],
        ['runs', `${count(s.runs)} (${bytes(s.stored_bytes)})`],
        ['stack samples', `${count(s.samples)} in ${count(s.sample_batches)} batches (${bytes(s.sample_bytes)})`],
      ]),
    );
  } else {
    storeCard.replaceChildren(h('h2', null, 'Store'), errorBox(stats.reason));
  }

  if (days.status === 'rejected') {
    daysSection.replaceChildren(h('h2', null, 'Retained days (UTC)'), errorBox(days.reason));
    return;
  }
  const list = days.value;
  daysSection.replaceChildren(h('h2', null, 'Retained days (UTC)'));
  if (!list.length) {
    daysSection.append(h('p', { class: 'muted' }, 'No runs or samples retained yet.'));
    return;
  }
  daysSection.append(calendar(list), dayTable(list));
}

function sumFamily(text: string, name: string): number | null {
  const re = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([-+0-9.eE]+)\\s*$`, 'gm');
  let sum = 0;
  let any = false;
  for (const m of text.matchAll(re)) {
    sum += Number(m[1]);
    any = true;
  }
  return any ? sum : 0;
}

function intervalsText(d: Day): string {
  return Object.entries(d.runs_by_interval)
    .sort((a, b) => Number(a[0]) - Number(b[0]))
    .map(([ns, n]) => `${duration(Number(ns))}: ${count(n)}`)
    .join(' · ');
}

function dayTable(days: Day[]): HTMLElement {
  const rows = [...days].reverse();
  return tableWrap(
    h(
      'table',
      { class: 'data', id: 'days-table' },
      h('caption', { class: 'sr-only' }, 'Retained days'),
      h(
        'thead',
        null,
        h('tr', null, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Runs by interval'), h('th', { scope: 'col', class: 'num' }, 'Runs'), h('th', { scope: 'col', class: 'num' }, 'Run bytes'), h('th', { scope: 'col', class: 'num' }, 'Stack samples'), h('th', { scope: 'col', class: 'num' }, 'Sample bytes'), h('th', { scope: 'col' }, 'Profile')),
      ),
      h(
        'tbody',
        null,
        rows.map((d) =>
          h(
            'tr',
            { 'data-date': d.date },
            h('th', { scope: 'row' }, h('a', { href: `#/day/${d.date}` }, d.date)),
            h('td', null, intervalsText(d) || '—'),
            h('td', { class: 'num' }, count(d.runs)),
            h('td', { class: 'num' }, bytes(d.run_bytes)),
            h('td', { class: 'num' }, count(d.samples)),
            h('td', { class: 'num' }, bytes(d.sample_bytes)),
            h('td', null, d.samples ? h('a', { href: `#/profile?from=${d.day_start_unix_ns}&to=${(BigInt(d.day_start_unix_ns) + 86_400_000_000_000n).toString()}` }, 'profile') : '—'),
          ),
        ),
      ),
    ),
    'Retained days',
  );
}

/** Month grids covering the retained days; retained days are links, shaded by run count. */
function calendar(days: Day[]): HTMLElement {
  const byDate = new Map(days.map((d) => [d.date, d]));
  const months = new Set(days.map((d) => d.date.slice(0, 7)));
  const maxRuns = Math.max(1, ...days.map((d) => d.runs));
  const wrap = h('div', { class: 'calendar' });
  for (const ym of [...months].sort().reverse().slice(0, 6)) {
    const [y, m] = ym.split('-').map(Number);
    const first = new Date(Date.UTC(y, m - 1, 1));
    const daysIn = new Date(Date.UTC(y, m, 0)).getUTCDate();
    const lead = (first.getUTCDay() + 6) % 7; // Monday first
    const cells: HTMLElement[] = [];
    for (let i = 0; i < lead; i++) cells.push(h('span', { class: 'cal-cell empty', 'aria-hidden': 'true' }));
    for (let d = 1; d <= daysIn; d++) {
      const date = `${ym}-${String(d).padStart(2, '0')}`;
      const day = byDate.get(date);
      if (day) {
        const level = Math.ceil((day.runs / maxRuns) * 4);
        cells.push(
          h(
            'a',
            {
              class: `cal-cell has l${level}`,
              href: `#/day/${date}`,
              title: `${date}: ${count(day.runs)} runs, ${count(day.samples)} stack samples`,
              'aria-label': `${date}: ${count(day.runs)} runs, ${count(day.samples)} stack samples`,
            },
            String(d),
          ),
        );
      } else {
        cells.push(h('span', { class: 'cal-cell' }, String(d)));
      }
    }
    wrap.append(
      h(
        'div',
        { class: 'cal-month' },
        h('div', { class: 'cal-title' }, first.toLocaleString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' })),
        h('div', { class: 'cal-grid' }, ...['Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa', 'Su'].map((w) => h('span', { class: 'cal-head', 'aria-hidden': 'true' }, w)), ...cells),
      ),
    );
  }
  return wrap;
}
