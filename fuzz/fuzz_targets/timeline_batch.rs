//! A timeline batch decoded as the store does: its source (`n` value), its metadata and
//! histograms (`E` value), and its events (`e` value) against the source's definitions, with
//! the batch start from the key. Input: `[batch key][source value][metadata value][events value]`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use loupe_store::keys;
use loupe_store::timeline::codec;

fuzz_target!(|data: &[u8]| {
    let [key, source, meta, events] = loupe_fuzz::split::<4>(data);
    let (start, _) = keys::parse_batch_key(key).unwrap_or((0, 0));
    if let Ok(row) = codec::decode_batch(meta) {
        if let Ok(hists) = codec::decode_hists(&row.hists.0) {
            assert!(hists.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(hists.iter().all(|(_, h)| h.lagged() <= h.count));
        }
    }
    let levels: Vec<u8> = match codec::decode_source(source) {
        Ok(s) => s.events.iter().map(|d| d.level).collect(),
        Err(_) => vec![0, 1, 2, 1, 0],
    };
    let Ok(evs) = codec::decode_block(events, start, &levels) else { return };
    // Readers index the definitions with these and rely on the canonical order.
    assert!(evs.iter().all(|e| (e.event as usize) < levels.len() && e.time >= start));
    assert!(evs.windows(2).all(|w| (w[0].tid, w[0].time) <= (w[1].tid, w[1].time)));
    // What decodes re-encodes to the same events.
    let again = codec::encode_block(start, &evs, &levels);
    assert_eq!(codec::decode_block(&again, start, &levels).unwrap(), evs);
});
