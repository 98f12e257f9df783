//! Pieces several policies share, each named after the kernel helper it stands for.

use iosched_core::{ReqId, Request};
use std::collections::BTreeMap;

/// An arrival-ordered list with O(1) append, removal from the middle and front (the
/// kernel's `fifo_list`). Each entry has a position key; a request can take over another's
/// position by reusing its key (`list_move` in `merge_requests`). Removed positions are
/// tombstones until the front passes them.
#[derive(Debug, Default)]
pub struct Fifo {
    items: SmallDeque,
    /// Key of `items[0]`.
    base: u64,
    live: usize,
}

const TOMB: ReqId = ReqId::MAX;

/// Entries a [`Fifo`] holds inline before it spills to the heap.
const FIFO_INLINE: usize = 4;

/// A deque that keeps up to [`FIFO_INLINE`] entries in itself. A CFQ queue per process
/// usually holds a request or two; with thousands of processes, separately allocated
/// buffers would scatter those over the heap. Once spilled, entries stay in the heap
/// buffer until it empties (it keeps its storage, so a busy queue does not allocate as it
/// drains and refills).
#[derive(Debug, Default)]
struct SmallDeque {
    inline: [ReqId; FIFO_INLINE],
    n: u8,
    spill: std::collections::VecDeque<ReqId>,
}

impl SmallDeque {
    fn len(&self) -> usize {
        self.n as usize + self.spill.len()
    }
    fn get(&self, i: usize) -> Option<&ReqId> {
        if self.spill.is_empty() { self.inline[..self.n as usize].get(i) } else { self.spill.get(i) }
    }
    fn get_mut(&mut self, i: usize) -> Option<&mut ReqId> {
        if self.spill.is_empty() { self.inline[..self.n as usize].get_mut(i) } else { self.spill.get_mut(i) }
    }
    fn front(&self) -> Option<&ReqId> {
        self.get(0)
    }
    fn push_back(&mut self, x: ReqId) {
        let n = self.n as usize;
        if self.spill.is_empty() && n < FIFO_INLINE {
            self.inline[n] = x;
            self.n += 1;
            return;
        }
        if self.spill.is_empty() {
            self.spill.extend(&self.inline[..n]);
            self.n = 0;
        }
        self.spill.push_back(x);
    }
    fn pop_front(&mut self) -> Option<ReqId> {
        if !self.spill.is_empty() {
            return self.spill.pop_front();
        }
        let n = self.n as usize;
        if n == 0 {
            return None;
        }
        let x = self.inline[0];
        self.inline.copy_within(1..n, 0);
        self.n -= 1;
        Some(x)
    }
    fn iter(&self) -> impl Iterator<Item = &ReqId> + '_ {
        self.inline[..self.n as usize].iter().chain(self.spill.iter())
    }
}

impl Fifo {
    /// Append; returns the position key.
    pub fn push_back(&mut self, id: ReqId) -> u64 {
        debug_assert_ne!(id, TOMB);
        let k = self.base + self.items.len() as u64;
        self.items.push_back(id);
        self.live += 1;
        k
    }
    pub fn remove(&mut self, key: u64) {
        let Some(i) = key.checked_sub(self.base) else {
            return;
        };
        if let Some(slot) = self.items.get_mut(i as usize)
            && *slot != TOMB
        {
            *slot = TOMB;
            self.live -= 1;
            while self.items.front() == Some(&TOMB) {
                self.items.pop_front();
                self.base += 1;
            }
        }
    }
    /// Put `id` in the live position `key` instead of what is there.
    pub fn replace(&mut self, key: u64, id: ReqId) {
        let i = (key - self.base) as usize;
        let slot = self.items.get_mut(i).expect("replace at a position not in the FIFO");
        debug_assert_ne!(*slot, TOMB);
        *slot = id;
    }
    pub fn front(&self) -> Option<ReqId> {
        self.items.front().copied()
    }
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
    pub fn len(&self) -> usize {
        self.live
    }
    /// The entry before / after `key` (noop's former/latter).
    pub fn before(&self, key: u64) -> Option<ReqId> {
        let i = (key.checked_sub(self.base)? as usize).min(self.items.len());
        (0..i).rev().map(|j| self.items.get(j).copied().unwrap()).find(|&x| x != TOMB)
    }
    pub fn after(&self, key: u64) -> Option<ReqId> {
        let i = key.checked_sub(self.base)? as usize;
        (i + 1..self.items.len()).map(|j| self.items.get(j).copied().unwrap()).find(|&x| x != TOMB)
    }
    pub fn iter(&self) -> impl Iterator<Item = ReqId> + '_ {
        self.items.iter().copied().filter(|&x| x != TOMB)
    }
}

