//! A fast, deterministic hasher for the integer keys the core and the policies use
//! (request ids, owners, sectors). The multiply-rotate scheme of rustc's FxHash: not
//! DoS-resistant, which does not matter here, and several times faster than SipHash.
//! Map iteration order is never used for decisions.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy, Debug)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

pub type FastBuild = BuildHasherDefault<FxHasher>;
/// A `HashMap` with [`FxHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastBuild>;
/// A `HashSet` with [`FxHasher`].
pub type FastSet<K> = HashSet<K, FastBuild>;

/// Values stored under ids the slab hands out: the slots of a vector, a freed id reused
/// first (last freed, first reused), so ids stay small and storage stays warm.
#[derive(Debug, Clone)]
pub struct Slab<V> {
    slots: Vec<Option<V>>,
    free: Vec<u32>,
}

impl<V> Default for Slab<V> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new() }
    }
}

impl<V> Slab<V> {
    /// Store `v`; its id.
    pub fn insert(&mut self, v: V) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(v);
                i
            }
            None => {
                self.slots.push(Some(v));
                (self.slots.len() - 1) as u32
            }
        }
    }
    /// Take the value out; its id is free again.
    pub fn remove(&mut self, id: u32) -> Option<V> {
        let v = self.slots.get_mut(id as usize)?.take()?;
        self.free.push(id);
        Some(v)
    }
    pub fn get(&self, id: u32) -> Option<&V> {
        self.slots.get(id as usize)?.as_ref()
    }
    pub fn get_mut(&mut self, id: u32) -> Option<&mut V> {
        self.slots.get_mut(id as usize)?.as_mut()
    }
    /// The stored values with their ids, by id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, v)| v.as_ref().map(|v| (i as u32, v)))
    }
}

/// A map from request ids to per-request data, for the framework's and the policies'
/// per-request records (the kernel hangs these off `struct request`).
///
/// The records live in a dense slab reused last-freed-first, and only a small id → slot
/// index goes through the hash table. With thousands of requests queued the table stays
/// small enough for the cache, and a request inserted right after another completes
/// reuses that one's (warm) record. Behaves as a `HashMap<ReqId, V>`.
#[derive(Debug, Clone)]
pub struct IdMap<V> {
    index: FastMap<crate::ReqId, u32>,
    slab: Slab<V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap { index: FastMap::default(), slab: Slab::default() }
    }
}

impl<V> IdMap<V> {
    pub fn len(&self) -> usize {
        self.index.len()
    }
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
    pub fn contains_key(&self, id: &crate::ReqId) -> bool {
        self.index.contains_key(id)
    }
    /// Insert, returning the value replaced.
    pub fn insert(&mut self, id: crate::ReqId, v: V) -> Option<V> {
        if let Some(&i) = self.index.get(&id) {
            return self.slab.get_mut(i).map(|old| std::mem::replace(old, v));
        }
        let i = self.slab.insert(v);
        self.index.insert(id, i);
        None
    }
    pub fn get(&self, id: &crate::ReqId) -> Option<&V> {
        self.slab.get(*self.index.get(id)?)
    }
    pub fn get_mut(&mut self, id: &crate::ReqId) -> Option<&mut V> {
        self.slab.get_mut(*self.index.get(id)?)
    }
    pub fn remove(&mut self, id: &crate::ReqId) -> Option<V> {
        let i = self.index.remove(id)?;
        self.slab.remove(i)
    }
    /// Entries in no particular order (callers must not base decisions on it).
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.slab.iter().map(|(_, v)| v)
    }
    pub fn iter(&self) -> impl Iterator<Item = (crate::ReqId, &V)> + '_ {
        self.index.iter().map(|(&id, &i)| (id, self.slab.get(i).expect("indexed slot is live")))
    }
}

impl<V> std::ops::Index<&crate::ReqId> for IdMap<V> {
    type Output = V;
    fn index(&self, id: &crate::ReqId) -> &V {
        self.get(id).expect("no record for this request id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_map_behaves_as_a_hash_map() {
        let mut m = IdMap::default();
        let mut h = FastMap::default();
        let mut rng = crate::Rng::new(3);
        for _ in 0..20_000 {
            let id = rng.below(300);
            match rng.below(3) {
                0 => assert_eq!(m.insert(id, id * 7 + rng.below(5)).is_some(), h.insert(id, 0).is_some()),
                1 => assert_eq!(m.remove(&id).is_some(), h.remove(&id).is_some()),
                _ => assert_eq!(m.get(&id).is_some(), h.contains_key(&id)),
            }
            assert_eq!(m.len(), h.len());
        }
        let mut ids: Vec<_> = m.iter().map(|(id, _)| id).collect();
        ids.sort();
        let mut want: Vec<_> = h.keys().copied().collect();
        want.sort();
        assert_eq!(ids, want);
        assert_eq!(m.values().count(), m.len());
    }
}
