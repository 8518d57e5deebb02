//! Whether a refused privileged operation was a missing privilege: told by the error number the
//! kernel returned and by the capabilities this process holds (`capget`), never by an error's
//! words.
//!
//! *Why:* "Permission denied" is `EACCES`, which `BPF_PROG_LOAD` also returns when the verifier
//! refuses a program. Read as a missing privilege, Debian 12's kernel refusing the tc filter
//! told a root user with every capability to "run as root". And `EPERM` itself comes from more
//! than a missing capability: kernel lockdown, a security module, or the locked-memory limit on
//! kernels before 5.11 (which charge BPF maps to it).

use std::io;

use aya::programs::{ProgramError, tc::TcError};

use crate::SamplerError;

/// The capabilities Loupe's kernel work needs, by number (`linux/capability.h`).
const NEEDED: [(u32, &str); 3] = [(39, "CAP_BPF"), (38, "CAP_PERFMON"), (CAP_NET_ADMIN, "CAP_NET_ADMIN")];
const CAP_NET_ADMIN: u32 = 12;
/// `CAP_SYS_ADMIN` stands in for CAP_BPF and CAP_PERFMON (and is how kernels before 5.8 grant them).
const CAP_SYS_ADMIN: u32 = 21;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// This process's effective capabilities, as one 64-bit set; `None` if `capget` failed.
fn effective() -> Option<u64> {
    let mut header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget with version 3 writes two `CapData` (the array's length) and reads the
    // header; both live across the call.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header as *mut CapHeader, data.as_mut_ptr()) };
    (r == 0).then(|| u64::from(data[0].effective) | u64::from(data[1].effective) << 32)
}

/// The needed capabilities this process lacks, by name, in `set` (an effective set).
fn lacking_in(set: u64) -> Vec<&'static str> {
    let has = |cap: u32| set & (1u64 << cap) != 0;
    NEEDED
        .iter()
        // CAP_SYS_ADMIN covers what CAP_BPF and CAP_PERFMON grant; not CAP_NET_ADMIN's, which
        // tc's netlink calls ask for by itself.
        .filter(|(cap, _)| !has(*cap) && (*cap == CAP_NET_ADMIN || !has(CAP_SYS_ADMIN)))
        .map(|(_, name)| *name)
        .collect()
}

/// The needed capabilities this process lacks; all of them if the kernel would not say.
pub(crate) fn lacking() -> Vec<&'static str> {
    effective().map(lacking_in).unwrap_or_else(|| NEEDED.iter().map(|(_, name)| *name).collect())
}

/// The error number's name, for the errors a load or an attach returns.
pub(crate) fn errno_name(errno: i32) -> String {
    match errno {
        libc::EPERM => "EPERM".into(),
        libc::EACCES => "EACCES".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::E2BIG => "E2BIG".into(),
        libc::ENOSPC => "ENOSPC".into(),
        libc::ENOENT => "ENOENT".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        libc::ENOMEM => "ENOMEM".into(),
        libc::EBUSY => "EBUSY".into(),
        other => format!("errno {other}"),
    }
}

/// The error number among `err` and its sources: an `io::Error`'s, or the one aya's netlink
/// error keeps (a tc attach through netlink: aya's error types there are transparent, so the
/// number is not always among the sources).
fn os_error(err: &(dyn std::error::Error + 'static)) -> Option<i32> {
    let mut at = Some(err);
    while let Some(e) = at {
        if let Some(code) = e.downcast_ref::<io::Error>().and_then(io::Error::raw_os_error) {
            return Some(code);
        }
        let tc = match e.downcast_ref::<ProgramError>() {
            Some(ProgramError::TcError(tc)) => Some(tc),
            _ => e.downcast_ref::<TcError>(),
        };
        match tc {
            Some(TcError::NetlinkError(netlink)) => return netlink.raw_os_error(),
            Some(TcError::IoError(io)) => return io.raw_os_error(),
            _ => {}
        }
        at = e.source();
    }
    None
}

/// What a failed privileged operation means: a missing privilege only when the kernel said
/// `EPERM` or `EACCES` and this process lacks a capability it needs; the kernel's denial, named
/// with its error number, when it holds them all; anything else as `make` builds it from the
/// error's words.
pub(crate) fn classify(
    action: &'static str,
    err: &(dyn std::error::Error + 'static),
    make: impl FnOnce(String) -> SamplerError,
) -> SamplerError {
    let detail = loupe_bpf_common::error::chain(err);
    match os_error(err) {
        Some(errno @ (libc::EPERM | libc::EACCES)) => denied(action, errno, detail, lacking()),
        _ => make(detail),
    }
}

fn denied(action: &'static str, errno: i32, detail: String, lacking: Vec<&'static str>) -> SamplerError {
    if lacking.is_empty() {
        SamplerError::Denied { action, errno: errno_name(errno), detail }
    } else {
        SamplerError::Privilege { action, lacking: lacking.join(", ") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(caps: &[u32]) -> u64 {
        caps.iter().fold(0, |s, c| s | 1 << c)
    }

    #[test]
    fn sys_admin_stands_in_for_bpf_and_perfmon_but_not_net_admin() {
        assert_eq!(lacking_in(set(&[39, 38, 12])), Vec::<&str>::new());
        assert_eq!(lacking_in(set(&[21])), vec!["CAP_NET_ADMIN"]);
        assert_eq!(lacking_in(set(&[21, 12])), Vec::<&str>::new());
        assert_eq!(lacking_in(0), vec!["CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN"]);
        assert_eq!(lacking_in(set(&[39, 12])), vec!["CAP_PERFMON"]);
    }

    #[test]
    fn a_denial_with_every_capability_names_the_kernels_error_not_a_privilege() {
        let e = denied("load eBPF programs", libc::EPERM, "Operation not permitted".into(), vec![]);
        assert!(matches!(&e, SamplerError::Denied { errno, .. } if errno == "EPERM"), "{e}");
        assert!(!e.to_string().contains("run as root"), "{e}");
        let e = denied("load eBPF programs", libc::EPERM, "x".into(), vec!["CAP_BPF"]);
        assert!(matches!(&e, SamplerError::Privilege { lacking, .. } if lacking == "CAP_BPF"), "{e}");
    }

    #[test]
    fn only_eperm_and_eacces_are_looked_at_as_privilege() {
        let io = io::Error::from_raw_os_error(libc::EINVAL);
        let e = classify("attach", &io, SamplerError::Load);
        assert!(matches!(e, SamplerError::Load(_)), "{e}");
        let wrapped = ProgramError::TcError(TcError::IoError(io::Error::from_raw_os_error(libc::EACCES)));
        assert_eq!(os_error(&wrapped), Some(libc::EACCES));
    }

    #[test]
    fn this_process_is_judged_by_its_own_capabilities() {
        // Root in CI and on the machines tests run on as root: nothing lacking there.
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            assert!(effective().is_some());
            assert_eq!(lacking(), Vec::<&str>::new(), "root holds every capability Loupe needs");
        } else {
            assert!(!lacking().is_empty(), "a user without capabilities lacks them");
        }
    }
}
