//! Public types of the stack-sample store.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::TimeRange;

/// One frame of a symbolized stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Frame {
    /// Demangled function name, or `"module+0x1a2b"` (see [`Frame::unnamed`]) when it could not
    /// be named.
    pub function: Name,
    /// File name of the binary or library (`""` for kernel frames, which are `[kernel]`).
    pub module: Name,
    /// A kernel frame.
    pub kernel: bool,
    /// Where the instruction lies in which file, for a user frame that could not be named when
    /// it was sampled: what lets `loupe symbolize` name it once debug information appears, and
    /// pprof's mappings carry. Kept after the frame is named. `None` for frames named at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<ObjectAddress>,
    /// What ran there: native code, the kernel, JIT code named from a perf map, Python.
    #[serde(default)]
    pub kind: FrameKind,
}

/// What kind of code a frame is: what a flame graph colours by and an export says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FrameKind {
    /// Machine code of a binary or library (and the stack-end markers).
    #[default]
    Native,
    Kernel,
    /// Code outside any file, named from the process's perf map (`[jit]`).
    Jit,
    /// A Python function, from the interpreter's frames (its module is its `.py` file).
    Python,
}

impl FrameKind {
    /// The kind frames stored before kinds were kept have: what their other fields say.
    pub fn implied(kernel: bool, module: &str) -> FrameKind {
        match (kernel, module) {
            (true, _) => FrameKind::Kernel,
            (false, "[jit]") => FrameKind::Jit,
            _ => FrameKind::Native,
        }
    }

    pub fn is_native(&self) -> bool {
        *self == FrameKind::Native
    }

    /// As a byte, in the dictionary's frame records.
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<FrameKind> {
        [FrameKind::Native, FrameKind::Kernel, FrameKind::Jit, FrameKind::Python].get(usize::from(code)).copied()
    }
}

/// A frame's function or module name: text shared by every copy of the frame.
///
/// *Why:* a [`Profile`] repeats a frame in every stack that holds it. With owned strings,
/// building the 10-minute profile of the samples benchmark copied ~59,000 frames (two
/// allocations each) and took 27 ms against 14 ms for the same stacks by frame index
/// ([`IndexedProfile`]); sharing the names makes a copy two reference counts. Reads as a
/// `&str` (`Deref`), compares with strings, and is a plain string in every encoding.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Name {
    fn default() -> Name {
        Name::from("")
    }
}

impl Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(s.into())
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(s.into())
    }
}

impl From<&String> for Name {
    fn from(s: &String) -> Name {
        Name(s.as_str().into())
    }
}

impl From<Name> for String {
    fn from(n: Name) -> String {
        n.0.to_string()
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl Serialize for Name {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Name, D::Error> {
        String::deserialize(d).map(Name::from)
    }
}

/// An instruction's place in an ELF file, independent of where the file was loaded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ObjectAddress {
    /// The file's GNU build ID (`NT_GNU_BUILD_ID`, usually 20 bytes; at most
    /// [`ObjectAddress::MAX_BUILD_ID`]); empty when the file has none — such a frame is never
    /// renamed later, since nothing proves a debug file belongs to it.
    #[serde(with = "serde_bytes_vec")]
    pub build_id: Vec<u8>,
    /// The instruction's address in the file's own address space (the ELF virtual address that
    /// `nm`, `addr2line` and symbol tables use; not the file offset).
    pub address: u64,
}

impl ObjectAddress {
    /// The longest build ID kept (GNU tools write 20 bytes; 64 leaves room for any hash).
    pub const MAX_BUILD_ID: usize = 64;
}

/// Build IDs as MessagePack/serde bytes rather than a list of numbers.
mod serde_bytes_vec {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a build ID of at most {} bytes", super::ObjectAddress::MAX_BUILD_ID)
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                if v.len() > super::ObjectAddress::MAX_BUILD_ID {
                    return Err(E::invalid_length(v.len(), &self));
                }
                Ok(v.to_vec())
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
                let mut out = Vec::new();
                while let Some(b) = seq.next_element::<u8>()? {
                    if out.len() == super::ObjectAddress::MAX_BUILD_ID {
                        return Err(serde::de::Error::invalid_length(out.len() + 1, &self));
                    }
                    out.push(b);
                }
                Ok(out)
            }
        }
        d.deserialize_bytes(V)
    }
}

impl Frame {
    /// A user-space frame.
    pub fn user(function: impl Into<Name>, module: impl Into<Name>) -> Frame {
        let module = module.into();
        let kind = FrameKind::implied(false, &module);
        Frame { function: function.into(), module, kernel: false, location: None, kind }
    }

    /// A kernel frame (`module` is empty).
    pub fn kernel(function: impl Into<Name>) -> Frame {
        Frame { function: function.into(), module: Name::default(), kernel: true, location: None, kind: FrameKind::Kernel }
    }

    /// A Python function's frame: its qualified name, its file as the module.
    pub fn python(function: impl Into<Name>, file: impl Into<Name>) -> Frame {
        Frame { function: function.into(), module: file.into(), kernel: false, location: None, kind: FrameKind::Python }
    }

