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
/// MurmurHash3's 32-bit body and finalizer over ten words: cheap in the kernel (no loops the
/// verifier must bound, no tables) and well mixed in every bit.
#[inline(always)]
pub fn flow_hash(saddr: &[u32; 4], daddr: &[u32; 4], sport: u16, dport: u16, proto: u8) -> u32 {
    let mut h: u32 = 0x4c6f_7570; // "Loup"
    h = mix(h, saddr[0]);
    h = mix(h, saddr[1]);
    h = mix(h, saddr[2]);
    h = mix(h, saddr[3]);
    h = mix(h, daddr[0]);
    h = mix(h, daddr[1]);
    h = mix(h, daddr[2]);
    h = mix(h, daddr[3]);
    h = mix(h, ((sport as u32) << 16) | dport as u32);
    h = mix(h, proto as u32);
    h ^= 40; // length in bytes, as murmur3 does
    fmix(h)
}

#[inline(always)]
fn mix(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(0xcc9e_2d51).rotate_left(15).wrapping_mul(0x1b87_3593);
    (h ^ k).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn fmix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
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
#[cfg(feature = "user")]
pub fn estimate(bits: u128) -> u32 {
    extern crate std;
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

#[cfg(all(test, feature = "user"))]
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
