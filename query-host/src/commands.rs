//! The one-shot commands: `run`, `runs list|show|export`, `import`.

use std::{
    collections::BTreeSet,
    fs,
    io::Write,
    str::FromStr,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, anyhow, bail};
use loupe_bpf::{RunRequest, SamplerOptions, StartAt, TrafficSampler, parse_prefix};
use loupe_store::{NewRun, Profile, ProfileQuery, Retention, RunId, RunMeta, Store, StoreError, TimeRange};
use serde::Serialize;

use crate::{
    cli::{
        ExportArgs, Format, ImportArgs, ListArgs, ProfileArgs, RangeArgs, RemoteArgs, RunArgs, SampleArgs, ShowArgs,
        StoreArgs,
    },
    client::Client,
    control::{AgentClient, Request, Response, import_runs, show_run},
    server::api::RunListEntry,
    millisampler,
    profile::ProfileView,
    stacks::StackCollector,
    timearg::{format_interval, format_unix_ns, now_unix_ns},
    view::{self, RunView},
};

pub fn open_store(args: &StoreArgs) -> Result<Store> {
    let retention = Retention { max_age: args.retention, max_bytes: args.max_bytes };
    Ok(Store::open(&args.data_dir, retention)?)
}

/// Where a command's data lives: the store on disk, or — when a running agent holds it — the
/// agent, asked through its control socket; or a remote server (`--server`).
enum Backend {
    Local(Store),
    Agent(AgentClient),
    Remote(Client),
}

/// The client for `--server`, if given.
pub fn remote_client(remote: &RemoteArgs) -> Result<Option<Client>> {
    remote.server.as_deref().map(|s| Client::new(s, remote.token.clone())).transpose()
}

/// Query parameters of a range, as the API takes them (Unix ns).
fn range_query(range: TimeRange) -> Vec<(&'static str, String)> {
    let mut q = vec![("from", range.from_unix_ns.to_string())];
    if range.to_unix_ns != u64::MAX {
        q.push(("to", range.to_unix_ns.to_string()));
    }
    q
}

impl Backend {
    fn open(args: &StoreArgs, remote: &RemoteArgs) -> Result<Self> {
        if let Some(client) = remote_client(remote)? {
            return Ok(Self::Remote(client));
        }
        match open_store(args) {
            Ok(store) => Ok(Self::Local(store)),
            Err(e) => match (e.downcast_ref::<StoreError>(), AgentClient::find(&args.data_dir)) {
                (Some(StoreError::Locked { .. }), Some(agent)) => Ok(Self::Agent(agent)),
                _ => Err(e),
            },
        }
    }

    fn list(&self, range: TimeRange, interval_ns: Option<u64>, iface: Option<String>) -> Result<Vec<RunListEntry>> {
        let entries = |metas: Vec<RunMeta>| metas.iter().map(RunListEntry::from).collect();
        match self {
            Self::Local(store) => Ok(entries(store.runs(range, interval_ns, iface.as_deref())?)),
            Self::Remote(client) => {
                let mut q = range_query(range);
                if let Some(i) = interval_ns {
                    q.push(("interval", format!("{i}ns")));
                }
                if let Some(i) = iface {
                    q.push(("iface", i));
                }
                client.get("/api/v1/runs", &q)
            }
            Self::Agent(agent) => {
                let request = Request::List {
                    from_unix_ns: range.from_unix_ns,
                    to_unix_ns: range.to_unix_ns,
                    interval_ns,
                    iface,
                };
                match agent.call(&request)? {
                    Response::List(runs) => Ok(entries(runs)),
                    other => bail!("unexpected answer from the agent: {other:?}"),
                }
            }
        }
    }

    fn show(&self, id: &str, per_cpu: bool) -> Result<RunView> {
        let id =
            RunId::from_str(id).map_err(|_| anyhow!("bad run id '{id}': expected a number from `loupe runs list`"))?;
        match self {
            Self::Local(store) => show_run(store, id, per_cpu),
            Self::Remote(client) => client.get(&format!("/api/v1/runs/{id}"), &[("per_cpu", per_cpu.to_string())]),
            Self::Agent(agent) => match agent.call(&Request::Show { id: id.0, per_cpu })? {
                Response::Run(view) => Ok(*view),
                other => bail!("unexpected answer from the agent: {other:?}"),
            },
        }
    }

    fn profile(&self, query: &ProfileQuery) -> Result<Profile> {
        match self {
            Self::Local(store) => Ok(store.profile(query)?),
            Self::Remote(_) => unreachable!("remote profiles are read as views (see `profile`)"),
            Self::Agent(agent) => match agent.call(&Request::Profile { query: query.clone() })? {
                Response::Profile(profile) => Ok(profile),
                other => bail!("unexpected answer from the agent: {other:?}"),
            },
        }
    }

