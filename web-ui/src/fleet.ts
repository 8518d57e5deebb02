// What the fleet view computes from the API's answers, kept free of the DOM so node's test
// runner checks it (test/fleet.test.mjs): a synchronized run's rack sum, and the
// fleet-hot-functions table turned into "datacenter tax" rows (libraries) and functions, each
// with every host's share.

import type { Cell, Column } from './types';

/** Per slot, the sum over hosts (the rack's ingress or egress). Hosts of another length (a
 * host that answered a different run) are summed over the slots they have. */
export function rackSum(series: readonly (readonly number[])[], slots: number): number[] {
  const sum = new Array<number>(slots).fill(0);
  for (const s of series) for (let i = 0; i < Math.min(slots, s.length); i++) sum[i] += s[i];
  return sum;
}

export interface HotLibrary {
  module: string;
  samples: number;
  /** Of all selected hosts' samples, %. */
  percent: number;
  /** Samples of this library per host, most first. */
  hosts: { host: string; samples: number }[];
}

export interface HotFunction {
  function: string;
  module: string;
  samples: number;
  percent: number;
  /** Samples of this function per host (only hosts that ran it), most first. */
  hosts: { host: string; samples: number }[];
}

export interface HotTables {
  /** All selected hosts' samples (host `*`). */
  samples: number;
  libraries: HotLibrary[];
  functions: HotFunction[];
  /** Each host's own sample count. */
  hosts: { host: string; samples: number }[];
}

/** Reads the table `fleet-hot-functions` answers (columns kind, function, module, host,
 * samples, percent); throws with what is wrong if the table is not of that shape. */
export function hotTables(columns: readonly Column[], rows: readonly (readonly Cell[])[]): HotTables {
  const want = ['kind', 'function', 'module', 'host', 'samples', 'percent'];
  const names = columns.map((c) => c.name);
  if (want.some((w, i) => names[i] !== w)) throw new Error(`not a fleet-hot-functions table: columns ${names.join(', ')}`);
  const functions = new Map<string, HotFunction>();
  const num = (c: Cell) => (typeof c === 'number' ? c : typeof c === 'string' && /^\d+$/.test(c) ? Number(c) : 0);
  const text = (c: Cell) => (typeof c === 'string' ? c : String(c ?? ''));
  let samples = 0;
  const hosts: { host: string; samples: number }[] = [];
  const libs = new Map<string, HotLibrary>();
  const perHost: { kind: string; key: string; host: string; samples: number }[] = [];
  for (const r of rows) {
    const [kind, fn, mod, host] = [text(r[0]), text(r[1]), text(r[2]), text(r[3])];
    const n = num(r[4]);
    const pct = typeof r[5] === 'number' ? r[5] : 0;
    const key = kind === 'library' ? mod : `${fn}\u0000${mod}`;
    if (kind === 'host') {
      if (host === '*') samples = n;
      else hosts.push({ host, samples: n });
    } else if (host !== '*') {
      perHost.push({ kind, key, host, samples: n });
    } else if (kind === 'library') {
      libs.set(key, { module: mod, samples: n, percent: pct, hosts: [] });
    } else if (kind === 'function') {
      functions.set(key, { function: fn, module: mod, samples: n, percent: pct, hosts: [] });
    }
  }
  // A host's rows of entries outside the fleet's own list (its `[other]`) are not listed.
  for (const p of perHost) (p.kind === 'library' ? libs : functions).get(p.key)?.hosts.push({ host: p.host, samples: p.samples });
  const libraries = [...libs.values()];
  for (const l of libraries) l.hosts.sort((a, b) => b.samples - a.samples || a.host.localeCompare(b.host));
  const list = [...functions.values()].sort((a, b) => b.samples - a.samples || a.function.localeCompare(b.function));
  for (const f of list) f.hosts.sort((a, b) => b.samples - a.samples || a.host.localeCompare(b.host));
  libraries.sort((a, b) => b.samples - a.samples || a.module.localeCompare(b.module));
  hosts.sort((a, b) => a.host.localeCompare(b.host, undefined, { numeric: true }));
  return { samples, libraries, functions: list, hosts };
}
