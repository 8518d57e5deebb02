//! The log of one invocation: what the analysis logged (`data.log`, its stdout and stderr) and
//! what the host adds, under a byte cap (the sandbox's `Limits::log_bytes`).

use serde::Serialize;

use super::bindings::Level;
use loupe_api::model::LogLine;

/// The log of one invocation, capped at the sandbox's `Limits::log_bytes`.
#[derive(Debug, Default, Serialize)]
pub struct InvocationLog {
    pub lines: Vec<LogLine>,
    /// Lines dropped because the cap was reached.
    pub dropped: u64,
    #[serde(skip)]
    bytes: usize,
    #[serde(skip)]
    cap: usize,
}

impl InvocationLog {
    pub fn new(cap: usize) -> Self {
        InvocationLog { cap, ..Default::default() }
    }

    pub fn push(&mut self, level: Level, message: String) {
        let level = match level {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        };
        self.push_str(level, message);
    }

    pub fn push_str(&mut self, level: &'static str, message: String) {
        self.push_line(LogLine { level: level.to_string(), message });
    }

    /// A line (of this invocation, or of a merge step's own log) under this log's cap.
    pub fn push_line(&mut self, line: LogLine) {
        let LogLine { level, mut message } = line;
        if self.bytes >= self.cap {
            self.dropped += 1;
            return;
        }
        let room = self.cap - self.bytes;
        if message.len() > room {
            let mut cut = room;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        self.bytes += message.len();
        self.lines.push(LogLine { level, message });
    }
}
