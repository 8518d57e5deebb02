//! Clocks, CPU ids and process facts, for the writer and the reader.
//!
//! *Why the TSC:* on this project's machines `rdtsc` costs 12–20 ns, `rdtscp` twice that and
//! the vDSO `clock_gettime` 30–50 ns (timed in loops on this project's VMs), so a record stamped
//! from the TSC costs about one `rdtsc`. It is only used when the CPU says the counter is
//! constant-rate and keeps ticking in deep idle (`constant_tsc` and `nonstop_tsc` in
//! `/proc/cpuinfo`); then every CPU's counter is the same clock and a reader on the same boot
//! can convert it. Otherwise records carry `CLOCK_MONOTONIC` nanoseconds.
//!
//! *Why rseq for the CPU:* glibc ≥ 2.35 registers a restartable-sequences area per thread in
//! which the kernel keeps the current CPU; reading it is one load (~0.7 ns here) where
//! `sched_getcpu()` is ~3.4 ns and `rdtscp` ~23 ns. Without it we call `sched_getcpu()`.

use std::sync::OnceLock;

/// Reads the time-stamp counter.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: `rdtsc` exists on every x86_64 CPU and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Not x86_64: no TSC; callers only use it when [`tsc_usable`] said yes, which it never does.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn rdtsc() -> u64 {
    monotonic_ns()
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    unsafe { libc::clock_gettime(id, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_REALTIME` in nanoseconds since the Unix epoch.
#[inline]
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// One calibration point: the same instant on the record clock, `CLOCK_MONOTONIC` and
/// `CLOCK_REALTIME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The record clock (TSC ticks or monotonic ns).
    pub raw: u64,
    pub mono_ns: u64,
    pub real_ns: u64,
}

/// Takes a calibration sample: the record clock read before and after the two clock_gettime
/// calls, their midpoint kept; the tightest of three tries (its uncertainty is half the
/// bracket, ~50 ns).
pub fn sample(tsc: bool) -> Sample {
    let mut best: Option<(u64, Sample)> = None;
    for _ in 0..3 {
        let a = if tsc { rdtsc() } else { monotonic_ns() };
        let mono = monotonic_ns();
        let real = realtime_ns();
        let b = if tsc { rdtsc() } else { monotonic_ns() };
        let width = b.wrapping_sub(a);
        let s = Sample { raw: if tsc { a + width / 2 } else { mono }, mono_ns: mono, real_ns: real };
        if best.is_none_or(|(w, _)| width < w) {
            best = Some((width, s));
        }
    }
    best.map(|(_, s)| s).unwrap_or(Sample { raw: 0, mono_ns: 0, real_ns: 0 })
}

/// Whether the TSC is a usable clock: x86_64 with `constant_tsc` and `nonstop_tsc`, unless
/// `LOUPE_TIMELINE_CLOCK=monotonic`. Decided once per process.
pub fn tsc_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        if !cfg!(target_arch = "x86_64") {
            return false;
        }
        if std::env::var("LOUPE_TIMELINE_CLOCK").is_ok_and(|v| v.eq_ignore_ascii_case("monotonic")) {
            return false;
        }
        let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else { return false };
        let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
        let has = |f: &str| flags.split_whitespace().any(|w| w == f);
        has("constant_tsc") && has("nonstop_tsc")
    })
}

/// Where this thread's current CPU can be read with one load: glibc's rseq area, if glibc
/// registered one (`__rseq_size > 0`). Null otherwise.
#[cfg(target_arch = "x86_64")]
pub fn rseq_cpu_ptr() -> *const u32 {
    static OFFSET: OnceLock<Option<isize>> = OnceLock::new();
    let off = *OFFSET.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names only looks symbols up.
        let (off, size) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()) as *const isize,
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()) as *const u32,
            )
        };
        if off.is_null() || size.is_null() {
            return None;
        }
        // SAFETY: glibc defines both as initialized, never-changing constants of these types.
        let (off, size) = unsafe { (*off, *size) };
        // struct rseq { u32 cpu_id_start; u32 cpu_id; ... }: cpu_id must be inside.
        (size >= 8).then_some(off)
    });
    let Some(off) = off else { return std::ptr::null() };
    let tp: usize;
    // SAFETY: on x86_64 glibc, fs:0 holds the thread pointer (the TCB's self pointer).
    unsafe { core::arch::asm!("mov {}, fs:0", out(reg) tp, options(nostack, readonly, preserves_flags)) };
    let p = (tp as isize).wrapping_add(off).wrapping_add(4) as *const u32;
    // The kernel writes -1 (RSEQ_CPU_ID_UNINITIALIZED) until registration; use it only if set.
    // SAFETY: glibc's rseq area lives in this thread's TCB for the thread's whole life.
    let v = unsafe { std::ptr::read_volatile(p) };
    if v as i32 >= 0 { p } else { std::ptr::null() }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn rseq_cpu_ptr() -> *const u32 {
    std::ptr::null()
}

/// The current CPU via the kernel (fallback when there is no rseq area).
pub fn sched_cpu() -> u16 {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 { u16::MAX } else { c as u16 }
}

/// This thread's kernel id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// `/proc/sys/kernel/random/boot_id` as 16 bytes (zeros if unreadable).
pub fn boot_id() -> [u8; 16] {
    static ID: OnceLock<[u8; 16]> = OnceLock::new();
    *ID.get_or_init(|| {
        let mut out = [0u8; 16];
        let Ok(s) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") else { return out };
        let hex: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        if hex.len() != 32 {
            return out;
        }
        for (i, pair) in hex.chunks(2).enumerate() {
            let h = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out[i] = h(pair[0]) << 4 | h(pair[1]);
        }
        out
    })
}

/// Start time of a process in clock ticks after boot (`/proc/<pid>/stat` field 22), with its
/// command name; `None` if the process does not exist (or /proc cannot say).
pub fn proc_start(pid: u32) -> Option<(u64, String)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = s.find('(')?;
    let close = s.rfind(')')?;
    let comm = s.get(open + 1..close)?.to_string();
    // After ") " come fields 3, 4, ...; field 22 is the 20th of them.
    let start = s.get(close + 2..)?.split_whitespace().nth(19)?.parse().ok()?;
    Some((start, comm))
}
