//! Writes the seed corpus, `corpus/<target>/seed-N`, from the records of a real store:
//! `cargo +$(cat ../bpf/ebpf/NIGHTLY) run --example seeds -- corpus` in `fuzz/`.
//!
//! It stores a few runs (idle, bursty with sketches, with connection counts) and sample
//! batches (periodic samples on several CPUs, shared and own stacks, a lost-only batch, waits
//! off the CPU),
//! timeline batches (a packet loop on two threads, odd events) and probe sessions (nested
//! calls on two threads, odd calls of many functions, one without calls) with
//! `loupe-store`, closes the store, reads its `runs` tree back with sled and frames each record
//! the way its target expects. Output is deterministic (fixed seeds and times).

use std::collections::BTreeMap;
use std::path::Path;

use loupe_fuzz::join;
use loupe_store::encoding::bits::{BitWriter, write_column};
use loupe_store::samples::codec;
use loupe_store::{
    ConnCounts, Counter, CpuColumns, Frame, NewRun, OffCpuSample, ProbeCall, ProbeFunction, ProbeSession, Retention,
    RunSource, StackSample, Store, TimelineEvent, TimelineEventDef, TimelineSource, keys,
};

const T0: u64 = 1_700_000_000_000_000_000;
const MAX_PER_TARGET: usize = 16;

fn lcg(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 33
}

fn run(start: u64, samples: u32, cpus: u32, seed: u64) -> NewRun {
    let mut x = seed;
    let mut per_cpu: Vec<CpuColumns> = (0..cpus).map(|c| CpuColumns::zeroed(c, samples)).collect();
    if seed != 0 {
        for cols in &mut per_cpu {
            for s in 0..samples as usize {
                if lcg(&mut x) % 3 == 0 {
                    let pk = 1 + lcg(&mut x) % 40;
                    cols.counter_mut(Counter::InPackets)[s] = pk;
                    cols.counter_mut(Counter::InBytes)[s] = pk * (60 + lcg(&mut x) % 1400);
                    cols.counter_mut(Counter::OutBytes)[s] = lcg(&mut x) % 5000;
                    cols.in_conns[s] = 1u128 << (lcg(&mut x) % 128) | 1 << 3;
                    cols.out_conns[s] = if lcg(&mut x) % 2 == 0 { u128::MAX - 7 } else { cols.in_conns[s] };
                }
            }
        }
    }
    NewRun {
        iface: "eth0".into(),
        host: "web-12".into(),
        rack: Some("r7".into()),
        start_unix_ns: start,
        interval_ns: 100_000,
        samples,
        local_prefixes: vec!["10.0.0.0/8".into()],
        source: if seed == 2 { RunSource::Imported { format: "millisampler".into() } } else { RunSource::Agent },
        per_cpu,
        conn_counts: (seed == 2).then(|| ConnCounts {
            in_conns: (0..samples as u64).map(|i| i % 5).collect(),
            out_conns: vec![0; samples as usize],
        }),
        clock: None,
    }
}

fn samples(start: u64, cpus: u32, per_cpu: u64, seed: u64) -> Vec<StackSample> {
    let mut x = seed;
    let stacks: Vec<Vec<Frame>> = vec![
        vec![Frame::kernel("do_idle"), Frame::kernel("cpu_startup_entry")],
        vec![Frame::user("serve", "app"), Frame::user("main", "app")],
        vec![Frame::kernel("tcp_sendmsg"), Frame::user("write", "libc.so.6"), Frame::user("main", "app")],
        vec![],
    ];
    let mut out = Vec::new();
    for cpu in 0..cpus {
        for i in 0..per_cpu {
            let s = (lcg(&mut x) % stacks.len() as u64) as usize;
            out.push(StackSample {
                time_unix_ns: start + i * 100_000_000 + lcg(&mut x) % 20_000,
                cpu,
                pid: if s == 0 { 0 } else { 100 + (lcg(&mut x) % 3) as u32 },
                tid: 200 + cpu,
                comm: if s == 0 { "swapper/0".into() } else { "app".into() },
                cgroup_id: 1,
                idle: s == 0,
                frames: stacks[s].clone(),
            });
        }
    }
    out
}

