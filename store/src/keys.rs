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
//!
//! Stack samples live in the same tree (so a batch, its dictionary entries and the totals go
//! in one atomic sled batch); see `samples` for why:
//!
//! | kind | key                                        | value                              |
//! |------|--------------------------------------------|------------------------------------|
//! | `B`  | `B` start:u64 batch:u64                    | batch metadata (MessagePack)       |
//! | `h`  | `h` start:u64 batch:u64                    | batch table = histogram, and every CPU's samples of the batch |
//! | `b`  | `b` start:u64 cpu:u32 batch:u64            | one CPU's samples of the batch (batches written before they moved into `h`) |
//! | `H`  | `H` hour:u64                               | hour rollup: the hour's batch tables summed |
//! | `d`  | `d` kind:u8 id:u32 (`f` frame, `c` comm, `s` stack, `t` thread) | dictionary entry |
//! | `x`  | `x`                                        | sample totals, lost, id counters   |
//! | `O`  | `O` start:u64 batch:u64                    | off-CPU batch metadata (as `B`)    |
//! | `o`  | `o` start:u64 batch:u64                    | off-CPU batch table and blocks (as `h`) |
//! | `w`  | `w` start:u64 batch:u64                    | off-CPU batch: each sample's wait and 1-in-N |
//!
//! Off-CPU batches (waits, see `samples::off_cpu`) have keys of their own so that nothing
//! reading CPU samples (profiles, hour rollups, cursors) can meet one; they share the
//! dictionary and the totals.
//!
//! Programs' timeline events too (see `timeline`):
//!
//! | kind | key                                        | value                              |
//! |------|--------------------------------------------|------------------------------------|
//! | `E`  | `E` start:u64 batch:u64                    | batch metadata + per-event lag histograms |
//! | `e`  | `e` start:u64 batch:u64                    | the batch's events, bit-packed columns |
//! | `n`  | `n` id:u32                                 | dictionary: a source (pid, start, comm, event defs) |
//! | `y`  | `y`                                        | timeline totals, lost, id counter  |
//!
//! And probe sessions (see `probes`):
//!
//! | kind | key                                        | value                              |
//! |------|--------------------------------------------|------------------------------------|
//! | `P`  | `P` start:u64 id:u64                       | session metadata: all but the calls, functions with histograms (MessagePack) |
//! | `p`  | `p` start:u64 id:u64 chunk:u32             | ≤ 65,536 call records (varint stream, see `probes::codec`) |
//! | `j`  | `j` id:u64                                 | start:u64 BE (lookup by id)        |
//! | `q`  | `q`                                        | probe totals: sessions, calls, bytes, id counter |
//!
//! A session's chunks (`p`) follow each other under its prefix, so reading a session is an
//! index lookup and one prefix scan, while listing sessions (`P`) never touches them.

use crate::RunId;
use crate::encoding::msgpack::{from_msgpack, to_msgpack};

pub const META: u8 = b'm';
pub const CPU: u8 = b'c';
pub const CONN_COUNTS: u8 = b'k';
pub const INDEX: u8 = b'i';
/// The single key holding the running totals.
pub const STATS: &[u8] = b"s";
pub const BATCH: u8 = b'B';
pub const TABLE: u8 = b'h';
pub const BLOCK: u8 = b'b';
pub const ROLLUP: u8 = b'H';
pub const DICT: u8 = b'd';
pub const DICT_FRAME: u8 = b'f';
pub const DICT_COMM: u8 = b'c';
pub const DICT_STACK: u8 = b's';
pub const DICT_THREAD: u8 = b't';
/// A process's stack vocabulary: `d v ++ pid:u32 ++ local:u32 → stack id`.
pub const DICT_VOCAB: u8 = b'v';
/// Off-CPU batches: metadata, table (with the blocks), waits.
pub const OFF_BATCH: u8 = b'O';
pub const OFF_TABLE: u8 = b'o';
pub const OFF_WAITS: u8 = b'w';
/// The single key holding the sample totals.
pub const SAMPLE_TOTALS: &[u8] = b"x";

