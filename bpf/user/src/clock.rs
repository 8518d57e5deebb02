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

/// How far this host's wall clock may be from true time, as the kernel's clock discipline
/// (NTP, PTP or chrony through `adjtimex`) reports it. Stored with every run, so an analysis
/// comparing runs of several hosts knows how far to trust their alignment: two hosts' slot k
/// cover the same interval to within the sum of their errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockQuality {
    /// The kernel considers the clock synchronized (`adjtimex` state is not `TIME_ERROR` and
    /// `STA_UNSYNC` is clear). When false, the errors below are the kernel's defaults, not a
    /// measurement: alignment across hosts is then not to be trusted.
    pub synced: bool,
    /// Maximum error bound (`maxerror`), ns.
    pub max_error_ns: u64,
    /// Estimated error (`esterror`), ns.
    pub est_error_ns: u64,
    /// `CLOCK_TAI` − `CLOCK_REALTIME`, whole seconds (0 where no daemon set it).
    pub tai_offset_s: i32,
}

impl ClockQuality {
    /// Reads the clock discipline's state (a read-only `adjtimex`: `modes` is 0).
    pub fn now() -> ClockQuality {
        // SAFETY: timex is plain data; all-zero is a valid value and `modes == 0` asks for a
        // read only, which needs no privilege and changes nothing.
        let mut tx: libc::timex = unsafe { std::mem::zeroed() };
        // SAFETY: a valid, exclusive pointer to a timex for the duration of the call.
        let state = unsafe { libc::adjtimex(&mut tx) };
        let synced = state >= 0 && state != libc::TIME_ERROR && tx.status & libc::STA_UNSYNC == 0;
        ClockQuality {
            synced,
            max_error_ns: (tx.maxerror.max(0) as u64).saturating_mul(1_000),
            est_error_ns: (tx.esterror.max(0) as u64).saturating_mul(1_000),
            tai_offset_s: tx.tai,
        }
    }

    /// The `CLOCK_TAI` instant of a Unix (`CLOCK_REALTIME`) instant on this host.
    pub fn unix_to_tai(&self, unix_ns: u64) -> u64 {
        (unix_ns as i128 + self.tai_offset_s as i128 * 1_000_000_000).max(0) as u64
    }
}

/// `CLOCK_TAI` now: the clock synchronized runs count slots on.
pub fn tai_ns() -> u64 {
    read(libc::CLOCK_TAI)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tai_is_realtime_plus_the_reported_offset() {
        let q = ClockQuality::now();
        let (u, t) = (unix_ns(), tai_ns());
        // The offset is whole seconds; the two reads are microseconds apart.
        let predicted = q.unix_to_tai(u);
        assert!(t.abs_diff(predicted) < 50_000_000, "tai {t} vs realtime {u} + {} s", q.tai_offset_s);
    }
}
