//! The CLI's client mode: `loupe --server URL --token T <command>` asks a remote host's API
//! instead of a local store. [`Client`] is a [`HostApi`] like the host itself: each operation
//! goes to its route (`loupe_api::ops`) with the query or body type the route decodes
//! (`loupe_api::wire::http`), and the API's error body comes back as the same [`CoreError`]
//! (kind from the status, the server's code and words), so a command prints the same error and
//! exits the same way whichever way it went.

use std::{collections::BTreeSet, path::PathBuf, time::Duration};

use loupe_api::{
    ops::{HostApi, Http, Op},
    wire::http::{
        ListQuery, PageParams, ProbeShowQuery, ProfileParams, RangeQuery, ShowQuery, StartRun, StartedRun,
        TimelineParams,
    },
};
use loupe_store::{NewRun, ProfileQuery, TimeRange, TimelineQuery};
use serde::{Serialize, de::DeserializeOwned};

use loupe_api::model::{
    ActiveProbeView, ErrorBody, ErrorKind, ProbeList, ProbeView, ProfileView, RunListEntry, RunView, SymbolizeReport,
    TimelineEventsPage, TimelineSummary,
};
use loupe_core::{CoreError, CoreResult, ImportOutcome, ProbeOrder, RunFilter, RunOrder};

/// Largest answer the client reads (a whole-day profile with a big flame graph fits).
const MAX_ANSWER: u64 = 512 << 20;
/// Largest error body the client reads.
const MAX_ERROR: usize = 1 << 20;

pub struct Client {
    base: String,
    token: Option<String>,
    agent: ureq::Agent,
}

impl Client {
    pub fn new(server: &str, token: Option<String>) -> anyhow::Result<Client> {
        let base = server.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            anyhow::bail!("--server {server}: expected a URL such as http://host:7878");
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        Ok(Client { base, token, agent })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn auth<B>(&self, req: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(t) => req.header("Authorization", &format!("Bearer {t}")),
            None => req,
        }
    }

    /// The answer's bytes, or the server's error as the core's.
    fn finish(&self, what: &str, r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> CoreResult<Vec<u8>> {
        let mut resp = r.map_err(|e| CoreError::Transport(format!("{what}: cannot reach {}: {e}", self.base)))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER)
            .read_to_vec()
            .map_err(|e| CoreError::Transport(format!("{what}: reading the answer: {e}")))?;
        if (200..300).contains(&status) {
            return Ok(body);
        }
        // The API's errors are {"error", "code"}: say the server's words, with its kind.
        let error = (body.len() <= MAX_ERROR)
            .then(|| loupe_api::formats::deep_json::from_slice::<ErrorBody>(&body).ok())
            .flatten();
        match (error, ErrorKind::from_http_status(status)) {
            (Some(body), Some(kind)) => Err(CoreError::Remote { kind, body }),
            _ => Err(CoreError::Transport(format!("{what}: HTTP {status} from {}", self.base))),
        }
    }

    fn decode<T: DeserializeOwned>(path: &str, body: &[u8]) -> CoreResult<T> {
        loupe_api::formats::deep_json::from_slice(body)
            .map_err(|e| CoreError::Transport(format!("{path}: unexpected answer: {e}")))
    }