fn timeline_source() -> TimelineSource {
    let def = |name: &str, level, rate, args: &[&str]| TimelineEventDef {
        name: name.into(),
        level,
        rate,
        arg_names: args.iter().map(|a| a.to_string()).collect(),
    };
    TimelineSource {
        pid: 77,
        start_ticks: 12345,
        comm: "pktloop".into(),
        events: vec![def("loop_start", 0, 9, &[]), def("rx", 1, 7, &["packets"]), def("loop_end", 0, 9, &["packets"])],
    }
}

/// A packet loop's events on two threads, then odd ones (no lags, huge arguments).
fn timeline_batches() -> Vec<Vec<TimelineEvent>> {
    let mut x = 9;
    let mut a = Vec::new();
    for tid in [10u32, 11] {
        let mut t = T0 + u64::from(tid);
        for i in 0..40u64 {
            for (event, lag) in [(0u32, 300), (1, 200), (2, 2_000)] {
                if event == 1 && i % 5 != 0 {
                    continue;
                }
                t += lag + lcg(&mut x) % 100;
                let args = [if event == 0 { 0 } else { 1 + lcg(&mut x) % 32 }, 0, 0, 0];
                a.push(TimelineEvent {
                    time_unix_ns: t,
                    tid,
                    cpu: tid - 10,
                    event,
                    args,
                    lag_ns: (i > 0).then_some(lag),
                });
            }
        }
    }
    let b = (0..20u64)
        .map(|i| TimelineEvent {
            time_unix_ns: T0 + 5_000_000_000 + i * 1000,
            tid: 3,
            cpu: u32::MAX,
            event: (i % 3) as u32,
            args: [u64::MAX - i, i << 50, 0, i],
            lag_ns: (i % 2 == 0).then_some(i * 77),
        })
        .collect();
    vec![a, b]
}

