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
//! associative. The algorithm is [`loupe_detect::rack`].

use std::collections::{BTreeMap, BTreeSet};

use loupe_detect::rack::{self, Rack, RunSlots};
use loupe_udf::{Analysis, Cell, Context, Description, Merge, Output, Param, ResultKind, Table, row};

/// Most slots in one result: a rack's synchronized run of 2,000 slots fits fifty times.
const MAX_ROWS: usize = 100_000;

const COLUMNS: [(&str, &str); 11] = [
    ("slot_start_ns", "ns"),
    ("interval_ns", "ns"),
    ("rack_in_bytes", "bytes"),
    ("rack_out_bytes", "bytes"),
    ("bursting_hosts", "hosts"),
    ("victims", ""),
    ("senders", ""),
    ("in_burst", ""),
    ("out_burst", ""),
    ("ce_bytes", "bytes"),
    ("retx_bytes", "bytes"),
];

struct RackContention;

fn table(rack: &Rack, min_senders: u64, gap_slots: u64) -> Result<Output, String> {
    if rack.len() > MAX_ROWS {
        return Err(format!(
            "{} slots with traffic, over {MAX_ROWS}: narrow the range to the synchronized run",
            rack.len()
        ));
    }
    let mut t = Table::new();
    for (name, unit) in COLUMNS {
        t = t.column(name, unit);
    }
    // Each slot of an incast names its victim(s) and the senders of the whole incast.
    let mut named: BTreeMap<(u64, u64), (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    let found = rack::incasts(rack, min_senders, gap_slots);
    for incast in &found {
        for key in &incast.slots {
            let e = named.entry(*key).or_default();
            e.0.insert(&incast.victim);
            e.1.extend(incast.senders.iter().map(String::as_str));
        }
    }
    let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(",");
    for (key @ &(start, interval), slot) in rack {
        let (victims, senders) = named.get(key).cloned().unwrap_or_default();
        let victims: Vec<&str> = victims.into_iter().collect();
        let senders: Vec<&str> = senders.into_iter().collect();
        t.push_row(row![
            start,
            interval,
            slot.in_bytes,
            slot.out_bytes,
            slot.bursting() as u64,
            victims.join(","),
            senders.join(","),
            list(&slot.in_burst),
            list(&slot.out_burst),
            slot.ce_bytes,
            slot.retx_bytes
        ]);
    }
    Ok(t.into())
}

/// Adds a partial result (made by [`table`], here or on another host) into `rack`, slot by
/// slot: one map for every partial of a merge, so each row is absorbed once.
fn parse_into(rack: &mut Rack, output: Output) -> Result<(), String> {
    let Output::Table(t) = output else { return Err("a rack-contention partial is a table".into()) };
    if t.columns.len() != COLUMNS.len() {
        return Err(format!("a rack-contention partial has {} columns, not {}", t.columns.len(), COLUMNS.len()));
    }
    let num = |c: &Cell| match c {
        Cell::Unsigned(n) => Ok(*n),
        other => Err(format!("expected a count, got {other:?}")),
    };
    let set = |c: &Cell, into: &mut BTreeSet<String>| match c {
        Cell::Text(s) => {
            for h in s.split(',').filter(|h| !h.is_empty()) {
                if !into.contains(h) {
                    into.insert(h.to_string());
                }
            }
            Ok(())
        }
        other => Err(format!("expected a host list, got {other:?}")),
    };
    for r in &t.rows {
        if r.len() != COLUMNS.len() {
            return Err("a rack-contention row of the wrong width".into());
        }
        let slot = rack.entry((num(&r[0])?, num(&r[1])?)).or_default();
        slot.in_bytes += num(&r[2])?;
        slot.out_bytes += num(&r[3])?;
        slot.ce_bytes += num(&r[9])?;
        slot.retx_bytes += num(&r[10])?;
        set(&r[7], &mut slot.in_burst)?;
        set(&r[8], &mut slot.out_burst)?;
    }
    Ok(())
}

impl Analysis for RackContention {
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

    fn run(ctx: &Context) -> Result<Output, String> {
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
        table(&rack::contention(slots, threshold), ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }
}

impl Merge for RackContention {
    fn merge(ctx: &Context, partials: Vec<Output>) -> Result<Output, String> {
        let mut rack = Rack::new();
        for p in partials {
            parse_into(&mut rack, p)?;
        }
        table(&rack, ctx.params.u64("min_senders")?, ctx.params.u64("gap_slots")?)
    }
}

loupe_udf::export_fleet_analysis!(RackContention);
