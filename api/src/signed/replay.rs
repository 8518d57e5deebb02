//! The nonces a host has seen, each kept until its request expires: a request copied off the bus
//! and sent again is refused as long as it is valid, and forgotten only once it would be refused
//! as expired anyway. Bounded: past [`MAX_NONCES`] unexpired nonces a new request is refused
//! (`fleet_nonces_full`) rather than an unexpired nonce forgotten, which would let its request
//! be replayed. At the longest validity (30 minutes) that is ~55 requests a second, sustained,
//! to one host — two orders of magnitude past what a fleet's askers send.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashSet},
};

use super::{FleetRefusal, Nonce};

/// Most unexpired nonces a host keeps (~100 bytes each with the heap's entry).
pub const MAX_NONCES: usize = 100_000;

/// Nonces seen, with when each may be forgotten.
#[derive(Debug)]
pub struct SeenNonces {
    seen: HashSet<Nonce>,
    by_expiry: BinaryHeap<Reverse<(u64, Nonce)>>,
    max: usize,
}

impl Default for SeenNonces {
    fn default() -> Self {
        SeenNonces::with_max(MAX_NONCES)
    }
}

impl SeenNonces {
    pub fn with_max(max: usize) -> SeenNonces {
        SeenNonces { seen: HashSet::new(), by_expiry: BinaryHeap::new(), max }
    }

    /// Takes `nonce` of a request valid until `expires_unix_ns`, unless it was seen before.
    pub fn take(&mut self, nonce: Nonce, expires_unix_ns: u64, now_unix_ns: u64) -> Result<(), FleetRefusal> {
        while let Some(Reverse((expires, old))) = self.by_expiry.peek().copied() {
            if expires >= now_unix_ns {
                break;
            }
            self.by_expiry.pop();
            self.seen.remove(&old);
        }
        if self.seen.contains(&nonce) {
            return Err(FleetRefusal::Replayed);
        }
        if self.seen.len() >= self.max {
            return Err(FleetRefusal::NoncesFull { held: self.seen.len() });
        }
        self.seen.insert(nonce);
        self.by_expiry.push(Reverse((expires_unix_ns, nonce)));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_refused_until_its_request_expires() {
        let mut seen = SeenNonces::default();
        let n = Nonce::random();
        seen.take(n, 100, 10).unwrap();
        assert_eq!(seen.take(n, 100, 50), Err(FleetRefusal::Replayed));
        assert_eq!(seen.take(n, 100, 100), Err(FleetRefusal::Replayed), "still valid at its expiry");
        // Past its expiry the request itself is refused as expired; its nonce may go.
        seen.take(Nonce::random(), 500, 101).unwrap();
        assert_eq!(seen.len(), 1);
        seen.take(n, 200, 101).unwrap();
    }

    #[test]
    fn when_full_new_requests_wait_for_old_ones_to_expire_and_none_is_forgotten_early() {
        let mut seen = SeenNonces::with_max(3);
        let first: Vec<Nonce> = (0..3).map(|_| Nonce::random()).collect();
        for (i, n) in first.iter().enumerate() {
            seen.take(*n, 100 + i as u64, 0).unwrap();
        }
        assert!(matches!(seen.take(Nonce::random(), 500, 50), Err(FleetRefusal::NoncesFull { held: 3 })));
        for n in &first {
            assert_eq!(seen.take(*n, 100, 50), Err(FleetRefusal::Replayed), "kept while valid");
        }
        // The first expires: room for one.
        seen.take(Nonce::random(), 500, 101).unwrap();
        assert!(matches!(seen.take(Nonce::random(), 500, 101), Err(FleetRefusal::NoncesFull { .. })));
    }
}
