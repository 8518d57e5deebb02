//! Off-CPU sampling's userspace half: attaching the `sched_switch` program, and keeping what
//! it sends both right and bounded. The kernel keeps every wait of at least `exact` (5 ms by
//! default) and a shorter wait `w` 1 in `⌈scale / w⌉`, so that each kept short wait stands
//! for about `scale`; a sample carries the 1 in N it was kept at, and its wait × N summed is an
//! unbiased estimate of the time waited (`OffCpuConfig` in `loupe-bpf-common` has the whole
//! estimator, docs/stacks.md its error). Once a second this reads what the kernel counted —
//! long waits a second, the time of the short ones — and sets `scale` so that the waits sent
//! stay within the bound (`--off-cpu-max-per-second`): the long waits first, exact, the short
//! ones sharing what is left. Only when the long waits alone exceed the bound is every wait
//! also kept 1 in `one_in`.
//!
//! Why by time: kept 1 block in N with N from the whole host's blocking rate (as before), a
//! function with a few long waits beside ~4,000 short blocks a second was counted from a
//! handful of samples weighted N each: 1,404 ms for a 602 ms condition wait in one run, 487
//! ms for 607 in another.
//!
//! Between two adjustments the kernel guards on its own: all CPUs together take at most twice
//! the bound's share of each ~134 ms window. Without the guard, the first second after the start
//! (everything taken until the first count) or of a sudden burst took every block: an agent
//! beside 20,000 blocks a second lost 1,255 CPU samples to a full ring in its first second
//! (`cargo bench -p loupe-query-host --bench agent_cost`). Blocks the guard skips are counted
//! ([`OffCpuStats::skipped`]) and logged: the waits of such a window are under-counted.

use std::time::{Duration, Instant};

use aya::{
    Ebpf,
    maps::{Array, MapData, PerCpuArray, ProgramArray},
    programs::RawTracePoint,
};
use loupe_bpf_common::stacks::{
    MAP_OFF_CPU_BURST, MAP_OFF_CPU_CONFIG, MAP_OFF_CPU_COUNTS, MAP_OFF_CPU_LAST, MAP_OFF_CPU_TAKE, OFF_CPU_TAKE_INDEX,
    OFF_CPU_TRACEPOINT, OFF_CPU_WINDOW_SHIFT, OffCpuBurst, OffCpuConfig, OffCpuCounts, OffCpuLast, PROG_OFF_CPU,
    PROG_OFF_CPU_TAKE,
};

use crate::{SamplerError, map_mut};

/// Waits this long or longer are all kept by default, each standing for itself. Longer than
/// the 1-ms sleeps and lock waits a busy server blocks in thousands of times a second (those are
/// sampled by time), shorter than the waits one goes looking for.
pub const DEFAULT_EXACT: Duration = Duration::from_millis(5);
/// Stacks sent a second at most by default. Each costs ~14 µs of a CPU in the kernel (the walks
/// of both stacks most of it) and ~5–8 µs in the agent (draining, naming, storing), on top of
/// the ~0.2 µs every switch costs in the kernel. 500 leaves room for a few hundred long waits
/// a second, exact, beside the short ones; the whole stays near 1 % of a core on a host that
/// blocks ~20,000 times a second, less where the waits are fewer (measured with `cargo bench -p
/// loupe-testbed --bench off_cpu`, which prints it beside the estimate's error).
pub const DEFAULT_MAX_STACKS_PER_SECOND: u32 = 500;
/// How often the sampling follows the host's waits.
const ADJUST_EVERY: Duration = Duration::from_secs(1);
/// Of the bound, the share the takes that turn out too short to send may use (see [`plan`]).
const FLOOR_SHARE: f64 = 0.5;

/// What off-CPU sampling takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuOptions {
    /// Waits this long or longer are all kept (while they alone fit the bound); shorter ones
    /// are sampled by their length.
    pub exact: Duration,
    /// Stacks sent a second at most (see [`plan`]).
    pub max_stacks_per_second: u32,
}

