//! The C ABI (`include/loupe_timeline.h`). Thin wrappers over [`crate::writer`]; errors are
//! reported by return value (a 0 handle) plus a per-thread code and message
//! ([`loupe_tl_last_error`], [`loupe_tl_last_error_message`]).

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};

use crate::writer::{self, DefineError, Event};

thread_local! {
    static LAST_ERROR: RefCell<(c_int, CString)> = RefCell::new((0, CString::default()));
}

fn set_error(code: c_int, msg: &str) {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = (code, writer::c_string(msg)));
}

/// # Safety
/// `p` is null or a NUL-terminated string valid for the call.
unsafe fn str_arg<'a>(p: *const c_char) -> Result<Option<&'a str>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a NUL-terminated string (the header says so).
    unsafe { CStr::from_ptr(p) }.to_str().map(Some).map_err(|_| ())
}

/// Defines an event; returns its handle, or 0 (logging 0 is a no-op) and sets the last error.
///
/// # Safety
/// `name` and `arg_names` are null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn loupe_tl_define(
    name: *const c_char,
    level: c_int,
    rate: c_int,
    arg_names: *const c_char,
) -> u32 {
    // SAFETY: forwarded caller contract.
    let name = match unsafe { str_arg(name) } {
        Ok(Some(n)) => n,
        _ => {
            set_error(DefineError::BadName(String::new()).code(), "event name is null or not UTF-8");
            return 0;
        }
    };
    // SAFETY: forwarded caller contract.
    let args = match unsafe { str_arg(arg_names) } {
        Ok(a) => a.unwrap_or(""),
        Err(()) => {
            set_error(DefineError::BadArgs(vec![]).code(), "argument names are not UTF-8");
            return 0;
        }
    };
    let args: Vec<&str> = if args.trim().is_empty() { vec![] } else { args.split(',').map(str::trim).collect() };
    let res = if !(0..=9).contains(&level) {
        Err(DefineError::BadLevel(level as u32))
    } else if !(0..=9).contains(&rate) {
        Err(DefineError::BadRate(rate as u32))
    } else {
        writer::define(name, level as u8, rate as u8, &args)
    };
    match res {
        Ok(e) => {
            set_error(0, "");
            e.raw()
        }
        Err(e) => {
            set_error(e.code(), &e.to_string());
            0
        }
    }
}

/// Rolls this thread's rate threshold; once per iteration of the main loop.
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_breath() {
    writer::breath()
}

/// Logs `event` if its rate passes; returns its timestamp (file clock) or 0 if not logged.
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_log(event: u32, a0: u64, a1: u64, a2: u64, a3: u64) -> u64 {
    writer::log(Event::from_raw(event), a0, a1, a2, a3)
}

/// This thread's rate threshold, for the header's inline skip: a pointer valid for the
/// calling thread's life, to be read only by that thread.
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_threshold_ptr() -> *const u8 {
    writer::threshold_ptr()
}

/// The file clock now (TSC ticks, or CLOCK_MONOTONIC ns when the TSC is not usable).
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_now() -> u64 {
    writer::now()
}

/// Whether the file clock is the TSC (1) or CLOCK_MONOTONIC nanoseconds (0).
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_clock_is_tsc() -> c_int {
    crate::clock::tsc_usable() as c_int
}

/// Takes a fresh clock calibration sample into the file header.
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_sync_clock() {
    writer::sync_clock()
}

/// This thread's last error code (0: the last call succeeded; see LOUPE_TL_E* in the header).
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_last_error() -> c_int {
    LAST_ERROR.try_with(|e| e.borrow().0).unwrap_or(0)
}

/// This thread's last error message ("" if none); valid until this thread's next call.
#[unsafe(no_mangle)]
pub extern "C" fn loupe_tl_last_error_message() -> *const c_char {
    static EMPTY: &CStr = c"";
    LAST_ERROR.try_with(|e| e.borrow().1.as_ptr()).unwrap_or(EMPTY.as_ptr())
}

/// Copies the ring file's path (NUL-terminated, truncated to `len`) into `buf`; returns the
/// path's length, or 0 if there is no file yet.
///
/// # Safety
/// `buf` is null or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn loupe_tl_file_path(buf: *mut c_char, len: usize) -> usize {
    let Some(p) = writer::file_path() else { return 0 };
    let s = p.to_string_lossy();
    let bytes = s.as_bytes();
    if !buf.is_null() && len > 0 {
        let n = bytes.len().min(len - 1);
        // SAFETY: `buf` holds `len` bytes (caller); we write n + 1 ≤ len of them.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, n);
            *buf.add(n) = 0;
        }
    }
    bytes.len()
}
