//! `cargo bench -p loupe-timeline`: the cost of the timeline against a bare `rdtsc` and the
//! `tracing` crate with a minimal subscriber doing the same work (stamp + four u64 fields into
//! a per-thread ring), the writer's slowdown while a reader tails, and bytes per event.
//! Each figure is printed for people and as one `BENCH {...}` JSON line.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use loupe_timeline::reader::Tailer;
use loupe_timeline::{self as tl, clock, format};

fn bench(name: &str, value: f64, unit: &str, baseline: Option<f64>, note: &str) {
    println!("{name:<40} {value:>10.2} {unit:<6} {note}");
    let b = baseline.map_or("null".to_string(), |b| format!("{b:.3}"));
    println!("BENCH {{\"name\": \"{name}\", \"value\": {value:.3}, \"unit\": \"{unit}\", \"baseline\": {b}}}");
}

/// Best of `rounds` timings of `f(n)`, in ns per iteration.
fn ns_per(n: u64, rounds: usize, mut f: impl FnMut(u64)) -> f64 {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .fold(f64::INFINITY, f64::min)
}

// ---- tracing with a minimal subscriber doing comparable work --------------------------------

mod ring_subscriber {
    use super::*;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    thread_local! {
        static RING: RefCell<(Vec<[u64; 6]>, usize)> = RefCell::new((vec![[0; 6]; 8192], 0));
    }

    struct Args([u64; 4], usize);
    impl Visit for Args {
        fn record_u64(&mut self, _f: &Field, v: u64) {
            if self.1 < 4 {
                self.0[self.1] = v;
                self.1 += 1;
            }
        }
        fn record_debug(&mut self, _f: &Field, _v: &dyn std::fmt::Debug) {}
    }

