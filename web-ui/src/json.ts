// JSON with exact big integers. Run ids and `*_unix_ns` fields exceed 2^53, so `JSON.parse`
// would round them before any reviver sees them. A pre-pass quotes every integer literal of
// 16 or more digits (outside strings), so they arrive as decimal strings; smaller numbers stay
// numbers. Code reading ids/times always goes through `str()`, counts through `num()`.
//
// The pre-pass looks only at runs of 16+ digits (a fast regex) and keeps track of whether each
// is inside a string by scanning the text between them once for quotes: a 6.5 MB window answer
// took 135–175 ms in Chromium with a regex matching every string literal, this takes a few ms.

const LONG_DIGITS = /\d{16,}/g;
const HAS_LONG_DIGITS = /\d{16}/;

/** A character that may not come right before a bare integer literal: a word character, `.`, `+`. */
function joins(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 46 || c === 43;
}

export function parseJson<T = unknown>(text: string): T {
  if (!HAS_LONG_DIGITS.test(text)) return JSON.parse(text) as T;
  let out = '';
  let last = 0; // text before this is in `out`
  let scanned = 0; // quotes counted up to here
  let inString = false;
  LONG_DIGITS.lastIndex = 0;
  for (let m = LONG_DIGITS.exec(text); m; m = LONG_DIGITS.exec(text)) {
    for (let i = scanned; i < m.index; i++) {
      const c = text.charCodeAt(i);
      if (c === 34) inString = !inString;
      else if (c === 92 && inString) i++; // an escaped character
    }
    const end = m.index + m[0].length;
    scanned = Math.max(end, scanned);
    if (inString) continue;
    const start = text.charCodeAt(m.index - 1) === 45 ? m.index - 1 : m.index; // a minus sign
    const next = text.charCodeAt(end);
    if (joins(text.charCodeAt(start - 1)) || next === 46 || next === 101 || next === 69) continue; // part of a float
    out += text.slice(last, start) + '"' + text.slice(start, end) + '"';
    last = end;
  }
  return JSON.parse(out + text.slice(last)) as T;
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
