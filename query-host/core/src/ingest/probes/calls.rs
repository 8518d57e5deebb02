//! Rebuilding nested calls from the kernel's per-call records.
//!
//! The return probe sends a call when it returns, with its thread, entry and exit times and its
//! depth (how many probed calls were open around it). Children therefore arrive before their
//! parent, and threads interleave. Per thread, in entry order (a parent enters before its
//! children; at equal times the shallower first), a stack of open calls gives each call its
//! parent: the innermost open call one level up that encloses it. Calls whose parent was not
//! recorded (its record lost to a full ring, or the session started inside it) keep no parent
//! rather than a wrong one.

use loupe_bpf::RawCall;
use loupe_store::ProbeCall;

/// Sorts `raw` into per-thread entry order and names each call's parent (as an index into the
/// returned list). At most `limit` calls are kept (the earliest, whole outermost calls first is
/// not guaranteed: a cut can orphan children, which then keep no parent).
pub fn rebuild(mut raw: Vec<RawCall>, limit: usize) -> (Vec<ProbeCall>, u64) {
    let dropped = raw.len().saturating_sub(limit) as u64;
    raw.sort_by_key(|c| (c.pid, c.tid, c.entry_unix_ns, c.depth, std::cmp::Reverse(c.exit_unix_ns)));
    raw.truncate(limit);
    let mut out: Vec<ProbeCall> = Vec::with_capacity(raw.len());
    // Indices into `out` of the open calls of the current thread, outermost first.
    let mut open: Vec<usize> = Vec::new();
    let mut thread = None;
    for c in raw {
        if thread != Some((c.pid, c.tid)) {
            thread = Some((c.pid, c.tid));
            open.clear();
        }
        while let Some(&top) = open.last() {
            let t = &out[top];
            if t.depth < c.depth && t.entry_unix_ns <= c.entry_unix_ns && c.exit_unix_ns <= t.exit_unix_ns {
                break;
            }
            open.pop();
        }
        let parent = open.last().copied().filter(|&p| out[p].depth + 1 == c.depth).map(|p| p as u32);
        out.push(ProbeCall {
            function: c.function,
            pid: c.pid,
            tid: c.tid,
            cpu: c.cpu,
            entry_unix_ns: c.entry_unix_ns,
            exit_unix_ns: c.exit_unix_ns,
            depth: c.depth,
            parent,
        });
        open.push(out.len() - 1);
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(function: u32, tid: u32, entry: u64, exit: u64, depth: u32) -> RawCall {
        RawCall { function, pid: 1, tid, cpu: 0, entry_unix_ns: entry, exit_unix_ns: exit, depth }
    }

    #[test]
    fn children_find_their_parents_across_interleaved_threads() {
        // Thread 7: handle(0..100){ parse(10..20), lookup(30..40){ inner(32..38) }, forward(50..90) }
        // Thread 8: handle(5..60){ parse(6..9) } — arriving in return order, interleaved.
        let raw = vec![
            call(1, 7, 10, 20, 1),
            call(1, 8, 6, 9, 1),
            call(4, 7, 32, 38, 2),
            call(2, 7, 30, 40, 1),
            call(0, 8, 5, 60, 0),
            call(3, 7, 50, 90, 1),
            call(0, 7, 0, 100, 0),
        ];
        let (calls, dropped) = rebuild(raw, 100);
        assert_eq!(dropped, 0);
        let find = |f: u32, tid: u32| calls.iter().position(|c| c.function == f && c.tid == tid).unwrap() as u32;
        let handle7 = find(0, 7);
        assert_eq!(calls[find(1, 7) as usize].parent, Some(handle7));
        assert_eq!(calls[find(2, 7) as usize].parent, Some(handle7));
        assert_eq!(calls[find(3, 7) as usize].parent, Some(handle7));
        assert_eq!(calls[find(4, 7) as usize].parent, Some(find(2, 7)));
        assert_eq!(calls[find(1, 8) as usize].parent, Some(find(0, 8)));
        assert_eq!(calls[handle7 as usize].parent, None);
        assert!(calls.iter().all(|c| c.parent.is_none_or(|p| (p as usize) < calls.len())));
    }

    #[test]
    fn a_lost_parent_leaves_orphans_not_wrong_parents() {
        // handle's own record was lost: its children must not adopt the previous handle.
        let raw = vec![call(0, 7, 0, 10, 0), call(1, 7, 1, 2, 1), call(1, 7, 21, 22, 1), call(2, 7, 23, 24, 1)];
        let (calls, _) = rebuild(raw, 100);
        assert_eq!(calls[1].parent, Some(0));
        assert_eq!(calls[2].parent, None);
        assert_eq!(calls[3].parent, None);
    }

    #[test]
    fn recursion_nests() {
        let raw = vec![call(0, 7, 2, 8, 1), call(0, 7, 0, 10, 0), call(0, 7, 3, 4, 2)];
        let (calls, _) = rebuild(raw, 100);
        assert_eq!(calls.iter().map(|c| c.parent).collect::<Vec<_>>(), vec![None, Some(0), Some(1)]);
    }

    #[test]
    fn the_limit_is_kept() {
        let raw = (0..10).map(|i| call(0, 7, i * 10, i * 10 + 5, 0)).collect();
        let (calls, dropped) = rebuild(raw, 4);
        assert_eq!((calls.len(), dropped), (4, 6));
    }
}
