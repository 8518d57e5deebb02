// Shapes of the API's JSON as the UI reads them: aliases of the types generated from the API's
// OpenAPI document (src/api-schema.d.ts, `npm run api:gen`; `npm run api:check` fails when it
// is stale), so code reading a field the API does not send does not compile.
//
// Where these differ from the generated types, they say so here, and nowhere else:
// - `Big`: json.ts turns integer literals of 16+ digits into decimal strings, so 64-bit ids and
//   `*_unix_ns` times arrive as `string` when large and `number` when small (run ids are small
//   counters; Unix ns are always strings). They are read through `str()`. `Exact<T, K>` marks
//   them, and only compiles if each of `K` is an integer field of the API's `T`.
// - `Series.points`: `[time_unix_ns, value]` pairs; the document says `number[][]`.

import type { components, paths } from './api-schema';

type Schemas = components['schemas'];

/** A 64-bit integer as json.ts parses it: a decimal string if 16+ digits, else a number. */
export type Big = string | number;

/** The fields of `T` whose API type is an integer (possibly optional or null). */
type IntKeys<T> = { [P in keyof T]-?: [NonNullable<T[P]>] extends [number] ? P : never }[keyof T];
/** `T` with the 64-bit integer fields `K` as `Big` (null/optional kept as the API has them). */
type Exact<T, K extends IntKeys<T>> = Omit<T, K> & { [P in K]: Big | Exclude<T[P], number> };
/** `A` and `B` have the same members. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;

export type Health = Schemas['Health'];
export type Day = Exact<Schemas['DayView'], 'day_start_unix_ns'>;
export type Stats = Schemas['StatsView'];
export type RunListEntry = Exact<Schemas['RunListEntry'], 'id' | 'start_unix_ns'>;

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
/** Compiles only while METRICS lists exactly the API's metrics. */
export type MetricsMatchApi = Assert<Same<MetricName, keyof Schemas['Metrics']>>;
export type Metrics = Schemas['Metrics'];

export type RunView = Exact<Schemas['RunView'], 'id' | 'start_unix_ns'>;

export type FlameNode = Schemas['FlameNode'];
export type FunctionCount = Schemas['FunctionCount'];
/** A module's (shared library's, `[kernel]`, the program's own) samples: `self` as leaf, `total` anywhere on the stack. */
export type ModuleCount = Schemas['ModuleCount'];
export type Profile = Schemas['ProfileView'];

/** `default`: any JSON value; `null` (or absent): the parameter is required. */
export type ParamSpec = Schemas['ParamSpec'];
export type Description = Schemas['Description'];
export type Udf = Exact<Schemas['UdfMeta'], 'uploaded_unix_ns'>;

/** The answer to an upload: the analysis and whether it replaced an earlier version. */
export type Uploaded = Udf & Omit<Schemas['Uploaded'], keyof Schemas['UdfMeta']>;

export type Column = Schemas['Column'];
export type Cell = Schemas['Cell'];
export type SeriesOut = Omit<Schemas['Series'], 'points'> & {
  /** `[time_unix_ns, value]`. */
  points: [Big, number][];
};
/** Compiles only while the API's points are arrays of numbers (what `[Big, number]` refines). */
export type SeriesPointsMatchApi = Assert<Same<Schemas['Series']['points'], number[][]>>;

type Output = Schemas['AnalysisOutput'];
export type AnalysisResult = Exclude<Output, { kind: 'series' }> | (Omit<Extract<Output, { kind: 'series' }>, 'series'> & { series: SeriesOut[] });
/** What an invocation adds to its result (log, time, memory, size). */
type InvokeMeta = Omit<Extract<Schemas['InvokeResponse'], { kind: 'text' }>, keyof Extract<Output, { kind: 'text' }>>;
export type InvokeResponse = AnalysisResult & InvokeMeta;

/** The body of `POST /api/v1/udfs/{name}/invoke`. */
export type InvokeRequest = Schemas['InvokeRequest'];

export type ErrorBody = Schemas['ErrorBody'];

