// Analyses: the list, upload with progress, a parameter form generated from `describe()`, and
// the typed result (table, series, flame graph, text) with the log and the time it took.

import { ApiError, api, apiUrl, uploadWithProgress } from '../api';
import { ChartGroup } from '../charts';
import { field, h } from '../dom';
import { bytes, count, duration } from '../format';
import { RawNumber, str, toJson } from '../json';
import type { ViewCtx } from '../view';
import type { InvokeRequest, InvokeResponse, ParamSpec, SeriesOut, Udf, Uploaded } from '../types';
import { parseTimeInput, rfc3339 } from '../time';
import { timeInput } from '../rangeform';
import { errorBox, loading, tableWrap } from '../ui';
import { functionsTable, renderFlame } from './profile';

const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export async function analysesView(root: HTMLElement, ctx: ViewCtx): Promise<void> {
  const selected = ctx.params[0] ?? null;
  document.title = selected ? `${selected} · Analyses · Loupe` : 'Analyses · Loupe';
  root.append(h('h1', null, 'Analyses'));
  root.append(h('p', { class: 'muted' }, 'WebAssembly components uploaded by teams and run next to the data, in a sandbox (docs/udf.md).'));
  const listHolder = h('section', { class: 'udf-list' }, loading());
  const runHolder = h('section', { class: 'udf-run', id: 'udf-run' });
  root.append(listHolder, uploadCard(() => void refresh()), runHolder);

  let udfs: Udf[] = [];
  const refresh = async () => {
    try {
      udfs = await api<Udf[]>('/api/v1/udfs', { signal: ctx.signal });
    } catch (e) {
      if ((e as Error).name === 'AbortError') return;
      listHolder.replaceChildren(h('h2', null, 'Uploaded analyses'), errorBox(e));
      return;
    }
    listHolder.replaceChildren(h('h2', null, 'Uploaded analyses'), udfTable(udfs, selected, () => void refresh()));
  };
  await refresh();
  if (ctx.signal.aborted) return;

  if (selected) {
    const udf = udfs.find((u) => u.name === selected);
    if (!udf) {
      runHolder.append(h('p', { class: 'error', role: 'alert' }, `No analysis named ${selected}.`));
      return;
    }
    runHolder.append(invokePanel(udf, ctx));
  }
}

function udfTable(udfs: Udf[], selected: string | null, changed: () => void): HTMLElement {
  if (!udfs.length) return h('p', { class: 'muted', id: 'udfs-empty' }, 'No analyses uploaded yet: upload a .wasm component below.');
  const status = h('div', { 'aria-live': 'polite' });
  return h(
    'div',
    null,
    tableWrap(
      h(
        'table',
        { class: 'data', id: 'udfs-table' },
        h(
          'thead',
          null,
          h('tr', null, ...['Name', 'Owner', 'Version', 'What it does', 'Parameters', 'Result', 'Size', 'Uploaded (UTC)', ''].map((t) => h('th', { scope: 'col' }, t))),
        ),
        h(
          'tbody',
          null,
          udfs.map((u) =>
            h(
              'tr',
              { 'data-udf': u.name, class: u.name === selected ? 'selected' : '' },
              h('th', { scope: 'row' }, h('a', { href: `#/analyses/${u.name}` }, u.name)),
              h('td', null, u.owner),
              h('td', null, u.version),
              h('td', null, u.description.summary),
              h('td', null, u.description.params.map((p) => `${p.name}${p.default === null ? '*' : ''}`).join(', ') || '—'),
              h('td', null, u.description.result_kind),
              h('td', { class: 'num' }, bytes(u.size)),
              h('td', { class: 'mono small nowrap', title: `sha256 ${u.sha256}` }, rfc3339(str(u.uploaded_unix_ns), 0)),
              h(
                'td',
                { class: 'actions' },
                h('a', { href: `#/analyses/${u.name}`, class: 'button small' }, 'Run…'),
                h(
                  'button',
                  {
                    type: 'button',
                    class: 'small danger',
                    'aria-label': `Delete ${u.name}`,
                    onclick: async () => {
                      if (!confirm(`Delete the analysis ${u.name}? Only its owning team (${u.owner}) may.`)) return;
                      try {
                        await api(`/api/v1/udfs/${encodeURIComponent(u.name)}`, { method: 'DELETE' });
                        changed();
                      } catch (e) {
                        status.replaceChildren(errorBox(e, `delete ${u.name}`));
                      }
                    },
                  },
                  'Delete',
                ),
              ),
            ),
          ),
        ),
      ),
      'Uploaded analyses',
    ),
    h('p', { class: 'muted small' }, '* required parameter'),
    status,
  );
}

