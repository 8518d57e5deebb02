//! Where the filter hooks in: with tcx on a kernel that has it (Linux 6.6+), first among the
//! hook's programs, with no clsact qdisc or cls_bpf filter of Loupe's on the interface, and
//! nothing left once the sampler is dropped. That filters which drop packets on the same hook
//! run after Loupe has counted is what `ecn_and_retransmits` checks: its dropper sits on b0's
//! ingress as a cls_bpf filter, and b0's retransmitted bytes are only right if Loupe saw the
//! segments it dropped.

use loupe_bpf::{SamplerOptions, TcHook, TrafficSampler};
use loupe_testbed::topology::{A_IF, VethPair};
use loupe_testbed::{bpftool, require_root};

/// The kernel's tcx links whose program is one of Loupe's filters. Older bpftools print the
/// link type as a number: BPF_LINK_TYPE_TCX is 11.
fn loupe_tcx_links() -> Vec<String> {
    bpftool::links_of(&["loupe_ingress", "loupe_egress"])
        .into_iter()
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1) == Some(&"tcx") || f.get(1..3) == Some(&["type", "11"][..])
        })
        .collect()
}

#[test]
fn the_filter_attaches_with_tcx_and_leaves_nothing_behind() {
    require_root!();
    let pair = VethPair::new("hook").unwrap();
    let before = loupe_tcx_links();
    let sampler = pair.a.run(|| TrafficSampler::attach(A_IF, &SamplerOptions::default())).unwrap().unwrap();
    assert_eq!(sampler.hook(), TcHook::Tcx, "this kernel has tcx; the filter must not fall back to cls_bpf");
    let during = loupe_tcx_links();
    assert_eq!(during.len(), before.len() + 2, "one tcx link per direction: {during:?}");
    for direction in ["ingress", "egress"] {
        let filters = pair.a.exec(&["tc", "filter", "show", "dev", A_IF, direction]).unwrap();
        assert!(!filters.contains("loupe"), "a cls_bpf filter of Loupe's on {direction}: {filters}");
    }
    let qdiscs = pair.a.exec(&["tc", "qdisc", "show", "dev", A_IF]).unwrap();
    assert!(!qdiscs.contains("clsact"), "tcx needs no clsact qdisc: {qdiscs}");
    drop(sampler);
    assert_eq!(loupe_tcx_links(), before, "the links go with the sampler");
}