    fn pids(&self, range: TimeRange) -> Result<BTreeSet<u32>> {
        match self {
            Self::Local(store) => Ok(store.pids(range)?),
            Self::Remote(client) => client.get("/api/v1/pids", &range_query(range)),
            Self::Agent(agent) => match agent.call(&Request::Pids { range })? {
                Response::Pids(pids) => Ok(pids),
                other => bail!("unexpected answer from the agent: {other:?}"),
            },
        }
    }

    fn import(&self, runs: Vec<NewRun>) -> Result<Vec<Result<u64, String>>> {
        match self {
            Self::Local(store) => Ok(import_runs(store, runs)),
            Self::Remote(_) => bail!("import writes to a local data dir; run it on the host (without --server)"),
            Self::Agent(agent) => match agent.call(&Request::Import { runs })? {
                Response::Import(ids) => Ok(ids),
                other => bail!("unexpected answer from the agent: {other:?}"),
            },
        }
    }
}

pub fn run(args: RunArgs, remote: &RemoteArgs) -> Result<()> {
    let request = RunRequest {
        interval: args.interval,
        samples: args.samples,
        start: args.at.map_or(StartAt::Now, |t| StartAt::UnixNs(t.unix_ns())),
    };
    // Cheap checks first: nothing is loaded or attached for a request that cannot run.
    request.validate(loupe_bpf::MAX_CAPACITY)?;
    let local_prefixes = args.local_prefixes.iter().map(|p| parse_prefix(p)).collect::<Result<Vec<_>, _>>()?;
    let view = match Backend::open(&args.store, remote)? {
        Backend::Remote(client) => {
            if !local_prefixes.is_empty() {
                bail!("a remote agent samples with its own --local-prefix list; drop --local-prefix here");
            }
            #[derive(Serialize)]
            struct Body {
                iface: String,
                interval: String,
                samples: u32,
                start: Option<String>,
            }
            let body = Body {
                iface: args.iface.clone(),
                interval: format!("{}ns", args.interval.as_nanos()),
                samples: args.samples,
                start: args.at.map(|t| t.unix_ns().to_string()),
            };
            #[derive(serde::Deserialize)]
            struct Started {
                id: u64,
            }
            let started: Started = client.post("/api/v1/runs", &body)?;
            client.get(&format!("/api/v1/runs/{}", started.id), &[])?
        }
        Backend::Local(store) => {
            let options = SamplerOptions { capacity: args.samples, local_prefixes };
            let mut sampler = TrafficSampler::attach(&args.iface, &options)?;
            let counters = sampler.run(&request)?;
            drop(sampler);
            let meta = store.put_run(view::new_run(&counters, &view::hostname()), now_unix_ns())?;
            show_run(&store, meta.id, false)?
        }
        Backend::Agent(agent) => {
            if !local_prefixes.is_empty() {
                bail!("a running agent samples with its own --local-prefix list; drop --local-prefix here");
            }
            let call = Request::Run {
                iface: args.iface.clone(),
                interval_ns: args.interval.as_nanos() as u64,
                samples: args.samples,
                start_unix_ns: args.at.map(|t| t.unix_ns()),
            };
            match agent.call(&call)? {
                Response::Run(view) => *view,
                other => bail!("unexpected answer from the agent: {other:?}"),
            }
        }
    };
    if args.json {
        print_json(&view)
    } else {
        print!("{}", view.summary());
        Ok(())
    }
}

/// `[--from, --to)`, open-ended where not given.
fn time_range(args: RangeArgs) -> Result<TimeRange> {
    let from = args.from.map_or(0, |t| t.unix_ns());
    let to = args.to.map_or(u64::MAX, |t| t.unix_ns());
    TimeRange::new(from, to)
        .map_err(|_| anyhow!("bad time range: --from {} is after --to {}", format_unix_ns(from), format_unix_ns(to)))
}

pub fn list(args: ListArgs, remote: &RemoteArgs) -> Result<()> {
    let range = time_range(args.range)?;
    let interval = args.interval.map(|d| d.as_nanos() as u64);
    let runs = Backend::open(&args.store, remote)?.list(range, interval, args.iface)?;
    if args.json {
        return print_json(&runs);
    }
    println!(
        "{:>20}  {:<27}  {:<12} {:>9} {:>8} {:>5} {:>10}",
        "id", "start (UTC)", "iface", "interval", "samples", "cpus", "bytes"
    );
    for m in &runs {
        println!(
            "{:>20}  {:<27}  {:<12} {:>9} {:>8} {:>5} {:>10}",
            m.id,
            format_unix_ns(m.start_unix_ns),
            m.iface,
            format_interval(m.interval_ns),
            m.samples,
            m.cpus.len(),
            m.stored_bytes
        );
    }
    Ok(())
}