pub const TL_BATCH: u8 = b'E';
pub const TL_BLOCK: u8 = b'e';
pub const TL_DICT: u8 = b'n';
/// The single key holding the timeline totals.
pub const TL_TOTALS: &[u8] = b"y";

pub const PROBE_META: u8 = b'P';
pub const PROBE_CALLS: u8 = b'p';
pub const PROBE_INDEX: u8 = b'j';
/// The single key holding the probe totals.
pub const PROBE_TOTALS: &[u8] = b"q";

/// `P ++ start ++ id`: a probe session's metadata; with `p`, the prefix of its call chunks.
pub fn probe_key(kind: u8, start_unix_ns: u64, id: u64) -> [u8; 17] {
    run_key(kind, start_unix_ns, RunId(id))
}

/// `p ++ start ++ id ++ chunk`: one chunk of a probe session's calls.
pub fn probe_calls_key(start_unix_ns: u64, id: u64, chunk: u32) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[..17].copy_from_slice(&probe_key(PROBE_CALLS, start_unix_ns, id));
    k[17..].copy_from_slice(&chunk.to_be_bytes());
    k
}

/// Splits a `p` key into `(start, id, chunk)`.
pub fn parse_probe_calls_key(key: &[u8]) -> Option<(u64, u64, u32)> {
    if key.len() != 21 || key[0] != PROBE_CALLS {
        return None;
    }
    Some((decode_u64(&key[1..9])?, decode_u64(&key[9..17])?, u32::from_be_bytes(key[17..21].try_into().ok()?)))
}

/// `j ++ id`: where a probe session is (its start).
pub fn probe_index_key(id: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = PROBE_INDEX;
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

/// Running totals of the probe records, kept under [`PROBE_TOTALS`] and updated in the same
/// batch as every probe session write and delete.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeTotals {
    pub sessions: u64,
    /// Call records of the stored sessions.
    pub calls: u64,
    /// Bytes of `P`, `p` and `j` records.
    pub bytes: u64,
    /// The last session id handed out (ids start at 1 and are never reused).
    pub last_id: u64,
}

impl ProbeTotals {
    pub fn encode(&self) -> Vec<u8> {
        to_msgpack(self)
    }

    pub fn decode(v: &[u8]) -> Option<ProbeTotals> {
        from_msgpack(v).ok()
    }
}

/// `n ++ id`: a timeline dictionary entry (a source).
pub fn tl_dict_key(id: u32) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[0] = TL_DICT;
    k[1..].copy_from_slice(&id.to_be_bytes());
    k
}

/// Splits a timeline dictionary key into its id.
pub fn parse_tl_dict_key(key: &[u8]) -> Option<u32> {
    if key.len() != 5 || key[0] != TL_DICT {
        return None;
    }
    Some(u32::from_be_bytes(key[1..5].try_into().ok()?))
}

/// Running totals of the timeline records, kept under [`TL_TOTALS`] and updated in the same
/// batch as every timeline write, delete and dictionary sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimelineTotals {
    pub batches: u64,
    pub events: u64,
    /// Bytes of `E` and `e` records.
    pub batch_bytes: u64,
    /// Bytes of `n` records.
    pub dict_bytes: u64,
    pub sources: u64,
    pub next_source: u64,
    /// The longest batch span seen (how far before a query's start a batch may begin).
    pub max_span_ns: u64,
    /// Events lost (overwritten before read), summed over the retained batches.
    pub lost: u64,
    /// Batches deleted since the last dictionary sweep.
    pub deleted_since_gc: u64,
}

impl TimelineTotals {
    pub fn encode(&self) -> Vec<u8> {
        to_msgpack(self)
    }

    pub fn decode(v: &[u8]) -> Option<TimelineTotals> {
        from_msgpack(v).ok()
    }
}

/// `kind ++ start ++ batch`: a batch's metadata (`B`) or table (`h`).
pub fn batch_key(kind: u8, start_unix_ns: u64, batch: u64) -> [u8; 17] {
    run_key(kind, start_unix_ns, RunId(batch))
}

