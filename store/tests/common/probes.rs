//! Synthetic probe sessions for the probe tests and the benchmark.
//!
//! A packet loop (`pktloop`, one process, a few threads each pinned to a CPU, migrating
//! rarely) is probed on `handle` and what it calls: each iteration waits for a packet
//! (exponential gaps, 20 µs on average), then `handle` calls `parse` (150–600 ns, now and
//! then 3 µs), and unless the packet is dropped (5 %) `lookup` (80–400 ns, 5 % misses of
//! 2–6 µs) and `forward` (0.3–1.5 µs), which calls `retransmit` 1 time in 100 (depth 2).
//! Between two probed calls of a thread pass 20–120 ns. Calls come sorted by thread, then
//! entry time, each naming its parent, as `loupe probe` hands them over; the functions' call
//! counts, sums, maxima and histograms are computed from the calls (every call sampled).

#![allow(dead_code)]

use loupe_store::{ProbeCall, ProbeFunction, ProbeSession};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const PID: u32 = 4242;
pub const FUNCTIONS: [&str; 5] = ["handle", "parse", "lookup", "forward", "retransmit"];

/// A log-linear bucket (16 per power of two, exact below 16): always < `MAX_BUCKETS`.
pub fn bucket_of(ns: u64) -> u32 {
    if ns < 16 {
        return ns as u32;
    }
    let e = 63 - ns.leading_zeros(); // ≥ 4
    (e - 3) * 16 + ((ns >> (e - 4)) & 15) as u32
}

/// The functions of `calls` (indexes into [`FUNCTIONS`]): counts, sums, maxima, histograms.
pub fn functions_of(calls: &[ProbeCall], names: &[&str]) -> Vec<ProbeFunction> {
    let mut fs: Vec<ProbeFunction> = names
        .iter()
        .enumerate()
        .map(|(i, n)| ProbeFunction {
            name: n.to_string(),
            symbol: format!("_ZN7pktloop{}{}Ev", n.len(), n),
            binary: "/usr/local/bin/pktloop".into(),
            address: 0x40_1000 + 0x340 * i as u64,
            probe_offset: 4,
            calls: 0,
            sampled: 0,
            total_ns: 0,
            max_ns: 0,
            buckets: Vec::new(),
        })
        .collect();
    let mut hist = vec![std::collections::BTreeMap::<u32, u64>::new(); names.len()];
    for c in calls {
        let f = &mut fs[c.function as usize];
        let d = c.exit_unix_ns - c.entry_unix_ns;
        f.calls += 1;
        f.sampled += 1;
        f.total_ns = f.total_ns.saturating_add(d);
        f.max_ns = f.max_ns.max(d);
        *hist[c.function as usize].entry(bucket_of(d)).or_default() += 1;
    }
    for (f, h) in fs.iter_mut().zip(hist) {
        f.buckets = h.into_iter().collect();
    }
    fs
}

/// A session around `calls`.
pub fn session_of(start_unix_ns: u64, calls: Vec<ProbeCall>, names: &[&str]) -> ProbeSession {
    let end =
        calls.iter().map(|c| c.exit_unix_ns).max().unwrap_or(start_unix_ns).max(start_unix_ns).saturating_add(1000);
    ProbeSession {
        id: 0,
        start_unix_ns,
        end_unix_ns: end,
        pids: vec![PID],
        binary: None,
        sample_every: 1,
        with_calls: true,
        ended: "duration".into(),
        notes: vec![],
        functions: functions_of(&calls, names),
        calls,
        calls_lost: 0,
    }
}

