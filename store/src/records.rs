//! Turning a validated run into the key/value records it is stored as.
//!
//! *Why apart from the run API:* building the records is pure (no sled, no locks), and it is
//! where `stored_bytes` is computed — the number retention and [`crate::Store::stats`] add up
//! without scanning — so it is worth reading on its own. A run becomes one `c` row per CPU
//! ([`crate::codec`]), an optional `k` record, its `i` index entry and its `m` metadata, whose
//! `stored_bytes` counts every one of these records, itself included.

use crate::{NewRun, RunId, RunMeta, codec, keys};

/// The records of one run, ready to be written.
pub(crate) struct Records {
    pub(crate) meta: RunMeta,
    pub(crate) writes: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Encodes every record of a run and computes its `stored_bytes`.
pub(crate) fn build_records(mut run: NewRun, id: RunId) -> Records {
    run.per_cpu.sort_by_key(|c| c.cpu);
    let start = run.start_unix_ns;
    let mut writes: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(run.per_cpu.len() + 3);
    for cols in &run.per_cpu {
        writes.push((keys::cpu_key(start, id, cols.cpu).to_vec(), codec::encode_cpu(cols)));
    }
    if let Some(c) = &run.conn_counts {
        writes.push((keys::conn_counts_key(start, id).to_vec(), codec::encode_conn_counts(c)));
    }
    writes.push((keys::index_key(id).to_vec(), start.to_be_bytes().to_vec()));
    let others: u64 = writes.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();

    let mut meta = RunMeta {
        id,
        iface: run.iface,
        host: run.host,
        rack: run.rack,
        start_unix_ns: start,
        interval_ns: run.interval_ns,
        samples: run.samples,
        cpus: run.per_cpu.iter().map(|c| c.cpu).collect(),
        local_prefixes: run.local_prefixes,
        source: run.source,
        stored_bytes: 0,
        clock: run.clock,
    };
    let meta_key = keys::meta_key(start, id);
    let (stored_bytes, meta_value) = crate::encoding::self_counting_record(others, meta_key.len(), |bytes| {
        meta.stored_bytes = bytes;
        codec::encode_meta(&meta)
    });
    meta.stored_bytes = stored_bytes;
    writes.push((meta_key.to_vec(), meta_value));
    Records { meta, writes }
}
