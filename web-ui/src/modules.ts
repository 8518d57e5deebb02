// The library share view's arithmetic: each module's (shared library's, the kernel's, the
// program's own) share of a profile's samples. Self-contained (type-only imports), so the unit
// tests load it in node (test/modules.test.mjs).

import type { ModuleCount } from './types';

/** A module's counts with its shares of the profile's samples, each in [0, 1]. */
export interface ModuleShare extends ModuleCount {
  /** `self / samples`: the share of samples whose running code (the leaf frame) is in it. */
  selfShare: number;
  /** `total / samples`: the share of samples with the module anywhere on the stack. */
  totalShare: number;
}

/** A share in [0, 1] (0 for no samples; clamped, so a bar never overflows its track). */
export function share(part: number, whole: number): number {
  if (!(whole > 0) || !(part > 0)) return 0;
  return Math.min(1, part / whole);
}

/**
 * The modules by self samples, descending, then total, descending, then name (the API's order,
 * re-established here so the table never depends on it), with their shares of `samples`.
 */
export function moduleShares(modules: readonly ModuleCount[], samples: number): ModuleShare[] {
  return [...modules]
    .sort((a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((m) => ({ ...m, selfShare: share(m.self, samples), totalShare: share(m.total, samples) }));
}

/** A share as a bar's CSS width: `42.5%` (at most one decimal, `0%` … `100%`). */
export function barWidth(s: number): string {
  const p = Number.isFinite(s) ? Math.min(100, Math.max(0, s * 100)) : 0;
  return `${Number(p.toFixed(1))}%`;
}