/** A program with timeline events in a range (times exact). */
export type TimelineSource = Exact<Schemas['TimelineSourceView'], 'first_unix_ns' | 'last_unix_ns'>;
/** One event's count and lag percentiles (ns) for one program over a range. */
export type EventStats = Schemas['EventStatsView'];
export type TimelineSummary = Omit<Schemas['TimelineSummary'], 'sources'> & { sources: TimelineSource[] };
/**
 * One timeline event. `args` are u64: json.ts makes those of 16+ digits decimal strings, so
 * they are `Big` too (the document says `number[]`).
 */
export type TimelineEvent = Omit<Exact<Schemas['TimelineEventView'], 'time_unix_ns'>, 'args'> & { args: Big[] };
/** Compiles only while the API's args are an array of integers (what `Big[]` refines). */
export type TimelineArgsMatchApi = Assert<Same<Schemas['TimelineEventView']['args'], number[]>>;
export type TimelineEventsPage = Omit<Schemas['TimelineEventsPage'], 'events'> & { events: TimelineEvent[] };

/** A probe session stored (without its calls). */
export type ProbeListEntry = Exact<Schemas['ProbeListEntry'], 'id' | 'start_unix_ns' | 'end_unix_ns'>;
/**
 * A probe session running on the agent (`handle` is the agent's, not a stored id). `ends_unix_ns`
 * is optional in the API (Exact would make it required), so it is written out.
 */
export type ActiveProbe = Omit<Exact<Schemas['ActiveProbeView'], 'handle' | 'started_unix_ns'>, 'ends_unix_ns'> & { ends_unix_ns?: Big | null };
/** Compiles only while the API's `ends_unix_ns` is an optional integer (what `Big | null` refines). */
export type ActiveProbeEndMatchesApi = Assert<Same<Schemas['ActiveProbeView']['ends_unix_ns'], number | null | undefined>>;
export type ProbeList = { active: ActiveProbe[]; sessions: ProbeListEntry[] };
/** One probed function: counts, bias-corrected percentiles, the histogram as measured. */
export type ProbeFunction = Exact<Schemas['ProbeFunctionView'], 'address' | 'total_ns'>;
export type LatencyBucket = Schemas['LatencyBucket'];
/** A slow call with its probed callees (entry time exact). */
export type CallTree = Omit<Exact<Schemas['CallTreeView'], 'entry_unix_ns'>, 'children'> & { children: CallTree[] };
/** One stored session as `GET /api/v1/probes/{id}` answers without `calls`. */
export type ProbeView = Omit<Exact<Schemas['ProbeView'], 'id' | 'start_unix_ns' | 'end_unix_ns'>, 'functions' | 'slowest' | 'calls'> & {
  functions: ProbeFunction[];
  slowest: CallTree[];
};
/** The body of `POST /api/v1/probes`. */
export type ProbeOrder = Schemas['ProbeOrder'];
/** Compiles only while the start form's body is what the API takes. */
export type ProbeOrderMatchesApi = Assert<Same<ProbeOrder, NonNullable<paths['/api/v1/probes']['post']['requestBody']>['content']['application/json']>>;

/** One run's slots inside a window (its id exact). */
export type TrafficLane = Exact<Schemas['TrafficLane'], 'run'>;
/** One program's timeline events in a window; `args` (four columns) are u64, so `Big`. */
export type ProgramLane = Omit<Schemas['ProgramLane'], 'args'> & { args: Big[][] };
/** Compiles only while the API's window args are columns of integers (what `Big[][]` refines). */
export type WindowArgsMatchApi = Assert<Same<Schemas['ProgramLane']['args'], number[][]>>;
export type ProbeFunctionRef = Exact<Schemas['ProbeFunctionRef'], 'session'>;
export type CpuLane = Schemas['CpuLane'];
export type ThreadCalls = Schemas['ThreadCalls'];
/** `GET /api/v1/window`: every lane of a span of time; times in lanes are ns after `from_unix_ns`. */
export type WindowView = Omit<Exact<Schemas['WindowView'], 'from_unix_ns' | 'to_unix_ns'>, 'traffic' | 'programs' | 'probe_functions'> & {
  traffic: TrafficLane[];
  programs: ProgramLane[];
  probe_functions: ProbeFunctionRef[];
};
export type DiffNode = Schemas['DiffNode'];
export type FunctionChange = Schemas['FunctionChange'];
/** `GET /api/v1/profile/diff`: a range against a baseline. */
export type ProfileDiff = Schemas['ProfileDiffView'];

