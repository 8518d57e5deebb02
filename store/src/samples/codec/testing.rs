//! What the codec's tests share: a random source, bit flips, tables, periodic blocks, a
//! vocabulary.

use super::table::{Entry, Part, Table, Vocabulary};

pub(super) fn lcg(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 33
}

/// Calls `f` on `rounds` copies of `bytes`, each with one bit flipped (decoders must not
/// panic on them).
pub(super) fn with_one_bit_flipped(bytes: &[u8], seed: u64, rounds: usize, mut f: impl FnMut(&[u8])) {
    let mut x = seed;
    for _ in 0..rounds {
        let mut b = bytes.to_vec();
        let i = (lcg(&mut x) as usize) % b.len();
        b[i] ^= 1 << (lcg(&mut x) % 8);
        f(&b);
    }
}

/// A table of `n` entries in partitions for CPUs 0, 1 and 5.
pub(super) fn table(n: u32) -> Table {
    let entries: Vec<Entry> = (0..n).map(|i| Entry { thread: i, idle: false, stack: 0 }).collect();
    let a = n / 3;
    let b = n / 3;
    let mut parts = vec![Part { cpu: 0, start: 0, len: a }, Part { cpu: 1, start: a, len: b }];
    parts.push(Part { cpu: 5, start: a + b, len: n - a - b });
    parts.retain(|p| p.len > 0);
    Table { counts: vec![1; n as usize], entries, parts }
}

/// `t` with each entry counted as often as `entries` uses it (once if not at all) plus
/// `more`: the table of a batch of this block alone (`more` = 0), or of one whose other
/// CPUs use the same entries.
pub(super) fn counted(t: &Table, entries: &[u32], more: u64) -> Table {
    let mut counts = vec![0; t.entries.len()];
    for &e in entries {
        counts[e as usize] += 1;
    }
    Table { counts: counts.into_iter().map(|c: u64| c.max(1) + more).collect(), ..t.clone() }
}

/// 100 samples of one CPU at 10 Hz with up to 5 µs of timer latency (nanosecond times),
/// and their entries, all from CPU 1's partition of a 120-entry `table`.
pub(super) fn periodic_block(base: u64, x: &mut u64) -> (Vec<u64>, Vec<u32>) {
    let times = (0..100u64).map(|i| base + 5_000 + i * 100_000_000 + lcg(x) % 5_000).collect();
    let entries = (0..100).map(|_| 40 + (lcg(x) % 40) as u32).collect();
    (times, entries)
}

/// Processes are `thread % 7`; each has its stacks in a list.
pub(super) struct TestVocabulary(pub(super) Vec<Vec<u32>>);

impl Vocabulary for TestVocabulary {
    fn pid_of(&self, thread: u32) -> Option<u32> {
        Some(thread % 7)
    }
    fn stack_named(&self, pid: u32, local: u32) -> Option<u32> {
        self.0.get(pid as usize)?.get(local as usize).copied()
    }
}
