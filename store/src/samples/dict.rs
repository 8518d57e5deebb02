//! The stack, frame, comm and thread dictionaries, and their in-memory cache.
//!
//! Stored as `d` records (`d f id` → frame, `d c id` → comm, `d s id` → frame ids, leaf
//! first, `d t id` → thread: pid, tid, comm id, cgroup id). Ids are dense and allocated from
//! counters in the sample totals, in order of first appearance, so the popular stacks (seen
//! first) get the smallest ids and the cheapest codes in blocks and tables. Identity is by
//! content: the cache maps content to id with a fast hash and exact comparison, so two
//! different stacks never share an id whatever their hash.
//!
//! Each process also has a *vocabulary* (`d v pid local` → stack id): its own dense names for
//! the stacks it used, in order of first use, which batch tables write instead of stack ids
//! (they are much smaller: a process uses a few dozen of thousands of stacks). A name is only
//! given below the stack counter, so loading never allocates more than the counter allows; a
//! name the sweep freed may be given again, since no table uses it.
//!
//! The cache is loaded whole on first use (one prefix scan; a few MB even for 100k stacks) and
//! then kept in step by the writer: new entries of a batch are *staged* while the batch is
//! built and enter the cache only after the sled batch carrying them was applied, so a failed
//! write never leaves ids in memory that are not on disk. The sweep ([`super`]'s GC) removes
//! entries from both. Ids are never reused.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use super::codec::{self, DictRecord, ThreadRec};
use super::model::Frame;
use crate::StoreError;
use crate::keys::{self, SampleTotals};

/// FxHash-style hasher (fast on short strings), seeded per process.
#[derive(Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED_MUL: u64 = 0xf135_7aea_2e62_a9c5;

impl FxHasher {
    #[inline]
    fn add(&mut self, v: u64) {
        self.hash = self.hash.wrapping_add(v).wrapping_mul(SEED_MUL);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash.rotate_left(26)
    }
}

/// Builds [`FxHasher`]s from a per-process random seed.
#[derive(Clone, Copy)]
pub struct FxBuild(u64);

impl Default for FxBuild {
    fn default() -> Self {
        static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        FxBuild(*SEED.get_or_init(|| std::collections::hash_map::RandomState::new().hash_one(0u64)))
    }
}

impl BuildHasher for FxBuild {
    type Hasher = FxHasher;
    fn build_hasher(&self) -> FxHasher {
        FxHasher { hash: self.0 }
    }
}

pub type FxMap<K, V> = HashMap<K, V, FxBuild>;

/// The in-memory copy of the dictionaries.
#[derive(Default)]
pub struct Dict {
    pub loaded: bool,
    pub frames: Vec<Option<Frame>>,
    pub frame_ids: FxMap<Frame, u32>,
    pub comms: Vec<Option<String>>,
    pub comm_ids: FxMap<String, u32>,
    pub stacks: Vec<Option<Arc<[u32]>>>,
    pub stack_ids: FxMap<Arc<[u32]>, u32>,
    pub threads: Vec<Option<ThreadRec>>,
    pub thread_ids: FxMap<ThreadRec, u32>,
    /// Per-process stack vocabularies: pid → local id → stack id ([`NO_STACK`] where the
    /// sweep deleted an entry).
    pub vocab: FxMap<u32, Vec<u32>>,
    /// `(pid, stack)` → local id.
    pub vocab_ids: FxMap<(u32, u32), u32>,
}

/// A vocabulary slot whose entry was swept.
pub const NO_STACK: u32 = u32::MAX;

impl codec::Vocabulary for Dict {
    fn pid_of(&self, thread: u32) -> Option<u32> {
        Some(self.thread(thread)?.pid)
    }
    fn stack_named(&self, pid: u32, local: u32) -> Option<u32> {
        self.vocab.get(&pid)?.get(local as usize).copied().filter(|&s| s != NO_STACK)
    }
}

fn put<T>(v: &mut Vec<Option<T>>, id: u32, x: T) {
    let i = id as usize;
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    v[i] = Some(x);
}