/** A host of the fleet as its registration says (`GET /api/v1/fleet/hosts`). */
export type FleetHost = Exact<Schemas['FleetHost'], 'retained_from_unix_ns' | 'retained_to_unix_ns' | 'joined_unix_ns' | 'heartbeat_unix_ns'>;
export type FleetHostsView = Omit<Schemas['FleetHostsView'], 'hosts'> & { hosts: FleetHost[] };
export type FleetMiss = Schemas['FleetMiss'];
/** One host's part of a synchronized run: its run id and per-slot bytes. */
export type FleetRunHost = Exact<Schemas['FleetRunHost'], 'run_id' | 'start_unix_ns' | 'configured_before_start_ns'>;
export type FleetRunView = Omit<Exact<Schemas['FleetRunView'], 'start_unix_ns' | 'max_clock_error_ns'>, 'hosts'> & { hosts: FleetRunHost[] };
/** A fleet-wide invocation: the merged result (as an invocation's) and who answered. */
export type FleetInvokeView = AnalysisResult & Omit<Extract<Schemas['FleetInvokeView'], { kind: 'text' }>, keyof Extract<Output, { kind: 'text' }>>;

/** The body of `O`'s status-`S` JSON answer. */
type Answer<O, S extends number = 200> = O extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never;
/** The API answers `M P` with JSON the UI's type `T` takes as is. */
type Reads<P extends keyof paths, M extends 'get' | 'put' | 'post', T, S extends number = 200> = [Answer<paths[P][M], S>] extends [never] ? false : [Answer<paths[P][M], S>] extends [T] ? true : false;
/** Compiles only while each endpoint the UI calls answers with what the UI expects of it. */
export type EndpointsMatchUi = [
  Assert<Reads<'/api/v1/health', 'get', Health>>,
  Assert<Reads<'/api/v1/stats', 'get', Stats>>,
  Assert<Reads<'/api/v1/days', 'get', Day[]>>,
  Assert<Reads<'/api/v1/runs', 'get', RunListEntry[]>>,
  Assert<Reads<'/api/v1/runs/{id}', 'get', RunView>>,
  Assert<Reads<'/api/v1/fleet/hosts/{host}/runs/{id}', 'get', RunView>>,
  Assert<Reads<'/api/v1/fleet/hosts/{host}/profile', 'get', Profile>>,
  Assert<Reads<'/api/v1/fleet/hosts', 'get', FleetHostsView>>,
  Assert<Reads<'/api/v1/fleet/runs', 'post', FleetRunView>>,
  Assert<Reads<'/api/v1/pids', 'get', number[]>>,
  Assert<Reads<'/api/v1/profile', 'get', Profile>>,
  Assert<Reads<'/api/v1/profile/diff', 'get', ProfileDiff>>,
  Assert<Reads<'/api/v1/window', 'get', WindowView>>,
  Assert<Reads<'/api/v1/timeline', 'get', TimelineSummary>>,
  Assert<Reads<'/api/v1/timeline/events', 'get', TimelineEventsPage>>,
  Assert<Reads<'/api/v1/probes', 'get', ProbeList>>,
  Assert<Reads<'/api/v1/probes', 'post', ActiveProbe, 201>>,
  Assert<Reads<'/api/v1/probes/{id}', 'get', ProbeView>>,
  Assert<Reads<'/api/v1/probes/active/{handle}/stop', 'post', ProbeView>>,
  Assert<Reads<'/api/v1/udfs', 'get', Udf[]>>,
  Assert<Reads<'/api/v1/udfs/{name}', 'get', Udf>>,
  Assert<Reads<'/api/v1/udfs/{name}', 'put', Uploaded, 201>>,
  Assert<Reads<'/api/v1/udfs/{name}', 'put', Uploaded>>,
  // InvokeResponse refines the series points (see above), so: the very schema it is made from.
  Assert<Reads<'/api/v1/udfs/{name}/invoke', 'post', Schemas['InvokeResponse']>>,
];
