//! The dictionary sweep: deleting dictionary entries no stored batch refers to any more.
//!
//! *Why a sweep rather than reference counts:* a reference count per stack would have to be
//! rewritten for every batch that uses the stack (thousands per batch), while entries that
//! outlive their batches only cost bytes until the next sweep. Once the batches deleted since
//! the last sweep reach a third of those left, the writer collects the threads and stacks still
//! referenced by some batch table (off-CPU ones too), the names the processes' vocabularies
//! give them, and the comms and frames those use, and deletes the rest in atomic chunks, each
//! with the totals (see [`super`]).

use crate::keys;
use crate::{Inner, Store, StoreError};

use super::codec;
use super::dict::{FxBuild, NO_STACK};
use super::model::SampleKind;

type FxSet<T> = std::collections::HashSet<T, FxBuild>;

impl Store {
    /// Deletes dictionary entries no stored batch refers to any more; returns how many.
    /// Retention does this by itself from time to time (see the module docs).
    pub fn sweep_sample_dictionary(&self) -> Result<u64, StoreError> {
        let _w = self.inner.lock_writer();
        let n = self.inner.sweep_dictionary()?;
        self.inner.flush("flush dictionary sweep")?;
        Ok(n)
    }
}

impl Inner {
    /// Sweeps when enough batches went since the last sweep (see the module docs).
    pub(crate) fn maybe_sweep_dictionary(&self) -> Result<(), StoreError> {
        let t = self.sample_totals()?;
        if t.deleted_since_gc > 0 && t.deleted_since_gc * 3 >= t.batches {
            self.sweep_dictionary()?;
        }
        Ok(())
    }

    /// Deletes unreferenced dictionary entries. Caller holds the writer lock.
    pub(crate) fn sweep_dictionary(&self) -> Result<u64, StoreError> {
        self.ensure_dict()?;
        let t = self.sample_totals()?;
        let mut live_stacks = vec![false; t.next_stack as usize];
        let mut live_threads = vec![false; t.next_thread as usize];
        let mut live_comms = vec![false; t.next_comm as usize];
        // (pid, stack) pairs some table uses: the vocabulary entries to keep.
        let mut live_names: FxSet<(u32, u32)> = FxSet::default();
        // kind, id (the pid of a vocabulary entry), local id of a vocabulary entry, record bytes
        let mut dead: Vec<(u8, u32, u32, u64)> = Vec::new();
        {
            let d = self.dict_read();
            // Tables of CPU samples and of waits off the CPU: both use the dictionary.
            let tables = self.runs.scan_prefix([keys::TABLE]).map(|i| (SampleKind::OnCpu, i));
            let off_cpu = self.runs.scan_prefix([keys::OFF_TABLE]).map(|i| (SampleKind::OffCpu, i));
            for (kind, item) in tables.chain(off_cpu) {
                let (k, v) = item.map_err(|e| self.storage("sweep the sample dictionary", e))?;
                let (_, id) = self.decode_batch_key(&k)?;
                let what = || format!("{} {id} table", kind.batch_name());
                let table = codec::decode_table(&v, &*d).map_err(|e| self.corrupt(what(), e))?;
                let mut pid_of = (u32::MAX, 0);
                for e in &table.entries {
                    if let Some(s) = live_stacks.get_mut(e.stack as usize) {
                        *s = true;
                    }
                    if let Some(th) = live_threads.get_mut(e.thread as usize) {
                        *th = true;
                    }
                    if pid_of.0 != e.thread {
                        pid_of = (e.thread, d.thread(e.thread).map_or(u32::MAX, |t| t.pid));
                    }
                    live_names.insert((pid_of.1, e.stack));
                }
            }
            // Names first: chunks land in order, so a crash mid-sweep never leaves a name for a
            // deleted stack.
            for (&pid, stacks) in &d.vocab {
                for (local, &stack) in stacks.iter().enumerate() {
                    if stack != NO_STACK && !live_names.contains(&(pid, stack)) {
                        dead.push((keys::DICT_VOCAB, pid, local as u32, 10 + codec::encode_vocab(stack).len() as u64));
                    }
                }
            }
            for (id, th) in d.threads.iter().enumerate() {
                let Some(th) = th else { continue };
                if live_threads.get(id).copied().unwrap_or(false) {
                    if let Some(c) = live_comms.get_mut(th.comm as usize) {
                        *c = true;
                    }
                } else {
                    dead.push((keys::DICT_THREAD, id as u32, 0, 6 + codec::encode_thread(th).len() as u64));
                }
            }
            let mut live_frames = vec![false; t.next_frame as usize];
            for (id, s) in d.stacks.iter().enumerate() {
                let Some(s) = s else { continue };
                if live_stacks.get(id).copied().unwrap_or(false) {
                    for &f in s.iter() {
                        if let Some(l) = live_frames.get_mut(f as usize) {
                            *l = true;
                        }
                    }
                } else {
                    dead.push((keys::DICT_STACK, id as u32, 0, 6 + codec::encode_stack(s).len() as u64));
                }
            }
            for (id, f) in d.frames.iter().enumerate() {
                if let Some(f) = f
                    && !live_frames.get(id).copied().unwrap_or(false)
                {
                    dead.push((keys::DICT_FRAME, id as u32, 0, 6 + codec::encode_frame(f).len() as u64));
                }
            }
            for (id, c) in d.comms.iter().enumerate() {
                if let Some(c) = c
                    && !live_comms.get(id).copied().unwrap_or(false)
                {
                    dead.push((keys::DICT_COMM, id as u32, 0, 6 + codec::encode_comm(c).len() as u64));
                }
            }
        }
        let removed = dead.len() as u64;
        let mut chunks = dead.chunks(4096).peekable();
        if chunks.peek().is_none() {
            let mut t = self.sample_totals()?;
            t.deleted_since_gc = 0;
            let mut batch = sled::Batch::default();
            batch.insert(keys::SAMPLE_TOTALS, t.encode());
            self.apply(batch, "finish a dictionary sweep")?;
        }
        for chunk in chunks {
            let mut t = self.sample_totals()?;
            let mut batch = sled::Batch::default();
            for &(kind, id, local, bytes) in chunk {
                match kind {
                    keys::DICT_VOCAB => batch.remove(&keys::vocab_key(id, local)),
                    _ => batch.remove(&keys::dict_key(kind, id)),
                }
                t.dict_bytes = t.dict_bytes.saturating_sub(bytes);
                match kind {
                    keys::DICT_VOCAB => t.vocab = t.vocab.saturating_sub(1),
                    keys::DICT_STACK => t.stacks = t.stacks.saturating_sub(1),
                    keys::DICT_FRAME => t.frames = t.frames.saturating_sub(1),
                    keys::DICT_THREAD => t.threads = t.threads.saturating_sub(1),
                    _ => t.comms = t.comms.saturating_sub(1),
                }
            }
            t.deleted_since_gc = 0;
            batch.insert(keys::SAMPLE_TOTALS, t.encode());
            self.apply_then(batch, "sweep the sample dictionary", || {
                let mut d = self.dict.write().unwrap_or_else(|e| e.into_inner());
                for &(kind, id, local, _) in chunk {
                    match kind {
                        keys::DICT_VOCAB => d.remove_vocab(id, local),
                        keys::DICT_STACK => d.remove_stack(id),
                        keys::DICT_FRAME => d.remove_frame(id),
                        keys::DICT_THREAD => d.remove_thread(id),
                        _ => d.remove_comm(id),
                    }
                }
            })?;
        }
        Ok(removed)
    }
}