impl Default for OffCpuOptions {
    fn default() -> Self {
        Self { exact: DEFAULT_EXACT, max_stacks_per_second: DEFAULT_MAX_STACKS_PER_SECOND }
    }
}

impl OffCpuOptions {
    pub fn validate(&self) -> Result<(), SamplerError> {
        if !(1..=100_000).contains(&self.max_stacks_per_second) {
            return Err(SamplerError::OffCpuOutOfBounds(format!(
                "stacks per second {} out of bounds (1 to 100000)",
                self.max_stacks_per_second
            )));
        }
        if self.exact > Duration::from_secs(60) {
            return Err(SamplerError::OffCpuOutOfBounds(format!(
                "exact threshold {:?} out of bounds (at most 60 s)",
                self.exact
            )));
        }
        Ok(())
    }
}

/// How long a sampled thread stayed off the CPU, and the sampling it was taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpu {
    pub waited_ns: u64,
    /// Waits like this one were kept 1 in this many.
    pub one_in: u32,
}

impl OffCpu {
    /// The off-CPU time this sample stands for: its own, times the waits it represents.
    pub fn weight_ns(&self) -> u64 {
        self.waited_ns.saturating_mul(u64::from(self.one_in))
    }
}

/// What off-CPU sampling has seen, and how it samples now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OffCpuStats {
    /// Threads seen blocking since the start (all CPUs, sampled or not).
    pub blocks: u64,
    /// Over the last adjustment: blocks a second, ...
    pub blocks_per_second: f64,
    /// ... waits at least `exact` long a second, ...
    pub long_waits_per_second: f64,
    /// ... and the time of the shorter ones, in seconds waited a second.
    pub short_waits_seconds_per_second: f64,
    /// Every wait is kept 1 in this many besides (1 while the long waits fit the bound).
    pub one_in: u32,
    /// A short wait `w` is kept 1 in `⌈scale / w⌉`.
    pub scale: Duration,
    /// A block is taken at least 1 in this many whatever its thread's last waits predict.
    pub floor: u32,
    /// Blocks picked for their stacks but skipped by the kernel's burst guard since the start
    /// (see the module docs): the waits of those moments are under-counted.
    pub skipped: u64,
    /// Waits whose end the kernel's tracepoint did not report (it skipped the switch that ended
    /// them), ended at the last switch it reported on that CPU: a held one is slightly
    /// under-weighted, not lost (`bpf/ebpf/src/stacks/off_cpu.rs`).
    pub unseen_returns: u64,
}

/// How the kernel samples the next second's waits: `OffCpuConfig`'s `one_in`, `scale_ns` and
/// `floor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpuPlan {
    pub one_in: u32,
    pub scale_ns: u64,
    pub floor: u32,
}

/// The sampling that keeps last second's waits within `max` sent a second, the long ones
/// exact while they alone fit:
/// - `one_in`: 1 while the long waits (≥ `exact_ns`) fit `max`, else the least N that fits them;
/// - `scale`: what is left of `max` (at least a tenth of it) shared by the short waits, each
///   kept standing for `scale` of their time — never below `exact_ns`;
/// - `floor`: at most half of `max` may go to takes of blocks that turn out too short to send
///   (a thread whose last wait was short is taken at least 1 in `floor`: its next wait may be
///   long).
/// A rate that is not a finite, positive number counts as none.
pub fn plan(blocks_per_s: f64, long_per_s: f64, short_ns_per_s: f64, exact_ns: u64, max: u32) -> OffCpuPlan {
    let rate = |r: f64| if r.is_finite() && r > 0.0 { r } else { 0.0 };
    let (blocks, long, short_ns) = (rate(blocks_per_s), rate(long_per_s), rate(short_ns_per_s));
    let max = f64::from(max.max(1));
    let ceil_u32 = |x: f64| x.ceil().clamp(1.0, f64::from(u32::MAX)) as u32;
    let one_in = ceil_u32(long / max);
    let left = (max - long / f64::from(one_in)).max(max / 10.0);
    // A scale past an hour means no short wait is worth a sample: keep the number bounded.
    let scale_ns = (short_ns / (f64::from(one_in) * left)).clamp(exact_ns as f64, 3.6e12) as u64;
    let short_blocks = (blocks - long).max(0.0);
    let floor = ceil_u32(short_blocks / (f64::from(one_in) * max * FLOOR_SHARE));
    OffCpuPlan { one_in, scale_ns: scale_ns.max(exact_ns), floor }
}

