// Shapes of the API's JSON (docs/api.md). Big integers (ids, `*_unix_ns`) arrive as strings
// (see json.ts); the types say `Big` for them.

export type Big = string;

export interface Health {
  status: string;
  version: string;
  mode: 'agent' | 'serve' | string;
  hostname: string;
  uptime_s: number;
  ifaces: string[];
  auth: boolean;
}

export interface Day {
  day_start_unix_ns: Big;
  date: string;
  runs_by_interval: Record<string, number>;
  runs: number;
  run_bytes: number;
  sample_batches: number;
  samples: number;
  sample_bytes: number;
}

export interface Stats {
  runs: number;
  stored_bytes: number;
  disk_bytes: number;
  sample_batches: number;
  samples: number;
  sample_bytes: number;
  total_bytes: number;
  max_bytes?: number;
}

export interface RunListEntry {
  id: Big;
  iface: string;
  host: string;
  start_unix_ns: Big;
  interval_ns: number;
  samples: number;
  cpus: number[];
  stored_bytes: number;
}

export const METRICS = [
  'in_bytes',
  'out_bytes',
  'in_packets',
  'out_packets',
  'in_ce_bytes',
  'in_retx_bytes',
  'out_retx_bytes',
  'in_conns',
  'out_conns',
  'in_cross_region_bytes',
  'out_cross_region_bytes',
] as const;
export type MetricName = (typeof METRICS)[number];
export type Metrics = Record<MetricName, number[]>;

export interface RunView extends Omit<RunListEntry, 'stored_bytes'> {
  rack?: string;
  local_prefixes: string[];
  source: string;
  metrics: Metrics;
  per_cpu?: { cpu: number; metrics: Metrics }[];
}

export interface FlameNode {
  name: string;
  value: number;
  children?: FlameNode[];
}

export interface FunctionCount {
  name: string;
  self: number;
  total: number;
}

export interface Profile {
  samples: number;
  lost: number;
  functions: FunctionCount[];
  flamegraph: FlameNode;
}

export interface ParamSpec {
  name: string;
  kind: 'unsigned' | 'float' | 'text' | 'flag';
  default: unknown;
  description: string;
}

export interface Udf {
  name: string;
  owner: string;
  version: string;
  size: number;
  sha256: string;
  uploaded_unix_ns: Big;
  description: {
    name: string;
    version: string;
    summary: string;
    params: ParamSpec[];
    result_kind: 'table' | 'series' | 'flamegraph' | 'text';
  };
}

export interface Column {
  name: string;
  unit: string;
}

export interface SeriesOut {
  name: string;
  unit: string;
  points: [Big | number, number][];
}

export type AnalysisResult =
  | { kind: 'table'; columns: Column[]; rows: unknown[][] }
  | { kind: 'series'; series: SeriesOut[] }
  | { kind: 'flamegraph'; profile: Profile }
  | { kind: 'text'; text: string };

export type InvokeResponse = AnalysisResult & {
  log: { level: string; message: string }[];
  log_dropped: number;
  elapsed_ns: number;
  peak_memory_bytes: number;
  output_bytes: number;
};
