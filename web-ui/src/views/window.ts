// The window view (`#/window?from=…&to=…`): one span of time with every kind of data on one
// axis — each run's traffic, what each CPU ran, each thread's probe calls, each program's
// timeline events — from one request (`GET /api/v1/window`). Zoom or pan any lane and all move;
// select a span to see its flame graph below, and compare it with a baseline (the same length
// just before, the same time yesterday, or any range): the differential flame graph, what only
// one side has, and the functions by change. `sel_from`/`sel_to` and `base_from`/`base_to` keep
// the selection and the comparison in the URL.

import { api, apiUrl } from '../api';
import { diffSection } from '../diffview';
import { field, h } from '../dom';
import type { FlameGraph } from '../flame';
import { count, duration } from '../format';
import { str } from '../json';
import { rangeForm, quickRanges, timeInput } from '../rangeform';
import { NS_PER_DAY, isNs, parseTimeInput, rangeText, rfc3339 } from '../time';
import type { Profile, ProfileDiff, WindowView } from '../types';
import { downloadLink, errorBox, loading } from '../ui';
import type { ViewCtx } from '../view';
import { LABEL_W, LaneGroup, WindowAxis, type Lane } from '../windowchart';
import { callsLane, cpuLane, processLegend, programLane, trafficLane } from '../windowlanes';
import { MIN_SHARE, renderFlame } from './profile';

/** What a lane kind says when the window has none of it. */
const EMPTY: Record<string, string> = {
  traffic: 'No runs in this window.',
  cpus: 'No stack samples in this window.',
  probes: 'No recorded probe calls in this window (probe a function with call records: loupe probe … --calls).',
  programs: 'No timeline events in this window (programs log them with the timeline library).',
};

