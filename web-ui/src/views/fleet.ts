// The fleet, through this agent (`loupe agent --nats`): the hosts of a rack and their health; a
// synchronized run on the rack drawn as hosts × time with the rack's sum above it (a host's row
// or cell opens that host's run and its profile of the window, read over the fleet); and the
// fleet's hot functions with each library's and host's share (the "datacenter tax").

import { api, apiUrl } from '../api';
import { ChartGroup } from '../charts';
import { field, h } from '../dom';
import { bytes, count, duration, offset, si } from '../format';
import { Heatmap } from '../heatmap';
import { hotTables, rackSum, type HotTables } from '../fleet';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { barWidth } from '../modules';
import type { FleetHostsView, FleetInvokeView, FleetMiss, FleetRunView } from '../types';
import { addNs, parseTimeInput, rfc3339 } from '../time';
import { timeInput } from '../rangeform';
import { errorBox, kv, loading, tableWrap } from '../ui';

/** The last synchronized run, so coming back from a host's run shows it again. */
const LAST_RUN_KEY = 'loupe.fleet.lastRun';
/** The analysis the hot-functions panel invokes (an example of udf-sdk; uploaded to this agent). */
const HOT = 'fleet-hot-functions';

export async function fleetView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Fleet · Loupe';
  const place = ctx.health?.fleet;
  root.append(h('h1', null, 'Fleet'));
  if (!place) {
    root.append(
      h('p', { class: 'muted', id: 'fleet-absent' }, 'This server is not in a fleet. Start agents with ', h('code', null, '--nats URL --rack R'), ' (docs/fleet.md), or try ', h('code', null, 'scripts/start --rack-demo'), '.'),
    );
    return;
  }
  const rack = ctx.query.get('rack') || place.rack;
  root.append(h('p', { class: 'muted' }, `Through ${place.host} (rack ${place.rack}, dc ${place.dc}). Data stays on each host; runs and analyses travel to them over NATS.`));

  const hostsSection = h('section', { class: 'fleet-hosts' }, h('h2', null, `Hosts of rack ${rack}`), loading());
  const runSection = h('section', { class: 'fleet-run' });
  const hotSection = h('section', { class: 'fleet-hot' });
  root.append(hostsSection, runSection, hotSection);

  let view: FleetHostsView;
  try {
    view = await api<FleetHostsView>(apiUrl('fleet/hosts', { rack }), { signal: ctx.signal });
  } catch (e) {
    if (ctx.signal.aborted) return;
    hostsSection.replaceChildren(h('h2', null, `Hosts of rack ${rack}`), errorBox(e));
    return;
  }
  if (ctx.signal.aborted) return;
  hostsSection.replaceChildren(h('h2', null, `Hosts of rack ${rack}`), hostsTable(view));
  runSection.append(...runPanel(rack, ctx));
  hotSection.append(hotPanel(rack, ctx));
}

function hostsTable(view: FleetHostsView): HTMLElement {
  const now = BigInt(Date.now()) * 1_000_000n;
  const ago = (ns: string | number) => {
    const d = Number(now - BigInt(ns)) / 1e9;
    return d < 1 ? 'now' : `${Math.round(d)} s ago`;
  };
  const range = (from: string | number, to: string | number) => (String(from) === '0' ? '—' : `${rfc3339(String(from)).slice(0, 10)} → ${rfc3339(String(to)).slice(0, 10)}`);
  const table = h(
    'table',
    { class: 'data', id: 'fleet-hosts', 'data-up': String(view.up) },
    h('thead', null, h('tr', null, ...['Host', 'Rack', 'DC', 'Status', 'Last heard', 'Interfaces', 'Retained', 'Version'].map((t) => h('th', { scope: 'col' }, t)))),
    h(
      'tbody',
      null,
      ...view.hosts.map((host) =>
        h(
          'tr',
          { 'data-host': host.host, 'data-status': host.status },
          h('td', { class: 'mono' }, host.host),
          h('td', null, host.rack),
          h('td', null, host.dc),
          h('td', null, h('span', { class: `badge ${host.status === 'up' ? 'ok' : host.status === 'silent' ? 'warn' : 'idle'}` }, host.status)),
          h('td', null, host.status === 'silent' ? `${host.silent_s} s of silence` : ago(str(host.heartbeat_unix_ns))),
          h('td', { class: 'mono' }, host.ifaces.join(', ') || '—'),
          h('td', null, range(str(host.retained_from_unix_ns), str(host.retained_to_unix_ns))),
          h('td', null, host.version),
        ),
      ),
    ),
  );
  const silent = view.hosts.filter((x) => x.status === 'silent').length;
  return h('div', null, h('p', { id: 'fleet-health' }, `${view.up} up`, silent ? `, ${silent} silent (not answering)` : '', ` of ${view.hosts.length} registered.`), tableWrap(table, 'Hosts'));
}

