//! What changed between a selection and a baseline: the differential flame graph and the
//! functions by change (`loupe profile --base-from … --base-to …`, `GET /api/v1/profile/diff`).
//!
//! Both sides are compared as shares of their own samples, so a baseline twice as long (or a
//! busier hour) does not read as "everything doubled": a function is *more* when it holds a
//! larger share of the selection's samples than of the baseline's. The flame graph keeps the
//! selection's shape (what ran then), each node carrying the baseline's samples along the same
//! path; paths that only the baseline has are not in it, and the functions only one side has are
//! listed by name (`new`, `gone`). Built as [`super::profile`]'s flame graph is: without
//! recursion, at most [`super::profile::MAX_FLAME_DEPTH`] levels, narrow nodes left out by share.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use loupe_store::{FrameKind, IndexedProfile, SampleKind};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::profile::{ArenaNode, nest, root_first};

/// The comparison of two ranges' profiles with the same filters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProfileDiffView {
    /// What every count is (`on_cpu` samples, `off_cpu` nanoseconds waited), on both sides.
    #[schema(value_type = String, example = "on_cpu")]
    pub kind: SampleKind,
    /// The selection's samples (or ns waited, off the CPU): what its shares are of.
    pub samples: u64,
    /// The baseline's.
    pub base_samples: u64,
    /// Functions on either side, by how much their share of `self` changed (largest change
    /// either way first), then of `total`.
    pub functions: Vec<FunctionChange>,
    /// Functions the selection has and the baseline has not, widest first.
    pub new: Vec<String>,
    /// Functions the baseline has and the selection has not, widest first.
    pub gone: Vec<String>,
    /// The selection's flame graph; each node also holds the baseline's samples on the same
    /// path (`base`).
    pub flamegraph: DiffNode,
    /// Selection nodes left out for holding less than `min_share` of its samples.
    pub pruned_nodes: u64,
}

/// One function on both sides: counts, and shares of each side's samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FunctionChange {
    pub name: String,
    /// Selection samples where it is the leaf.
    #[serde(rename = "self")]
    pub self_samples: u64,
    /// Selection samples where it is anywhere on the stack.
    pub total: u64,
    pub base_self: u64,
    pub base_total: u64,
    /// Its `self` share of the selection less its `self` share of the baseline (−1 to 1).
    pub self_change: f64,
    /// The same of `total`.
    pub total_change: f64,
    /// Its `total` share of the selection over that of the baseline; `null` when the baseline
    /// does not have it.
    pub total_ratio: Option<f64>,
}

/// A node of the selection's flame graph with the baseline's samples on the same path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DiffNode {
    pub name: String,
    /// Selection samples through this path.
    pub value: u64,
    /// Baseline samples through this path.
    pub base: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub children: Vec<DiffNode>,
}

type Map<K, V> = HashMap<K, V, RandomState>;

impl ProfileDiffView {
    /// `selection` against `base` (both of `kind`), selection nodes under `min_share` of its
    /// samples left out.
    pub fn new(selection: &IndexedProfile, base: &IndexedProfile, kind: SampleKind, min_share: f64) -> ProfileDiffView {
        let (now, before) = (function_counts(selection), function_counts(base));
        let (samples, base_samples) = (selection.samples, base.samples);
        let mut functions: Vec<FunctionChange> = now
            .iter()
            .map(|(name, &counts)| {
                let b = before.get(name).copied().unwrap_or((0, 0));
                change(name.to_string(), counts, b, samples, base_samples)
            })
            .collect();
        functions.extend(
            before
                .iter()
                .filter(|(name, _)| !now.contains_key(*name))
                .map(|(name, &counts)| change(name.to_string(), (0, 0), counts, samples, base_samples)),
        );
        functions.sort_by(|a, b| {
            (b.self_change.abs(), b.total_change.abs())
                .partial_cmp(&(a.self_change.abs(), a.total_change.abs()))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.name.cmp(&b.name))
        });
        // Only one side: widest first.
        let only = |side: &Map<&str, (u64, u64)>, other: &Map<&str, (u64, u64)>| {
            let mut v: Vec<(&str, u64)> =
                side.iter().filter(|(name, _)| !other.contains_key(*name)).map(|(name, c)| (*name, c.1)).collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            v.into_iter().map(|(name, _)| name.to_string()).collect::<Vec<_>>()
        };
        let (new, gone) = (only(&now, &before), only(&before, &now));
        let (flamegraph, pruned_nodes) = tree(selection, base, min_share);
        ProfileDiffView { kind, samples, base_samples, functions, new, gone, flamegraph, pruned_nodes }
    }
}