    /// A user frame that could not be named: its function reads `module+0xaddress`.
    pub fn unnamed(module: impl Into<Name>, location: ObjectAddress) -> Frame {
        let module = module.into();
        Frame {
            function: format!("{module}+{:#x}", location.address).into(),
            module,
            kernel: false,
            location: Some(location),
            kind: FrameKind::Native,
        }
    }

    /// Still named by its address, as [`Frame::unnamed`] made it.
    pub fn is_unnamed(&self) -> bool {
        self.location.as_ref().is_some_and(|l| {
            self.function.len() > self.module.len()
                && self.function.starts_with(&*self.module)
                && self.function[self.module.len()..] == format!("+{:#x}", l.address)
        })
    }

    /// The frame with a name found for it later (its module and location stay).
    pub fn named(&self, function: impl Into<Name>) -> Frame {
        Frame { function: function.into(), ..self.clone() }
    }
}

/// One CPU-profiling sample (what `perf record -F 10 -a -g` records per tick and CPU).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackSample {
    /// When the timer fired. Stored to the microsecond (rounded down; see
    /// [`StackSample::TIME_UNIT_NS`]).
    pub time_unix_ns: u64,
    pub cpu: u32,
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
    pub cgroup_id: u64,
    /// The CPU was idle (swapper, pid 0).
    pub idle: bool,
    /// Leaf first: kernel frames (if any), then user frames. May be empty.
    pub frames: Vec<Frame>,
}

impl StackSample {
    /// The precision sample times are stored with: one microsecond, what `perf script` prints.
    ///
    /// *Why not the nanosecond:* a sample's time is when the timer interrupt ran, which is
    /// already microseconds after the tick it stands for (interrupt latency), and the sample
    /// stands for the 100 ms before it. The nanoseconds below that are noise, and noise does
    /// not compress: they cost ten bits a sample, a third of what a sample took stored
    /// (`docs/hot-paths.md`). Probe calls and timeline events keep their nanoseconds.
    pub const TIME_UNIT_NS: u64 = 1_000;

    /// `time_unix_ns` as it is stored: rounded down to [`StackSample::TIME_UNIT_NS`].
    pub fn stored_time(time_unix_ns: u64) -> u64 {
        time_unix_ns - time_unix_ns % StackSample::TIME_UNIT_NS
    }
}

/// One sampled wait off the CPU: a thread that blocked (slept, waited on a lock, a pipe, the
/// disk) and how long it stayed off the CPU, with the stacks it blocked in. What
/// [`crate::Store::put_off_cpu`] stores and [`crate::Store::off_cpu_samples`] returns.
///
/// The sampler keeps every wait longer than its threshold while waits are rare, and one in
/// `one_in` of them at random when they are not (so its cost stays bounded): a sample then
/// stands for `one_in` waits like it, and an off-CPU profile weighs it by
/// [`OffCpuSample::weight_ns`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuSample {
    /// When the thread blocked (`time_unix_ns`, to the microsecond), on which CPU, which
    /// thread, and its stacks as it blocked, leaf first. `idle` is false: the idle task never
    /// blocks.
    pub sample: StackSample,
    /// How long the thread stayed off the CPU: from blocking until it ran again. Stored to the
    /// microsecond (rounded down), as sample times are.
    pub waited_ns: u64,
    /// The sampler kept one wait in this many when it took this one (1: every wait; at least
    /// 1).
    pub one_in: u32,
}

impl AsRef<StackSample> for StackSample {
    fn as_ref(&self) -> &StackSample {
        self
    }
}

impl AsRef<StackSample> for OffCpuSample {
    fn as_ref(&self) -> &StackSample {
        &self.sample
    }
}

impl OffCpuSample {
    /// The waiting time this sample stands for: its own wait times `one_in` (an unbiased
    /// estimate of the time all such waits took, since each is kept with probability
    /// `1 / one_in`).
    pub fn weight_ns(&self) -> u64 {
        self.waited_ns.saturating_mul(u64::from(self.one_in))
    }
}

/// Which samples a profile sums: the CPU's (`perf record`'s: where threads ran) or the waits
/// off it (where threads blocked, weighed by how long).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleKind {
    /// Timer samples of the running threads: a profile counts samples.
    #[default]
    OnCpu,
    /// Waits off the CPU: a profile sums nanoseconds waited ([`OffCpuSample::weight_ns`]).
    OffCpu,
}

/// What [`crate::Store::profile`], [`crate::Store::samples`] select.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileQuery {
    /// Samples whose time lies in `[from, to)`.
    pub range: TimeRange,
    pub pid: Option<u32>,
    /// Exact match on the thread's command name.
    pub comm: Option<String>,
    pub cpu: Option<u32>,
    /// Count samples taken while the CPU was idle (`idle == true`); off by default.
    pub include_idle: bool,
    /// CPU samples (the default) or waits off the CPU, whose profile sums nanoseconds.
    #[serde(default)]
    pub kind: SampleKind,
}

