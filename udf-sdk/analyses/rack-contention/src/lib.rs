//! `rack-contention` (SyncMillisampler): over the runs of a range — usually one synchronized run
//! on every host of a rack (`loupe fleet run`) — each slot's summed ingress and egress, the hosts
//! bursting in it, and the incast victims: hosts whose ingress burst coincides with at least
//! `min_senders` other hosts' egress bursts (anywhere in the victim's burst: its port drains
//! the queue for longer than the senders send; and up to `gap_slots` slots before it or across
//! a dip in it, for what delays the victim's counted ingress), named with those senders;
//! CE-marked and retransmitted bytes beside them.
//!
//! One row per slot in which any host moved bytes (a quiet slot adds nothing to a sum), so that
//! `merge` — numbers summed, host sets united, victims recomputed — is exact, commutative and
//! associative. The algorithm is [`loupe_detect::rack`]. Partials are columnar (the
//! `fleet-batches` world): a thousand hosts' slots cross into the merging sandbox as one batch of
//! whole lists, each partial's host lists split once per distinct list.

use loupe_detect::rack::{self, Rack, RunSlots};
use loupe_udf::{
    ColumnarAnalysis, Columns, Context, Description, FastMap, Interner, Param, Partial, ResultKind, TextColumn,
};

/// Most slots in one result: a rack's synchronized run of 2,000 slots fits fifty times.
const MAX_ROWS: usize = 100_000;

struct RackContention;

/// Slots being merged, hosts interned once: a partial's host lists are split once per distinct
/// list (its dictionary), its rows then add numbers and ids, and the result is written from
/// the ids (incasts over host bitsets) — no map of host names is rebuilt per merge.
#[derive(Default)]
struct Merging {
    hosts: Interner,
    /// Slot key → index into `slots`.
    index: FastMap<(u64, u64), usize>,
    slots: Vec<Slot>,
}

struct Slot {
    key: (u64, u64),
    /// In, out, CE, retransmitted bytes.
    sums: [u64; 4],
    in_burst: Vec<usize>,
    out_burst: Vec<usize>,
}

impl Merging {
    fn id(&mut self, host: &str) -> usize {
        self.hosts.id(host) as usize
    }

    /// The ids of a comma-separated host list.
    fn list(&mut self, text: &str) -> Vec<usize> {
        text.split(',').filter(|h| !h.is_empty()).map(|h| self.id(h)).collect()
    }

    /// The index of slot `key` in `slots`, added if new. `guess` is tried first: a partial's
    /// rows are in time order, as are the merged slots, so the slot after the previous row's
    /// is nearly always the next row's, and the map is not asked.
    #[inline]
    fn slot_at(&mut self, key: (u64, u64), guess: usize) -> usize {
        if self.slots.get(guess).is_some_and(|s| s.key == key) {
            return guess;
        }
        *self.index.entry(key).or_insert_with(|| {
            self.slots.push(Slot { key, sums: [0; 4], in_burst: Vec::new(), out_burst: Vec::new() });
            self.slots.len() - 1
        })
    }

    fn slot(&mut self, key: (u64, u64)) -> &mut Slot {
        let i = self.slot_at(key, usize::MAX);
        &mut self.slots[i]
    }

    /// Adds one host's (or several hosts') view of the rack.
    fn add_rack(&mut self, rack: &Rack) {
        for (&key, s) in rack {
            let ins: Vec<usize> = s.in_burst.iter().map(|h| self.id(h)).collect();
            let outs: Vec<usize> = s.out_burst.iter().map(|h| self.id(h)).collect();
            let slot = self.slot(key);
            for (sum, v) in slot.sums.iter_mut().zip([s.in_bytes, s.out_bytes, s.ce_bytes, s.retx_bytes]) {
                *sum += v;
            }
            slot.in_burst.extend(ins);
            slot.out_burst.extend(outs);
        }
    }

