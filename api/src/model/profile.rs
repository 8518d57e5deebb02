//! A profile as users see it: the hot-function table and the flame graph (`loupe profile
//! --json`, `GET /api/v1/profile`, an analysis' flame-graph result) — computed from the store's
//! deduplicated stacks and their sample counts.
//!
//! The tree is built without recursion, and its depth is bounded: serializing, cloning and
//! dropping a [`FlameNode`] recurse once per level, so whoever chooses the depth chooses how
//! much stack those take. Stored stacks come from the kernel (at most 127 user + 127 kernel
//! frames); a stack deeper than [`MAX_FLAME_DEPTH`] (a damaged record) keeps its outermost
//! callers and ends in a `[truncated]` node. An analysis' stacks are checked against the same
//! bound before anything is built from them (`analysis::output`), and the number of nodes an
//! analysis may make is bounded with [`ProfileView::with_node_limit`].

use std::collections::{HashMap, HashSet};

use foldhash::fast::RandomState;
use loupe_store::{Frame, FrameKind, IndexedProfile, Profile, SampleKind};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Most levels below the root of a flame graph. Measured: serializing a tree this deep to JSON
/// takes well under the 2 MiB stack of a tokio or blocking-pool thread (see the test).
pub const MAX_FLAME_DEPTH: usize = 512;

/// The frame that stands for what was cut off a stack deeper than [`MAX_FLAME_DEPTH`].
pub const TRUNCATED: &str = "[truncated]";

/// `loupe profile --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProfileView {
    /// `on_cpu`: every count below is samples of the running threads (`samples` of them).
    /// `off_cpu`: every count below is nanoseconds threads waited off the CPU (slept, blocked
    /// on a lock, a pipe, the disk), each sampled wait weighed by how long it lasted times the
    /// 1-in-N it was sampled at; `samples` is then the waits sampled.
    #[serde(default)]
    #[schema(value_type = String, example = "on_cpu")]
    pub kind: SampleKind,
    pub samples: u64,
    pub lost: u64,
    /// Sorted by `self` (samples where the function is the leaf), then `total` (samples where it
    /// is anywhere on the stack, once per sample), descending.
    pub functions: Vec<FunctionCount>,
    /// Each module's share: the program's own binary, each shared library, `[kernel]`, and
    /// `[unknown]` for code outside any file (JIT without a perf map). Sorted like `functions`.
    /// What a fleet's "datacenter tax" adds up (how much CPU goes to libc, zlib, the kernel, …).
    pub modules: Vec<ModuleCount>,
    pub flamegraph: FlameNode,
    /// Flame-graph nodes left out because they hold less than the share of the samples asked
    /// for (`min_share`); their samples still count in their parents' `value`. 0: complete.
    #[serde(default)]
    pub pruned_nodes: u64,
    /// How many samples' user stacks are whole (reach their thread's root), and why the others
    /// stopped: never hidden, since a short stack misattributes time to its outermost frame.
    #[serde(default)]
    pub user_stacks: UserStacks,
}

/// The samples with a user stack, and how their stacks ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserStacks {
    /// Samples with at least one user frame.
    pub samples: u64,
    /// Of those, stacks that reach their root.
    pub whole: u64,
    /// The others, by why they stopped (the text of their outermost marker frame), most first.
    pub cut: Vec<StackEnd>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StackEnd {
    /// `truncated: no unwind info`, `frame-pointer walk`, …
    pub reason: String,
    pub samples: u64,
}

/// The outermost frame the sampler adds to a user stack that stopped short of its root
/// (`[truncated: reason]`), or that was walked by frame pointers before the process's unwind
/// tables were loaded (`[frame-pointer walk]`: whole if every function keeps a frame pointer).
pub fn stack_end_marker(frame: &Frame) -> Option<&str> {
    let name = frame.function.as_str();
    (!frame.kernel && (name.starts_with("[truncated: ") || name == FRAME_POINTER_WALK))
        .then(|| name.trim_start_matches('[').trim_end_matches(']'))
}

/// The marker frame of a user stack walked by frame pointers.
pub const FRAME_POINTER_WALK: &str = "[frame-pointer walk]";

/// Samples of one module: `self` where its code was running (the leaf frame is in it), `total`
/// where it is anywhere on the stack (once per sample).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModuleCount {
    pub name: String,
    #[serde(rename = "self")]
    pub self_samples: u64,
    pub total: u64,
}

