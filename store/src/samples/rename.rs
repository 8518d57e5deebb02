//! Naming stored frames after the fact: the frames of a range still named by their address
//! ([`Frame::is_unnamed`]), and renaming them in place.
//!
//! *Why in place:* stacks refer to frames by dictionary id, so rewriting one `d f id` record
//! renames the frame in every stack and every batch that uses it — days of samples — in one small
//! atomic write, and profiles, pprof exports and analyses read the new name at once. The renamed
//! frame keeps its module and location, so its content stays unique in the dictionary (no frame
//! named at ingest has a location) and ids stay dense and never reused.

use std::collections::HashSet;

use crate::keys;
use crate::{Store, StoreError, TimeRange};

use super::codec;
use super::model::{Frame, SampleKind};

/// Most frames renamed in one atomic write.
const RENAME_CHUNK: usize = 4096;

/// What [`Store::rename_frames`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Renamed {
    /// Frames given their new name.
    pub renamed: u64,
    /// Ids that were no longer in the dictionary, no longer unnamed, or whose new name was
    /// empty: left as they were.
    pub skipped: u64,
}

impl Store {
    /// The frames, with their dictionary ids, that samples in `range` use and that are still
    /// named by their address and carry a build ID (so a debug file can be proven theirs).
    pub fn unnamed_frames(&self, range: TimeRange) -> Result<Vec<(u32, Frame)>, StoreError> {
        range.check()?;
        let inner = &*self.inner;
        inner.ensure_dict()?;
        let _r = inner.read_lock();
        let t = inner.sample_totals()?;
        let mut stacks: HashSet<u32> = HashSet::new();
        let mut batches = Vec::new();
        // A batch that began up to `max_span` before the range may reach into it.
        let from = range.from_unix_ns.saturating_sub(t.max_span_ns);
        // Waits off the CPU name frames too.
        for kind in [SampleKind::OnCpu, SampleKind::OffCpu] {
            inner.for_each_batch_of(kind, from, range.to_unix_ns, |start, id, row| {
                if row.end >= range.from_unix_ns {
                    batches.push((kind, start, id));
                }
                Ok(())
            })?;
        }
        let d = inner.dict_read();
        for (kind, start, id) in batches {
            stacks.extend(inner.read_table(kind, start, id, &*d)?.entries.iter().map(|e| e.stack));
        }
        let mut seen: HashSet<u32> = HashSet::new();
        let mut out = Vec::new();
        for s in stacks {
            for &f in d.stack(s).map(|s| &s[..]).unwrap_or(&[]) {
                if seen.insert(f)
                    && let Some(frame) = d.frame(f)
                    && frame.is_unnamed()
                    && frame.location.as_ref().is_some_and(|l| !l.build_id.is_empty())
                {
                    out.push((f, frame.clone()));
                }
            }
        }
        out.sort_by_key(|(id, _)| *id);
        Ok(out)
    }

    /// Gives each frame id its new function name, atomically per chunk of 4,096 frames. Only
    /// frames still unnamed are renamed; everything else is counted as skipped. Module,
    /// location and kernel flag stay.
    pub fn rename_frames(&self, names: &[(u32, String)]) -> Result<Renamed, StoreError> {
        let inner = &*self.inner;
        let _w = inner.lock_writer();
        inner.ensure_dict()?;
        let mut done = Renamed::default();
        for chunk in names.chunks(RENAME_CHUNK) {
            let mut changes: Vec<(u32, Frame, Frame)> = Vec::new();
            {
                let d = inner.dict_read();
                for (id, name) in chunk {
                    let Some(old) = d.frame(*id).filter(|f| f.is_unnamed()) else {
                        done.skipped += 1;
                        continue;
                    };
                    let new = old.named(name.as_str());
                    // Content is identity: a name that would make two ids equal is refused.
                    if name.is_empty() || d.frame_ids.contains_key(&new) || changes.iter().any(|c| c.2 == new) {
                        done.skipped += 1;
                        continue;
                    }
                    changes.push((*id, old.clone(), new));
                }
            }
            if changes.is_empty() {
                continue;
            }
            let mut t = inner.sample_totals()?;
            let mut batch = sled::Batch::default();
            for (id, old, new) in &changes {
                let (before, after) = (codec::encode_frame(old), codec::encode_frame(new));
                t.dict_bytes = t.dict_bytes.saturating_sub(before.len() as u64) + after.len() as u64;
                batch.insert(&keys::dict_key(keys::DICT_FRAME, *id), after);
            }
            batch.insert(keys::SAMPLE_TOTALS, t.encode());
            inner.apply_adding_then(batch, "rename frames", || {
                let mut d = inner.dict.write().unwrap_or_else(|e| e.into_inner());
                for (id, _, new) in &changes {
                    d.remove_frame(*id);
                    d.insert_frame(*id, new.clone());
                }
            })?;
            done.renamed += changes.len() as u64;
        }
        inner.flush("flush renamed frames")?;
        Ok(done)
    }
}