/// A sort tree keyed by start sector (`elv_rb_add` & co). Keys are unique: policies apply
/// the alias rule before inserting a second request at the same sector.
///
/// Most trees are small — a CFQ or AS queue of one process usually holds a request or two
/// — so up to [`SMALL`] entries live in a sorted array inside the tree itself and only
/// larger sets go to a `BTreeMap`. With thousands of processes this keeps a queue's
/// requests on the queue's own cache lines instead of in a separately allocated node.
/// Once spilled, entries stay in the map until it empties (the map keeps its node, so a
/// busy queue does not allocate as it drains and refills).
#[derive(Debug, Default)]
pub struct SortTree {
    small: [(u64, ReqId); SMALL],
    /// Entries in `small` (0 while the map holds them).
    n: u8,
    tree: BTreeMap<u64, ReqId>,
}

/// Entries a [`SortTree`] holds inline.
pub const SMALL: usize = 4;

impl SortTree {
    fn small(&self) -> &[(u64, ReqId)] {
        &self.small[..self.n as usize]
    }

    /// Insert, or return the id already at that sector (the alias) without inserting.
    pub fn add(&mut self, sector: u64, id: ReqId) -> Result<(), ReqId> {
        if self.tree.is_empty() {
            let i = self.small().partition_point(|&(s, _)| s < sector);
            if let Some(&(s, other)) = self.small().get(i)
                && s == sector
            {
                return Err(other);
            }
            let n = self.n as usize;
            if n < SMALL {
                self.small.copy_within(i..n, i + 1);
                self.small[i] = (sector, id);
                self.n += 1;
                return Ok(());
            }
            // Spill.
            self.tree.extend(self.small.iter().copied());
            self.n = 0;
        }
        match self.tree.entry(sector) {
            std::collections::btree_map::Entry::Occupied(e) => Err(*e.get()),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(id);
                Ok(())
            }
        }
    }
    pub fn remove(&mut self, sector: u64, id: ReqId) {
        if self.tree.is_empty() {
            let n = self.n as usize;
            let i = self.small().partition_point(|&(s, _)| s < sector);
            debug_assert!(i < n && self.small[i] == (sector, id), "sort tree out of sync at sector {sector}");
            if i < n && self.small[i].0 == sector {
                self.small.copy_within(i + 1..n, i);
                self.n -= 1;
            }
            return;
        }
        let old = self.tree.remove(&sector);
        debug_assert_eq!(old, Some(id), "sort tree out of sync at sector {sector}");
    }
    pub fn find(&self, sector: u64) -> Option<ReqId> {
        if self.tree.is_empty() {
            return self.small().iter().find(|&&(s, _)| s == sector).map(|&(_, i)| i);
        }
        self.tree.get(&sector).copied()
    }
    pub fn first(&self) -> Option<ReqId> {
        if self.tree.is_empty() {
            return self.small().first().map(|&(_, i)| i);
        }
        self.tree.values().next().copied()
    }
    /// `rb_next`: the request after the one at `sector`.
    pub fn next(&self, sector: u64) -> Option<ReqId> {
        if self.tree.is_empty() {
            return self.small().iter().find(|&&(s, _)| s > sector).map(|&(_, i)| i);
        }
        self.tree.range(sector + 1..).next().map(|(_, &v)| v)
    }
    /// `rb_prev`.
    pub fn prev(&self, sector: u64) -> Option<ReqId> {
        if self.tree.is_empty() {
            return self.small().iter().rev().find(|&&(s, _)| s < sector).map(|&(_, i)| i);
        }
        self.tree.range(..sector).next_back().map(|(_, &v)| v)
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0 && self.tree.is_empty()
    }
    pub fn len(&self) -> usize {
        self.n as usize + self.tree.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = (u64, ReqId)> + '_ {
        self.small().iter().copied().chain(self.tree.iter().map(|(&s, &i)| (s, i)))
    }
}

/// Where a candidate lies relative to the head for the one-way elevator with limited
/// backward seeks (`as_choose_req`, `cfq_choose_req`).
fn seek_cost(s: u64, last: u64, back_max: u64, back_penalty: u64) -> Option<u64> {
    if s >= last {
        Some(s - last)
    } else if s + back_max >= last {
        Some((last - s) * back_penalty)
    } else {
        None // wraps: too far behind the head
    }
}

