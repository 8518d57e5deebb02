//! Rates: a real process breathes 2,000,000 times and logs one event of each rate 0..=9 per
//! iteration; the reader counts them. Rate 9 exact, rate 0 never, rates 1..=8 within 5 σ of
//! the documented 5^(rate−9), and each iteration's logged rates are exactly those ≥ its
//! threshold (a suffix 9, 8, …, T: whole iterations keep their context).

mod common;

use loupe_timeline::format::rate_probability;
use loupe_timeline::reader::Tailer;

#[test]
fn rate_counts_match_documented_probabilities() {
    let dir = tempfile::tempdir().unwrap();
    let iters: u64 = 2_000_000;
    let chunk: u64 = 50_000;
    let mut w = common::writer(
        dir.path(),
        &[("LOUPE_TIMELINE_RING_RECORDS", "131072")],
        &["rates", &iters.to_string(), &chunk.to_string()],
    );
    let mut t = Tailer::open(&w.path).unwrap();
    let mut counts = [0u64; 10];
    let mut masks = vec![0u16; iters as usize];
    let (mut lost, mut corrupt) = (0, 0);
    let mut events = Vec::new();
    loop {
        let line = w.line().expect("writer line");
        let s = common::drain(&mut t, &mut events);
        lost += s.lost;
        corrupt += s.corrupt;
        for e in events.drain(..) {
            let name = &t.events()[e.event as usize].name;
            let Some(r) = name.strip_prefix("rate") else { continue };
            let r: usize = r.parse().unwrap();
            counts[r] += 1;
            let it = e.args[0] as usize;
            assert_eq!(masks[it] & 1 << r, 0, "iteration {it} logged rate {r} twice");
            masks[it] |= 1 << r;
        }
        if line == "done" {
            break;
        }
        assert!(line.starts_with("chunk "), "{line}");
        w.ack();
    }
    w.wait_ok();
    assert_eq!((lost, corrupt), (0, 0), "the reader kept up: nothing may be lost or corrupt");
    println!("counts per rate over {iters} breaths: {counts:?}");
    assert_eq!(counts[9], iters, "rate 9 is logged in every breath");
    assert_eq!(counts[0], 0, "rate 0 is never logged");
    for r in 1..=8u8 {
        let p = rate_probability(r);
        let mean = iters as f64 * p;
        let sd = (iters as f64 * p * (1.0 - p)).sqrt();
        let dev = (counts[r as usize] as f64 - mean).abs();
        println!("rate {r}: {} logged, expected {mean:.1} ± {sd:.1} (p = 5^{})", counts[r as usize], r as i32 - 9);
        assert!(
            dev <= 5.0 * sd + 1.0,
            "rate {r}: {} logged, expected {mean:.1} (5 σ = {:.1})",
            counts[r as usize],
            5.0 * sd
        );
    }
    // Each step down in rate is ~5x rarer: the fitted ratios over the well-populated rates.
    for r in 5..=8usize {
        let ratio = counts[r] as f64 / counts[r - 1] as f64;
        assert!((4.0..6.5).contains(&ratio), "rate {r} vs {}: ratio {ratio:.2}", r - 1);
    }
    for (it, &m) in masks.iter().enumerate() {
        let low = m.trailing_zeros();
        let want = (0x3ffu16 >> low) << low; // every rate from the lowest logged up to 9
        assert_eq!(m, want, "iteration {it}: rates logged {m:#012b} are not a suffix 9..T");
    }
}
