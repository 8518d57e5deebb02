// Profile of a time range: flame graph (search, zoom), libraries (each module's share), top
// functions, filters, pprof download.

import { api, apiUrl } from '../api';
import { field, h } from '../dom';
import { count, duration, percent } from '../format';
import { FlameGraph } from '../flame';
import { barWidth, moduleShares } from '../modules';
import type { ViewCtx } from '../view';
import type { FunctionCount, ModuleCount, Profile } from '../types';
import { rangeText } from '../time';
import { quickRanges, rangeForm, setFilter } from '../rangeform';
import { downloadLink, kv, loading, tableWrap } from '../ui';

/**
 * The share of the samples below which a flame-graph node is left out of the fetched profile:
 * a fifth of a pixel on a 2,000-pixel-wide graph. The day-long 323,302-node profile of the
 * browser tests was 15 MB of JSON, most of it nodes nobody could see.
 */
export const MIN_SHARE = 0.0001;

export async function profileView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Profile · Loupe';
  const q = ctx.query;
  const timings = window.__loupe.timings;
  // `?host=h3`: another host of the fleet, its stacks read through this agent (range only).
  const fleetHost = q.get('host');
  if (fleetHost) return remoteProfile(root, ctx, fleetHost);
  root.append(h('h1', null, 'Profile'));

  const pidIn = h('input', { type: 'text', inputmode: 'numeric', id: 'profile-pid', value: q.get('pid') ?? '', list: 'pid-list', pattern: '\\d*', size: '8' });
  const pidList = h('datalist', { id: 'pid-list' });
  const commIn = h('input', { type: 'text', id: 'profile-comm', value: q.get('comm') ?? '', size: '12', spellcheck: 'false' });
  const cpuIn = h('input', { type: 'text', inputmode: 'numeric', id: 'profile-cpu', value: q.get('cpu') ?? '', pattern: '\\d*', size: '5' });
  const idleIn = h('input', { type: 'checkbox', id: 'profile-idle', checked: q.get('idle') === 'true' });
  const offCpuIn = h('input', { type: 'checkbox', id: 'profile-off-cpu', checked: q.get('kind') === 'off_cpu' });
  const form = rangeForm({
    name: 'profile',
    route: '#/profile',
    query: q,
    placeholders: ['2026-11-23T00:01:00Z', '2026-11-23T00:01:30Z'],
    submit: 'Load profile',
    fields: [
      field('PID', pidIn),
      field('Command', commIn),
      field('CPU', cpuIn),
      h('label', { class: 'field check' }, idleIn, ' include idle'),
      h('label', { class: 'field check', title: 'Where threads waited (sleep, lock, pipe, disk), weighed by how long: an agent run with --off-cpu' }, offCpuIn, ' waits off the CPU'),
    ],
    after: [pidList],
    filters: (nq) => {
      setFilter(nq, 'pid', pidIn, true);
      setFilter(nq, 'comm', commIn);
      setFilter(nq, 'cpu', cpuIn, true);
      if (idleIn.checked) nq.set('idle', 'true');
      if (offCpuIn.checked) nq.set('kind', 'off_cpu');
    },
    allWhenEmpty: true,
  });
  root.append(form, h('p', { class: 'muted small form-note' }, 'Times: RFC 3339 in UTC (2026-11-23T00:01:00Z), Unix ns, now, or an offset (-1h). Idle CPUs are left out unless included.'));

  const from = q.get('from');
  const to = q.get('to');
  if (!from && !to) return quickRanges(root, ctx, '#/profile', 'Load profile', (d) => (d.samples > 0 ? `${d.date} (${count(d.samples)} samples)` : null));

  const query = {
    from: from ?? undefined,
    to: to ?? undefined,
    pid: q.get('pid') ?? undefined,
    comm: q.get('comm') ?? undefined,
    cpu: q.get('cpu') ?? undefined,
    idle: q.get('idle') === 'true' ? 'true' : undefined,
    kind: q.get('kind') === 'off_cpu' ? 'off_cpu' : undefined,
  };
  const range = rangeText(from, to);
  const body = h('div', null, loading(`Loading the profile of ${range}…`));
  root.append(body);

  void api<number[]>(apiUrl('pids', { from: query.from, to: query.to }), { signal: ctx.signal })
    .then((pids) => pidList.replaceChildren(...pids.slice(0, 500).map((p) => h('option', { value: String(p) }))))
    .catch(() => undefined);

  // Nodes too narrow to see are left out server-side unless `?all=true` asks for every one.
  const everyNode = q.get('all') === 'true';
  const t0 = performance.now();
  const profile = await api<Profile>(apiUrl('profile', { ...query, min_share: everyNode ? undefined : String(MIN_SHARE) }), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  timings.profileFetched = performance.now() - t0;
  body.replaceChildren();

  const pprofUrl = apiUrl('profile/pprof', query);
  const dlError = h('div');
  const pprofLink = downloadLink(pprofUrl, 'loupe.pb.gz', 'Download pprof', 'pprof-download', dlError);
  const waited = profile.kind === 'off_cpu';
  const filters = [query.pid && `pid ${query.pid}`, query.comm && `comm ${query.comm}`, query.cpu && `cpu ${query.cpu}`, waited ? '' : query.idle ? 'idle included' : 'idle excluded'];
  body.append(
    h(
      'div',
      { class: 'profile-summary', 'data-samples': String(profile.samples), 'data-lost': String(profile.lost), 'data-kind': profile.kind ?? 'on_cpu', 'data-waited': waited ? String(profile.flamegraph.value) : '' },
      kv(
        waited
          ? [
              ['range (UTC)', h('span', { class: 'mono' }, range)],
              ['waits off the CPU', count(profile.samples)],
              ['time waited', h('span', { id: 'time-waited' }, duration(profile.flamegraph.value))],
              ['whole stacks', wholeStacks(profile)],
              ['filters', filters.filter(Boolean).join(', ') || 'none'],
            ]
          : [
              ['range (UTC)', h('span', { class: 'mono' }, range)],
              ['samples', count(profile.samples)],
              ['lost', profile.lost ? h('span', { class: 'warn-text' }, count(profile.lost)) : '0'],
              ['whole stacks', wholeStacks(profile)],
              ['filters', filters.filter(Boolean).join(', ')],
            ],
      ),
      pprofLink,
    ),
    dlError,
  );
  if (!profile.samples) {
    const none = waited ? 'No waits off the CPU in this range with these filters (they are sampled by an agent run with --off-cpu).' : 'No stack samples in this range with these filters.';
    body.append(h('p', { class: 'muted', id: 'profile-empty' }, none));
    return;
  }
  const flameSection = h('section', { class: 'flame-section' }, h('h2', null, 'Flame graph'));
  const pruned = profile.pruned_nodes ?? 0;
  if (pruned > 0) {
    const all = new URLSearchParams(q);
    all.set('all', 'true');
    flameSection.append(
      h(
        'p',
        { class: 'muted small', id: 'flame-pruned' },
        `${count(pruned)} call paths with under ${MIN_SHARE * 100} % of the samples each are left out (their time stays in their callers' width). `,
        h('a', { href: `#/profile?${all.toString()}`, id: 'flame-show-all' }, 'Show every call path'),
      ),
    );
  }
  body.append(flameSection);
  const fg = renderFlame(flameSection, profile, waited ? 'Flame graph of the time waited off the CPU' : 'Flame graph of the range');
  ctx.onCleanup(() => fg.destroy());
  // Shares of all samples, or of all the time waited.
  const whole = waited ? profile.flamegraph.value : profile.samples;
  const amount = waited ? duration : count;
  body.append(h('div', { class: 'profile-tables' }, modulesTable(profile.modules, whole, amount), functionsTable(profile.functions, whole, (name) => fg.search(name), (name) => probeHref(name, query.pid), amount)));
}