/// Probe sessions: `handle → parse` on two threads; odd calls of 20 functions (escaped
/// function indexes, extreme ids, explicit depths, far parents); one without calls.
fn probe_sessions() -> Vec<ProbeSession> {
    let function = |name: String, buckets: Vec<(u32, u64)>| ProbeFunction {
        symbol: format!("_Z{}{name}v", name.len()),
        name,
        binary: "/usr/bin/app".into(),
        address: 0x401000,
        probe_offset: 4,
        calls: 40,
        sampled: 40,
        total_ns: 40_000,
        max_ns: 3_000,
        buckets,
    };
    let mut x = 13;
    let mut nested = Vec::new();
    for tid in [10u32, 11] {
        let mut t = T0 + u64::from(tid) * 1000;
        for _ in 0..20 {
            let h = nested.len() as u32;
            let d = 500 + lcg(&mut x) % 2000;
            let call = |function, entry, exit, depth, parent| ProbeCall {
                function,
                pid: 77,
                tid,
                cpu: tid - 10,
                entry_unix_ns: entry,
                exit_unix_ns: exit,
                depth,
                parent,
            };
            nested.push(call(0, t, t + d + 200, 0, None));
            nested.push(call(1, t + 50, t + 50 + d, 1, Some(h)));
            t += 10_000 + lcg(&mut x) % 5000;
        }
    }
    let a = ProbeSession {
        id: 0,
        start_unix_ns: T0,
        end_unix_ns: T0 + 1_000_000,
        pids: vec![77],
        binary: None,
        sample_every: 1,
        with_calls: true,
        ended: "duration".into(),
        notes: vec![],
        bias_ns: 750,
        functions: vec![
            function("handle".into(), vec![(100, 30), (130, 10)]),
            function("parse".into(), vec![(90, 40)]),
        ],
        calls: nested,
        calls_lost: 0,
    };
    let odd: Vec<ProbeCall> = (0..30u32)
        .map(|i| ProbeCall {
            function: (i * 7) % 20,
            pid: if i % 2 == 0 { u32::MAX } else { 1 },
            tid: i % 3,
            cpu: if i % 5 == 0 { u32::MAX } else { i % 4 },
            entry_unix_ns: T0 + 5_000_000_000 + u64::from(i) * 1000 - u64::from(i % 3) * 4000,
            exit_unix_ns: T0 + 5_000_000_000 + u64::from(i) * 1000 + u64::from(i % 4) * 1_000_000,
            depth: i % 6,
            parent: (i > 0 && i % 3 != 0).then(|| (i * 7 + 3) % i),
        })
        .collect();
    let b = ProbeSession {
        id: 0,
        start_unix_ns: T0 + 4_000_000_000,
        end_unix_ns: T0 + 9_000_000_000,
        pids: vec![],
        binary: Some("/usr/lib/libapp.so.1".into()),
        sample_every: 8,
        with_calls: true,
        ended: "budget".into(),
        notes: vec!["the cost budget raised sampling to 1 in 8".into()],
        bias_ns: 0,
        functions: (0..20).map(|i| function(format!("f{i}"), vec![(i, 1), (1023, u64::MAX)])).collect(),
        calls: odd,
        calls_lost: 1234,
    };
    let c = ProbeSession {
        start_unix_ns: T0 + 20_000_000_000,
        end_unix_ns: T0 + 21_000_000_000,
        with_calls: false,
        ended: "exited".into(),
        functions: vec![function("main".into(), vec![])],
        calls: vec![],
        ..b.clone()
    };
    vec![a, b, c]
}

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "corpus".into());
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Store::open(dir.path(), Retention::default()).expect("open store");
        store.put_run(run(T0, 50, 1, 0), T0).unwrap();
        store.put_run(run(T0 + 1_000, 40, 2, 1), T0).unwrap();
        store.put_run(run(T0 + 2_000, 30, 1, 2), T0).unwrap();
        store.put_samples(&samples(T0, 3, 20, 5), 0, T0).unwrap();
        store.put_samples(&samples(T0 + 10_000_000_000, 2, 8, 6), 3, T0).unwrap();
        store.put_samples(&[], 9, T0 + 20_000_000_000).unwrap();
        // An hour later: the first hour is complete and gets its rollup.
        store.put_samples(&samples(T0 + 3_600_000_000_000, 2, 4, 7), 0, T0).unwrap();
        for (i, evs) in timeline_batches().iter().enumerate() {
            store.put_timeline(&timeline_source(), evs, i as u64, T0).unwrap();
        }
        for s in probe_sessions() {
            store.put_probe_session(s).unwrap();
        }
        // Waits off the CPU: the CPU samples' stacks, each waiting 1 ms to ~1 s, kept 1 in 1 or 7.
        let waits: Vec<OffCpuSample> = samples(T0 + 7_200_000_000_000, 2, 6, 8)
            .into_iter()
            .filter(|s| !s.idle)
            .enumerate()
            .map(|(i, sample)| OffCpuSample { sample, waited_ns: 1_000_000 << (i % 10), one_in: [1, 7][i % 2] })
            .collect();
        store.put_off_cpu(&waits, T0).unwrap();
        store.flush().unwrap();
    }
    let db = loupe_store::sled_db(dir.path()).expect("reopen with sled");
    let tree = db.open_tree("runs").unwrap();
    let records: Vec<(Vec<u8>, Vec<u8>)> =
        tree.iter().map(|kv| kv.unwrap()).map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
    let by_key: BTreeMap<&[u8], &[u8]> = records.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
    let mut seeds: BTreeMap<&str, Vec<Vec<u8>>> = BTreeMap::new();
    // At most four seeds per target and kind of record (dictionary records: per entry kind), so
    // every kind is represented and the corpus stays small.
    let mut per_kind: BTreeMap<(&str, u8), usize> = BTreeMap::new();
    let mut add = |target: &'static str, kind: u8, bytes: Vec<u8>| {
        let n = per_kind.entry((target, kind)).or_default();
        let list = seeds.entry(target).or_default();
        if *n < 4 && list.len() < MAX_PER_TARGET && !list.contains(&bytes) {
            *n += 1;
            list.push(bytes);
        }
    };
    for (k, v) in &records {
        let kind = if k[0] == keys::DICT { k[1] } else { k[0] };
        let mut add = |target, bytes| add(target, kind, bytes);
        match k[0] {
            keys::META => add("run_meta", join(&[k, v])),
            keys::CPU => {
                let mut mk = k[..17].to_vec();
                mk[0] = keys::META;
                let mut ck = k[..17].to_vec();
                ck[0] = keys::CONN_COUNTS;
                let counts = by_key.get(ck.as_slice()).copied().unwrap_or(&[]);
                add("run_columns", join(&[by_key[mk.as_slice()], k, v, counts]));
            }
            keys::BATCH => add("sample_batch", v.clone()),
            keys::TABLE => {
                add("sample_table", v.clone());
                add("sample_block", join(&[k, v, &[]]));
            }
            keys::ROLLUP => add("sample_rollup", v.clone()),
            keys::OFF_BATCH => add("sample_batch", v.clone()),
            keys::OFF_TABLE => {
                add("sample_table", v.clone());
                add("sample_block", join(&[k, v, &[]]));
            }
            keys::OFF_WAITS => {
                let mut mk = k[..17].to_vec();
                mk[0] = keys::OFF_BATCH;
                let n = codec::decode_batch(by_key[mk.as_slice()]).unwrap().samples as u32;
                add("off_cpu_waits", [&n.to_le_bytes()[..], v].concat());
            }
            keys::BLOCK => {
                let (start, _, batch) = keys::parse_block_key(k).unwrap();
                let table = by_key[keys::batch_key(keys::TABLE, start, batch).as_slice()];
                add("sample_block", join(&[k, table, v]));
            }
            keys::DICT => add("dict_entry", join(&[k, v])),
            keys::TL_BLOCK => {
                let (start, batch) = keys::parse_batch_key(k).unwrap();
                let meta = by_key[keys::batch_key(keys::TL_BATCH, start, batch).as_slice()];
                let row = loupe_store::timeline::codec::decode_batch(meta).unwrap();
                let source = by_key[keys::tl_dict_key(row.source).as_slice()];
                add("timeline_batch", join(&[k, source, meta, v]));
            }
            keys::TL_BATCH | keys::TL_DICT => {}
            keys::PROBE_META => add("probe_session", join(&[k, v, &[], &[]])),
            keys::PROBE_CALLS => {
                let mut mk = k[..17].to_vec();
                mk[0] = keys::PROBE_META;
                add("probe_session", join(&[&mk, by_key[mk.as_slice()], k, v]));
            }
            _ => add("keys", v.clone()), // the `s` and `x` totals values
        }
        add("keys", k.clone());
    }
    let columns: [Vec<u64>; 4] = [
        vec![0; 100],
        (0..50).map(|i| i * 7 % 13).collect(),
        vec![5, 5, 5, u64::MAX],
        (0..200).map(|i| u64::from(i % 40 == 0) * i).collect(),
    ];
    for (i, col) in columns.iter().enumerate() {
        let mut w = BitWriter::new();
        write_column(&mut w, col);
        let mut bytes = (col.len() as u32).to_le_bytes().to_vec();
        bytes.extend(w.finish());
        add("bit_column", i as u8, bytes);
    }
    for (target, list) in seeds {
        let d = Path::new(&out).join(target);
        std::fs::create_dir_all(&d).unwrap();
        for (i, bytes) in list.iter().enumerate() {
            std::fs::write(d.join(format!("seed-{i}")), bytes).unwrap();
        }
        println!("{target}: {} seeds", list.len());
    }
}
