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
//! `fleet-columns` world): a thousand hosts' slots cross into the merging sandbox as whole lists,
//! each partial's host lists split once per distinct list.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use loupe_detect::rack::{self, Rack, RackSlot, RunSlots};
use loupe_udf::{ColumnarAnalysis, Columns, Context, Description, Param, ResultKind, TextColumn};

/// Most slots in one result: a rack's synchronized run of 2,000 slots fits fifty times.
const MAX_ROWS: usize = 100_000;

struct RackContention;

/// The result as columns (one row per slot with traffic), the incasts recomputed from the slots.
fn columns(rack: &Rack, min_senders: u64, gap_slots: u64) -> Result<Columns, String> {
    if rack.len() > MAX_ROWS {
        return Err(format!(
            "{} slots with traffic, over {MAX_ROWS}: narrow the range to the synchronized run",
            rack.len()
        ));
    }
    // Each slot of an incast names its victim(s) and the senders of the whole incast.
    let named = rack::incast_slots(rack, min_senders, gap_slots);
    let n = rack.len();
    let mut nums: [Vec<u64>; 7] = std::array::from_fn(|_| Vec::with_capacity(n));
    let mut text: [TextColumn; 4] = std::array::from_fn(|_| TextColumn::new());
    let join = |set: &BTreeSet<String>| set.iter().map(String::as_str).collect::<Vec<_>>().join(",");
    for (key @ &(start, interval), slot) in rack {
        let (victims, senders) = named.get(key).map_or((&[][..], &[][..]), |(v, s)| (&v[..], &s[..]));
        for (col, v) in nums.iter_mut().zip([
            start,
            interval,
            slot.in_bytes,
            slot.out_bytes,
            slot.bursting() as u64,
            slot.ce_bytes,
            slot.retx_bytes,
        ]) {
            col.push(v);
        }
        text[0].push(&victims.join(","));
        text[1].push(&senders.join(","));
        text[2].push(&join(&slot.in_burst));
        text[3].push(&join(&slot.out_burst));
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

/// Slots being merged, hosts interned: each partial's host lists are split once per distinct
/// list (its dictionary), its rows then add numbers and ids.
#[derive(Default)]
struct Merging {
    hosts: Vec<String>,
    ids: HashMap<String, u32>,
    slots: BTreeMap<(u64, u64), Slot>,
}

#[derive(Default)]
struct Slot {
    sums: [u64; 4],
    in_burst: BTreeSet<u32>,
    out_burst: BTreeSet<u32>,
}

impl Merging {
    /// The ids of a comma-separated host list.
    fn list(&mut self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        for h in text.split(',').filter(|h| !h.is_empty()) {
            let id = match self.ids.get(h) {
                Some(&id) => id,
                None => {
                    let id = self.hosts.len() as u32;
                    self.hosts.push(h.to_string());
                    self.ids.insert(h.to_string(), id);
                    id
                }
            };
            ids.push(id);
        }
        ids
    }

    /// Adds a partial made by [`columns`], here or on another host, slot by slot.
    fn add(&mut self, c: &Columns) -> Result<(), String> {
        let num = |name: &str| c.require(name).and_then(|v| v.u64s());
        let (start, interval) = (num("slot_start_ns")?, num("interval_ns")?);
        let sums = [num("rack_in_bytes")?, num("rack_out_bytes")?, num("ce_bytes")?, num("retx_bytes")?];
        let (in_burst, out_burst) = (c.require("in_burst")?.text()?, c.require("out_burst")?.text()?);
        let n = start.len();
        let lengths = [interval.len(), in_burst.codes.len(), out_burst.codes.len()];
        if lengths.into_iter().chain(sums.iter().map(|s| s.len())).any(|len| len != n) {
            return Err("a rack-contention partial with columns of different lengths".into());
        }
        let in_lists: Vec<Vec<u32>> = in_burst.dictionary.iter().map(|t| self.list(t)).collect();
        let out_lists: Vec<Vec<u32>> = out_burst.dictionary.iter().map(|t| self.list(t)).collect();
        for i in 0..n {
            let bad = || format!("row {i} of a rack-contention partial codes past its dictionary");
            let ins = in_lists.get(in_burst.codes[i] as usize).ok_or_else(bad)?;
            let outs = out_lists.get(out_burst.codes[i] as usize).ok_or_else(bad)?;
            let slot = self.slots.entry((start[i], interval[i])).or_default();
            for (sum, column) in slot.sums.iter_mut().zip(&sums) {
                *sum += column[i];
            }
            slot.in_burst.extend(ins);
            slot.out_burst.extend(outs);
        }
        Ok(())
    }

    fn into_rack(self) -> Rack {
        let names = |ids: BTreeSet<u32>| ids.into_iter().map(|id| self.hosts[id as usize].clone()).collect();
        self.slots
            .into_iter()
            .map(|(key, s)| {
                let [in_bytes, out_bytes, ce_bytes, retx_bytes] = s.sums;
                let slot = RackSlot {
                    in_bytes,
                    out_bytes,
                    ce_bytes,
                    retx_bytes,
                    in_burst: names(s.in_burst),
                    out_burst: names(s.out_burst),
                };
                (key, slot)
            })
            .collect()
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
        columns(&rack::contention(slots, threshold), ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }

    fn merge_columns(ctx: &Context, partials: Vec<Columns>) -> Result<Columns, String> {
        let mut merging = Merging::default();
        for p in &partials {
            merging.add(p)?;
        }
        columns(&merging.into_rack(), ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }
}

loupe_udf::export_fleet_columns!(RackContention);