// ---- synchronized run ----

function runPanel(rack: string, ctx: ViewCtx): Node[] {
  const intervalIn = h('select', { id: 'fleet-interval' }, ...['100us', '1ms', '10ms'].map((v) => h('option', { value: v }, v)));
  intervalIn.value = '1ms';
  const samplesIn = h('input', { type: 'number', id: 'fleet-samples', value: '2000', min: '1', max: '20000', size: '6' });
  const status = h('div', { 'aria-live': 'polite', id: 'fleet-run-status' });
  const result = h('div', { id: 'fleet-run-result' });
  const button = h('button', { type: 'submit', class: 'primary', id: 'fleet-run-start' }, `Run on rack ${rack}`);
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const interval = intervalIn.value;
        const samples = Number(samplesIn.value);
        const slotNs = interval === '100us' ? 100_000 : interval === '1ms' ? 1_000_000 : 10_000_000;
        button.disabled = true;
        status.replaceChildren(loading(`Running ${count(samples)} × ${interval} on every host of ${rack} from one instant (${duration(samples * slotNs + 2e9)} with the lead)…`));
        try {
          const run = await api<FleetRunView>('/api/v1/fleet/runs', { method: 'POST', body: JSON.stringify({ rack, interval, samples }), headers: { 'Content-Type': 'application/json' } });
          try {
            sessionStorage.setItem(LAST_RUN_KEY, JSON.stringify({ rack, run }));
          } catch {
            /* too big or no storage: shown now only */
          }
          status.replaceChildren();
          showRun(result, run, ctx);
        } catch (err) {
          status.replaceChildren(errorBox(err, 'the synchronized run'));
        } finally {
          button.disabled = false;
        }
      },
    },
    field('Slot', intervalIn),
    field('Slots', samplesIn),
    button,
  );
  try {
    const last = JSON.parse(sessionStorage.getItem(LAST_RUN_KEY) ?? 'null') as { rack: string; run: FleetRunView } | null;
    if (last && last.rack === rack) showRun(result, last.run, ctx);
  } catch {
    /* nothing kept */
  }
  return [
    h('h2', null, 'Synchronized run'),
    h('p', { class: 'muted small' }, 'Every host counts slots in its kernel from one common instant, so slot k is the same interval on every host: bursts that arrive together (incast at a shared switch buffer) line up in a column.'),
    form,
    status,
    result,
  ];
}

