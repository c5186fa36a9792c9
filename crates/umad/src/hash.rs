//! A fast hasher for the crate's internal maps (TIDs, agents, destinations).
//!
//! std's default SipHash resists collision attacks at a cost of tens of nanoseconds per key,
//! which showed in profiles of the transaction engine (several map operations per MAD). The
//! keys hashed here are small and either chosen by this crate (TIDs, tickets, agent ids) or
//! bounded by the window (destinations in flight), so a multiplicative hash in the style of
//! rustc's FxHash is enough: a peer that made TIDs collide could only slow lookups among the
//! few requests in flight.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;
/// A `HashSet` with [`FastHasher`].
pub(crate) type FastSet<T> = HashSet<T, BuildHasherDefault<FastHasher>>;

/// FxHash's step: rotate, xor a word in, multiply by an odd constant.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash + ?Sized>(t: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(t)
    }

    #[test]
    fn distinct_keys_hash_apart_and_maps_work() {
        // TIDs in a row, agent + TID pairs, byte strings differing in one trailing byte.
        let mut seen = FastSet::default();
        for tid in 0u32..10_000 {
            assert!(seen.insert(hash(&(3u32, tid))), "{tid}");
        }
        assert_ne!(hash(&[1u8, 2, 3][..]), hash(&[1u8, 2, 4][..]));
        assert_ne!(hash(&[0u8; 9][..]), hash(&[0u8; 10][..]));
        let mut m: FastMap<(u32, u32), usize> = FastMap::default();
        for i in 0..1000 {
            m.insert((i % 7, i), i as usize);
        }
        assert_eq!(m.len(), 1000);
        assert_eq!(m.get(&(3, 500)), Some(&500));
        assert_eq!(m.remove(&(5, 12)), Some(12));
        assert_eq!(m.get(&(5, 12)), None);
    }
}
