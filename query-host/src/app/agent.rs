//! `loupe agent`: the core with everything that feeds it and every door onto it — a run worker
//! per interface, the stack collector, the control socket, the HTTP API — and a stop that
//! completes within a bounded time whatever happened to the data dir.

use std::{
    path::Path,
    sync::{Arc, atomic::Ordering},
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use loupe_bpf::{SamplerOptions, StackSampler, parse_prefix};
use tracing::{info, warn};

use super::{demo, demo_app, exit_within, open_store, resident, stop_on_signals, wait_for_stop};
use crate::cli::{AgentArgs, FleetJoinArgs};
use loupe_api::{
    model::{FeatureOff, FleetPlace},
    signed::{FleetKey, trust::TrustFile},
};
use loupe_core::{
    ingest::{
        runs::{RunHost, Schedule},
        stacks::StackCollector,
        timeline::TimelineCollector,
    },
    {Analyses, CoreError, Host, ProbeManager, RunOrder, RunScheduler, runs::run_request, tokens::TokenSet},
};
use loupe_doors::{
    control::ControlServer,
    http::{AppState, InFleet, Server},
};
use loupe_fleet::{Connection, FleetAgent, gate::Trust, subjects};

/// How long a stop may take before the process exits anyway.
const STOP_LIMIT: Duration = Duration::from_secs(20);

pub fn main(args: AgentArgs) -> Result<()> {
    // Before the large parses of start-up (the kernel's BTF, unwind tables): see `resident`.
    resident::fix_malloc_thresholds();
    let settle_pages = std::env::var_os(resident::KEEP_START_UP_PAGES).is_none();
    if settle_pages {
        resident::no_read_ahead_in_own_code();
    }
    let shutdown = stop_on_signals()?;
    let mut ifaces = args.ifaces.clone();
    let mut schedule =
        Schedule { intervals: args.intervals.clone(), samples: args.samples, period: args.period, jitter: args.jitter };
    if !(0.0..=1.0).contains(&schedule.jitter) {
        bail!("jitter {} out of bounds (0 to 1)", schedule.jitter);
    }
    for interval in &schedule.intervals {
        run_request(&RunOrder { iface: None, interval: *interval, samples: schedule.samples, start_unix_ns: None })?;
    }
    if ifaces.is_empty() && args.no_stacks && args.no_timeline && !args.demo {
        bail!("nothing to collect: give --iface IF (repeatable) or --demo, or drop --no-stacks or --no-timeline");
    }
    let _demo = if args.demo {
        let demo = demo::Demo::start(Arc::clone(&shutdown))?;
        ifaces.push(demo::HOST_IF.to_string());
        // Show something within seconds, not minutes.
        if args.period == Duration::from_secs(60) {
            schedule.period = Duration::from_secs(5);
        }
        Some(demo)
    } else {
        None
    };
    // The eBPF programs before anything else: loading each parses the kernel's BTF, ~17 MB of
    // heap for a few tens of ms, freed at once. Loaded first, that stays below the RSS the
    // agent reaches anyway; loaded after the store and the rest, it was the agent's peak
    // (VmHWM 31–32 MB against 28 MB running).
    // A program this kernel's verifier refuses, or a feature this kernel is too old for
    // (`loupe_bpf::kernel`), turns that feature off, said at error level and in the health
    // (`off`); the rest runs. Anything else (no privilege, a bad option) stops
    // the agent.
    let mut off = Vec::new();
    let mut turned_off = |feature: &str, reason: String| {
        tracing::error!(feature, "{feature} off, the rest runs: {reason}");
        off.push(FeatureOff { feature: feature.into(), reason });
    };
    let sampler = if args.no_stacks {
        None
    } else {
        match StackSampler::start(&args.stacks.options(&args.store.data_dir)) {
            Ok(sampler) => Some(sampler),
            Err(e @ (loupe_bpf::SamplerError::Refused { .. } | loupe_bpf::SamplerError::Unsupported { .. })) => {
                turned_off("stacks", e.to_string());
                // Off-CPU waits ride on the stack sampler: asked for, they are off with it, said
                // in their own words (on 5.10 the health named only `stacks`).
                if args.stacks.off_cpu {
                    let why = match loupe_bpf::kernel::OFF_CPU.check() {
                        Err(lacks) => lacks.to_string(),
                        Ok(()) => format!("off_cpu needs the stack sampler, which is off: {e}"),
                    };
                    turned_off("off_cpu", why);
                }
                None
            }
            Err(e) => return Err(e.into()),
        }
    };
    if let Some(reason) = sampler.as_ref().and_then(|s| s.off_cpu_refused()) {
        turned_off("off_cpu", reason.to_string());
    }
    // Probes load when a client asks for them; a kernel too old for them is said at start.
    if let Err(e) = loupe_bpf::kernel::PROBES.check() {
        turned_off("probes", e.to_string());
    }
    let local_prefixes = args.local_prefixes.iter().map(|p| parse_prefix(p)).collect::<Result<Vec<_>, _>>()?;
    let options = SamplerOptions { capacity: schedule.samples, local_prefixes };
    let filters = match RunScheduler::attach(&ifaces, &options) {
        Err(CoreError::Sampler(
            e @ (loupe_bpf::SamplerError::Refused { .. } | loupe_bpf::SamplerError::Unsupported { .. }),
        )) => {
            turned_off("runs", e.to_string());
            Vec::new()
        }
        filters => filters?,
    };
    let store = open_store(&args.store)?;
    let place = fleet_place(&args.fleet)?;
    // Outside a fleet (and without --host) runs and analyses keep the kernel's host name.
    let in_fleet = args.fleet.nats.is_some();
    let named = in_fleet || args.fleet.host.is_some();
    let run_host = RunHost {
        name: if named { place.host.clone() } else { loupe_api::clock::hostname() },
        rack: in_fleet.then(|| place.rack.clone()),
    };
    let scheduler = RunScheduler::start(filters, &schedule, &store, &run_host, &shutdown);
    // Whose fleet requests this agent takes, and the key it signs with (in a fleet only).
    let fleet_trust = if in_fleet { Some(fleet_trust_and_key(&args.fleet, &args.store.data_dir)?) } else { None };
    let mut host = Host::new(store.clone())
        .with_features_off(off)
        .describing(!args.http.no_auth, fleet_trust.as_ref().map(|(trust, _)| (place.clone(), trust.kind())))
        .keeping_audit_files(args.store.audit_files as usize)
        .with_runs(scheduler)
        .with_probes(ProbeManager::new(store.clone(), Arc::clone(&shutdown)));
    let http_options = args.http.options()?;
    // Analyses are served over HTTP and, in a fleet, run for fleet-wide invocations.
    if !args.no_http || in_fleet {
        let mut analyses = Analyses::open(&args.store.data_dir, &store, http_options.limits.clone())?;
        if named {
            analyses = analyses.with_host_name(place.host.clone());
        }
        host = host.with_analyses(analyses);
    }
    // Stacks: sampled continuously on every CPU, symbolized and stored in batches; the host
    // waits on how far they are stored before answering for the last seconds.
    let collector = sampler.map(|sampler| StackCollector::new(sampler, args.stacks.naming(), store.clone()));
    if let Some(collector) = &collector {
        host = host.with_stack_collector(collector.stored_through());
    }
    let host = Arc::new(host);
    if args.demo && !args.no_http {
        install_demo_analyses(&host, args.demo_analyses.as_deref());
    }
    let stacks = if let Some(mut collector) = collector {
        let stop = Arc::clone(&shutdown);
        Some(thread::Builder::new().name("loupe-stacks".into()).spawn(move || collector.run(None, &stop))?)
    } else {
        None
    };
    // Application timelines: programs' ring files tailed every 50 ms, stored in batches.
    let timeline_dir = args.timeline_dir.clone().unwrap_or_else(loupe_timeline::timeline_dir);
    let timeline = if args.no_timeline {
        None
    } else {
        let dir = timeline_dir.clone();
        // Closed as the agent stops (after the flag is set): the collector's idle wait ends then.
        let (woken, waker) = std::os::unix::net::UnixStream::pair()?;
        let mut collector = TimelineCollector::new(dir, &args.store.data_dir, store.clone())
            .per_user(args.timeline_per_user)
            .stopped_by(woken);
        let stop = Arc::clone(&shutdown);
        Some((thread::Builder::new().name("loupe-timeline".into()).spawn(move || collector.run(&stop))?, waker))
    };
    // The demo's application: a timeline to show, a function to probe.
    let demo_app = if args.demo {
        Some(demo_app::DemoApp::start(&timeline_dir, Arc::clone(&host), Arc::clone(&shutdown))?)
    } else {
        None
    };
    let control = ControlServer::start(&args.store.data_dir, Arc::clone(&host))?;
    // The fleet: registration and answers on NATS, in the background (NATS may come up later).
    let fleet = match (&args.fleet.nats, fleet_trust) {
        (Some(url), Some((trust, key))) => {
            let conn = Connection {
                url: url.clone(),
                creds: args.fleet.nats_creds.clone(),
                tls: args.fleet.nats_tls.tls(),
                name: format!("loupe-agent-{}", place.host),
            };
            Some(FleetAgent::start(conn, place.clone(), Arc::clone(&host), trust, key)?)
        }
        _ => None,
    };
    let http = if args.no_http {
        None
    } else {
        let mut state = AppState::new(Arc::clone(&host), TokenSet::new(&args.store.data_dir), &http_options);
        state.fleet = fleet.as_ref().map(|f| InFleet {
            place: place.clone(),
            coordinator: f.coordinator(),
            key: f.key(),
            trust: f.trust_kind(),
        });
        Some(Server::start(state, &http_options)?)
    };
    // Loading the eBPF programs parsed the kernel's BTF (twice, ~15 MB of heap each time, all
    // freed by now); glibc keeps freed heap mapped unless asked to give it back.
    // SAFETY: malloc_trim only releases free memory of the allocator's arenas.
    unsafe { libc::malloc_trim(0) };
    info!(ifaces = ?ifaces, data_dir = %args.store.data_dir.display(), "agent sampling");
    if settle_pages {
        resident::page_out_start_up_code();
    }

    wait_for_stop(&shutdown, args.duration.map(|d| Instant::now() + d), || host.audit().write_ended());
    info!("shutting down");
    exit_within(STOP_LIMIT);
    shutdown.store(true, Ordering::Relaxed);
    if let Some(http) = http {
        http.stop()?;
    }
    if let Some(fleet) = fleet {
        fleet.stop();
    }
    control.stop();
    drop(demo_app);
    if let Some(s) = host.scheduler() {
        s.join();
    }
    // Probe sessions detach and are stored as ended by `shutdown`.
    if let Some(p) = host.probe_manager_ref() {
        p.join();
    }
    if let Some(stacks) = stacks {
        match stacks.join() {
            Ok(Ok(done)) => {
                info!(samples = done.samples, waits = done.waits, lost = done.lost, "stack sampling stopped")
            }
            Ok(Err(e)) => tracing::error!("stack sampling failed: {e:#}"),
            Err(_) => tracing::error!("stack sampling thread panicked"),
        }
    }
    if let Some((timeline, waker)) = timeline {
        drop(waker); // the flag is set: wake the collector's idle wait
        match timeline.join() {
            Ok(Ok(done)) => {
                info!(
                    events = done.events,
                    lost = done.lost,
                    programs = done.sources,
                    refused = done.refused,
                    "timeline collection stopped"
                )
            }
            Ok(Err(e)) => tracing::error!("timeline collection failed: {e:#}"),
            Err(_) => tracing::error!("timeline thread panicked"),
        }
    }
    host.audit().flush();
    store.flush()?;
    let stats = store.stats()?;
    info!(runs = stats.runs, stored_bytes = stats.stored_bytes, "store");
    Ok(())
}

/// Whose signed requests the agent takes (`--fleet-trust`, `--fleet-insecure`, or nobody's),
/// and this host's own key (`--fleet-host-key`, or `fleet-host.nk` in the data dir, made on
/// first start).
fn fleet_trust_and_key(args: &FleetJoinArgs, data_dir: &Path) -> Result<(Trust, Arc<FleetKey>)> {
    let trust = match (&args.fleet_trust, args.fleet_insecure) {
        (Some(path), _) => Trust::File(Arc::new(TrustFile::open(path).map_err(anyhow::Error::msg)?)),
        (None, true) => Trust::Insecure,
        (None, false) => {
            warn!(
                "fleet: no --fleet-trust file: this agent joins the fleet and refuses every request                  (docs/fleet.md, \"Who may ask\")"
            );
            Trust::Nobody
        }
    };
    let path = args.fleet_host_key.clone().unwrap_or_else(|| data_dir.join(HOST_KEY_FILE));
    let key = if path.exists() {
        FleetKey::read(&path).map_err(anyhow::Error::msg)?
    } else {
        let key = FleetKey::generate();
        key.write_new(&path).map_err(anyhow::Error::msg)?;
        key
    };
    info!(
        key = %key.public_key(),
        "fleet: this host's key (list it with team * in other hosts' trust files to let its HTTP fleet routes ask)"
    );
    Ok((trust, Arc::new(key)))
}

/// This host's own fleet key, in the data dir unless `--fleet-host-key` names another.
const HOST_KEY_FILE: &str = "fleet-host.nk";

/// This host's place in the fleet: `--host` (or the kernel's host name), `--rack`, `--dc`.
fn fleet_place(args: &FleetJoinArgs) -> Result<FleetPlace> {
    let host = args.host.clone().unwrap_or_else(|| subjects::default_host_name(&loupe_api::clock::hostname()));
    let place = FleetPlace { host, rack: args.rack.clone(), dc: args.dc.clone() };
    for (what, name) in [("--host", &place.host), ("--rack", &place.rack), ("--dc", &place.dc)] {
        subjects::check_name(what, name).map_err(anyhow::Error::msg)?;
    }
    Ok(place)
}

/// The example analyses a demo starts with, as built by `cargo build --target wasm32-wasip2
/// --manifest-path udf-sdk/Cargo.toml` (what `scripts/start` does).
pub const DEMO_ANALYSES: &[&str] =
    &["burst_detector", "incast_detector", "nic_stall_detector", "cross_region_share", "hot_functions", "flame"];

/// The team that owns the demo's analyses.
pub const DEMO_TEAM: &str = "demo";

/// Where built analyses are looked for: `--demo-analyses`, `$CARGO_TARGET_DIR`, the udf-sdk's
/// own target dir, and the target dir this binary was built into.
fn analysis_dirs(given: Option<&Path>) -> Vec<std::path::PathBuf> {
    let sub = "wasm32-wasip2/release";
    let mut dirs: Vec<std::path::PathBuf> = given.map(Path::to_path_buf).into_iter().collect();
    dirs.extend(std::env::var_os("CARGO_TARGET_DIR").map(|d| Path::new(&d).join(sub)));
    dirs.push(Path::new("udf-sdk/target").join(sub));
    if let Ok(exe) = std::env::current_exe()
        && let Some(target) = exe.parent().and_then(Path::parent)
    {
        dirs.push(target.join(sub));
    }
    dirs
}

/// Installs each example analysis found (unless one of that name is there already), so a
/// newcomer's Analyses page lists them ready to invoke.
fn install_demo_analyses(host: &Host, given: Option<&Path>) {
    let Ok(analyses) = host.analyses() else { return };
    let dirs = analysis_dirs(given);
    let demo_team = loupe_api::access::Caller {
        team: DEMO_TEAM.into(),
        token_id: "operator".into(),
        scopes: loupe_api::access::Scopes::DEFAULT,
    };
    let mut installed = 0;
    for name in DEMO_ANALYSES {
        let udf_name = name.replace('_', "-");
        if analyses.get(&udf_name).is_ok() {
            continue;
        }
        let Some(path) = dirs.iter().map(|d| d.join(format!("{name}.wasm"))).find(|p| p.is_file()) else {
            warn!(analysis = %udf_name, looked_in = ?dirs, "example analysis not built (scripts/start builds them)");
            continue;
        };
        let put = std::fs::read(&path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|bytes| Ok(analyses.put(host.store(), &udf_name, &demo_team, &bytes)?));
        match put {
            Ok(_) => installed += 1,
            Err(e) => warn!(analysis = %udf_name, "example analysis not installed: {e:#}"),
        }
    }
    info!(installed, "demo analyses");
}