/**
 * Another fleet host's profile of a range (the fleet view opens it): no filters, no pprof; its
 * CPU samples, or with the box ticked (`kind=off_cpu`) where its threads waited off the CPU.
 */
async function remoteProfile(root: HTMLElement, ctx: ViewCtx, host: string): Promise<void> {
  document.title = `Profile of ${host} · Loupe`;
  const from = ctx.query.get('from') ?? undefined;
  const to = ctx.query.get('to') ?? undefined;
  const kind = ctx.query.get('kind') === 'off_cpu' ? 'off_cpu' : undefined;
  const range = rangeText(from, to);
  const offCpuIn = h('input', {
    type: 'checkbox',
    id: 'profile-off-cpu',
    checked: !!kind,
    onchange: () => {
      const nq = new URLSearchParams(ctx.query);
      if (offCpuIn.checked) nq.set('kind', 'off_cpu');
      else nq.delete('kind');
      location.hash = `#/profile?${nq.toString()}`;
    },
  });
  root.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/fleet' }, 'Fleet'), ' › ', host, ' › profile'),
    h('h1', null, 'Profile of ', h('span', { class: 'mono' }, host)),
    h('label', { class: 'field check', title: `Where ${host}'s threads waited (sleep, lock, pipe, disk), weighed by how long: its agent run with --off-cpu` }, offCpuIn, ' waits off the CPU'),
  );
  const body = h('div', null, loading(`Loading ${host}'s profile of ${range}…`));
  root.append(body);
  const t0 = performance.now();
  const profile = await api<Profile>(apiUrl(`fleet/hosts/${encodeURIComponent(host)}/profile`, { from, to, kind }), { signal: ctx.signal });
  if (ctx.signal.aborted) return;
  window.__loupe.timings.profileFetched = performance.now() - t0;
  const waited = profile.kind === 'off_cpu';
  body.replaceChildren(
    h(
      'div',
      { class: 'profile-summary', 'data-samples': String(profile.samples), 'data-lost': String(profile.lost), 'data-host': host, 'data-kind': profile.kind ?? 'on_cpu', 'data-waited': waited ? String(profile.flamegraph.value) : '' },
      kv(
        waited
          ? [
              ['host', host],
              ['range (UTC)', h('span', { class: 'mono' }, range)],
              ['waits off the CPU', count(profile.samples)],
              ['time waited', h('span', { id: 'time-waited' }, duration(profile.flamegraph.value))],
              ['whole stacks', wholeStacks(profile)],
            ]
          : [
              ['host', host],
              ['range (UTC)', h('span', { class: 'mono' }, range)],
              ['samples', count(profile.samples)],
              ['lost', profile.lost ? h('span', { class: 'warn-text' }, count(profile.lost)) : '0'],
              ['whole stacks', wholeStacks(profile)],
            ],
      ),
    ),
  );
  if (!profile.samples) {
    const none = waited ? `${host} has no waits off the CPU in this range (its agent takes them with --off-cpu).` : `${host} has no stack samples in this range.`;
    body.append(h('p', { class: 'muted', id: 'profile-empty' }, none));
    return;
  }
  const flameSection = h('section', { class: 'flame-section' }, h('h2', null, 'Flame graph'));
  body.append(flameSection);
  const fg = renderFlame(flameSection, profile, waited ? `Flame graph of the time ${host} waited off the CPU` : `Flame graph of ${host} over the range`);
  ctx.onCleanup(() => fg.destroy());
  const whole = waited ? profile.flamegraph.value : profile.samples;
  const amount = waited ? duration : count;
  body.append(h('div', { class: 'profile-tables' }, modulesTable(profile.modules, whole, amount), functionsTable(profile.functions, whole, (name) => fg.search(name), undefined, amount)));
}

