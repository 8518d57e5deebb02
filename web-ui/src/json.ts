// JSON with exact big integers. Run ids and `*_unix_ns` fields exceed 2^53, so `JSON.parse`
// would round them before any reviver sees them. A pre-pass quotes every integer literal of
// 16 or more digits (outside strings), so they arrive as decimal strings; smaller numbers stay
// numbers. Code reading ids/times always goes through `str()`, counts through `num()`.

// A string literal (kept as is) or a bare integer of ≥ 16 digits not part of a float.
const BIG_INT = /"(?:[^"\\]|\\.)*"|(?<![\w.+-])-?\d{16,}(?![\d.eE])/g;
const HAS_LONG_DIGITS = /\d{16}/;

export function parseJson<T = unknown>(text: string): T {
  if (!HAS_LONG_DIGITS.test(text)) return JSON.parse(text) as T;
  const safe = text.replace(BIG_INT, (m) => (m.charCodeAt(0) === 34 ? m : `"${m}"`));
  return JSON.parse(safe) as T;
}

/** An id or Unix-ns field as an exact decimal string. */
export function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  return '';
}

/** A count as a JS number (big values lose precision, fine for display and arithmetic). */
export function num(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && v !== '') return Number(v);
  return 0;
}

/** Marks a decimal string to be written as a bare JSON number by `toJson`. */
export class RawNumber {
  constructor(readonly digits: string) {}
}

/** `JSON.stringify` that writes `RawNumber`s unquoted (exact unsigned parameters > 2^53). */
export function toJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_k, v) => {
    if (v instanceof RawNumber) {
      raws.push(v.digits);
      return `\u0000raw${raws.length - 1}\u0000`;
    }
    return v;
  });
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_m, i) => raws[Number(i)]);
}
