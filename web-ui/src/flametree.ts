// A flame graph tree (`{name, value, kind, children}`) flattened into typed arrays, in pre-order:
// each depth's nodes come out sorted by x, so drawing and hit testing binary-search a row.

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
  /** Each name's kind of code (`kernel`, `jit`, `python`; `native` when the node says none). */
  kinds: string[];
  /** Node indices per depth, in increasing x. */
  byDepth: Int32Array[];
  maxDepth: number;
  total: number;
  /** Each node's `base` (a differential flame graph's baseline samples on the same path), if asked. */
  base: Float64Array | null;
}

function grow<T extends Float64Array | Int32Array | Uint16Array>(a: T, size: number): T {
  const g = new (a.constructor as new (n: number) => T)(size);
  g.set(a);
  return g;
}

/** One pass over the tree (arrays grow by doubling): no separate counting walk. */
export function flattenTree(root: FlameNode & { base?: number }, withBase = false): FlatTree {
  let cap = 1024;
  let base = new Float64Array(withBase ? cap : 0);
  let depth = new Uint16Array(cap);
  let xs = new Float64Array(cap);
  let val = new Float64Array(cap);
  let selfv = new Float64Array(cap);
  let parent = new Int32Array(cap);
  let nameId = new Int32Array(cap);
  const names: string[] = [];
  const kinds: string[] = [];
  const nameIds = new Map<string, number>();

  // Pre-order with an explicit stack; children pushed right to left so the leftmost comes out
  // first, which keeps every depth's nodes in increasing x.
  let scap = 1024;
  const stackNode: (FlameNode & { base?: number })[] = [];
  let stackParent = new Int32Array(scap);
  let stackX = new Float64Array(scap);
  let stackDepth = new Int32Array(scap);
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
    if (i === cap) {
      cap *= 2;
      depth = grow(depth, cap);
      xs = grow(xs, cap);
      val = grow(val, cap);
      selfv = grow(selfv, cap);
      parent = grow(parent, cap);
      nameId = grow(nameId, cap);
      if (withBase) base = grow(base, cap);
    }
    if (withBase) base[i] = typeof node.base === 'number' ? node.base : num(node.base);
    depth[i] = d;
    xs[i] = x;
    val[i] = v;
    parent[i] = p;
    let id = nameIds.get(node.name);
    if (id === undefined) {
      id = names.length;
      nameIds.set(node.name, id);
      names.push(node.name);
      kinds.push(node.kind ?? 'native');
    }
    nameId[i] = id;
    if (d > maxDepth) maxDepth = d;
    if (d >= depthCount.length) depthCount = grow(depthCount, depthCount.length * 2);
    depthCount[d]++;
    let childSum = 0;
    const ch = node.children;
    if (ch && ch.length) {
      for (let k = 0; k < ch.length; k++) {
        const cv = ch[k].value;
        childSum += typeof cv === 'number' ? cv : num(cv);
      }
      if (sp + ch.length > scap) {
        while (sp + ch.length > scap) scap *= 2;
        stackParent = grow(stackParent, scap);
        stackX = grow(stackX, scap);
        stackDepth = grow(stackDepth, scap);
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
  const n = i;
  const byDepth: Int32Array[] = [];
  for (let d = 0; d <= maxDepth; d++) byDepth.push(new Int32Array(depthCount[d]));
  const fill = new Int32Array(maxDepth + 1);
  for (let k = 0; k < n; k++) {
    const d = depth[k];
    byDepth[d][fill[d]++] = k;
  }
  return {
    n,
    depth: depth.subarray(0, n),
    x: xs.subarray(0, n),
    val: val.subarray(0, n),
    selfv: selfv.subarray(0, n),
    parent: parent.subarray(0, n),
    nameId: nameId.subarray(0, n),
    names,
    kinds,
    byDepth,
    maxDepth,
    total: val[0] || 0,
    base: withBase ? base.subarray(0, n) : null,
  };
}

