// The time range form, written once: From and To (UTC) read as RFC 3339, Unix ns, `now` or an
// offset (time.ts), with a view's own filters after them, opening the view's route with the new
// query. The profile, timeline and probes views show it; with no range, profile and timeline
// offer quick ranges. The analyses' and the fleet's forms take their range in the same inputs.

import { api } from './api';
import { field, h } from './dom';
import { str } from './json';
import { NS_PER_DAY, parseTimeInput, timeForInput } from './time';
import type { Day } from './types';
import { errorBox, loading } from './ui';
import type { ViewCtx } from './view';

/** A time input: a query's Unix ns shown as RFC 3339, anything else as it is. */
export function timeInput(id: string, value: string | null | undefined, placeholder?: string): HTMLInputElement {
  return h('input', { type: 'text', id, value: timeForInput(value), placeholder, spellcheck: 'false', class: 'time-input' });
}

export interface RangeFormOptions {
  /** `profile`: inputs `#profile-from` and `#profile-to`, the form `.filters.profile-form`. */
  name: string;
  /** The view's route the form opens, without its query: `#/profile`. */
  route: string;
  /** The view's query: the range shown in the inputs. */
  query: URLSearchParams;
  placeholders: [from: string, to: string];
  /** The submit button's text. */
  submit: string;
  /** The view's own filter fields, after From and To. */
  fields?: HTMLElement[];
  /** Elements after the submit button (a link, a datalist). */
  after?: HTMLElement[];
  /** Adds the view's filters to the query the form opens; throws an Error saying what is wrong. */
  filters?: (q: URLSearchParams) => void;
  /** Neither end given: ask for everything retained (`from=0`) rather than for no range. */
  allWhenEmpty?: boolean;
}

/** The range form of a view; a bad time or filter is said in the form, and nothing is opened. */
export function rangeForm(o: RangeFormOptions): HTMLFormElement {
  const fromIn = timeInput(`${o.name}-from`, o.query.get('from'), o.placeholders[0]);
  const toIn = timeInput(`${o.name}-to`, o.query.get('to'), o.placeholders[1]);
  const formError = h('p', { class: 'form-error', role: 'alert' });
  return h(
    'form',
    {
      class: `filters ${o.name}-form`,
      onsubmit: (e: Event) => {
        e.preventDefault();
        formError.textContent = '';
        try {
          const nq = new URLSearchParams();
          const f = parseTimeInput(fromIn.value);
          const t = parseTimeInput(toIn.value);
          if (f) nq.set('from', f);
          if (t) nq.set('to', t);
          o.filters?.(nq);
          if (o.allWhenEmpty && !nq.has('from') && !nq.has('to')) nq.set('from', '0');
          const s = nq.toString();
          location.hash = `${o.route}${s ? '?' + s : ''}`;
        } catch (err) {
          formError.textContent = (err as Error).message;
        }
      },
    },
    field('From (UTC)', fromIn),
    field('To (UTC)', toIn),
    ...(o.fields ?? []),
    h('button', { type: 'submit', class: 'primary' }, o.submit),
    ...(o.after ?? []),
    formError,
  );
}

/** Sets filter `name` from a text input when it is not empty; `digits`: it must be a number. */
export function setFilter(q: URLSearchParams, name: string, input: HTMLInputElement, digits = false): void {
  const v = input.value.trim();
  if (!v) return;
  if (digits && !/^\d+$/.test(v)) throw new Error(`${name} must be a number`);
  q.set(name, v);
}

/**
 * A view opened without a range: choose one and press `submit`, or take the last 10 minutes,
 * the last hour, (`everything`) all retained, or one of the latest five retained days that
 * `dayLabel` names (null leaves a day out).
 */
export async function quickRanges(root: HTMLElement, ctx: ViewCtx, route: string, submit: string, dayLabel: (d: Day) => string | null, everything = false): Promise<void> {
  const choose = (or: string) => h('p', null, 'Choose a time range and press ', h('strong', null, submit), `, or${or}:`);
  const hint = h('div', { class: 'card' }, choose(''), loading());
  root.append(hint);
  const days = await api<Day[]>('/api/v1/days', { signal: ctx.signal }).catch((e) => e as Error);
  if (ctx.signal.aborted) return;
  const list = h(
    'ul',
    { class: 'quick' },
    h('li', null, h('a', { href: `${route}?from=-10m&to=now` }, 'the last 10 minutes')),
    h('li', null, h('a', { href: `${route}?from=-1h&to=now` }, 'the last hour')),
    everything ? h('li', null, h('a', { href: `${route}?from=0` }, 'everything retained')) : null,
  );
  if (Array.isArray(days)) {
    const named = [...days].reverse().flatMap((d) => {
      const label = dayLabel(d);
      return label === null ? [] : [{ d, label }];
    });
    for (const { d, label } of named.slice(0, 5)) {
      const s = str(d.day_start_unix_ns);
      list.append(h('li', null, h('a', { href: `${route}?from=${s}&to=${(BigInt(s) + NS_PER_DAY).toString()}` }, label)));
    }
  }
  hint.replaceChildren(choose(' take'), list, ...(days instanceof Error ? [errorBox(days)] : []));
}
