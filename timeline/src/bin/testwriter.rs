//! A writer for the integration tests (`tests/`): a real process that logs known sequences,
//! so the tests can read its ring file, kill it, and compare with what it says it did.
//! Every mode first prints `path <ring file>`; stdout is line-buffered by flushing each line.
//!
//! ```text
//! rates ITERS CHUNK     breath + one event of each rate 0..=9 (arg0 = iteration) per iteration;
//!                       after each CHUNK iterations prints `chunk I` and waits for a stdin line
//! lags N                N iterations of a nested level sequence (all rate 9) with busy waits;
//!                       prints `ev TS LEVEL LAG` per event, LAG computed here (`-` if none)
//! wall N                N events 1 ms apart, arg0 = CLOCK_REALTIME before the log; prints
//!                       `wall I AFTER` with CLOCK_REALTIME right after it
//! stream THREADS        each thread logs (counter, counter*3+1, thread, mix(counter)) forever,
//                       sleeping 1 ms every 1000 records
//! count THREADS N       each thread logs N records of the same shape as fast as it can, then
//!                       prints `done TOTAL` and exits
//! ```

use std::io::{BufRead, Write};

use loupe_timeline as tl;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 27)
}

fn realtime() -> u64 {
    tl::clock::realtime_ns()
}

fn spin(ticks: u64) {
    let t0 = tl::now();
    while tl::now().wrapping_sub(t0) < ticks {
        std::hint::spin_loop();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize| -> u64 { args.get(i).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("argument {i}")) };
    let mode = args.first().map(String::as_str).unwrap_or("");
    // Define something first so the file exists, then say where it is.
    let probe = tl::define("probe", 0, 9, &[]).expect("define");
    say(&format!("path {}", tl::file_path().expect("file").display()));
    let _ = probe;
    match mode {
        "rates" => {
            let (iters, chunk) = (num(1), num(2));
            let evs: Vec<tl::Event> =
                (0..=9u8).map(|r| tl::define(&format!("rate{r}"), 1, r, &["iteration"]).expect("define")).collect();
            let stdin = std::io::stdin();
            let mut line = String::new();
            for i in 0..iters {
                tl::breath();
                for e in &evs {
                    e.log(i, 0, 0, 0);
                }
                if (i + 1) % chunk == 0 {
                    say(&format!("chunk {}", i + 1));
                    line.clear();
                    let _ = stdin.lock().read_line(&mut line);
                }
            }
            say("done");
        }
        "lags" => {
            let n = num(1);
            let names = [("loop", 0u8), ("phase", 1), ("step", 2), ("detail", 3), ("loop_end", 0)];
            let evs: Vec<(tl::Event, u8)> =
                names.iter().map(|&(nm, lv)| (tl::define(nm, lv, 9, &["i"]).expect("define"), lv)).collect();
            // One iteration: loop, phase, step, detail, step, phase, detail, loop_end.
            let seq = [0usize, 1, 2, 3, 2, 1, 3, 4];
            let mut hist: Vec<(u64, u8)> = Vec::new();
            let mut x = 1u64;
            for i in 0..n {
                for &k in &seq {
                    x = mix(x);
                    spin(x % 2000);
                    let (e, lv) = evs[k];
                    let ts = e.log(i, 0, 0, 0);
                    // The closest previous event of equal or lower level, searched backwards.
                    let lag = hist.iter().rev().find(|&&(_, l)| l <= lv).map(|&(t, _)| ts.saturating_sub(t));
                    hist.push((ts, lv));
                    say(&format!("ev {ts} {lv} {}", lag.map_or("-".into(), |l| l.to_string())));
                }
            }
            say("done");
        }
        "wall" => {
            let n = num(1);
            let e = tl::define("wall", 0, 9, &["realtime_before"]).expect("define");
            for i in 0..n {
                let before = realtime();
                e.log(before, i, 0, 0);
                let after = realtime();
                say(&format!("wall {i} {after}"));
                tl::breath();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            say("done");
        }
        "stream" | "count" => {
            let threads = num(1);
            let limit = if mode == "count" { num(2) } else { u64::MAX };
            let pace = mode == "stream";
            let e = tl::define("seq", 0, 9, &["counter", "check", "thread", "mix"]).expect("define");
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    std::thread::spawn(move || {
                        let mut c = 0u64;
                        while c < limit {
                            e.log(c, c * 3 + 1, t, mix(c ^ t << 56));
                            c += 1;
                            if pace && c.is_multiple_of(1000) {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                        }
                        c
                    })
                })
                .collect();
            let total: u64 = hs.into_iter().map(|h| h.join().expect("thread")).sum();
            say(&format!("done {total}"));
        }
        other => panic!("unknown mode {other:?}"),
    }
}
