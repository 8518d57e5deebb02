// What the shell hands each view (`main.ts` routes; `views/` render): a module of its own, so
// the views depend on it and not on the shell that imports them all.

import type { Health } from './types';

export interface ViewCtx {
  params: string[];
  query: URLSearchParams;
  signal: AbortSignal;
  /** performance.now() when the route started. */
  t0: number;
  health: Health | null;
  onCleanup(fn: () => void): void;
  /** Replaces the hash's query without re-rendering (filters). */
  setQuery(q: URLSearchParams): void;
}

export type View = (root: HTMLElement, ctx: ViewCtx) => Promise<void> | void;
