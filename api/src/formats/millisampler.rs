//! Meta's public SyncMillisampler dataset format (facebookresearch/Millisampler-data): one JSON
//! object per host and run, files named `rackId_<R>_hostId_<H>.txt.gz`. Loupe writes it so tools
//! written for that data read Loupe's runs, and reads it so that data can be analysed in Loupe.
//!
//! Field mapping (every series has one entry per sample):
//!
//! | dataset                         | Loupe                     |
//! |---------------------------------|---------------------------|
//! | `ingressBytes`                  | `in_bytes`                |
//! | `egressBytes`                   | `out_bytes`               |
//! | `inRxmitBytes`                  | `in_retx_bytes`           |
//! | `outRxmitBytes`                 | `out_retx_bytes`          |
//! | `inCongestionExperiencedBytes`  | `in_ce_bytes`             |
//! | `connections`                   | `in_conns` (estimate)     |
//! | `sampling_freq`                 | samples per second, `1e9 / interval_ns` |
//! | `server_hostname`, `rack_id`    | host, rack                |
//!
//! The dataset carries no start time; Loupe adds `loupe_start_unix_ns`, `loupe_interval_ns` and
//! `loupe_iface`, which the dataset's tools ignore and which make a round trip lossless. Fields
//! the dataset does not have (packets, egress connections, cross-region bytes) are zero in an
//! imported run, and it has a single pseudo-CPU 0.

use std::{
    fs::File,
    io::{BufReader, Read},
    path::Path,
};

use anyhow::{Context, Result, bail};
use loupe_store::{ConnCounts, Counter, CpuColumns, NewRun, RunSource};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};

use crate::model::RunView;

pub const FORMAT: &str = "millisampler";

#[derive(Debug, Serialize, Deserialize)]
#[allow(non_snake_case)]
pub struct HostRecord {
    pub server_hostname: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_id: Option<Value>,
    pub sampling_freq: Number,
    pub ingressBytes: Vec<u64>,
    pub egressBytes: Vec<u64>,
    pub inRxmitBytes: Vec<u64>,
    pub outRxmitBytes: Vec<u64>,
    pub inCongestionExperiencedBytes: Vec<u64>,
    pub connections: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loupe_start_unix_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loupe_interval_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loupe_iface: Option<String>,
}

/// The dataset's record of one run.
pub fn export(run: &RunView) -> HostRecord {
    let m = &run.metrics;
    let freq = 1e9 / run.interval_ns as f64;
    let sampling_freq = if 1_000_000_000 % run.interval_ns == 0 {
        Number::from(1_000_000_000 / run.interval_ns)
    } else {
        Number::from_f64(freq).unwrap_or_else(|| Number::from(0))
    };
    HostRecord {
        server_hostname: Value::String(run.host.clone()),
        rack_id: run.rack.clone().map(Value::String),
        sampling_freq,
        ingressBytes: m.in_bytes.clone(),
        egressBytes: m.out_bytes.clone(),
        inRxmitBytes: m.in_retx_bytes.clone(),
        outRxmitBytes: m.out_retx_bytes.clone(),
        inCongestionExperiencedBytes: m.in_ce_bytes.clone(),
        connections: m.in_conns.clone(),
        loupe_start_unix_ns: Some(run.start_unix_ns),
        loupe_interval_ns: Some(run.interval_ns),
        loupe_iface: Some(run.iface.clone()),
    }
}

/// Largest file (and largest decompressed content) an import reads: a 2,000-sample host
/// record is ~100 KB; a gzip bomb stops here instead of filling memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads one file (plain or gzip) into a run for the store.
pub fn import(path: &Path, default_start_unix_ns: u64, default_interval_ns: u64) -> Result<NewRun> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut bytes = Vec::new();
    BufReader::new(file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    parse(&bytes, path, default_start_unix_ns, default_interval_ns)
}

/// One file's bytes (plain or gzip) into a run; `path` names it in errors and may carry the
/// rack and host (`rackId_R_hostId_H`).
pub fn parse(bytes: &[u8], path: &Path, default_start_unix_ns: u64, default_interval_ns: u64) -> Result<NewRun> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        bail!("{}: larger than {MAX_FILE_BYTES} bytes; not a Millisampler host record", path.display());
    }
    let mut plain = Vec::new();
    let bytes = if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(bytes)
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut plain)
            .with_context(|| format!("{}: not valid gzip", path.display()))?;
        if plain.len() as u64 > MAX_FILE_BYTES {
            bail!("{}: decompresses to more than {MAX_FILE_BYTES} bytes", path.display());
        }
        &plain[..]
    } else {
        bytes
    };
    let record: HostRecord =
        serde_json::from_slice(bytes).with_context(|| format!("{}: not a Millisampler host record", path.display()))?;
    from_record(record, path, default_start_unix_ns, default_interval_ns)
}

