//! Names as dense ids while merging ([`Interner`]): a merge that keys its counts by strings
//! spends its time comparing and hashing them. Measured natively on `fleet-hot-functions`'
//! merge of 1,000 partials: half of the time was `memcmp` in string-keyed maps and sorts.
//! With an interner each partial's dictionary is looked up once, rows then carry `u32`s, the
//! result is sorted by [`Interner::ranks`] (an id's place in name order, one sort of the
//! distinct names) and written by [`Interner::column`] without hashing a string again.
//!
//! The map hashes with foldhash (hashbrown's default), several times faster than the standard
//! SipHash on short names, with a fixed seed: a random one would need a clock or randomness,
//! which the sandbox does not give. A partial built to collide can only make a merge slower,
//! and a merge runs under the sandbox's time limit.

use std::collections::HashMap;

use crate::types::{CodedText, ColumnValues};

/// A map with the fast hasher [`Interner`] uses, for an analysis' own ids and keys.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Distinct names, each with an id: ids are dense, `0..len()`, in the order first seen.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    names: Vec<String>,
    ids: FastMap<String, u32>,
}

impl Interner {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, a new one the first time.
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), id);
        id
    }

    /// The ids of a partial's dictionary, in its order: its codes index this.
    pub fn ids<S: AsRef<str>>(&mut self, dictionary: impl IntoIterator<Item = S>) -> Vec<u32> {
        dictionary.into_iter().map(|name| self.id(name.as_ref())).collect()
    }

    /// The name of `id` (an id this interner gave).
    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Each id's place in name order (`ranks()[id]`): comparing ranks compares names.
    pub fn ranks(&self) -> Vec<u32> {
        let mut by_name: Vec<u32> = (0..self.names.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| self.names[a as usize].cmp(&self.names[b as usize]));
        let mut rank = vec![0; self.names.len()];
        for (r, &id) in by_name.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        rank
    }

    /// A text column of these ids' names, its dictionary only the names it uses (in the order
    /// first used), without hashing them.
    pub fn column(&self, ids: impl IntoIterator<Item = u32>) -> ColumnValues {
        let mut code = vec![u32::MAX; self.names.len()];
        let mut dictionary = Vec::new();
        let codes = ids
            .into_iter()
            .map(|id| {
                let c = &mut code[id as usize];
                if *c == u32::MAX {
                    *c = dictionary.len() as u32;
                    dictionary.push(self.names[id as usize].clone());
                }
                *c
            })
            .collect();
        ColumnValues::Text(CodedText { dictionary, codes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_ranks_follow_names_and_columns_decode_to_the_names() {
        let mut names = Interner::new();
        let ids = names.ids(["zlib", "libc", "zlib", "app"]);
        assert_eq!(ids, [0, 1, 0, 2]);
        assert_eq!(names.len(), 3);
        assert_eq!(names.name(1), "libc");
        assert_eq!(names.ranks(), [2, 1, 0], "app < libc < zlib");
        let ColumnValues::Text(t) = names.column([2, 0, 2]) else { panic!("a text column") };
        assert_eq!(t.dictionary, ["app", "zlib"], "only the names used, once each");
        let decoded: Vec<&str> = (0..3).map(|i| t.get(i).unwrap()).collect();
        assert_eq!(decoded, ["app", "zlib", "app"]);
    }
}