/// The packet loop's calls on `threads` threads from `start_unix_ns`, `calls` rounded up to a
/// multiple of `threads`, sorted by thread then entry time.
pub fn packet_loop_calls(seed: u64, start_unix_ns: u64, threads: u32, calls: usize) -> Vec<ProbeCall> {
    let mut rng = StdRng::seed_from_u64(seed);
    let per_thread = calls.div_ceil(threads as usize);
    let mut out: Vec<ProbeCall> = Vec::with_capacity(calls + 8);
    for t in 0..threads {
        let tid = PID + 1 + t;
        let mut cpu = t;
        let mut now = start_unix_ns + rng.random_range(0..20_000);
        let stop = out.len() + per_thread;
        while out.len() < stop {
            now += (-20_000.0 * (1.0 - rng.random::<f64>()).ln()) as u64;
            if rng.random_bool(0.0005) {
                cpu = rng.random_range(0..16);
            }
            let call = |function: u32, entry: u64, exit: u64, depth: u32, parent: Option<u32>| ProbeCall {
                function,
                pid: PID,
                tid,
                cpu,
                entry_unix_ns: entry,
                exit_unix_ns: exit,
                depth,
                parent,
            };
            let gap = |rng: &mut StdRng| rng.random_range(20..120u64);
            let h = out.len();
            out.push(call(0, now, 0, 0, None));
            let mut at = now + gap(&mut rng);
            let parse = if rng.random_bool(0.02) { 3_000 } else { rng.random_range(150..600) };
            out.push(call(1, at, at + parse, 1, Some(h as u32)));
            at += parse + gap(&mut rng);
            if !rng.random_bool(0.05) {
                let lookup =
                    if rng.random_bool(0.05) { rng.random_range(2_000..6_000) } else { rng.random_range(80..400) };
                out.push(call(2, at, at + lookup, 1, Some(h as u32)));
                at += lookup + gap(&mut rng);
                let f = out.len();
                out.push(call(3, at, 0, 1, Some(h as u32)));
                let mut ft = at + rng.random_range(300..1_500);
                if rng.random_bool(0.01) {
                    let s = ft;
                    ft += rng.random_range(500..2_000);
                    out.push(call(4, s, ft, 2, Some(f as u32)));
                    ft += gap(&mut rng);
                }
                out[f].exit_unix_ns = ft;
                at = ft + gap(&mut rng);
            }
            out[h].exit_unix_ns = at;
            now = at;
        }
        // Exactly `per_thread` (the last iteration may be cut: its parent stays).
        out.truncate(stop);
    }
    out
}

/// A realistic packet-loop session of `calls` calls (rounded up to a multiple of `threads`)
/// on `threads` threads.
pub fn packet_loop_session(seed: u64, start_unix_ns: u64, threads: u32, calls: usize) -> ProbeSession {
    session_of(start_unix_ns, packet_loop_calls(seed, start_unix_ns, threads, calls), &FUNCTIONS)
}

/// The same calls in global entry order (threads interleaved): what an unsorted producer
/// would hand over. Parents are renumbered.
pub fn interleaved(session: &ProbeSession) -> ProbeSession {
    let mut order: Vec<usize> = (0..session.calls.len()).collect();
    order.sort_by_key(|&i| (session.calls[i].entry_unix_ns, i));
    let mut new_index = vec![0u32; order.len()];
    for (n, &i) in order.iter().enumerate() {
        new_index[i] = n as u32;
    }
    let calls = order
        .iter()
        .map(|&i| ProbeCall { parent: session.calls[i].parent.map(|p| new_index[p as usize]), ..session.calls[i] })
        .collect();
    ProbeSession { calls, ..session.clone() }
}

/// The worst case: every field random (any thread, CPU, function, depth, time within a
/// second, duration up to a second, parent anywhere before).
pub fn random_session(seed: u64, start_unix_ns: u64, calls: usize) -> ProbeSession {
    let mut rng = StdRng::seed_from_u64(seed);
    let names: Vec<String> = (0..40).map(|i| format!("fn_{i}")).collect();
    let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let calls: Vec<ProbeCall> = (0..calls)
        .map(|i| {
            let entry = start_unix_ns + rng.random_range(0..1_000_000_000);
            ProbeCall {
                function: rng.random_range(0..names.len() as u32),
                pid: rng.random(),
                tid: rng.random(),
                cpu: rng.random_range(0..256),
                entry_unix_ns: entry,
                exit_unix_ns: entry + rng.random_range(0..1_000_000_000),
                depth: rng.random_range(0..8),
                parent: (i > 0 && rng.random_bool(0.5)).then(|| rng.random_range(0..i as u32)),
            }
        })
        .collect();
    session_of(start_unix_ns, calls, &names)
}
