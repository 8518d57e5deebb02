// Shared bits of the views: error boxes, loading notes, key/value lists, cards, downloads.

import { ApiError, apiBlob, getToken } from './api';
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

/**
 * A download of an API answer: a plain link without a token; with one, the file is fetched
 * with the Authorization header and saved from a Blob. `errors` shows a failed download.
 */
export function downloadLink(url: string, file: string, label: string, id: string, errors: HTMLElement): HTMLAnchorElement {
  return h(
    'a',
    {
      href: url,
      class: 'button',
      id,
      download: file,
      onclick: async (e: Event) => {
        if (!getToken()) return;
        e.preventDefault();
        errors.replaceChildren();
        try {
          const blob = await apiBlob(url);
          const href = URL.createObjectURL(blob);
          const a = h('a', { href, download: file, hidden: true });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(href), 10_000);
        } catch (err) {
          errors.replaceChildren(errorBox(err, `${file} download`));
        }
      },
    },
    label,
  );
}
