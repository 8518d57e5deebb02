//! Ring files the reader must refuse or survive: truncated, garbage, another version, absurd
//! capacities, bad offsets, shrunk while tailed, undefined events, random corruption. Each is a
//! clear error or counted as corrupt; none panics or allocates what the file says.

mod common;

use std::path::{Path, PathBuf};

use loupe_timeline::format::{self, hdr};
use loupe_timeline::reader::{ReadError, Tailer};

const SMALL: &[(&str, &str)] =
    &[("LOUPE_TIMELINE_RINGS", "2"), ("LOUPE_TIMELINE_RING_RECORDS", "64"), ("LOUPE_TIMELINE_EVENTS", "8")];

/// A real file: a writer process that logged 100 records and exited.
fn real_file(dir: &Path) -> Vec<u8> {
    let mut w = common::writer(dir, SMALL, &["count", "1", "100"]);
    assert_eq!(w.line().as_deref(), Some("done 100"));
    let path = w.path.clone();
    w.wait_ok();
    let bytes = std::fs::read(&path).unwrap();
    let mut t = Tailer::open(&path).unwrap();
    let mut ev = Vec::new();
    let s = t.poll(&mut ev).unwrap();
    // 100 records in a 64-record ring: the oldest slot is never taken (docs/timeline.md).
    assert_eq!((s.read, s.lost, s.corrupt), (63, 37, 0), "the real file reads cleanly");
    bytes
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

fn open_err(p: &Path) -> ReadError {
    match Tailer::open(p) {
        Ok(_) => panic!("{} was accepted", p.display()),
        Err(e) => e,
    }
}

#[test]
fn bad_headers_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = real_file(dir.path());
    let d = dir.path();

    let e = open_err(&write(d, "empty", &[]));
    assert!(matches!(e, ReadError::Truncated { .. }) && e.to_string().contains("truncated"), "{e}");
    let e = open_err(&write(d, "short", &good[..12]));
    assert!(matches!(e, ReadError::Truncated { .. }), "{e}");
    // A FIFO or a symlink named like a ring file: refused at once (no blocking, no following).
    let fifo = d.join("1-1.tl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let e = open_err(&fifo);
    assert!(matches!(e, ReadError::NotTimeline(_)), "{e}");
    let link = d.join("2-2.tl");
    std::os::unix::fs::symlink(write(d, "target", &good), &link).unwrap();
    let e = open_err(&link);
    assert!(matches!(e, ReadError::Io { .. }), "{e}");

    let e = open_err(&write(d, "garbage", &vec![0x5a; 20_000]));
    assert!(matches!(e, ReadError::NotTimeline(_)) && e.to_string().contains("not a timeline file"), "{e}");

    let mut v2 = good.clone();
    put32(&mut v2, hdr::VERSION, 2);
    let e = open_err(&write(d, "v2", &v2));
    assert!(matches!(e, ReadError::UnsupportedVersion { version: 2, .. }), "{e}");
    assert!(e.to_string().contains("version 2 not supported"), "{e}");

    let e = open_err(&write(d, "header-cut", &good[..1000]));
    assert!(matches!(e, ReadError::Truncated { .. }), "{e}");
    let e = open_err(&write(d, "rings-cut", &good[..good.len() - 1]));
    assert!(matches!(e, ReadError::Truncated { .. }) && e.to_string().contains("rings"), "{e}");

    // Absurd capacities and offsets: refused before anything is sized from them.
    type Poke = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Poke, &str)> = vec![
        ("rings", Box::new(|b| put32(b, hdr::MAX_RINGS, u32::MAX)), "rings"),
        ("no-rings", Box::new(|b| put32(b, hdr::MAX_RINGS, 0)), "rings"),
        ("events", Box::new(|b| put32(b, hdr::MAX_EVENTS, 1 << 30)), "event slots"),
        ("records", Box::new(|b| put32(b, hdr::RING_RECORDS, 1 << 31)), "records per ring"),
        ("records-odd", Box::new(|b| put32(b, hdr::RING_RECORDS, 100)), "records per ring"),
        ("record-size", Box::new(|b| put32(b, hdr::RECORD_SIZE, 64)), "record size"),
        ("header-size", Box::new(|b| put32(b, hdr::HEADER_SIZE, 1 << 30)), "header size"),
        ("rings-off", Box::new(|b| put64(b, hdr::RINGS_OFF, u64::MAX - 10)), "offsets"),
        ("file-size", Box::new(|b| put64(b, hdr::FILE_SIZE, 1 << 60)), "offsets"),
        ("clock", Box::new(|b| put32(b, hdr::CLOCK, 7)), "clock"),
    ];
    for (name, poke, want) in cases {
        let mut b = good.clone();
        poke(&mut b);
        let e = open_err(&write(d, name, &b));
        assert!(matches!(e, ReadError::Corrupt { .. }) && e.to_string().contains(want), "{name}: {e}");
    }
    // A bigger ring than the file holds (consistent header, short file).
    let mut b = good.clone();
    put32(&mut b, hdr::RING_RECORDS, 1 << 20);
    let (ev, rt, ro, size) = format::layout(8, 2, 1 << 20).unwrap();
    put32(&mut b, hdr::EVENT_TABLE_OFF, ev as u32);
    put32(&mut b, hdr::RING_TABLE_OFF, rt as u32);
    put64(&mut b, hdr::RINGS_OFF, ro);
    put64(&mut b, hdr::FILE_SIZE, size);
    let e = open_err(&write(d, "claims-100MB", &b));
    assert!(matches!(e, ReadError::Truncated { need, .. } if need == size), "{e}");
}