/// `kind ++ start`: inclusive lower / exclusive upper bound of a time scan over `B` or `h`.
pub fn batch_bound(kind: u8, start_unix_ns: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = kind;
    k[1..].copy_from_slice(&start_unix_ns.to_be_bytes());
    k
}

/// Splits a `B` or `h` key into `(start, batch)`.
pub fn parse_batch_key(key: &[u8]) -> Option<(u64, u64)> {
    if key.len() != 17 {
        return None;
    }
    Some((decode_u64(&key[1..9])?, decode_u64(&key[9..17])?))
}

/// `H ++ hour`: the rollup of the sample batches whose start lies in the hour beginning at
/// `hour_unix_ns`.
pub fn rollup_key(hour_unix_ns: u64) -> [u8; 9] {
    batch_bound(ROLLUP, hour_unix_ns)
}

/// The hour of a rollup key.
pub fn parse_rollup_key(key: &[u8]) -> Option<u64> {
    if key.len() != 9 || key[0] != ROLLUP {
        return None;
    }
    decode_u64(&key[1..9])
}

pub fn block_key(start_unix_ns: u64, cpu: u32, batch: u64) -> [u8; 21] {
    let mut k = [0u8; 21];
    k[0] = BLOCK;
    k[1..9].copy_from_slice(&start_unix_ns.to_be_bytes());
    k[9..13].copy_from_slice(&cpu.to_be_bytes());
    k[13..21].copy_from_slice(&batch.to_be_bytes());
    k
}

/// Splits a block key into `(start, cpu, batch)`.
pub fn parse_block_key(key: &[u8]) -> Option<(u64, u32, u64)> {
    if key.len() != 21 || key[0] != BLOCK {
        return None;
    }
    Some((decode_u64(&key[1..9])?, u32::from_be_bytes(key[9..13].try_into().ok()?), decode_u64(&key[13..21])?))
}

pub fn dict_key(kind: u8, id: u32) -> [u8; 6] {
    let mut k = [0u8; 6];
    k[0] = DICT;
    k[1] = kind;
    k[2..].copy_from_slice(&id.to_be_bytes());
    k
}

/// Splits a dictionary key into `(kind, id)`.
pub fn parse_dict_key(key: &[u8]) -> Option<(u8, u32)> {
    if key.len() != 6 || key[0] != DICT {
        return None;
    }
    Some((key[1], u32::from_be_bytes(key[2..6].try_into().ok()?)))
}

/// `d v ++ pid ++ local`: the key of the `local`-th stack of process `pid`'s vocabulary.
pub fn vocab_key(pid: u32, local: u32) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[0] = DICT;
    k[1] = DICT_VOCAB;
    k[2..6].copy_from_slice(&pid.to_be_bytes());
    k[6..].copy_from_slice(&local.to_be_bytes());
    k
}

/// Splits a vocabulary key into `(pid, local)`.
pub fn parse_vocab_key(key: &[u8]) -> Option<(u32, u32)> {
    if key.len() != 10 || key[0] != DICT || key[1] != DICT_VOCAB {
        return None;
    }
    Some((u32::from_be_bytes(key[2..6].try_into().ok()?), u32::from_be_bytes(key[6..10].try_into().ok()?)))
}

/// Running totals of the sample records, kept under [`SAMPLE_TOTALS`] and updated in the same
/// batch as every sample write and delete. Also holds the dictionary id counters (ids are
/// never reused) and the longest batch span seen (how far before a query's start a batch that
/// overlaps it may begin).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SampleTotals {
    pub batches: u64,
    pub samples: u64,
    /// Bytes of `B`, `h` and `b` records.
    pub batch_bytes: u64,
    /// Bytes of `d` records.
    pub dict_bytes: u64,
    pub stacks: u64,
    pub frames: u64,
    pub comms: u64,
    pub next_stack: u64,
    pub next_frame: u64,
    pub next_comm: u64,
    pub max_span_ns: u64,
    /// Batches deleted since the last dictionary sweep.
    pub deleted_since_gc: u64,
    pub threads: u64,
    pub next_thread: u64,
    /// Samples the kernel dropped, summed over the retained batches: added when a batch is
    /// stored, subtracted when retention deletes it. `None` only in a record written before
    /// this field existed (a 14-element array); `Store::open` recomputes it from the batch
    /// records then.
    #[serde(default)]
    pub lost: Option<u64>,
    /// Bytes of `H` records (hour rollups). Absent (0) in a record written before rollups
    /// existed, when there were none.
    #[serde(default)]
    pub rollup_bytes: u64,
    /// Records of the per-process stack vocabularies (`d v`). Absent (0) in a record written
    /// before vocabularies existed, when there were none.
    #[serde(default)]
    pub vocab: u64,
}