/// `as_choose_req` (and the positional part of `cfq_choose_req`): choose between two
/// candidates `(sector, id)` given the head position `last`. Non-wrapping beats wrapping;
/// both wrapping → the lower sector; otherwise the smaller cost, ties to the higher sector.
pub fn choose_by_position(
    r1: Option<(u64, ReqId)>,
    r2: Option<(u64, ReqId)>,
    last: u64,
    back_max: u64,
    back_penalty: u64,
) -> Option<(u64, ReqId)> {
    let (a, b) = match (r1, r2) {
        (None, x) | (x, None) => return x,
        (Some(a), Some(b)) if a.1 == b.1 => return Some(b),
        (Some(a), Some(b)) => (a, b),
    };
    match (seek_cost(a.0, last, back_max, back_penalty), seek_cost(b.0, last, back_max, back_penalty)) {
        (Some(_), None) => Some(a),
        (None, Some(_)) => Some(b),
        (None, None) => Some(if a.0 <= b.0 { a } else { b }),
        (Some(d1), Some(d2)) => {
            if d1 < d2 {
                Some(a)
            } else if d2 < d1 {
                Some(b)
            } else if a.0 >= b.0 {
                Some(a)
            } else {
                Some(b)
            }
        }
    }
}

/// `cfq_choose_req` (2.6.20) and `bfq_choose_req`: of two candidates, a sync request beats
/// an async one and metadata beats data; otherwise [`choose_by_position`] decides.
pub fn choose_sync_meta_position(
    a: Option<&Request>,
    b: Option<&Request>,
    last: u64,
    back_max: u64,
    back_penalty: u64,
) -> Option<ReqId> {
    let (ra, rb) = match (a, b) {
        (None, x) | (x, None) => return x.map(|r| r.id),
        (Some(a), Some(b)) if a.id == b.id => return Some(a.id),
        (Some(a), Some(b)) => (a, b),
    };
    if ra.is_sync() != rb.is_sync() {
        return Some(if ra.is_sync() { ra.id } else { rb.id });
    }
    if ra.meta != rb.meta {
        return Some(if ra.meta { ra.id } else { rb.id });
    }
    choose_by_position(Some((ra.sector, ra.id)), Some((rb.sector, rb.id)), last, back_max, back_penalty).map(|(_, i)| i)
}

/// Decaying think-time and seek-distance statistics in the kernel's fixed point
/// (1.0 == 256), as kept per process by AS (`as_io_context`) and CFQ (`cfq_io_context`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    pub ttime_total: u64,
    pub ttime_samples: u64,
    pub ttime_mean: u64,
    pub seek_total: u64,
    pub seek_samples: u64,
    pub seek_mean: u64,
}

impl IoStats {
    /// One think-time sample `t` (jiffies).
    pub fn add_thinktime(&mut self, t: u64) {
        self.ttime_samples = (7 * self.ttime_samples + 256) / 8;
        self.ttime_total = (7 * self.ttime_total + 256 * t) / 8;
        self.ttime_mean = (self.ttime_total + 128) / self.ttime_samples;
    }

    /// One seek-distance sample (sectors), clamped against outliers: while the average is
    /// young (≤ 60 samples, i.e. the 2nd and 3rd seek) by 4·mean + 1 GiB, later by
    /// 4·mean + 64 MiB.
    pub fn add_seek(&mut self, mut sdist: u64) {
        if self.seek_samples <= 60 {
            sdist = sdist.min(self.seek_mean * 4 + 2 * 1024 * 1024);
        } else {
            sdist = sdist.min(self.seek_mean * 4 + 2 * 1024 * 64);
        }
        self.seek_samples = (7 * self.seek_samples + 256) / 8;
        self.seek_total = (7 * self.seek_total + 256 * sdist) / 8;
        self.seek_mean = (self.seek_total + self.seek_samples / 2) / self.seek_samples;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline form and the spilled form answer exactly as a BTreeMap would, through
    /// growth past the inline size, draining and refilling.
    #[test]
    fn sort_tree_matches_a_btreemap() {
        let mut t = SortTree::default();
        let mut m = BTreeMap::new();
        let mut rng = 99u64;
        for step in 0..20_000u64 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let sector = (rng >> 33) % 40;
            // Phases: mostly small sets, sometimes large ones.
            let big = (step / 2000) % 2 == 1;
            if m.contains_key(&sector) && (!big || rng & 1 == 0) {
                t.remove(sector, m.remove(&sector).unwrap());
            } else if !m.contains_key(&sector) && (big || m.len() < 3) {
                assert_eq!(t.add(sector, step), Ok(()));
                m.insert(sector, step);
            } else if let Some(&id) = m.get(&sector) {
                assert_eq!(t.add(sector, step), Err(id));
            }
            assert_eq!(t.len(), m.len());
            assert_eq!(t.is_empty(), m.is_empty());
            assert_eq!(t.first(), m.values().next().copied());
            assert_eq!(t.find(sector), m.get(&sector).copied());
            assert_eq!(t.next(sector), m.range(sector + 1..).next().map(|(_, &v)| v));
            assert_eq!(t.prev(sector), m.range(..sector).next_back().map(|(_, &v)| v));
            assert!(t.iter().eq(m.iter().map(|(&s, &i)| (s, i))));
        }
    }

