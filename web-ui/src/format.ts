// Number formatting: SI rates (bit/s, packets/s), IEC byte sizes, counts, durations.

const SI = ['', 'k', 'M', 'G', 'T', 'P'];

/** `1.60 Gbit/s`, `12.3 kpackets/s`: SI prefixes, 3 significant digits. */
export function si(v: number, unit: string, digits = 3): string {
  if (!Number.isFinite(v)) return '–';
  if (v === 0) return `0 ${unit}`;
  const sign = v < 0 ? '-' : '';
  let a = Math.abs(v);
  let i = 0;
  while (a >= 1000 && i < SI.length - 1) {
    a /= 1000;
    i++;
  }
  return `${sign}${trimNum(a, digits)} ${SI[i]}${unit}`;
}

function trimNum(a: number, digits: number): string {
  if (a >= 100 || Number.isInteger(a)) return Math.round(a).toString();
  return Number(a.toPrecision(digits)).toString();
}

/** IEC sizes: `12.4 MiB`. */
export function bytes(v: number): string {
  if (!Number.isFinite(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let a = v;
  let i = 0;
  while (Math.abs(a) >= 1024 && i < units.length - 1) {
    a /= 1024;
    i++;
  }
  return i === 0 ? `${a} B` : `${a.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2)} ${units[i]}`;
}

const grouping = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/** `1,234,567`. */
export function count(v: number | string): string {
  if (typeof v === 'string') return v.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return Number.isFinite(v) ? grouping.format(v) : '–';
}

/** A duration in ns: `100 µs`, `1 ms`, `10 ms`, `2.5 s`. */
export function duration(ns: number): string {
  if (ns < 1e3) return `${ns} ns`;
  if (ns < 1e6) return `${trimNum(ns / 1e3, 3)} µs`;
  if (ns < 1e9) return `${trimNum(ns / 1e6, 3)} ms`;
  if (ns < 120e9) return `${trimNum(ns / 1e9, 3)} s`;
  if (ns < 7200e9) return `${trimNum(ns / 60e9, 3)} min`;
  return `${trimNum(ns / 3600e9, 3)} h`;
}

/** Seconds from a run's start: `+12.345 ms`, `+1.5 s`. */
export function offset(s: number): string {
  if (s === 0) return '+0 s';
  if (Math.abs(s) < 1) return `+${Number((s * 1e3).toFixed(3))} ms`;
  return `+${Number(s.toFixed(4))} s`;
}

export function percent(part: number, whole: number): string {
  if (!whole) return '–';
  const p = (100 * part) / whole;
  return `${p >= 10 ? p.toFixed(1) : p.toPrecision(2)}%`;
}
