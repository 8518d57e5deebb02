//! Key layout of the `runs` tree.
//!
//! Every key starts with a one-byte record kind, followed by big-endian integers, so that
//! sled's lexicographic order is numeric order and a range scan over `m` keys walks runs in
//! start-time order (ties broken by id):
//!
//! | kind | key                                        | value                              |
//! |------|--------------------------------------------|------------------------------------|
//! | `m`  | `m` start:u64 id:u64                       | `RunMeta` (MessagePack)            |
//! | `c`  | `c` start:u64 id:u64 cpu:u32               | encoded `CpuColumns` (MessagePack) |
//! | `k`  | `k` start:u64 id:u64                       | encoded `ConnCounts` (MessagePack) |
//! | `i`  | `i` id:u64                                 | start:u64 BE (lookup by id)        |
//! | `s`  | `s`                                        | runs:u64 BE, stored_bytes:u64 BE   |
//!
//! The column rows of a run (`c`) are contiguous and ordered by CPU, so reading a run is one
//! short prefix scan, while listing runs (`m`) never touches them.

use crate::RunId;

pub const META: u8 = b'm';
pub const CPU: u8 = b'c';
pub const CONN_COUNTS: u8 = b'k';
pub const INDEX: u8 = b'i';
/// The single key holding the running totals.
pub const STATS: &[u8] = b"s";

/// `kind ++ start ++ id`: the key of a run's meta (`m`) or conn counts (`k`), and the
/// prefix of its CPU rows (`c`).
pub fn run_key(kind: u8, start_unix_ns: u64, id: RunId) -> [u8; 17] {
    let mut k = [0u8; 17];
    k[0] = kind;
    k[1..9].copy_from_slice(&start_unix_ns.to_be_bytes());
    k[9..17].copy_from_slice(&id.0.to_be_bytes());
    k
}

pub fn meta_key(start_unix_ns: u64, id: RunId) -> [u8; 17] {
    run_key(META, start_unix_ns, id)
}

pub fn conn_counts_key(start_unix_ns: u64, id: RunId) -> [u8; 17] {
    run_key(CONN_COUNTS, start_unix_ns, id)
}

/// Prefix shared by all CPU rows of one run.
pub fn cpu_prefix(start_unix_ns: u64, id: RunId) -> [u8; 17] {
    run_key(CPU, start_unix_ns, id)
}

pub fn cpu_key(start_unix_ns: u64, id: RunId, cpu: u32) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[..17].copy_from_slice(&cpu_prefix(start_unix_ns, id));
    k[17..].copy_from_slice(&cpu.to_be_bytes());
    k
}

pub fn index_key(id: RunId) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = INDEX;
    k[1..].copy_from_slice(&id.0.to_be_bytes());
    k
}

/// The first meta key at or after `start_unix_ns` (inclusive lower bound of a time scan,
/// exclusive upper bound when used as the end of `[from, to)`).
pub fn meta_bound(start_unix_ns: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = META;
    k[1..].copy_from_slice(&start_unix_ns.to_be_bytes());
    k
}

/// Splits a meta key into `(start, id)`.
pub fn parse_meta_key(key: &[u8]) -> Option<(u64, RunId)> {
    if key.len() != 17 || key[0] != META {
        return None;
    }
    let start = u64::from_be_bytes(key[1..9].try_into().ok()?);
    let id = u64::from_be_bytes(key[9..17].try_into().ok()?);
    Some((start, RunId(id)))
}

/// The CPU number at the end of a CPU-row key.
pub fn parse_cpu_key(key: &[u8]) -> Option<u32> {
    if key.len() != 21 || key[0] != CPU {
        return None;
    }
    Some(u32::from_be_bytes(key[17..21].try_into().ok()?))
}

pub fn decode_u64(v: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(v.try_into().ok()?))
}

/// Running totals kept under [`STATS`], updated in the same batch as every put and delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub runs: u64,
    pub stored_bytes: u64,
}

impl Totals {
    pub fn encode(self) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&self.runs.to_be_bytes());
        v[8..].copy_from_slice(&self.stored_bytes.to_be_bytes());
        v
    }

    pub fn decode(v: &[u8]) -> Option<Totals> {
        if v.len() != 16 {
            return None;
        }
        Some(Totals { runs: decode_u64(&v[..8])?, stored_bytes: decode_u64(&v[8..])? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_keys_sort_by_time_then_id() {
        let a = meta_key(5, RunId(9));
        let b = meta_key(6, RunId(1));
        let c = meta_key(6, RunId(2));
        let d = meta_key(256, RunId(0));
        assert!(a < b && b < c && c < d);
        assert!(meta_bound(6).as_slice() <= b.as_slice());
        assert!(meta_bound(7).as_slice() > c.as_slice());
        assert_eq!(parse_meta_key(&c), Some((6, RunId(2))));
    }

    #[test]
    fn cpu_keys_sort_by_cpu_under_run_prefix() {
        let k1 = cpu_key(10, RunId(3), 1);
        let k2 = cpu_key(10, RunId(3), 256);
        assert!(k1 < k2);
        assert!(k1.starts_with(&cpu_prefix(10, RunId(3))));
        assert_eq!(parse_cpu_key(&k2), Some(256));
    }

    #[test]
    fn totals_roundtrip() {
        let t = Totals { runs: 3, stored_bytes: u64::MAX - 1 };
        assert_eq!(Totals::decode(&t.encode()), Some(t));
        assert_eq!(Totals::decode(&[1, 2]), None);
    }
}
