// A flame graph tree (`{name, value, children}`) flattened into typed arrays, in pre-order: each
// depth's nodes come out sorted by x, so drawing and hit testing binary-search a row.

import { num } from './json';
import type { FlameNode } from './types';

export interface FlatTree {
  n: number;
  depth: Uint16Array;
  /** Left edge in samples. */
  x: Float64Array;
  val: Float64Array;
  selfv: Float64Array;
  parent: Int32Array;
  nameId: Int32Array;
  names: string[];
  /** Node indices per depth, in increasing x. */
  byDepth: Int32Array[];
  maxDepth: number;
  total: number;
}

export function flattenTree(root: FlameNode): FlatTree {
  // First pass: count the nodes.
  let n = 0;
  const countStack: FlameNode[] = [root];
  while (countStack.length) {
    const node = countStack.pop()!;
    n++;
    const ch = node.children;
    if (ch) for (let i = 0; i < ch.length; i++) countStack.push(ch[i]);
  }
  const depth = new Uint16Array(n);
  const xs = new Float64Array(n);
  const val = new Float64Array(n);
  const selfv = new Float64Array(n);
  const parent = new Int32Array(n);
  const nameId = new Int32Array(n);
  const names: string[] = [];
  const nameIds = new Map<string, number>();

  // Pre-order with an explicit stack; children pushed right to left so the leftmost comes out
  // first, which keeps every depth's nodes in increasing x.
  const stackNode: FlameNode[] = new Array(n);
  const stackParent = new Int32Array(n);
  const stackX = new Float64Array(n);
  const stackDepth = new Int32Array(n);
  let sp = 0;
  stackNode[sp] = root;
  stackParent[sp] = -1;
  stackX[sp] = 0;
  stackDepth[sp] = 0;
  sp++;
  let i = 0;
  let maxDepth = 0;
  let depthCount = new Int32Array(64);
  while (sp > 0) {
    sp--;
    const node = stackNode[sp];
    const p = stackParent[sp];
    const x = stackX[sp];
    const d = stackDepth[sp];
    const raw = node.value;
    const v = typeof raw === 'number' ? raw : num(raw);
    depth[i] = d;
    xs[i] = x;
    val[i] = v;
    parent[i] = p;
    let id = nameIds.get(node.name);
    if (id === undefined) {
      id = names.length;
      nameIds.set(node.name, id);
      names.push(node.name);
    }
    nameId[i] = id;
    if (d > maxDepth) maxDepth = d;
    if (d >= depthCount.length) {
      const grown = new Int32Array(depthCount.length * 2);
      grown.set(depthCount);
      depthCount = grown;
    }
    depthCount[d]++;
    let childSum = 0;
    const ch = node.children;
    if (ch && ch.length) {
      for (let k = 0; k < ch.length; k++) {
        const cv = ch[k].value;
        childSum += typeof cv === 'number' ? cv : num(cv);
      }
      // Right to left: each child starts where the ones after it begin, minus its value.
      let cx = x + childSum;
      for (let k = ch.length - 1; k >= 0; k--) {
        const c = ch[k];
        const cv = c.value;
        cx -= typeof cv === 'number' ? cv : num(cv);
        stackNode[sp] = c;
        stackParent[sp] = i;
        stackX[sp] = cx;
        stackDepth[sp] = d + 1;
        sp++;
      }
    }
    selfv[i] = Math.max(0, v - childSum);
    i++;
  }
  const byDepth: Int32Array[] = [];
  for (let d = 0; d <= maxDepth; d++) byDepth.push(new Int32Array(depthCount[d]));
  const fill = new Int32Array(maxDepth + 1);
  for (let k = 0; k < n; k++) {
    const d = depth[k];
    byDepth[d][fill[d]++] = k;
  }
  return { n, depth, x: xs, val, selfv, parent, nameId, names, byDepth, maxDepth, total: val[0] || 0 };
}