    /// Adds a partial made by [`Merging::columns`], here or on another host, row by row.
    fn add(&mut self, c: &Partial) -> Result<(), String> {
        let num = |name: &str| c.require(name).and_then(|v| v.u64s());
        let (start, interval) = (num("slot_start_ns")?, num("interval_ns")?);
        let sums = [num("rack_in_bytes")?, num("rack_out_bytes")?, num("ce_bytes")?, num("retx_bytes")?];
        let (in_burst, out_burst) = (c.require("in_burst")?.text()?, c.require("out_burst")?.text()?);
        let n = start.len();
        let lengths = [interval.len(), in_burst.codes.len(), out_burst.codes.len()];
        if lengths.into_iter().chain(sums.iter().map(|s| s.len())).any(|len| len != n) {
            return Err("a rack-contention partial with columns of different lengths".into());
        }
        let in_lists: Vec<Vec<usize>> = in_burst.dictionary.iter().map(|t| self.list(t)).collect();
        let out_lists: Vec<Vec<usize>> = out_burst.dictionary.iter().map(|t| self.list(t)).collect();
        for (codes, lists) in [(in_burst.codes, &in_lists), (out_burst.codes, &out_lists)] {
            if let Some(i) = codes.iter().position(|&c| c as usize >= lists.len()) {
                return Err(format!("row {i} of a rack-contention partial codes past its dictionary"));
            }
        }
        // Row by row, every column cut to the partial's length first so the loop's indexing
        // is checked once: a partial's rows are in time order, as are the merged slots, so
        // each row's slot is nearly always the one after the previous row's.
        let (start, interval) = (&start[..n], &interval[..n]);
        let [rin, rout, ce, retx] = sums.map(|s| &s[..n]);
        let (ins, outs) = (&in_burst.codes[..n], &out_burst.codes[..n]);
        let mut next = 0;
        for i in 0..n {
            let at = self.slot_at((start[i], interval[i]), next);
            next = at + 1;
            let slot = &mut self.slots[at];
            for (sum, v) in slot.sums.iter_mut().zip([rin[i], rout[i], ce[i], retx[i]]) {
                *sum += v;
            }
            let (ins, outs) = (&in_lists[ins[i] as usize], &out_lists[outs[i] as usize]);
            if !ins.is_empty() {
                slot.in_burst.extend(ins);
            }
            if !outs.is_empty() {
                slot.out_burst.extend(outs);
            }
        }
        Ok(())
    }

