//! Rack contention (SyncMillisampler): per slot of a synchronized run, the rack's summed ingress
//! and egress, which hosts were bursting in each direction, and the incast victims — hosts
//! whose ingress burst coincides with at least `min_senders` other hosts' egress bursts. A
//! victim's ingress burst usually outlasts the senders' (its port drains the queue the senders
//! filled at once), so coincidence is judged over the whole burst — the consecutive slots in
//! which the victim bursts in — not slot by slot ([`incasts`]).
//!
//! A slot is keyed by its absolute start and width, so the runs of different hosts that started
//! at one instant line up. Whether a host bursts in a slot is decided on that host's own bytes
//! (all its runs of that slot summed) — so the per-host results of a fleet can be merged by
//! summing the numbers and uniting the host sets, in any order and grouping, and the victims
//! recomputed from the united sets: merging equals running over all hosts' runs at once.

use std::collections::{BTreeMap, BTreeSet};

/// One run's slots, as an analysis reads them.
pub struct RunSlots<'a> {
    pub host: &'a str,
    pub start_ns: u64,
    pub interval_ns: u64,
    pub in_bytes: &'a [u64],
    pub out_bytes: &'a [u64],
    pub in_ce_bytes: &'a [u64],
    pub retx_bytes: &'a [u64],
}

/// A slot of the rack: sums over its hosts, and who burst.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RackSlot {
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub ce_bytes: u64,
    pub retx_bytes: u64,
    pub in_burst: BTreeSet<String>,
    pub out_burst: BTreeSet<String>,
}

impl RackSlot {
    /// Hosts bursting in either direction.
    pub fn bursting(&self) -> usize {
        self.in_burst.union(&self.out_burst).count()
    }

    /// Adds another part of the same slot (other hosts).
    pub fn absorb(&mut self, other: RackSlot) {
        self.in_bytes += other.in_bytes;
        self.out_bytes += other.out_bytes;
        self.ce_bytes += other.ce_bytes;
        self.retx_bytes += other.retx_bytes;
        self.in_burst.extend(other.in_burst);
        self.out_burst.extend(other.out_burst);
    }
}

/// Slots by (start, width), in time order.
pub type Rack = BTreeMap<(u64, u64), RackSlot>;

/// An incast: a victim's ingress burst and the other hosts bursting out during it or just
/// before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incast {
    pub victim: String,
    /// The slots in which the victim burst in, as keys of the [`Rack`].
    pub slots: Vec<(u64, u64)>,
    pub senders: BTreeSet<String>,
}

/// Every ingress burst of every host during which at least `min_senders` other hosts burst out.
/// A function of the slots alone, so it is recomputed after each merge.
///
/// `gap_slots` is the tolerance for what sits between a sender's egress and the victim's
/// counted ingress (a switch's buffer, the receiving NIC's interrupt coalescing, a receive
/// softirq the victim's CPU holds): one burst continues across up to that many slots in which
/// the victim's ingress dipped below the threshold, and a sender counts when it burst out up to
/// that many slots before the burst's first slot. With 0, only consecutive slots join and only
/// senders bursting in the victim's own slots count.
pub fn incasts(rack: &Rack, min_senders: u64, gap_slots: u64) -> Vec<Incast> {
    // (victim, slot width) → the starts of the slots in which it burst in, in time order: a
    // burst is judged among slots of one width, so runs of other intervals do not cut it.
    let mut bursts: BTreeMap<(&str, u64), Vec<u64>> = BTreeMap::new();
    for (&(start, width), slot) in rack {
        for v in &slot.in_burst {
            bursts.entry((v.as_str(), width)).or_default().push(start);
        }
    }
    let mut found = Vec::new();
    for ((victim, width), starts) in bursts {
        let reach = width.saturating_mul(gap_slots.saturating_add(1));
        let mut current: Option<Incast> = None;
        for start in starts {
            // The slots whose senders this slot adds: those since the burst's previous slot,
            // or the lead before a new burst.
            let from = match current.as_ref().and_then(|c| c.slots.last()) {
                Some(&(last, _)) if start - last <= reach => last + width,
                _ => {
                    found.extend(current.take());
                    start.saturating_sub(width.saturating_mul(gap_slots))
                }
            };
            let incast = current.get_or_insert_with(|| Incast {
                victim: victim.to_string(),
                slots: Vec::new(),
                senders: BTreeSet::new(),
            });
            incast.slots.push((start, width));
            let window = rack.range((from, width)..=(start, width)).filter(|(k, _)| k.1 == width);
            for (_, slot) in window {
                incast.senders.extend(slot.out_burst.iter().filter(|s| s.as_str() != victim).cloned());
            }
        }
        found.extend(current);
    }
    found.retain(|i| i.senders.len() as u64 >= min_senders.max(1));
    found
}

