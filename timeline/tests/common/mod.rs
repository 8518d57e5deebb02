//! Shared by the integration tests: spawn the test writer as a real process, read its lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use loupe_timeline::reader::{Event, PollStats, Tailer};

pub struct Writer {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub out: BufReader<ChildStdout>,
    pub path: PathBuf,
}

pub fn writer(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Writer {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_loupe-tl-testwriter"));
    cmd.env("LOUPE_TIMELINE_DIR", dir).args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn test writer");
    let stdin = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let line = read_line(&mut out).expect("path line");
    let path = PathBuf::from(line.strip_prefix("path ").expect("path line"));
    Writer { child, stdin, out, path }
}

pub fn read_line(r: &mut impl BufRead) -> Option<String> {
    let mut s = String::new();
    match r.read_line(&mut s) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(s.trim_end().to_string()),
    }
}

impl Writer {
    pub fn line(&mut self) -> Option<String> {
        read_line(&mut self.out)
    }
    pub fn ack(&mut self) {
        let s = self.stdin.as_mut().expect("stdin");
        s.write_all(b"\n").expect("ack");
        s.flush().expect("flush");
    }
    pub fn wait_ok(mut self) {
        drop(self.stdin.take());
        let st = self.child.wait().expect("wait");
        assert!(st.success(), "test writer failed: {st}");
    }
}

/// Polls until nothing more comes.
pub fn drain(t: &mut Tailer, out: &mut Vec<Event>) -> PollStats {
    let mut total = PollStats::default();
    loop {
        let s = t.poll(out).expect("poll");
        total.read += s.read;
        total.lost += s.lost;
        total.corrupt += s.corrupt;
        total.no_ring_drops = s.no_ring_drops;
        if s.read == 0 && s.lost == 0 && !s.more {
            return total;
        }
    }
}