/** The probe start form for a function of the profile, with the profile's PID when it is filtered by one. */
export function probeHref(name: string, pid?: string): string {
  const q = new URLSearchParams({ functions: name });
  if (pid) q.set('pid', pid);
  return `#/probes/start?${q.toString()}`;
}

/** Frames no uprobe can attach to by name: `[unknown]`-style markers and bare addresses. */
const unprobeable = (name: string) => name.startsWith('[') || /^0x[0-9a-f]+$/i.test(name);

/** Draws a profile's flame graph and records its timings. */
export function renderFlame(parent: HTMLElement, profile: Profile, title: string): FlameGraph {
  const missing = profile.pruned_nodes ? `${count(profile.pruned_nodes)} narrow call paths are left out` : undefined;
  const fg = new FlameGraph(parent, profile.flamegraph, { title, missing, waited: profile.kind === 'off_cpu' });
  const t = window.__loupe.timings;
  t.flameLayout = fg.timings.layoutMs;
  t.flameDraw = fg.timings.drawMs;
  t.flameRender = fg.timings.layoutMs + fg.timings.drawMs;
  t.flameNodes = fg.timings.nodes;
  return fg;
}

/**
 * The library share view: each module's (shared library's, `[kernel]`, the program's own) self
 * samples, self % (with a bar) and total %, by self samples. Flame nodes carry no module, so a
 * row highlights nothing; it is the "datacenter tax" figure of the range.
 */