/// The sampling, following the host's waits.
pub(crate) struct OffCpuRate {
    options: OffCpuOptions,
    /// Stacks the CPUs may take per window (`OffCpuConfig::burst_limit`).
    burst_limit: u32,
    since: Instant,
    then: OffCpuCounts,
    stats: OffCpuStats,
}

impl OffCpuRate {
    /// Configures and attaches the off-CPU program (until the first adjustment, every block
    /// is taken within the burst guard and short waits are kept at `scale = exact`).
    pub(crate) fn start(ebpf: &mut Ebpf, options: &OffCpuOptions) -> Result<Self, SamplerError> {
        crate::kernel::OFF_CPU.check()?;
        let burst_limit = burst_limit(options.max_stacks_per_second);
        let exact_ns = options.exact.as_nanos() as u64;
        let first = OffCpuPlan { one_in: 1, scale_ns: exact_ns, floor: 1 };
        write_config(ebpf, options, first, burst_limit)?;
        // The taker first (the tracepoint's program tail-calls it), loaded but never attached.
        let take: &mut RawTracePoint = crate::program_mut(ebpf, PROG_OFF_CPU_TAKE)?;
        take.load().map_err(|e| crate::verifier::load_failed(PROG_OFF_CPU_TAKE, e))?;
        let take_fd = take
            .fd()
            .map_err(|e| SamplerError::Load(format!("{PROG_OFF_CPU_TAKE}: {e}")))?
            .try_clone()
            .map_err(|e| SamplerError::io("duplicating a program fd", e))?;
        let mut takers: ProgramArray<&mut MapData> = map_mut(ebpf, MAP_OFF_CPU_TAKE)?;
        takers
            .set(OFF_CPU_TAKE_INDEX, &take_fd, 0)
            .map_err(|e| SamplerError::Load(format!("map {MAP_OFF_CPU_TAKE}: {e}")))?;
        crate::attach_raw_tracepoint(ebpf, PROG_OFF_CPU, OFF_CPU_TRACEPOINT, "attach to sched_switch")?;
        Ok(Self {
            options: options.clone(),
            burst_limit,
            since: Instant::now(),
            then: OffCpuCounts::default(),
            stats: OffCpuStats {
                one_in: first.one_in,
                scale: options.exact,
                floor: first.floor,
                ..OffCpuStats::default()
            },
        })
    }

    /// Once a second: reads what the kernel counted and sets how the next second is sampled.
    pub(crate) fn adjust(&mut self, ebpf: &mut Ebpf) -> Result<(), SamplerError> {
        let elapsed = self.since.elapsed();
        if elapsed < ADJUST_EVERY {
            return Ok(());
        }
        let now = counts(ebpf)?;
        let seconds = elapsed.as_secs_f64();
        let per_second = |now: u64, then: u64| now.saturating_sub(then) as f64 / seconds;
        let blocks = per_second(now.blocks, self.then.blocks);
        let long = per_second(now.long_waits, self.then.long_waits);
        let short_ns = per_second(now.short_wait_ns, self.then.short_wait_ns);
        let exact_ns = self.options.exact.as_nanos() as u64;
        let next = plan(blocks, long, short_ns, exact_ns, self.options.max_stacks_per_second);
        let current = OffCpuPlan {
            one_in: self.stats.one_in,
            scale_ns: self.stats.scale.as_nanos() as u64,
            floor: self.stats.floor,
        };
        if next != current {
            write_config(ebpf, &self.options, next, self.burst_limit)?;
        }
        self.stats = OffCpuStats {
            blocks: now.blocks,
            blocks_per_second: blocks,
            long_waits_per_second: long,
            short_waits_seconds_per_second: short_ns / 1e9,
            one_in: next.one_in,
            scale: Duration::from_nanos(next.scale_ns),
            floor: next.floor,
            skipped: skipped(ebpf)?,
            unseen_returns: unseen_returns(ebpf)?,
        };
        self.then = now;
        self.since = Instant::now();
        Ok(())
    }