/// The module a frame's samples are counted under.
pub fn module_of(frame: &Frame) -> &str {
    match (frame.kernel, frame.module.as_str()) {
        (true, _) => "[kernel]",
        (false, "") => "[unknown]",
        (false, m) => m,
    }
}

/// What naming stored frames did (`loupe symbolize`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SymbolizeReport {
    /// Frames of the range still named by address, with a build ID, before this pass.
    pub unnamed: u64,
    /// Of those, named now.
    pub named: u64,
    /// Per module (file name and build ID): its unnamed frames, how many got a name, and the
    /// debug file the names came from (none found: `null`).
    pub modules: Vec<ModuleNaming>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModuleNaming {
    pub module: String,
    pub build_id: String,
    pub frames: u64,
    pub named: u64,
    pub debug_file: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FunctionCount {
    pub name: String,
    #[serde(rename = "self")]
    pub self_samples: u64,
    pub total: u64,
}

/// One node of the flame graph: `value` samples passed through it; children are callees,
/// widest first. At most [`MAX_FLAME_DEPTH`] levels below the root.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FlameNode {
    pub name: String,
    pub value: u64,
    /// What kind of code the frame is: `kernel`, `jit` (named from a perf map), `python`;
    /// absent for native code (a binary's or a library's machine code).
    #[serde(default, skip_serializing_if = "FrameKind::is_native")]
    #[schema(value_type = Option<String>, example = "python")]
    pub kind: FrameKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub children: Vec<FlameNode>,
}

/// A flame graph would have more nodes than allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyNodes {
    pub limit: usize,
}

/// Maps keyed by frame names, which come from the sampled programs: foldhash, seeded per
/// process (SipHash, the default, was a fifth of building the wide profile's view).
type Map<K, V> = HashMap<K, V, RandomState>;
type Set<K> = HashSet<K, RandomState>;

/// A node while the tree is built: children by name, so a level of 300,000 callees costs a
/// hash lookup per frame, not a scan. (The differential flame graph builds the same arena.)
pub(super) struct ArenaNode<'a> {
    pub(super) name: &'a str,
    pub(super) value: u64,
    pub(super) children: Map<&'a str, usize>,
    /// The kind of the first frame that made the node.
    pub(super) kind: FrameKind,
}

impl<'a> ArenaNode<'a> {
    pub(super) fn new(name: &'a str, kind: FrameKind) -> Self {
        ArenaNode { name, value: 0, children: Map::default(), kind }
    }
}

/// A stack's function names and kinds root first (the outermost caller is the last frame),
/// cut at [`MAX_FLAME_DEPTH`]: beyond it the rest of the stack becomes one `[truncated]` node.
pub(super) fn root_first<'a>(
    frames: impl DoubleEndedIterator<Item = &'a Frame> + ExactSizeIterator,
) -> impl Iterator<Item = (&'a str, FrameKind)> {
    let cut = (frames.len() > MAX_FLAME_DEPTH).then_some((TRUNCATED, FrameKind::Native));
    frames.rev().take(MAX_FLAME_DEPTH - usize::from(cut.is_some())).map(|f| (f.function.as_str(), f.kind)).chain(cut)
}

/// One stack's frames, leaf first, however the profile holds them.
trait StackFrames<'a>: DoubleEndedIterator<Item = &'a Frame> + ExactSizeIterator + Clone {}
impl<'a, T: DoubleEndedIterator<Item = &'a Frame> + ExactSizeIterator + Clone> StackFrames<'a> for T {}

impl ProfileView {
    pub fn new(profile: &Profile) -> Self {
        Self::with_node_limit(profile, usize::MAX).expect("no node limit")
    }

    /// The view, or [`TooManyNodes`] as soon as the flame graph would exceed `max_nodes`
    /// (the root included).
    pub fn with_node_limit(profile: &Profile, max_nodes: usize) -> Result<Self, TooManyNodes> {
        Self::build(Self::stacks_of(profile), (profile.samples, profile.lost), max_nodes, 0.0)
    }

    /// The view with the flame graph's nodes under `min_share` of the samples left out (and
    /// counted in [`ProfileView::pruned_nodes`]): a node a screen cannot draw wider than a
    /// fraction of a pixel costs the browser as much to fetch and parse as a wide one. The
    /// functions and modules are complete. `min_share` ≤ 0 leaves everything in.
    pub fn pruned(profile: &Profile, min_share: f64) -> Self {
        Self::build(Self::stacks_of(profile), (profile.samples, profile.lost), usize::MAX, min_share)
            .expect("no node limit")
    }

