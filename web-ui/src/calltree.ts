// The slowest calls of a probe session as small call trees: each call indented under its
// caller with its total and self time, a bar of its share of the outermost call, and the
// heaviest of each call's children highlighted — where a slow call's time went.

import { h } from './dom';
import { count } from './format';
import { str } from './json';
import { heaviestPath, treeRows } from './probes';
import { lagText } from './timeline';
import { rfc3339 } from './time';
import type { CallTree } from './types';
import { tableWrap } from './ui';

/** Rows drawn per tree (the API sends at most 256 calls a tree). */
export const MAX_TREE_ROWS = 64;
/** Trees open at first; the rest are one summary line each until opened. */
const OPEN_TREES = 3;

/** Every tree, slowest first; returns the number of rows drawn. */
export function callTrees(parent: HTMLElement, trees: CallTree[], sessionStart: string): number {
  let drawn = 0;
  trees.forEach((tree, i) => {
    const { rows, omitted } = treeRows(tree, MAX_TREE_ROWS);
    drawn += rows.length;
    const path = heaviestPath(tree);
    const entry = str(tree.entry_unix_ns);
    const at = sessionStart ? Number(BigInt(entry) - BigInt(sessionStart)) : 0;
    const table = h(
      'table',
      { class: 'data compact call-tree' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          h('th', { scope: 'col' }, 'Call'),
          h('th', { scope: 'col', class: 'num' }, 'Start'),
          h('th', { scope: 'col', class: 'num' }, 'Total'),
          h('th', { scope: 'col', class: 'num' }, 'Self'),
          h('th', { scope: 'col' }, 'Share of the call'),
        ),
      ),
      h(
        'tbody',
        null,
        rows.map((r) =>
          h(
            'tr',
            {
              'data-function': r.node.function,
              'data-depth': String(r.depth),
              'data-duration': String(r.node.duration_ns),
              'data-self': String(r.node.self_ns),
              'data-heaviest': r.heaviest ? 'true' : null,
              class: r.heaviest ? 'heaviest' : null,
            },
            h(
              'th',
              { scope: 'row', class: 'mono call-name', style: { paddingLeft: `${0.4 + r.depth * 1.3}rem` } },
              r.depth ? h('span', { class: 'tree-elbow', 'aria-hidden': 'true' }, '└ ') : null,
              r.node.function,
              r.heaviest ? h('span', { class: 'heaviest-badge', title: 'The slowest of its caller’s children' }, 'heaviest') : null,
            ),
            h('td', { class: 'num mono' }, r.depth ? `+${lagText(r.offsetNs)}` : '0'),
            h('td', { class: 'num', title: `${count(r.node.duration_ns)} ns` }, lagText(r.node.duration_ns)),
            h('td', { class: 'num', title: `${count(r.node.self_ns)} ns` }, lagText(r.node.self_ns)),
            h(
              'td',
              { class: 'tree-share' },
              h('span', { class: 'share-bar', 'aria-hidden': 'true' }, h('span', { class: 'share-fill', style: { width: `${(r.share * 100).toFixed(1)}%` } })),
            ),
          ),
        ),
      ),
    );
    parent.append(
      h(
        'details',
        { class: 'call-tree-box', open: i < OPEN_TREES, 'data-function': tree.function, 'data-duration': String(tree.duration_ns), 'data-rows': String(rows.length) },
        h(
          'summary',
          null,
          h('span', { class: 'mono' }, tree.function),
          ' ',
          h('strong', null, lagText(tree.duration_ns)),
          h('span', { class: 'muted' }, ` · tid ${tree.tid} · ${rfc3339(entry, 6).slice(11)} (+${lagText(at)})`),
          path.length > 1 ? h('span', { class: 'muted small' }, ` · heaviest: ${path.join(' › ')}`) : null,
        ),
        // The call's moment on one axis with everything else: the call and as long again each side.
        h(
          'a',
          {
            class: 'window-at small',
            href: `#/window?from=${(BigInt(entry) - BigInt(tree.duration_ns)).toString()}&to=${(BigInt(entry) + 2n * BigInt(tree.duration_ns) + 1n).toString()}`,
          },
          'Everything during this call',
        ),
        tableWrap(table, `Call tree of the ${tree.function} call at ${rfc3339(entry)}`),
        omitted ? h('p', { class: 'muted small table-note' }, `and ${count(omitted)} more calls in this tree, not shown`) : null,
      ),
    );
  });
  return drawn;
}
