//! The one-shot commands — `run`, `runs list|show|export`, `import`, `sample`, `profile`,
//! `symbolize`, `timeline list|show` — as
//! adapters: parse the arguments, call the core where the data is, render. The data is in a
//! local store (a [`Host`] on it), or behind a running agent's control socket, or behind a
//! remote host's API (`--server`); each answers with the same model types.

use std::{fs, io::Write, str::FromStr, time::Instant};

use anyhow::{Context, Result, anyhow, bail};
use loupe_api::wire::http::StartedRun;
use loupe_bpf::parse_prefix;
use loupe_store::{NewRun, Profile, ProfileQuery, RunId, SampleKind, StoreError, TimeRange, TimelineQuery};
use serde::Serialize;

use super::{open_store, progress, stop_on_signals};
use crate::{
    cli::{
        ExportArgs, Format, ImportArgs, ListArgs, ProfileArgs, RemoteArgs, RunArgs, SampleArgs, ShowArgs, StoreArgs,
        SymbolizeArgs, TimelineCommand,
    },
    clock::now_unix_ns,
    core::{
        CoreError, Host, ImportOutcome, RunFilter, RunOrder,
        profiles::pprof_of,
        runs::run_request,
        time::{TimeArg, range},
    },
    doors::{control::AgentClient, remote::Client},
    formats::millisampler,
    ingest::stacks::StackCollector,
    model::{ProfileView, RunListEntry, RunView, TimelineEventsPage},
    render,
};

/// Where a command's data lives.
pub(super) enum Backend {
    Local(Host),
    Agent(AgentClient),
    Remote(Client),
}

/// The client for `--server`, if given.
pub fn remote_client(remote: &RemoteArgs) -> Result<Option<Client>> {
    remote.server.as_deref().map(|s| Client::new(s, remote.token.clone())).transpose()
}

/// Query parameters of a range, as the API takes them (Unix ns).
pub(super) fn range_query(range: TimeRange) -> Vec<(&'static str, String)> {
    let mut q = vec![("from", range.from_unix_ns().to_string())];
    if range.to_unix_ns() != u64::MAX {
        q.push(("to", range.to_unix_ns().to_string()));
    }
    q
}