pub fn show(args: ShowArgs, remote: &RemoteArgs) -> Result<()> {
    let view = Backend::open(&args.store, remote)?.show(&args.id, args.per_cpu)?;
    if args.json {
        print_json(&view)
    } else {
        print!("{}", view.summary());
        Ok(())
    }
}

pub fn export(args: ExportArgs, remote: &RemoteArgs) -> Result<()> {
    let view = Backend::open(&args.store, remote)?.show(&args.id, false)?;
    let Format::Millisampler = args.format;
    let text = serde_json::to_string(&millisampler::export(&view))?;
    match args.output {
        Some(path) => fs::write(&path, text).with_context(|| format!("writing {}", path.display())),
        None => print_line(&text),
    }
}

pub fn import_millisampler(args: ImportArgs, remote: &RemoteArgs) -> Result<()> {
    let backend = Backend::open(&args.store, remote)?;
    let start = args.start.map_or_else(now_unix_ns, |t| t.unix_ns());
    let interval = args.interval.as_nanos() as u64;
    // Each file is one atomic put: a bad file is reported and skipped, the good ones land.
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for path in &args.files {
        match millisampler::import(path, start, interval) {
            Ok(run) => runs.push((path, run)),
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    let (paths, runs): (Vec<_>, Vec<_>) = runs.into_iter().unzip();
    let mut ids = Vec::new();
    for (path, outcome) in paths.into_iter().zip(backend.import(runs)?) {
        match outcome {
            Ok(id) => ids.push(id),
            Err(e) => failures.push(format!("{}: {e}", path.display())),
        }
    }
    if args.json {
        print_json(&ids)?;
    } else {
        for id in &ids {
            println!("{id}");
        }
    }
    match failures.len() {
        0 => Ok(()),
        1 => bail!("{}", failures[0]),
        n => bail!("{n} files not imported: {}", failures.join("; ")),
    }
}

fn print_json(value: &impl Serialize) -> Result<()> {
    print_line(&serde_json::to_string(value)?)
}

/// Writes a line to stdout; a closed pipe (`| head`) is not an error.
fn print_line(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

pub fn sample(args: SampleArgs, remote: &RemoteArgs) -> Result<()> {
    if remote.server.is_some() {
        bail!("sample collects on this host; a remote agent samples stacks by itself (drop --server)");
    }
    if !(args.seconds > 0.0 && args.seconds <= 86_400.0) {
        bail!("--seconds {} out of bounds (more than 0, at most 86400)", args.seconds);
    }
    let options = args.stacks.options();
    options.validate()?; // before the store is opened: a bad request touches nothing
    let store = open_store(&args.store).map_err(|e| match e.downcast_ref::<StoreError>() {
        Some(StoreError::Locked { .. }) => anyhow!("{e:#}; a running agent already samples stacks into it"),
        _ => e,
    })?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let mut collector = StackCollector::start(&options, store)?;
    let deadline = Instant::now() + Duration::from_secs_f64(args.seconds);
    let done = collector.run(Some(deadline), &stop)?;
    println!("{} samples stored, {} lost", done.samples, done.lost);
    Ok(())
}

pub fn profile(args: ProfileArgs, remote: &RemoteArgs) -> Result<()> {
    let range = time_range(args.range)?;
    if args.frequency == 0 {
        bail!("--frequency must be at least 1");
    }
    let backend = Backend::open(&args.store, remote)?;
    if let Backend::Remote(client) = &backend {
        let mut q = range_query(range);
        q.extend(args.pid.map(|p| ("pid", p.to_string())));
        q.extend(args.comm.clone().map(|c| ("comm", c)));
        q.extend(args.cpu.map(|c| ("cpu", c.to_string())));
        q.push(("idle", args.idle.to_string()));
        let view: ProfileView = client.get("/api/v1/profile", &q)?;
        if let Some(path) = &args.pprof {
            q.push(("frequency", args.frequency.to_string()));
            let bytes = client.get_bytes("/api/v1/profile/pprof", &q)?;
            fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
        return if args.json {
            print_json(&view)
        } else {
            print!("{}", view.summary(args.top));
            Ok(())
        };
    }
    if let Some(pid) = args.pid
        && !backend.pids(range)?.contains(&pid)
    {
        bail!("no samples of PID {pid} in that time range");
    }
    let query = ProfileQuery { range, pid: args.pid, comm: args.comm.clone(), cpu: args.cpu, include_idle: args.idle };
    let profile = backend.profile(&query)?;
    let view = ProfileView::new(&profile);
    if let Some(path) = &args.pprof {
        let period = 1_000_000_000 / args.frequency as i64;
        let end = range.to_unix_ns.min(now_unix_ns());
        let bytes = crate::profile::pprof(&profile, period, range.from_unix_ns, end.saturating_sub(range.from_unix_ns));
        fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        print_json(&view)
    } else {
        print!("{}", view.summary(args.top));
        Ok(())
    }
}