impl Dict {
    /// Adds a record read from disk. Ids are allocated from the counters in the sample totals
    /// and never reused, so an id at or above its counter is corrupt — and refused before the
    /// id-indexed vectors grow to it (a corrupt id near 2^32 would otherwise ask for tens of GB).
    pub fn load(&mut self, record: DictRecord, totals: &SampleTotals) -> Result<(), String> {
        let check = |id: u32, next: u64, what: &str| {
            if u64::from(id) >= next {
                return Err(format!("{what} id {id} is not below the {what} counter {next}"));
            }
            Ok(())
        };
        match record {
            DictRecord::Frame(id, f) => check(id, totals.next_frame, "frame").map(|_| self.insert_frame(id, f)),
            DictRecord::Comm(id, c) => check(id, totals.next_comm, "comm").map(|_| self.insert_comm(id, c)),
            DictRecord::Stack(id, s) => {
                check(id, totals.next_stack, "stack").map(|_| self.insert_stack(id, Arc::from(s)))
            }
            DictRecord::Thread(id, t) => check(id, totals.next_thread, "thread").map(|_| self.insert_thread(id, t)),
            DictRecord::Vocab(pid, local, stack) => {
                check(stack, totals.next_stack, "stack")?;
                // A process has at most as many names as there are stacks (see
                // `Staged::local_id`), which bounds the vocabulary vectors.
                if u64::from(local) >= totals.next_stack {
                    return Err(format!(
                        "process {pid} names a stack as {local}, not below the stack counter {}",
                        totals.next_stack
                    ));
                }
                if let Some(&other) = self.vocab_ids.get(&(pid, stack)) {
                    return Err(format!("process {pid} names stack {stack} twice, as {other} and {local}"));
                }
                self.insert_vocab(pid, local, stack);
                Ok(())
            }
        }
    }

    pub fn insert_vocab(&mut self, pid: u32, local: u32, stack: u32) {
        let v = self.vocab.entry(pid).or_default();
        if v.len() <= local as usize {
            v.resize(local as usize + 1, NO_STACK);
        }
        let old = std::mem::replace(&mut v[local as usize], stack);
        if old != NO_STACK {
            self.vocab_ids.remove(&(pid, old));
        }
        self.vocab_ids.insert((pid, stack), local);
    }

    pub fn remove_vocab(&mut self, pid: u32, local: u32) {
        let Some(v) = self.vocab.get_mut(&pid) else { return };
        let Some(slot) = v.get_mut(local as usize) else { return };
        let stack = std::mem::replace(slot, NO_STACK);
        if stack != NO_STACK {
            self.vocab_ids.remove(&(pid, stack));
        }
        while v.last() == Some(&NO_STACK) {
            v.pop();
        }
        if v.is_empty() {
            self.vocab.remove(&pid);
        }
    }

    pub fn insert_frame(&mut self, id: u32, f: Frame) {
        self.frame_ids.insert(f.clone(), id);
        put(&mut self.frames, id, f);
    }
    pub fn insert_comm(&mut self, id: u32, c: String) {
        self.comm_ids.insert(c.clone(), id);
        put(&mut self.comms, id, c);
    }
    pub fn insert_stack(&mut self, id: u32, s: Arc<[u32]>) {
        self.stack_ids.insert(s.clone(), id);
        put(&mut self.stacks, id, s);
    }
    pub fn insert_thread(&mut self, id: u32, t: ThreadRec) {
        self.thread_ids.insert(t, id);
        put(&mut self.threads, id, t);
    }
    pub fn remove_thread(&mut self, id: u32) {
        if let Some(t) = self.threads.get_mut(id as usize).and_then(Option::take) {
            self.thread_ids.remove(&t);
        }
    }
    pub fn thread(&self, id: u32) -> Option<&ThreadRec> {
        self.threads.get(id as usize)?.as_ref()
    }
    pub fn remove_frame(&mut self, id: u32) {
        if let Some(f) = self.frames.get_mut(id as usize).and_then(Option::take) {
            self.frame_ids.remove(&f);
        }
    }
    pub fn remove_comm(&mut self, id: u32) {
        if let Some(c) = self.comms.get_mut(id as usize).and_then(Option::take) {
            self.comm_ids.remove(&c);
        }
    }
    pub fn remove_stack(&mut self, id: u32) {
        if let Some(s) = self.stacks.get_mut(id as usize).and_then(Option::take) {
            self.stack_ids.remove(&s);
        }
    }
    pub fn frame(&self, id: u32) -> Option<&Frame> {
        self.frames.get(id as usize)?.as_ref()
    }
    pub fn comm(&self, id: u32) -> Option<&str> {
        self.comms.get(id as usize)?.as_deref()
    }
    pub fn stack(&self, id: u32) -> Option<&Arc<[u32]>> {
        self.stacks.get(id as usize)?.as_ref()
    }
}