    pub(crate) fn stats(&self) -> OffCpuStats {
        self.stats
    }
}

/// Stacks the CPUs may take per burst-guard window: twice `max` a second's share (at least 2).
pub fn burst_limit(max: u32) -> u32 {
    let window_s = (1u64 << OFF_CPU_WINDOW_SHIFT) as f64 / 1e9;
    (2.0 * f64::from(max) * window_s).ceil().clamp(2.0, f64::from(u32::MAX)) as u32
}

fn write_config(
    ebpf: &mut Ebpf,
    options: &OffCpuOptions,
    plan: OffCpuPlan,
    burst_limit: u32,
) -> Result<(), SamplerError> {
    let mut config: Array<&mut MapData, OffCpuConfig> = map_mut(ebpf, MAP_OFF_CPU_CONFIG)?;
    let value = OffCpuConfig {
        exact_ns: options.exact.as_nanos() as u64,
        scale_ns: plan.scale_ns,
        one_in: plan.one_in,
        floor: plan.floor,
        burst_limit,
        _pad: 0,
    };
    config.set(0, value, 0).map_err(|e| SamplerError::Load(format!("map {MAP_OFF_CPU_CONFIG}: {e}")))
}

/// The kernel's counts, summed over the CPUs.
fn counts(ebpf: &mut Ebpf) -> Result<OffCpuCounts, SamplerError> {
    let map: PerCpuArray<&mut MapData, OffCpuCounts> = map_mut(ebpf, MAP_OFF_CPU_COUNTS)?;
    let values = map.get(&0, 0).map_err(|e| SamplerError::Read(format!("map {MAP_OFF_CPU_COUNTS}: {e}")))?;
    Ok(values.iter().fold(OffCpuCounts::default(), |sum, c| OffCpuCounts {
        blocks: sum.blocks + c.blocks,
        long_waits: sum.long_waits + c.long_waits,
        short_wait_ns: sum.short_wait_ns + c.short_wait_ns,
        picked: sum.picked + c.picked,
    }))
}

fn skipped(ebpf: &mut Ebpf) -> Result<u64, SamplerError> {
    let map: Array<&mut MapData, OffCpuBurst> = map_mut(ebpf, MAP_OFF_CPU_BURST)?;
    let burst = map.get(&0, 0).map_err(|e| SamplerError::Read(format!("off-CPU burst guard: {e}")))?;
    Ok(burst.skipped)
}

fn unseen_returns(ebpf: &mut Ebpf) -> Result<u64, SamplerError> {
    let map: PerCpuArray<&mut MapData, OffCpuLast> = map_mut(ebpf, MAP_OFF_CPU_LAST)?;
    let values = map.get(&0, 0).map_err(|e| SamplerError::Read(format!("map {MAP_OFF_CPU_LAST}: {e}")))?;
    Ok(values.iter().map(|last| last.unseen_returns).sum())
}