/// Victims and senders by slot: for each slot of an incast, its victims and the senders of
/// their incasts, each list in name order — what a result row shows. The same as gathering
/// [`incasts`] by slot (a test holds it to that), computed over interned hosts and bitsets: a
/// rack of a thousand hosts whose hundreds of bursts each see dozens of senders would clone
/// millions of names into [`Incast::senders`].
pub fn incast_slots(rack: &Rack, min_senders: u64, gap_slots: u64) -> BTreeMap<(u64, u64), (Vec<&str>, Vec<&str>)> {
    let mut names: Vec<&str> =
        rack.values().flat_map(|s| s.in_burst.iter().chain(&s.out_burst)).map(String::as_str).collect();
    names.sort_unstable();
    names.dedup();
    let id = |h: &String| names.binary_search(&h.as_str()).expect("every burst host is interned");
    let keys: Vec<(u64, u64)> = rack.keys().copied().collect();
    let ins: Vec<Vec<usize>> = rack.values().map(|s| s.in_burst.iter().map(id).collect()).collect();
    let outs: Vec<Vec<usize>> = rack.values().map(|s| s.out_burst.iter().map(id).collect()).collect();
    let listed = |bits: &HostBits| -> Vec<&str> { bits.ids().map(|i| names[i]).collect() };
    incast_slots_by_id(&keys, &ins, &outs, names.len(), min_senders, gap_slots)
        .into_iter()
        .map(|(i, (v, s))| (keys[i], (listed(&v), listed(&s))))
        .collect()
}

/// A set of hosts by id, as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostBits(Vec<u64>);

impl HostBits {
    fn new(hosts: usize) -> HostBits {
        HostBits(vec![0; hosts.div_ceil(64)])
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Adds `other`'s ids (a set over as many hosts).
    fn or(&mut self, other: &HostBits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }

    /// The ids in the set, ascending.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| w * 64 + b))
    }
}