/// Per function name: its samples as the leaf (`self`) and on any frame of a stack (`total`,
/// once per stack) — what the comparison needs of each side. Frames are named once each and
/// counted by index, with a stamp per name for "already in this stack": no flame-graph arena
/// (building one per side for these counts took most of a diff of two hours: the comparison
/// took 253 ms of 390 with them, 97 of 203 without, `benches/profile_diff.rs`).
fn function_counts(p: &IndexedProfile) -> Map<&str, (u64, u64)> {
    let mut ids: Map<&str, u32> = Map::default();
    let frame_name: Vec<u32> = p
        .frames
        .iter()
        .map(|f| {
            let n = ids.len() as u32;
            *ids.entry(f.function.as_str()).or_insert(n)
        })
        .collect();
    let mut counts = vec![(0u64, 0u64); ids.len()];
    let mut stamp = vec![usize::MAX; ids.len()];
    for (k, (stack, n)) in p.stacks.iter().enumerate() {
        let name = |i: &u32| frame_name.get(*i as usize).copied();
        if let Some(leaf) = stack.first().and_then(name) {
            counts[leaf as usize].0 = counts[leaf as usize].0.saturating_add(*n);
        }
        for id in stack.iter().filter_map(name) {
            if stamp[id as usize] != k {
                stamp[id as usize] = k;
                counts[id as usize].1 = counts[id as usize].1.saturating_add(*n);
            }
        }
    }
    ids.into_iter().map(|(name, id)| (name, counts[id as usize])).filter(|(_, c)| c.1 > 0).collect()
}

fn change(name: String, (s, t): (u64, u64), (bs, bt): (u64, u64), samples: u64, base_samples: u64) -> FunctionChange {
    let share = |n: u64, of: u64| if of == 0 { 0.0 } else { n as f64 / of as f64 };
    let (now_total, base_total_share) = (share(t, samples), share(bt, base_samples));
    FunctionChange {
        name,
        self_samples: s,
        total: t,
        base_self: bs,
        base_total: bt,
        self_change: share(s, samples) - share(bs, base_samples),
        total_change: now_total - base_total_share,
        total_ratio: (base_total_share > 0.0).then(|| now_total / base_total_share),
    }
}