    /// The view saying its counts are of `kind` (what the profile it was built from summed).
    pub fn of_kind(self, kind: SampleKind) -> Self {
        Self { kind, ..self }
    }

    /// [`ProfileView::pruned`] of the store's [`IndexedProfile`], which holds each frame once.
    pub fn pruned_indexed(profile: &IndexedProfile, min_share: f64) -> Self {
        let stacks = profile.stacks.iter().map(|(s, n)| (profile.frames_of(s), *n));
        Self::build(stacks, (profile.samples, profile.lost), usize::MAX, min_share).expect("no node limit")
    }

    fn stacks_of(profile: &Profile) -> impl Iterator<Item = (impl StackFrames<'_>, u64)> {
        profile.stacks.iter().map(|(f, n)| (f.iter(), *n))
    }

    fn build<'a, F: StackFrames<'a>>(
        stacks: impl Iterator<Item = (F, u64)>,
        (samples, lost): (u64, u64),
        max_nodes: usize,
        min_share: f64,
    ) -> Result<Self, TooManyNodes> {
        let mut functions: Map<&str, (u64, u64)> = Map::default();
        let mut modules: Map<&str, (u64, u64)> = Map::default();
        let mut seen_modules: Set<&str> = Set::default();
        let mut arena = vec![ArenaNode::new("all", FrameKind::Native)];
        // Functions already counted in this stack (a set: a damaged stack may be very deep).
        let mut seen: Set<&str> = Set::default();
        let mut user_stacks = UserStacks::default();
        let mut cut: Map<&str, u64> = Map::default();
        for (frames, count) in stacks {
            if let Some(outermost) = frames.clone().next_back()
                && !outermost.kernel
            {
                user_stacks.samples = user_stacks.samples.saturating_add(count);
                match stack_end_marker(outermost) {
                    Some(reason) => *cut.entry(reason).or_default() += count,
                    None => user_stacks.whole = user_stacks.whole.saturating_add(count),
                }
            }
            arena[0].value = arena[0].value.saturating_add(count);
            if let Some(leaf) = frames.clone().next() {
                let e = functions.entry(&leaf.function).or_default();
                e.0 = e.0.saturating_add(count);
                let e = modules.entry(module_of(leaf)).or_default();
                e.0 = e.0.saturating_add(count);
            }
            seen.clear();
            seen_modules.clear();
            for f in frames.clone() {
                if seen.insert(&f.function) {
                    let e = functions.entry(&f.function).or_default();
                    e.1 = e.1.saturating_add(count);
                }
                if seen_modules.insert(module_of(f)) {
                    let e = modules.entry(module_of(f)).or_default();
                    e.1 = e.1.saturating_add(count);
                }
            }
            let mut at = 0;
            for (name, kind) in root_first(frames) {
                let next = arena.len();
                let child = *arena[at].children.entry(name).or_insert(next);
                if child == next {
                    if arena.len() >= max_nodes {
                        return Err(TooManyNodes { limit: max_nodes });
                    }
                    arena.push(ArenaNode::new(name, kind));
                }
                arena[child].value = arena[child].value.saturating_add(count);
                at = child;
            }
        }
        let mut functions: Vec<FunctionCount> = functions
            .into_iter()
            .map(|(name, (s, t))| FunctionCount { name: name.to_string(), self_samples: s, total: t })
            .collect();
        functions.sort_by(|a, b| (b.self_samples, b.total, &a.name).cmp(&(a.self_samples, a.total, &b.name)));
        let mut modules: Vec<ModuleCount> = modules
            .into_iter()
            .map(|(name, (s, t))| ModuleCount { name: name.to_string(), self_samples: s, total: t })
            .collect();
        modules.sort_by(|a, b| (b.self_samples, b.total, &a.name).cmp(&(a.self_samples, a.total, &b.name)));
        // Samples a node needs to stay: at least one, whatever the share.
        let min_value = (arena[0].value as f64 * min_share.max(0.0)).ceil().max(1.0) as u64;
        let (flamegraph, pruned_nodes) = nest(&arena, min_value, |i, children| FlameNode {
            name: arena[i].name.to_string(),
            value: arena[i].value,
            kind: arena[i].kind,
            children,
        });
        user_stacks.cut =
            cut.into_iter().map(|(reason, samples)| StackEnd { reason: reason.to_string(), samples }).collect();
        user_stacks.cut.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.reason.cmp(&b.reason)));
        let kind = SampleKind::OnCpu;
        Ok(Self { kind, samples, lost, functions, modules, flamegraph, pruned_nodes, user_stacks })
    }
}

