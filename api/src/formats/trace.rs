//! A window out to the trace viewers people already use: Chrome's JSON Trace Event format,
//! which the Perfetto UI and `chrome://tracing` both open (`loupe export trace`, `GET
//! /api/v1/window/trace`).
//!
//! What becomes what: each stack sample an instant on its thread (named by its leaf function,
//! the whole stack in `args.stack`, root first, and the leaf's kind in `args.kind` unless it is
//! native code: `python`, `jit`, `kernel`); each probe call a complete slice (`X`) on its
//! thread, calls nesting by time as they did; each wait off the CPU an async slice (`b`/`e`: a wait may begin inside a call and outlast it, which `X` slices of
//! one thread may not); each timeline event an instant on its thread with its arguments by
//! name, and each iteration (a level-0 event with a lag) an async slice too;
//! each run's series a counter track (`C`) of the process `traffic` (pid 0), one value per
//! slot. `ts` is in microseconds after the window's start (`otherData.from_unix_ns`), with
//! nanosecond decimals. A lane the window summarized has no items to export: its name is in
//! `otherData.summarized`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::model::WindowView;

/// The pid of the process the traffic counters belong to.
pub const TRAFFIC_PID: u32 = 0;

/// A trace file (what [`to_json`] writes; its shape in the OpenAPI document).
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Trace {
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<Event>,
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: String,
    /// `source`, `from_unix_ns`, `to_unix_ns` (decimal strings), `summarized` (lanes with no
    /// items to export), `notes`.
    #[serde(rename = "otherData")]
    #[schema(value_type = Object)]
    pub other_data: Value,
}

/// One trace event; fields a phase does not use are left out.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// The phase: `M` metadata, `i` instant, `X` complete slice, `b`/`e` async slice begin and
    /// end, `C` counter.
    pub ph: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cat: String,
    pub pid: u32,
    pub tid: u32,
    /// Microseconds after the window's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    /// Microseconds (`X`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    /// Instants: `t`, scoped to their thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<String>,
    /// Pairs an async slice's begin and end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub args: Option<Value>,
}