/// The selection's stacks in a flame graph's arena, the baseline's counted (beside it, by node)
/// only along paths the selection has; then nested as the selection's flame graph.
fn tree(selection: &IndexedProfile, base: &IndexedProfile, min_share: f64) -> (DiffNode, u64) {
    let mut arena = vec![ArenaNode::new("all", FrameKind::Native)];
    for (stack, count) in &selection.stacks {
        arena[0].value = arena[0].value.saturating_add(*count);
        let mut at = 0;
        for (name, kind) in root_first(selection.frames_of(stack)) {
            let next = arena.len();
            let child = *arena[at].children.entry(name).or_insert(next);
            if child == next {
                arena.push(ArenaNode::new(name, kind));
            }
            arena[child].value = arena[child].value.saturating_add(*count);
            at = child;
        }
    }
    let mut base_of = vec![0u64; arena.len()];
    for (stack, count) in &base.stacks {
        base_of[0] = base_of[0].saturating_add(*count);
        let mut at = 0;
        for (name, _) in root_first(base.frames_of(stack)) {
            let Some(&child) = arena[at].children.get(name) else { break };
            base_of[child] = base_of[child].saturating_add(*count);
            at = child;
        }
    }
    let min_value = (arena[0].value as f64 * min_share.max(0.0)).ceil().max(1.0) as u64;
    nest(&arena, min_value, |i, children| DiffNode {
        name: arena[i].name.to_string(),
        value: arena[i].value,
        base: base_of[i],
        children,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::profile::{MAX_FLAME_DEPTH, ProfileView, TRUNCATED};
    use loupe_store::Frame;

    /// Stacks written root first; held leaf first, each frame once, as the store holds them.
    fn profile(stacks: &[(&[&str], u64)]) -> IndexedProfile {
        let mut p = IndexedProfile::default();
        for (names, n) in stacks {
            let stack = names
                .iter()
                .rev()
                .map(|name| match p.frames.iter().position(|f| f.function.as_str() == *name) {
                    Some(i) => i as u32,
                    None => {
                        p.frames.push(Frame::user(*name, "m"));
                        (p.frames.len() - 1) as u32
                    }
                })
                .collect();
            p.stacks.push((stack, *n));
            p.samples += n;
        }
        p
    }

    /// The comparison's own counts are the profile view's: self as the leaf, total once per
    /// stack (a recursive function counted once), one name across modules.
    #[test]
    fn function_counts_are_the_profiles() {
        let mut p =
            profile(&[(&["main", "f", "f", "f"], 5), (&["main", "g", "f"], 3), (&["main", "g"], 2), (&["main"], 1)]);
        // `g` of another module: another frame, the same function name.
        p.frames.push(Frame::user("g", "other.so"));
        let g2 = (p.frames.len() - 1) as u32;
        let main = p.frames.iter().position(|f| f.function.as_str() == "main").unwrap() as u32;
        p.stacks.push((vec![g2, main], 4));
        p.samples += 4;
        let view = ProfileView::pruned_indexed(&p, 1.0);
        let want: Map<&str, (u64, u64)> =
            view.functions.iter().map(|f| (f.name.as_str(), (f.self_samples, f.total))).collect();
        assert_eq!(function_counts(&p), want);
        assert_eq!(function_counts(&p)["f"], (8, 8), "recursion counted once per stack");
        assert_eq!(function_counts(&p)["g"], (6, 9), "both modules' g");
    }

    /// A baseline twice as long with the same mix reads as no change; one function doubled in
    /// share, one new, one gone read as exactly that.
    #[test]
    fn shares_not_counts_decide_what_changed() {
        let base =
            profile(&[(&["main", "work", "hash"], 200), (&["main", "work", "copy"], 200), (&["main", "old"], 400)]);
        let same =
            profile(&[(&["main", "work", "hash"], 100), (&["main", "work", "copy"], 100), (&["main", "old"], 200)]);
        let d = ProfileDiffView::new(&same, &base, SampleKind::OnCpu, 0.0);
        assert!(d.functions.iter().all(|f| f.self_change.abs() < 1e-12 && f.total_change.abs() < 1e-12), "{d:?}");
        assert!(d.new.is_empty() && d.gone.is_empty());

        let now =
            profile(&[(&["main", "work", "hash"], 200), (&["main", "work", "copy"], 100), (&["main", "fresh"], 100)]);
        let d = ProfileDiffView::new(&now, &base, SampleKind::OnCpu, 0.0);
        assert_eq!(d.new, ["fresh"]);
        assert_eq!(d.gone, ["old"]);
        let f = |n: &str| d.functions.iter().find(|f| f.name == n).unwrap();
        assert!((f("hash").self_change - (0.5 - 0.25)).abs() < 1e-12);
        assert_eq!(f("hash").total_ratio, Some(2.0));
        assert!((f("old").self_change + 0.5).abs() < 1e-12, "gone: its whole share lost");
        assert_eq!(f("fresh").total_ratio, None);
        assert_eq!(d.functions[0].name, "old", "the largest change first");
        // The tree is the selection's: `old` is not in it; `work` carries both sides.
        let main = &d.flamegraph.children[0];
        assert_eq!((main.name.as_str(), main.value, main.base), ("main", 400, 800));
        let work = main.children.iter().find(|c| c.name == "work").unwrap();
        assert_eq!((work.value, work.base), (300, 400));
        assert!(main.children.iter().all(|c| c.name != "old"));
        let fresh = main.children.iter().find(|c| c.name == "fresh").unwrap();
        assert_eq!((fresh.value, fresh.base), (100, 0));
    }

    #[test]
    fn a_stack_past_the_depth_bound_is_cut_and_narrow_nodes_are_pruned() {
        let deep: Vec<String> = (0..MAX_FLAME_DEPTH + 50).map(|i| format!("f{i}")).collect();
        let deep: Vec<&str> = deep.iter().map(String::as_str).collect();
        let now = profile(&[(&deep, 1), (&["main", "wide"], 99)]);
        let d = ProfileDiffView::new(&now, &now, SampleKind::OnCpu, 0.0);
        let mut depth = 0;
        let mut at = &d.flamegraph;
        while let Some(c) = at.children.iter().find(|c| c.name.starts_with('f') || c.name == TRUNCATED) {
            depth += 1;
            at = c;
        }
        assert_eq!((depth, at.name.as_str()), (MAX_FLAME_DEPTH, TRUNCATED));
        let pruned = ProfileDiffView::new(&now, &now, SampleKind::OnCpu, 0.05);
        assert_eq!(pruned.flamegraph.children.len(), 1, "the 1-sample path under 5 % is left out");
        assert!(pruned.pruned_nodes > 0);
    }
}
