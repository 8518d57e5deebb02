// The kinds of code a frame may be (the API's `FlameNode.kind`: native when absent, `kernel`,
// `jit` for code named from a perf map, `python`) and where each is drawn in the flame graph's
// palette: native frames in warm hues, as flame graphs are read; each other kind in a few
// shades of a hue of its own (flame.ts makes the colours).

/** Warm hues for native frames, as flame graphs are read; then a few shades per other kind. */
export const WARM_SHADES = 12;
export const KIND_SHADES = 4;
/** The kinds of code drawn in hues of their own, in palette order after the warm ones. */
export const KINDS = ['kernel', 'jit', 'python'] as const;
/** Palette entries in all. */
export const PALETTE = WARM_SHADES + KINDS.length * KIND_SHADES;

/** A frame's palette entry: its kind's range of hues, a shade in it by its name's hash. */
export function paletteIndex(kind: string, nameHash: number): number {
  const k = KINDS.indexOf(kind as (typeof KINDS)[number]);
  const h = nameHash >>> 0;
  return k < 0 ? h % WARM_SHADES : WARM_SHADES + k * KIND_SHADES + (h % KIND_SHADES);
}