/// The off-CPU program's run count and total run time (zeros unless `kernel.bpf_stats_enabled`).
pub(crate) fn program_stats(ebpf: &Ebpf) -> Result<(u64, Duration), SamplerError> {
    let program: &RawTracePoint = ebpf
        .program(PROG_OFF_CPU)
        .ok_or_else(|| SamplerError::Load(format!("program {PROG_OFF_CPU} missing")))?
        .try_into()
        .map_err(|e| SamplerError::Load(format!("{PROG_OFF_CPU}: {e}")))?;
    let info = program.info().map_err(|e| SamplerError::Read(format!("{PROG_OFF_CPU}: {e}")))?;
    Ok((info.run_count(), info.run_time()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_burst_guard_allows_twice_the_bound_per_window() {
        // 200 a second: 26.8 a window, twice that.
        assert_eq!(burst_limit(200), 54);
        for max in [1, 200, 1000, 100_000] {
            let per_second = f64::from(burst_limit(max)) * 1e9 / (1u64 << 27) as f64;
            assert!(
                per_second >= 2.0 * f64::from(max) && per_second < 2.0 * f64::from(max) + 15.0,
                "{max}: {per_second}"
            );
        }
        assert_eq!(burst_limit(1), 2, "never below 2");
    }

    const MS: u64 = 1_000_000;

    /// What `plan` promises: sent waits expected a second (long ones 1 in `one_in`, short ones
    /// their time over `one_in × scale`) and picked-but-unsent takes through the floor.
    fn expected_sends(p: OffCpuPlan, long: f64, short_ns: f64) -> f64 {
        long / f64::from(p.one_in) + short_ns / (f64::from(p.one_in) * p.scale_ns as f64)
    }

    #[test]
    fn the_long_waits_stay_exact_while_they_fit_and_the_short_ones_share_the_rest() {
        // The host: ~200 long waits a second beside 4,000 1-ms naps (4 s waited a second).
        let p = plan(4_200.0, 200.0, 4.0e9, 5 * MS, 500);
        assert_eq!(p.one_in, 1, "200 long waits fit 500: every one kept");
        assert_eq!(p.scale_ns, (4.0e9 / 300.0) as u64, "the 300 left share the 4 s of short waits");
        assert!((expected_sends(p, 200.0, 4.0e9) - 500.0).abs() < 1.0);
        assert_eq!(p.floor, 16, "4,000 short blocks over half the bound");
        // A quiet host: every block taken, the short waits at the exact threshold's scale.
        let p = plan(300.0, 50.0, 0.2e9, 5 * MS, 500);
        assert_eq!(p, OffCpuPlan { one_in: 1, scale_ns: 5 * MS, floor: 1 });
        // Long waits alone past the bound: all waits 1 in N, N the least that fits them.
        let p = plan(30_000.0, 2_400.0, 20.0e9, 5 * MS, 500);
        assert_eq!(p.one_in, 5);
        assert!(expected_sends(p, 2_400.0, 20.0e9) <= 500.0 + 50.0, "{p:?}");
        assert!(p.scale_ns >= 5 * MS);
        // Whatever the rates, the sends fit the bound (within its tenth kept for short waits)
        // and the floor's takes fit half of it.
        for blocks in [0.0, 10.0, 1e3, 2e4, 1e6] {
            for long in [0.0, 1.0, 499.0, 501.0, 1e5] {
                for short_ns in [0.0, 1e6, 1e9, 1e12] {
                    let p = plan(blocks + long, long, short_ns, 5 * MS, 500);
                    assert!(p.one_in >= 1 && p.floor >= 1 && p.scale_ns >= 5 * MS, "{p:?}");
                    assert!(expected_sends(p, long, short_ns) <= 550.0 + 1e-6, "{blocks} {long} {short_ns}: {p:?}");
                    assert!(blocks / f64::from(p.floor * p.one_in) <= 250.0 + 1e-6, "{blocks}: {p:?}");
                    assert!(
                        p.one_in == 1 || long / f64::from(p.one_in - 1) > 500.0,
                        "{long}: 1 in {} too many",
                        p.one_in
                    );
                }
            }
        }
        // Nonsense rates do not switch sampling off.
        let p = plan(f64::NAN, f64::INFINITY, -1.0, 5 * MS, 500);
        assert_eq!(p, OffCpuPlan { one_in: 1, scale_ns: 5 * MS, floor: 1 });
    }

    #[test]
    fn a_sample_stands_for_the_blocks_it_represents() {
        assert_eq!(OffCpu { waited_ns: 20_000_000, one_in: 1 }.weight_ns(), 20_000_000);
        assert_eq!(OffCpu { waited_ns: 20_000_000, one_in: 5 }.weight_ns(), 100_000_000);
        assert_eq!(OffCpu { waited_ns: u64::MAX, one_in: 7 }.weight_ns(), u64::MAX);
    }
}