    /// The result as columns (one row per slot with traffic, in time order), the incasts
    /// recomputed from the slots: hosts renumbered in name order so every list comes out
    /// sorted by name.
    fn columns(self, min_senders: u64, gap_slots: u64) -> Result<Columns, String> {
        if self.slots.len() > MAX_ROWS {
            return Err(format!(
                "{} slots with traffic, over {MAX_ROWS}: narrow the range to the synchronized run",
                self.slots.len()
            ));
        }
        let rank = self.hosts.ranks();
        let mut by_name = vec![0; rank.len()];
        for (id, &r) in rank.iter().enumerate() {
            by_name[r as usize] = id as u32;
        }
        let name = |r: usize| self.hosts.name(by_name[r]);
        let mut slots = self.slots;
        slots.sort_unstable_by_key(|s| s.key);
        let ranked = |ids: &[usize]| {
            let mut r: Vec<usize> = ids.iter().map(|&id| rank[id] as usize).collect();
            r.sort_unstable();
            r.dedup();
            r
        };
        let keys: Vec<(u64, u64)> = slots.iter().map(|s| s.key).collect();
        let ins: Vec<Vec<usize>> = slots.iter().map(|s| ranked(&s.in_burst)).collect();
        let outs: Vec<Vec<usize>> = slots.iter().map(|s| ranked(&s.out_burst)).collect();
        // Each slot of an incast names its victim(s) and the senders of the whole incast.
        let named = rack::incast_slots_by_id(&keys, &ins, &outs, self.hosts.len(), min_senders, gap_slots);
        let join = |ranks: &mut dyn Iterator<Item = usize>| ranks.map(name).collect::<Vec<_>>().join(",");
        let n = slots.len();
        let mut nums: [Vec<u64>; 7] = std::array::from_fn(|_| Vec::with_capacity(n));
        let mut text: [TextColumn; 4] = std::array::from_fn(|_| TextColumn::new());
        for (i, slot) in slots.iter().enumerate() {
            let bursting = {
                let mut both: Vec<usize> = ins[i].iter().chain(&outs[i]).copied().collect();
                both.sort_unstable();
                both.dedup();
                both.len() as u64
            };
            let [in_bytes, out_bytes, ce, retx] = slot.sums;
            for (col, v) in nums.iter_mut().zip([slot.key.0, slot.key.1, in_bytes, out_bytes, bursting, ce, retx]) {
                col.push(v);
            }
            match named.get(&i) {
                Some((victims, senders)) => {
                    text[0].push(&join(&mut victims.ids()));
                    text[1].push(&join(&mut senders.ids()));
                }
                None => {
                    text[0].push("");
                    text[1].push("");
                }
            }
            text[2].push(&join(&mut ins[i].iter().copied()));
            text[3].push(&join(&mut outs[i].iter().copied()));
        }
        let [start, interval, rin, rout, bursting, ce, retx] = nums;
        let [victims, senders, in_burst, out_burst] = text;
        Ok(Columns::new()
            .column("slot_start_ns", "ns", start)
            .column("interval_ns", "ns", interval)
            .column("rack_in_bytes", "bytes", rin)
            .column("rack_out_bytes", "bytes", rout)
            .column("bursting_hosts", "hosts", bursting)
            .column("victims", "", victims)
            .column("senders", "", senders)
            .column("in_burst", "", in_burst)
            .column("out_burst", "", out_burst)
            .column("ce_bytes", "bytes", ce)
            .column("retx_bytes", "bytes", retx))
    }
}

impl ColumnarAnalysis for RackContention {
    fn describe() -> Description {
        Description::new("rack-contention", ResultKind::Table)
            .summary("Per slot: the rack's traffic, hosts bursting, incast victims and their senders (run with loupe fleet invoke)")
            .param(Param::unsigned("threshold_bps", "a host bursts in a slot at this rate, bytes per second").default(10_000_000u64))
            .param(Param::unsigned("min_senders", "other hosts bursting out during an ingress burst that make it an incast").default(2u64))
            .param(
                Param::unsigned(
                    "gap_slots",
                    "slots an ingress burst may dip, and a sender may burst before it (queues, held interrupts)",
                )
                .default(2u64),
            )
            .param(Param::text("iface", "only runs of this interface (empty: all)").default(""))
    }

    fn run_columns(ctx: &Context) -> Result<Columns, String> {
        let threshold = ctx.params.u64("threshold_bps")?;
        let runs: Vec<loupe_udf::Run> = ctx.runs().iface(ctx.params.nonempty_text("iface")?).open()?.collect();
        let retx: Vec<Vec<u64>> = runs
            .iter()
            .map(|r| r.metrics.in_retx_bytes.iter().zip(&r.metrics.out_retx_bytes).map(|(a, b)| a + b).collect())
            .collect();
        let slots = runs.iter().zip(&retx).map(|(r, retx)| RunSlots {
            host: &r.host,
            start_ns: r.start_ns,
            interval_ns: r.interval_ns,
            in_bytes: &r.metrics.in_bytes,
            out_bytes: &r.metrics.out_bytes,
            in_ce_bytes: &r.metrics.in_ce_bytes,
            retx_bytes: retx,
        });
        let mut merging = Merging::default();
        merging.add_rack(&rack::contention(slots, threshold));
        merging.columns(ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }

    fn merge_columns(ctx: &Context, partials: &[Partial]) -> Result<Columns, String> {
        let mut merging = Merging::default();
        for p in partials {
            merging.add(p)?;
        }
        merging.columns(ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }
}

loupe_udf::export_fleet_columns!(RackContention);
