//! The running kernel's release, and the first release each Loupe feature can run on.
//!
//! A feature's minimum is the newest kernel facility its programs use: a helper, a hook, a link
//! type. A test of this module reads every helper call out of the built objects and fails
//! if one is newer than the minimum stated here, so a new helper cannot raise a minimum
//! silently. Below its minimum a feature is off with one line naming what the kernel lacks,
//! before any load is tried (a verifier refusing an unknown helper says only `EINVAL` and
//! "invalid func"). Distributions backport, so at or above the minimum the load decides.
//!
//! Where a newer facility only makes a feature better, it is taken when there and the feature
//! falls back without it: tcx links (6.6) over clsact + cls_bpf (tried, the fallback taken on
//! failure), uprobe session links (6.13) over perf-event uprobes ([`UPROBE_SESSION`]: not tried
//! below it, where the kernel would verify the program as another type).
//!
//! `scripts/kernels` proves it in CI: every feature on 6.1 (Debian 12) and newer, and on 5.10
//! (Debian 11) the agent that turns each off with these words and runs the rest; see
//! docs/kernels.md.

use std::{cmp::Ordering, fmt};

use crate::SamplerError;

/// A kernel release, `major.minor` (what features are keyed on), with the full string `uname`
/// gives (what a reader is told).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRelease {
    pub major: u32,
    pub minor: u32,
    /// `uname -r`, e.g. `6.1.0-57-amd64`.
    pub text: String,
}

impl KernelRelease {
    /// The running kernel's release; `None` if `uname` fails or its release does not start with
    /// `major.minor`.
    pub fn running() -> Option<Self> {
        // SAFETY: `utsname` is plain bytes; uname fills it and NUL-terminates each field.
        let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
        // SAFETY: `uts` is a valid, writable utsname.
        if unsafe { libc::uname(&mut uts) } != 0 {
            return None;
        }
        // SAFETY: the kernel NUL-terminates `release` within its 65 bytes.
        let release = unsafe { std::ffi::CStr::from_ptr(uts.release.as_ptr()) };
        Self::parse(&release.to_string_lossy())
    }

    /// `major.minor` from the front of a release string (`6.12.95+deb12-amd64`, `6.1.0-57-amd64`).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(Self { major, minor, text: text.to_string() })
    }

    /// Whether this release is `since` or newer.
    pub fn at_least(&self, since: (u32, u32)) -> bool {
        (self.major, self.minor).cmp(&since) != Ordering::Less
    }
}

impl fmt::Display for KernelRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A kernel facility a feature uses, and the first release that has it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facility {
    pub name: &'static str,
    pub since: (u32, u32),
}

impl Facility {
    /// `6.1 (bpf_ktime_get_tai_ns)`.
    pub fn needs(&self) -> String {
        format!("{}.{} ({})", self.since.0, self.since.1, self.name)
    }

    /// The running kernel's release where it is older than this facility; `None` where it has
    /// it, or its release cannot be read (what is tried then decides).
    pub fn missing_here(&self) -> Option<KernelRelease> {
        KernelRelease::running().filter(|release| !release.at_least(self.since))
    }
}

/// A Loupe feature, by the name the agent's health and `loupe status` use, and the newest
/// facility it cannot run without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureMinimum {
    /// `runs`, `stacks`, `off_cpu` or `probes`.
    pub feature: &'static str,
    pub needs: Facility,
}

/// Millisampler's tc filter: it reads the TAI clock when runs are aligned across hosts.
pub const RUNS: FeatureMinimum =
    FeatureMinimum { feature: "runs", needs: Facility { name: "bpf_ktime_get_tai_ns", since: (6, 1) } };
/// The stack sampler: its `.eh_frame` walk is a `bpf_loop`.
pub const STACKS: FeatureMinimum =
    FeatureMinimum { feature: "stacks", needs: Facility { name: "bpf_loop", since: (5, 17) } };
/// Off-CPU waits: the same walk as the stack sampler's.
pub const OFF_CPU: FeatureMinimum =
    FeatureMinimum { feature: "off_cpu", needs: Facility { name: "bpf_loop", since: (5, 17) } };
/// Function probes: each probe finds its function by the link's cookie.
pub const PROBES: FeatureMinimum =
    FeatureMinimum { feature: "probes", needs: Facility { name: "bpf_get_attach_cookie", since: (5, 15) } };
/// Uprobe session links, taken over perf-event uprobes where the kernel has them.
pub const UPROBE_SESSION: Facility = Facility { name: "uprobe session links", since: (6, 13) };

impl FeatureMinimum {
    /// `Ok` where the running kernel may have this feature (at or above its minimum, or a
    /// release that cannot be read: the load then decides); [`SamplerError::Unsupported`] below.
    pub fn check(&self) -> Result<(), SamplerError> {
        match self.needs.missing_here() {
            Some(release) => self.check_on(&release),
            None => Ok(()),
        }
    }