function showRun(holder: HTMLElement, run: FleetRunView, ctx: ViewCtx): void {
  holder.replaceChildren();
  if (!run.hosts.length) {
    holder.append(h('p', { class: 'error' }, 'No host ran it.'), missList('Missed', run.missed));
    return;
  }
  const start = str(run.start_unix_ns);
  const dt = run.interval_ns / 1e9;
  const slots = run.samples;
  const end = addNs(start, BigInt(slots) * BigInt(run.interval_ns));
  const xs = new Float64Array(slots);
  for (let i = 0; i < slots; i++) xs[i] = i * dt;
  const xValue = (v: number) => `slot ${count(Math.round(v / dt))} · ${offset(v)}`;
  const inSum = rackSum(run.hosts.map((x) => x.in_bytes), slots);
  const outSum = rackSum(run.hosts.map((x) => x.out_bytes), slots);
  const rate = (v: number[]) => v.map((b) => (b * 8) / dt);
  const hostHref = (i: number) => `#/run/${str(run.hosts[i].run_id)}?host=${encodeURIComponent(run.hosts[i].host)}`;
  const maxErr = Number(str(run.max_clock_error_ns));
  holder.append(
    h(
      'div',
      { class: 'fleet-run-summary', 'data-start': start, 'data-hosts': String(run.hosts.length), 'data-missed': run.missed.map((m) => m.host).join(','), 'data-rack-in-bytes': String(inSum.reduce((a, b) => a + b, 0)) },
      kv([
        ['start (UTC)', h('span', { class: 'mono' }, rfc3339(start, 6))],
        ['slots', `${count(slots)} × ${duration(run.interval_ns)}`],
        ['hosts', `${run.hosts.length} ran it${run.missed.length ? `, ${run.missed.length} missed it` : ''}`],
        ['clock error', maxErr ? `≤ ${duration(maxErr)} per host (kernel's bound; slots align to within twice that)` : 'none reported'],
      ]),
    ),
  );
  if (run.missed.length) holder.append(missList('Missed', run.missed));
  const group = new ChartGroup('fleet-run');
  ctx.onCleanup(() => group.destroy());
  const plot = h('div', { class: 'chart' });
  holder.append(h('section', { class: 'chart-card' }, h('h3', null, 'Rack sum'), plot));
  group.add(
    plot,
    {
      title: 'Rack sum',
      xs,
      series: [
        { label: 'in', unit: 'bit/s', values: rate(inSum) },
        { label: 'out', unit: 'bit/s', values: rate(outSum) },
      ],
      height: 160,
      xValue,
      bands: [],
    },
    Math.floor(holder.clientWidth) || 900,
  );
  group.seal();
  group.autoResize((u) => u.root.parentElement!);

  const pick = h('div', { id: 'fleet-pick', 'aria-live': 'polite' });
  const heatHolder = h('div', { class: 'heatmap-holder', id: 'fleet-heatmap' });
  const direction = h('select', { id: 'fleet-heat-direction', 'aria-label': 'Heatmap direction' }, h('option', { value: 'in_bytes' }, 'ingress'), h('option', { value: 'out_bytes' }, 'egress'));
  holder.append(
    h('div', { class: 'title-row' }, h('h3', null, 'Per host'), h('label', null, 'Bytes ', direction)),
    h('p', { class: 'muted small' }, 'Rows are hosts, columns the same slots on every host; colour is a log scale of the largest slot. Click a cell (or a host) for its run and profile.'),
    heatHolder,
    pick,
  );
  const draw = (key: 'in_bytes' | 'out_bytes') => new Heatmap(
    heatHolder,
    run.hosts.map((x, i) => ({ label: x.host, values: x[key], href: hostHref(i) })),
    {
      slotSeconds: dt,
      unit: key,
      rowNoun: 'host',
      xValue,
      describe: (v) => `${bytes(v)} (${si((v * 8) / dt, 'bit/s')})`,
      onPick: (row, slot) => {
        const x = run.hosts[row];
        // A window around the slot for the profile: ±50 ms, within the run.
        const pad = 50_000_000n;
        const at = BigInt(addNs(start, BigInt(slot) * BigInt(run.interval_ns)));
        const from = at - pad < BigInt(start) ? start : (at - pad).toString();
        const to = at + pad > BigInt(end) ? end : (at + pad).toString();
        const hq = `host=${encodeURIComponent(x.host)}`;
        pick.replaceChildren(
          h(
            'div',
            { class: 'card', 'data-host': x.host, 'data-slot': String(slot) },
            h('strong', null, `${x.host}, slot ${count(slot)}`),
            ` · ${bytes(x.in_bytes[slot] ?? 0)} in, ${bytes(x.out_bytes[slot] ?? 0)} out · `,
            h('a', { href: hostHref(row), id: 'fleet-pick-run' }, `${x.host}'s run`),
            ' · ',
            h('a', { href: `#/profile?from=${from}&to=${to}&${hq}`, id: 'fleet-pick-profile' }, `${x.host}'s profile around this slot`),
            ' · ',
            h('a', { href: `#/profile?from=${start}&to=${end}&${hq}` }, 'of the whole run'),
          ),
        );
      },
    },
  );
  let heat = draw('in_bytes');
  direction.addEventListener('change', () => {
    heat.destroy();
    heat = draw(direction.value as 'in_bytes' | 'out_bytes');
    const sx = group.charts[0]?.scales.x;
    if (sx?.min != null && sx.max != null) heat.setRange(sx.min, sx.max + dt);
  });
  group.onScale = (min, max) => heat.setRange(min, max + dt);
  ctx.onCleanup(() => heat.destroy());
}

function missList(title: string, misses: FleetMiss[]): HTMLElement {
  return h(
    'div',
    { class: 'fleet-missed' },
    h('h3', null, title),
    h('ul', null, ...misses.map((m) => h('li', { 'data-host': m.host, 'data-code': m.code }, h('strong', { class: 'mono' }, m.host), ` (${m.code}): ${m.why}`))),
  );
}

// ---- fleet hot functions ----

