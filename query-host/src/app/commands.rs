//! The one-shot commands — `run`, `runs list|show|export`, `import`, `sample`, `profile`,
//! `symbolize`, `timeline list|show` — as adapters: parse the arguments, call the host's
//! operation ([`HostApi`]), render. The host is a local store (a [`Host`] on it), a running
//! agent's control socket, or a remote host's API (`--server`) — `open` picks it, and the
//! commands do not know which: each answers with the same types and the same errors.

use std::{fs, io::Write, path::Path, str::FromStr, time::Instant};

use anyhow::{Context, Result, anyhow, bail};
use ipnet::IpNet;
use loupe_api::{
    access::Caller,
    ops::HostApi,
    orders::{MAX_WINDOW_LANE_ITEMS, WINDOW_COLUMNS, WindowOrder},
    wire::control::IMPORT_CHUNK,
};
use loupe_bpf::parse_prefix;
use loupe_store::{ProfileQuery, RunId, SampleKind, StoreError, TimelineQuery};
use serde::Serialize;

use super::{open_store, progress, stop_on_signals};
use crate::{
    cli::{
        DaysArgs, ExportArgs, Format, ImportArgs, ListArgs, ProfileArgs, RangeArgs, RemoteArgs, RunArgs, SampleArgs,
        ShowArgs, StoreArgs, SymbolizeArgs, TimelineCommand, WindowArgs,
    },
    render,
};
use loupe_api::{clock::now_unix_ns, formats::millisampler, model::TimelineEventsPage};
use loupe_core::{
    ingest::stacks::StackCollector,
    {
        ActingFor, CoreError, Host, RunFilter, RunOrder,
        runs::run_request,
        time::{TimeArg, range},
    },
};
use loupe_doors::{control, remote::Client};

