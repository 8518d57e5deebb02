//! The command line: the contract users script against (see README "Command line").

use std::{path::PathBuf, time::Duration};

use clap::{Args, Parser, Subcommand, ValueEnum};

use loupe_core::time::{self, TimeArg};

#[derive(Debug, Parser)]
#[command(
    name = "loupe",
    version,
    about = "Fine-grained per-host telemetry: Millisampler runs, kept on disk, queried on demand."
)]
pub struct Cli {
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Bytes read of a `--token-file` (a token is 43 characters).
const MAX_TOKEN_FILE: u64 = 4096;

/// Client mode: ask a remote host's API instead of a local store.
#[derive(Debug, Clone, Args)]
pub struct RemoteArgs {
    /// Query this Loupe server (e.g. http://host:7878) instead of the local data dir.
    #[arg(long, global = true, env = "LOUPE_SERVER")]
    pub server: Option<String>,
    /// Bearer token for --server (see `loupe token add`). On the command line it shows in `ps`:
    /// prefer $LOUPE_TOKEN or --token-file.
    #[arg(long, global = true, env = "LOUPE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Read the bearer token for --server from this file (its first line).
    #[arg(long, global = true, env = "LOUPE_TOKEN_FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Trust an https:// --server signed by the CAs in this PEM file (else the system's roots).
    #[arg(long, global = true, env = "LOUPE_CACERT")]
    pub cacert: Option<PathBuf>,
    /// A client certificate (PEM) for an https:// --server that requires one (`--client-ca`).
    #[arg(long, global = true, requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, global = true, requires = "client_cert")]
    pub client_key: Option<PathBuf>,
}

impl RemoteArgs {
    /// The client of `--server` (or of `server` when the command has a default).
    pub fn client(&self, server: &str) -> anyhow::Result<loupe_doors::remote::Client> {
        let tls = loupe_doors::remote::ClientTls {
            cacert: self.cacert.clone(),
            cert: self.client_cert.clone(),
            key: self.client_key.clone(),
        };
        loupe_doors::remote::Client::with_tls(server, self.bearer()?, &tls)
    }

    /// The token: `--token` / `$LOUPE_TOKEN`, or the first line of `--token-file`.
    fn bearer(&self) -> anyhow::Result<Option<String>> {
        use std::io::Read;
        let Some(path) = &self.token_file else { return Ok(self.token.clone()) };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TOKEN_FILE).read_to_string(&mut text))
            .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", path.display()))?;
        match text.lines().next().map(str::trim).filter(|t| !t.is_empty()) {
            Some(token) => Ok(Some(token.to_string())),
            None => anyhow::bail!(
                "--token-file {}: no token in it (expected the line `loupe token add` printed)",
                path.display()
            ),
        }
    }
}

/// The HTTP API of `agent` and `serve`.
#[derive(Debug, Clone, Args)]
pub struct HttpArgs {
    /// Address of the HTTP API.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: std::net::SocketAddr,
    /// Serve reads and analyses without a token (only on a loopback address).
    #[arg(long)]
    pub no_auth: bool,
    /// Serve HTTPS with this certificate (PEM, the chain); re-read when it changes.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by a CA in this PEM file (mTLS; with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// Serve plain HTTP on an address beyond loopback (refused otherwise: tokens would cross
    /// the network in clear text). For a server behind a TLS proxy.
    #[arg(long)]
    pub insecure_plaintext: bool,
    /// A name this server is reached by (repeatable). Address literals, `localhost` and the
    /// machine's host name always are; a request naming any other host is refused with 421
    /// (a DNS-rebinding page's).
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Wall-clock limit of one analysis invocation.
    #[arg(long, default_value = "30s", value_parser = time::parse_duration)]
    pub udf_time_limit: Duration,
    /// Memory limit of one analysis invocation, e.g. 256MiB.
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes)]
    pub udf_memory_limit: u64,
    /// Memory an analysis touched that its pool slot keeps resident after it (at most the
    /// memory limit), e.g. 0 under a tight `MemoryMax=`: the next analysis then faults its
    /// pages in again (a tenth of a large merge's time).
    #[arg(long, default_value = "32MiB", value_parser = parse_bytes)]
    pub udf_keep_resident: u64,
    /// Analyses one team may run at once.
    #[arg(long, default_value_t = 2)]
    pub udf_team_concurrency: usize,
    /// Analyses one team may store.
    #[arg(long, default_value_t = 64)]
    pub udf_team_analyses: usize,
    /// Bytes of the analyses one team stores, together (e.g. 256MiB).
    #[arg(long, default_value = "256MiB", value_parser = parse_bytes)]
    pub udf_team_bytes: u64,
    /// Uploads compiled at once; more are refused with 429 (retry).
    #[arg(long, default_value_t = 2)]
    pub udf_compiles: usize,
    /// How long a request may wait for its answer (an on-demand run that outlasts it answers
    /// 408 and is stored when it ends).
    #[arg(long, default_value = "60s", value_parser = time::parse_duration)]
    pub request_timeout: Duration,
}