/// Dictionary entries a batch adds, not yet in the cache.
pub struct Staged {
    pub frames: Vec<(u32, Frame)>,
    frame_ids: FxMap<Frame, u32>,
    pub comms: Vec<(u32, String)>,
    comm_ids: FxMap<String, u32>,
    pub stacks: Vec<(u32, Arc<[u32]>)>,
    stack_ids: FxMap<Arc<[u32]>, u32>,
    pub threads: Vec<(u32, ThreadRec)>,
    thread_ids: FxMap<ThreadRec, u32>,
    /// `(pid, local, stack)`
    pub vocab: Vec<(u32, u32, u32)>,
    vocab_ids: FxMap<(u32, u32), u32>,
    /// The next local id of each process this batch named a new stack of.
    vocab_next: FxMap<u32, u32>,
    pub next_frame: u64,
    pub next_comm: u64,
    pub next_stack: u64,
    pub next_thread: u64,
}

impl Staged {
    pub fn new(next_frame: u64, next_comm: u64, next_stack: u64, next_thread: u64) -> Staged {
        Staged {
            frames: Vec::new(),
            frame_ids: FxMap::default(),
            comms: Vec::new(),
            comm_ids: FxMap::default(),
            stacks: Vec::new(),
            stack_ids: FxMap::default(),
            threads: Vec::new(),
            thread_ids: FxMap::default(),
            vocab: Vec::new(),
            vocab_ids: FxMap::default(),
            vocab_next: FxMap::default(),
            next_frame,
            next_comm,
            next_stack,
            next_thread,
        }
    }

    fn alloc(next: &mut u64, what: &str) -> Result<u32, String> {
        let id = u32::try_from(*next).map_err(|_| format!("{what} dictionary is full (2^32 ids used)"))?;
        *next += 1;
        Ok(id)
    }

    pub fn frame_id(&mut self, dict: &Dict, f: &Frame) -> Result<u32, String> {
        if let Some(&id) = dict.frame_ids.get(f).or_else(|| self.frame_ids.get(f)) {
            return Ok(id);
        }
        let id = Self::alloc(&mut self.next_frame, "frame")?;
        self.frame_ids.insert(f.clone(), id);
        self.frames.push((id, f.clone()));
        Ok(id)
    }

    pub fn comm_id(&mut self, dict: &Dict, c: &str) -> Result<u32, String> {
        if let Some(&id) = dict.comm_ids.get(c).or_else(|| self.comm_ids.get(c)) {
            return Ok(id);
        }
        let id = Self::alloc(&mut self.next_comm, "comm")?;
        self.comm_ids.insert(c.to_owned(), id);
        self.comms.push((id, c.to_owned()));
        Ok(id)
    }

    pub fn stack_id(&mut self, dict: &Dict, frames: &[u32]) -> Result<u32, String> {
        if let Some(&id) = dict.stack_ids.get(frames).or_else(|| self.stack_ids.get(frames)) {
            return Ok(id);
        }
        let id = Self::alloc(&mut self.next_stack, "stack")?;
        let s: Arc<[u32]> = frames.into();
        self.stack_ids.insert(s.clone(), id);
        self.stacks.push((id, s));
        Ok(id)
    }

