//! Kernel tests need root. Where there is none they skip with one clear line — except in CI
//! (`CI` set), where a skipped kernel test would hide a broken filter, so they fail instead.

/// True when the test may run. Prints the reason when it may not.
pub fn require_root(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{test}: needs root (eBPF, tc and network namespaces), and CI must run it as root");
    }
    eprintln!("SKIP {test}: needs root (eBPF, tc and network namespaces)");
    false
}

/// Skips the calling test (returns early) unless running as root.
#[macro_export]
macro_rules! require_root {
    () => {
        if !$crate::privilege::require_root(module_path!()) {
            return;
        }
    };
}