/// The host a command asks: a remote host's API (`--server`), else the store under the data
/// dir — opened here, or through the agent that holds it. Runs and probe sessions asked of a
/// store opened here attach in this process; `local_prefixes` are for its runs (an agent and a
/// remote host sample with their own).
pub(super) fn open(args: &StoreArgs, remote: &RemoteArgs, local_prefixes: Vec<IpNet>) -> Result<Box<dyn HostApi>> {
    let not_here = || bail!("a running agent samples with its own --local-prefix list; drop --local-prefix here");
    if let Some(client) = remote_client(remote)? {
        if !local_prefixes.is_empty() {
            return not_here();
        }
        return Ok(Box::new(client.host()));
    }
    match open_store(args) {
        // Root on the host, with the store in hand: the host's operator.
        Ok(store) => {
            Ok(Box::new(ActingFor::new(Box::new(Host::new(store).collecting_here(local_prefixes)), Caller::operator())))
        }
        Err(e @ StoreError::Locked { .. }) => match control::find(&args.data_dir) {
            Some(_) if !local_prefixes.is_empty() => not_here(),
            Some(agent) => Ok(Box::new(agent)),
            None => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    }
}

/// The client for `--server`, if given.
pub fn remote_client(remote: &RemoteArgs) -> Result<Option<Client>> {
    remote.server.as_deref().map(|s| remote.client(s)).transpose()
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
    let host = open(&args.store, remote, local_prefixes)?;
    let what = format!(
        "run on {} ({} × {})",
        args.iface,
        args.samples,
        loupe_api::clock::format_interval(args.interval.as_nanos() as u64)
    );
    let bar = progress::Timed::start(progress::wanted(args.json), &what, order.duration_from_now());
    let view = host.start_run(order)?;
    drop(bar);
    if args.json { print_json(&view) } else { print_text(&render::run::summary(&view)) }
}

pub fn list(args: ListArgs, remote: &RemoteArgs) -> Result<()> {
    let filter = RunFilter {
        range: range(args.range.from, args.range.to)?,
        interval_ns: args.interval.map(|d| d.as_nanos() as u64),
        iface: args.iface,
    };
    let runs = open(&args.store, remote, Vec::new())?.list_runs(filter)?;
    if args.json { print_json(&runs) } else { print_text(&render::run::table(&runs)) }
}

pub fn show(args: ShowArgs, remote: &RemoteArgs) -> Result<()> {
    let view = open(&args.store, remote, Vec::new())?.show_run(run_id(&args.id)?, args.per_cpu)?;
    if args.json { print_json(&view) } else { print_text(&render::run::summary(&view)) }
}

pub fn export(args: ExportArgs, remote: &RemoteArgs) -> Result<()> {
    let view = open(&args.store, remote, Vec::new())?.show_run(run_id(&args.id)?, false)?;
    let Format::Millisampler = args.format;
    let text = serde_json::to_string(&millisampler::export(&view))?;
    match args.output {
        Some(path) => fs::write(&path, text).with_context(|| format!("writing {}", path.display())),
        None => print_text(&format!("{text}\n")),
    }
}

pub fn import_millisampler(args: ImportArgs, remote: &RemoteArgs) -> Result<()> {
    let host = open(&args.store, remote, Vec::new())?;
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
    let mut outcomes = Vec::with_capacity(runs.len());
    // In chunks, so no one call carries more than the control socket reads.
    let mut runs = runs.into_iter().peekable();
    while runs.peek().is_some() {
        outcomes.extend(host.import_runs(runs.by_ref().take(IMPORT_CHUNK).collect())?);
    }
    let mut ids = Vec::new();
    for (path, outcome) in paths.into_iter().zip(outcomes) {
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

/// A run id as given on the command line.
fn run_id(text: &str) -> Result<u64, CoreError> {
    RunId::from_str(text).map(|id| id.0).map_err(|_| CoreError::BadId(text.to_string()))
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
    if let Some(why) = collector.off_cpu_off() {
        eprintln!("loupe: off-CPU waits are off, CPU samples go on: {why}");
    }
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

/// The agent's health, asked of the agent itself (its control socket, or `--server`): a store
/// with no agent collects nothing, so it has no status to give.
pub fn status(args: DaysArgs, remote: &RemoteArgs) -> Result<()> {
    let health = match remote_client(remote)? {
        Some(client) => client.host().status()?,
        None => control::find(&args.store.data_dir)
            .with_context(|| {
                format!("no agent runs on {} (start one with `loupe agent`)", args.store.data_dir.display())
            })?
            .status()?,
    };
    if args.json { print_json(&health) } else { print_text(&render::status::text(&health)) }
}

pub fn days(args: DaysArgs, remote: &RemoteArgs) -> Result<()> {
    let days = open(&args.store, remote, Vec::new())?.days()?;
    if args.json { print_json(&days) } else { print_text(&render::days::table(&days)) }
}

pub fn symbolize(args: SymbolizeArgs, remote: &RemoteArgs) -> Result<()> {
    let range = range(args.range.from, args.range.to)?;
    // The agent may run elsewhere in the file system: it gets absolute directories.
    let mut dirs = Vec::with_capacity(args.debug_dirs.len());
    for d in &args.debug_dirs {
        dirs.push(fs::canonicalize(d).with_context(|| format!("--debug-dir {}", d.display()))?);
    }
    let report = open(&args.store, remote, Vec::new())?.symbolize(range, dirs)?;
    if args.json { print_json(&report) } else { print_text(&render::profile::symbolized(&report)) }
}

pub fn timeline(cmd: TimelineCommand, remote: &RemoteArgs) -> Result<()> {
    let (args, limit) = match &cmd {
        TimelineCommand::List(args) => (args, None),
        TimelineCommand::Show { args, limit } => (args, Some(*limit)),
    };
    let range = range(args.range.from, args.range.to)?;
    let query = TimelineQuery { range, pid: args.pid, comm: args.comm.clone(), event: args.event.clone() };
    let host = open(&args.store, remote, Vec::new())?;
    let Some(limit) = limit else {
        let summary = host.timeline(query)?;
        return if args.json { print_json(&summary) } else { print_text(&render::timeline::summary(&summary)) };
    };
    // Page through until `limit` events.
    let mut page = TimelineEventsPage::default();
    let mut after: Option<String> = None;
    while page.events.len() < limit {
        let want = (limit - page.events.len()).min(loupe_core::timeline::MAX_PAGE);
        let next = host.timeline_events(query.clone(), after.clone(), Some(want))?;
        page.events.extend(next.events);
        page.next = next.next;
        match &page.next {
            Some(n) => after = Some(n.clone()),
            None => break,
        }
    }
    if args.json { print_json(&page) } else { print_text(&render::timeline::events(&page)) }
}

/// `loupe window`: every lane of a span of time, counted (or whole with `--json`).
pub fn window(args: WindowArgs, remote: &RemoteArgs) -> Result<()> {
    let order = WindowOrder {
        range: range(args.range.from, args.range.to)?,
        columns: args.columns,
        lane_items: args.lane_items,
        series: args.series,
    };
    let view = open(&args.store, remote, Vec::new())?.window(order)?;
    if args.json { print_json(&view) } else { print_text(&render::window::summary(&view)) }
}

/// `loupe export trace`: the window, every item, as a trace file.
pub fn export_trace(store: &StoreArgs, span: RangeArgs, output: &Path, remote: &RemoteArgs) -> Result<()> {
    let order = WindowOrder {
        range: range(span.from, span.to)?,
        columns: WINDOW_COLUMNS,
        lane_items: Some(MAX_WINDOW_LANE_ITEMS),
        series: Vec::new(),
    };
    let bytes = open(store, remote, Vec::new())?.export_trace(order)?;
    fs::write(output, &bytes).with_context(|| format!("writing {}", output.display()))?;
    eprintln!("wrote {} ({} bytes): open it in the Perfetto UI or chrome://tracing", output.display(), bytes.len());
    Ok(())
}

pub fn profile(args: ProfileArgs, remote: &RemoteArgs) -> Result<()> {
    let range = range(args.range.from, args.range.to)?;
    if args.frequency == 0 {
        return Err(CoreError::BadFrequency.into());
    }
    let kind = if args.off_cpu { SampleKind::OffCpu } else { SampleKind::OnCpu };
    let query =
        ProfileQuery { range, pid: args.pid, comm: args.comm.clone(), cpu: args.cpu, include_idle: args.idle, kind };
    let host = open(&args.store, remote, Vec::new())?;
    if let (Some(from), Some(to)) = (args.base_from, args.base_to) {
        if args.pprof.is_some() {
            bail!("a comparison has no pprof form: drop --pprof, or --base-from/--base-to");
        }
        let diff = host.profile_diff(query, loupe_core::time::range(Some(from), Some(to))?, 0.0)?;
        return if args.json { print_json(&diff) } else { print_text(&render::profile::diff(&diff, args.top)) };
    }
    let view = host.profile(query.clone(), 0.0)?;
    if let Some(path) = &args.pprof {
        let bytes = host.pprof(query, args.frequency)?;
        fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json { print_json(&view) } else { print_text(&render::profile::summary(&view, args.top)) }
}
