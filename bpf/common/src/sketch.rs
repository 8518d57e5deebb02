//! The 128-bit connection sketch, after Millisampler.
//!
//! Each packet's 5-tuple is hashed to one of 128 bits, which is set in the slot's bitmap on the
//! CPU that saw the packet. Userspace ORs the CPUs' bitmaps of a slot (the union is the bitmap a
//! single global counter would have produced) and estimates the number of distinct flows.
//!
//! The estimate is exact while no two flows share a bit and the count is small (we return the
//! popcount up to [`EXACT_UP_TO`] bits); above that it is linear counting, `m·ln(m/zeros)`, which
//! corrects for collisions, has ~7 % standard error at 100 flows and saturates when every bit is
//! set (reported as [`SATURATED`]).

/// Bits per sketch.
pub const BITS: u32 = 128;
/// Up to this many set bits the estimate is the popcount (collisions are rarer than rounding).
pub const EXACT_UP_TO: u32 = 16;
/// Reported when all 128 bits are set: more flows than the sketch can tell apart (~710, the
/// linear-counting value for half a zero bit, so the estimate stays monotone).
pub const SATURATED: u32 = 710;

/// The bit a flow sets: the top 7 bits of [`flow_hash`]. Addresses are IPv4-mapped for IPv4,
/// each 32-bit word exactly as it sits in the packet (`u32::from_ne_bytes` of four address
/// bytes); ports in host order.
#[inline(always)]
pub fn flow_bit(saddr: &[u32; 4], daddr: &[u32; 4], sport: u16, dport: u16, proto: u8) -> u32 {
    flow_hash(saddr, daddr, sport, dport, proto) >> 25
}

/// A flow's 32-bit hash: its top bits pick the sketch bit, its low bits the ingress flow
/// table's set (one hash per packet serves both).
///
/// The ten words are taken as five 64-bit lanes, each multiplied on its own and turned by its
/// own amount, combined, then MurmurHash3's 64-bit finalizer: seven multiplies where murmur3's
/// 32-bit body over ten words took 21 (~12 ns a packet in the filter), and the five lanes'
/// multiplies overlap in the CPU instead of each waiting on the one before (a chain of folds
/// cost ~2–3 ns more). No loops the verifier must bound, no tables; every output bit depends on
/// every input bit through the finalizer.
#[inline(always)]
pub fn flow_hash(saddr: &[u32; 4], daddr: &[u32; 4], sport: u16, dport: u16, proto: u8) -> u32 {
    (flow_hash64(saddr, daddr, sport, dport, proto) >> 32) as u32
}

