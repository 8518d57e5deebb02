// Starting a probe session: a form (PIDs or a binary, functions, length, sampling, calls,
// budget) prefilled from the hash — the profile's "Probe" action gives the function and the
// profile's PID — that POSTs /api/v1/probes and shows the running session with a stop button;
// the same command for a shell beside it. Refusals (409 under `loupe serve`, an unknown symbol,
// a function the kernel would single-step, …) are shown as the server words them.

import { ApiError, api, apiUrl } from '../api';
import { field, h } from '../dom';
import { count, duration } from '../format';
import { str } from '../json';
import type { ViewCtx } from '../view';
import { splitFunctions, splitList, targetText } from '../probes';
import type { ActiveProbe, ProbeOrder, ProbeView } from '../types';
import { rfc3339 } from '../time';
import { errorBox, kv, tableWrap } from '../ui';

/** The session's defaults when the hash gives none: 10 s, every call timed, calls recorded. */
const DEFAULT_SECONDS = '10';

export function probeStartView(root: HTMLElement, ctx: ViewCtx): void {
  document.title = 'Start a probe · Loupe';
  const q = ctx.query;
  root.append(
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/probes' }, 'Probes'), ' › ', 'start'),
    h('h1', null, 'Start a probe'),
  );
  if (ctx.health?.mode !== 'agent') {
    root.append(
      h(
        'p',
        { class: 'lost-note', role: 'note', id: 'probe-start-serve-note' },
        h('strong', null, 'This server only serves a store '),
        '(',
        h('code', null, 'loupe serve'),
        '): probes attach on a collecting agent (',
        h('code', null, 'loupe agent'),
        '), so it will refuse to start one. The command below does the same from a shell on the host.',
      ),
    );
  }

  const pidsIn = h('input', { type: 'text', id: 'probe-pids', value: q.get('pid') ?? '', inputmode: 'numeric', size: '14', spellcheck: 'false', placeholder: '4242' });
  const binaryIn = h('input', { type: 'text', id: 'probe-binary', value: q.get('binary') ?? '', size: '24', spellcheck: 'false', placeholder: '/usr/local/bin/nf' });
  const funcsIn = h('input', { type: 'text', id: 'probe-functions', value: q.get('functions') ?? '', size: '32', spellcheck: 'false', required: true, placeholder: 'handle, parse, lookup, forward' });
  const secondsIn = h('input', { type: 'number', id: 'probe-seconds', value: q.get('seconds') ?? DEFAULT_SECONDS, min: '0.001', max: '3600', step: 'any', class: 'narrow' });
  const sampleIn = h('input', { type: 'number', id: 'probe-sample', value: q.get('sample') ?? '1', min: '1', step: '1', class: 'narrow' });
  const budgetIn = h('input', { type: 'number', id: 'probe-budget', value: q.get('budget') ?? '1', min: '0.01', max: '1000', step: 'any', class: 'narrow' });
  const callsIn = h('input', { type: 'checkbox', id: 'probe-calls', checked: q.get('calls') !== 'false' });
  const formError = h('p', { class: 'form-error', role: 'alert' });
  const cli = h('code', { id: 'probe-cli' });
  const result = h('div', { id: 'probe-start-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', id: 'probe-start-submit' }, 'Start probe');

  /** The order the form describes, or an error saying what to fix. */
  const order = (): ProbeOrder => {
    const pids = splitList(pidsIn.value);
    for (const p of pids) if (!/^\d+$/.test(p) || Number(p) > 0xffff_ffff) throw new Error(`PID '${p}' is not a process id`);
    const functions = splitFunctions(funcsIn.value);
    if (!functions.length) throw new Error('name at least one function');
    const binary = binaryIn.value.trim();
    if (!pids.length && !binary) throw new Error('give a PID, or a binary to probe in every process that maps it');
    const seconds = Number(secondsIn.value);
    if (!(seconds > 0 && seconds <= 3600)) throw new Error('seconds: more than 0, at most 3600');
    const sample = Number(sampleIn.value);
    if (!Number.isInteger(sample) || sample < 1) throw new Error('sample every: a whole number, 1 or more');
    const budget = Number(budgetIn.value);
    if (!(budget > 0 && budget <= 1000)) throw new Error('budget: a percentage of one CPU, more than 0 and at most 1000 (100 is a whole CPU)');
    return { pids: pids.map(Number), binary: binary || null, functions, seconds, sample_every: sample, calls: callsIn.checked, budget_percent: budget };
  };

  const updateCli = () => {
    const parts = ['loupe probe'];
    for (const p of splitList(pidsIn.value)) parts.push(`--pid ${p}`);
    if (binaryIn.value.trim()) parts.push(`--binary ${shellWord(binaryIn.value.trim())}`);
    const functions = splitFunctions(funcsIn.value);
    // One --func per name when a name has a comma of its own (the CLI splits a list at commas).
    if (functions.some((f) => f.includes(','))) for (const f of functions) parts.push(`--func ${shellWord(f)}`);
    else parts.push(`--func ${shellWord(functions.join(',') || 'FUNCTION')}`);
    if (secondsIn.value) parts.push(`--seconds ${secondsIn.value}`);
    if (sampleIn.value && sampleIn.value !== '1') parts.push(`--sample ${sampleIn.value}`);
    if (callsIn.checked) parts.push('--calls');
    if (budgetIn.value && budgetIn.value !== '1') parts.push(`--budget ${budgetIn.value}`);
    cli.textContent = parts.join(' ');
  };

  const form = h(
    'form',
    {
      class: 'filters probe-start-form',
      id: 'probe-start-form',
      oninput: updateCli,
      onchange: updateCli,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        formError.textContent = '';
        result.replaceChildren();
        let body: ProbeOrder;
        try {
          body = order();
        } catch (err) {
          formError.textContent = (err as Error).message;
          return;
        }
        submit.disabled = true;
        try {
          const active = await api<ActiveProbe>(apiUrl('probes'), { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' }, signal: ctx.signal });
          if (ctx.signal.aborted) return;
          result.replaceChildren(activeCard(active, ctx.signal));
        } catch (err) {
          if ((err as Error).name === 'AbortError') return;
          result.replaceChildren(startError(err));
        } finally {
          submit.disabled = false;
        }
      },
    },
    field('PIDs', pidsIn, 'comma-separated'),
    field('or binary', binaryIn, 'every process mapping it'),
    field('Functions', funcsIn, 'SYMBOL or LIBRARY:SYMBOL, comma-separated', true),
    field('Seconds', secondsIn),
    field('Time 1 in', sampleIn, 'outermost calls'),
    field('Budget %', budgetIn, 'of one CPU'),
    h('label', { class: 'field check' }, callsIn, ' record calls (call trees)'),
    submit,
    formError,
  );
  updateCli();
  root.append(form, h('p', { class: 'muted small form-note' }, 'From a shell on the host: ', cli), result);
  if (!funcsIn.value) funcsIn.focus();
}

/** A word as a POSIX shell reads it: bare when safe, else in single quotes. */
function shellWord(w: string): string {
  return /^[\w./:,@%+=-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`;
}

/** A refusal, plainly: status, code and the server's sentence, and what to do about a 409. */
function startError(err: unknown): HTMLElement {
  const box = errorBox(err, 'Start probe');
  if (err instanceof ApiError && err.status === 409 && err.code === 'not_collecting') {
    box.append(
      h(
        'p',
        { id: 'probe-start-hint' },
        'Nothing was attached: probes run on a collecting agent (',
        h('code', null, 'loupe agent'),
        '), and this server only serves a store. Open the agent’s UI, or run the command above on the host.',
      ),
    );
  }
  return box;
}

/** The session just started, with a stop button that opens what it stored. */
function activeCard(a: ActiveProbe, signal: AbortSignal): HTMLElement {
  const ends = a.ends_unix_ns == null ? null : str(a.ends_unix_ns);
  return h(
    'section',
    { class: 'card probe-active', id: 'probe-active', 'data-handle': str(a.handle) },
    h('h2', null, `Running: handle ${str(a.handle)}`),
    kv([
      ['target', h('span', { class: 'mono' }, targetText(a))],
      ['functions', h('span', { class: 'mono' }, a.functions.join(', '))],
      ['team', h('span', { class: 'mono' }, a.team || '—')],
      ['started (UTC)', h('span', { class: 'mono' }, rfc3339(str(a.started_unix_ns), 6))],
      ['ends (UTC)', ends ? h('span', { class: 'mono' }, rfc3339(ends, 6)) : 'when stopped (at most an hour)'],
      ['timed', a.sample_every > 1 ? `1 in ${count(a.sample_every)} outermost calls` : 'every call'],
      ['calls', a.calls ? 'recorded (call trees)' : 'counted only'],
    ]),
    stopButton(a, signal),
    h('p', { class: 'muted small' }, 'It is stored when it ends, by its length, a stop, its budget or its processes’ exit; then it is listed under ', h('a', { href: '#/probes' }, 'Probes'), '.'),
  );
}

function stopButton(a: ActiveProbe, signal: AbortSignal): HTMLElement {
  const out = h('span', { class: 'stop-result' });
  const btn = h('button', {
    type: 'button',
    class: 'danger',
    'data-handle': str(a.handle),
    onclick: async () => {
      btn.disabled = true;
      out.replaceChildren(' stopping…');
      try {
        const view = await api<ProbeView>(apiUrl(`probes/active/${str(a.handle)}/stop`), { method: 'POST', signal });
        location.hash = `#/probes/${str(view.id)}`;
      } catch (err) {
        if ((err as Error).name === 'AbortError') return;
        out.replaceChildren(errorBox(err, 'Stop'));
        btn.disabled = false;
      }
    },
  }, 'Stop and show');
  return h('div', { class: 'actions' }, btn, out);
}