    fn check_on(&self, release: &KernelRelease) -> Result<(), SamplerError> {
        if release.at_least(self.needs.since) {
            Ok(())
        } else {
            Err(SamplerError::Unsupported {
                feature: self.feature,
                needs: self.needs.needs(),
                release: release.text.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_read_from_what_distributions_write() {
        let debian = KernelRelease::parse("6.1.0-57-amd64").unwrap();
        assert_eq!((debian.major, debian.minor), (6, 1));
        let backports = KernelRelease::parse("6.12.95+deb12-amd64").unwrap();
        assert_eq!((backports.major, backports.minor), (6, 12));
        let here = KernelRelease::parse("6.18.44-fc-v1300").unwrap();
        assert!(here.at_least((6, 13)) && here.at_least((6, 18)) && !here.at_least((6, 19)));
        assert!(!debian.at_least((6, 6)) && debian.at_least((6, 1)) && debian.at_least((5, 17)));
        assert!(KernelRelease::parse("6").is_none());
        assert!(KernelRelease::parse("linux").is_none());
        assert!(KernelRelease::running().is_some(), "this kernel's release reads");
    }

    /// Every helper Loupe's programs call, with the first release that has it (the kernel's
    /// `include/uapi/linux/bpf.h` numbering). A helper missing here fails the test below: add it
    /// with its first release, and raise a feature's minimum if it is newer.
    const HELPERS: &[(i32, &str, (u32, u32))] = &[
        (1, "bpf_map_lookup_elem", (3, 19)),
        (2, "bpf_map_update_elem", (3, 19)),
        (3, "bpf_map_delete_elem", (3, 19)),
        (5, "bpf_ktime_get_ns", (4, 1)),
        (7, "bpf_get_prandom_u32", (4, 1)),
        (8, "bpf_get_smp_processor_id", (4, 1)),
        (12, "bpf_tail_call", (4, 2)),
        (14, "bpf_get_current_pid_tgid", (4, 2)),
        (16, "bpf_get_current_comm", (4, 2)),
        (26, "bpf_skb_load_bytes", (4, 5)),
        (35, "bpf_get_current_task", (4, 8)),
        (67, "bpf_get_stack", (4, 18)),
        (80, "bpf_get_current_cgroup_id", (4, 18)),
        (96, "bpf_tcp_sock", (5, 1)),
        (112, "bpf_probe_read_user", (5, 5)),
        (113, "bpf_probe_read_kernel", (5, 5)),
        (123, "bpf_get_current_ancestor_cgroup_id", (5, 7)),
        (130, "bpf_ringbuf_output", (5, 8)),
        (131, "bpf_ringbuf_reserve", (5, 8)),
        (132, "bpf_ringbuf_submit", (5, 8)),
        (133, "bpf_ringbuf_discard", (5, 8)),
        (134, "bpf_ringbuf_query", (5, 8)),
        (158, "bpf_get_current_task_btf", (5, 11)),
        (174, "bpf_get_attach_cookie", (5, 15)),
        (175, "bpf_task_pt_regs", (5, 15)),
        (181, "bpf_loop", (5, 17)),
        (208, "bpf_ktime_get_tai_ns", (6, 1)),
    ];

    /// The helpers an object's functions call (`BPF_JMP | BPF_CALL` with source register 0;
    /// 1 is a call of a function of the object, 2 a kfunc).
    fn helpers_called(object: &[u8]) -> std::collections::BTreeSet<i32> {
        let obj = aya_obj::Object::parse(object).expect("a built object parses");
        obj.functions
            .values()
            .flat_map(|f| f.instructions.iter())
            .filter(|insn| insn.code == 0x85 && insn.src_reg() == 0)
            .map(|insn| insn.imm)
            .collect()
    }

    #[test]
    fn no_program_calls_a_helper_newer_than_its_features_minimum() {
        for (object, bytes, feature) in [
            ("stacks", crate::STACKS_OBJECT, STACKS),
            ("stacks", crate::STACKS_OBJECT, OFF_CPU),
            ("traffic", crate::EBPF_OBJECT, RUNS),
            ("probes", crate::PROBES_OBJECT, PROBES),
        ] {
            let called = helpers_called(bytes);
            assert!(called.len() >= 5, "{object}: only {called:?} read: the call instructions were not found");
            let mut newest = (0, 0);
            for id in &called {
                let Some((_, name, since)) = HELPERS.iter().find(|(h, _, _)| h == id) else {
                    panic!("{object} calls helper {id}, not in HELPERS: add it with its first kernel release");
                };
                assert!(
                    *since <= feature.needs.since,
                    "{object} calls {name} (Linux {}.{}), newer than {}'s stated minimum {}: raise it in kernel.rs \
                     and docs/kernels.md",
                    since.0,
                    since.1,
                    feature.feature,
                    feature.needs.needs()
                );
                newest = newest.max(*since);
            }
            // The minimum names the newest helper this object calls, not an older one.
            let named = HELPERS.iter().find(|(_, name, _)| *name == feature.needs.name).map(|(_, _, since)| *since);
            assert_eq!(
                named,
                Some(feature.needs.since),
                "{}: {} is a helper of that release",
                feature.feature,
                feature.needs.name
            );
            assert_eq!(
                newest, feature.needs.since,
                "{object}: the newest helper called sets {}'s minimum",
                feature.feature
            );
        }
    }

    #[test]
    fn below_its_minimum_a_feature_says_what_the_kernel_lacks() {
        let old = KernelRelease::parse("5.15.0-91-generic").unwrap();
        let e = STACKS.check_on(&old).unwrap_err();
        assert_eq!(e.to_string(), "stacks needs Linux 5.17 (bpf_loop); this kernel is 5.15.0-91-generic");
        assert!(PROBES.check_on(&old).is_ok());
        let e = RUNS.check_on(&KernelRelease::parse("6.0.19").unwrap()).unwrap_err();
        assert!(matches!(e, SamplerError::Unsupported { feature: "runs", .. }), "{e}");
        assert!(RUNS.check_on(&KernelRelease::parse("6.1.0-57-amd64").unwrap()).is_ok());
    }
}
