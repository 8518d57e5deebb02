//! The agent's resident memory where glibc and start-up would leave it high: an always-on
//! agent is judged by its RSS on an idle host (goal: at most 32 MB at 10 Hz).
//!
//! Measured with `cargo bench -p loupe-query-host --bench agent_cost` and `/proc/PID/smaps` on
//! this 2-CPU VM, 40 s after start, once the unwind tables' arrays were no longer kept mapped
//! (`bpf/user/src/unwinding.rs`): 54 MB, of it 29 MB anonymous and 22 MB the `loupe`
//! binary's own pages.
//!
//! - **malloc's thresholds, fixed** ([`fix_malloc_thresholds`]). Parsing a large binary's
//!   unwind table (the agent's own, ~25 MiB of code) builds tens of MiB of rows and spans,
//!   freed at once. glibc then raises its mmap threshold to the largest block freed (up to 32
//!   MiB) and its trim threshold to twice that, so the next large blocks come from a thread's
//!   arena and the arena's free top (20.7 MB of one arena holding 74 KB in use, per
//!   `malloc_stats`) is never given back: `malloc_trim` trims only the main arena's top. With
//!   both thresholds fixed at 1 MiB, blocks of a MiB or more are mapped and unmapped on their
//!   own and an arena keeps at most a MiB free at its top: 29 → 11.6 MB anonymous (the same
//!   at 128 KiB; 1 MiB keeps smaller buffers reused, which page faults make cheaper).
//! - **Start-up code paged out** ([`page_out_start_up_code`]). Most of the binary's pages that
//!   are resident ran once: argument parsing, loading the eBPF programs, opening the store,
//!   building the HTTP router. Once the agent has settled, its read-only file mappings are
//!   handed back (`madvise(MADV_PAGEOUT)`: clean pages, read again from the page cache or the
//!   file if they run again): 22 → 12 MB of file pages, and they stayed there.
//!
//! Together: 33.7 MB → 25.7 MB on an idle host.

use std::{thread, time::Duration};

/// With this variable set (to anything) the agent leaves its start-up pages as they are: no
/// read-ahead advice, no page-out. For
/// `benches/agent_memory.rs`, which measures what those save against an agent without them, in
/// the same run.
pub const KEEP_START_UP_PAGES: &str = "LOUPE_KEEP_START_UP_PAGES";

/// Blocks of this size or more are mapped on their own, and an arena's free top beyond it is
/// given back.
pub const MALLOC_THRESHOLD: libc::c_int = 1 << 20;

/// How long after start the start-up code is paged out: the agent has loaded the first
/// processes' unwind tables, stored its first stacks and answered its first drains by then.
pub const SETTLED_AFTER: Duration = Duration::from_secs(10);

/// Fixes glibc's mmap and trim thresholds at [`MALLOC_THRESHOLD`] (see the module docs).
/// Call before the agent allocates much.
pub fn fix_malloc_thresholds() {
    // SAFETY: mallopt only changes the allocator's parameters; it returns 0 when it refuses.
    let ok = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MALLOC_THRESHOLD)
            & libc::mallopt(libc::M_TRIM_THRESHOLD, MALLOC_THRESHOLD)
    };
    if ok == 0 {
        tracing::debug!("malloc's thresholds could not be fixed; the agent's RSS may stay higher after large parses");
    }
}

/// Asks the kernel not to read ahead around the agent's own code (`madvise(MADV_RANDOM)` on
/// its read-only file mappings): a fault then reads the page it needs, not the block device's
/// read-ahead window around it. Call first thing: what the dynamic loader and the first
/// faults read before it stays cached (the page-out, [`page_out_start_up_code`], hands back
/// only what this process maps).
pub fn no_read_ahead_in_own_code() {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
    for (start, end) in read_only_file_mappings(&maps) {
        // SAFETY: a whole mapping of this process as /proc lists it, not writable and backed by a
        // file: the advice changes only how later faults read from the file, never a value.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_RANDOM) };
    }
}

/// Pages out the process's read-only file mappings once, [`SETTLED_AFTER`] from now, on a
/// thread of its own that ends then. Returns at once; an agent that exits sooner takes the
/// sleeping thread with it (nothing is left half done: paging out changes no value).
pub fn page_out_start_up_code() {
    let spawned = thread::Builder::new().name("loupe-settle".into()).spawn(|| {
        thread::sleep(SETTLED_AFTER);
        match page_out_read_only_files() {
            Ok(bytes) => tracing::debug!(bytes, "start-up code paged out"),
            Err(e) => tracing::debug!("start-up code not paged out: {e}"),
        }
    });
    if let Err(e) = spawned {
        tracing::debug!("start-up code not paged out: {e}");
    }
}

/// `madvise(MADV_PAGEOUT)` over every mapping of a file that is not writable: clean pages
/// only, so nothing is lost, and the kernel skips pages other processes map too (a shared
/// library's). Returns the bytes of the mappings advised.
fn page_out_read_only_files() -> std::io::Result<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut advised = 0;
    for (start, end) in read_only_file_mappings(&maps) {
        // SAFETY: a whole mapping of this process as /proc lists it, not writable and backed by
        // a file: paging it out changes no value, the next access reads the page again. A range
        // unmapped since the listing makes madvise fail, which is ignored.
        let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) };
        if rc == 0 {
            advised += end - start;
        }
    }
    Ok(advised)
}

/// The `(start, end)` of each mapping in `maps` (`/proc/PID/maps`) that is a file's and not
/// writable.
fn read_only_file_mappings(maps: &str) -> Vec<(usize, usize)> {
    maps.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next()?;
            let perms = fields.next()?;
            let path = fields.nth(3)?;
            if !path.starts_with('/') || perms.contains('w') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_file_mappings_are_paged_out() {
        let maps = "\
55d0c0000000-55d0c1000000 r--p 00000000 fe:01 123 /usr/bin/loupe
55d0c1000000-55d0c3000000 r-xp 01000000 fe:01 123 /usr/bin/loupe
55d0c3000000-55d0c3100000 rw-p 03000000 fe:01 123 /usr/bin/loupe
55d0c4000000-55d0c5000000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000100000-7f0000200000 r--s 00000000 fe:01 456 /usr/lib/debug/.build-id/93/ac.debug
7f0000200000-7f0000300000 r--s 00000000 00:0e 789 anon_inode:bpf-map
7fff00000000-7fff00001000 r-xp 00000000 00:00 0                          [vdso]
";
        assert_eq!(
            read_only_file_mappings(maps),
            [(0x55d0c0000000, 0x55d0c1000000), (0x55d0c1000000, 0x55d0c3000000), (0x7f0000100000, 0x7f0000200000)]
        );
    }

    #[test]
    fn paging_out_changes_no_value() {
        // A read-only file mapping of our own: its bytes read the same after the page-out.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages");
        let bytes: Vec<u8> = (0..64 * 4096).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a private read-only mapping of a file this test made and does not change.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes.len(),
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(map, libc::MAP_FAILED);
        // SAFETY: the mapping above, `bytes.len()` long, read-only, alive until the munmap.
        let view = unsafe { std::slice::from_raw_parts(map.cast::<u8>(), bytes.len()) };
        assert_eq!(view, &bytes[..]);
        assert!(page_out_read_only_files().unwrap() >= bytes.len(), "our mapping was advised");
        assert_eq!(view, &bytes[..], "the same bytes after the page-out");
        // SAFETY: unmapping the mapping made above; `view` is not used after this.
        unsafe { libc::munmap(map, bytes.len()) };
    }
}
