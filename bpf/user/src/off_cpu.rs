//! Off-CPU sampling's userspace half: attaching the `sched_switch` program, and keeping its
//! cost bounded — the kernel counts the threads it sees block, and every second at most this
//! sets how many of them have their stacks taken (1 in N, at random), so a host switching
//! 200,000 times a second costs what one switching 2,000 times does. Each sample carries the N
//! it was taken at: it stands for N blocks, which is what makes the totals right at any rate.
//!
//! Between two adjustments the kernel guards on its own: all CPUs together take at most twice
//! the bound's share of each ~134 ms window. Without the guard, the first second after the start (N is
//! 1 until the first count) or of a sudden burst took every block: an agent beside 20,000
//! blocks a second lost 1,255 CPU samples to a full ring in its first second
//! (`cargo bench -p loupe-query-host --bench agent_cost`). Blocks the guard skips are counted
//! ([`OffCpuStats::skipped`]) and logged: the waits of such a window are under-counted.

use std::time::{Duration, Instant};

use aya::{
    Ebpf,
    maps::{Array, MapData, PerCpuArray, ProgramArray},
    programs::RawTracePoint,
};
use loupe_bpf_common::stacks::{
    MAP_OFF_CPU_BLOCKS, MAP_OFF_CPU_BURST, MAP_OFF_CPU_CONFIG, MAP_OFF_CPU_LAST, MAP_OFF_CPU_TAKE, OFF_CPU_TAKE_INDEX,
    OFF_CPU_TRACEPOINT, OFF_CPU_WINDOW_SHIFT, OffCpuBurst, OffCpuConfig, OffCpuLast, PROG_OFF_CPU, PROG_OFF_CPU_TAKE,
};

use crate::{SamplerError, map_mut};

/// Shortest block sent by default: shorter ones are the scheduler's daily noise.
pub const DEFAULT_THRESHOLD: Duration = Duration::from_millis(1);
/// Stacks taken a second at most by default. Each costs ~14 µs of a CPU in the kernel (the walks
/// of both stacks most of it) and ~8.5 µs in the agent (draining, naming, storing), on top of
/// the ~0.15 µs every switch costs in the kernel — 0.35 % of a core at 20,000 switches a second.
/// At 20,000 blocks a second the whole came to 1.3–1.5 % of a core with 1,000 stacks a second,
/// ~1.0 % (kernel) + 0.25 % (agent) with 300; the default keeps it under 1 %. 200 waits a second
/// is 12,000 a minute: enough for a profile's shares to settle within a minute; raise it
/// (`--off-cpu-max-per-second`) for a short, close look. Measured with `cargo bench -p
/// loupe-testbed --bench off_cpu` (the kernel's part) and `-p loupe-query-host --bench
/// agent_cost` (both).
pub const DEFAULT_MAX_STACKS_PER_SECOND: u32 = 200;
/// How often the sampling ratio follows the blocking rate.
const ADJUST_EVERY: Duration = Duration::from_secs(1);

/// What off-CPU sampling takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuOptions {
    /// Blocks shorter than this are not kept.
    pub threshold: Duration,
    /// Stacks taken a second at most; beyond it, 1 block in N is taken (N grows with the rate).
    pub max_stacks_per_second: u32,
}

impl Default for OffCpuOptions {
    fn default() -> Self {
        Self { threshold: DEFAULT_THRESHOLD, max_stacks_per_second: DEFAULT_MAX_STACKS_PER_SECOND }
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
        if self.threshold > Duration::from_secs(60) {
            return Err(SamplerError::OffCpuOutOfBounds(format!(
                "threshold {:?} out of bounds (at most 60 s)",
                self.threshold
            )));
        }
        Ok(())
    }
}

/// How long a sampled thread stayed off the CPU, and the sampling it was taken at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffCpu {
    pub waited_ns: u64,
    /// Blocks were taken 1 in this many when this one was.
    pub one_in: u32,
}

impl OffCpu {
    /// The off-CPU time this sample stands for: its own, times the blocks it represents.
    pub fn weight_ns(&self) -> u64 {
        self.waited_ns.saturating_mul(u64::from(self.one_in))
    }
}

/// What off-CPU sampling has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OffCpuStats {
    /// Threads seen blocking since the start (all CPUs, sampled or not).
    pub blocks: u64,
    /// Blocks a second over the last adjustment.
    pub blocks_per_second: f64,
    /// 1 block in this many has its stacks taken now.
    pub one_in: u32,
    /// Blocks picked for their stacks but skipped by the kernel's burst guard since the start
    /// (see the module docs): the waits of those moments are under-counted.
    pub skipped: u64,
    /// Held waits whose end the kernel's tracepoint did not report (it skipped the switch that
    /// ended them), sent weighted up to the last switch it reported on that CPU: slightly
    /// under-weighted, not lost (`bpf/ebpf/src/stacks/off_cpu.rs`).
    pub unseen_returns: u64,
}

