//! A run as users see it: the JSON of `loupe runs show --json`, `GET /api/v1/runs/{id}`, the
//! control socket and the analyses' run cursor; and one run of a list.
//!
//! Stored runs keep per-CPU columns and raw connection sketches; this view sums counters over
//! CPUs and turns the union of the CPUs' sketches into a connection estimate per slot.

use loupe_bpf_common::sketch;
use loupe_store::{Counter, CpuColumns, Run, RunMeta, RunSource};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The eleven metrics of a run, each with `samples` entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
    /// `(name, series)` in the documented order ([`SeriesSet::NAMES`]).
    pub fn named(&self) -> [(&'static str, &[u64]); 11] {
        let series = [
            &self.in_bytes,
            &self.out_bytes,
            &self.in_packets,
            &self.out_packets,
            &self.in_ce_bytes,
            &self.in_retx_bytes,
            &self.out_retx_bytes,
            &self.in_conns,
            &self.out_conns,
            &self.in_cross_region_bytes,
            &self.out_cross_region_bytes,
        ];
        std::array::from_fn(|i| (SeriesSet::NAMES[i], series[i].as_slice()))
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
    /// Series not in `want` stay empty.
    fn from_cpus(cpus: &[&CpuColumns], samples: usize, want: SeriesSet) -> Self {
        let mut m = Metrics::default();
        for c in Counter::ALL {
            if !want.has(c.name()) {
                continue;
            }
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
        if want.has("in_conns") {
            m.in_conns = union(|c| &c.in_conns);
        }
        if want.has("out_conns") {
            m.out_conns = union(|c| &c.out_conns);
        }
        m
    }
}

/// Which of a run's eleven series to compute: a bit per series, in [`Self::NAMES`] order (which
/// is [`Metrics::named`]'s and the analyses' WIT `series-set` flags'). The API computes them all;
/// an analysis that reads two need not pay for summing the other nine and estimating
/// connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeriesSet(u16);

impl SeriesSet {
    /// The series' names, in bit order.
    pub const NAMES: [&'static str; 11] = [
        "in_bytes",
        "out_bytes",
        "in_packets",
        "out_packets",
        "in_ce_bytes",
        "in_retx_bytes",
        "out_retx_bytes",
        "in_conns",
        "out_conns",
        "in_cross_region_bytes",
        "out_cross_region_bytes",
    ];
    pub const ALL: SeriesSet = SeriesSet((1 << 11) - 1);
    pub const NONE: SeriesSet = SeriesSet(0);

    /// This set with the series named `name` added (unknown names add nothing).
    pub fn with(self, name: &str) -> SeriesSet {
        match Self::NAMES.iter().position(|n| *n == name) {
            Some(i) => SeriesSet(self.0 | 1 << i),
            None => self,
        }
    }

    pub fn has(self, name: &str) -> bool {
        Self::NAMES.iter().position(|n| *n == name).is_some_and(|i| self.0 & 1 << i != 0)
    }

    /// How many series are in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CpuView {
    pub cpu: u32,
    pub metrics: Metrics,
}

/// `loupe runs show --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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
    /// How the run was timed and how far its host's clock may be off (absent for imported
    /// runs and runs stored before Loupe recorded it).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub clock: Option<ClockView>,
}

/// A run's clock: whether its slots were counted from a common instant (a synchronized run)
/// and the host's wall-clock error bounds, as the kernel's clock discipline reported them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClockView {
    /// Slots counted on `CLOCK_TAI` from an instant given in advance: slot k is the same
    /// interval on every host that took part, to within their clocks' errors.
    pub synchronized: bool,
    /// NTP/PTP reported the clock synchronized; when false the errors are not measurements.
    pub synced: bool,
    pub max_error_ns: u64,
    pub est_error_ns: u64,
}

impl From<loupe_store::RunClock> for ClockView {
    fn from(c: loupe_store::RunClock) -> Self {
        ClockView {
            synchronized: c.synchronized,
            synced: c.synced,
            max_error_ns: c.max_error_ns,
            est_error_ns: c.est_error_ns,
        }
    }
}

impl RunView {
    pub fn new(run: &Run, per_cpu: bool) -> Self {
        Self::with_series(run, per_cpu, SeriesSet::ALL)
    }

    /// The view with only the series in `want` (the others empty).
    pub fn with_series(run: &Run, per_cpu: bool, want: SeriesSet) -> Self {
        let samples = run.meta.samples as usize;
        let all: Vec<&CpuColumns> = run.per_cpu.iter().collect();
        let mut metrics = Metrics::from_cpus(&all, samples, want);
        if let Some(counts) = &run.conn_counts {
            // Imported runs carry counts, not sketches.
            if want.has("in_conns") {
                metrics.in_conns = counts.in_conns.clone();
            }
            if want.has("out_conns") {
                metrics.out_conns = counts.out_conns.clone();
            }
        }
        let per_cpu = per_cpu.then(|| {
            let view = |c: &CpuColumns| CpuView { cpu: c.cpu, metrics: Metrics::from_cpus(&[c], samples, want) };
            run.per_cpu.iter().map(view).collect()
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
            clock: meta.clock.map(ClockView::from),
        }
    }
}

/// One run in a list: `loupe runs list --json`, `GET /api/v1/runs`.
#[derive(Serialize, Deserialize, ToSchema, Debug, Clone, PartialEq, Eq)]
pub struct RunListEntry {
    pub id: u64,
    pub iface: String,
    pub host: String,
    pub start_unix_ns: u64,
    pub interval_ns: u64,
    pub samples: u32,
    pub cpus: Vec<u32>,
    pub stored_bytes: u64,
}

impl From<&RunMeta> for RunListEntry {
    fn from(m: &RunMeta) -> Self {
        RunListEntry {
            id: m.id.0,
            iface: m.iface.clone(),
            host: m.host.clone(),
            start_unix_ns: m.start_unix_ns,
            interval_ns: m.interval_ns,
            samples: m.samples,
            cpus: m.cpus.clone(),
            stored_bytes: m.stored_bytes,
        }
    }
}