    pub fn thread_id(&mut self, dict: &Dict, t: &ThreadRec) -> Result<u32, String> {
        if let Some(&id) = dict.thread_ids.get(t).or_else(|| self.thread_ids.get(t)) {
            return Ok(id);
        }
        let id = Self::alloc(&mut self.next_thread, "thread")?;
        self.thread_ids.insert(*t, id);
        self.threads.push((id, *t));
        Ok(id)
    }

    /// The place of `stack` in the vocabulary of `pid`, giving it the next one if the process
    /// has not used it before. Local ids are dense per process, in order of first use, so a
    /// process's popular stacks take the smallest. A slot the sweep emptied is taken again
    /// only when the next would reach the stack counter: that keeps every local id below the
    /// stack counter (a process cannot name more stacks than exist, so some slot below is
    /// then free), which bounds what loading the dictionary allocates.
    pub fn local_id(&mut self, dict: &Dict, pid: u32, stack: u32) -> Result<u32, String> {
        if let Some(&local) = dict.vocab_ids.get(&(pid, stack)).or_else(|| self.vocab_ids.get(&(pid, stack))) {
            return Ok(local);
        }
        let stored = dict.vocab.get(&pid).map_or(&[][..], Vec::as_slice);
        let next = self.vocab_next.entry(pid).or_insert(stored.len() as u32);
        let local = if u64::from(*next) < self.next_stack {
            *next += 1;
            *next - 1
        } else {
            let staged = &self.vocab;
            (0..stored.len() as u32)
                .find(|&l| stored[l as usize] == NO_STACK && !staged.iter().any(|&(p, sl, _)| p == pid && sl == l))
                .ok_or_else(|| format!("process {pid}'s stack vocabulary has no free slot"))?
        };
        self.vocab_ids.insert((pid, stack), local);
        self.vocab.push((pid, local, stack));
        Ok(local)
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
            && self.comms.is_empty()
            && self.stacks.is_empty()
            && self.threads.is_empty()
            && self.vocab.is_empty()
    }

    /// Moves the staged entries into the cache (after they were written).
    pub fn commit(self, dict: &mut Dict) {
        for (id, f) in self.frames {
            dict.insert_frame(id, f);
        }
        for (id, c) in self.comms {
            dict.insert_comm(id, c);
        }
        for (id, s) in self.stacks {
            dict.insert_stack(id, s);
        }
        for (id, t) in self.threads {
            dict.insert_thread(id, t);
        }
        for (pid, local, stack) in self.vocab {
            dict.insert_vocab(pid, local, stack);
        }
    }
}

