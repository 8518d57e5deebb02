//! A run as users see it: the JSON of `loupe runs show --json` (and later of the HTTP API), the
//! text summary, and the conversion of the kernel's counters into a stored run.
//!
//! Stored runs keep per-CPU columns and raw connection sketches; this view sums counters over
//! CPUs and turns the union of the CPUs' sketches into a connection estimate per slot.

use std::fmt::Write as _;

use loupe_bpf::{RunCounters, SlotCounters, sketch};
use loupe_store::{Counter, CpuColumns, NewRun, Run, RunSource};
use serde::{Deserialize, Serialize};

use crate::timearg::{format_interval, format_unix_ns};

/// The eleven metrics of a run, each with `samples` entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    pub in_bytes: Vec<u64>,
    pub out_bytes: Vec<u64>,
    pub in_packets: Vec<u64>,
    pub out_packets: Vec<u64>,
    pub in_ce_bytes: Vec<u64>,
    pub in_retx_bytes: Vec<u64>,
    pub out_retx_bytes: Vec<u64>,
    pub in_conns: Vec<u64>,
    pub out_conns: Vec<u64>,
    pub in_cross_region_bytes: Vec<u64>,
    pub out_cross_region_bytes: Vec<u64>,
}

impl Metrics {
    /// `(name, series)` in the documented order.
    pub fn named(&self) -> [(&'static str, &[u64]); 11] {
        [
            ("in_bytes", &self.in_bytes),
            ("out_bytes", &self.out_bytes),
            ("in_packets", &self.in_packets),
            ("out_packets", &self.out_packets),
            ("in_ce_bytes", &self.in_ce_bytes),
            ("in_retx_bytes", &self.in_retx_bytes),
            ("out_retx_bytes", &self.out_retx_bytes),
            ("in_conns", &self.in_conns),
            ("out_conns", &self.out_conns),
            ("in_cross_region_bytes", &self.in_cross_region_bytes),
            ("out_cross_region_bytes", &self.out_cross_region_bytes),
        ]
    }

    fn counter_mut(&mut self, c: Counter) -> &mut Vec<u64> {
        match c {
            Counter::InBytes => &mut self.in_bytes,
            Counter::OutBytes => &mut self.out_bytes,
            Counter::InPackets => &mut self.in_packets,
            Counter::OutPackets => &mut self.out_packets,
            Counter::InCeBytes => &mut self.in_ce_bytes,
            Counter::InRetxBytes => &mut self.in_retx_bytes,
            Counter::OutRetxBytes => &mut self.out_retx_bytes,
            Counter::InCrossRegionBytes => &mut self.in_cross_region_bytes,
            Counter::OutCrossRegionBytes => &mut self.out_cross_region_bytes,
        }
    }

    /// Sums the CPUs' counters; connection estimates come from the union of their sketches.
    fn from_cpus(cpus: &[&CpuColumns], samples: usize) -> Self {
        let mut m = Metrics::default();
        for c in Counter::ALL {
            let col = m.counter_mut(c);
            *col = vec![0; samples];
            for cpu in cpus {
                for (acc, v) in col.iter_mut().zip(cpu.counter(c)) {
                    *acc += v;
                }
            }
        }
        let union = |pick: fn(&CpuColumns) -> &[u128]| -> Vec<u64> {
            (0..samples).map(|i| sketch::estimate(cpus.iter().fold(0, |acc, c| acc | pick(c)[i])) as u64).collect()
        };
        m.in_conns = union(|c| &c.in_conns);
        m.out_conns = union(|c| &c.out_conns);
        m
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuView {
    pub cpu: u32,
    pub metrics: Metrics,
}

/// `loupe runs show --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunView {
    pub id: u64,
    pub iface: String,
    pub host: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rack: Option<String>,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub cpus: Vec<u32>,
    pub local_prefixes: Vec<String>,
    /// `agent`, or `imported:<format>`.
    pub source: String,
    pub metrics: Metrics,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub per_cpu: Option<Vec<CpuView>>,
}

impl RunView {
    pub fn new(run: &Run, per_cpu: bool) -> Self {
        let samples = run.meta.samples as usize;
        let all: Vec<&CpuColumns> = run.per_cpu.iter().collect();
        let mut metrics = Metrics::from_cpus(&all, samples);
        if let Some(counts) = &run.conn_counts {
            // Imported runs carry counts, not sketches.
            metrics.in_conns = counts.in_conns.clone();
            metrics.out_conns = counts.out_conns.clone();
        }
        let per_cpu = per_cpu.then(|| {
            run.per_cpu.iter().map(|c| CpuView { cpu: c.cpu, metrics: Metrics::from_cpus(&[c], samples) }).collect()
        });
        let meta = &run.meta;
        Self {
            id: meta.id.0,
            iface: meta.iface.clone(),
            host: meta.host.clone(),
            rack: meta.rack.clone(),
            start_unix_ns: meta.start_unix_ns,
            interval_ns: meta.interval_ns,
            samples: meta.samples,
            cpus: meta.cpus.clone(),
            local_prefixes: meta.local_prefixes.clone(),
            source: match &meta.source {
                RunSource::Agent => "agent".into(),
                RunSource::Imported { format } => format!("imported:{format}"),
            },
            metrics,
            per_cpu,
        }
    }

    /// A few lines an engineer can read at 3 a.m.: totals, peaks and when they happened.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let interval_s = self.interval_ns as f64 / 1e9;
        let _ = writeln!(
            out,
            "run {} on {} ({}): {} × {} from {}, {} CPUs",
            self.id,
            self.iface,
            self.host,
            self.samples,
            format_interval(self.interval_ns),
            format_unix_ns(self.start_unix_ns),
            self.cpus.len()
        );
        let _ = writeln!(out, "{:<24}{:>16}{:>16}{:>18}{:>12}", "metric", "total", "peak/slot", "peak rate", "peak at");
        for (name, series) in self.metrics.named() {
            let (at, peak) =
                series.iter().copied().enumerate().max_by_key(|&(i, v)| (v, std::cmp::Reverse(i))).unwrap_or((0, 0));
            let is_conns = name.ends_with("conns");
            let total = if is_conns { "-".to_string() } else { series.iter().sum::<u64>().to_string() };
            let rate = if is_conns {
                format!("{peak} flows")
            } else if name.ends_with("bytes") {
                format!("{:.3} Gbit/s", peak as f64 * 8.0 / interval_s / 1e9)
            } else {
                format!("{:.0} pkt/s", peak as f64 / interval_s)
            };
            let when = format!("+{}", format_interval(at as u64 * self.interval_ns));
            let _ = writeln!(out, "{name:<24}{total:>16}{peak:>16}{rate:>18}{when:>12}");
        }
        out
    }
}

/// Turns what the kernel counted into a run for the store.
pub fn new_run(counters: &RunCounters, host: &str) -> NewRun {
    let samples = counters.samples as usize;
    let per_cpu = counters
        .per_cpu
        .iter()
        .map(|cpu| {
            let mut cols = CpuColumns::zeroed(cpu.cpu, counters.samples);
            for (i, s) in cpu.slots.iter().enumerate().take(samples) {
                for c in Counter::ALL {
                    cols.counter_mut(c)[i] = counter(s, c);
                }
                cols.in_conns[i] = sketch::to_u128(s.in_conns);
                cols.out_conns[i] = sketch::to_u128(s.out_conns);
            }
            cols
        })
        .collect();
    NewRun {
        iface: counters.iface.clone(),
        host: host.into(),
        rack: None,
        start_unix_ns: counters.start_unix_ns,
        interval_ns: counters.interval_ns,
        samples: counters.samples,
        local_prefixes: counters.local_prefixes.iter().map(ToString::to_string).collect(),
        source: RunSource::Agent,
        per_cpu,
        conn_counts: None,
    }
}

fn counter(s: &SlotCounters, c: Counter) -> u64 {
    match c {
        Counter::InBytes => s.in_bytes,
        Counter::OutBytes => s.out_bytes,
        Counter::InPackets => s.in_packets,
        Counter::OutPackets => s.out_packets,
        Counter::InCeBytes => s.in_ce_bytes,
        Counter::InRetxBytes => s.in_retx_bytes,
        Counter::OutRetxBytes => s.out_retx_bytes,
        Counter::InCrossRegionBytes => s.in_cross_region_bytes,
        Counter::OutCrossRegionBytes => s.out_cross_region_bytes,
    }
}

/// This host's name, as runs record it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}