impl HttpArgs {
    pub fn options(&self) -> anyhow::Result<loupe_doors::http::ServerOptions> {
        let mut o = loupe_doors::http::ServerOptions {
            listen: self.listen,
            no_auth: self.no_auth,
            request_timeout: self.request_timeout,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(cert), Some(key)) => Some(loupe_doors::http::tls::TlsFiles {
                    cert: cert.clone(),
                    key: key.clone(),
                    client_ca: self.client_ca.clone(),
                }),
                _ => None,
            },
            insecure_plaintext: self.insecure_plaintext,
            allowed_hosts: loupe_doors::http::origin::AllowedHosts::new(&self.allowed_hosts)
                .map_err(anyhow::Error::msg)?,
            ..Default::default()
        };
        o.limits.time = self.udf_time_limit;
        o.limits.memory_bytes = self.udf_memory_limit as usize;
        o.limits.keep_resident_bytes = self.udf_keep_resident as usize;
        o.limits.per_team_invocations = self.udf_team_concurrency;
        o.limits.per_team_analyses = self.udf_team_analyses;
        o.limits.per_team_analysis_bytes = self.udf_team_bytes;
        o.limits.compiles = self.udf_compiles;
        o.limits.total_invocations = o.limits.total_invocations.max(self.udf_team_concurrency);
        Ok(o)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the agent: sample interfaces in scheduled runs and keep the runs on disk.
    Agent(AgentArgs),
    /// One on-demand run: attach, run, store, print.
    Run(RunArgs),
    /// The running agent's health: what it collects, and what it runs without and why (a
    /// kernel that refused a program). Asks the agent of the data dir, or `--server`.
    Status(DaysArgs),
    /// Retained days: runs by interval, stack samples and bytes each day.
    Days(DaysArgs),
    /// List, show and export stored runs.
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Import runs from other tools' files.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Collect stack samples of every CPU for a while (like `perf record -F 10 -a -g`).
    Sample(SampleArgs),
    /// Aggregate stored stack samples: hot functions, flame graph, pprof.
    Profile(ProfileArgs),
    /// Name stored frames that were kept as `module+address`, from debug files found now.
    Symbolize(SymbolizeArgs),
    /// Programs' application timelines: events and their lags.
    #[command(subcommand)]
    Timeline(TimelineCommand),
    /// One span of time on one axis: each run's traffic, each CPU's samples, each thread's
    /// probe calls, each program's timeline events (what the web UI's window view draws).
    Window(WindowArgs),
    /// Write stored data out in other tools' formats.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Probe named functions of running processes: per-call latency (uprobes), then store it.
    Probe(ProbeArgs),
    /// Stored and running probe sessions: list, show, stop.
    #[command(subcommand)]
    Probes(ProbesCommand),
    /// Serve a store's HTTP API without collecting (e.g. a copied data dir).
    Serve(ServeArgs),
    /// Teams' bearer tokens for the HTTP API.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The audit trail: who started or stopped probes and runs, uploaded or deleted analyses,
    /// added or revoked tokens, and how each ended.
    Audit(AuditArgs),
    /// Analyses (WebAssembly UDFs) on a server: upload, list, invoke, delete.
    #[command(subcommand)]
    Udf(UdfCommand),
    /// The fleet over NATS: hosts, synchronized rack runs, analyses on every host.
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Print the HTTP API's OpenAPI document (what /api/v1/openapi.json serves).
    Openapi,
    /// The demo's application (`agent --demo` starts it): a request loop that logs a timeline.
    #[command(hide = true)]
    DemoApp,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub http: HttpArgs,
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub dir: DataDirArg,
    #[command(flatten)]
    pub range: RangeArgs,
    /// One JSON object per line, as the file holds them.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct DataDirArg {
    #[arg(long, env = "LOUPE_DATA_DIR", default_value = "/var/lib/loupe")]
    pub data_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token for a team and print it (only its hash is kept).
    Add {
        team: String,
        /// What it may do, comma-separated: read, invoke, upload, run, probe, admin, fleet.
        /// `run` (on-demand runs), `probe` (uprobes in any process) and `fleet` (asking the
        /// fleet through this agent) are given only when named.
        #[arg(long, default_value = "read,invoke,upload", value_parser = loupe_api::access::Scopes::parse)]
        scopes: loupe_api::access::Scopes,
        #[command(flatten)]
        dir: DataDirArg,
    },
    /// Tokens by id, team and scopes.
    List {
        #[command(flatten)]
        dir: DataDirArg,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token by the id `token list` shows.
    Revoke {
        id: String,
        #[command(flatten)]
        dir: DataDirArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum UdfCommand {
    /// Upload (or replace) an analysis: a wasm32-wasip2 component.
    Upload { name: String, file: PathBuf },
    /// Analyses on the server.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run an analysis over a range; params as NAME=VALUE (numbers, true/false, or text).
    Invoke {
        name: String,
        #[command(flatten)]
        range: RangeArgs,
        #[arg(long = "param", short = 'p')]
        params: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Delete an analysis (its owning team only).
    Delete { name: String },
}

#[derive(Debug, Clone, Args)]
pub struct StackArgs {
    /// Stack samples per second per CPU (1 to 1000).
    #[arg(long = "frequency", default_value_t = 10)]
    pub frequency_hz: u64,
    /// Never sample tasks with this name (comm; repeat).
    #[arg(long = "deny-comm")]
    pub deny_comms: Vec<String>,
    /// Never sample this PID (repeat).
    #[arg(long = "deny-pid")]
    pub deny_pids: Vec<u32>,
    /// Never sample this cgroup v2 directory or anything below it (repeat).
    #[arg(long = "deny-cgroup")]
    pub deny_cgroups: Vec<PathBuf>,
    /// Sample Loupe's own process too. Off by default: a sample of itself is what makes the
    /// agent parse its own binary's unwind table (+26 MiB at the peak) and read its own debug
    /// information, for a process that is on a CPU ~0.1 % of the time.
    #[arg(long)]
    pub sample_self: bool,
    /// Also look for debug files here, before /usr/lib/debug (by build ID, debug link or name; repeat).
    #[arg(long = "debug-dir")]
    pub debug_dirs: Vec<PathBuf>,
    /// Never look for separate debug files: frames the binaries cannot name stay
    /// `module+address` (with their build ID, for `loupe symbolize` later).
    #[arg(long)]
    pub no_debug_files: bool,
    /// Name code inlined into its caller as `function [inlined]` frames, from the DWARF of a
    /// binary (built with -g) or of its separate debug file; profiles grow several-fold for such
    /// binaries, and a debug file's DWARF is read into memory.
    #[arg(long)]
    pub inlined_frames: bool,
    /// Kernel memory for unwind tables, in MiB (8 bytes a row; ~60 MiB of code per 16 MiB).
    /// Binaries that do not fit are stepped by frame pointer, and their stacks say so.
    #[arg(long = "unwind-memory-mib", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub unwind_memory_mib: u32,
    /// Walk user stacks by frame pointers only (the kernel's walker), not from the binaries'
    /// call-frame information: cheaper, but stops at the first function built without them.
    #[arg(long)]
    pub no_unwind_tables: bool,
    /// Do not walk CPython's own frames: a Python program's stacks then show the interpreter's
    /// evaluation loop, not the program's functions.
    #[arg(long)]
    pub no_python_frames: bool,
    /// Also sample threads as they wait off the CPU (sleep, lock, pipe, disk): their stacks as
    /// they blocked, weighed by how long they waited (`loupe profile --off-cpu`).
    #[arg(long)]
    pub off_cpu: bool,
    /// With --off-cpu: waits this long or longer (in microseconds) are all kept, each standing
    /// for itself; a shorter wait w is kept 1 in ⌈scale / w⌉ and stands for about `scale` (set
    /// each second so that the waits sent fit --off-cpu-max-per-second).
    #[arg(long = "off-cpu-exact-us", default_value_t = loupe_bpf::DEFAULT_EXACT.as_micros() as u64, value_parser = clap::value_parser!(u64).range(0..=60_000_000))]
    pub off_cpu_exact_us: u64,
    /// With --off-cpu: the most waits sent a second: the long ones first, the short ones
    /// sharing the rest; only if the long ones alone exceed it is every wait kept 1 in N, each
    /// kept one standing for N.
    #[arg(long = "off-cpu-max-per-second", default_value_t = loupe_bpf::DEFAULT_MAX_STACKS_PER_SECOND, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub off_cpu_max_per_second: u32,
}

impl StackArgs {
    /// The sampler's options; binaries' unwind tables are kept under `data_dir/unwind-tables`.
    pub fn options(&self, data_dir: &std::path::Path) -> loupe_bpf::StackSamplerOptions {
        loupe_bpf::StackSamplerOptions {
            frequency_hz: self.frequency_hz,
            deny: loupe_bpf::DenyList {
                comms: self.deny_comms.clone(),
                pids: self.deny_pids.iter().copied().chain((!self.sample_self).then(std::process::id)).collect(),
                cgroups: self.deny_cgroups.clone(),
            },
            table_rows: self.unwind_memory_mib << 17,
            table_cache: Some(data_dir.join("unwind-tables")),
            unwind_tables: !self.no_unwind_tables,
            python_frames: !self.no_python_frames,
            off_cpu: self.off_cpu.then(|| loupe_bpf::OffCpuOptions {
                exact: std::time::Duration::from_micros(self.off_cpu_exact_us),
                max_stacks_per_second: self.off_cpu_max_per_second,
            }),
        }
    }

    pub fn naming(&self) -> loupe_core::ingest::symbolize::NamingOptions {
        loupe_core::ingest::symbolize::NamingOptions {
            debug_dirs: self.debug_dirs.clone(),
            no_debug_files: self.no_debug_files,
            inlined: self.inlined_frames,
        }
    }
}

#[derive(Debug, Args)]
pub struct SampleArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub stacks: StackArgs,
    /// How long to sample.
    #[arg(long)]
    pub seconds: f64,
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Samples taken in this range.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Only this process.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Only tasks with this name.
    #[arg(long)]
    pub comm: Option<String>,
    /// Only this CPU.
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Include idle (swapper) samples.
    #[arg(long)]
    pub idle: bool,
    /// Where threads waited off the CPU, in time waited, instead of where they ran (samples
    /// taken with `--off-cpu`).
    #[arg(long)]
    pub off_cpu: bool,
    #[arg(long)]
    pub json: bool,
    /// Also write a gzipped pprof profile.proto here (`go tool pprof FILE`).
    #[arg(long)]
    pub pprof: Option<PathBuf>,
    /// The sampling frequency the samples were taken at, for pprof's CPU time.
    #[arg(long, default_value_t = 10)]
    pub frequency: u64,
    /// Rows of the text table.
    #[arg(long, default_value_t = 25)]
    pub top: usize,
    /// Compare with this baseline range (same filters): what changed, as shares of each side's
    /// samples. E.g. the hour before, or the same time yesterday.
    #[arg(long, allow_hyphen_values = true, requires = "base_to")]
    pub base_from: Option<TimeArg>,
    /// End of the baseline range, exclusive.
    #[arg(long, allow_hyphen_values = true, requires = "base_from")]
    pub base_to: Option<TimeArg>,
}

#[derive(Debug, Args)]
pub struct WindowArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The span: both ends (e.g. `--from -10m --to now`).
    #[command(flatten)]
    pub range: RangeArgs,
    /// Columns of a summarized lane (the chart's width in pixels).
    #[arg(long, default_value_t = loupe_api::orders::WINDOW_COLUMNS)]
    pub columns: u32,
    /// Items per lane before it is summarized (default 20,000).
    #[arg(long)]
    pub lane_items: Option<u32>,
    /// Traffic series, comma-separated (default in_bytes,out_bytes).
    #[arg(long, value_delimiter = ',')]
    pub series: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// A span of time as a Chrome/Perfetto trace (JSON Trace Event format): open it in the
    /// Perfetto UI or chrome://tracing. Samples and timeline events become instants per thread,
    /// probe calls and iterations slices, traffic counter tracks.
    Trace {
        #[command(flatten)]
        store: StoreArgs,
        /// The span: both ends.
        #[command(flatten)]
        range: RangeArgs,
        /// Where to write the trace.
        #[arg(long, short = 'o')]
        output: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum TimelineCommand {
    /// Programs that logged events in a range, and per event its count and lag percentiles.
    List(TimelineArgs),
    /// The events themselves, in time order.
    Show {
        #[command(flatten)]
        args: TimelineArgs,
        /// Most events to print.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
}

#[derive(Debug, Args)]
pub struct TimelineArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Only this process.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Only programs with this name.
    #[arg(long)]
    pub comm: Option<String>,
    /// Only this event.
    #[arg(long)]
    pub event: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// A process to probe (repeat for several running the same program).
    #[arg(long = "pid", conflicts_with = "binary")]
    pub pids: Vec<u32>,
    /// A binary to probe in every process that runs or maps it.
    #[arg(long, required_unless_present = "pids")]
    pub binary: Option<PathBuf>,
    /// Functions: SYMBOL (demangled names accepted) or LIBRARY:SYMBOL, comma-separated or repeated.
    #[arg(long = "func", required = true, value_delimiter = ',')]
    pub functions: Vec<String>,
    /// Probe this long (default: until Ctrl-C, at most an hour).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Time 1 outermost call in N; the others are counted only.
    #[arg(long = "sample", default_value_t = 1)]
    pub sample_every: u32,
    /// Record each timed call, to rebuild call trees (which child made a slow call slow).
    #[arg(long)]
    pub calls: bool,
    /// Most CPU the probes may cost the probed program, in % of one CPU (100: a whole CPU; at
    /// most 1000): sampling is raised, then the probes detach.
    #[arg(long, default_value_t = 1.0)]
    pub budget: f64,
    /// Probe functions whose first instruction the kernel single-steps (~10× the cost per call).
    #[arg(long)]
    pub allow_single_step: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ProbesCommand {
    /// Running sessions (on the agent) and stored ones.
    List {
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        range: RangeArgs,
        #[arg(long)]
        json: bool,
    },
    /// One stored session: percentiles, histograms, the slowest calls' trees.
    Show {
        #[command(flatten)]
        store: StoreArgs,
        id: u64,
        /// Every recorded call too.
        #[arg(long)]
        calls: bool,
        #[arg(long)]
        json: bool,
    },
    /// Stop a session running on the agent (by its handle) and show what it stored.
    Stop {
        #[command(flatten)]
        store: StoreArgs,
        handle: u64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct SymbolizeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Frames of samples taken in this range.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Look for debug files here, before /usr/lib/debug (by build ID or `MODULE.debug`; repeat).
    #[arg(long = "debug-dir")]
    pub debug_dirs: Vec<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Where runs are kept (a sled database directory).
    #[arg(long, env = "LOUPE_DATA_DIR", default_value = "/var/lib/loupe")]
    pub data_dir: PathBuf,
    /// Keep runs for this long (e.g. 7d, 36h).
    #[arg(long, default_value = "7d", value_parser = time::parse_duration)]
    pub retention: Duration,
    /// Keep at most this many bytes of runs (oldest deleted first), e.g. 10GiB, 500MB.
    #[arg(long, default_value = "10GiB", value_parser = parse_bytes)]
    pub max_bytes: u64,
    /// Audit trail files kept: `audit.log` and its rotated copies, up to 16 MiB each.
    #[arg(long, default_value_t = loupe_core::audit::DEFAULT_FILES as u64, value_parser = clap::value_parser!(u64).range(2..=100))]
    pub audit_files: u64,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Interface to sample (repeat for several).
    #[arg(long = "iface")]
    pub ifaces: Vec<String>,
    /// A prefix of the local region (repeat); traffic to or from elsewhere is cross-region.
    #[arg(long = "local-prefix")]
    pub local_prefixes: Vec<String>,
    /// Slot widths to run, each on its own schedule.
    #[arg(long, value_delimiter = ',', default_value = "100us,1ms,10ms", value_parser = time::parse_duration)]
    pub intervals: Vec<Duration>,
    /// Samples per run.
    #[arg(long, default_value_t = 2000)]
    pub samples: u32,
    /// Average time between two runs of the same interval.
    #[arg(long, default_value = "60s", value_parser = time::parse_duration)]
    pub period: Duration,
    /// Random jitter of each period, as a fraction of it (0 to 1), so a fleet does not run in lockstep.
    #[arg(long, default_value_t = 0.2)]
    pub jitter: f64,
    /// Create a network namespace with a traffic generator and sample its veth
    /// (`loupe-demo0`): the real agent on a real interface, for hosts with nothing to see.
    #[arg(long)]
    pub demo: bool,
    /// Where the demo finds the example analyses it installs (default: the build's
    /// `wasm32-wasip2/release` directories).
    #[arg(long)]
    pub demo_analyses: Option<PathBuf>,
    /// Stop after this long (default: run until SIGINT/SIGTERM).
    #[arg(long, value_parser = time::parse_duration)]
    pub duration: Option<Duration>,
    /// Do not sample stacks (traffic runs only).
    #[arg(long)]
    pub no_stacks: bool,
    #[command(flatten)]
    pub stacks: StackArgs,
    /// Where programs using the timeline library write their ring files (default
    /// $LOUPE_TIMELINE_DIR, else /dev/shm/loupe-timeline).
    #[arg(long)]
    pub timeline_dir: Option<PathBuf>,
    /// Tail at most this many programs of one user other than root (the ring directory is
    /// everyone's: one user's rings cannot take every slot).
    #[arg(long, default_value_t = loupe_core::ingest::timeline::MAX_SOURCES_PER_USER)]
    pub timeline_per_user: usize,
    /// Do not collect programs' timeline events.
    #[arg(long)]
    pub no_timeline: bool,
    #[command(flatten)]
    pub http: HttpArgs,
    /// Do not serve the HTTP API.
    #[arg(long)]
    pub no_http: bool,
    #[command(flatten)]
    pub fleet: FleetJoinArgs,
}

/// How the agent joins a fleet (nothing changes without `--nats`).
#[derive(Debug, Clone, Args)]
pub struct FleetJoinArgs {
    /// Join the fleet on this NATS server (nats://host:4222; comma-separated for a cluster):
    /// register, and answer fleet runs and analyses for this host's scopes.
    #[arg(long, env = "LOUPE_NATS")]
    pub nats: Option<String>,
    /// A NATS credentials file, for servers that require one.
    #[arg(long, env = "LOUPE_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,
    #[command(flatten)]
    pub nats_tls: NatsTlsArgs,
    /// This host's name in the fleet (default: the kernel's host name up to its first dot).
    #[arg(long = "host")]
    pub host: Option<String>,
    /// This host's rack (also stored with its runs).
    #[arg(long, default_value = "default")]
    pub rack: String,
    /// This host's datacenter.
    #[arg(long, default_value = "default")]
    pub dc: String,
    /// The keys whose signed fleet requests this agent takes, one `KEY TEAM SCOPES` a line
    /// (re-read when it changes; docs/fleet.md). Without it, and without --fleet-insecure, the
    /// agent joins, lists itself and refuses every request.
    #[arg(long, env = "LOUPE_FLEET_TRUST")]
    pub fleet_trust: Option<PathBuf>,
    /// Take any key's signed request, with every scope: for demos and loopback tests only
    /// (logged as a warning at start).
    #[arg(long, conflicts_with = "fleet_trust")]
    pub fleet_insecure: bool,
    /// This host's own key, which signs for the callers of its HTTP fleet routes (default:
    /// fleet-host.nk in the data dir, made on first start).
    #[arg(long, env = "LOUPE_FLEET_HOST_KEY")]
    pub fleet_host_key: Option<PathBuf>,
}

/// Where the fleet is: NATS directly, or (without `--nats`) the HTTP API of an agent in the
/// fleet given by the global `--server`.
#[derive(Debug, Clone, Args)]
pub struct FleetBusArgs {
    /// The fleet's NATS server (nats://host:4222).
    #[arg(long, env = "LOUPE_NATS")]
    pub nats: Option<String>,
    /// A NATS credentials file.
    #[arg(long, env = "LOUPE_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,
    #[command(flatten)]
    pub nats_tls: NatsTlsArgs,
    /// Sign the fleet's requests with this key (`loupe fleet key new`); the hosts' trust files
    /// say its team and scopes. Without one, only agents run with --fleet-insecure answer.
    #[arg(long, env = "LOUPE_FLEET_KEY")]
    pub fleet_key: Option<PathBuf>,
    /// Merge a leaf's partial only if a host key of this trust file (team *) sealed it, as an
    /// agent does with its own (in a fleet of leaf nodes; docs/fleet.md).
    #[arg(long, env = "LOUPE_FLEET_TRUST")]
    pub fleet_trust: Option<PathBuf>,
}

/// TLS to the fleet's NATS server (with a `tls://` URL, or a server that requires TLS).
#[derive(Debug, Clone, Args)]
pub struct NatsTlsArgs {
    /// Trust a TLS nats-server signed by the CAs in this PEM file (else the system's roots).
    #[arg(long, env = "LOUPE_NATS_CA")]
    pub nats_ca: Option<PathBuf>,
    /// A client certificate (PEM) for a nats-server that verifies clients.
    #[arg(long, env = "LOUPE_NATS_CERT", requires = "nats_key")]
    pub nats_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, env = "LOUPE_NATS_KEY", requires = "nats_cert")]
    pub nats_key: Option<PathBuf>,
}

impl NatsTlsArgs {
    pub fn tls(&self) -> loupe_fleet::BusTls {
        loupe_fleet::BusTls { ca: self.nats_ca.clone(), cert: self.nats_cert.clone(), key: self.nats_key.clone() }
    }
}

/// Which hosts a fleet command selects: one rack, one datacenter, one host, or all.
#[derive(Debug, Clone, Args)]
pub struct FleetScopeArgs {
    #[arg(long)]
    pub rack: Option<String>,
    #[arg(long)]
    pub dc: Option<String>,
    /// One host.
    #[arg(long = "host")]
    pub host: Option<String>,
    /// Every host of the fleet.
    #[arg(long, conflicts_with_all = ["rack", "dc", "host"])]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Who is in the fleet, and who stopped answering.
    Hosts {
        #[command(flatten)]
        bus: FleetBusArgs,
        #[command(flatten)]
        scope: FleetScopeArgs,
        #[arg(long)]
        json: bool,
    },
    /// A synchronized run on every selected host (usually a rack): one start instant, slots
    /// counted in each host's kernel from it.
    Run(FleetRunArgs),
    /// Run an analysis next to the data of every selected host and merge their partial results.
    Invoke(FleetInvokeArgs),
    /// Keys that sign the fleet's requests.
    #[command(subcommand)]
    Key(FleetKeyCommand),
}

#[derive(Debug, Subcommand)]
pub enum FleetKeyCommand {
    /// Makes a key pair: the seed goes to a new file only its owner may read (or to stdout), the
    /// public key — what the hosts' trust files list — to stdout.
    New {
        /// The file to write (it must not exist).
        #[arg(short = 'o', long = "out")]
        out: Option<PathBuf>,
    },
    /// The public key of a key file.
    Show { file: PathBuf },
}

#[derive(Debug, Args)]
pub struct FleetRunArgs {
    #[command(flatten)]
    pub bus: FleetBusArgs,
    #[command(flatten)]
    pub scope: FleetScopeArgs,
    /// Slot width: 100us, 1ms or 10ms (any from 10us to 10s).
    #[arg(long, default_value = "1ms", value_parser = time::parse_duration)]
    pub interval: Duration,
    #[arg(long, default_value_t = 2000)]
    pub samples: u32,
    /// The interface (default: each agent's only one).
    #[arg(long)]
    pub iface: Option<String>,
    /// The common start instant (RFC 3339 or Unix ns; default: 2 s from now).
    #[arg(long)]
    pub at: Option<TimeArg>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FleetInvokeArgs {
    /// The analysis: its name in the fleet's catalog (or, through --server, on that agent).
    pub name: String,
    /// Ship this module (a wasm32-wasip2 component) under NAME first.
    #[arg(long)]
    pub wasm: Option<PathBuf>,
    #[command(flatten)]
    pub bus: FleetBusArgs,
    #[command(flatten)]
    pub scope: FleetScopeArgs,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Parameters as NAME=VALUE (numbers, true/false, or text).
    #[arg(long = "param", short = 'p')]
    pub params: Vec<String>,
    /// How long to wait for the hosts' answers; the missing ones are listed.
    #[arg(long, default_value = "2s", value_parser = time::parse_duration)]
    pub deadline: Duration,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Interface to sample.
    #[arg(long)]
    pub iface: String,
    /// Slot width, e.g. 100us, 1ms, 10ms.
    #[arg(long, default_value = "1ms", value_parser = time::parse_duration)]
    pub interval: Duration,
    /// Number of slots.
    #[arg(long, default_value_t = 2000)]
    pub samples: u32,
    /// A prefix of the local region (repeat).
    #[arg(long = "local-prefix")]
    pub local_prefixes: Vec<String>,
    /// Start at this wall-clock instant instead of now (RFC 3339 or Unix ns): hosts given the
    /// same instant sample the same window.
    #[arg(long)]
    pub at: Option<TimeArg>,
    /// Print the run as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Runs that started in a time range.
    List(ListArgs),
    /// One run, every sample.
    Show(ShowArgs),
    /// One run in another tool's format.
    Export(ExportArgs),
}

/// A time range `[--from, --to)`, open-ended where not given.
#[derive(Debug, Clone, Copy, Args)]
pub struct RangeArgs {
    /// Earliest time (RFC 3339, Unix ns, "now", or "-1h" for an hour ago).
    #[arg(long, allow_hyphen_values = true)]
    pub from: Option<TimeArg>,
    /// Latest time, exclusive.
    #[arg(long, allow_hyphen_values = true)]
    pub to: Option<TimeArg>,
}

#[derive(Debug, Args)]
pub struct DaysArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Runs that started in this range.
    #[command(flatten)]
    pub range: RangeArgs,
    /// Only runs of this slot width.
    #[arg(long, value_parser = time::parse_duration)]
    pub interval: Option<Duration>,
    /// Only runs of this interface.
    #[arg(long)]
    pub iface: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    pub id: String,
    #[arg(long)]
    pub json: bool,
    /// Include every CPU's own series.
    #[arg(long)]
    pub per_cpu: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// The per-host JSON of Meta's public SyncMillisampler dataset.
    Millisampler,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    pub id: String,
    #[arg(long, value_enum)]
    pub format: Format,
    /// Write here instead of standard output.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Per-host JSON files (optionally .gz) of the SyncMillisampler dataset.
    Millisampler(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Start time for files that carry none (the dataset does not): default now.
    #[arg(long, allow_hyphen_values = true)]
    pub start: Option<TimeArg>,
    /// Slot width for files without `sampling_freq`.
    #[arg(long, default_value = "1ms", value_parser = time::parse_duration)]
    pub interval: Duration,
    #[arg(long)]
    pub json: bool,
}

/// Parses sizes such as `10GiB`, `500MB`, `4096`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("'{text}' is not a size such as 500MB or 10GiB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "tib" | "t" => 1 << 40,
        other => return Err(format!("unknown size unit '{other}' in '{text}'")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size '{text}' is too large"))
}
