//! Batch metadata (`B` record): a batch's end, samples, lost samples, CPUs and stored bytes,
//! what listing batches and retention read without touching the table.

use serde::{Deserialize, Serialize};

use crate::encoding::msgpack::{from_msgpack, to_msgpack};
use crate::samples::MAX_BATCH_SAMPLES;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchRow {
    pub end: u64,
    pub samples: u64,
    pub lost: u64,
    pub cpus: Vec<u32>,
    pub stored_bytes: u64,
}

/// A `B` record as written: the CPUs as ascending runs `(first, count)` in `cpu_runs`, with
/// `cpus` left empty; batches written before list every CPU in `cpus` and have no runs.
/// Measured on the benchmark's day: 96 CPUs listed took ~99 of a record's ~120 bytes (0.08
/// bits a sample); as one run they take 4.
#[derive(Serialize, Deserialize)]
struct BatchRecord {
    end: u64,
    samples: u64,
    lost: u64,
    cpus: Vec<u32>,
    stored_bytes: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    cpu_runs: Vec<(u32, u32)>,
}

/// Writes the CPUs as runs when the runs say them (ascending, no more than the samples: what
/// a batch written by the store has), as the plain list otherwise, so that whatever
/// [`decode_batch`] accepted writes back to the same row.
pub fn encode_batch(row: &BatchRow) -> Vec<u8> {
    let mut cpu_runs: Vec<(u32, u32)> = Vec::new();
    for &cpu in &row.cpus {
        match cpu_runs.last_mut() {
            Some((first, count)) if first.checked_add(*count) == Some(cpu) => *count += 1,
            _ => cpu_runs.push((cpu, 1)),
        }
    }
    let ascending = row.cpus.windows(2).all(|w| w[0] < w[1]);
    let fits = row.cpus.len() as u64 <= row.samples.min(MAX_BATCH_SAMPLES as u64);
    if !(ascending && fits) {
        cpu_runs.clear();
    }
    let cpus = if cpu_runs.is_empty() { row.cpus.clone() } else { Vec::new() };
    to_msgpack(&BatchRecord {
        end: row.end,
        samples: row.samples,
        lost: row.lost,
        cpus,
        stored_bytes: row.stored_bytes,
        cpu_runs,
    })
}

/// Decodes a `B` record of either form. Runs must ascend, and list no more
/// CPUs than the batch has samples (each listed CPU has a block of one at least): a hostile
/// count cannot make the reader allocate beyond what a batch may hold.
pub fn decode_batch(bytes: &[u8]) -> Result<BatchRow, String> {
    let r: BatchRecord = from_msgpack(bytes)?;
    let mut cpus = r.cpus;
    if !r.cpu_runs.is_empty() {
        if !cpus.is_empty() {
            return Err("batch lists its CPUs twice, as a list and as runs".into());
        }
        let total = r.cpu_runs.iter().try_fold(0u64, |acc, &(_, count)| acc.checked_add(u64::from(count)));
        let limit = r.samples.min(MAX_BATCH_SAMPLES as u64);
        match total {
            Some(total) if total <= limit => cpus.reserve_exact(total as usize),
            _ => return Err(format!("batch's CPU runs list more CPUs than its {} samples", r.samples)),
        }
        for (first, count) in r.cpu_runs {
            let last = count.checked_sub(1).and_then(|more| first.checked_add(more));
            let ascends = cpus.last().is_none_or(|&prev| first > prev);
            let Some(last) = last.filter(|_| count > 0 && ascends) else {
                return Err(format!(
                    "batch's CPU run ({first}, {count}) is empty, overflows or does not follow the one before"
                ));
            };
            cpus.extend(first..=last);
        }
    }
    Ok(BatchRow { end: r.end, samples: r.samples, lost: r.lost, cpus, stored_bytes: r.stored_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch's metadata lists its CPUs as runs: 96 CPUs in a few bytes; metadata written
    /// before (a plain list) still reads; runs that do not ascend, are empty, overflow, list
    /// more CPUs than the batch has samples or come beside a list are errors.
    #[test]
    fn batch_metadata_lists_cpus_as_runs() {
        let row = |cpus: Vec<u32>| BatchRow { end: 9, samples: 9_600, lost: 1, cpus, stored_bytes: 77 };
        for cpus in [(0..96).collect(), vec![0, 1, 3, 5, 6, 7], vec![], vec![u32::MAX - 1, u32::MAX], vec![4]] {
            let bytes = encode_batch(&row(cpus.clone()));
            assert_eq!(decode_batch(&bytes).unwrap().cpus, cpus);
        }
        let all = encode_batch(&row((0..96).collect()));
        assert!(all.len() < 24, "{} bytes", all.len());
        // Rows the runs cannot say (a list read from a hostile record) are written as a list.
        for (samples, cpus) in [(9_600, vec![5, 3]), (9_600, vec![2, 2]), (1, vec![0, 1])] {
            let odd = BatchRow { samples, cpus, ..row(vec![]) };
            assert_eq!(decode_batch(&encode_batch(&odd)).unwrap().cpus, odd.cpus);
        }
        let record = |cpus: Vec<u32>, cpu_runs: Vec<(u32, u32)>| {
            to_msgpack(&BatchRecord { end: 9, samples: 9_600, lost: 1, cpus, stored_bytes: 77, cpu_runs })
        };
        // Written before: no runs.
        assert_eq!(decode_batch(&record((0..96).collect(), vec![])).unwrap().cpus, (0..96).collect::<Vec<_>>());
        for (cpus, runs, want) in [
            (vec![], vec![(0, 0)], "is empty"),
            (vec![], vec![(5, 2), (3, 1)], "does not follow"),
            (vec![], vec![(5, 2), (6, 1)], "does not follow"),
            (vec![], vec![(u32::MAX, 2)], "overflows"),
            (vec![], vec![(0, u32::MAX)], "more CPUs than"),
            (vec![], vec![(0, 9_000), (10_000, 700)], "more CPUs than"),
            (vec![1], vec![(0, 1)], "twice"),
        ] {
            let err = decode_batch(&record(cpus, runs.clone())).unwrap_err();
            assert!(err.contains(want), "{runs:?}: {err}");
        }
    }
}