/// [`incast_slots`] over hosts as ids `0..hosts`: `keys` the slots in [`Rack`] order, `ins` and
/// `outs` each slot's hosts bursting in and out. Per slot index with an incast: its victims'
/// and their senders' bits. For a caller that keeps hosts as ids (a merge that interned them
/// once), with ids in name order when it wants the lists in name order.
pub fn incast_slots_by_id(
    keys: &[(u64, u64)],
    ins: &[Vec<usize>],
    outs: &[Vec<usize>],
    hosts: usize,
    min_senders: u64,
    gap_slots: u64,
) -> BTreeMap<usize, (HostBits, HostBits)> {
    // (victim, width) → indices of the slots in which it burst in, in time order.
    let mut bursts: BTreeMap<(usize, u64), Vec<usize>> = BTreeMap::new();
    for (i, slot_ins) in ins.iter().enumerate() {
        for &v in slot_ins {
            bursts.entry((v, keys[i].1)).or_default().push(i);
        }
    }
    // Each slot's egress bursts as bits, made when a window first reaches the slot: a window
    // then ORs words instead of setting a bit per sender (measured: setting bits was a third
    // of a 1,000-host merge). At most a set per slot with egress bursts: slots × hosts bits,
    // the order `marked` takes already.
    let mut out_bits: Vec<Option<HostBits>> = vec![None; keys.len()];
    let mut marked: BTreeMap<usize, (HostBits, HostBits)> = BTreeMap::new();
    let mut senders = HostBits::new(hosts);
    let mut close = |victim: usize, slots: &[usize], senders: &mut HostBits| {
        senders.0[victim / 64] &= !(1 << (victim % 64));
        let count: u64 = senders.0.iter().map(|w| w.count_ones() as u64).sum();
        if !slots.is_empty() && count >= min_senders.max(1) {
            for &i in slots {
                let (v, s) = marked.entry(i).or_insert_with(|| (HostBits::new(hosts), HostBits::new(hosts)));
                v.set(victim);
                s.or(senders);
            }
        }
        senders.0.iter_mut().for_each(|w| *w = 0);
    };
    for ((victim, width), slots) in bursts {
        let reach = width.saturating_mul(gap_slots.saturating_add(1));
        let mut current: Vec<usize> = Vec::new();
        for i in slots {
            let start = keys[i].0;
            let from = match current.last() {
                Some(&last) if start - keys[last].0 <= reach => keys[last].0 + width,
                _ => {
                    close(victim, &current, &mut senders);
                    current.clear();
                    start.saturating_sub(width.saturating_mul(gap_slots))
                }
            };
            current.push(i);
            let first = keys.partition_point(|k| *k < (from, width));
            for j in (first..=i).filter(|&j| keys[j].1 == width && !outs[j].is_empty()) {
                let bits = out_bits[j].get_or_insert_with(|| {
                    let mut b = HostBits::new(hosts);
                    outs[j].iter().for_each(|&h| b.set(h));
                    b
                });
                senders.or(bits);
            }
        }
        close(victim, &current, &mut senders);
    }
    marked
}

/// Bytes in one slot of `interval_ns` at `threshold_bps` (bytes per second).
pub fn burst_bytes(threshold_bps: u64, interval_ns: u64) -> u64 {
    ((threshold_bps as u128 * interval_ns as u128).div_ceil(1_000_000_000) as u64).max(1)
}

/// The rack view of `runs`: every slot in which some host moved bytes. A host bursts in a slot
/// when its bytes in one direction reach `threshold_bps` over the slot.
pub fn contention<'a>(runs: impl IntoIterator<Item = RunSlots<'a>>, threshold_bps: u64) -> Rack {
    // (slot, host) → [in, out, ce, retx]: a host's runs of one slot are summed first.
    let mut per_host: BTreeMap<((u64, u64), &str), [u64; 4]> = BTreeMap::new();
    for r in runs {
        for (k, &inb) in r.in_bytes.iter().enumerate() {
            let out = r.out_bytes.get(k).copied().unwrap_or(0);
            if inb == 0 && out == 0 {
                continue;
            }
            let key = (r.start_ns + k as u64 * r.interval_ns, r.interval_ns);
            let e = per_host.entry((key, r.host)).or_default();
            e[0] += inb;
            e[1] += out;
            e[2] += r.in_ce_bytes.get(k).copied().unwrap_or(0);
            e[3] += r.retx_bytes.get(k).copied().unwrap_or(0);
        }
    }
    let mut rack = Rack::new();
    for ((key, host), [inb, out, ce, retx]) in per_host {
        let limit = burst_bytes(threshold_bps, key.1);
        let slot = rack.entry(key).or_default();
        slot.in_bytes += inb;
        slot.out_bytes += out;
        slot.ce_bytes += ce;
        slot.retx_bytes += retx;
        if inb >= limit {
            slot.in_burst.insert(host.to_string());
        }
        if out >= limit {
            slot.out_burst.insert(host.to_string());
        }
    }
    rack
}