/// The arena as nested nodes — `make(i, children)` builds node `i` from its children, already
/// sorted widest first — leaving out every node (and what is below it) with fewer than
/// `min_value` samples; returns the root and how many were left out. Without recursion: a child
/// is always pushed after its parent, so which nodes stay is decided from the first index up,
/// and building from the last index down finds every child finished before its parent needs it.
pub(super) fn nest<T>(arena: &[ArenaNode<'_>], min_value: u64, mut make: impl FnMut(usize, Vec<T>) -> T) -> (T, u64) {
    let mut kept = vec![false; arena.len()];
    kept[0] = true;
    for (i, node) in arena.iter().enumerate() {
        if kept[i] {
            for &c in node.children.values() {
                kept[c] = arena[c].value >= min_value;
            }
        }
    }
    let mut built: Vec<Option<T>> = (0..arena.len()).map(|_| None).collect();
    for (i, node) in arena.iter().enumerate().rev() {
        if !kept[i] {
            continue;
        }
        let mut order: Vec<usize> = node.children.values().copied().filter(|&c| kept[c]).collect();
        order.sort_by(|&a, &b| arena[b].value.cmp(&arena[a].value).then_with(|| arena[a].name.cmp(arena[b].name)));
        let children = order.into_iter().map(|c| built[c].take().expect("children come after parents")).collect();
        built[i] = Some(make(i, children));
    }
    let pruned = kept.iter().filter(|&&k| !k).count() as u64;
    (built[0].take().expect("the root"), pruned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Frame {
        Frame::user(name, "m")
    }

    /// Whole stacks are counted against samples with a user stack; the others by the marker
    /// the sampler put outermost; a kernel-only stack is neither.
    #[test]
    fn whole_and_cut_user_stacks_are_counted_by_their_outermost_frame() {
        let marker = |name: &str| Frame::user(name, "");
        let profile = Profile {
            samples: 16,
            lost: 0,
            stacks: vec![
                (vec![f("leaf"), f("main"), f("_start")], 10),
                (vec![f("leaf"), marker("[truncated: no unwind info]")], 3),
                (vec![f("leaf"), marker(FRAME_POINTER_WALK)], 1),
                (vec![f("other"), marker("[truncated: too deep]")], 1),
                (vec![Frame::kernel("schedule")], 1),
                // A function that merely looks like a marker, not outermost, changes nothing.
                (vec![marker("[truncated: no unwind info]"), f("main")], 0),
            ],
            span: None,
        };
        let stacks = ProfileView::new(&profile).user_stacks;
        assert_eq!((stacks.samples, stacks.whole), (15, 10));
        let cut: Vec<(&str, u64)> = stacks.cut.iter().map(|c| (c.reason.as_str(), c.samples)).collect();
        assert_eq!(cut, [("truncated: no unwind info", 3), ("frame-pointer walk", 1), ("truncated: too deep", 1)]);
    }

    /// The indexed profile's view is the plain profile's, frame for frame: shared frames, one
    /// function name in two modules, a stack past the depth bound, every share.
    #[test]
    fn indexed_and_plain_profiles_give_one_view() {
        let mut frames = vec![f("main"), f("hot"), f("leaf"), Frame::kernel("leaf"), Frame::user("hot", "libz.so")];
        frames.extend((0..MAX_FLAME_DEPTH + 20).map(|i| f(&format!("deep{i}"))));
        let deep: Vec<u32> = (5..frames.len() as u32).chain([0]).collect();
        let indexed = IndexedProfile {
            samples: 1_111,
            lost: 7,
            span: None,
            frames,
            stacks: vec![
                (vec![2, 1, 0], 900),
                (vec![3, 1, 0], 90),
                (vec![2, 4, 0], 100),
                (vec![0], 20),
                (deep, 1),
                (vec![], 0),
            ],
        };
        let plain = Profile::from(indexed.clone());
        assert_eq!(plain.stacks[1].0, [Frame::kernel("leaf"), f("hot"), f("main")]);
        for share in [0.0, 0.001, 0.01, 0.1, 0.5, 2.0] {
            let view = ProfileView::pruned_indexed(&indexed, share);
            assert_eq!(view, ProfileView::pruned(&plain, share), "share {share}");
            assert_eq!((view.samples, view.lost), (1_111, 7));
        }
        let view = ProfileView::pruned_indexed(&indexed, 0.0);
        let main = &view.flamegraph.children[0];
        let deep = main.children.iter().find(|c| c.name.starts_with("deep")).expect("the deep stack's branch");
        assert_eq!(depth(deep) + 2, MAX_FLAME_DEPTH, "cut at the bound below root and main");
        let hot: Vec<u64> = view.functions.iter().filter(|c| c.name == "hot").map(|c| c.total).collect();
        assert_eq!(hot, [1_090], "one function, two modules, counted once per sample");
    }

    #[test]
    fn pruning_leaves_out_narrow_subtrees_and_counts_them() {
        // main → {hot ×900 → leaf ×900, warm ×95 → {a ×90, b ×5}, cold ×5 → c ×5}: 1,000 samples.
        let stack = |names: &[&str], n: u64| (names.iter().rev().map(|n| f(n)).collect::<Vec<_>>(), n);
        let profile = Profile {
            samples: 1000,
            lost: 0,
            stacks: vec![
                stack(&["main", "hot", "leaf"], 900),
                stack(&["main", "warm", "a"], 90),
                stack(&["main", "warm", "b"], 5),
                stack(&["main", "cold", "c"], 5),
            ],
            span: None,
        };
        let full = ProfileView::new(&profile);
        assert_eq!(full.pruned_nodes, 0);
        let v = ProfileView::pruned(&profile, 0.01); // 10 samples or more stay
        assert_eq!(v.pruned_nodes, 3, "b, cold and c (cold's child goes with it)");
        let main = &v.flamegraph.children[0];
        assert_eq!((main.name.as_str(), main.value), ("main", 1000), "a parent keeps its whole width");
        let names: Vec<(&str, u64)> = main.children.iter().map(|c| (c.name.as_str(), c.value)).collect();
        assert_eq!(names, [("hot", 900), ("warm", 95)]);
        assert_eq!(main.children[1].children.len(), 1, "warm keeps a, loses b");
        assert_eq!(v.functions, full.functions, "functions are complete");
        assert_eq!(v.modules, full.modules);
        // A share of 0 or below, or one sample's worth, leaves everything in.
        assert_eq!(ProfileView::pruned(&profile, 0.0), full);
        assert_eq!(ProfileView::pruned(&profile, -1.0), full);
        assert_eq!(ProfileView::pruned(&profile, 0.001), full);
        // A share above every child's leaves the root alone.
        let all = ProfileView::pruned(&profile, 1.5);
        assert!(all.flamegraph.children.is_empty() && all.pruned_nodes == 8, "{}", all.pruned_nodes);
    }

    #[test]
    fn module_shares_count_leaf_and_presence() {
        let prog = |n: &str| Frame::user(n, "prog");
        let libc = |n: &str| Frame::user(n, "libc.so.6");
        let unnamed = Frame::unnamed("libz.so.1", loupe_store::ObjectAddress { build_id: vec![1], address: 0x10 });
        let profile = Profile {
            samples: 10,
            lost: 0,
            stacks: vec![
                (vec![libc("strpbrk"), prog("parse"), prog("main")], 4),
                (vec![Frame::kernel("copy_user"), libc("read"), prog("main")], 3),
                (vec![unnamed, libc("inflate_wrapper"), prog("main")], 2),
                (vec![Frame::user("[unknown]+0x7f00", ""), prog("main")], 1),
            ],
            span: None,
        };
        let v = ProfileView::new(&profile);
        let got: Vec<(&str, u64, u64)> = v.modules.iter().map(|m| (m.name.as_str(), m.self_samples, m.total)).collect();
        assert_eq!(
            got,
            vec![("libc.so.6", 4, 9), ("[kernel]", 3, 3), ("libz.so.1", 2, 2), ("[unknown]", 1, 1), ("prog", 0, 10)]
        );
        assert_eq!(v.modules.iter().map(|m| m.self_samples).sum::<u64>(), 10, "self shares add up to the samples");
    }

    #[test]
    fn self_total_and_tree() {
        let profile = Profile {
            samples: 6,
            lost: 1,
            stacks: vec![
                (vec![f("hot"), f("work"), f("main")], 3),
                (vec![f("work"), f("main")], 2),
                (vec![f("rec"), f("rec"), f("main")], 1),
            ],
            span: None,
        };
        let v = ProfileView::new(&profile);
        let get = |n: &str| v.functions.iter().find(|x| x.name == n).unwrap();
        assert_eq!((get("hot").self_samples, get("hot").total), (3, 3));
        assert_eq!((get("work").self_samples, get("work").total), (2, 5));
        assert_eq!((get("main").self_samples, get("main").total), (0, 6));
        assert_eq!((get("rec").self_samples, get("rec").total), (1, 1), "recursion counts once");
        assert_eq!(v.functions[0].name, "hot");
        assert_eq!(v.flamegraph.value, 6);
        let main = &v.flamegraph.children[0];
        assert_eq!((main.name.as_str(), main.value), ("main", 6));
        assert_eq!((main.children[0].name.as_str(), main.children[0].value), ("work", 5));
        assert_eq!(main.children[0].children[0].name, "hot");
        assert_eq!(main.children[1].name, "rec", "siblings widest first");
    }

    fn depth(mut n: &FlameNode) -> usize {
        let mut d = 0;
        while let Some(c) = n.children.first() {
            n = c;
            d += 1;
        }
        d
    }

    #[test]
    fn each_node_says_what_kind_of_code_it_is() {
        let frames = vec![
            Frame::kernel("do_syscall_64"),
            Frame::user("deflate", "libz.so.1"),
            Frame::python("compress_loop", "/srv/pyzlib.py"),
            Frame::user("LazyCompile:f", "[jit]"),
            Frame::user("main", "python3.11"),
        ];
        let v = ProfileView::new(&Profile { samples: 1, lost: 0, stacks: vec![(frames, 1)], span: None });
        let mut kinds = Vec::new();
        let mut n = &v.flamegraph;
        while let Some(c) = n.children.first() {
            kinds.push((c.name.as_str(), c.kind));
            n = c;
        }
        use FrameKind::*;
        assert_eq!(
            kinds,
            [
                ("main", Native),
                ("LazyCompile:f", Jit),
                ("compress_loop", Python),
                ("deflate", Native),
                ("do_syscall_64", Kernel)
            ]
        );
        // Native is the default and left out of the JSON; the others say so.
        let json = serde_json::to_value(&v.flamegraph).unwrap();
        let main = &json["children"][0];
        assert!(main.get("kind").is_none());
        assert_eq!(main["children"][0]["children"][0]["kind"], "python");
        assert_eq!(serde_json::from_value::<FlameNode>(json).unwrap(), v.flamegraph);
    }

    #[test]
    fn deep_stacks_are_cut_at_the_bound_keeping_the_callers() {
        let frames: Vec<Frame> = (0..200_000).map(|i| f(&format!("f{i}"))).collect();
        let v = ProfileView::new(&Profile { samples: 1, lost: 0, stacks: vec![(frames, 1)], span: None });
        assert_eq!(depth(&v.flamegraph), MAX_FLAME_DEPTH);
        assert_eq!(v.flamegraph.children[0].name, "f199999", "outermost caller kept");
        let mut n = &v.flamegraph;
        while let Some(c) = n.children.first() {
            n = c;
        }
        assert_eq!(n.name, TRUNCATED);
    }

    #[test]
    fn node_limit_stops_the_build() {
        let stacks = (0..1000).map(|i| (vec![f(&format!("leaf{i}")), f("main")], 1)).collect();
        let profile = Profile { samples: 1000, lost: 0, stacks, span: None };
        assert_eq!(ProfileView::with_node_limit(&profile, 500).unwrap_err(), TooManyNodes { limit: 500 });
        assert_eq!(ProfileView::with_node_limit(&profile, 1002).unwrap().flamegraph.children[0].children.len(), 1000);
    }

    /// A tree at the depth bound serializes, deserializes (with Loupe's own parser), clones
    /// and drops on a thread with the 2 MiB stack of tokio's and the blocking pool's threads.
    #[test]
    fn deepest_tree_fits_a_small_thread_stack() {
        let frames: Vec<Frame> = (0..MAX_FLAME_DEPTH * 2).map(|i| f(&format!("function_{i}"))).collect();
        let v = ProfileView::new(&Profile { samples: 1, lost: 0, stacks: vec![(frames, 1)], span: None });
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let json = serde_json::to_vec(&v).unwrap();
                let msgpack = rmp_serde::to_vec_named(&v).unwrap();
                let back: ProfileView = crate::formats::deep_json::from_slice(&json).unwrap();
                assert_eq!(back, v.clone());
                assert!(!msgpack.is_empty());
                drop(back);
            })
            .unwrap()
            .join()
            .expect("no stack overflow");
    }
}