impl SampleTotals {
    pub fn encode(&self) -> Vec<u8> {
        to_msgpack(self)
    }

    pub fn decode(v: &[u8]) -> Option<SampleTotals> {
        from_msgpack(v).ok()
    }
}

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
    fn sample_keys_sort_by_time_and_parse() {
        let a = block_key(5, 300, 9);
        let b = block_key(6, 0, 1);
        assert!(a < b);
        assert_eq!(parse_block_key(&a), Some((5, 300, 9)));
        assert!(batch_bound(BATCH, 6).as_slice() <= batch_key(BATCH, 6, 0).as_slice());
        assert!(batch_bound(BATCH, 7).as_slice() > batch_key(BATCH, 6, u64::MAX).as_slice());
        assert_eq!(parse_batch_key(&batch_key(TABLE, 8, 3)), Some((8, 3)));
        assert_eq!(parse_dict_key(&dict_key(DICT_STACK, 70000)), Some((DICT_STACK, 70000)));
        assert_eq!(parse_vocab_key(&vocab_key(4242, 70000)), Some((4242, 70000)));
        assert_eq!(parse_vocab_key(&dict_key(DICT_VOCAB, 7)), None);
        assert_eq!(parse_dict_key(&vocab_key(1, 2)), None);
        let t = SampleTotals { batches: 1, next_stack: u64::MAX, lost: Some(7), ..Default::default() };
        assert_eq!(SampleTotals::decode(&t.encode()), Some(t));
        // A record written before `lost` existed: the same array, one element shorter.
        let old = rmp_serde::to_vec(&(
            1u64, 2u64, 3u64, 4u64, 5u64, 6u64, 7u64, 8u64, 9u64, 10u64, 11u64, 12u64, 13u64, 14u64,
        ))
        .unwrap();
        let t = SampleTotals::decode(&old).unwrap();
        assert_eq!((t.batches, t.next_thread, t.lost), (1, 14, None));
    }

    #[test]
    fn probe_keys_sort_by_time_then_id_then_chunk_and_parse() {
        let a = probe_key(PROBE_META, 5, 9);
        let b = probe_key(PROBE_META, 6, 1);
        assert!(a < b);
        assert_eq!(parse_batch_key(&b), Some((6, 1)));
        let c0 = probe_calls_key(6, 1, 0);
        let c1 = probe_calls_key(6, 1, 256);
        assert!(c0 < c1 && c0.starts_with(&probe_key(PROBE_CALLS, 6, 1)));
        assert_eq!(parse_probe_calls_key(&c1), Some((6, 1, 256)));
        assert_eq!(parse_probe_calls_key(&b), None);
        assert_eq!(probe_index_key(7)[1..], 7u64.to_be_bytes());
        let t = ProbeTotals { sessions: 2, calls: 3, bytes: u64::MAX, last_id: 9 };
        assert_eq!(ProbeTotals::decode(&t.encode()), Some(t));
        assert_eq!(ProbeTotals::decode(&[1, 2]), None);
    }

    #[test]
    fn totals_roundtrip() {
        let t = Totals { runs: 3, stored_bytes: u64::MAX - 1 };
        assert_eq!(Totals::decode(&t.encode()), Some(t));
        assert_eq!(Totals::decode(&[1, 2]), None);
    }
}