/// Merges rack views (per-host or already merged) into one.
pub fn merge(parts: impl IntoIterator<Item = Rack>) -> Rack {
    let mut all = Rack::new();
    for part in parts {
        for (key, slot) in part {
            all.entry(key).or_default().absorb(slot);
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(host: &'a str, start_ns: u64, in_b: &'a [u64], out_b: &'a [u64]) -> RunSlots<'a> {
        RunSlots {
            host,
            start_ns,
            interval_ns: 1_000_000,
            in_bytes: in_b,
            out_bytes: out_b,
            in_ce_bytes: &[],
            retx_bytes: &[],
        }
    }

    #[test]
    fn names_the_victim_of_coinciding_egress_bursts() {
        // 1 ms slots, threshold 10 MB/s = 10,000 bytes per slot.
        let z = [0u64; 3];
        let runs = vec![
            run("v", 0, &[100, 40_000, 500], &[0, 0, 0]),
            run("s1", 0, &z, &[0, 20_000, 0]),
            run("s2", 0, &z, &[0, 15_000, 9_000]),
            run("s3", 0, &z, &[0, 9_999, 0]),
        ];
        let rack = contention(runs, 10_000_000);
        let slot = &rack[&(1_000_000, 1_000_000)];
        assert_eq!((slot.in_bytes, slot.out_bytes, slot.bursting()), (40_000, 44_999, 3));
        let found = incasts(&rack, 2, 0);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].victim.as_str(), found[0].slots.as_slice()), ("v", &[(1_000_000, 1_000_000)][..]));
        assert_eq!(found[0].senders.iter().collect::<Vec<_>>(), ["s1", "s2"]);
        assert!(incasts(&rack, 3, 0).is_empty(), "s3 stayed under the threshold");
        // Slots with bytes but no burst are kept (their bytes count in the rack's sum).
        assert_eq!(rack[&(0, 1_000_000)].in_bytes, 100);
        assert_eq!(rack.len(), 3);
    }

    #[test]
    fn senders_anywhere_in_the_victims_burst_count() {
        // The victim's port drains for three slots; the senders burst in the first and second.
        let runs = vec![
            run("v", 0, &[20_000, 20_000, 20_000, 0, 20_000], &[0; 5]),
            run("s1", 0, &[0; 5], &[50_000, 0, 0, 0, 0]),
            run("s2", 0, &[0; 5], &[0, 50_000, 0, 0, 0]),
            run("s3", 0, &[0; 5], &[0, 0, 0, 0, 50_000]),
        ];
        let found = incasts(&contention(runs, 10_000_000), 2, 0);
        assert_eq!(found.len(), 1, "the lone burst at slot 4 has one sender");
        assert_eq!(found[0].slots.len(), 3);
        assert_eq!(found[0].senders.iter().collect::<Vec<_>>(), ["s1", "s2"]);
    }

    #[test]
    fn a_burst_spans_short_dips_and_counts_senders_just_before_it() {
        // The victim's ingress shows up two slots after the first sender's egress (a receive
        // softirq held), and dips for two slots in the middle; each piece alone has fewer than
        // three senders.
        let ms = 1_000_000;
        let runs = vec![
            run("v", 0, &[0, 0, 20_000, 20_000, 0, 0, 20_000, 20_000, 0, 0, 0, 0, 20_000], &[0; 13]),
            run("s1", 0, &[0; 13], &[50_000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            run("s2", 0, &[0; 13], &[0, 0, 50_000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            run("s3", 0, &[0; 13], &[0, 0, 0, 0, 0, 50_000, 0, 0, 0, 0, 0, 0, 0]),
            run("s4", 0, &[0; 13], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 50_000, 0, 0]),
            // A run of another width on the victim, in the middle: it neither cuts nor joins.
            RunSlots { interval_ns: 10 * ms, ..run("v", 4 * ms, &[150_000], &[0]) },
        ];
        let rack = contention(runs, 10_000_000);
        assert!(incasts(&rack, 3, 0).is_empty(), "no piece has three senders on its own");
        let found: Vec<_> = incasts(&rack, 3, 2).into_iter().filter(|i| i.slots[0].1 == ms).collect();
        assert_eq!(found.len(), 1, "{found:?}");
        let slots: Vec<u64> = found[0].slots.iter().map(|k| k.0 / ms).collect();
        assert_eq!(slots, [2, 3, 6, 7], "the victim's own burst slots; the three-slot dip ends it");
        assert_eq!(found[0].senders.iter().collect::<Vec<_>>(), ["s1", "s2", "s3"], "s4 bursts after its end");
        // The slot at 12 is a burst of its own (four quiet slots before it), with s4 in its lead.
        let last = incasts(&rack, 1, 2).into_iter().find(|i| i.slots == [(12 * ms, ms)]).unwrap();
        assert_eq!(last.senders.iter().collect::<Vec<_>>(), ["s4"]);
    }

    /// [`incast_slots`] against [`incasts`] gathered by slot, on random racks.
    #[test]
    fn incast_slots_are_the_incasts_by_slot() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut compared = 0;
        for case in 0..40 {
            let hosts: Vec<String> = (0..2 + next(12)).map(|h| format!("h{h}")).collect();
            let slots = 1 + next(60) as usize;
            let series: Vec<(Vec<u64>, Vec<u64>)> = hosts
                .iter()
                .map(|_| {
                    let mut burst = || (0..slots).map(|_| if next(5) == 0 { 20_000 } else { next(900) }).collect();
                    (burst(), burst())
                })
                .collect();
            let mut runs: Vec<RunSlots> = hosts.iter().zip(&series).map(|(h, (i, o))| run(h, 0, i, o)).collect();
            // A run of another width, to be kept apart.
            runs.push(RunSlots { interval_ns: 10_000_000, ..run(&hosts[0], 0, &series[1].1, &series[0].0) });
            let rack = contention(runs, 10_000_000);
            for (min, gap) in [(1, 0), (2, 2), (3, 1)] {
                let mut want: BTreeMap<(u64, u64), (BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
                for incast in incasts(&rack, min, gap) {
                    for key in &incast.slots {
                        let e = want.entry(*key).or_default();
                        e.0.insert(incast.victim.clone());
                        e.1.extend(incast.senders.iter().cloned());
                    }
                }
                let owned = |names: Vec<&str>| names.into_iter().map(String::from).collect::<BTreeSet<String>>();
                let got: BTreeMap<_, _> =
                    incast_slots(&rack, min, gap).into_iter().map(|(k, (v, s))| (k, (owned(v), owned(s)))).collect();
                assert_eq!(got, want, "case {case}, min {min}, gap {gap}");
                compared += want.len();
            }
        }
        assert!(compared > 100, "only {compared} incast slots compared");
    }

    #[test]
    fn merging_per_host_views_equals_the_view_of_all_runs() {
        let a_in = [5_000u64, 12_000, 0, 7];
        let a_out = [11_000u64, 0, 3, 0];
        let b_in = [6_000u64, 0, 0, 0];
        let b_out = [0u64, 30_000, 0, 0];
        let all = contention(
            vec![run("a", 0, &a_in, &a_out), run("a", 0, &a_in, &a_out), run("b", 1_000_000, &b_in, &b_out)],
            10_000_000,
        );
        let a = contention(vec![run("a", 0, &a_in, &a_out), run("a", 0, &a_in, &a_out)], 10_000_000);
        let b = contention(vec![run("b", 1_000_000, &b_in, &b_out)], 10_000_000);
        assert_eq!(merge([a.clone(), b.clone()]), all);
        assert_eq!(merge([b, a]), all);
        // The two runs of host a sum before the threshold: 2 × 5,000 in slot 0 is a burst.
        assert!(all[&(0, 1_000_000)].in_burst.contains("a"));
    }
}