/// The whole 64-bit hash [`flow_hash`] is the top half of: the ingress flow table keeps it as
/// the flow's name (`FlowEntry::flow`) instead of the 36-byte 5-tuple.
#[inline(always)]
pub fn flow_hash64(saddr: &[u32; 4], daddr: &[u32; 4], sport: u16, dport: u16, proto: u8) -> u64 {
    let lane = |lo: u32, hi: u32| lo as u64 | (hi as u64) << 32;
    // Each lane multiplied on its own (the five multiplies overlap instead of waiting on each
    // other), turned by its own amount so that no two lanes' high bits meet, then finalized.
    let mul = |x: u64, k: u64| (x ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let h = mul(lane(saddr[0], saddr[1]), 0x4c6f_7570_4c6f_7570) // "Loup" twice
        ^ mul(lane(saddr[2], saddr[3]), 0x0123_4567_89ab_cdef).rotate_left(13)
        ^ mul(lane(daddr[0], daddr[1]), 0xfedc_ba98_7654_3210).rotate_left(26)
        ^ mul(lane(daddr[2], daddr[3]), 0x0f1e_2d3c_4b5a_6978).rotate_left(39)
        ^ mul(lane(((sport as u32) << 16) | dport as u32, proto as u32), 0x8796_a5b4_c3d2_e1f0).rotate_left(52);
    fmix64(h)
}

#[inline(always)]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A sketch as the kernel stores it (two little words) as one `u128`.
#[inline]
pub fn to_u128(words: [u64; 2]) -> u128 {
    words[0] as u128 | (words[1] as u128) << 64
}

/// Sets `bit` in a two-word sketch.
#[inline(always)]
pub fn set_bit(words: &mut [u64; 2], bit: u32) {
    let idx = (bit >> 6) & 1;
    words[idx as usize] |= 1u64 << (bit & 63);
}

/// Estimated number of distinct flows in a (CPU-merged) sketch.
#[cfg(feature = "std")]
pub fn estimate(bits: u128) -> u32 {
    let set = bits.count_ones();
    if set <= EXACT_UP_TO {
        return set;
    }
    if set == BITS {
        return SATURATED;
    }
    let zeros = f64::from(BITS - set);
    let m = f64::from(BITS);
    (m * std::primitive::f64::ln(m / zeros)).round() as u32
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_exact_for_distinct_bits_and_monotone() {
        let mut bits = 0u128;
        let mut last = 0;
        for i in 0..BITS {
            bits |= 1u128 << i;
            let e = estimate(bits);
            if i < EXACT_UP_TO {
                assert_eq!(e, i + 1);
            }
            assert!(e >= last, "estimate fell from {last} to {e} at {} bits", i + 1);
            last = e;
        }
        assert_eq!(estimate(u128::MAX), SATURATED);
    }

    #[test]
    fn flow_bits_spread_over_the_whole_sketch() {
        // 4096 flows from one client to one server port must touch every bit.
        let mut seen = 0u128;
        for port in 0..4096u16 {
            let b = flow_bit(&[0, 0, 0xffff_0000, 0x0100_000a], &[0, 0, 0xffff_0000, 0x0200_000a], 30000 + port, 80, 6);
            assert!(b < BITS);
            seen |= 1u128 << b;
        }
        assert_eq!(seen, u128::MAX);
    }

    #[test]
    fn flow_hashes_spread_over_the_flow_table_sets() {
        // 65,536 flows of one client to one server (every source port) over 32,768 sets: a
        // uniform hash puts ~2 in each, and no set gets more than a handful.
        let sets = 1usize << 15;
        extern crate std;
        let mut load = std::vec![0u32; sets];
        for port in 0..=u16::MAX {
            let h = flow_hash(&[0, 0, 0xffff_0000, 0x0100_000a], &[0, 0, 0xffff_0000, 0x0200_000a], port, 443, 6);
            load[h as usize & (sets - 1)] += 1;
        }
        let max = *load.iter().max().unwrap();
        let empty = load.iter().filter(|&&n| n == 0).count();
        assert!(max <= 12, "a set holds {max} of 65,536 flows");
        // Poisson(2): e^-2 = 13.5 % of the sets stay empty.
        assert!((3_800..=5_100).contains(&empty), "{empty} empty sets of {sets}");
    }

    #[test]
    fn flows_that_differ_anywhere_have_different_names() {
        // The ingress flow table names a flow by its 64-bit hash: every source port, every
        // client address's last byte, IPv6 words that differ only in their top bits, and the
        // two directions of one flow must each get a name of their own.
        extern crate std;
        let mut names = std::collections::HashSet::new();
        let (client, server) = ([0, 0, 0xffff_0000, 0x0100_000a], [0, 0, 0xffff_0000, 0x0200_000a]);
        for port in 0..=u16::MAX {
            assert!(names.insert(flow_hash64(&client, &server, port, 443, 6)));
        }
        for last in 0..=255u32 {
            let client = [0, 0, 0xffff_0000, 0x0000_000a | last << 24];
            assert!(names.insert(flow_hash64(&client, &server, 40_000, 8080, 6)));
        }
        for word in 0..4 {
            for bit in 24..32 {
                let mut v6 = [0x20010db8u32.to_be(), 0, 0, 1u32.to_be()];
                v6[word] ^= 1 << bit;
                assert!(names.insert(flow_hash64(&v6, &[0, 0, 0, 2], 1, 2, 6)), "word {word} bit {bit}");
            }
        }
        assert!(names.insert(flow_hash64(&server, &client, 443, 40_000, 6)));
        assert_eq!(flow_hash(&client, &server, 7, 443, 6), (flow_hash64(&client, &server, 7, 443, 6) >> 32) as u32);
    }

    #[test]
    fn linear_counting_tracks_true_count() {
        // Random flows (a fixed LCG, so the test is repeatable): mean estimate within 5 % at 100.
        let mut x: u32 = 12345;
        let mut total = 0u64;
        let rounds = 200;
        for _ in 0..rounds {
            let mut bits = 0u128;
            for _ in 0..100 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let b = flow_bit(&[x, 1, 2, 3], &[4, 5, 6, 7], (x >> 16) as u16, 443, 6);
                bits |= 1u128 << b;
            }
            total += u64::from(estimate(bits));
        }
        let mean = total as f64 / f64::from(rounds);
        assert!((95.0..=105.0).contains(&mean), "mean estimate {mean} for 100 flows");
    }
}