/**
 * The share of samples whose user stack reaches its thread's root, and why the others stopped
 * (`[truncated: …]` or `[frame-pointer walk]` as their outermost frame): a short stack gives its
 * outermost function time that belongs to callers it does not show, so this is never hidden.
 */
export function wholeStacks(profile: Profile): HTMLElement | string {
  const stacks = profile.user_stacks;
  if (!stacks || !stacks.samples) return '—';
  const share = (100 * stacks.whole) / stacks.samples;
  // An off-CPU profile's counts are nanoseconds waited.
  const amount = profile.kind === 'off_cpu' ? duration : count;
  const why = stacks.cut.map((c) => `${c.reason}: ${amount(c.samples)}`).join(', ');
  return h(
    'span',
    { class: share < 90 ? 'warn-text' : '', id: 'whole-stacks', 'data-whole': String(stacks.whole), 'data-samples': String(stacks.samples), title: why || 'every user stack reaches its root' },
    `${share.toFixed(1)} % of ${profile.kind === 'off_cpu' ? `${duration(stacks.samples)} waited` : count(stacks.samples)}${why ? ` (others: ${why})` : ''}`,
  );
}

/** `amount` says a count: samples by default, a duration for an off-CPU profile's nanoseconds. */
export function modulesTable(modules: ModuleCount[], samples: number, amount: (n: number) => string = count): HTMLElement {
  const TOP = 20;
  const rows = moduleShares(modules, samples);
  const heading = h('h2', { id: 'modules-heading' }, 'Libraries');
  const note = h(
    'p',
    { class: 'muted small table-note' },
    'Self: samples whose running code (the leaf frame) is in the module; total: samples with the module anywhere on the stack. ',
    h('code', null, '[kernel]'),
    ' is the kernel, ',
    h('code', null, '[jit]'),
    ' JIT code named by a perf map, ',
    h('code', null, '[unknown]'),
    ' code outside any file.',
  );
  if (!rows.length) {
    return h('section', { class: 'modules', 'aria-labelledby': 'modules-heading' }, heading, h('p', { class: 'muted', id: 'modules-empty' }, 'No module information in this profile.'));
  }
  let limit = TOP;
  const tbody = h('tbody');
  const more = h('button', { type: 'button', hidden: rows.length <= TOP });
  const render = () => {
    tbody.replaceChildren(
      ...rows.slice(0, limit).map((m) =>
        h(
          'tr',
          { 'data-module': m.name, 'data-self': String(m.self), 'data-total': String(m.total) },
          h('th', { scope: 'row', class: 'fn mono' }, m.name),
          h('td', { class: 'num' }, amount(m.self)),
          h(
            'td',
            { class: 'num' },
            h(
              'span',
              { class: 'share' },
              h('span', { class: 'share-bar', 'aria-hidden': 'true' }, h('span', { class: 'share-fill', style: { width: barWidth(m.selfShare) } })),
              h('span', { class: 'share-text' }, percent(m.self, samples)),
            ),
          ),
          h('td', { class: 'num' }, percent(m.total, samples)),
        ),
      ),
    );
    more.textContent = limit < rows.length ? `Show all ${count(rows.length)}` : `Show top ${TOP}`;
  };
  more.addEventListener('click', () => ((limit = limit < rows.length ? rows.length : TOP), render()));
  render();
  return h(
    'section',
    { class: 'modules', 'aria-labelledby': 'modules-heading' },
    heading,
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'modules-table', 'data-top-module': rows[0].name },
        h(
          'thead',
          null,
          h(
            'tr',
            null,
            h('th', { scope: 'col' }, 'Module'),
            h('th', { scope: 'col', class: 'num', 'aria-sort': 'descending' }, 'Self'),
            h('th', { scope: 'col', class: 'num' }, 'Self %'),
            h('th', { scope: 'col', class: 'num' }, 'Total %'),
          ),
        ),
        tbody,
      ),
      'Libraries: each module’s share of the samples',
    ),
    more,
    note,
  );
}

