// Shared bits of the views: error boxes, loading notes, key/value lists, cards.

import { ApiError } from './api';
import { h } from './dom';

/** An API error shown plainly: status, code and the server's sentence (and the analysis' log). */
export function errorBox(err: unknown, what?: string): HTMLElement {
  if (err instanceof ApiError) {
    const unauthorized = err.status === 401;
    return h(
      'div',
      { class: 'error', role: 'alert', 'data-status': String(err.status), 'data-code': err.code },
      h(
        'p',
        { class: 'error-head' },
        what ? `${what}: ` : '',
        h('span', { class: 'error-status' }, err.status ? String(err.status) : 'network'),
        ' ',
        h('code', { class: 'error-code' }, err.code),
      ),
      h('p', { class: 'error-message' }, err.message),
      unauthorized
        ? h('p', null, 'The token is missing, unknown or revoked. Enter a valid team token (', h('code', null, 'loupe token add TEAM'), ') in the token field above.')
        : null,
      err.log.length ? h('details', { open: true }, h('summary', null, `log (${err.log.length} lines)`), h('pre', { class: 'log' }, err.log.join('\n'))) : null,
    );
  }
  if ((err as Error)?.name === 'AbortError') return h('span');
  return h('div', { class: 'error', role: 'alert' }, h('p', { class: 'error-head' }, what ? `${what}: ` : '', 'error'), h('p', { class: 'error-message' }, String((err as Error)?.message ?? err)));
}

export function loading(text = 'Loading…'): HTMLElement {
  return h('p', { class: 'loading muted', role: 'status' }, text);
}

export function kv(rows: [string, Node | string | number | null | undefined][]): HTMLElement {
  return h(
    'dl',
    { class: 'kv' },
    rows.filter(([, v]) => v !== null && v !== undefined).flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v as Node | string)]),
  );
}

export function card(title: string | Node, ...body: (Node | string | null)[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', null, title), ...body);
}

export function tableWrap(table: HTMLElement, label?: string): HTMLElement {
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': label ?? 'table' }, table);
}