impl Event {
    fn new(ph: &str, name: &str, cat: &str, pid: u32, tid: u32, ts_ns: Option<f64>) -> Self {
        let (ph, name, cat) = (ph.into(), name.into(), cat.into());
        Event { ph, name, cat, pid, tid, ts: ts_ns.map(us), dur: None, s: None, id: None, args: None }
    }
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

/// The window as trace JSON.
pub fn to_json(w: &WindowView) -> Vec<u8> {
    let mut ev: Vec<Event> = Vec::new();
    let mut summarized: Vec<String> = Vec::new();
    // Async slices (waits off the CPU, iterations) pair their begin and end by id.
    let mut async_id = 0u64;
    let meta = |name: &str, pid: u32, tid: u32, value: &str| {
        let mut e = Event::new("M", name, "", pid, tid, None);
        e.args = Some(json!({ "name": value }));
        e
    };
    // Processes and the threads seen in each.
    for p in &w.processes {
        ev.push(meta("process_name", p.pid, 0, &p.comm));
    }
    if !w.traffic.is_empty() {
        ev.push(meta("process_name", TRAFFIC_PID, 0, "traffic"));
    }
    let stack_text: Vec<String> = w
        .stacks
        .iter()
        .map(|s| s.iter().rev().map(|&f| w.functions[f as usize].name.as_str()).collect::<Vec<_>>().join(";"))
        .collect();
    let leaf: Vec<&str> =
        w.stacks.iter().map(|s| s.first().map_or("[unknown]", |&f| w.functions[f as usize].name.as_str())).collect();
    // The leaf's kind where it is not native code (`python`, `jit`, `kernel`), for the viewer's
    // arguments panel and its queries.
    let leaf_kind: Vec<Option<Value>> = w
        .stacks
        .iter()
        .map(|s| {
            let kind = s.first().map(|&f| w.functions[f as usize].kind).unwrap_or_default();
            (!kind.is_native()).then(|| serde_json::to_value(kind).unwrap_or_default())
        })
        .collect();
    for lane in &w.cpus {
        let t = &lane.ticks;
        if t.summarized {
            summarized.push(format!("cpu {} samples", lane.cpu));
        }
        for i in 0..t.t_ns.len() {
            let (pid, stack) = (w.processes[t.process[i] as usize].pid, t.stack[i] as usize);
            let mut e = Event::new("i", leaf[stack], "sample", pid, t.tid[i], Some(t.t_ns[i] as f64));
            e.s = Some("t".into());
            let mut args = json!({ "stack": stack_text[stack], "cpu": lane.cpu });
            if let Some(kind) = &leaf_kind[stack] {
                args["kind"] = kind.clone();
            }
            e.args = Some(args);
            ev.push(e);
        }
        let sp = &lane.wait_spans;
        if sp.summarized {
            summarized.push(format!("cpu {} waits", lane.cpu));
        }
        for i in 0..sp.t_ns.len() {
            let (pid, stack) = (w.processes[sp.process[i] as usize].pid, sp.stack[i] as usize);
            let (t, tid) = (sp.t_ns[i] as f64, sp.tid[i]);
            async_id += 1;
            let mut b = Event::new("b", "off-CPU", "off_cpu", pid, tid, Some(t));
            b.id = Some(async_id);
            b.args = Some(json!({ "stack": stack_text[stack], "cpu": lane.cpu }));
            let mut e = Event::new("e", "off-CPU", "off_cpu", pid, tid, Some(t + sp.dur_ns[i] as f64));
            e.id = Some(async_id);
            ev.extend([b, e]);
        }
    }
    for lane in &w.probes {
        if lane.summarized {
            summarized.push(format!("probe calls of thread {}", lane.tid));
        }
        for i in 0..lane.t_ns.len() {
            let f = &w.probe_functions[lane.function[i] as usize];
            let mut e = Event::new("X", &f.name, "probe", lane.pid, lane.tid, Some(lane.t_ns[i] as f64));
            e.dur = Some(us(lane.dur_ns[i] as f64));
            e.args = Some(json!({ "session": f.session, "depth": lane.depth[i], "slow": lane.slow[i] }));
            ev.push(e);
        }
    }
    for lane in &w.programs {
        if lane.summarized {
            summarized.push(format!("timeline of {} ({})", lane.comm, lane.pid));
        }
        if !w.processes.iter().any(|p| p.pid == lane.pid) {
            ev.push(meta("process_name", lane.pid, 0, &lane.comm));
        }
        for i in 0..lane.t_ns.len() {
            let def = &lane.definitions[lane.event[i] as usize];
            let t = lane.t_ns[i];
            let mut args = Map::new();
            for (name, col) in def.arg_names.iter().zip(&lane.args) {
                args.insert(name.clone(), col.get(i).copied().unwrap_or(0).into());
            }
            args.insert("level".into(), def.level.into());
            if let Some(lag) = lane.lag_ns[i] {
                args.insert("lag_ns".into(), lag.into());
            }
            let mut e = Event::new("i", &def.name, "timeline", lane.pid, lane.tid[i], Some(t as f64));
            e.s = Some("t".into());
            e.args = Some(Value::Object(args));
            ev.push(e);
            if let (0, Some(lag)) = (def.level, lane.lag_ns[i]) {
                async_id += 1;
                let mut b = Event::new("b", &def.name, "iteration", lane.pid, lane.tid[i], Some(t as f64 - lag as f64));
                b.id = Some(async_id);
                let mut e = Event::new("e", &def.name, "iteration", lane.pid, lane.tid[i], Some(t as f64));
                e.id = Some(async_id);
                ev.extend([b, e]);
            }
        }
    }
    let names: Vec<Vec<String>> = w
        .traffic
        .iter()
        .map(|l| l.series.iter().map(|s| format!("{} {} (run {})", l.iface, s.name, l.run)).collect())
        .collect();
    for (lane, names) in w.traffic.iter().zip(&names) {
        for (s, name) in lane.series.iter().zip(names) {
            for (i, v) in s.values.iter().enumerate() {
                let t = lane.offset_ns as f64 + (i as u64 * lane.interval_ns) as f64;
                let mut e = Event::new("C", name, "traffic", TRAFFIC_PID, 0, Some(t));
                e.args = Some(json!({ "value": v }));
                ev.push(e);
            }
        }
    }
    let trace = Trace {
        trace_events: ev,
        display_time_unit: "ns".into(),
        other_data: json!({
            "source": "loupe",
            "from_unix_ns": w.from_unix_ns.to_string(),
            "to_unix_ns": w.to_unix_ns.to_string(),
            "summarized": summarized,
            "notes": w.notes,
        }),
    };
    serde_json::to_vec(&trace).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CpuLane, Ticks, WindowFunction, WindowProcess};
    use loupe_store::FrameKind;

    #[test]
    fn a_samples_leaf_kind_travels_with_it_unless_native() {
        let function =
            |name: &str, kind| WindowFunction { name: name.into(), module: String::new(), kernel: false, kind };
        let w = WindowView {
            to_unix_ns: 1_000_000,
            processes: vec![WindowProcess { pid: 7, comm: "app".into() }],
            functions: vec![function("leaf_py", FrameKind::Python), function("main", FrameKind::Native)],
            // A Python leaf under `main`, and `main` alone.
            stacks: vec![vec![0, 1], vec![1]],
            cpus: vec![CpuLane {
                cpu: 0,
                samples: 2,
                ticks: Ticks {
                    t_ns: vec![10, 20],
                    process: vec![0, 0],
                    tid: vec![7, 7],
                    stack: vec![0, 1],
                    ..Default::default()
                },
                ..Default::default()
            }],
            ..Default::default()
        };
        let trace: Trace = serde_json::from_slice(&to_json(&w)).unwrap();
        let samples: Vec<&Event> = trace.trace_events.iter().filter(|e| e.cat == "sample").collect();
        assert_eq!(samples.len(), 2);
        let args = |e: &Event| e.args.clone().unwrap();
        assert_eq!((samples[0].name.as_str(), &args(samples[0])["kind"]), ("leaf_py", &json!("python")));
        assert_eq!(args(samples[0])["stack"], "main;leaf_py");
        assert_eq!(samples[1].name, "main");
        assert!(args(samples[1]).get("kind").is_none(), "native code carries no kind");
    }
}