/**
 * The top functions by self or total samples; `probe`, when given, links each function to the
 * probe start form (the "Probe" column).
 */
export function functionsTable(functions: FunctionCount[], samples: number, highlight: (name: string) => void, probe?: (name: string) => string, amount: (n: number) => string = count): HTMLElement {
  let sortKey: 'self' | 'total' = 'self';
  let limit = 50;
  const tbody = h('tbody');
  const more = h('button', { type: 'button' });
  const selfBtn = h('button', { type: 'button', class: 'linklike sort' }, 'Self');
  const totalBtn = h('button', { type: 'button', class: 'linklike sort' }, 'Total');
  const selfTh = h('th', { scope: 'col', class: 'num' }, selfBtn);
  const totalTh = h('th', { scope: 'col', class: 'num' }, totalBtn);
  const render = () => {
    const sorted = [...functions].sort((a, b) => b[sortKey] - a[sortKey] || b.self - a.self || b.total - a.total);
    tbody.replaceChildren(
      ...sorted.slice(0, limit).map((f, i) =>
        h(
          'tr',
          { 'data-function': f.name },
          h('td', { class: 'num muted' }, String(i + 1)),
          h('th', { scope: 'row', class: 'fn' }, h('button', { type: 'button', class: 'linklike mono', title: 'Highlight in the flame graph', onclick: () => highlight(f.name) }, f.name)),
          h('td', { class: 'num' }, amount(f.self)),
          h('td', { class: 'num' }, percent(f.self, samples)),
          h('td', { class: 'num' }, amount(f.total)),
          h('td', { class: 'num' }, percent(f.total, samples)),
          probe
            ? h(
                'td',
                null,
                unprobeable(f.name)
                  ? null
                  : h('a', { href: probe(f.name), class: 'probe-link', title: 'Time this function’s calls with a probe', 'aria-label': `Probe ${f.name}` }, 'Probe…'),
              )
            : null,
        ),
      ),
    );
    selfTh.setAttribute('aria-sort', sortKey === 'self' ? 'descending' : 'none');
    totalTh.setAttribute('aria-sort', sortKey === 'total' ? 'descending' : 'none');
    more.textContent = limit < functions.length ? `Show all ${count(functions.length)}` : 'Show top 50';
    more.hidden = functions.length <= 50;
  };
  selfBtn.addEventListener('click', () => ((sortKey = 'self'), render()));
  totalBtn.addEventListener('click', () => ((sortKey = 'total'), render()));
  more.addEventListener('click', () => ((limit = limit < functions.length ? functions.length : 50), render()));
  render();
  return h(
    'section',
    { class: 'functions' },
    h('h2', null, 'Top functions'),
    tableWrap(
      h(
        'table',
        { class: 'data compact', id: 'functions-table', 'data-top-function': functions[0]?.name ?? '' },
        h('thead', null, h('tr', null, h('th', { scope: 'col', class: 'num' }, '#'), h('th', { scope: 'col' }, 'Function'), selfTh, h('th', { scope: 'col', class: 'num' }, 'Self %'), totalTh, h('th', { scope: 'col', class: 'num' }, 'Total %'), probe ? h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Probe')) : null)),
        tbody,
      ),
      'Top functions',
    ),
    more,
  );
}