function hotPanel(rack: string, ctx: ViewCtx): HTMLElement {
  const fromIn = timeInput('fleet-hot-from', '-10m');
  const toIn = timeInput('fleet-hot-to', 'now');
  const result = h('div', { id: 'fleet-hot-result', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary', id: 'fleet-hot-start' }, 'Find hot functions');
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        button.disabled = true;
        result.replaceChildren(loading(`Running ${HOT} on every host of ${rack}…`));
        try {
          const from = parseTimeInput(fromIn.value) ?? undefined;
          const to = parseTimeInput(toIn.value) ?? undefined;
          const answer = await api<FleetInvokeView>('/api/v1/fleet/invoke', {
            method: 'POST',
            body: JSON.stringify({ name: HOT, rack, from, to, deadline: '5s' }),
            headers: { 'Content-Type': 'application/json' },
            signal: ctx.signal,
          });
          if (answer.kind !== 'table') throw new Error(`${HOT} answered ${answer.kind}, not a table`);
          result.replaceChildren(...hotResult(hotTables(answer.columns, answer.rows), answer));
        } catch (err) {
          if (ctx.signal.aborted) return;
          result.replaceChildren(errorBox(err, HOT));
          result.append(h('p', { class: 'muted small' }, `The analysis must be uploaded to this agent (Analyses, or `, h('code', null, `loupe udf upload ${HOT} fleet_hot_functions.wasm`), ').'));
        } finally {
          button.disabled = false;
        }
      },
    },
    field('From (UTC)', fromIn),
    field('To (UTC)', toIn),
    button,
  );
  return h('div', null, h('h2', null, 'Hot functions'), h('p', { class: 'muted small' }, `Stack samples counted by their running function on every host of the rack, merged: which functions and libraries the rack's CPU goes to, and on which hosts.`), form, result);
}

function hotResult(t: HotTables, answer: FleetInvokeView): Node[] {
  const pct = (n: number, of: number) => (of ? `${((n * 100) / of).toFixed(1)} %` : '—');
  const hostCell = (hosts: { host: string; samples: number }[], total: number) =>
    h('td', { class: 'small' }, hosts.slice(0, 4).map((x) => `${x.host} ${pct(x.samples, total)}`).join(' · ') + (hosts.length > 4 ? ` · +${hosts.length - 4}` : ''));
  const bar = (p: number) => h('span', { class: 'share-bar', 'aria-hidden': 'true' }, h('span', { class: 'share-fill', style: { width: barWidth(p / 100) } }));
  const libraries = h(
    'table',
    { class: 'data', id: 'fleet-hot-libraries' },
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Library'), h('th', { scope: 'col', class: 'num' }, 'Samples'), h('th', { scope: 'col', class: 'num' }, 'Share'), h('th', { scope: 'col' }, 'By host (share of the library)'))),
    h(
      'tbody',
      null,
      ...t.libraries.slice(0, 20).map((l) =>
        h('tr', { 'data-module': l.module, 'data-samples': String(l.samples) }, h('td', { class: 'mono' }, l.module || '[unknown]'), h('td', { class: 'num' }, count(l.samples)), h('td', { class: 'num' }, bar(l.percent), ` ${l.percent.toFixed(1)} %`), hostCell(l.hosts, l.samples)),
      ),
    ),
  );
  const functions = h(
    'table',
    { class: 'data', id: 'fleet-hot-functions' },
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Function'), h('th', { scope: 'col' }, 'Library'), h('th', { scope: 'col', class: 'num' }, 'Samples'), h('th', { scope: 'col', class: 'num' }, 'Share'), h('th', { scope: 'col' }, 'By host (share of the function)'))),
    h(
      'tbody',
      null,
      ...t.functions.slice(0, 50).map((f) =>
        h('tr', { 'data-function': f.function, 'data-samples': String(f.samples) }, h('td', { class: 'mono' }, f.function), h('td', { class: 'mono small' }, f.module), h('td', { class: 'num' }, count(f.samples)), h('td', { class: 'num' }, `${f.percent.toFixed(1)} %`), hostCell(f.hosts, f.samples)),
      ),
    ),
  );
  return [
    h(
      'div',
      { class: 'fleet-hot-summary', 'data-samples': String(t.samples), 'data-answered': answer.answered.map((a) => a.host).join(',') },
      kv([
        ['samples', `${count(t.samples)} on ${t.hosts.length} hosts (${t.hosts.map((x) => `${x.host} ${count(x.samples)}`).join(', ')})`],
        ['answered', `${answer.answered.length} hosts in ${duration(answer.elapsed_ns)} (merge ${duration(answer.merge_ns)})`],
      ]),
    ),
    ...(answer.missing.length ? [missList('Missing', answer.missing)] : []),
    ...(answer.failed.length ? [missList('Failed', answer.failed)] : []),
    h('h3', null, 'Libraries (the datacenter tax)'),
    tableWrap(libraries, 'Libraries'),
    h('h3', null, 'Functions'),
    tableWrap(functions, 'Functions'),
  ];
}