function uploadCard(uploaded: () => void): HTMLElement {
  const nameIn = h('input', { type: 'text', id: 'upload-name', required: true, pattern: '[a-z0-9][a-z0-9_\\-]{0,63}', spellcheck: 'false', placeholder: 'burst-detector', size: '20' });
  const fileIn = h('input', { type: 'file', id: 'upload-file', accept: '.wasm,application/wasm', required: true });
  const progress = h('progress', { id: 'upload-progress', max: '100', value: '0', hidden: true, 'aria-label': 'upload progress' });
  const status = h('div', { id: 'upload-status', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Upload');
  fileIn.addEventListener('change', () => {
    const f = fileIn.files?.[0];
    if (f && !nameIn.value) {
      nameIn.value = f.name.replace(/\.wasm$/i, '').toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 64);
    }
  });
  const form = h(
    'form',
    {
      class: 'filters',
      id: 'upload-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const file = fileIn.files?.[0];
        const name = nameIn.value.trim();
        status.replaceChildren();
        if (!file) return void status.append(h('p', { class: 'form-error' }, 'Choose a .wasm file.'));
        if (!NAME_RE.test(name)) return void status.append(h('p', { class: 'form-error' }, 'Name: lower-case letters, digits, - and _, starting with a letter or digit.'));
        button.disabled = true;
        progress.hidden = false;
        progress.value = 0;
        const started = performance.now();
        try {
          const res = await uploadWithProgress<Uploaded>(`/api/v1/udfs/${encodeURIComponent(name)}`, file, 'application/wasm', (loaded, total) => {
            progress.value = total ? Math.round((100 * loaded) / total) : 0;
            progress.textContent = `${progress.value}%`;
            status.replaceChildren(h('p', { class: 'muted' }, `Uploading ${bytes(loaded)} of ${bytes(total)}…${loaded >= total ? ' validating and compiling…' : ''}`));
          });
          progress.value = 100;
          const u = res.body;
          status.replaceChildren(
            h(
              'p',
              { class: 'ok-text', 'data-uploaded': u.name },
              `${res.status === 201 ? 'Uploaded' : 'Replaced'} ${u.name} (${u.description.name} ${u.version}, ${bytes(u.size)}) in ${duration((performance.now() - started) * 1e6)}. `,
              h('a', { href: `#/analyses/${u.name}` }, 'Run it…'),
            ),
          );
          uploaded();
        } catch (err) {
          status.replaceChildren(errorBox(err, 'Upload failed'));
        } finally {
          button.disabled = false;
        }
      },
    },
    field('Name', nameIn, undefined, true),
    field('Component (.wasm)', fileIn, undefined, true),
    button,
    progress,
  );
  return h(
    'section',
    { class: 'card' },
    h('h2', null, 'Upload an analysis'),
    form,
    h('p', { class: 'muted small form-note' }, 'A WebAssembly component (.wasm) built with the loupe-udf SDK; the name: lower-case letters, digits, - and _. Replacing or deleting is for the owning team.'),
    status,
  );
}

function paramInput(p: ParamSpec): HTMLInputElement {
  const id = `param-${p.name}`;
  const def = p.default;
  switch (p.kind) {
    case 'flag':
      return h('input', { type: 'checkbox', id, name: p.name, checked: def === true });
    case 'unsigned':
      return h('input', { type: 'text', inputmode: 'numeric', pattern: '\\d+', id, name: p.name, value: def == null ? '' : str(def), required: def == null, placeholder: def == null ? 'required' : '', size: '22' });
    case 'float':
      return h('input', { type: 'text', inputmode: 'decimal', id, name: p.name, value: def == null ? '' : String(def), required: def == null, placeholder: def == null ? 'required' : '', size: '14' });
    default:
      return h('input', { type: 'text', id, name: p.name, value: def == null ? '' : String(def), required: def == null, placeholder: def == null ? 'required' : '', size: '22' });
  }
}

