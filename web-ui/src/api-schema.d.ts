// Generated from the HTTP API's OpenAPI document (`loupe openapi`) by openapi-typescript
// (web-ui/scripts/api-types.mjs). Do not edit: `npm run api:gen --prefix web-ui` regenerates it,
// `npm run api:check --prefix web-ui` (run by `npm run e2e`) fails when it is out of date.
// 64-bit integers are `number` here; src/types.ts says which ones json.ts keeps exact (Big).

export interface paths {
    "/api/v1/call": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Any operation of the host, as the CLI's `--server` mode calls it: one body names the
         *     operation and its arguments, the answer is its value or its error (with that error's status).
         */
        post: operations["call"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/days": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Retained days: runs by interval, stack samples, bytes. */
        get: operations["days"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/fleet/hosts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Registered hosts of the selection, with their status (`up`, `silent`, `left`). */
        get: operations["fleet_hosts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/fleet/hosts/{host}/profile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A host's profile of a range, read over the fleet (its stacks travel, the flame graph is
         *     built here); a range whose stacks exceed the fleet's message limit answers 413 `too_large`.
         */
        get: operations["fleet_host_profile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/fleet/hosts/{host}/runs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A host's stored run, read over the fleet: what the fleet view opens when a host's row of a
         *     synchronized run is clicked.
         */
        get: operations["fleet_host_run"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/fleet/invoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Runs one of this agent's analyses on every selected host next to its data (the module goes
         *     to them by its hash through the fleet's object store), and merges their partial results in
         *     the sandbox: the merged result, who answered, who missed the deadline, who failed and why.
         */
        post: operations["fleet_invoke"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/fleet/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * One run on every selected host from one start instant; answers when every host stored it
         *     (or at the run's end plus a margin, naming the hosts that missed it).
         */
        post: operations["fleet_run"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness and what this server is. Needs no token. */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: operations["openapi_json"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/pids": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** PIDs with samples in a range. */
        get: operations["pids"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/probes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Sessions running on the agent and stored sessions that started in a range (`loupe probes
         *     list --json`).
         */
        get: operations["list"];
        put?: never;
        /**
         * Attaches probes on the agent and answers at once with the session's handle; the session
         *     ends at its length, on `stop`, over its budget, or when its processes exit, and is then
         *     stored. Bad requests (unknown PID or symbol, a function with no place the kernel runs
         *     without single-stepping, too many functions) attach nothing; a Go program's functions are
         *     counted only. Only on a collecting agent (409 under
         *     `loupe serve`).
         */
        post: operations["start"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/probes/active/{handle}/stop": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Stops a running session and answers with what it stored (also collects one that ended by
         *     itself in the last ten minutes).
         */
        post: operations["stop"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/probes/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * One stored session: per function its calls, percentiles and histogram; the slowest calls as
         *     call trees (`loupe probes show --json`).
         */
        get: operations["show"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A profile over a range: `loupe profile --json` (functions and flame graph). */
        get: operations["profile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profile/diff": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * What changed between the range and a baseline range with the same filters (`loupe profile
         *     --base-from … --base-to … --json`): the range's flame graph with the baseline's samples on
         *     each path, functions by change of their share of each side's samples, and those only one side
         *     has (`new`, `gone`).
         */
        get: operations["profile_diff"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/profile/pprof": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The same profile as gzipped pprof (`go tool pprof` reads it). */
        get: operations["profile_pprof"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Runs that started in a range, oldest first. */
        get: operations["list_runs"];
        put?: never;
        /**
         * Starts an on-demand run on the agent and answers with its id once it is stored (a run of
         *     2000 × 10 ms takes 20 s); a run that outlasts the request timeout answers 408 and is stored
         *     when it ends. Only on a collecting agent (409 under `loupe serve`).
         */
        post: operations["start_run"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One run with its per-slot series: `loupe runs show --json`. */
        get: operations["get_run"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/stats": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Store totals (running counters, no scan) and the retention cap. */
        get: operations["stats"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/timeline": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Programs that logged timeline events in a range, and per event its count and lag percentiles
         *     (`loupe timeline list --json`).
         */
        get: operations["summary"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/timeline/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Timeline events in time order, a page at a time (`loupe timeline show --json`). */
        get: operations["events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/udfs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Analyses on this host: name, owner, version, size, hash, description. */
        get: operations["list_udfs"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/udfs/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One analysis' listing. */
        get: operations["get_udf"];
        /**
         * Uploads (or replaces, for its owning team) an analysis: the body is the component
         *     (`application/wasm`). It is validated, compiled and kept, precompiled, across restarts.
         */
        put: operations["put_udf"];
        post?: never;
        /** Deletes an analysis (its owning team only). */
        delete: operations["delete_udf"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/udfs/{name}/invoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Runs an analysis next to the data and returns its typed result
         *     (`{"kind": "table" | "series" | "flamegraph" | "text", …}`).
         */
        post: operations["invoke"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/window": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Everything recorded in a span of time on one axis (`loupe window --json`): each run's slots,
         *     each CPU's samples and waits, each thread's probe calls, each program's timeline events;
         *     lanes past `lane_items` as per-column summaries. Times in lanes are ns after `from_unix_ns`.
         *     MessagePack with `Accept: application/msgpack`.
         */
        get: operations["window"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/window/trace": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The window as a Chrome/Perfetto trace (JSON Trace Event format; `loupe export trace`): open it
         *     in the Perfetto UI or `chrome://tracing`.
         */
        get: operations["window_trace"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Self-metrics in the OpenMetrics text format. Needs no token. */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description A session still attached on the agent. */
        ActiveProbeView: {
            binary?: string | null;
            calls: boolean;
            /**
             * Format: int64
             * @description When it will end by itself, if it has a length.
             */
            ends_unix_ns?: number | null;
            functions: string[];
            /**
             * Format: int64
             * @description The agent's handle for it (`loupe probes stop HANDLE`); not the stored id.
             */
            handle: number;
            pids: number[];
            /** Format: int32 */
            sample_every: number;
            /** Format: int64 */
            started_unix_ns: number;
            /** @description The team that started it: only that team (or an admin) stops it. */
            team?: string;
        };
        AnalysisOutput: {
            columns: components["schemas"]["Column"][];
            /** @enum {string} */
            kind: "table";
            rows: components["schemas"]["Cell"][][];
        } | {
            /** @enum {string} */
            kind: "series";
            series: components["schemas"]["Series"][];
        } | {
            /** @enum {string} */
            kind: "flamegraph";
            profile: components["schemas"]["ProfileView"];
        } | {
            /** @enum {string} */
            kind: "text";
            text: string;
        };
        /** @description The answer, for the document: `ok` with the operation's value, or `err`. */
        CallAnswer: {
            /** @description The error: its kind, words and code, as the REST routes' `ErrorBody` plus `kind`. */
            err?: unknown;
            /** @description The operation's value (the same as its REST route's body). */
            ok?: unknown;
        };
        /**
         * @description A call, for the document: the operation's name and its arguments by name, as the CLI sends
         *     them (`loupe_api::ops` lists the operations and their argument types).
         * @example {
         *       "call": "show_run",
         *       "id": 7,
         *       "per_cpu": false
         *     }
         */
        CallBody: {
            /**
             * @description The operation's name (`show_run`, `list_runs`, `profile`, …: the method names of
             *     `loupe_api::ops::HostApi`), its arguments beside it by name.
             */
            call: string;
        };
        /** @description A call with its probed callees: where its time went. */
        CallTreeView: {
            children: components["schemas"]["CallTreeView"][];
            /** Format: int64 */
            duration_ns: number;
            /** Format: int64 */
            entry_unix_ns: number;
            function: string;
            /**
             * Format: int64
             * @description Its duration less its recorded children's.
             */
            self_ns: number;
            /** Format: int32 */
            tid: number;
        };
        /** @description One recorded call. */
        CallView: {
            /** Format: int32 */
            cpu: number;
            /** Format: int32 */
            depth: number;
            /** Format: int64 */
            entry_unix_ns: number;
            /** Format: int64 */
            exit_unix_ns: number;
            function: string;
            /**
             * Format: int32
             * @description Index in `calls` of the enclosing recorded call.
             */
            parent?: number | null;
            /** Format: int32 */
            pid: number;
            /** Format: int32 */
            tid: number;
        };
        /** @description A number, a string, or null */
        Cell: number | string | null;
        /**
         * @description A run's clock: whether its slots were counted from a common instant (a synchronized run)
         *     and the host's wall-clock error bounds, as the kernel's clock discipline reported them.
         */
        ClockView: {
            /** Format: int64 */
            est_error_ns: number;
            /** Format: int64 */
            max_error_ns: number;
            /** @description NTP/PTP reported the clock synchronized; when false the errors are not measurements. */
            synced: boolean;
            /**
             * @description Slots counted on `CLOCK_TAI` from an instant given in advance: slot k is the same
             *     interval on every host that took part, to within their clocks' errors.
             */
            synchronized: boolean;
        };
        Column: {
            name: string;
            unit: string;
        };
        /**
         * @description What one CPU ran: a tick per stack sample (idle left out), and the waits off the CPU that
         *     began there (recorded with `--off-cpu`).
         */
        CpuLane: {
            /** Format: int32 */
            cpu: number;
            /**
             * Format: int64
             * @description Samples in the window (all of them, summarized or not).
             */
            samples: number;
            ticks: components["schemas"]["Ticks"];
            wait_spans: components["schemas"]["Spans"];
            /**
             * Format: int64
             * @description Waits that began on this CPU in the window.
             */
            waits: number;
        };
        CpuView: {
            /** Format: int32 */
            cpu: number;
            metrics: components["schemas"]["Metrics"];
        };
        /** @description One retained UTC day. */
        DayView: {
            /** @description `YYYY-MM-DD`. */
            date: string;
            /** Format: int64 */
            day_start_unix_ns: number;
            /** Format: int64 */
            run_bytes: number;
            /** Format: int64 */
            runs: number;
            /** @description Number of runs per sampling interval (the key: the interval in ns, as a decimal string). */
            runs_by_interval: {
                [key: string]: number;
            };
            /** Format: int64 */
            sample_batches: number;
            /** Format: int64 */
            sample_bytes: number;
            /** Format: int64 */
            samples: number;
        };
        /** @description What `describe()` returned. */
        Description: {
            /** @description It exports `merge` (the `fleet-analysis` world), so it can run fleet-wide. */
            mergeable?: boolean;
            name: string;
            params: components["schemas"]["ParamSpec"][];
            result_kind: components["schemas"]["ResultKind"];
            summary: string;
            version: string;
        };
        /** @description A node of the selection's flame graph with the baseline's samples on the same path. */
        DiffNode: {
            /**
             * Format: int64
             * @description Baseline samples through this path.
             */
            base: number;
            children?: components["schemas"]["DiffNode"][];
            name: string;
            /**
             * Format: int64
             * @description Selection samples through this path.
             */
            value: number;
        };
        /** @description An error as every door sends it. */
        ErrorBody: {
            /** @description Stable machine-readable code (`bad_range`, `time_limit`, `not_owner`, …). */
            code: string;
            /** @description What went wrong, in one line a person can act on. */
            error: string;
            /** @description Lines the analysis logged before it failed, when there are any. */
            log?: string[];
        };
        /** @description One trace event; fields a phase does not use are left out. */
        Event: {
            args?: Record<string, never> | null;
            cat?: string;
            /**
             * Format: double
             * @description Microseconds (`X`).
             */
            dur?: number | null;
            /**
             * Format: int64
             * @description Pairs an async slice's begin and end.
             */
            id?: number | null;
            name: string;
            /**
             * @description The phase: `M` metadata, `i` instant, `X` complete slice, `b`/`e` async slice begin and
             *     end, `C` counter.
             */
            ph: string;
            /** Format: int32 */
            pid: number;
            /** @description Instants: `t`, scoped to their thread. */
            s?: string | null;
            /** Format: int32 */
            tid: number;
            /**
             * Format: double
             * @description Microseconds after the window's start.
             */
            ts?: number | null;
        };
        /**
         * @description One event as its program defined it: its place in the loop → phase → step hierarchy
         *     (`level` 0–9), how often it is logged (`rate` 0–9, 9 every time) and its arguments' names.
         */
        EventDefinitionView: {
            arg_names: string[];
            /** Format: int32 */
            level: number;
            name: string;
            /** Format: int32 */
            rate: number;
        };
        /**
         * @description One event of one program over a range. A lag is the time since the previous event of
         *     equal or lower level on the same thread (the lag of a loop's last event is the iteration's
         *     latency); percentiles are within 1.6 %, the maximum exact.
         */
        EventStatsView: {
            /** @description The names of its arguments (≤ 4). */
            arg_names: string[];
            comm: string;
            /** Format: int64 */
            count: number;
            /** Format: int64 */
            lag_max_ns?: number | null;
            /** Format: int64 */
            lag_p50_ns?: number | null;
            /** Format: int64 */
            lag_p99_ns?: number | null;
            /** Format: int32 */
            level: number;
            name: string;
            /** Format: int32 */
            pid: number;
        };
        /** @description A feature an agent was asked for and runs without. */
        FeatureOff: {
            /** @description `stacks`, `off_cpu`, `runs` or `probes`. */
            feature: string;
            /**
             * @description The kernel's words: which program its verifier refused, and its last lines; or the
             *     kernel facility it lacks (`stacks needs Linux 5.17 (bpf_loop); this kernel is …`).
             */
            reason: string;
        };
        /**
         * @description One node of the flame graph: `value` samples passed through it; children are callees,
         *     widest first. At most [`MAX_FLAME_DEPTH`] levels below the root.
         */
        FlameNode: {
            children?: components["schemas"]["FlameNode"][];
            /**
             * @description What kind of code the frame is: `kernel`, `jit` (named from a perf map), `python`;
             *     absent for native code (a binary's or a library's machine code).
             * @example python
             */
            kind?: string | null;
            name: string;
            /** Format: int64 */
            value: number;
        };
        /** @description Who answered a fleet query, in the order the coordinator heard them. */
        FleetAnswered: components["schemas"]["FleetPlace"] & {
            /**
             * Format: int64
             * @description From publishing the query to receiving this host's answer, ns.
             */
            elapsed_ns: number;
        };
        /** @description One host's registration, as its agent keeps it alive in the fleet's key-value bucket. */
        FleetHost: components["schemas"]["FleetPlace"] & {
            /** Format: int64 */
            heartbeat_unix_ns: number;
            /** @description Interfaces its agent samples. */
            ifaces: string[];
            /**
             * Format: int64
             * @description When the agent joined the fleet, and its last heartbeat (Unix ns, its own clock).
             */
            joined_unix_ns: number;
            /**
             * @description The JetStream domain of the NATS server the agent is connected to: its leaf (rack or
             *     pod) in a fleet of leaf nodes. Absent on a single server without a domain.
             */
            leaf?: string | null;
            /**
             * Format: int64
             * @description The retained data, `[from, to)` Unix ns (zeros when it holds nothing yet).
             */
            retained_from_unix_ns: number;
            /** Format: int64 */
            retained_to_unix_ns: number;
            /**
             * Format: int64
             * @description Seconds since the last heartbeat, by the asking host's clock.
             */
            silent_s: number;
            /**
             * @description `up` (heartbeat within three periods), `silent` (registered, but no heartbeat for longer:
             *     crashed, partitioned or overloaded) or `left` (stopped cleanly).
             */
            status: string;
            /** @description Loupe's version on that host. */
            version: string;
        };
        /** @description `loupe fleet hosts`. */
        FleetHostsView: {
            hosts: components["schemas"]["FleetHost"][];
            /**
             * Format: int64
             * @description Hosts whose status is `up`.
             */
            up: number;
        };
        /** @description A fleet-wide invocation of one of this agent's analyses, as a client writes it. */
        FleetInvokeRequest: {
            dc?: string | null;
            /** @description How long to wait for the hosts (`2s` when absent, at most `300s`). */
            deadline?: string | null;
            /** @description The range (RFC 3339, Unix ns, `now`, `-1h`); default: everything. */
            from?: string | null;
            host?: string | null;
            /** @description An analysis uploaded to this agent that exports `merge`. */
            name: string;
            params?: {
                [key: string]: unknown;
            };
            /** @description The hosts: a rack, a datacenter or one host; none of them: the whole fleet. */
            rack?: string | null;
            to?: string | null;
        };
        /**
         * @description `loupe fleet invoke`: an analysis run next to each host's data, the partial results merged
         *     in the sandbox.
         */
        FleetInvokeView: components["schemas"]["AnalysisOutput"] & {
            answered: components["schemas"]["FleetAnswered"][];
            /**
             * Format: int64
             * @description From publishing the query to the merged result, ns.
             */
            elapsed_ns: number;
            /** @description Hosts that answered with an error (their analysis failed, its partial was too large, …). */
            failed: components["schemas"]["FleetMiss"][];
            /**
             * @description In a fleet of leaf nodes, each leaf that answered with one merged partial of its hosts:
             *     the merge ran as a tree. Empty when every host answered the asker directly.
             */
            leaves?: components["schemas"]["FleetLeafAnswer"][];
            /** @description The merge's log (the hosts' logs stay on the hosts). */
            log: components["schemas"]["LogLine"][];
            /**
             * Format: int64
             * @description Of which merging in the sandbox, ns.
             */
            merge_ns: number;
            /** @description Selected hosts that did not answer before the deadline. */
            missing: components["schemas"]["FleetMiss"][];
            /** @description The analysis, and the SHA-256 of the module every host ran. */
            name: string;
            sha256: string;
        };
        /**
         * @description One leaf's answer to a tree merge: its coordinator (an agent of the leaf, chosen by the
         *     leaf's NATS queue group so that exactly one answers) invoked the leaf's hosts and merged
         *     their partials before answering.
         */
        FleetLeafAnswer: {
            /** @description The agent that coordinated the leaf. */
            coordinator: components["schemas"]["FleetPlace"];
            /**
             * Format: int64
             * @description From the asker publishing the query to receiving the leaf's answer, ns.
             */
            elapsed_ns: number;
            /**
             * Format: int64
             * @description Hosts of the leaf whose partials it merged.
             */
            hosts: number;
            /** @description The leaf: its NATS server's JetStream domain. */
            leaf: string;
            /**
             * Format: int64
             * @description Of which the leaf's own merge, ns.
             */
            merge_ns: number;
        };
        /** @description A host that was expected to answer and did not, or answered with an error. */
        FleetMiss: components["schemas"]["FleetPlace"] & {
            /**
             * @description A stable code for the why: `deadline`, `silent` (not heard from before the query), or the
             *     error kind the host returned (`bad_request`, `not_found`, `too_large`, …).
             */
            code: string;
            /** @description Why: `no answer before the deadline`, or the host's own error. */
            why: string;
        };
        /** @description Where a host sits in the fleet: the scopes a query can select it by. */
        FleetPlace: {
            dc: string;
            host: string;
            rack: string;
        };
        /** @description One host's run of a synchronized rack run. */
        FleetRunHost: components["schemas"]["FleetPlace"] & {
            clock?: components["schemas"]["ClockView"] | null;
            /**
             * Format: int64
             * @description How late this host's agent configured the run relative to the common start (negative:
             *     ahead, as it should be), ns. Slots are counted in the kernel from the common instant, so
             *     this does not move slot boundaries; it shows the scheduling margin.
             */
            configured_before_start_ns: number;
            iface: string;
            /** @description Per-slot ingress and egress bytes (summed over CPUs): the rack heatmap's rows. */
            in_bytes: number[];
            /** Format: int64 */
            interval_ns: number;
            out_bytes: number[];
            /**
             * Format: int64
             * @description The run's id in that host's store (`GET /api/v1/runs/{id}` on that host).
             */
            run_id: number;
            /** Format: int32 */
            samples: number;
            /** Format: int64 */
            start_unix_ns: number;
        };
        /** @description A synchronized run, as a client writes it (`fleet_run`'s order with its times in words). */
        FleetRunRequest: {
            /** @description The common start (RFC 3339 or Unix ns); default 2 s from now. */
            at?: string | null;
            dc?: string | null;
            host?: string | null;
            iface?: string | null;
            /** @description Slot width (`100us`, `1ms`, `10ms`). */
            interval: string;
            /** @description The rack (usually), a datacenter or one host; none of them: the whole fleet. */
            rack?: string | null;
            /**
             * Format: int32
             * @description Slots (default 2000, at most 20000).
             */
            samples?: number | null;
        };
        /** @description `loupe fleet run`: one synchronized run on every host of a rack. */
        FleetRunView: {
            hosts: components["schemas"]["FleetRunHost"][];
            /** Format: int64 */
            interval_ns: number;
            /**
             * Format: int64
             * @description The largest clock error bound among the hosts that ran (ns): how far apart two hosts'
             *     slot k may be at most, by their own clocks' accounts.
             */
            max_clock_error_ns: number;
            /** @description Asked but missed the run (no answer before the deadline, or an error). */
            missed: components["schemas"]["FleetMiss"][];
            /** Format: int32 */
            samples: number;
            /**
             * Format: int64
             * @description The common start instant every host counted slot 0 from (Unix ns).
             */
            start_unix_ns: number;
        };
        /** @description One function on both sides: counts, and shares of each side's samples. */
        FunctionChange: {
            /** Format: int64 */
            base_self: number;
            /** Format: int64 */
            base_total: number;
            name: string;
            /**
             * Format: int64
             * @description Selection samples where it is the leaf.
             */
            self: number;
            /**
             * Format: double
             * @description Its `self` share of the selection less its `self` share of the baseline (−1 to 1).
             */
            self_change: number;
            /**
             * Format: int64
             * @description Selection samples where it is anywhere on the stack.
             */
            total: number;
            /**
             * Format: double
             * @description The same of `total`.
             */
            total_change: number;
            /**
             * Format: double
             * @description Its `total` share of the selection over that of the baseline; `null` when the baseline
             *     does not have it.
             */
            total_ratio?: number | null;
        };
        FunctionCount: {
            name: string;
            /** Format: int64 */
            self: number;
            /** Format: int64 */
            total: number;
        };
        Health: {
            auth: boolean;
            fleet?: components["schemas"]["FleetPlace"] | null;
            /**
             * @description Whose fleet requests this agent takes: `trust_file` (the keys of its `--fleet-trust`
             *     file), `insecure` (`--fleet-insecure`: any key, every scope) or `none` (it refuses
             *     every request). Absent outside a fleet.
             */
            fleet_trust?: string | null;
            hostname: string;
            /** @description Interfaces the agent samples (empty under `serve`). */
            ifaces: string[];
            /** @description `agent` (collecting) or `serve` (serving a store only). */
            mode: string;
            /**
             * @description What this agent was asked to collect and runs without, and why (the kernel refused the
             *     program it needs); `status` is then `degraded`. Empty (and absent) when all runs.
             */
            off?: components["schemas"]["FeatureOff"][];
            status: string;
            /** Format: int64 */
            uptime_s: number;
            version: string;
        };
        /** @description `POST /api/v1/udfs/{name}/invoke`. */
        InvokeRequest: {
            from?: components["schemas"]["TimeValue"] | null;
            /** @description Parameters by name, as the analysis declares them (`GET /api/v1/udfs/{name}`). */
            params?: {
                [key: string]: unknown;
            };
            to?: components["schemas"]["TimeValue"] | null;
        };
        /** @description `POST /api/v1/udfs/{name}/invoke`: the result and how the invocation went. */
        InvokeResponse: components["schemas"]["AnalysisOutput"] & {
            /** Format: int64 */
            elapsed_ns: number;
            log: components["schemas"]["LogLine"][];
            /**
             * Format: int64
             * @description Log lines dropped beyond the log limit.
             */
            log_dropped: number;
            /**
             * Format: int64
             * @description Bytes of the result as JSON.
             */
            output_bytes: number;
            /** Format: int64 */
            peak_memory_bytes: number;
        };
        /** @description Calls whose measured duration was in `[low_ns, high_ns)`. */
        LatencyBucket: {
            /** Format: int64 */
            count: number;
            /** Format: int64 */
            high_ns: number;
            /** Format: int64 */
            low_ns: number;
        };
        /** @description One line an analysis logged (its log calls, stdout and stderr). */
        LogLine: {
            /** @description `debug`, `info`, `warn` or `error`; `stdout`/`stderr` for captured output. */
            level: string;
            message: string;
        };
        /** @description The eleven metrics of a run, each with `samples` entries. */
        Metrics: {
            in_bytes: number[];
            in_ce_bytes: number[];
            in_conns: number[];
            in_cross_region_bytes: number[];
            in_packets: number[];
            in_retx_bytes: number[];
            out_bytes: number[];
            out_conns: number[];
            out_cross_region_bytes: number[];
            out_packets: number[];
            out_retx_bytes: number[];
        };
        /**
         * @description Samples of one module: `self` where its code was running (the leaf frame is in it), `total`
         *     where it is anywhere on the stack (once per sample).
         */
        ModuleCount: {
            name: string;
            /** Format: int64 */
            self: number;
            /** Format: int64 */
            total: number;
        };
        NamedSeries: {
            name: string;
            values: number[];
        };
        /** @enum {string} */
        ParamKind: "unsigned" | "float" | "text" | "flag";
        ParamSpec: {
            /**
             * @description The value used when the parameter is not given (a number, text or flag); `null`: the
             *     parameter is required.
             */
            default?: unknown;
            description: string;
            kind: components["schemas"]["ParamKind"];
            name: string;
        };
        /**
         * @description One probed function of one session, and the duration from which its calls count as slow
         *     (the session's p99, as measured).
         */
        ProbeFunctionRef: {
            name: string;
            /** Format: int64 */
            session: number;
            /** Format: int64 */
            slow_ns: number;
        };
        /** @description One probed function over a session. */
        ProbeFunctionView: {
            /** Format: int64 */
            address: number;
            binary: string;
            /**
             * Format: int64
             * @description Every call, timed or not (exact).
             */
            calls: number;
            /** Format: double */
            calls_per_s: number;
            histogram: components["schemas"]["LatencyBucket"][];
            /**
             * Format: int64
             * @description Exact, as measured (bias included).
             */
            max_ns: number;
            /** Format: int64 */
            mean_ns?: number | null;
            name: string;
            /**
             * Format: int64
             * @description Percentiles within ±3.2 % (log-linear buckets), the bias subtracted.
             */
            p50_ns?: number | null;
            /** Format: int64 */
            p90_ns?: number | null;
            /** Format: int64 */
            p99_ns?: number | null;
            /**
             * Format: int32
             * @description Bytes past the symbol where the probe sat (4 after `endbr64`).
             */
            probe_offset: number;
            symbol: string;
            /**
             * Format: int64
             * @description Calls timed: the population of the figures below.
             */
            timed: number;
            /**
             * Format: int64
             * @description Sum of the timed calls' durations, as measured.
             */
            total_ns: number;
        };
        /** @description `loupe probes list --json`, `GET /api/v1/probes`. */
        ProbeList: {
            active: components["schemas"]["ActiveProbeView"][];
            sessions: components["schemas"]["ProbeListEntry"][];
        };
        /** @description One stored session, without its calls. */
        ProbeListEntry: {
            binary?: string | null;
            /** Format: int64 */
            calls: number;
            /** Format: int64 */
            end_unix_ns: number;
            ended: string;
            functions: string[];
            /** Format: int64 */
            id: number;
            pids: number[];
            /** Format: int64 */
            recorded_calls: number;
            /** Format: int64 */
            start_unix_ns: number;
        };
        /** @description A probe session to start. */
        ProbeOrder: {
            /** @description Probe functions whose first instruction the kernel must single-step (~10× the cost). */
            allow_single_step?: boolean;
            /** @description A binary to probe in every process that runs or maps it. */
            binary?: string | null;
            /**
             * Format: double
             * @description Most CPU the probes may cost the probed programs, in % of one CPU (default 1; above 0,
             *     at most 1,000: 100 is a whole CPU).
             */
            budget_percent?: number | null;
            /** @description Keep per-call records (for call trees). */
            calls?: boolean;
            /** @description `SYMBOL` or `LIBRARY:SYMBOL`; demangled names accepted. */
            functions: string[];
            /** @description Processes to probe (or give `binary`). */
            pids?: number[];
            /**
             * Format: int32
             * @description Time 1 outermost call in N (default 1: every call).
             */
            sample_every?: number | null;
            /**
             * Format: double
             * @description Length; without one, until stopped (at most an hour).
             */
            seconds?: number | null;
        };
        /** @description One probe session. */
        ProbeView: {
            /**
             * Format: int64
             * @description What the probes add to every timed call's duration on this host (an empty function's
             *     median), already subtracted from the percentiles below; 0 when not calibrated.
             */
            bias_ns: number;
            binary?: string | null;
            /** @description Every recorded call (only when asked for). */
            calls?: components["schemas"]["CallView"][] | null;
            /** Format: int64 */
            calls_lost: number;
            /** Format: int64 */
            calls_recorded: number;
            /** Format: int64 */
            end_unix_ns: number;
            /** @description Why it ended: `duration`, `stopped`, `budget`, `exited` or `shutdown`. */
            ended: string;
            functions: components["schemas"]["ProbeFunctionView"][];
            /** Format: int64 */
            id: number;
            notes: string[];
            pids: number[];
            /**
             * Format: int32
             * @description 1 in this many outermost calls was timed at the end (the budget may have raised it).
             */
            sample_every: number;
            /** @description The slowest outermost recorded calls, slowest first, each with its probed callees. */
            slowest: components["schemas"]["CallTreeView"][];
            /** Format: int64 */
            start_unix_ns: number;
        };
        /** @description The comparison of two ranges' profiles with the same filters. */
        ProfileDiffView: {
            /**
             * Format: int64
             * @description The baseline's.
             */
            base_samples: number;
            /**
             * @description The selection's flame graph; each node also holds the baseline's samples on the same
             *     path (`base`).
             */
            flamegraph: components["schemas"]["DiffNode"];
            /**
             * @description Functions on either side, by how much their share of `self` changed (largest change
             *     either way first), then of `total`.
             */
            functions: components["schemas"]["FunctionChange"][];
            /** @description Functions the baseline has and the selection has not, widest first. */
            gone: string[];
            /**
             * @description What every count is (`on_cpu` samples, `off_cpu` nanoseconds waited), on both sides.
             * @example on_cpu
             */
            kind: string;
            /** @description Functions the selection has and the baseline has not, widest first. */
            new: string[];
            /**
             * Format: int64
             * @description Selection nodes left out for holding less than `min_share` of its samples.
             */
            pruned_nodes: number;
            /**
             * Format: int64
             * @description The selection's samples (or ns waited, off the CPU): what its shares are of.
             */
            samples: number;
        };
        /** @description `loupe profile --json`. */
        ProfileView: {
            flamegraph: components["schemas"]["FlameNode"];
            /**
             * @description Sorted by `self` (samples where the function is the leaf), then `total` (samples where it
             *     is anywhere on the stack, once per sample), descending.
             */
            functions: components["schemas"]["FunctionCount"][];
            /**
             * @description `on_cpu`: every count below is samples of the running threads (`samples` of them).
             *     `off_cpu`: every count below is nanoseconds threads waited off the CPU (slept, blocked
             *     on a lock, a pipe, the disk), each sampled wait weighed by how long it lasted times the
             *     1-in-N it was sampled at; `samples` is then the waits sampled.
             * @example on_cpu
             */
            kind?: string;
            /** Format: int64 */
            lost: number;
            /**
             * @description Each module's share: the program's own binary, each shared library, `[kernel]`, and
             *     `[unknown]` for code outside any file (JIT without a perf map). Sorted like `functions`.
             *     What a fleet's "datacenter tax" adds up (how much CPU goes to libc, zlib, the kernel, …).
             */
            modules: components["schemas"]["ModuleCount"][];
            /**
             * Format: int64
             * @description Flame-graph nodes left out because they hold less than the share of the samples asked
             *     for (`min_share`); their samples still count in their parents' `value`. 0: complete.
             */
            pruned_nodes?: number;
            /** Format: int64 */
            samples: number;
            /**
             * @description How many samples' user stacks are whole (reach their thread's root), and why the others
             *     stopped: never hidden, since a short stack misattributes time to its outermost frame.
             */
            user_stacks?: components["schemas"]["UserStacks"];
        };
        /**
         * @description One program's timeline events in the window. A level-0 event with a lag ends an iteration
         *     that began `lag` before it (breath to breath).
         */
        ProgramLane: {
            /**
             * @description The events' arguments as four columns (`args[i][k]`: argument `i` of event `k`); a
             *     column no event of the lane sets (all zero) is sent empty.
             */
            args: number[][];
            column_count: number[];
            /**
             * @description Summarized: per column, the longest lag of a level-0 event that ended there — an
             *     iteration, or the wait between two when the loop logs its start at level 0 too (0: none).
             */
            column_max_lag_ns: number[];
            comm: string;
            /** @description What `event` indexes: name, level, argument names. */
            definitions: components["schemas"]["EventDefinitionView"][];
            event: number[];
            /** Format: int64 */
            events: number;
            /** @description The lag of each event (`null`: none). */
            lag_ns: (number | null)[];
            /** Format: int32 */
            pid: number;
            summarized: boolean;
            t_ns: number[];
            tid: number[];
        };
        /** @enum {string} */
        ResultKind: "table" | "series" | "flamegraph" | "text";
        /** @description One run in a list: `loupe runs list --json`, `GET /api/v1/runs`. */
        RunListEntry: {
            cpus: number[];
            host: string;
            /** Format: int64 */
            id: number;
            iface: string;
            /** Format: int64 */
            interval_ns: number;
            /** Format: int32 */
            samples: number;
            /** Format: int64 */
            start_unix_ns: number;
            /** Format: int64 */
            stored_bytes: number;
        };
        /** @description `loupe runs show --json`. */
        RunView: {
            clock?: components["schemas"]["ClockView"] | null;
            cpus: number[];
            host: string;
            /** Format: int64 */
            id: number;
            iface: string;
            /** Format: int64 */
            interval_ns: number;
            local_prefixes: string[];
            metrics: components["schemas"]["Metrics"];
            per_cpu?: components["schemas"]["CpuView"][] | null;
            rack?: string | null;
            /** Format: int32 */
            samples: number;
            /** @description `agent`, or `imported:<format>`. */
            source: string;
            /** Format: int64 */
            start_unix_ns: number;
        };
        Series: {
            name: string;
            /** @description `[time_unix_ns, value]` pairs. */
            points: number[][];
            unit: string;
        };
        /** @description Spans off the CPU as columns, or per window column how many began there and the longest. */
        Spans: {
            column_count: number[];
            column_max_ns: number[];
            dur_ns: number[];
            process: number[];
            stack: number[];
            summarized: boolean;
            t_ns: number[];
            tid: number[];
        };
        StackEnd: {
            /** @description `truncated: no unwind info`, `frame-pointer walk`, … */
            reason: string;
            /** Format: int64 */
            samples: number;
        };
        /** @description `POST /api/v1/runs`. */
        StartRun: {
            /** @description Interface; may be left out when the agent samples exactly one. */
            iface?: string | null;
            /** @description Slot width: `100us`, `1ms` or `10ms` (any width the sampler accepts). */
            interval: string;
            /**
             * Format: int32
             * @description Slots (default 2000).
             */
            samples?: number | null;
            /** @description Start at this exact instant (RFC 3339 or Unix ns) instead of now; at most 10 minutes ahead. */
            start?: string | null;
        };
        StartedRun: {
            /** Format: int64 */
            id: number;
            iface: string;
            /** Format: int64 */
            interval_ns: number;
            /** Format: int32 */
            samples: number;
            /** Format: int64 */
            start_unix_ns: number;
        };
        /** @description Store totals (running counters, no scan) and the retention they are kept under. */
        StatsView: {
            /**
             * Format: int64
             * @description What the store's files occupy on disk (including space not yet reclaimed).
             */
            disk_bytes: number;
            /**
             * Format: int64
             * @description How long data is kept, in seconds.
             */
            max_age_s: number;
            /**
             * Format: int64
             * @description The byte cap `total_bytes` is kept under (oldest deleted first).
             */
            max_bytes: number;
            /** Format: int64 */
            runs: number;
            /** Format: int64 */
            sample_batches: number;
            /**
             * Format: int64
             * @description Bytes of sample batches and the sample dictionary.
             */
            sample_bytes: number;
            /** Format: int64 */
            samples: number;
            /**
             * Format: int64
             * @description Sum of the runs' stored bytes.
             */
            stored_bytes: number;
            /**
             * Format: int64
             * @description Everything stored: runs, stack samples, timeline batches and probe sessions, their
             *     dictionaries included. What the byte cap applies to.
             */
            total_bytes: number;
        };
        /** @description One thread's probe calls that began in the window, in entry order; `depth` nests them. */
        ThreadCalls: {
            /** Format: int64 */
            calls: number;
            column_count: number[];
            column_max_ns: number[];
            depth: number[];
            dur_ns: number[];
            /** @description Index into the window's `probe_functions`. */
            function: number[];
            /** Format: int32 */
            pid: number;
            slow: boolean[];
            summarized: boolean;
            t_ns: number[];
            /** Format: int32 */
            tid: number;
        };
        /**
         * @description Samples as columns (`summarized` false), or per window column how many and the process
         *     with the most of them.
         */
        Ticks: {
            /** @description Summarized: samples per column. */
            column_count: number[];
            /** @description Summarized: per column, the process with the most samples (`u32::MAX` when none). */
            column_process: number[];
            /** @description Index into the window's `processes`. */
            process: number[];
            /** @description Index into the window's `stacks`. */
            stack: number[];
            summarized: boolean;
            t_ns: number[];
            tid: number[];
        };
        /** @description An instant in a body: a string in any form the API takes, or Unix ns as a number. */
        TimeValue: number | string;
        TimelineEventView: {
            /** @description The names the program gave its arguments. */
            arg_names: string[];
            /** @description The event's four arguments; the first `arg_names.len()` are named, the rest zero. */
            args: number[];
            comm: string;
            /** Format: int32 */
            cpu: number;
            /** Format: int64 */
            lag_ns?: number | null;
            /** Format: int32 */
            level: number;
            name: string;
            /** Format: int32 */
            pid: number;
            /** Format: int32 */
            tid: number;
            /** Format: int64 */
            time_unix_ns: number;
        };
        /** @description `loupe timeline show --json`: events in time order. */
        TimelineEventsPage: {
            events: components["schemas"]["TimelineEventView"][];
            /** @description More events follow: pass this as `after` for the next page. */
            next?: string | null;
        };
        /** @description One program's events in a range. */
        TimelineSourceView: {
            comm: string;
            /** @description The events the program defined, by name. */
            definitions: components["schemas"]["EventDefinitionView"][];
            /** Format: int64 */
            events: number;
            /** Format: int64 */
            first_unix_ns: number;
            /** Format: int64 */
            last_unix_ns: number;
            /**
             * Format: int64
             * @description Records the program wrote that were overwritten in its ring before the agent read them.
             */
            lost: number;
            /** Format: int32 */
            pid: number;
        };
        /** @description `loupe timeline list --json`. */
        TimelineSummary: {
            /** @description Per program and event: count and lag percentiles, by program then level then name. */
            events: components["schemas"]["EventStatsView"][];
            /** @description Programs with events in the range, by first event. */
            sources: components["schemas"]["TimelineSourceView"][];
        };
        /** @description A trace file (what [`to_json`] writes; its shape in the OpenAPI document). */
        Trace: {
            displayTimeUnit: string;
            /**
             * @description `source`, `from_unix_ns`, `to_unix_ns` (decimal strings), `summarized` (lanes with no
             *     items to export), `notes`.
             */
            otherData: Record<string, never>;
            traceEvents: components["schemas"]["Event"][];
        };
        /** @description One run's slots inside the window, at their full resolution. */
        TrafficLane: {
            /**
             * Format: int32
             * @description The run's index of the first slot shown.
             */
            first_slot: number;
            host: string;
            iface: string;
            /** Format: int64 */
            interval_ns: number;
            /**
             * Format: int64
             * @description Where that slot starts, in ns after the window's start (negative: before it).
             */
            offset_ns: number;
            /** Format: int64 */
            run: number;
            /** @description The series asked for (default `in_bytes` and `out_bytes`), one value per slot shown. */
            series: components["schemas"]["NamedSeries"][];
        };
        /** @description What `GET /api/v1/udfs` lists for each analysis. */
        UdfMeta: {
            description: components["schemas"]["Description"];
            /** @description The name it was uploaded under (the URL's). */
            name: string;
            /** @description The team that uploaded it: only this team may replace or delete it. */
            owner: string;
            /** @description SHA-256 of the component, hex. */
            sha256: string;
            /**
             * Format: int64
             * @description Bytes of the component.
             */
            size: number;
            /** Format: int64 */
            uploaded_unix_ns: number;
            version: string;
        };
        /** @description An upload's answer: the analysis as listed, and whether it replaced an earlier version. */
        Uploaded: components["schemas"]["UdfMeta"] & {
            /** @description Whether an earlier version was replaced. */
            replaced: boolean;
        };
        /** @description The samples with a user stack, and how their stacks ended. */
        UserStacks: {
            /** @description The others, by why they stopped (the text of their outermost marker frame), most first. */
            cut: components["schemas"]["StackEnd"][];
            /**
             * Format: int64
             * @description Samples with at least one user frame.
             */
            samples: number;
            /**
             * Format: int64
             * @description Of those, stacks that reach their root.
             */
            whole: number;
        };
        WindowFunction: {
            kernel: boolean;
            /**
             * @description What kind of code it is, as in a flame graph's nodes (`kernel`, `jit`, `python`; absent
             *     for native code).
             * @example python
             */
            kind?: string | null;
            module: string;
            name: string;
        };
        /** @description What a lane holds before it is summarized instead. */
        WindowLimits: {
            /** Format: int32 */
            calls_per_lane: number;
            /** Format: int32 */
            events_per_lane: number;
            /** Format: int32 */
            runs: number;
            /**
             * Format: int32
             * @description Stack samples (and, apart, waits) per CPU lane.
             */
            samples_per_lane: number;
        };
        WindowProcess: {
            comm: string;
            /** Format: int32 */
            pid: number;
        };
        /** @description Everything of `[from_unix_ns, to_unix_ns)`. */
        WindowView: {
            /**
             * Format: int32
             * @description Summarized lanes have this many columns, each `(to - from) / columns` ns wide.
             */
            columns: number;
            /** @description One lane per CPU with samples or waits in the window, by CPU. */
            cpus: components["schemas"]["CpuLane"][];
            /** Format: int64 */
            from_unix_ns: number;
            functions: components["schemas"]["WindowFunction"][];
            limits: components["schemas"]["WindowLimits"];
            /** @description Anything cut short, for the user (e.g. timeline events past the most one window reads). */
            notes: string[];
            /** @description The probed functions `function` columns index, per session. */
            probe_functions: components["schemas"]["ProbeFunctionRef"][];
            /** @description Per probed thread, its recorded calls in the window (sessions recorded with `--calls`). */
            probes: components["schemas"]["ThreadCalls"][];
            /** @description The processes lanes name (`process` columns index this), by pid. */
            processes: components["schemas"]["WindowProcess"][];
            /** @description Per program that logged timeline events in the window. */
            programs: components["schemas"]["ProgramLane"][];
            /**
             * Format: int32
             * @description Runs overlapping the window past `limits.runs`, left out (the latest).
             */
            runs_left_out: number;
            /**
             * @description The stacks exact samples and waits name (`stack` columns index this): function indexes
             *     into `functions`, leaf first.
             */
            stacks: number[][];
            /** Format: int64 */
            to_unix_ns: number;
            /** @description Per run overlapping the window (oldest first), its slots inside it. */
            traffic: components["schemas"]["TrafficLane"][];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    call: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CallBody"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CallAnswer"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CallAnswer"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CallAnswer"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CallAnswer"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description well-formed, but not this route's body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CallAnswer"];
                };
            };
        };
    };
    days: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DayView"][];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fleet_hosts: {
        parameters: {
            query?: {
                /** @description A datacenter. */
                dc?: string;
                /** @description A rack (rack names are taken to be unique in the fleet; give `dc` too where not). */
                rack?: string;
                /** @description One host, by its fleet name. */
                host?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FleetHostsView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fleet_host_profile: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                /**
                 * @description `on_cpu` (default): where its threads ran, in samples. `off_cpu`: where they waited off
                 *     the CPU, in nanoseconds (the host's agent started with `--off-cpu`).
                 * @example off_cpu
                 */
                kind?: string;
            };
            header?: never;
            path: {
                /** @description The host's fleet name */
                host: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfileView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fleet_host_run: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The host's fleet name */
                host: string;
                /** @description Run id on that host */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fleet_invoke: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FleetInvokeRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FleetInvokeView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    fleet_run: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["FleetRunRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["FleetRunView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description well-formed, but not this route's body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    openapi_json: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI 3.1 document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    pids: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": number[];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProbeList"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    start: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ProbeOrder"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActiveProbeView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description well-formed, but not this route's body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    stop: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The running session's handle */
                handle: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProbeView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description another team's session: it goes on */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show: {
        parameters: {
            query?: {
                /** @description Every recorded call too (large: up to a million). */
                calls?: boolean;
            };
            header?: never;
            path: {
                /** @description Stored session id */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProbeView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    profile: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                pid?: number;
                /** @description Exact command name. */
                comm?: string;
                cpu?: number;
                /** @description Include samples of idle CPUs. */
                idle?: boolean;
                /**
                 * @description `on_cpu` (default): where threads ran, in samples. `off_cpu`: where they waited off the
                 *     CPU, in nanoseconds (an agent started with `--off-cpu`).
                 * @example off_cpu
                 */
                kind?: string;
                /** @description Sampling frequency the samples were taken at, in Hz (pprof's period; default 10). */
                frequency?: number;
                /**
                 * @description Leave out of the flame graph the nodes with less than this share of the samples (0 to 1;
                 *     e.g. 0.0001, a tenth of a pixel at 1,000 pixels wide): their samples stay in their
                 *     parents' width and `pruned_nodes` says how many went. Functions and modules stay whole.
                 *     Default 0: everything. (JSON only; pprof is always whole.)
                 */
                min_share?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfileView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    profile_diff: {
        parameters: {
            query: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                pid?: number;
                /** @description Exact command name. */
                comm?: string;
                cpu?: number;
                /** @description Include samples of idle CPUs. */
                idle?: boolean;
                /**
                 * @description `on_cpu` (default): where threads ran, in samples. `off_cpu`: where they waited off the
                 *     CPU, in nanoseconds (an agent started with `--off-cpu`).
                 * @example off_cpu
                 */
                kind?: string;
                /** @description Sampling frequency the samples were taken at, in Hz (pprof's period; default 10). */
                frequency?: number;
                /**
                 * @description Leave out of the flame graph the nodes with less than this share of the samples (0 to 1;
                 *     e.g. 0.0001, a tenth of a pixel at 1,000 pixels wide): their samples stay in their
                 *     parents' width and `pruned_nodes` says how many went. Functions and modules stay whole.
                 *     Default 0: everything. (JSON only; pprof is always whole.)
                 */
                min_share?: number;
                /**
                 * @description Start of the baseline (inclusive), in the forms `from` takes: e.g. the same length just
                 *     before the selection, or the same time yesterday.
                 */
                base_from: string;
                /** @description End of the baseline (exclusive). */
                base_to: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfileDiffView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    profile_pprof: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                pid?: number;
                /** @description Exact command name. */
                comm?: string;
                cpu?: number;
                /** @description Include samples of idle CPUs. */
                idle?: boolean;
                /**
                 * @description `on_cpu` (default): where threads ran, in samples. `off_cpu`: where they waited off the
                 *     CPU, in nanoseconds (an agent started with `--off-cpu`).
                 * @example off_cpu
                 */
                kind?: string;
                /** @description Sampling frequency the samples were taken at, in Hz (pprof's period; default 10). */
                frequency?: number;
                /**
                 * @description Leave out of the flame graph the nodes with less than this share of the samples (0 to 1;
                 *     e.g. 0.0001, a tenth of a pixel at 1,000 pixels wide): their samples stay in their
                 *     parents' width and `pruned_nodes` says how many went. Functions and modules stay whole.
                 *     Default 0: everything. (JSON only; pprof is always whole.)
                 */
                min_share?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/octet-stream": number[];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_runs: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                /** @description Only runs of this slot width: `100us`, `1ms`, `10ms`. */
                interval?: string;
                iface?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunListEntry"][];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    start_run: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["StartRun"];
            };
        };
        responses: {
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StartedRun"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description well-formed, but not this route's body */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_run: {
        parameters: {
            query?: {
                /** @description Add each CPU's series (`per_cpu` in the answer). */
                per_cpu?: boolean;
            };
            header?: never;
            path: {
                /** @description Run id */
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    stats: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatsView"];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    summary: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                pid?: number;
                /** @description Exact command name of the program. */
                comm?: string;
                /** @description Exact event name. */
                event?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TimelineSummary"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                pid?: number;
                /** @description Exact command name of the program. */
                comm?: string;
                /** @description Exact event name. */
                event?: string;
                /** @description The `next` of the previous page. */
                after?: string;
                /** @description Events per page (1 to 10,000; default 1,000). */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TimelineEventsPage"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_udfs: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UdfMeta"][];
                };
            };
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_udf: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UdfMeta"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    put_udf: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/wasm": number[];
            };
        };
        responses: {
            /** @description replaced */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Uploaded"];
                };
            };
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Uploaded"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_udf: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    invoke: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["InvokeRequest"];
            };
        };
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvokeResponse"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description time limit */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body larger than 1 MiB */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description body neither JSON nor MessagePack */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description a limit of the sandbox or of the result, a trap, an analysis error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description concurrency limit */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    window: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                /**
                 * @description The chart's width in pixels: summarized lanes have this many columns (100 to 8192;
                 *     default 1000).
                 */
                columns?: number;
                /**
                 * @description Items (samples, calls, events) per lane before it is summarized (default 20,000; at most
                 *     2,000,000; the trace asks the most by default).
                 */
                lane_items?: number;
                /** @description Traffic series to send, comma-separated (default `in_bytes,out_bytes`). */
                series?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WindowView"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    window_trace: {
        parameters: {
            query?: {
                /** @description Start (inclusive): RFC 3339, Unix ns, `now`, or `-1h`. Default: the beginning. */
                from?: string;
                /** @description End (exclusive), same forms. Default: the end of time. */
                to?: string;
                /**
                 * @description The chart's width in pixels: summarized lanes have this many columns (100 to 8192;
                 *     default 1000).
                 */
                columns?: number;
                /**
                 * @description Items (samples, calls, events) per lane before it is summarized (default 20,000; at most
                 *     2,000,000; the trace asks the most by default).
                 */
                lane_items?: number;
                /** @description Traffic series to send, comma-separated (default `in_bytes,out_bytes`). */
                series?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Trace"];
                };
            };
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description missing, unknown or revoked token */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the token lacks the route's scope (`x-scope`), or the session or analysis is another team's */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/openmetrics-text": string;
                };
            };
            /** @description the request took too long */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request's Host names another server (a rebinding page's?); see --allowed-host */
            421: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description overloaded or shutting down; retry */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
