// Times: the API speaks Unix nanoseconds (decimal strings here, BigInt for arithmetic); the UI
// shows UTC RFC 3339 and accepts RFC 3339, Unix ns, `now` and offsets (`-1h`) as input.

export const NS_PER_S = 1_000_000_000n;
export const NS_PER_DAY = 86_400n * NS_PER_S;

/** Unix ns → `2026-11-23T00:00:00.000123Z` (fraction trimmed; none when whole seconds). */
export function rfc3339(ns: string | bigint, fractionDigits?: number): string {
  let v: bigint;
  try {
    v = typeof ns === 'bigint' ? ns : BigInt(ns);
  } catch {
    return String(ns);
  }
  let secs = v / NS_PER_S;
  let frac = v % NS_PER_S;
  if (frac < 0n) {
    frac += NS_PER_S;
    secs -= 1n;
  }
  const iso = new Date(Number(secs) * 1000).toISOString().slice(0, 19);
  let f = frac.toString().padStart(9, '0');
  if (fractionDigits !== undefined) f = f.slice(0, fractionDigits);
  f = f.replace(/0+$/, '');
  return `${iso}${f ? '.' + f : ''}Z`;
}

/** Whether a query value is a Unix-ns instant (digits only) rather than `now`, an offset or empty. */
export const isNs = (v: string | null | undefined): v is string => !!v && /^\d+$/.test(v);

/** A query's range as people read it: `2026-11-23T00:00:00Z → now` (open or empty ends named). */
export function rangeText(from: string | null | undefined, to: string | null | undefined): string {
  return `${isNs(from) ? rfc3339(from) : from || 'the beginning'} → ${isNs(to) ? rfc3339(to) : to || 'now'}`;
}

/** `YYYY-MM-DD` of a Unix-ns instant (UTC). */
export function utcDate(ns: string | bigint): string {
  return rfc3339(ns).slice(0, 10);
}

/** Unix ns of UTC midnight of `YYYY-MM-DD`, or null. */
export function dayStartNs(date: string): bigint | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(ms)) return null;
  return BigInt(ms / 1000) * NS_PER_S;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|z|[+-]\d{2}:?\d{2})?)?$/;
const RELATIVE = /^(now|[+-]\s*\d+(?:\.\d+)?\s*(?:ns|us|µs|ms|s|m|min|h|d|days?|hours?|minutes?|seconds?)?)$/i;

/**
 * A time typed by a person → what the API accepts: RFC 3339 (converted to Unix ns, exact),
 * Unix ns (kept), `now` or an offset like `-1h` (passed through for the server to resolve).
 * Empty → null (open end). Throws with a readable message otherwise.
 */
export function parseTimeInput(text: string): string | null {
  const t = text.trim();
  if (t === '') return null;
  if (/^\d+$/.test(t)) return t.replace(/^0+(?=\d)/, '');
  if (RELATIVE.test(t)) return t.replace(/\s+/g, '');
  const m = RFC3339.exec(t);
  if (m) {
    const [, y, mo, d, hh = '00', mi = '00', ss = '00', frac = '', zone = 'Z'] = m;
    const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(hh), Number(mi), Number(ss));
    if (Number.isNaN(ms) || Number(mo) > 12 || Number(d) > 31 || Number(hh) > 23 || Number(mi) > 59 || Number(ss) > 60) {
      throw new Error(`'${t}' is not a valid date/time`);
    }
    let offsetS = 0;
    if (zone.toUpperCase() !== 'Z') {
      const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
      offsetS = (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 3600 + Number(z[3]) * 60);
    }
    const secs = BigInt(Math.floor(ms / 1000) - offsetS);
    const ns = secs * NS_PER_S + BigInt(frac.padEnd(9, '0') || '0');
    if (ns < 0n) throw new Error(`'${t}' is before 1970`);
    return ns.toString();
  }
  throw new Error(`'${t}' is not a time: use RFC 3339 (2026-11-23T05:00:00Z), Unix ns, now or an offset like -1h`);
}

/** Shows an API time value (Unix ns string) in an input as RFC 3339; other forms as they are. */
export function timeForInput(v: string | null | undefined): string {
  if (!v) return '';
  return /^\d+$/.test(v) ? rfc3339(v) : v;
}

export function addNs(a: string | bigint, b: string | bigint | number): string {
  return (BigInt(a) + BigInt(b)).toString();
}
