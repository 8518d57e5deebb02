//! Lines for the invocation's log, returned with the result (the host caps how many it keeps).
//!
//! Use the macros, which format like `println!`: `loupe_udf::info!("{n} runs")`. Each line is one
//! host call, so log summaries, not one line per sample.

use crate::bindings::loupe::udf::data as host;
pub use host::Level;

/// Logs one line at `level`.
pub fn log(level: Level, message: &str) {
    host::log(level, message);
}

pub fn debug(message: &str) {
    log(Level::Debug, message);
}

pub fn info(message: &str) {
    log(Level::Info, message);
}

pub fn warn(message: &str) {
    log(Level::Warn, message);
}

pub fn error(message: &str) {
    log(Level::Error, message);
}

/// `log!(Level::Info, "{} runs", n)`: one formatted line for the invocation log.
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)+) => {
        $crate::log::log($level, &::std::format!($($arg)+))
    };
}

/// A debug line for the invocation log, formatted like `println!`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Debug, $($arg)+) };
}

/// An info line for the invocation log, formatted like `println!`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Info, $($arg)+) };
}

/// A warning line for the invocation log, formatted like `println!`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Warn, $($arg)+) };
}

/// An error line for the invocation log, formatted like `println!`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log!($crate::log::Level::Error, $($arg)+) };
}