impl Default for ProfileQuery {
    /// Every non-idle sample of all time.
    fn default() -> Self {
        ProfileQuery::range(TimeRange::ALL)
    }
}

impl ProfileQuery {
    /// Every non-idle sample in `range`.
    pub fn range(range: TimeRange) -> ProfileQuery {
        ProfileQuery { range, pid: None, comm: None, cpu: None, include_idle: false, kind: SampleKind::OnCpu }
    }
}

/// An aggregated profile: distinct stacks and how many samples each got.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Samples matching the query.
    pub samples: u64,
    /// Samples the sampler reported lost, summed over the batches whose time (first sample)
    /// lies in the range. Not filtered by pid, comm or CPU: a lost sample has none.
    pub lost: u64,
    /// Distinct stacks (leaf first) and their sample counts, in no particular order.
    pub stacks: Vec<(Vec<Frame>, u64)>,
    /// First and last instant of the data (within the range) the samples came from, to the
    /// resolution of a stored batch (10 s); `None` without samples. What a pprof's time and
    /// duration say.
    #[serde(default)]
    pub span: Option<(u64, u64)>,
}

/// A [`Profile`] whose stacks name their frames by index into one list of the distinct frames.
///
/// *Why:* a [`Profile`] holds a copy of every frame of every stack. A reader that only looks
/// frames up (a flame graph, the hot-functions table) pays for making and freeing those copies:
/// for the browser tests' wide profile (~30,000 stacks, 323,302 flame-graph nodes) that was
/// ~1 M frames, 45 % of the request. Here each frame is copied once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexedProfile {
    /// As in [`Profile`].
    pub samples: u64,
    /// As in [`Profile`].
    pub lost: u64,
    /// As in [`Profile`].
    pub span: Option<(u64, u64)>,
    /// Each frame the stacks use, once.
    pub frames: Vec<Frame>,
    /// Distinct stacks (leaf first, as indexes into `frames`) and their sample counts, in no
    /// particular order. Every index is within `frames` (the store checks).
    pub stacks: Vec<(Vec<u32>, u64)>,
}

impl IndexedProfile {
    /// The frames of `stack` (one of [`IndexedProfile::stacks`]), leaf first.
    ///
    /// Panics on an index past `frames`, which a profile from the store never holds.
    pub fn frames_of<'a>(
        &'a self,
        stack: &'a [u32],
    ) -> impl DoubleEndedIterator<Item = &'a Frame> + ExactSizeIterator + Clone + 'a {
        stack.iter().map(|&i| &self.frames[i as usize])
    }
}

impl From<IndexedProfile> for Profile {
    fn from(p: IndexedProfile) -> Profile {
        let stacks = p.stacks.iter().map(|(s, n)| (p.frames_of(s).cloned().collect(), *n)).collect();
        Profile { samples: p.samples, lost: p.lost, stacks, span: p.span }
    }
}

/// Totals of the sample store, from running counters (no scan).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleStats {
    /// CPU samples and waits off the CPU ([`OffCpuSample`]) alike.
    pub samples: u64,
    /// Batches of either kind.
    pub batches: u64,
    /// Key + value bytes of every sample record: blocks, batch records *and* the stack, frame
    /// and comm dictionaries. This is what counts against the retention byte cap.
    pub stored_bytes: u64,
    /// Distinct stacks in the dictionary.
    pub stacks: u64,
    /// Distinct frames in the dictionary.
    pub frames: u64,
    /// Distinct command names in the dictionary.
    pub comms: u64,
    /// Distinct threads `(pid, tid, comm, cgroup)` in the dictionary.
    pub threads: u64,
    /// Names in the processes' stack vocabularies: one per `(pid, stack)` a stored batch uses
    /// (see `samples::codec`, table format 3).
    #[serde(default)]
    pub vocabulary: u64,
    /// The dictionaries' share of `stored_bytes`.
    pub dictionary_bytes: u64,
    /// The hour rollups' share of `stored_bytes` (see `samples::rollup`).
    #[serde(default)]
    pub rollup_bytes: u64,
}

/// What [`crate::Store::put_samples`] stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleBatchMeta {
    /// Unique, never reused; `0` means nothing was stored (an empty batch with nothing lost).
    pub id: u64,
    /// The batch's time: its earliest sample (or, for a batch of only lost samples, the
    /// `now_unix_ns` it was written at). Retention and `lost` accounting use it.
    pub start_unix_ns: u64,
    /// Its latest sample (`start_unix_ns` if it has none).
    pub end_unix_ns: u64,
    pub samples: u64,
    pub lost: u64,
    /// CPUs that have a block in this batch, ascending.
    pub cpus: Vec<u32>,
    /// Key + value bytes of the batch's own records (its blocks, table and this metadata);
    /// dictionary entries it added are counted in [`SampleStats::dictionary_bytes`] instead.
    pub stored_bytes: u64,
}