/** Sessions running on the agent, each with the team that owns it and its stop button. */
export function activeTable(active: ActiveProbe[], signal: AbortSignal): HTMLElement {
  return tableWrap(
    h(
      'table',
      { class: 'data compact', id: 'probes-active' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ...['Handle', 'Team', 'Started (UTC)', 'Length', 'Target', 'Functions', 'Timed', ''].map((t, i) => h('th', { scope: 'col', class: i === 3 ? 'num' : null }, t)),
        ),
      ),
      h(
        'tbody',
        null,
        active.map((a) => {
          const start = str(a.started_unix_ns);
          const length = a.ends_unix_ns == null ? null : Number(BigInt(str(a.ends_unix_ns)) - BigInt(start));
          return h(
            'tr',
            { 'data-handle': str(a.handle) },
            h('th', { scope: 'row', class: 'mono' }, str(a.handle)),
            // Only this team (or an admin) may stop it.
            h('td', { class: 'mono' }, a.team || '—'),
            h('td', { class: 'mono' }, rfc3339(start, 6)),
            h('td', { class: 'num' }, length === null ? 'until stopped' : duration(length)),
            h('td', { class: 'mono' }, targetText(a)),
            h('td', { class: 'mono' }, a.functions.join(', ')),
            h('td', null, a.sample_every > 1 ? `1 in ${count(a.sample_every)}` : 'every call'),
            h('td', null, stopButton(a, signal)),
          );
        }),
      ),
    ),
    'Probe sessions running on the agent',
  );
}