function invokePanel(udf: Udf, ctx: ViewCtx): HTMLElement {
  const d = udf.description;
  const inputs = d.params.map((p) => ({ p, input: paramInput(p) }));
  const fromIn = timeInput('invoke-from', ctx.query.get('from'), 'the beginning');
  const toIn = timeInput('invoke-to', ctx.query.get('to'), 'now');
  const result = h('div', { id: 'invoke-result', 'aria-live': 'polite' });
  const runBtn = h('button', { type: 'submit', class: 'primary', id: 'invoke-run' }, 'Run');
  const formError = h('p', { class: 'form-error', role: 'alert' });
  let running: AbortController | null = null;
  let cleanup: (() => void) | null = null;
  ctx.onCleanup(() => {
    running?.abort();
    cleanup?.();
  });

  const form = h(
    'form',
    {
      id: 'invoke-form',
      class: 'invoke-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        formError.textContent = '';
        const params: Record<string, unknown> = {};
        let from: string | null;
        let to: string | null;
        try {
          from = parseTimeInput(fromIn.value);
          to = parseTimeInput(toIn.value);
          for (const { p, input } of inputs) {
            if (p.kind === 'flag') {
              params[p.name] = input.checked;
              continue;
            }
            const v = input.value.trim();
            if (v === '') {
              if (p.default === null) throw new Error(`${p.name} is required`);
              continue;
            }
            if (p.kind === 'unsigned') {
              if (!/^\d+$/.test(v)) throw new Error(`${p.name} must be an unsigned integer`);
              params[p.name] = new RawNumber(v.replace(/^0+(?=\d)/, ''));
            } else if (p.kind === 'float') {
              const n = Number(v);
              if (!Number.isFinite(n)) throw new Error(`${p.name} must be a number`);
              params[p.name] = n;
            } else params[p.name] = v;
          }
        } catch (err) {
          formError.textContent = (err as Error).message;
          return;
        }
        running?.abort();
        cleanup?.();
        cleanup = null;
        running = new AbortController();
        const mine = running;
        runBtn.disabled = true;
        const started = performance.now();
        const note = loading(`Running ${udf.name}…`);
        const tick = setInterval(() => (note.textContent = `Running ${udf.name}… ${((performance.now() - started) / 1000).toFixed(1)} s`), 200);
        result.replaceChildren(note, h('button', { type: 'button', onclick: () => mine.abort() }, 'Stop waiting'));
        try {
          // Only fields the API takes (unsigned parameters as RawNumbers, written bare by toJson).
          const body: { [K in keyof InvokeRequest]?: unknown } = { params };
          if (from) body.from = from;
          if (to) body.to = to;
          const res = await api<InvokeResponse>(apiUrl(`udfs/${encodeURIComponent(udf.name)}/invoke`), {
            method: 'POST',
            body: toJson(body),
            headers: { 'Content-Type': 'application/json' },
            signal: mine.signal,
          });
          result.replaceChildren();
          cleanup = renderResult(result, res);
          window.__loupe.timings.invokeRoundTrip = performance.now() - started;
        } catch (err) {
          if ((err as Error).name === 'AbortError') result.replaceChildren(h('p', { class: 'muted' }, 'Stopped waiting (the server may still finish it).'));
          else {
            result.replaceChildren(errorBox(err, `${udf.name} failed`));
            result.dataset.status = err instanceof ApiError ? String(err.status) : '';
          }
        } finally {
          clearInterval(tick);
          runBtn.disabled = false;
        }
      },
    },
    h(
      'fieldset',
      null,
      h('legend', null, 'Range (UTC; empty = all retained data)'),
      h('div', { class: 'filters' }, field('From', fromIn), field('To', toIn)),
      h('p', { class: 'muted small form-note' }, 'RFC 3339 in UTC (2026-11-23T00:00:00Z), Unix ns, now, or an offset (-1h).'),
    ),
    d.params.length
      ? h(
          'fieldset',
          null,
          h('legend', null, 'Parameters'),
          h(
            'div',
            { class: 'params' },
            inputs.map(({ p, input }) =>
              p.kind === 'flag'
                ? h('label', { class: 'field check' }, input, ` ${p.name}`, h('span', { class: 'hint' }, p.description))
                : field(`${p.name} (${p.kind})`, input, p.description + (p.default !== null ? ` — default ${p.default === '' ? '(empty)' : str(p.default) || JSON.stringify(p.default)}` : ''), p.default === null),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No parameters.'),
    formError,
    runBtn,
  );
  return h(
    'div',
    { class: 'card', 'data-udf': udf.name },
    h('h2', null, `Run ${udf.name}`),
    h('p', null, h('strong', null, `${d.name} ${d.version}`), ` by ${udf.owner} — ${d.summary}`),
    h('p', { class: 'muted small mono' }, `sha256 ${udf.sha256} · returns ${d.result_kind}`),
    form,
    result,
  );
}

/** Renders an invocation's result by kind; returns a cleanup. */
function renderResult(target: HTMLElement, res: InvokeResponse): () => void {
  let cleanup = () => {};
  target.dataset.kind = res.kind;
  target.dataset.status = '200';
  target.append(
    h(
      'p',
      { class: 'muted result-meta', 'data-elapsed-ns': String(res.elapsed_ns) },
      `${res.kind} in ${duration(res.elapsed_ns)} · peak memory ${bytes(res.peak_memory_bytes)} · output ${bytes(res.output_bytes)}`,
    ),
  );
  switch (res.kind) {
    case 'table': {
      target.append(
        tableWrap(
          h(
            'table',
            { class: 'data compact', id: 'result-table', 'data-rows': String(res.rows.length) },
            h('thead', null, h('tr', null, res.columns.map((c) => h('th', { scope: 'col' }, c.name, c.unit ? h('span', { class: 'muted' }, ` (${c.unit})`) : null)))),
            h('tbody', null, res.rows.map((r) => h('tr', null, r.map((cell, i) => h('td', { class: typeof cell === 'number' || /^\d+$/.test(String(cell)) ? 'num' : '' }, formatCell(cell, res.columns[i]?.unit ?? '')))))),
          ),
          'Result',
        ),
      );
      if (!res.rows.length) target.append(h('p', { class: 'muted' }, 'No rows.'));
      break;
    }
    case 'series': {
      const group = new ChartGroup(`udf-${Math.random()}`);
      cleanup = () => group.destroy();
      const holder = h('div', { class: 'chart-grid single', id: 'result-series' });
      target.append(holder);
      seriesCharts(holder, res.series, group);
      break;
    }
    case 'flamegraph': {
      const section = h('section', { class: 'flame-section', id: 'result-flame' });
      target.append(section);
      if (!res.profile.samples) {
        section.append(h('p', { class: 'muted' }, 'No stack samples in this range.'));
        break;
      }
      const fg = renderFlame(section, res.profile, 'Flame graph of the analysis');
      target.append(functionsTable(res.profile.functions, res.profile.samples, (n) => fg.search(n)));
      cleanup = () => fg.destroy();
      break;
    }
    case 'text':
      target.append(h('pre', { class: 'result-text', id: 'result-text' }, res.text));
      break;
    default:
      target.append(h('pre', null, JSON.stringify(res, null, 2)));
  }
  const log = res.log ?? [];
  target.append(
    h(
      'details',
      { class: 'log-box', open: log.length > 0 && log.length <= 20 },
      h('summary', null, `log: ${log.length} lines${res.log_dropped ? `, ${count(res.log_dropped)} bytes dropped` : ''}`),
      log.length ? h('pre', { class: 'log' }, log.map((l) => `${l.level}: ${l.message}`).join('\n')) : h('p', { class: 'muted' }, 'empty'),
    ),
  );
  return cleanup;
}

function formatCell(cell: unknown, unit: string): string {
  if (cell === null || cell === undefined) return '—';
  if (typeof cell === 'string' && /^\d{16,}$/.test(cell) && /ns$|unix/i.test(unit)) return `${rfc3339(cell)}`;
  if (typeof cell === 'number') {
    if (unit === 'unix_ns' || unit === 'ns_since_epoch') return rfc3339(BigInt(Math.round(cell)));
    return Number.isInteger(cell) ? count(cell) : String(Number(cell.toPrecision(6)));
  }
  return String(cell);
}

function seriesCharts(holder: HTMLElement, series: SeriesOut[], group: ChartGroup): void {
  if (!series.length || series.every((s) => !s.points.length)) {
    holder.append(h('p', { class: 'muted' }, 'No points.'));
    group.seal();
    return;
  }
  // x: seconds from the earliest point (exact base kept as BigInt for the legend).
  let base: bigint | null = null;
  for (const s of series) for (const [t] of s.points) {
    const b = BigInt(str(t));
    if (base === null || b < base) base = b;
  }
  const b0 = base ?? 0n;
  const xOf = (t: string | number) => Number(BigInt(str(t)) - b0) / 1e9;
  const byUnit = new Map<string, SeriesOut[]>();
  for (const s of series) byUnit.set(s.unit, [...(byUnit.get(s.unit) ?? []), s]);
  const cells: { plot: HTMLElement; list: SeriesOut[]; unit: string }[] = [];
  for (const [unit, list] of byUnit) {
    const plot = h('div', { class: 'chart-plot' });
    holder.append(h('figure', { class: 'chart' }, h('figcaption', null, list.map((s) => s.name).join(', '), h('span', { class: 'muted' }, unit ? ` (${unit})` : '')), plot));
    cells.push({ plot, list, unit });
  }
  const width = Math.floor(cells[0].plot.clientWidth) || 600;
  for (const { plot, list, unit } of cells) {
    const xsSet = new Set<number>();
    for (const s of list) for (const [t] of s.points) xsSet.add(xOf(t));
    const xs = [...xsSet].sort((a, b) => a - b);
    const idx = new Map(xs.map((x, i) => [x, i]));
    const ys = list.map((s) => {
      const arr: (number | null)[] = new Array(xs.length).fill(null);
      for (const [t, v] of s.points) arr[idx.get(xOf(t))!] = v;
      return arr;
    });
    group.add(
      plot,
      {
        title: unit,
        xs,
        series: list.map((s, i) => ({ label: s.name, unit: s.unit, values: ys[i] })),
        height: 220,
        xValue: (v) => rfc3339(b0 + BigInt(Math.round(v * 1e9)), 6),
      },
      width,
    );
  }
  group.seal();
  group.autoResize((u) => u.root.parentElement!);
}
