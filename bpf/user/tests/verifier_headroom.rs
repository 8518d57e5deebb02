//! Every kernel program is verified with room to spare: each loads (as the agent loads it, with
//! its largest options) with at most a quarter of the verifier's 1,000,000-instruction budget
//! processed, so a kernel build whose verifier explores more states still accepts it, and growth
//! shows here long before a kernel refuses a program. Prints each program's processed
//! instructions and load (verification) time as `BENCH` lines.

use loupe_bpf::{HEADROOM, VERIFIER_LIMIT, program_costs};

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "verifier_headroom needs root, and CI must run it as root");
    eprintln!("SKIP verifier_headroom: needs root (loads eBPF programs)");
    false
}

#[test]
fn every_program_is_verified_within_a_quarter_of_the_limit() {
    if !root() {
        return;
    }
    let costs = program_costs().expect("every program loads on this kernel");
    let mut over = Vec::new();
    for c in &costs {
        if let Some(why) = &c.off {
            // A facility this kernel is too old for (`loupe_bpf::kernel`): not loaded, said so.
            println!("{:>8} {:<20} off: {why}", c.object, c.program);
            continue;
        }
        let Some(insns) = c.verified_insns else {
            // Linux 5.16 added the figure; the load passed, which is all that can be checked.
            println!("{:>8} {:<20} loaded; this kernel does not report verified instructions", c.object, c.program);
            assert!(c.refused.is_none(), "{}/{}: refused: {:?}", c.object, c.program, c.refused);
            continue;
        };
        println!(
            "BENCH {{\"name\": \"verifier_insns/{}/{}\", \"value\": {insns}, \"unit\": \"insns\"}}",
            c.object, c.program
        );
        println!(
            "BENCH {{\"name\": \"verifier_ms/{}/{}\", \"value\": {:.1}, \"unit\": \"ms\"}}",
            c.object,
            c.program,
            c.load_time.as_secs_f64() * 1e3
        );
        println!(
            "{:>8} {:<20} {insns:>8} insns ({:.1} % of the limit) {:>8.1} ms",
            c.object,
            c.program,
            100.0 * f64::from(insns) / f64::from(VERIFIER_LIMIT),
            c.load_time.as_secs_f64() * 1e3
        );
        if let Some(why) = &c.refused {
            over.push(format!("{}/{}: refused: {why}", c.object, c.program));
        } else if insns > HEADROOM {
            over.push(format!("{}/{}: {insns}", c.object, c.program));
        }
    }
    // Every program of the three objects, the session program included.
    for name in [
        "loupe_stacks",
        "loupe_off_cpu",
        "loupe_off_cpu_take",
        "loupe_exec",
        "loupe_ingress",
        "loupe_egress",
        "loupe_fn_entry",
        "loupe_fn_return",
        "loupe_fn_session",
    ] {
        assert!(costs.iter().any(|c| c.program == name), "{name} was not loaded: {costs:?}");
    }
    assert!(over.is_empty(), "programs above {HEADROOM} processed instructions: {over:?}");
}