#[test]
fn bad_records_and_shrinking_files() {
    let dir = tempfile::tempdir().unwrap();
    let good = real_file(dir.path());
    let d = dir.path();
    let rings_off = u64::from_le_bytes(good[hdr::RINGS_OFF..hdr::RINGS_OFF + 8].try_into().unwrap()) as usize;

    // An undefined event id and a thread id 0: counted as corrupt, the rest still read.
    let mut b = good.clone();
    put64(&mut b, rings_off + 8, format::pack_meta(999, 0, 1234));
    put64(&mut b, rings_off + 48 + 8, format::pack_meta(1, 0, 0));
    let p = write(d, "bad-records", &b);
    let mut t = Tailer::open(&p).unwrap();
    let mut ev = Vec::new();
    let s = t.poll(&mut ev).unwrap();
    assert_eq!((s.read, s.corrupt), (61, 2));

    // Event count larger than the table; names without NUL or not UTF-8: no panic.
    let mut b = good.clone();
    put32(&mut b, hdr::EVENT_COUNT, u32::MAX);
    b[format::HEADER_SIZE..format::HEADER_SIZE + 48].fill(0xff);
    let p = write(d, "bad-defs", &b);
    let t = Tailer::open(&p).unwrap();
    assert_eq!(t.events().len(), 8, "the count is clamped to the table");

    // A head far beyond anything written: bounded read of one ring's worth, losses counted.
    let mut b = good.clone();
    let rt = u32::from_le_bytes(b[hdr::RING_TABLE_OFF..hdr::RING_TABLE_OFF + 4].try_into().unwrap()) as usize;
    put64(&mut b, rt, u64::MAX / 2);
    let p = write(d, "huge-head", &b);
    let mut t = Tailer::open(&p).unwrap();
    let mut ev = Vec::new();
    let s = t.poll(&mut ev).unwrap();
    assert!(s.read + s.corrupt <= 64 && s.lost > 1 << 60, "{s:?}");

    // The file shrinks while tailed: an error, not SIGBUS.
    let p = write(d, "shrinks", &good);
    let mut t = Tailer::open(&p).unwrap();
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(6000).unwrap();
    let e = t.poll(&mut Vec::new()).unwrap_err();
    assert!(matches!(e, ReadError::Truncated { .. }), "{e}");
}

#[test]
fn random_corruption_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = real_file(dir.path());
    let p = dir.path().join("fuzzed");
    let mut x = 0x1234_5678_9abc_def1u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut opened, mut refused) = (0, 0);
    for _ in 0..3000 {
        let mut b = good.clone();
        for _ in 0..1 + rnd() % 8 {
            // Mostly the header, tables and ring heads; sometimes records.
            let span = if rnd() % 4 == 0 { b.len() } else { 8192 };
            let i = (rnd() as usize) % span;
            b[i] = rnd() as u8;
        }
        if rnd() % 10 == 0 {
            b.truncate((rnd() as usize) % b.len());
        }
        std::fs::write(&p, &b).unwrap();
        match Tailer::open(&p) {
            Ok(mut t) => {
                opened += 1;
                let mut ev = Vec::new();
                for _ in 0..2 {
                    if let Ok(s) = t.poll(&mut ev) {
                        assert!(s.read <= 2 * 64);
                    }
                }
                assert!(ev.len() <= 2 * 64);
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    println!("3000 corrupted files: {opened} opened and polled, {refused} refused");
    assert!(opened > 0 && refused > 0);
}
