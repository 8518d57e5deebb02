//! The kernel programs time packets with `bpf_ktime_get_ns` (`CLOCK_MONOTONIC`); people and files
//! speak wall-clock time. [`ClockPair`] reads both clocks back to back so a monotonic instant can
//! be named in Unix nanoseconds (and back), to within the few hundred nanoseconds between reads.

/// Reads a clock in nanoseconds.
fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec; both clocks exist on every Linux.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` now, the clock the kernel programs use.
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC)
}

/// Wall-clock time now, in Unix nanoseconds.
pub fn unix_ns() -> u64 {
    read(libc::CLOCK_REALTIME)
}

/// A simultaneous reading of both clocks.
#[derive(Clone, Copy, Debug)]
pub struct ClockPair {
    pub mono_ns: u64,
    pub unix_ns: u64,
}

impl ClockPair {
    pub fn now() -> Self {
        // Take the monotonic reading between two wall-clock reads and use their midpoint, which
        // halves the error when the thread is interrupted between calls.
        let u1 = unix_ns();
        let m = monotonic_ns();
        let u2 = unix_ns();
        Self { mono_ns: m, unix_ns: u1 + (u2.saturating_sub(u1)) / 2 }
    }

    pub fn mono_to_unix(&self, mono_ns: u64) -> u64 {
        (self.unix_ns as i128 + mono_ns as i128 - self.mono_ns as i128) as u64
    }

    pub fn unix_to_mono(&self, unix_ns: u64) -> u64 {
        (self.mono_ns as i128 + unix_ns as i128 - self.unix_ns as i128).max(0) as u64
    }
}