export async function windowView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  document.title = 'Window · Loupe';
  const q = ctx.query;
  const timings = window.__loupe.timings;
  root.append(h('h1', null, 'Window'));
  const form = rangeForm({
    name: 'window',
    route: '#/window',
    query: q,
    placeholders: ['2026-11-23T00:01:00Z', '2026-11-23T00:01:05Z'],
    submit: 'Show window',
  });
  root.append(form);
  const from = q.get('from');
  const to = q.get('to');
  if (!from || !to) return quickRanges(root, ctx, '#/window', 'Show window', () => null);

  const columns = Math.max(100, Math.min(8192, Math.round((root.clientWidth || 1100) - LABEL_W)));
  const body = h('div', null, loading(`Loading the window ${rangeText(from, to)}…`));
  root.append(body);
  const t0 = performance.now();
  // About four items per pixel column before a lane is summarized: more cannot be told apart
  // (a 10-minute window of 96,000 samples and 100,000 events was 6 MB of JSON and ~900 ms to
  // draw exactly; summarized it is what the eye sees anyway), and zooming in then opening the
  // zoomed range brings every item back.
  const laneItems = Math.max(2000, Math.min(20000, 4 * columns));
  const w = await api<WindowView>(apiUrl('window', { from, to, columns, lane_items: laneItems }), { signal: ctx.signal });
  timings.windowFetch = performance.now() - t0;
  const fromNs = BigInt(str(w.from_unix_ns));
  const toNs = BigInt(str(w.to_unix_ns));
  const len = Number(toNs - fromNs);
  const abs = (offset: number) => (fromNs + BigInt(Math.round(Math.max(0, Math.min(len, offset))))).toString();
  const axis = new WindowAxis(len);

  // Processes keep one colour slot each, by first appearance.
  const groups: [string, string, Lane[]][] = [
    ['traffic', 'Traffic', w.traffic.map(trafficLane)],
    ['cpus', 'CPUs', w.cpus.map((c) => cpuLane(c, w, len, (p) => p))],
    ['probes', 'Probe calls', w.probes.map((c) => callsLane(c, w, len))],
    ['programs', 'Timeline events', w.programs.map((p) => programLane(p, len))],
  ];
  const exportHref = apiUrl('window/trace', { from: str(w.from_unix_ns), to: str(w.to_unix_ns) });
  const exportErrors = h('div');
  const exportLink = downloadLink(exportHref, 'loupe-trace.json', 'Export trace', 'window-export', exportErrors);
  exportLink.title = 'A Chrome/Perfetto trace: open it in the Perfetto UI or chrome://tracing';
  const viewText = h('span', { class: 'muted', id: 'window-view-text' });
  const zoomLink = h('a', { class: 'button', id: 'window-open-zoomed', hidden: true }, 'Open the zoomed range');
  const lanesEl = h('div', { class: 'wl-lanes', id: 'window-lanes' });
  body.replaceChildren(
    h(
      'div',
      { class: 'title-row' },
      h('p', { class: 'mono' }, `${rfc3339(fromNs, 6)} → ${rfc3339(toNs, 6)} (${duration(len)})`),
      h('a', { class: 'button', href: `#/profile?from=${fromNs}&to=${toNs}`, id: 'window-profile-link' }, 'Profile of this window'),
      exportLink,
      h('button', { type: 'button', onclick: () => axis.reset() }, 'Reset zoom'),
      zoomLink,
    ),
    exportErrors,
    h('p', { class: 'muted small' }, 'Wheel to zoom (every lane follows), drag to select a span, double-click to reset. ', viewText),
    ...w.notes.map((n) => h('p', { class: 'notice' }, n)),
    lanesEl,
  );
  const made: LaneGroup[] = [];
  for (const [kind, title, lanes] of groups) {
    if (!lanes.length) {
      lanesEl.append(h('p', { class: 'wl-empty', 'data-kind': kind }, h('strong', null, `${title}: `), EMPTY[kind]));
      continue;
    }
    const g = new LaneGroup(kind, title, lanes, axis);
    made.push(g);
    lanesEl.append(g.el);
    if (kind === 'cpus') g.el.append(processLegend(w));
  }
  ctx.onCleanup(() => made.forEach((g) => g.destroy()));
  const summarized = [...w.cpus.filter((c) => c.ticks.summarized), ...w.probes.filter((c) => c.summarized), ...w.programs.filter((p) => p.summarized)].length;
  if (summarized) {
    lanesEl.append(h('p', { class: 'muted small', id: 'window-summarized' }, `${summarized} lanes hold more than ${count(w.limits.samples_per_lane)} items and show per-column counts; zoom in and open the zoomed range (or a selection) to see every item.`));
  }

  // The selection: its flame graph, and comparisons.
  const selBox = h('section', { class: 'window-selection', id: 'window-selection', 'aria-live': 'polite' });
  root.append(selBox);
  let flame: FlameGraph | null = null;
  let diffCleanup: (() => void)[] = [];
  const release = () => {
    flame?.destroy();
    flame = null;
    diffCleanup.forEach((f) => f());
    diffCleanup = [];
  };
  ctx.onCleanup(release);

  const showSelection = async (s0: string, s1: string, base?: [string, string]) => {
    release();
    const q2 = new URLSearchParams(q);
    q2.set('sel_from', s0);
    q2.set('sel_to', s1);
    q2.delete('base_from');
    q2.delete('base_to');
    if (base) {
      q2.set('base_from', base[0]);
      q2.set('base_to', base[1]);
    }
    ctx.setQuery(q2);
    const lenSel = BigInt(s1) - BigInt(s0);
    const before: [string, string] = [(BigInt(s0) - lenSel).toString(), s0];
    const yesterday: [string, string] = [(BigInt(s0) - NS_PER_DAY).toString(), (BigInt(s1) - NS_PER_DAY).toString()];
    const baseFrom = timeInput('window-base-from', base?.[0] ?? null, 'base from');
    const baseTo = timeInput('window-base-to', base?.[1] ?? null, 'base to');
    const formError = h('p', { class: 'form-error', role: 'alert' });
    const compareForm = h(
      'form',
      {
        class: 'filters compare-form',
        onsubmit: (e: Event) => {
          e.preventDefault();
          const a = parseTimeInput(baseFrom.value);
          const b = parseTimeInput(baseTo.value);
          if (!a || !b || !isNs(a) || !isNs(b)) {
            formError.textContent = 'Give the baseline as two times (RFC 3339 or Unix ns).';
            return;
          }
          void showSelection(s0, s1, [a, b]);
        },
      },
      field('Baseline from (UTC)', baseFrom),
      field('to', baseTo),
      h('button', { type: 'submit' }, 'Compare'),
      formError,
    );
    const flameBox = h('div', { id: 'window-flame' }, loading('Loading the selection’s flame graph…'));
    selBox.replaceChildren(
      h('h2', null, 'Selection'),
      h(
        'div',
        { class: 'title-row' },
        h('p', { class: 'mono', id: 'window-selection-range', 'data-from': s0, 'data-to': s1 }, `${rfc3339(s0, 6)} → ${rfc3339(s1, 6)} (${duration(Number(lenSel))})`),
        h('a', { class: 'button', href: `#/window?from=${s0}&to=${s1}`, id: 'window-open-selection' }, 'Open as a window'),
        h('button', { type: 'button', id: 'compare-before', onclick: () => void showSelection(s0, s1, before) }, 'Compare with the same length just before'),
        h('button', { type: 'button', id: 'compare-yesterday', onclick: () => void showSelection(s0, s1, yesterday) }, 'Compare with the same time yesterday'),
      ),
      compareForm,
      flameBox,
    );
    try {
      if (base) {
        const td = performance.now();
        const d = await api<ProfileDiff>(apiUrl('profile/diff', { from: s0, to: s1, base_from: base[0], base_to: base[1] }), { signal: ctx.signal });
        timings.windowDiffFetch = performance.now() - td;
        flameBox.replaceChildren(diffSection(d, `Against ${rfc3339(base[0])} → ${rfc3339(base[1])}`, (f) => diffCleanup.push(f)));
      } else {
        const p = await api<Profile>(apiUrl('profile', { from: s0, to: s1, min_share: MIN_SHARE }), { signal: ctx.signal });
        flameBox.replaceChildren(h('p', { class: 'muted' }, `${count(p.samples)} samples in the selection.`));
        if (p.samples) flame = renderFlame(flameBox, p, 'Flame graph of the selection');
        flameBox.dataset.samples = String(p.samples);
      }
    } catch (e) {
      if ((e as Error).name === 'AbortError') return;
      flameBox.replaceChildren(errorBox(e));
    }
  };

  lanesEl.addEventListener('wl:select', () => {
    const s = axis.sel;
    if (s && s[1] - s[0] > 0) void showSelection(abs(s[0]), abs(s[1]));
  });
  axis.onChange = (zoomed) => {
    viewText.textContent = `${zoomed ? 'Zoomed to' : 'Showing'} ${rfc3339(abs(axis.v0), 6)} → ${rfc3339(abs(axis.v1), 6)}.`;
    lanesEl.dataset.view = `${Math.round(axis.v0)},${Math.round(axis.v1)}`;
    zoomLink.hidden = !zoomed;
    zoomLink.href = `#/window?from=${abs(axis.v0)}&to=${abs(axis.v1)}`;
    timings.windowZoomDraw = axis.lastDrawMs;
  };
  axis.drawNow();
  timings.windowDrawn = performance.now() - ctx.t0;
  lanesEl.dataset.drawn = 'true';

  const sf = q.get('sel_from');
  const st = q.get('sel_to');
  if (isNs(sf) && isNs(st) && BigInt(st) > BigInt(sf)) {
    const off = (v: string) => Number(BigInt(v) - fromNs);
    axis.setSelection([off(sf), off(st)]);
    const bf = q.get('base_from');
    const bt = q.get('base_to');
    await showSelection(sf, st, isNs(bf) && isNs(bt) ? [bf, bt] : undefined);
  }
}