impl Backend {
    pub(super) fn open(args: &StoreArgs, remote: &RemoteArgs) -> Result<Self> {
        if let Some(client) = remote_client(remote)? {
            return Ok(Self::Remote(client));
        }
        match open_store(args) {
            Ok(store) => Ok(Self::Local(Host::new(store))),
            Err(e @ StoreError::Locked { .. }) => match AgentClient::find(&args.data_dir) {
                Some(agent) => Ok(Self::Agent(agent)),
                None => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    fn list(&self, filter: RunFilter) -> Result<Vec<RunListEntry>> {
        Ok(match self {
            Self::Local(host) => host.list_runs(&filter)?,
            Self::Agent(agent) => agent.list_runs(filter)?,
            Self::Remote(client) => {
                let mut q = range_query(filter.range);
                q.extend(filter.interval_ns.map(|i| ("interval", format!("{i}ns"))));
                q.extend(filter.iface.map(|i| ("iface", i)));
                client.get("/api/v1/runs", &q)?
            }
        })
    }

    fn show(&self, id: &str, per_cpu: bool) -> Result<RunView> {
        let id = RunId::from_str(id).map_err(|_| CoreError::BadId(id.to_string()))?;
        Ok(match self {
            Self::Local(host) => host.show_run(id, per_cpu)?,
            Self::Agent(agent) => agent.show_run(id, per_cpu)?,
            Self::Remote(client) => client.get(&format!("/api/v1/runs/{id}"), &[("per_cpu", per_cpu.to_string())])?,
        })
    }

    fn import(&self, runs: Vec<NewRun>) -> Result<Vec<ImportOutcome>> {
        Ok(match self {
            Self::Local(host) => host.import_runs(runs),
            Self::Agent(agent) => agent.import_runs(runs)?,
            Self::Remote(_) => bail!("import writes to a local data dir; run it on the host (without --server)"),
        })
    }

    fn profile(&self, query: &ProfileQuery) -> Result<Profile> {
        Ok(match self {
            Self::Local(host) => host.profile(query)?,
            Self::Agent(agent) => agent.profile(query.clone())?,
            Self::Remote(_) => bail!("a remote host answers profiles as views (see `profile`)"),
        })
    }
}

pub fn run(args: RunArgs, remote: &RemoteArgs) -> Result<()> {
    let order = RunOrder {
        iface: Some(args.iface.clone()),
        interval: args.interval,
        samples: args.samples,
        start_unix_ns: args.at.map(TimeArg::unix_ns),
    };
    // Cheap checks first: nothing is loaded or attached for a request that cannot run.
    run_request(&order)?;
    let local_prefixes = args.local_prefixes.iter().map(|p| parse_prefix(p)).collect::<Result<Vec<_>, _>>()?;
    let backend = Backend::open(&args.store, remote)?;
    if !local_prefixes.is_empty() && !matches!(backend, Backend::Local(_)) {
        bail!("a running agent samples with its own --local-prefix list; drop --local-prefix here");
    }
    let what = format!(
        "run on {} ({} × {})",
        args.iface,
        args.samples,
        crate::clock::format_interval(args.interval.as_nanos() as u64)
    );
    let bar = progress::Timed::start(progress::wanted(args.json), &what, order.duration_from_now());
    let view = match backend {
        Backend::Local(host) => host.run_once(&args.iface, &order, local_prefixes)?,
        Backend::Agent(agent) => agent.start_run(order)?,
        Backend::Remote(client) => {
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
                start: order.start_unix_ns.map(|t| t.to_string()),
            };
            let started: StartedRun = client.post("/api/v1/runs", &body)?;
            client.get(&format!("/api/v1/runs/{}", started.id), &[])?
        }
    };
    drop(bar);
    if args.json { print_json(&view) } else { print_text(&render::run::summary(&view)) }
}

pub fn list(args: ListArgs, remote: &RemoteArgs) -> Result<()> {
    let filter = RunFilter {
        range: range(args.range.from, args.range.to)?,
        interval_ns: args.interval.map(|d| d.as_nanos() as u64),
        iface: args.iface,
    };
    let runs = Backend::open(&args.store, remote)?.list(filter)?;
    if args.json { print_json(&runs) } else { print_text(&render::run::table(&runs)) }
}

pub fn show(args: ShowArgs, remote: &RemoteArgs) -> Result<()> {
    let view = Backend::open(&args.store, remote)?.show(&args.id, args.per_cpu)?;
    if args.json { print_json(&view) } else { print_text(&render::run::summary(&view)) }
}

pub fn export(args: ExportArgs, remote: &RemoteArgs) -> Result<()> {
    let view = Backend::open(&args.store, remote)?.show(&args.id, false)?;
    let Format::Millisampler = args.format;
    let text = serde_json::to_string(&millisampler::export(&view))?;
    match args.output {
        Some(path) => fs::write(&path, text).with_context(|| format!("writing {}", path.display())),
        None => print_text(&format!("{text}\n")),
    }
}

pub fn import_millisampler(args: ImportArgs, remote: &RemoteArgs) -> Result<()> {
    let backend = Backend::open(&args.store, remote)?;
    let start = args.start.map_or_else(now_unix_ns, TimeArg::unix_ns);
    let interval = args.interval.as_nanos() as u64;
    let bar = progress::counter(progress::wanted(args.json), "reading", args.files.len() as u64);
    // Each file is one atomic put: a bad file is reported and skipped, the good ones land.
    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for path in &args.files {
        match millisampler::import(path, start, interval) {
            Ok(run) => runs.push((path, run)),
            Err(e) => failures.push(format!("{e:#}")),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
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
        print_text(&ids.iter().map(|id| format!("{id}\n")).collect::<String>())?;
    }
    match failures.len() {
        0 => Ok(()),
        1 => bail!("{}", failures[0]),
        n => bail!("{n} files not imported: {}", failures.join("; ")),
    }
}

pub(super) fn print_json(value: &impl Serialize) -> Result<()> {
    print_text(&format!("{}\n", serde_json::to_string(value)?))
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(super) fn print_text(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
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
    let options = args.stacks.options(&args.store.data_dir);
    options.validate()?; // before the store is opened: a bad request touches nothing
    let store = open_store(&args.store).map_err(|e| match e {
        StoreError::Locked { .. } => anyhow!("{e}; a running agent already samples stacks into it"),
        e => e.into(),
    })?;
    let stop = stop_on_signals()?;
    let mut collector = StackCollector::start(&options, args.stacks.naming(), store)?;
    let length = std::time::Duration::from_secs_f64(args.seconds);
    let bar = progress::Timed::start(progress::wanted(false), "sampling stacks", length);
    let done = collector.run(Some(Instant::now() + length), &stop)?;
    drop(bar);
    if options.off_cpu.is_some() {
        println!("{} samples and {} waits off the CPU stored, {} lost", done.samples, done.waits, done.lost);
    } else {
        println!("{} samples stored, {} lost", done.samples, done.lost);
    }
    Ok(())
}

pub fn symbolize(args: SymbolizeArgs, remote: &RemoteArgs) -> Result<()> {
    if remote.server.is_some() {
        bail!("symbolize reads debug files on the host that holds the samples: run it there (drop --server)");
    }
    let range = range(args.range.from, args.range.to)?;
    // The agent may run elsewhere in the file system: it gets absolute directories.
    let mut dirs = Vec::with_capacity(args.debug_dirs.len());
    for d in &args.debug_dirs {
        dirs.push(fs::canonicalize(d).with_context(|| format!("--debug-dir {}", d.display()))?);
    }
    let report = match Backend::open(&args.store, remote)? {
        Backend::Local(host) => host.symbolize(range, &dirs)?,
        Backend::Agent(agent) => agent.symbolize(range, dirs)?,
        Backend::Remote(_) => unreachable!("refused above"),
    };
    if args.json { print_json(&report) } else { print_text(&render::profile::symbolized(&report)) }
}

pub fn timeline(cmd: TimelineCommand, remote: &RemoteArgs) -> Result<()> {
    let (args, limit) = match &cmd {
        TimelineCommand::List(args) => (args, None),
        TimelineCommand::Show { args, limit } => (args, Some(*limit)),
    };
    let range = range(args.range.from, args.range.to)?;
    let query = TimelineQuery { range, pid: args.pid, comm: args.comm.clone(), event: args.event.clone() };
    let mut params = range_query(range);
    params.extend(args.pid.map(|p| ("pid", p.to_string())));
    params.extend(args.comm.clone().map(|c| ("comm", c)));
    params.extend(args.event.clone().map(|e| ("event", e)));
    let backend = Backend::open(&args.store, remote)?;
    let Some(limit) = limit else {
        let summary = match &backend {
            Backend::Local(host) => host.timeline(&query)?,
            Backend::Agent(agent) => agent.timeline(query)?,
            Backend::Remote(client) => client.get("/api/v1/timeline", &params)?,
        };
        return if args.json { print_json(&summary) } else { print_text(&render::timeline::summary(&summary)) };
    };
    // Page through until `limit` events.
    let mut page = TimelineEventsPage::default();
    let mut after: Option<String> = None;
    while page.events.len() < limit {
        let want = (limit - page.events.len()).min(crate::core::timeline::MAX_PAGE);
        let next = match &backend {
            Backend::Local(host) => host.timeline_events(&query, after.as_deref(), Some(want))?,
            Backend::Agent(agent) => agent.timeline_events(query.clone(), after.clone(), Some(want))?,
            Backend::Remote(client) => {
                let mut q = params.clone();
                q.push(("limit", want.to_string()));
                q.extend(after.clone().map(|a| ("after", a)));
                client.get("/api/v1/timeline/events", &q)?
            }
        };
        page.events.extend(next.events);
        page.next = next.next;
        match &page.next {
            Some(n) => after = Some(n.clone()),
            None => break,
        }
    }
    if args.json { print_json(&page) } else { print_text(&render::timeline::events(&page)) }
}

pub fn profile(args: ProfileArgs, remote: &RemoteArgs) -> Result<()> {
    let range = range(args.range.from, args.range.to)?;
    if args.frequency == 0 {
        return Err(CoreError::BadFrequency.into());
    }
    let backend = Backend::open(&args.store, remote)?;
    let view = if let Backend::Remote(client) = &backend {
        let mut q = range_query(range);
        q.extend(args.pid.map(|p| ("pid", p.to_string())));
        q.extend(args.comm.clone().map(|c| ("comm", c)));
        q.extend(args.cpu.map(|c| ("cpu", c.to_string())));
        q.push(("idle", args.idle.to_string()));
        if args.off_cpu {
            q.push(("kind", "off_cpu".into()));
        }
        let view: ProfileView = client.get("/api/v1/profile", &q)?;
        if let Some(path) = &args.pprof {
            q.push(("frequency", args.frequency.to_string()));
            let bytes = client.get_bytes("/api/v1/profile/pprof", &q)?;
            fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
        view
    } else {
        let kind = if args.off_cpu { SampleKind::OffCpu } else { SampleKind::OnCpu };
        let query = ProfileQuery {
            range,
            pid: args.pid,
            comm: args.comm.clone(),
            cpu: args.cpu,
            include_idle: args.idle,
            kind,
        };
        let profile = backend.profile(&query)?;
        if let Some(path) = &args.pprof {
            let bytes = pprof_of(&profile, kind, range, args.frequency)?;
            fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
        }
        ProfileView::new(&profile).of_kind(kind)
    };
    if args.json { print_json(&view) } else { print_text(&render::profile::summary(&view, args.top)) }
}
