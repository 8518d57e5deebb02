//! The agent's control socket: `<data-dir>/agent.sock`, one JSON request and one JSON answer
//! per connection.
//!
//! Why it exists: a running agent owns both its store (sled admits one process) and its
//! interfaces (one run at a time), so `loupe run`, `loupe runs …` and `loupe import` pointed at
//! the agent's data dir hand their work to the agent instead of failing. The request handling
//! is transport-free ([`Handler`]) so an HTTP API can serve the same calls.

use std::{
    collections::{BTreeSet, HashMap},
    io::{BufRead, BufReader, Write},
    os::unix::net::{UnixListener, UnixStream},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use anyhow::{Context, Result, anyhow, bail};
use loupe_bpf::{RunRequest, StartAt};
use loupe_store::{NewRun, Profile, ProfileQuery, RunId, RunMeta, Store, TimeRange};
use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::{agent::Worker, timearg::now_unix_ns, view::RunView};

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("agent.sock")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Request {
    Run { iface: String, interval_ns: u64, samples: u32, start_unix_ns: Option<u64> },
    List { from_unix_ns: u64, to_unix_ns: u64, interval_ns: Option<u64>, iface: Option<String> },
    Show { id: u64, per_cpu: bool },
    Import { runs: Vec<NewRun> },
    Profile { query: ProfileQuery },
    Pids { range: TimeRange },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    Run(Box<RunView>),
    List(Vec<RunMeta>),
    Import(Vec<Result<u64, String>>),
    Profile(Profile),
    Pids(BTreeSet<u32>),
    Error(String),
}

/// Answers requests against the agent's store and workers.
pub struct Handler {
    pub store: Store,
    pub workers: HashMap<String, Worker>,
}

impl Handler {
    pub fn handle(&self, request: Request) -> Response {
        self.try_handle(request).unwrap_or_else(|e| Response::Error(format!("{e:#}")))
    }

    fn try_handle(&self, request: Request) -> Result<Response> {
        Ok(match request {
            Request::Run { iface, interval_ns, samples, start_unix_ns } => {
                let worker = self.workers.get(&iface).with_context(|| {
                    let mut known: Vec<&String> = self.workers.keys().collect();
                    known.sort();
                    format!("the agent does not sample '{iface}' (it samples {known:?})")
                })?;
                let request = RunRequest {
                    interval: Duration::from_nanos(interval_ns),
                    samples,
                    start: start_unix_ns.map_or(StartAt::Now, StartAt::UnixNs),
                };
                let meta = worker.request(request).recv().map_err(|_| anyhow!("the agent is shutting down"))?;
                let meta = meta.map_err(|e| anyhow!(e))?;
                Response::Run(Box::new(show_run(&self.store, meta.id, false)?))
            }
            Request::List { from_unix_ns, to_unix_ns, interval_ns, iface } => {
                let range = TimeRange::new(from_unix_ns, to_unix_ns)?;
                Response::List(self.store.runs(range, interval_ns, iface.as_deref())?)
            }
            Request::Show { id, per_cpu } => Response::Run(Box::new(show_run(&self.store, RunId(id), per_cpu)?)),
            Request::Profile { query } => Response::Profile(self.store.profile(&query)?),
            Request::Pids { range } => Response::Pids(self.store.pids(range)?),
            Request::Import { runs } => Response::Import(import_runs(&self.store, runs)),
        })
    }
}

/// One stored run as users see it; shared by the agent's handler and the CLI's local path.
pub fn show_run(store: &Store, id: RunId, per_cpu: bool) -> Result<RunView> {
    let run = store.run(id)?.with_context(|| format!("no run with id {id}"))?;
    Ok(RunView::new(&run, per_cpu))
}

/// Stores runs one atomic put each: a bad one is reported, the others land.
pub fn import_runs(store: &Store, runs: Vec<NewRun>) -> Vec<Result<u64, String>> {
    runs.into_iter().map(|r| store.put_run(r, now_unix_ns()).map(|m| m.id.0).map_err(|e| e.to_string())).collect()
}

/// Serves the socket until `shutdown`; removes it afterwards. Accepting blocks (no polling while
/// idle): whoever sets `shutdown` then calls [`wake`] so the loop sees it.
pub fn serve(data_dir: &Path, handler: Arc<Handler>, shutdown: Arc<AtomicBool>) -> Result<thread::JoinHandle<()>> {
    let path = socket_path(data_dir);
    // We hold the store's lock, so a socket file here is a dead agent's.
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).with_context(|| format!("binding {}", path.display()))?;
    Ok(thread::spawn(move || {
        for stream in listener.incoming() {
            if shutdown.load(Ordering::Relaxed) {
                break;
            }
            match stream {
                Ok(stream) => {
                    let handler = Arc::clone(&handler);
                    thread::spawn(move || {
                        if let Err(e) = answer(stream, &handler) {
                            warn!("control socket: {e:#}");
                        }
                    });
                }
                Err(e) => {
                    warn!("control socket accept: {e}");
                    thread::sleep(Duration::from_millis(50));
                }
            }
        }
        let _ = std::fs::remove_file(&path);
    }))
}

/// Unblocks [`serve`]'s accept so it can notice shutdown.
pub fn wake(data_dir: &Path) {
    let _ = UnixStream::connect(socket_path(data_dir));
}

fn answer(stream: UnixStream, handler: &Handler) -> Result<()> {
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line)?;
    if line.trim().is_empty() {
        return Ok(()); // a liveness probe (`AgentClient::find`)
    }
    let response = match serde_json::from_str::<Request>(&line) {
        Ok(request) => handler.handle(request),
        Err(e) => Response::Error(format!("bad request: {e}")),
    };
    let mut out = &stream;
    serde_json::to_writer(&mut out, &response)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The client side, used by the CLI when a running agent holds the store.
pub struct AgentClient {
    path: PathBuf,
}

impl AgentClient {
    /// A client if an agent serves `data_dir`.
    pub fn find(data_dir: &Path) -> Option<Self> {
        let path = socket_path(data_dir);
        UnixStream::connect(&path).ok().map(|_| Self { path })
    }

    pub fn call(&self, request: &Request) -> Result<Response> {
        let mut stream = UnixStream::connect(&self.path)
            .with_context(|| format!("connecting to agent at {}", self.path.display()))?;
        serde_json::to_writer(&mut stream, request)?;
        stream.write_all(b"\n")?;
        let mut line = String::new();
        BufReader::new(&stream).read_line(&mut line)?;
        match serde_json::from_str(&line).context("reading the agent's answer")? {
            Response::Error(e) => bail!("{e}"),
            ok => Ok(ok),
        }
    }
}