fn from_record(r: HostRecord, path: &Path, default_start: u64, default_interval: u64) -> Result<NewRun> {
    let samples = r.ingressBytes.len();
    if samples == 0 {
        bail!("{}: ingressBytes is empty", path.display());
    }
    for (name, series) in [
        ("egressBytes", &r.egressBytes),
        ("inRxmitBytes", &r.inRxmitBytes),
        ("outRxmitBytes", &r.outRxmitBytes),
        ("inCongestionExperiencedBytes", &r.inCongestionExperiencedBytes),
        ("connections", &r.connections),
    ] {
        if series.len() != samples {
            bail!("{}: {name} has {} samples, ingressBytes has {samples}", path.display(), series.len());
        }
    }
    let interval_ns = match r.loupe_interval_ns {
        Some(ns) => ns,
        None => match r.sampling_freq.as_f64() {
            Some(f) if f > 0.0 && f.is_finite() => (1e9 / f).round() as u64,
            _ if r.sampling_freq.as_f64() == Some(0.0) => default_interval,
            _ => bail!("{}: sampling_freq {} is not a positive rate", path.display(), r.sampling_freq),
        },
    };
    if interval_ns == 0 {
        bail!("{}: sampling_freq {} is too high", path.display(), r.sampling_freq);
    }
    let (name_rack, name_host) = ids_from_file_name(path);
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let host = match &r.server_hostname {
        Value::Null => name_host.unwrap_or_default(),
        v => text(v),
    };
    let rack = r.rack_id.as_ref().map(text).or(name_rack);

    let mut cpu = CpuColumns::zeroed(0, samples as u32);
    *cpu.counter_mut(Counter::InBytes) = r.ingressBytes;
    *cpu.counter_mut(Counter::OutBytes) = r.egressBytes;
    *cpu.counter_mut(Counter::InRetxBytes) = r.inRxmitBytes;
    *cpu.counter_mut(Counter::OutRetxBytes) = r.outRxmitBytes;
    *cpu.counter_mut(Counter::InCeBytes) = r.inCongestionExperiencedBytes;
    Ok(NewRun {
        iface: r.loupe_iface.unwrap_or_else(|| "imported".into()),
        host,
        rack,
        start_unix_ns: r.loupe_start_unix_ns.unwrap_or(default_start),
        interval_ns,
        samples: samples as u32,
        local_prefixes: Vec::new(),
        source: RunSource::Imported { format: FORMAT.into() },
        per_cpu: vec![cpu],
        conn_counts: Some(ConnCounts { in_conns: r.connections, out_conns: vec![0; samples] }),
        clock: None,
    })
}

/// `rackId_1001_hostId_91647.txt.gz` → (Some("1001"), Some("91647")).
fn ids_from_file_name(path: &Path) -> (Option<String>, Option<String>) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = name.split('.').next().unwrap_or("");
    let mut rack = None;
    let mut host = None;
    let parts: Vec<&str> = stem.split('_').collect();
    for pair in parts.windows(2) {
        match pair[0] {
            "rackId" => rack = Some(pair[1].to_string()),
            "hostId" => host = Some(pair[1].to_string()),
            _ => {}
        }
    }
    (rack, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_give_rack_and_host() {
        let (r, h) = ids_from_file_name(Path::new("/d/day1-h1-zip/rackId_1001_hostId_91647.txt.gz"));
        assert_eq!((r.as_deref(), h.as_deref()), (Some("1001"), Some("91647")));
    }

    #[test]
    fn mismatched_series_lengths_are_refused() {
        let json = r#"{"server_hostname":"h","sampling_freq":1000,"ingressBytes":[1,2,3],"egressBytes":[1,2],
            "inRxmitBytes":[0,0,0],"outRxmitBytes":[0,0,0],"inCongestionExperiencedBytes":[0,0,0],"connections":[1,1,1]}"#;
        let r: HostRecord = serde_json::from_str(json).unwrap();
        let err = from_record(r, Path::new("x.json"), 0, 1_000_000).unwrap_err().to_string();
        assert!(err.contains("egressBytes has 2 samples"), "{err}");
    }

    #[test]
    fn dataset_records_without_loupe_fields_import() {
        let json = r#"{"server_hostname":12345,"sampling_freq":1000,"ingressBytes":[100,0,7],"egressBytes":[1,2,3],
            "inRxmitBytes":[0,5,0],"outRxmitBytes":[0,0,9],"inCongestionExperiencedBytes":[0,0,1],"connections":[3,4,5],
            "burst_result":{"ingress":{}}}"#;
        let r: HostRecord = serde_json::from_str(json).unwrap();
        let run = from_record(r, Path::new("rackId_7_hostId_12345.txt"), 42, 1).unwrap();
        assert_eq!(run.interval_ns, 1_000_000);
        assert_eq!(run.start_unix_ns, 42);
        assert_eq!((run.host.as_str(), run.rack.as_deref()), ("12345", Some("7")));
        assert_eq!(run.per_cpu[0].counter(Counter::OutRetxBytes), &[0, 0, 9]);
        assert_eq!(run.conn_counts.unwrap().in_conns, vec![3, 4, 5]);
    }
}
