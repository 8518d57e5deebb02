//! The ring file's byte layout, shared by the writer and the reader (version 1).
//!
//! Everything is little-endian and naturally aligned; offsets are from the start of the file.
//! `docs/timeline.md` has the same tables. The writer lays the file out once, at creation, and
//! never resizes it; the reader trusts none of it (see `reader`).
//!
//! ```text
//! 0                    header (HEADER_SIZE bytes, one page)
//! event_table_off      max_events × EVENT_ENTRY_SIZE   event definitions (id = index)
//! ring_table_off       max_rings  × RING_ENTRY_SIZE    one 64-byte line per ring: head, owner
//! rings_off            max_rings  × ring_records × RECORD_SIZE   the rings
//! ```

/// First 8 bytes of every ring file.
pub const MAGIC: [u8; 8] = *b"LOUPETL\0";
/// The only format version this crate writes and reads.
pub const VERSION: u32 = 1;
/// The header is one page.
pub const HEADER_SIZE: usize = 4096;
/// Bytes of one event definition.
pub const EVENT_ENTRY_SIZE: usize = 128;
/// Bytes of one ring-table entry (a cache line, so threads' heads never share one).
pub const RING_ENTRY_SIZE: usize = 64;
/// Bytes of one record: six little-endian `u64` words.
pub const RECORD_SIZE: usize = 48;
/// Words of one record.
pub const RECORD_WORDS: usize = RECORD_SIZE / 8;

/// Longest event name, in bytes (UTF-8, NUL-padded in the table).
pub const MAX_NAME: usize = 48;
/// Longest argument name, in bytes.
pub const MAX_ARG_NAME: usize = 16;
/// Arguments per event.
pub const MAX_ARGS: usize = 4;
/// Levels are 0..=MAX_LEVEL.
pub const MAX_LEVEL: u8 = 9;
/// Rates are 0..=MAX_RATE.
pub const MAX_RATE: u8 = 9;

/// Limits the reader enforces before it believes a header (and the writer never exceeds).
pub const LIMIT_EVENTS: u32 = 4096;
pub const LIMIT_RINGS: u32 = 1024;
pub const LIMIT_RING_RECORDS: u32 = 1 << 22;
pub const MIN_RING_RECORDS: u32 = 64;

/// Defaults of the writer (overridable by environment, see `writer`).
pub const DEFAULT_EVENTS: u32 = 1024;
pub const DEFAULT_RINGS: u32 = 64;
pub const DEFAULT_RING_RECORDS: u32 = 8192;

/// Header field offsets.
pub mod hdr {
    pub const MAGIC: usize = 0; // [u8; 8]
    pub const VERSION: usize = 8; // u32
    pub const HEADER_SIZE: usize = 12; // u32
    pub const FILE_SIZE: usize = 16; // u64
    pub const PID: usize = 24; // u32
    pub const CLOCK: usize = 28; // u32: 1 = TSC ticks, 2 = CLOCK_MONOTONIC ns
    pub const PROC_START: usize = 32; // u64: /proc/<pid>/stat field 22 (clock ticks after boot)
    pub const COMM: usize = 40; // [u8; 16], NUL-padded
    pub const BOOT_ID: usize = 56; // [u8; 16]: /proc/sys/kernel/random/boot_id as bytes
    pub const EVENT_TABLE_OFF: usize = 72; // u32
    pub const MAX_EVENTS: usize = 76; // u32
    pub const RING_TABLE_OFF: usize = 80; // u32
    pub const MAX_RINGS: usize = 84; // u32
    pub const RINGS_OFF: usize = 88; // u64
    pub const RING_RECORDS: usize = 96; // u32, a power of two
    pub const RECORD_SIZE: usize = 100; // u32 (48)
    pub const EVENT_COUNT: usize = 104; // u32, atomic: definitions published (release)
    pub const NO_RING_DROPS: usize = 112; // u64, atomic: events dropped, no free ring
    pub const CAL_START: usize = 128; // 4 × u64: tsc, mono ns, real ns, 0
    pub const CAL_LATEST: usize = 160; // 4 × u64: seq (even = stable), tsc, mono ns, real ns
}

/// Event definition field offsets (within one entry).
pub mod ev {
    pub const NAME: usize = 0; // [u8; 48]
    pub const ARG_NAMES: usize = 48; // 4 × [u8; 16]
    pub const LEVEL: usize = 112; // u8
    pub const RATE: usize = 113; // u8
    pub const NARGS: usize = 114; // u8
}

/// Ring-table entry field offsets.
pub mod ring {
    pub const HEAD: usize = 0; // u64, atomic: records ever written to this ring (release)
    pub const STATE: usize = 8; // u32, atomic: 0 free, 1 owned by a thread
    pub const TID: usize = 12; // u32: the current (or last) owner
    pub const CLAIMS: usize = 16; // u32: how many threads have owned it
}

/// Clock source codes (header `CLOCK`).
pub const CLOCK_TSC: u32 = 1;
pub const CLOCK_MONOTONIC: u32 = 2;

/// Record word 1: event id (bits 0–15), CPU (16–31), thread id (32–63).
#[inline(always)]
pub const fn pack_meta(id: u16, cpu: u16, tid: u32) -> u64 {
    id as u64 | (cpu as u64) << 16 | (tid as u64) << 32
}

/// Inverse of [`pack_meta`].
#[inline]
pub const fn unpack_meta(w: u64) -> (u16, u16, u32) {
    (w as u16, (w >> 16) as u16, (w >> 32) as u32)
}

/// The file's layout for given capacities: (event_table_off, ring_table_off, rings_off, size).
/// `None` if it overflows (the writer's inputs are bounded, the reader's are not).
pub fn layout(max_events: u32, max_rings: u32, ring_records: u32) -> Option<(u64, u64, u64, u64)> {
    let ev_off = HEADER_SIZE as u64;
    let ring_tab = ev_off.checked_add((max_events as u64).checked_mul(EVENT_ENTRY_SIZE as u64)?)?;
    let rings = round_page(ring_tab.checked_add((max_rings as u64).checked_mul(RING_ENTRY_SIZE as u64)?)?)?;
    let ring_bytes = (ring_records as u64).checked_mul(RECORD_SIZE as u64)?;
    let size = rings.checked_add(ring_bytes.checked_mul(max_rings as u64)?)?;
    Some((ev_off, ring_tab, rings, size))
}

fn round_page(x: u64) -> Option<u64> {
    Some(x.checked_add(4095)? & !4095)
}

/// Probability that an event of `rate` is logged in a given breath: `5^(rate-9)` for rate
/// 1..=9, 0 for rate 0 (see `writer` for the roll).
pub fn rate_probability(rate: u8) -> f64 {
    match rate {
        0 => 0.0,
        r if r <= MAX_RATE => 5f64.powi(r as i32 - 9),
        _ => 0.0,
    }
}