    /// The FIFO keeps positions and order through spills to the heap and back, against a
    /// plain model.
    #[test]
    fn fifo_matches_a_model() {
        let mut f = Fifo::default();
        // (key, id) of live entries in order.
        let mut model: Vec<(u64, ReqId)> = Vec::new();
        let mut rng = 5u64;
        for step in 0..20_000u64 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let big = (step / 1000) % 2 == 1;
            let r = (rng >> 33) % 10;
            if model.is_empty() || r < if big { 6 } else { 4 } {
                let k = f.push_back(step);
                model.push((k, step));
            } else if r < 8 {
                let i = (rng >> 40) as usize % model.len();
                let (k, _) = model.remove(i);
                f.remove(k);
            } else {
                let i = (rng >> 40) as usize % model.len();
                model[i].1 = step + 1_000_000;
                f.replace(model[i].0, step + 1_000_000);
            }
            assert_eq!(f.len(), model.len());
            assert_eq!(f.front(), model.first().map(|e| e.1));
            assert!(f.iter().eq(model.iter().map(|e| e.1)));
            if let Some(&(k, _)) = model.get(model.len() / 2) {
                let i = model.len() / 2;
                assert_eq!(f.before(k), i.checked_sub(1).map(|j| model[j].1));
                assert_eq!(f.after(k), model.get(i + 1).map(|e| e.1));
            }
        }
    }

    #[test]
    fn thinktime_samples_follow_kernel_sequence() {
        let mut s = IoStats::default();
        let mut seen = vec![];
        for _ in 0..4 {
            s.add_thinktime(0);
            seen.push(s.ttime_samples);
        }
        assert_eq!(seen, vec![32, 60, 84, 105]);
    }

    #[test]
    fn choose_prefers_forward_then_short_backward() {
        let last = 1000;
        let fwd = Some((1100, 1));
        let back = Some((960, 2)); // 40 back, cost 80 < 100
        assert_eq!(choose_by_position(fwd, back, last, 1 << 20, 2).unwrap().1, 2);
        let back = Some((940, 2)); // cost 120 > 100
        assert_eq!(choose_by_position(fwd, back, last, 1 << 20, 2).unwrap().1, 1);
        // Both wrap: the lower sector starts the next sweep.
        assert_eq!(choose_by_position(Some((5, 1)), Some((3, 2)), 10_000_000, 16, 2).unwrap().1, 2);
        // Tie: higher sector.
        assert_eq!(choose_by_position(Some((1010, 1)), Some((995, 2)), 1000, 1 << 20, 2).unwrap().1, 1);
    }
}

/// A doubly linked list of distinct keys with O(1) push, remove and membership test (the
/// kernel's `list_head` threaded through per-process queues).
#[derive(Debug)]
pub struct KeyedList<K: Copy + Eq + std::hash::Hash> {
    links: iosched_core::FastMap<K, (Option<K>, Option<K>)>,
    head: Option<K>,
    tail: Option<K>,
}

impl<K: Copy + Eq + std::hash::Hash> Default for KeyedList<K> {
    fn default() -> Self {
        KeyedList { links: Default::default(), head: None, tail: None }
    }
}

impl<K: Copy + Eq + std::hash::Hash> KeyedList<K> {
    pub fn contains(&self, k: K) -> bool {
        self.links.contains_key(&k)
    }
    pub fn len(&self) -> usize {
        self.links.len()
    }
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
    pub fn front(&self) -> Option<K> {
        self.head
    }
    pub fn push_front(&mut self, k: K) {
        debug_assert!(!self.contains(k));
        let old = self.head;
        self.links.insert(k, (None, old));
        match old {
            Some(o) => self.links.get_mut(&o).unwrap().0 = Some(k),
            None => self.tail = Some(k),
        }
        self.head = Some(k);
    }
    pub fn push_back(&mut self, k: K) {
        debug_assert!(!self.contains(k));
        let old = self.tail;
        self.links.insert(k, (old, None));
        match old {
            Some(o) => self.links.get_mut(&o).unwrap().1 = Some(k),
            None => self.head = Some(k),
        }
        self.tail = Some(k);
    }
    pub fn remove(&mut self, k: K) -> bool {
        let Some((p, n)) = self.links.remove(&k) else {
            return false;
        };
        match p {
            Some(p) => self.links.get_mut(&p).unwrap().1 = n,
            None => self.head = n,
        }
        match n {
            Some(n) => self.links.get_mut(&n).unwrap().0 = p,
            None => self.tail = p,
        }
        true
    }
    pub fn next(&self, k: K) -> Option<K> {
        self.links.get(&k).and_then(|l| l.1)
    }
    /// Keys from head to tail.
    pub fn to_vec(&self) -> Vec<K> {
        let mut v = Vec::with_capacity(self.links.len());
        let mut c = self.head;
        while let Some(k) = c {
            v.push(k);
            c = self.next(k);
        }
        v
    }
}