    /// Stamps each event with `rdtsc` and stores callsite + four u64 fields in a thread-local
    /// ring of 48-byte records: what the timeline does, through tracing's dispatch.
    pub struct RingSub;
    impl Subscriber for RingSub {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
            Some(tracing::level_filters::LevelFilter::INFO)
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            let ts = clock::rdtsc();
            let mut a = Args([0; 4], 0);
            e.record(&mut a);
            let site = e.metadata() as *const _ as u64;
            RING.with(|r| {
                let mut r = r.borrow_mut();
                let i = r.1 & 8191;
                r.0[i] = [ts, site, a.0[0], a.0[1], a.0[2], a.0[3]];
                r.1 += 1;
            });
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
}

/// tests/c/bench.c built against the shared and the static library, if there is a C compiler.
fn c_costs(dir: &std::path::Path) {
    use std::path::Path;
    use std::process::Command;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().map_or(true, |o| !o.status.success()) {
        println!("SKIP C costs: no C compiler ({cc})");
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    // This bench binary is target/<profile>/deps/timeline-*; the libraries were built beside it.
    let exe = std::env::current_exe().expect("exe");
    let deps = exe.parent().expect("deps");
    for (kind, shared) in [("so", true), ("a", false)] {
        let out = dir.join(format!("cbench_{kind}"));
        let mut cmd = Command::new(&cc);
        cmd.args(["-O2", "-I"]).arg(crate_dir.join("include")).arg(crate_dir.join("tests/c/bench.c"));
        if shared {
            cmd.arg("-L").arg(deps).arg("-lloupe_timeline").arg(format!("-Wl,-rpath,{}", deps.display()));
        } else {
            cmd.arg(deps.join("libloupe_timeline.a")).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
        let built = cmd.arg("-o").arg(&out).output().expect("cc");
        if !built.status.success() {
            println!("SKIP C costs ({kind}): {}", String::from_utf8_lossy(&built.stderr).lines().next().unwrap_or(""));
            continue;
        }
        // cargo's LD_LIBRARY_PATH would win over the rpath: point it at this build's library.
        let run = Command::new(&out)
            .env("LOUPE_TIMELINE_DIR", dir)
            .env("LD_LIBRARY_PATH", deps)
            .output()
            .expect("run C bench");
        if !run.status.success() {
            println!("SKIP C costs ({kind}): {}", String::from_utf8_lossy(&run.stderr).lines().next().unwrap_or(""));
        }
        for line in String::from_utf8_lossy(&run.stdout).lines() {
            let Some((name, v)) = line.split_once(' ') else { continue };
            let Ok(v) = v.parse::<f64>() else { continue };
            let (goal, note) = match name {
                "skip_inline" => (Some(1.0), "loupe_tl_log_inline, skipped (goal ≤ 1)"),
                "skip_call" => (None, "loupe_tl_log, skipped (a call)"),
                "log_inline" => (None, "loupe_tl_log_inline, logged"),
                _ => (None, "loupe_tl_log, logged"),
            };
            bench(&format!("c_{kind}_{name}_ns"), v, "ns", goal, &format!("C via lib{kind}: {note}"));
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks; nothing to list
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // SAFETY: set before any other thread exists.
    unsafe { std::env::set_var("LOUPE_TIMELINE_DIR", dir.path()) };
    let logged = tl::define("bench_logged", 1, 9, &["i", "a", "b", "c"]).expect("define");
    let skipped = tl::define("bench_skipped", 2, 0, &["i"]).expect("define");
    println!(
        "clock: {} ; CPU via {}",
        if clock::tsc_usable() { "TSC (constant_tsc nonstop_tsc)" } else { "CLOCK_MONOTONIC" },
        if clock::rseq_cpu_ptr().is_null() { "sched_getcpu()" } else { "glibc rseq area" }
    );
    const N: u64 = 20_000_000;

    let rdtsc = ns_per(N, 5, |n| {
        for _ in 0..n {
            black_box(clock::rdtsc());
        }
    });
    bench("rdtsc_ns", rdtsc, "ns", None, "bare rdtsc, the floor");

    let log1 = ns_per(N, 5, |n| {
        for i in 0..n {
            black_box(logged).log(i, 1, 2, 3);
        }
    });
    bench(
        "timeline_log_ns",
        log1,
        "ns",
        Some(rdtsc + 5.0),
        &format!("logged, 1 thread (goal ≤ rdtsc + 5 = {:.1}; rdtsc + {:.1})", rdtsc + 5.0, log1 - rdtsc),
    );

    let skip1 = ns_per(N * 5, 5, |n| {
        for i in 0..n {
            black_box(skipped).log(i, 0, 0, 0);
        }
    });
    bench("timeline_skip_ns", skip1, "ns", Some(1.0), "skipped by rate, 1 thread (goal ≤ 1)");

    // Through the C ABI's function (what a C program pays, minus the PLT): a call each.
    let ffi: extern "C" fn(u32, u64, u64, u64, u64) -> u64 = black_box(loupe_timeline::ffi::loupe_tl_log);
    let ffi_log = ns_per(N, 5, |n| {
        for i in 0..n {
            black_box(ffi(logged.raw(), i, 1, 2, 3));
        }
    });
    bench("timeline_c_abi_log_ns", ffi_log, "ns", Some(log1), "loupe_tl_log, logged (baseline: inlined Rust)");
    let ffi_skip = ns_per(N * 5, 5, |n| {
        for i in 0..n {
            black_box(ffi(skipped.raw(), i, 0, 0, 0));
        }
    });
    bench("timeline_c_abi_skip_ns", ffi_skip, "ns", Some(skip1), "loupe_tl_log, skipped (baseline: inlined Rust)");

    // Breath: the per-iteration roll.
    let breath = ns_per(N, 5, |n| {
        for _ in 0..n {
            tl::breath();
        }
    });
    bench("timeline_breath_ns", breath, "ns", None, "breath() (threshold roll)");

    // Two threads at once, each on its own ring.
    let two = |skip: bool| -> f64 {
        let bar = Arc::new(Barrier::new(2));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let bar = bar.clone();
                std::thread::spawn(move || {
                    let ev = if skip { skipped } else { logged };
                    let n = if skip { N * 5 } else { N };
                    bar.wait();
                    ns_per(n, 3, |n| {
                        for i in 0..n {
                            black_box(ev).log(i, 1, 2, 3);
                        }
                    })
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).fold(0.0, f64::max)
    };
    let log2 = two(false);
    bench("timeline_log_2threads_ns", log2, "ns", Some(log1), "logged, each of 2 threads at once (baseline: 1 thread)");
    let skip2 = two(true);
    bench("timeline_skip_2threads_ns", skip2, "ns", Some(skip1), "skipped, each of 2 threads at once");

    // tracing, same work through its dispatch.
    tracing::subscriber::set_global_default(ring_subscriber::RingSub).expect("subscriber");
    let tr = ns_per(N / 4, 5, |n| {
        for i in 0..n {
            tracing::info!(i = black_box(i), a = 1u64, b = 2u64, c = 3u64);
        }
    });
    bench("tracing_event_ns", tr, "ns", None, "tracing::info! into a minimal ring subscriber");
    bench("timeline_vs_tracing_ratio", tr / log1, "x", Some(1.0), "how many times cheaper a logged event is");
    let tr_off = ns_per(N * 5, 5, |n| {
        for i in 0..n {
            tracing::trace!(i = black_box(i));
        }
    });
    bench(
        "tracing_disabled_ns",
        tr_off,
        "ns",
        Some(skip1),
        "tracing::trace! below the max level (baseline: timeline skip)",
    );
    let tr2 = {
        let bar = Arc::new(Barrier::new(2));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let bar = bar.clone();
                std::thread::spawn(move || {
                    bar.wait();
                    ns_per(N / 4, 3, |n| {
                        for i in 0..n {
                            tracing::info!(i = black_box(i), a = 1u64, b = 2u64, c = 3u64);
                        }
                    })
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).fold(0.0, f64::max)
    };
    bench("tracing_event_2threads_ns", tr2, "ns", Some(log2), "tracing, each of 2 threads (baseline: timeline)");

    // Writer slowdown while a reader tails the file at the agent's interval. The machine is
    // shared (2 cores), so: adjacent quiet/tailed pairs, the median of the pairs' ratios, and
    // the writer's own CPU time (CLOCK_THREAD_CPUTIME_ID: what the reader's cache traffic costs
    // it, without the time a busy machine lets the reader's thread take its core) beside wall
    // time.
    let path = tl::file_path().expect("file");
    let thread_cpu_ns = || {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
    };
    let writer_rate = |tail: Option<Duration>| -> (f64, f64, u64) {
        let stop = Arc::new(AtomicBool::new(false));
        let reader = tail.map(|every| {
            let stop = stop.clone();
            let path = path.clone();
            std::thread::spawn(move || {
                let mut t = Tailer::open(&path).expect("open");
                t.seek_to_end().expect("seek");
                let mut ev = Vec::new();
                let mut read = 0;
                while !stop.load(Ordering::Relaxed) {
                    ev.clear();
                    read += t.poll(&mut ev).expect("poll").read;
                    std::thread::sleep(every);
                }
                read
            })
        });
        std::thread::sleep(Duration::from_millis(30));
        let (wall, cpu) = std::thread::spawn(move || {
            // 400 ms of logging flat out per round.
            let (t0, c0) = (Instant::now(), thread_cpu_ns());
            let mut n = 0u64;
            while t0.elapsed() < Duration::from_millis(400) {
                for i in 0..100_000 {
                    black_box(logged).log(i, 1, 2, 3);
                }
                n += 100_000;
            }
            (t0.elapsed().as_nanos() as f64 / n as f64, (thread_cpu_ns() - c0) / n as f64)
        })
        .join()
        .expect("writer");
        stop.store(true, Ordering::Relaxed);
        let read = reader.map_or(0, |r| r.join().expect("reader"));
        (wall, cpu, read)
    };
    for every in [20u64, 50] {
        let (mut wall_ratio, mut cpu_ratio, mut alone) = (Vec::new(), Vec::new(), Vec::new());
        let mut read = 0;
        for _ in 0..9 {
            let (qw, qc, _) = writer_rate(None);
            let (tw, tc, r) = writer_rate(Some(Duration::from_millis(every)));
            wall_ratio.push(tw / qw);
            cpu_ratio.push(tc / qc);
            alone.push(qc);
            read += r;
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (w, c, a) = (med(&mut wall_ratio), med(&mut cpu_ratio), med(&mut alone));
        bench(
            &format!("timeline_writer_slowdown_{every}ms_pct"),
            (c - 1.0) * 100.0,
            "%",
            Some(5.0),
            &format!(
                "writer CPU time per event, tailed every {every} ms vs alone ({a:.2} ns); {read} records read; goal ≤ 5 %"
            ),
        );
        bench(
            &format!("timeline_writer_slowdown_{every}ms_wall_pct"),
            (w - 1.0) * 100.0,
            "%",
            None,
            "the same in wall time (includes the reader thread taking the writer's core on a busy machine)",
        );
    }

    // The reader's side: ns per event decoded by Tailer::poll (the agent's CPU cost).
    {
        let mut t = Tailer::open(&path).expect("open");
        t.seek_to_end().expect("seek");
        let mut ev = Vec::with_capacity(8192);
        let (mut polled, mut spent) = (0u64, Duration::ZERO);
        for _ in 0..50 {
            for i in 0..8000 {
                logged.log(i, 1, 2, 3);
            }
            ev.clear();
            let t0 = Instant::now();
            polled += t.poll(&mut ev).expect("poll").read;
            spent += t0.elapsed();
        }
        bench(
            "timeline_reader_ns_per_event",
            spent.as_nanos() as f64 / polled.max(1) as f64,
            "ns",
            None,
            &format!("Tailer::poll, decode + lag + wall clock ({polled} events in polls of 8000)"),
        );
    }

    c_costs(dir.path());

    // Bytes per event in the ring, from the file itself.
    let t = Tailer::open(&path).expect("open");
    let file_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let info = t.info();
    let ring_bytes = info.max_rings as u64 * info.ring_records as u64 * format::RECORD_SIZE as u64;
    bench(
        "timeline_ring_bytes_per_event",
        ring_bytes as f64 / (info.max_rings as u64 * info.ring_records as u64) as f64,
        "B",
        Some(64.0),
        &format!(
            "per record (Snabb: 64); file {file_bytes} B = header + tables + {} rings × {} records",
            info.max_rings, info.ring_records
        ),
    );
}