    pub fn get_bytes(&self, path: &str, query: &[(&str, String)]) -> CoreResult<Vec<u8>> {
        self.get_pairs(path, query.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    fn get_pairs(&self, path: &str, query: Vec<(String, String)>) -> CoreResult<Vec<u8>> {
        let mut req = self.auth(self.agent.get(self.url(path)));
        for (k, v) in &query {
            req = req.query(k, v);
        }
        self.finish(path, req.call())
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str, query: &[(&str, String)]) -> CoreResult<T> {
        Self::decode(path, &self.get_bytes(path, query)?)
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> CoreResult<T> {
        let req = self.auth(self.agent.post(self.url(path)));
        Self::decode(path, &self.finish(path, req.send_json(body))?)
    }

    pub fn put_wasm<T: DeserializeOwned>(&self, path: &str, bytes: &[u8]) -> CoreResult<T> {
        let req = self.auth(self.agent.put(self.url(path))).header("Content-Type", "application/wasm");
        Self::decode(path, &self.finish(path, req.send(bytes))?)
    }

    pub fn delete(&self, path: &str) -> CoreResult<()> {
        let req = self.auth(self.agent.delete(self.url(path)));
        self.finish(path, req.call()).map(drop)
    }

    /// An operation's GET: its route with `args` in the path, `query` as the query string (the
    /// same types the route decodes).
    fn ask<T: DeserializeOwned>(&self, op: Op, args: &[(&str, u64)], query: &[&dyn QueryPart]) -> CoreResult<T> {
        Self::decode(op.name(), &self.ask_bytes(op, args, query)?)
    }

    fn ask_bytes(&self, op: Op, args: &[(&str, u64)], query: &[&dyn QueryPart]) -> CoreResult<Vec<u8>> {
        debug_assert!(matches!(op.http(), Http::Get(_)), "{op:?} is not a GET");
        let mut pairs = Vec::new();
        for part in query {
            pairs.extend(part.pairs()?);
        }
        self.get_pairs(&op.path(args)?, pairs)
    }
}

/// A query type as the pairs of a query string.
trait QueryPart {
    fn pairs(&self) -> CoreResult<Vec<(String, String)>>;
}

impl<T: Serialize> QueryPart for T {
    fn pairs(&self) -> CoreResult<Vec<(String, String)>> {
        // Through JSON: the query types are flat structs of strings, numbers and booleans.
        let value = serde_json::to_value(self).map_err(|e| CoreError::Internal(format!("encoding a query: {e}")))?;
        let serde_json::Value::Object(fields) = value else {
            return Err(CoreError::Internal("a query type is not a struct".into()));
        };
        Ok(fields
            .into_iter()
            .filter_map(|(k, v)| {
                let text = match v {
                    serde_json::Value::Null => return None,
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                Some((k, text))
            })
            .collect())
    }
}

impl HostApi for Client {
    fn list_runs(&self, filter: RunFilter) -> CoreResult<Vec<RunListEntry>> {
        self.ask(Op::ListRuns, &[], &[&RangeQuery::of(filter.range), &ListQuery::of(&filter)])
    }

    fn show_run(&self, id: u64, per_cpu: bool) -> CoreResult<RunView> {
        self.ask(Op::ShowRun, &[("id", id)], &[&ShowQuery { per_cpu }])
    }

    /// Starts the run, then reads it back whole (the route answers with its id).
    fn start_run(&self, order: RunOrder) -> CoreResult<RunView> {
        let started: StartedRun = self.post(&Op::StartRun.path(&[])?, &StartRun::of(&order))?;
        self.show_run(started.id, false)
    }

    fn import_runs(&self, _runs: Vec<NewRun>) -> CoreResult<Vec<ImportOutcome>> {
        Err(Op::ImportRuns.refused())
    }

    fn profile(&self, query: ProfileQuery, min_share: f64) -> CoreResult<ProfileView> {
        let params = ProfileParams { min_share: Some(min_share), ..ProfileParams::of(&query) };
        self.ask(Op::Profile, &[], &[&RangeQuery::of(query.range), &params])
    }

    fn pprof(&self, query: ProfileQuery, frequency: u64) -> CoreResult<Vec<u8>> {
        let params = ProfileParams { frequency: Some(frequency), ..ProfileParams::of(&query) };
        self.ask_bytes(Op::Pprof, &[], &[&RangeQuery::of(query.range), &params])
    }

    fn pids(&self, range: TimeRange) -> CoreResult<BTreeSet<u32>> {
        self.ask(Op::Pids, &[], &[&RangeQuery::of(range)])
    }

    fn symbolize(&self, _range: TimeRange, _debug_dirs: Vec<PathBuf>) -> CoreResult<SymbolizeReport> {
        Err(Op::Symbolize.refused())
    }

    fn timeline(&self, query: TimelineQuery) -> CoreResult<TimelineSummary> {
        self.ask(Op::Timeline, &[], &[&RangeQuery::of(query.range), &TimelineParams::of(&query)])
    }

    fn timeline_events(
        &self,
        query: TimelineQuery,
        after: Option<String>,
        limit: Option<usize>,
    ) -> CoreResult<TimelineEventsPage> {
        let (range, params) = (RangeQuery::of(query.range), TimelineParams::of(&query));
        self.ask(Op::TimelineEvents, &[], &[&range, &params, &PageParams { after, limit }])
    }

    fn start_probe(&self, order: ProbeOrder) -> CoreResult<ActiveProbeView> {
        self.post(&Op::StartProbe.path(&[])?, &order)
    }

    fn stop_probe(&self, handle: u64) -> CoreResult<ProbeView> {
        self.post(&Op::StopProbe.path(&[("handle", handle)])?, &serde_json::json!({}))
    }

    fn list_probes(&self, range: TimeRange) -> CoreResult<ProbeList> {
        self.ask(Op::ListProbes, &[], &[&RangeQuery::of(range)])
    }

    fn show_probe(&self, id: u64, calls: bool) -> CoreResult<ProbeView> {
        self.ask(Op::ShowProbe, &[("id", id)], &[&ProbeShowQuery { calls }])
    }
}