/// The sampling ratio, following the rate at which threads block.
pub(crate) struct OffCpuRate {
    options: OffCpuOptions,
    /// Stacks the CPUs may take per window (`OffCpuConfig::burst_limit`).
    burst_limit: u32,
    since: Instant,
    blocks_then: u64,
    stats: OffCpuStats,
}

impl OffCpuRate {
    /// Configures and attaches the off-CPU program (every block taken until the first
    /// adjustment, within the burst guard).
    pub(crate) fn start(ebpf: &mut Ebpf, options: &OffCpuOptions) -> Result<Self, SamplerError> {
        crate::kernel::OFF_CPU.check()?;
        let burst_limit = burst_limit(options.max_stacks_per_second);
        write_config(ebpf, options, 1, burst_limit)?;
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
            blocks_then: 0,
            stats: OffCpuStats { one_in: 1, ..OffCpuStats::default() },
        })
    }

    /// Once a second: reads how many threads blocked and sets 1 in how many to take next.
    pub(crate) fn adjust(&mut self, ebpf: &mut Ebpf) -> Result<(), SamplerError> {
        let elapsed = self.since.elapsed();
        if elapsed < ADJUST_EVERY {
            return Ok(());
        }
        let blocks = blocks_seen(ebpf)?;
        let rate = blocks.saturating_sub(self.blocks_then) as f64 / elapsed.as_secs_f64();
        let one_in = one_in_for(rate, self.options.max_stacks_per_second);
        if one_in != self.stats.one_in {
            write_config(ebpf, &self.options, one_in, self.burst_limit)?;
        }
        self.stats = OffCpuStats {
            blocks,
            blocks_per_second: rate,
            one_in,
            skipped: skipped(ebpf)?,
            unseen_returns: unseen_returns(ebpf)?,
        };
        self.blocks_then = blocks;
        self.since = Instant::now();
        Ok(())
    }

    pub(crate) fn stats(&self) -> OffCpuStats {
        self.stats
    }
}

/// 1 in how many blocks to take so that `rate` blocks a second give at most `max` stacks.
pub fn one_in_for(rate: f64, max: u32) -> u32 {
    let n = (rate / f64::from(max.max(1))).ceil();
    if n.is_finite() && n >= 1.0 { n.min(f64::from(u32::MAX)) as u32 } else { 1 }
}

/// Stacks the CPUs may take per burst-guard window: twice `max` a second's share (at least 2).
pub fn burst_limit(max: u32) -> u32 {
    let window_s = (1u64 << OFF_CPU_WINDOW_SHIFT) as f64 / 1e9;
    (2.0 * f64::from(max) * window_s).ceil().clamp(2.0, f64::from(u32::MAX)) as u32
}

fn write_config(ebpf: &mut Ebpf, options: &OffCpuOptions, one_in: u32, burst_limit: u32) -> Result<(), SamplerError> {
    let mut config: Array<&mut MapData, OffCpuConfig> = map_mut(ebpf, MAP_OFF_CPU_CONFIG)?;
    let value = OffCpuConfig { threshold_ns: options.threshold.as_nanos() as u64, one_in, burst_limit };
    config.set(0, value, 0).map_err(|e| SamplerError::Load(format!("map {MAP_OFF_CPU_CONFIG}: {e}")))
}

fn blocks_seen(ebpf: &mut Ebpf) -> Result<u64, SamplerError> {
    let map: PerCpuArray<&mut MapData, u64> = map_mut(ebpf, MAP_OFF_CPU_BLOCKS)?;
    let values = map.get(&0, 0).map_err(|e| SamplerError::Read(format!("off-CPU block counter: {e}")))?;
    Ok(values.iter().sum())
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

    #[test]
    fn the_ratio_keeps_stacks_under_the_cap_and_takes_all_below_it() {
        assert_eq!(one_in_for(0.0, 1000), 1);
        assert_eq!(one_in_for(999.0, 1000), 1, "below the cap every block is taken");
        assert_eq!(one_in_for(1000.5, 1000), 2);
        assert_eq!(one_in_for(20_000.0, 1000), 20);
        assert_eq!(one_in_for(f64::NAN, 1000), 1);
        assert_eq!(one_in_for(f64::INFINITY, 1000), 1, "a nonsense rate does not switch sampling off");
        for rate in [1.0, 10.0, 999.0, 1001.0, 12_345.0, 250_000.0] {
            let n = one_in_for(rate, 1000);
            assert!(rate / f64::from(n) <= 1000.0, "{rate}/s at 1 in {n}");
            assert!(n == 1 || rate / f64::from(n - 1) > 1000.0, "{rate}/s: 1 in {n} samples less than it may");
        }
    }

    #[test]
    fn a_sample_stands_for_the_blocks_it_represents() {
        assert_eq!(OffCpu { waited_ns: 20_000_000, one_in: 1 }.weight_ns(), 20_000_000);
        assert_eq!(OffCpu { waited_ns: 20_000_000, one_in: 5 }.weight_ns(), 100_000_000);
        assert_eq!(OffCpu { waited_ns: u64::MAX, one_in: 7 }.weight_ns(), u64::MAX);
    }
}