impl crate::Inner {
    pub(crate) fn dict_read(&self) -> std::sync::RwLockReadGuard<'_, Dict> {
        self.dict.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Loads the dictionary cache if it is not yet loaded.
    pub(crate) fn ensure_dict(&self) -> Result<(), StoreError> {
        if self.dict_read().loaded {
            return Ok(());
        }
        let mut d = self.dict.write().unwrap_or_else(|e| e.into_inner());
        if d.loaded {
            return Ok(());
        }
        let totals = self.sample_totals()?;
        let mut fresh = Dict::default();
        for item in self.runs.scan_prefix([keys::DICT]) {
            let (k, v) = item.map_err(|e| self.storage("load the sample dictionary", e))?;
            let record = codec::decode_dict_record(&k, &v).map_err(|d| self.corrupt("sample dictionary".into(), d))?;
            fresh.load(record, &totals).map_err(|d| self.corrupt("sample dictionary".into(), d))?;
        }
        fresh.loaded = true;
        *d = fresh;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Loading a corrupt record whose id is at or past its counter is refused before the
    /// id-indexed vectors grow: a stack id of 2^32 - 1 would otherwise ask for 64 GB.
    #[test]
    fn load_refuses_ids_past_their_counter() {
        let totals = SampleTotals { next_stack: 10, next_frame: 10, ..Default::default() };
        let mut dict = Dict::default();
        dict.load(DictRecord::Stack(9, vec![1, 2]), &totals).unwrap();
        let err = dict.load(DictRecord::Stack(u32::MAX, vec![1]), &totals).unwrap_err();
        assert!(err.contains("not below"), "{err}");
        assert!(dict.load(DictRecord::Comm(0, "x".into()), &totals).is_err()); // no comm allocated
        assert_eq!(dict.stacks.len(), 10);
        let key = keys::dict_key(keys::DICT_STACK, 9);
        assert_eq!(
            codec::decode_dict_record(&key, &codec::encode_stack(&[1, 2])),
            Ok(DictRecord::Stack(9, vec![1, 2]))
        );
        assert!(codec::decode_dict_record(&key[..5], &codec::encode_stack(&[1])).is_err());
        assert!(codec::decode_dict_record(&keys::dict_key(b'?', 1), &codec::encode_stack(&[1])).is_err());
    }

    /// Names are dense per process in order of first use; once the next would reach the stack
    /// counter, a slot the sweep emptied is taken instead, so names stay below the counter.
    #[test]
    fn names_stay_below_the_stack_counter() {
        let mut dict = Dict::default();
        dict.insert_vocab(1, 0, 0);
        dict.insert_vocab(1, 1, 1);
        dict.remove_vocab(1, 0); // swept
        let mut st = Staged::new(0, 0, 2, 0);
        assert_eq!(st.local_id(&dict, 1, 1).unwrap(), 1, "already named");
        assert_eq!(st.local_id(&dict, 1, 0).unwrap(), 0, "the emptied slot, as 2 is not below the counter");
        assert_eq!(st.local_id(&dict, 2, 1).unwrap(), 0);
        assert_eq!(st.local_id(&dict, 2, 0).unwrap(), 1);
        assert_eq!(st.local_id(&dict, 2, 1).unwrap(), 0, "staged names dedup too");
        let err = st.local_id(&dict, 1, 5).unwrap_err();
        assert!(err.contains("no free slot"), "{err}");
        st.commit(&mut dict);
        use codec::Vocabulary;
        assert_eq!(
            (dict.stack_named(1, 0), dict.stack_named(1, 1), dict.stack_named(2, 1)),
            (Some(0), Some(1), Some(0))
        );
        // Emptying a process's last slots shortens its vocabulary; emptying all forgets it.
        dict.remove_vocab(2, 1);
        assert_eq!(dict.vocab[&2], [1]);
        dict.remove_vocab(2, 0);
        assert!(!dict.vocab.contains_key(&2) && dict.vocab_ids.len() == 2);
    }

    #[test]
    fn staged_ids_dedup_against_cache_and_themselves() {
        let mut dict = Dict::default();
        dict.insert_frame(0, Frame::kernel("a"));
        let mut st = Staged::new(1, 0, 0, 0);
        assert_eq!(st.frame_id(&dict, &Frame::kernel("a")).unwrap(), 0);
        assert_eq!(st.frame_id(&dict, &Frame::user("a", "")).unwrap(), 1);
        assert_eq!(st.frame_id(&dict, &Frame::user("a", "")).unwrap(), 1);
        assert_eq!(st.stack_id(&dict, &[0, 1]).unwrap(), 0);
        assert_eq!(st.stack_id(&dict, &[1, 0]).unwrap(), 1);
        assert_eq!(st.stack_id(&dict, &[]).unwrap(), 2);
        assert_eq!(st.stack_id(&dict, &[0, 1]).unwrap(), 0);
        st.commit(&mut dict);
        assert_eq!(dict.stack_ids.get(&[1u32, 0][..]), Some(&1));
        assert_eq!(dict.frame(1), Some(&Frame::user("a", "")));
        dict.remove_stack(1);
        assert!(dict.stack(1).is_none() && !dict.stack_ids.contains_key(&[1u32, 0][..]));
    }
}
