//! What the kernel's verifier makes of each program: a refusal told in the verifier's own words,
//! the statistics every loader asks for, and the budget each program is held under (what each
//! costs is measured by `program_costs`).
//!
//! Every loader asks for the verifier's statistics only (`BPF_LOG_STATS`, [`LOG_LEVEL`]). A
//! refusal's log then holds the kernel's reason and its counts, a few lines. aya's default
//! (level 1, every instruction and state traced) would retrace the whole program into a log that
//! aya grows tenfold and verifies again on each `ENOSPC`: a program refused at the
//! 1,000,000-instruction limit kept the agent busy for minutes before the error came.
//!
//! A refusal is told by the error the load returned, not by its text: `EPERM` is a missing
//! privilege when this process lacks a capability (`privilege`), the kernel's denial when it
//! holds them all; anything else from `BPF_PROG_LOAD` is the verifier's, named with its error
//! number (`EACCES` included, which used to read as "not enough privilege" to a root user whose
//! kernel, Debian 12's 6.1, refused the tc filter).
//!
//! Kernels differ in what they accept and in how much work the same program takes them, so
//! every program is kept far below the limit: `tests/verifier_headroom.rs` loads each the way the
//! agent does, with its largest options, and fails above [`HEADROOM`].

use aya::{VerifierLogLevel, programs::ProgramError};

use crate::SamplerError;

/// The verifier's budget of processed instructions for a privileged program.
pub const VERIFIER_LIMIT: u32 = 1_000_000;
/// What any program may take of [`VERIFIER_LIMIT`]: a quarter, so another kernel build that
/// explores more states still accepts it.
pub const HEADROOM: u32 = VERIFIER_LIMIT / 4;

/// The verifier log every Loupe loader asks for: the reason and the statistics, no trace.
pub(crate) const LOG_LEVEL: VerifierLogLevel = VerifierLogLevel::STATS;

/// How many of a refusal's last log lines are kept: the verifier's reason and its statistics.
const REFUSAL_LINES: usize = 4;

/// Why the kernel would not load `program`: a missing privilege or the kernel's denial
/// (`EPERM`), or the verifier's reason in its last lines.
pub(crate) fn load_failed(program: &str, e: ProgramError) -> SamplerError {
    match e {
        ProgramError::LoadError { io_error, verifier_log } => {
            refused_or_privilege(program, &io_error, &verifier_log.to_string())
        }
        e => crate::privilege::classify("load eBPF programs", &e, SamplerError::Load),
    }
}

/// What a failed `BPF_PROG_LOAD` of `program` means, from its error and the verifier's `log`:
/// `EPERM` is a missing privilege or the kernel's denial (`privilege::classify`), anything else
/// the verifier's refusal, its error number and its last lines.
pub(crate) fn refused_or_privilege(program: &str, error: &std::io::Error, log: &str) -> SamplerError {
    match error.raw_os_error() {
        Some(libc::EPERM) => crate::privilege::classify("load eBPF programs", error, SamplerError::Load),
        errno => SamplerError::Refused {
            program: program.to_string(),
            errno: errno.map_or_else(|| error.to_string(), crate::privilege::errno_name),
            verifier: last_lines(log),
        },
    }
}

/// The last non-empty lines of a verifier log, on one line.
pub(crate) fn last_lines(log: &str) -> String {
    let mut lines: Vec<&str> = log.lines().map(str::trim).filter(|l| !l.is_empty()).rev().take(REFUSAL_LINES).collect();
    if lines.is_empty() {
        return "no verifier log".to_string();
    }
    lines.reverse();
    lines.join(" | ")
}

/// The count in a statistics line of the verifier's log (`processed N insns (limit …) …`), in
/// a whole log or in a refusal's [`last_lines`].
pub(crate) fn processed_insns(log: &str) -> Option<u32> {
    let rest = log.split(['\n', '|']).find_map(|l| l.trim().strip_prefix("processed "))?;
    rest.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_reason_and_the_counts() {
        let log = "0: R1=ctx() R10=fp0\n; some source\n\nBPF program is too large. Processed 1000001 insn\n\
                   verification time 1265465 usec\nstack depth 216+0+32+8\n\
                   processed 1000001 insns (limit 1000000) max_states_per_insn 21 total_states 40000 peak_states 9000 mark_read 12\n";
        let tail = last_lines(log);
        assert!(tail.ends_with("mark_read 12"), "{tail}");
        assert!(tail.contains("BPF program is too large. Processed 1000001 insn"), "{tail}");
        assert!(!tail.contains("R10=fp0"), "only the last {REFUSAL_LINES} lines: {tail}");
        assert_eq!(processed_insns(log), Some(1_000_001));
        assert_eq!(processed_insns(&tail), Some(1_000_001), "read back from the refusal's words");
        assert_eq!(last_lines("\n \n"), "no verifier log");
        assert_eq!(processed_insns("processed many insns"), None);
    }

    #[test]
    fn errno_and_capabilities_tell_a_refusal_from_a_missing_privilege() {
        let refused = |errno| ProgramError::LoadError {
            io_error: std::io::Error::from_raw_os_error(errno),
            verifier_log: aya_obj::VerifierLog::new(
                "R2 invalid mem access 'scalar'\nprocessed 12 insns (limit 1000000)".into(),
            ),
        };
        let e = load_failed("loupe_ingress", refused(libc::EACCES));
        assert!(
            matches!(&e, SamplerError::Refused { program, errno, verifier } if program == "loupe_ingress" && errno == "EACCES" && verifier.contains("invalid mem access")),
            "{e}"
        );
        assert!(!e.to_string().contains("privilege"), "{e}");
        let too_big = load_failed("loupe_ingress", refused(libc::E2BIG));
        assert!(matches!(&too_big, SamplerError::Refused { errno, .. } if errno == "E2BIG"), "{too_big}");
        let eperm = load_failed("loupe_ingress", refused(libc::EPERM));
        if crate::privilege::lacking().is_empty() {
            // Every capability held: EPERM is the kernel's denial, not a privilege to find.
            assert!(matches!(&eperm, SamplerError::Denied { errno, .. } if errno == "EPERM"), "{eperm}");
        } else {
            assert!(matches!(eperm, SamplerError::Privilege { .. }), "{eperm}");
        }
    }
}
