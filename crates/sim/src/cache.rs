//! The page cache: 4 KiB pages of files (and of the block device, for metadata), an LRU
//! of clean pages for reclaim, dirty and writeback accounting, and the per-inode dirty
//! lists writeback walks (oldest-dirtied inode first, pages in index order).
//!
//! A page is *locked* while a read fills it, *dirty* after a write until writeback picks
//! it, under *writeback* until that write completes. Every page is on the LRU from the
//! moment it is added (`add_to_page_cache_lru`), so the LRU orders pages by creation and
//! last access, not by when writeback finished with them. Only clean, unlocked pages can
//! be reclaimed: reclaim scans from the cold end and, like `shrink_list`, moves a page it
//! cannot free (dirty, under writeback, locked) back to the hot end.
//!
//! That order matters for results: after tiobench's write phase the pages still cached are
//! the last ones *written* (the tails of every file, since writers interleave under dirty
//! throttling), which a later sequential read evicts before it reaches them, as on a real
//! machine; ordering by writeback completion instead would leave whole files cached.
//!
//! Two orders, chosen by the host profile ([`crate::Lru`]):
//! - a single list, where a lookup moves the page to the hot end — a simplification for
//!   2.6's pair of lists, under which used-once pages behave the same;
//! - 2.5.6x's **active and inactive lists** (`mm/vmscan.c`, `mm/swap.c`): new pages go to
//!   the inactive head; `mark_page_accessed` sets `PG_referenced` on a first access and
//!   moves an inactive referenced page to the active list on the second; reclaim scans
//!   the inactive tail only (unmapped page-cache pages are freed whether referenced or
//!   not; a dirty page passed over loses `PG_referenced`, as `page_referenced` clears it);
//!   and each `shrink_zone` call refills the inactive list from the active tail: it adds
//!   `nr_pages·active / ((inactive | 1)·2) + 1` to a counter (`nr_pages` is what the call
//!   must free: 32 for direct reclaim, hundreds for kswapd) and, above 32, resets it and
//!   moves up to 128 pages (`refill_inactive_zone`, to the inactive head, keeping `PG_referenced`, so one
//!   more access re-activates them; mapped pages in use stay active). Pages touched
//!   over and over — the indirect and inode blocks a writer maps every block through, a
//!   file read twice — so outlive a stream of pages used once.

use iosched_core::{FastMap, Instant, Slab};
#[cfg(test)]
use std::collections::VecDeque;
use std::collections::{BTreeMap, BTreeSet};

pub type PageId = u32;
const NIL: PageId = u32::MAX;

/// The pseudo-file holding block-device (metadata) pages, indexed by block number.
pub const META: u32 = u32::MAX;
/// The pseudo-file holding the pages programs have mapped.
pub const MAPPED: u32 = u32::MAX - 1;

#[derive(Debug, Clone)]
pub struct Page {
    pub file: u32,
    pub index: u64,
    pub locked: bool,
    pub uptodate: bool,
    pub dirty: bool,
    pub writeback: bool,
    /// When the page last became dirty (2.4's `b_flushtime` less `age_buffer`).
    pub dirtied: Instant,
    prev: PageId,
    next: PageId,
    on_lru: bool,
    /// `PG_active`: on the active list (2.5 lists only).
    active: bool,
    /// `PG_referenced`.
    referenced: bool,
    /// `PG_reclaim`: reclaim started this page's writeback (`pageout`); when the write
    /// completes the page moves to the cold end to be freed next
    /// (`rotate_reclaimable_page`).
    reclaim: bool,
    /// Mapped by a program that keeps using it (its ptes are young at every check): on
    /// the active list for good.
    mapped: bool,
}

/// Per-inode writeback state.
#[derive(Debug, Default, Clone)]
pub struct InodeDirty {
    /// When the inode first became dirty (`dirtied_when`).
    pub since: Instant,
    /// The dirty pages by index, each with the generation at which it joined the set
    /// (see [`PageCache::begin_pass`]) and its page.
    pages: DirtySet,
    /// Where cyclic writeback resumes (`mapping->writeback_index`).
    pub writeback_index: u64,
    /// The writeback passes walking this inode's pages.
    passes: Vec<PassId>,
}

/// A value that marks an unused slot of a [`Chunked`] table.
trait Vacant: Copy + PartialEq {
    const VACANT: Self;
}

impl Vacant for PageId {
    const VACANT: Self = NIL;
}

impl Vacant for (u64, PageId) {
    const VACANT: Self = (u64::MAX, NIL);
}

/// Slots by index, in chunks of [`CHUNK`] that exist while one of their slots is in use:
/// memory follows the indices in use (a streaming writer's few thousand pages), not the
/// highest one (a 20 GB file's five million), and a lookup is two loads. Small chunks keep
/// the kernel tree's 11,000 files of a few pages each cheap too.
#[derive(Debug, Clone)]
struct Chunked<T> {
    chunks: Vec<Option<Box<[T; CHUNK]>>>,
    used: Vec<u16>,
}

const CHUNK: usize = 64;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), used: Vec::new() }
    }
}

impl<T: Vacant> Chunked<T> {
    fn get(&self, i: u64) -> T {
        match self.chunks.get(i as usize / CHUNK) {
            Some(Some(c)) => c[i as usize % CHUNK],
            _ => T::VACANT,
        }
    }

    /// Fill the vacant slot `i` with `v` (not vacant).
    fn fill(&mut self, i: u64, v: T) {
        let (c, k) = (i as usize / CHUNK, i as usize % CHUNK);
        if c >= self.chunks.len() {
            self.chunks.resize_with(c + 1, || None);
            self.used.resize(c + 1, 0);
        }
        let chunk = self.chunks[c].get_or_insert_with(|| Box::new([T::VACANT; CHUNK]));
        debug_assert!(chunk[k] == T::VACANT && v != T::VACANT);
        chunk[k] = v;
        self.used[c] += 1;
    }

    /// Vacate slot `i`; its value, or `VACANT` if it was vacant.
    fn vacate(&mut self, i: u64) -> T {
        let (c, k) = (i as usize / CHUNK, i as usize % CHUNK);
        let Some(Some(chunk)) = self.chunks.get_mut(c) else {
            return T::VACANT;
        };
        let v = std::mem::replace(&mut chunk[k], T::VACANT);
        if v != T::VACANT {
            self.used[c] -= 1;
            if self.used[c] == 0 {
                self.chunks[c] = None;
            }
        }
        v
    }

    /// The slots in use, by index.
    fn iter(&self) -> impl Iterator<Item = (u64, T)> + '_ {
        self.chunks.iter().enumerate().filter_map(|(c, ch)| ch.as_ref().map(|ch| (c, ch))).flat_map(|(c, ch)| {
            ch.iter().enumerate().filter(|(_, v)| **v != T::VACANT).map(move |(k, &v)| ((c * CHUNK + k) as u64, v))
        })
    }
}

/// An inode's dirty pages by index, each with its joined generation and page, in a
/// [`Chunked`] table, with a two-level bitmap to find the next dirty index. Joining,
/// leaving and each step of a walk cost a few word operations (the B-tree this replaced
/// cost a search each, a fifth of a read-many run's CPU). The bitmap takes one bit per
/// index up to the highest dirty one.
#[derive(Debug, Default, Clone)]
struct DirtySet {
    slots: Chunked<(u64, PageId)>,
    /// Bit `i % 64` of word `i / 64`: index `i` is in the set.
    bits: Vec<u64>,
    /// Bit `w % 64` of word `w / 64`: `bits[w]` is not zero.
    summary: Vec<u64>,
    len: usize,
}

impl DirtySet {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn contains(&self, i: u64) -> bool {
        let w = (i / 64) as usize;
        w < self.bits.len() && self.bits[w] & (1 << (i % 64)) != 0
    }

    /// Add index `i`, which must not be in the set.
    fn insert(&mut self, i: u64, v: (u64, PageId)) {
        debug_assert!(!self.contains(i), "index {i} already dirty");
        let w = (i / 64) as usize;
        if w >= self.bits.len() {
            self.bits.resize(w + 1, 0);
            self.summary.resize(w / 64 + 1, 0);
        }
        self.slots.fill(i, v);
        self.bits[w] |= 1 << (i % 64);
        self.summary[w / 64] |= 1 << (w % 64);
        self.len += 1;
    }

    fn remove(&mut self, i: u64) -> Option<(u64, PageId)> {
        if !self.contains(i) {
            return None;
        }
        let w = (i / 64) as usize;
        self.bits[w] &= !(1 << (i % 64));
        if self.bits[w] == 0 {
            self.summary[w / 64] &= !(1 << (w % 64));
        }
        self.len -= 1;
        Some(self.slots.vacate(i))
    }

    /// The smallest index in the set in `from..end`, with its entry.
    fn next(&self, from: u64, end: u64) -> Option<(u64, (u64, PageId))> {
        let nbits = self.bits.len() as u64 * 64;
        let end = end.min(nbits);
        if from >= end {
            return None;
        }
        let mut w = (from / 64) as usize;
        let mut word = self.bits[w] & (!0u64 << (from % 64));
        if word == 0 {
            // The next non-empty word, through the summary.
            let mut sw = (w + 1) / 64;
            let mut sword = self.summary.get(sw).map_or(0, |&x| x & (!0u64 << ((w + 1) % 64)));
            while sword == 0 {
                sw += 1;
                if sw >= self.summary.len() {
                    return None;
                }
                sword = self.summary[sw];
            }
            w = sw * 64 + sword.trailing_zeros() as usize;
            word = self.bits[w];
        }
        let i = w as u64 * 64 + word.trailing_zeros() as u64;
        (i < end).then(|| (i, self.slots.get(i)))
    }

    /// Every index in the set, in order, with its entry.
    fn iter(&self) -> impl Iterator<Item = (u64, (u64, PageId))> + '_ {
        self.slots.iter()
    }
}

/// A writeback pass over one inode's dirty pages (see [`PageCache::begin_pass`]).
pub type PassId = u32;

/// The pages a writeback pass visits: those dirty when it began, in cyclic order from
/// the writeback index it began at.
#[derive(Debug, Clone)]
struct Pass {
    file: u32,
    /// The dirty-set generation when the pass began: a page still in the set with a
    /// generation at most this one has been dirty since then.
    began: u64,
    start: u64,
    /// Every page of the pass before this position (in its cyclic order) is visited.
    cursor: u64,
    wrapped: bool,
    /// Pages dirty when the pass began that left the set since, before the pass reached
    /// them. The pass still visits them: one dirtied again is written like the rest.
    left: BTreeSet<u64>,
}

impl Pass {
    fn visited(&self, index: u64) -> bool {
        if self.wrapped {
            index >= self.start || index < self.cursor
        } else {
            index >= self.start && index < self.cursor
        }
    }

    /// A page that joined the dirty set at generation `joined` has left it: if it is one
    /// of this pass's and not yet visited, the pass keeps it to visit.
    fn note_leaver(&mut self, index: u64, joined: u64) {
        if joined <= self.began && !self.visited(index) {
            self.left.insert(index);
        }
    }
}

/// Which page holds each (file, index): per file, a [`Chunked`] table of page ids. The
/// hash of (file, index) pairs it replaced cost a cache miss or two per lookup, 13 % of a
/// read-many run's CPU in `free_page` alone; here the per-file map is small and hot.
#[derive(Debug, Default)]
struct PageIndex {
    files: FastMap<u32, Chunked<PageId>>,
    len: usize,
}

impl PageIndex {
    fn get(&self, file: u32, index: u64) -> Option<PageId> {
        let p = self.files.get(&file)?.get(index);
        (p != NIL).then_some(p)
    }

    /// Map `(file, index)`, which must be unmapped, to `p`.
    fn insert(&mut self, file: u32, index: u64, p: PageId) {
        self.files.entry(file).or_default().fill(index, p);
        self.len += 1;
    }

    fn remove(&mut self, file: u32, index: u64) {
        if let Some(t) = self.files.get_mut(&file)
            && t.vacate(index) != NIL
        {
            self.len -= 1;
        }
    }

    /// The pages of `file`, by index.
    fn pages_of(&self, file: u32) -> Vec<PageId> {
        self.files.get(&file).map_or_else(Vec::new, |t| t.iter().map(|(_, p)| p).collect())
    }

    /// Every page, by file and index (a fixed order, whatever the map's).
    fn all(&self) -> Vec<PageId> {
        let mut files: Vec<u32> = self.files.keys().copied().collect();
        files.sort_unstable();
        files.into_iter().flat_map(|f| self.pages_of(f)).collect()
    }
}

#[derive(Debug)]
pub struct PageCache {
    pages: Vec<Page>,
    free_ids: Vec<PageId>,
    index: PageIndex,
    /// The inactive (0) and active (1) lists' hot and cold ends and lengths; with a single
    /// list everything is on list 0.
    heads: [PageId; 2],
    tails: [PageId; 2],
    lens: [u64; 2],
    /// 2.5's active and inactive lists instead of one list.
    two_lists: bool,
    /// `zone->refill_counter`.
    refill: u64,
    /// Reclaimable pages (up to date, not locked, dirty or under writeback).
    nr_clean: u64,
    capacity: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    /// Pages under writeback, per file (for fsync).
    pub writeback_by_file: FastMap<u32, u64>,
    dirty: FastMap<u32, InodeDirty>,
    /// Dirty inodes by (dirtied_when, file).
    dirty_order: BTreeMap<(Instant, u32), ()>,
    /// Pages that have joined a dirty set so far (each one's generation).
    dirty_gen: u64,
    /// The live writeback passes, by id.
    passes: Slab<Pass>,
}

/// What a lookup found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    Absent,
    /// Present and being read.
    Locked(PageId),
    Uptodate(PageId),
}

impl PageCache {
    pub fn new(capacity_pages: u64) -> Self {
        PageCache {
            pages: Vec::new(),
            free_ids: Vec::new(),
            index: PageIndex::default(),
            heads: [NIL; 2],
            tails: [NIL; 2],
            lens: [0; 2],
            two_lists: false,
            refill: 0,
            nr_clean: 0,
            capacity: capacity_pages,
            nr_dirty: 0,
            nr_writeback: 0,
            writeback_by_file: FastMap::default(),
            dirty: FastMap::default(),
            dirty_order: BTreeMap::new(),
            dirty_gen: 0,
            passes: Slab::default(),
        }
    }

    /// A cache with 2.5's active and inactive lists instead of the single LRU.
    pub fn with_active_list(capacity_pages: u64) -> Self {
        PageCache { two_lists: true, ..Self::new(capacity_pages) }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    /// Pages in use.
    pub fn used(&self) -> u64 {
        self.index.len as u64
    }
    pub fn free(&self) -> u64 {
        self.capacity - self.used()
    }
    pub fn page(&self, p: PageId) -> &Page {
        &self.pages[p as usize]
    }

    pub fn lookup(&mut self, file: u32, index: u64) -> Lookup {
        match self.index.get(file, index) {
            None => Lookup::Absent,
            Some(p) => {
                let pg = &self.pages[p as usize];
                if pg.locked {
                    Lookup::Locked(p)
                } else if pg.uptodate {
                    self.accessed(p);
                    Lookup::Uptodate(p)
                } else {
                    Lookup::Locked(p)
                }
            }
        }
    }

    /// As [`lookup`](Self::lookup), but leaves the page's LRU place alone (2.5's
    /// `generic_file_write` only sets `PG_referenced`, which reclaim ignores for unmapped
    /// page-cache pages).
    pub fn lookup_quiet(&self, file: u32, index: u64) -> Lookup {
        match self.index.get(file, index) {
            None => Lookup::Absent,
            Some(p) => {
                let pg = &self.pages[p as usize];
                if pg.locked || !pg.uptodate { Lookup::Locked(p) } else { Lookup::Uptodate(p) }
            }
        }
    }

    /// Is the page present (in any state)?
    pub fn contains(&self, file: u32, index: u64) -> bool {
        self.index.get(file, index).is_some()
    }

    pub fn get(&self, file: u32, index: u64) -> Option<PageId> {
        self.index.get(file, index)
    }

    fn lru_remove(&mut self, p: PageId) {
        let (pr, nx, l) = {
            let pg = &self.pages[p as usize];
            debug_assert!(pg.on_lru);
            (pg.prev, pg.next, pg.active as usize)
        };
        if pr == NIL {
            self.heads[l] = nx;
        } else {
            self.pages[pr as usize].next = nx;
        }
        if nx == NIL {
            self.tails[l] = pr;
        } else {
            self.pages[nx as usize].prev = pr;
        }
        let pg = &mut self.pages[p as usize];
        pg.on_lru = false;
        pg.prev = NIL;
        pg.next = NIL;
        self.lens[l] -= 1;
    }

    fn lru_push_head(&mut self, p: PageId) {
        let l = self.pages[p as usize].active as usize;
        let old = self.heads[l];
        {
            let pg = &mut self.pages[p as usize];
            pg.on_lru = true;
            pg.prev = NIL;
            pg.next = old;
        }
        if old == NIL {
            self.tails[l] = p;
        } else {
            self.pages[old as usize].prev = p;
        }
        self.heads[l] = p;
        self.lens[l] += 1;
    }

    fn lru_push_tail(&mut self, p: PageId) {
        let l = self.pages[p as usize].active as usize;
        let old = self.tails[l];
        {
            let pg = &mut self.pages[p as usize];
            pg.on_lru = true;
            pg.prev = old;
            pg.next = NIL;
        }
        if old == NIL {
            self.heads[l] = p;
        } else {
            self.pages[old as usize].next = p;
        }
        self.tails[l] = p;
        self.lens[l] += 1;
    }

    /// mark_page_accessed (2.5): an inactive referenced page is activated; otherwise the
    /// page is marked referenced.
    fn accessed(&mut self, p: PageId) {
        if !self.two_lists {
            self.lru_remove(p);
            self.lru_push_head(p);
            return;
        }
        let (active, referenced) = (self.pages[p as usize].active, self.pages[p as usize].referenced);
        if !active && referenced {
            self.lru_remove(p);
            self.pages[p as usize].active = true;
            self.pages[p as usize].referenced = false;
            self.lru_push_head(p);
        } else {
            self.pages[p as usize].referenced = true;
        }
    }

    /// SetPageReferenced (2.5 generic_file_write).
    pub fn set_referenced(&mut self, p: PageId) {
        self.pages[p as usize].referenced = true;
    }

    /// refill_inactive_zone: move `n` pages from the active tail to the inactive head.
    fn refill_inactive(&mut self, n: u64) {
        for _ in 0..n {
            let p = self.tails[1];
            if p == NIL {
                break;
            }
            self.lru_remove(p);
            // refill_inactive_zone keeps a mapped page whose ptes are young active, at any
            // priority; the mapped pages modelled are the ones in use, so always young.
            self.pages[p as usize].active = self.pages[p as usize].mapped;
            self.lru_push_head(p);
        }
    }

    /// Put `n` pages of `file` in the cache as pages programs have mapped and keep using
    /// (the code and data they run): up to date, active, never reclaimed. They take room
    /// and, on the two lists, count in the active list's length that sets the refill rate.
    pub fn add_mapped(&mut self, file: u32, n: u64) {
        for i in 0..n.min(self.capacity) {
            let p = self.insert(file, i, false);
            self.lru_remove(p);
            let pg = &mut self.pages[p as usize];
            pg.locked = false;
            pg.uptodate = true;
            pg.mapped = true;
            pg.referenced = true;
            pg.active = self.two_lists;
            self.lru_push_head(p);
        }
    }

    fn reclaimable(&self, p: PageId) -> bool {
        let pg = &self.pages[p as usize];
        !pg.locked && !pg.dirty && !pg.writeback && pg.uptodate && !pg.mapped
    }

    fn free_page(&mut self, p: PageId) {
        self.lru_remove(p);
        let (file, index) = (self.pages[p as usize].file, self.pages[p as usize].index);
        self.index.remove(file, index);
        self.free_ids.push(p);
        self.nr_clean -= 1;
    }

    /// Evict the coldest reclaimable page, rotating the pages it passes over to the hot
    /// end; false if none can be evicted.
    fn evict_one(&mut self) -> bool {
        if self.nr_clean == 0 {
            return false;
        }
        if self.two_lists {
            // The 2.5 lists reclaim only through shrink_zone: here one call for one page.
            let all = self.lens[0] + self.lens[1];
            return self.shrink_zone(1, all, false, &mut Vec::new()) == 1;
        }
        loop {
            let p = self.tails[0];
            if self.reclaimable(p) {
                self.free_page(p);
                return true;
            }
            self.lru_remove(p);
            self.lru_push_head(p);
        }
    }

    /// Add a page (evicting if the cache is full). The page starts locked and not
    /// up to date (a read will fill it) unless `uptodate`. `None` if nothing can be
    /// evicted (all pages dirty, locked or under writeback).
    pub fn add(&mut self, file: u32, index: u64, uptodate: bool) -> Option<PageId> {
        if self.used() >= self.capacity && !self.evict_one() {
            return None;
        }
        Some(self.insert(file, index, uptodate))
    }

    /// Add a page only if a free one is left (reclaim is the caller's business: see
    /// [`shrink_zone`](Self::shrink_zone)).
    pub fn try_add(&mut self, file: u32, index: u64, uptodate: bool) -> Option<PageId> {
        (self.used() < self.capacity).then(|| self.insert(file, index, uptodate))
    }

    /// One call of 2.5.6x `shrink_zone` asked to free `nr_pages` (`mm/vmscan.c`). First
    /// the refill accounting: `nr_pages·active / ((inactive | 1)·2) + 1` is added to
    /// `refill_counter`, and once it is above 32, up to 128 pages move from the active tail
    /// to the inactive head and the counter is reset. Then `shrink_cache`
    /// scans at most `max_scan` pages from the inactive tail, freeing clean ones until
    /// `nr_pages` are free. A page it cannot free goes back to the inactive head; a dirty
    /// one first loses `PG_referenced` (`page_referenced`), and if `may_write` it is
    /// written back (`writepage`: the caller submits the write of each page listed in
    /// `paged_out`; `PG_reclaim` is set so the page is freed soon after its write ends).
    /// Returns the pages freed. Needs the two lists.
    pub fn shrink_zone(&mut self, nr_pages: u64, max_scan: u64, may_write: bool, paged_out: &mut Vec<PageId>) -> u64 {
        debug_assert!(self.two_lists);
        self.refill += nr_pages * self.lens[1] / ((self.lens[0] | 1) * 2) + 1;
        if self.refill > 32 {
            // "Don't try to bring down too many pages in one attempt": at most 128, and
            // the counter starts again from zero.
            let count = self.refill.min(128);
            self.refill = 0;
            self.refill_inactive(count);
        }
        let mut freed = 0;
        let mut scanned = 0;
        while freed < nr_pages && scanned < max_scan {
            if self.tails[0] == NIL {
                // Nothing inactive: what a deeper scan would deactivate (mapped pages in
                // use stay active, so this may find nothing).
                self.refill_inactive(32.min(self.lens[1]));
                if self.tails[0] == NIL {
                    break;
                }
            }
            let p = self.tails[0];
            scanned += 1;
            if self.reclaimable(p) {
                self.free_page(p);
                freed += 1;
                continue;
            }
            let pg = &mut self.pages[p as usize];
            if pg.dirty && !pg.locked && !pg.writeback {
                pg.referenced = false;
                if may_write {
                    self.start_writeback(p);
                    self.pages[p as usize].reclaim = true;
                    paged_out.push(p);
                }
            }
            self.lru_remove(p);
            self.lru_push_head(p);
        }
        freed
    }

    /// Pages on the inactive list.
    pub fn nr_inactive(&self) -> u64 {
        self.lens[0]
    }

    fn insert(&mut self, file: u32, index: u64, uptodate: bool) -> PageId {
        debug_assert!(self.index.get(file, index).is_none());
        let page = Page {
            file,
            index,
            locked: !uptodate,
            uptodate,
            dirty: false,
            writeback: false,
            dirtied: Instant::ZERO,
            prev: NIL,
            next: NIL,
            on_lru: false,
            active: false,
            referenced: false,
            reclaim: false,
            mapped: false,
        };
        let p = match self.free_ids.pop() {
            Some(p) => {
                self.pages[p as usize] = page;
                p
            }
            None => {
                self.pages.push(page);
                (self.pages.len() - 1) as PageId
            }
        };
        self.index.insert(file, index, p);
        self.lru_push_head(p);
        if uptodate {
            self.nr_clean += 1;
        }
        p
    }

    /// A read into the page completed: up to date and unlocked.
    pub fn read_done(&mut self, p: PageId) {
        let pg = &mut self.pages[p as usize];
        debug_assert!(pg.locked && !pg.dirty && !pg.writeback);
        pg.locked = false;
        pg.uptodate = true;
        self.nr_clean += 1;
    }

    /// Mark a present, up-to-date page dirty. Returns true if it was clean.
    pub fn set_dirty(&mut self, p: PageId, now: Instant) -> bool {
        let (file, index, was) = {
            let pg = &mut self.pages[p as usize];
            let was = pg.dirty;
            if !pg.dirty {
                pg.dirtied = now;
            }
            pg.dirty = true;
            pg.uptodate = true;
            (pg.file, pg.index, was)
        };
        if was {
            return false;
        }
        if !self.pages[p as usize].writeback && !self.pages[p as usize].locked {
            self.nr_clean -= 1;
        }
        self.nr_dirty += 1;
        let d = self.dirty.entry(file).or_insert_with(|| InodeDirty { since: now, ..Default::default() });
        if d.pages.is_empty() {
            d.since = now;
            self.dirty_order.insert((now, file), ());
        }
        self.dirty_gen += 1;
        d.pages.insert(index, (self.dirty_gen, p));
        true
    }

    /// Writeback picked a dirty page: dirty → writeback.
    pub fn start_writeback(&mut self, p: PageId) {
        let (file, index) = {
            let pg = &mut self.pages[p as usize];
            debug_assert!(pg.dirty && !pg.writeback);
            pg.dirty = false;
            pg.writeback = true;
            (pg.file, pg.index)
        };
        self.nr_dirty -= 1;
        self.nr_writeback += 1;
        *self.writeback_by_file.entry(file).or_default() += 1;
        let d = self.dirty.get_mut(&file).expect("dirty page of a clean inode");
        let (joined, _) = d.pages.remove(index).expect("a dirty page is in its inode's set");
        for &id in &d.passes {
            self.passes.get_mut(id).expect("a live pass").note_leaver(index, joined);
        }
        if d.pages.is_empty() {
            let since = d.since;
            self.dirty_order.remove(&(since, file));
        }
    }

    /// A write of the page completed.
    pub fn end_writeback(&mut self, p: PageId) {
        let file = {
            let pg = &mut self.pages[p as usize];
            debug_assert!(pg.writeback);
            pg.writeback = false;
            pg.file
        };
        self.nr_writeback -= 1;
        let n = self.writeback_by_file.get_mut(&file).unwrap();
        *n -= 1;
        if *n == 0 {
            self.writeback_by_file.remove(&file);
        }
        if self.reclaimable(p) {
            self.nr_clean += 1;
        }
        let pg = &mut self.pages[p as usize];
        if std::mem::take(&mut pg.reclaim) && !pg.active && pg.on_lru && self.reclaimable(p) {
            // rotate_reclaimable_page: to the cold end, to be freed next.
            self.lru_remove(p);
            self.lru_push_tail(p);
        }
    }

    /// Dirty inodes, oldest first.
    pub fn dirty_inodes(&self) -> impl Iterator<Item = (Instant, u32)> + '_ {
        self.dirty_order.keys().copied()
    }

    pub fn inode_dirty(&self, file: u32) -> Option<&InodeDirty> {
        self.dirty.get(&file).filter(|d| !d.pages.is_empty())
    }

    pub fn set_writeback_index(&mut self, file: u32, index: u64) {
        if let Some(d) = self.dirty.get_mut(&file) {
            d.writeback_index = index;
        }
    }

    /// Dirty pages of `file` in cyclic order starting at its writeback index.
    #[cfg(test)]
    pub fn dirty_pages_cyclic(&self, file: u32) -> Vec<u64> {
        let Some(d) = self.dirty.get(&file) else {
            return Vec::new();
        };
        let start = d.writeback_index;
        let (after, before): (Vec<u64>, Vec<u64>) = d.pages.iter().map(|(i, _)| i).partition(|&i| i >= start);
        after.into_iter().chain(before).collect()
    }

    /// Begin a writeback pass over `file`: it will visit the pages dirty now, in cyclic
    /// order from the writeback index (what a copy of the dirty set taken now would hold),
    /// without copying the set. Pages dirtied later are not visited; pages that leave the
    /// set first still are, so the caller checks each page's state as it comes.
    ///
    /// The set is walked as the pass goes. A page still in it is one of the pass's if it
    /// joined no later than the pass began (a page that leaves and joins again gets a new
    /// generation); a page of the pass that leaves before the pass reaches it is kept in
    /// the pass's `left` list. End the pass with [`PageCache::end_pass`].
    pub fn begin_pass(&mut self, file: u32) -> PassId {
        let d = self.dirty.entry(file).or_default();
        let start = d.writeback_index;
        let pass = Pass { file, began: self.dirty_gen, start, cursor: start, wrapped: false, left: BTreeSet::new() };
        let id = self.passes.insert(pass);
        d.passes.push(id);
        id
    }

    /// The next page the pass visits, without moving past it: its index, and its page if
    /// it has been dirty since the pass began (otherwise look it up).
    pub fn pass_peek(&mut self, id: PassId) -> Option<(u64, Option<PageId>)> {
        let pass = self.passes.get_mut(id).expect("a live pass");
        loop {
            let hi = if pass.wrapped { pass.start } else { u64::MAX };
            let range = (std::ops::Bound::Included(pass.cursor), std::ops::Bound::Excluded(hi));
            let left = pass.left.range(range).next().map(|&i| (i, None));
            // A page still in the set comes first only if it lies before the next leaver,
            // so the scan stops there (and newer pages past it are not walked again at
            // every peek); failing one, the leaver is next.
            let until = left.map_or(hi, |(i, _)| i);
            let still = self.dirty.get(&pass.file).and_then(|d| {
                let mut at = pass.cursor;
                loop {
                    let (i, (joined, p)) = d.pages.next(at, until)?;
                    if joined <= pass.began {
                        return Some((i, Some(p)));
                    }
                    at = i + 1;
                }
            });
            match still.or(left) {
                Some((i, p)) => {
                    // Nothing of the pass lies between the cursor and `i`, nor can come to:
                    // pages joining now are not the pass's.
                    pass.cursor = i;
                    return Some((i, p));
                }
                None if !pass.wrapped && pass.start > 0 => {
                    pass.wrapped = true;
                    pass.cursor = 0;
                }
                None => {
                    pass.cursor = hi;
                    return None;
                }
            }
        }
    }

    /// Move the pass past the page `pass_peek` returned.
    pub fn pass_pop(&mut self, id: PassId, index: u64) {
        let pass = self.passes.get_mut(id).expect("a live pass");
        debug_assert_eq!(pass.cursor, index, "pop the page peeked");
        pass.left.remove(&index);
        pass.cursor = index + 1;
    }

    pub fn end_pass(&mut self, id: PassId) {
        let pass = self.passes.remove(id).expect("a live pass");
        if let Some(d) = self.dirty.get_mut(&pass.file) {
            d.passes.retain(|&p| p != id);
        }
    }

    /// Forget a file's pages (unlink / truncate). Dirty pages are dropped.
    pub fn drop_file(&mut self, file: u32) {
        let ids = self.index.pages_of(file);
        for p in ids {
            let pg = self.pages[p as usize].clone();
            if pg.locked || pg.writeback {
                // In flight: left to complete. Truncation cancels a redirtied page's dirty
                // state (the file's dirty list goes below), so its write-back end leaves
                // it clean rather than dirty and on no inode's list.
                if pg.writeback && pg.dirty {
                    self.pages[p as usize].dirty = false;
                    self.nr_dirty -= 1;
                }
                continue;
            }
            if pg.dirty {
                self.nr_dirty -= 1;
            } else {
                self.nr_clean -= 1;
            }
            self.lru_remove(p);
            self.index.remove(pg.file, pg.index);
            self.free_ids.push(p);
        }
        if let Some(d) = self.dirty.remove(&file) {
            if !d.pages.is_empty() {
                self.dirty_order.remove(&(d.since, file));
            }
            // The passes over the file still visit the pages dirty when they began. Pages
            // dirtied from now on join a new set; the passes are not in its list, which
            // is right: none of those pages is theirs.
            for &id in &d.passes {
                let pass = self.passes.get_mut(id).expect("a live pass");
                for (i, (joined, _)) in d.pages.iter() {
                    pass.note_leaver(i, joined);
                }
            }
        }
    }

    /// Drop every clean, idle page (`drop_caches`).
    pub fn drop_clean(&mut self) {
        let ids: Vec<PageId> = self.index.all().into_iter().filter(|&p| self.reclaimable(p)).collect();
        for p in ids {
            self.free_page(p);
        }
    }

    /// Clean, idle (reclaimable) pages.
    pub fn clean_pages(&self) -> u64 {
        self.nr_clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page index: lookups, a removal that leaves a hole, the count, and the walks in
    /// index order (per file) and file-then-index order (all).
    #[test]
    fn page_index_maps_and_walks_in_order() {
        let mut x = PageIndex::default();
        for (f, i, p) in [(7, 5, 1), (3, 0, 2), (7, 1, 3), (3, 9, 4), (7, 70, 5)] {
            x.insert(f, i, p);
        }
        assert_eq!((x.get(7, 5), x.get(7, 4), x.get(3, 100), x.get(9, 0)), (Some(1), None, None, None));
        x.remove(7, 5);
        x.remove(7, 5);
        x.remove(8, 1);
        assert_eq!(x.len, 4);
        assert_eq!(x.get(7, 5), None);
        assert_eq!(x.pages_of(7), vec![3, 5]);
        assert_eq!(x.all(), vec![2, 4, 3, 5]);
    }

    /// A chunk exists while one of its slots is in use: a streaming writer's moving window
    /// over a huge file holds a few chunks, not a table up to its highest index.
    #[test]
    fn chunked_tables_hold_only_the_chunks_in_use() {
        let mut t: Chunked<PageId> = Chunked::default();
        let live = |t: &Chunked<PageId>| t.chunks.iter().filter(|c| c.is_some()).count();
        for i in 0..5_000_000u64 {
            t.fill(i, i as PageId);
            if i >= 3000 {
                assert_eq!(t.vacate(i - 3000), (i - 3000) as PageId);
            }
            if i % 4096 == 0 {
                assert!(live(&t) <= 3000 / CHUNK + 2, "{} chunks live at {i}", live(&t));
            }
        }
        assert_eq!(t.vacate(17), NIL);
        assert_eq!(t.get(4_999_999), 4_999_999);
        assert!(t.iter().map(|(i, _)| i).eq(4_997_000..5_000_000));
    }

    /// The dirty set against a B-tree: random joins and leaves over sparse and dense
    /// index ranges (across bitmap words and summary words), and after each a range query
    /// from a random position to a random end, and the whole walk.
    #[test]
    fn dirty_set_matches_a_btree() {
        for seed in 1..=40u64 {
            let mut rng = iosched_core::Rng::new(seed);
            let mut next = move |n: u64| rng.below(n);
            let span = [70, 5_000, 300_000][seed as usize % 3];
            let (mut set, mut model) = (DirtySet::default(), BTreeMap::new());
            for step in 0..2_000u64 {
                let i = next(span);
                if let Some(v) = model.remove(&i) {
                    assert_eq!(set.remove(i), Some(v));
                } else {
                    set.insert(i, (step, i as PageId));
                    model.insert(i, (step, i as PageId));
                }
                assert_eq!(set.remove(span + 1), None);
                let (from, end) = (next(span + 10), next(span + 10) + next(2) * u64::MAX / 2);
                let want = model.range(from..end.max(from)).next().map(|(&k, &v)| (k, v));
                assert_eq!(set.next(from, end), want, "seed {seed} step {step}: next({from}, {end})");
                assert_eq!(set.is_empty(), model.is_empty());
            }
            assert!(set.iter().eq(model.iter().map(|(&k, &v)| (k, v))), "seed {seed}: walk");
        }
    }

    #[test]
    fn lru_evicts_least_recent_clean_page() {
        let mut c = PageCache::new(2);
        let a = c.add(1, 0, true).unwrap();
        let _b = c.add(1, 1, true).unwrap();
        assert_eq!(c.lookup(1, 0), Lookup::Uptodate(a)); // touch a
        c.add(1, 2, true).unwrap(); // evicts page 1
        assert!(c.contains(1, 0));
        assert!(!c.contains(1, 1));
    }

    #[test]
    fn dirty_pages_are_not_evicted_and_are_accounted() {
        let mut c = PageCache::new(2);
        let a = c.add(1, 0, true).unwrap();
        let b = c.add(1, 1, true).unwrap();
        assert!(c.set_dirty(a, Instant::ZERO));
        assert!(c.set_dirty(b, Instant::ZERO));
        assert_eq!(c.nr_dirty, 2);
        assert!(c.add(1, 2, true).is_none(), "nothing evictable");
        c.start_writeback(a);
        assert_eq!((c.nr_dirty, c.nr_writeback), (1, 1));
        c.end_writeback(a);
        assert!(c.add(1, 2, true).is_some());
        assert!(!c.contains(1, 0));
    }

    /// Two lists, `n` clean pages of file 1 on the inactive list (page 0 coldest).
    fn two_lists_with(capacity: u64, n: u64) -> PageCache {
        let mut c = PageCache::with_active_list(capacity);
        for i in 0..n {
            c.try_add(1, i, true).unwrap();
        }
        c
    }

    #[test]
    fn shrink_zone_writes_dirty_pages_back_only_when_allowed() {
        let mut c = two_lists_with(10, 10);
        let cold = c.get(1, 0).unwrap();
        c.set_dirty(cold, Instant::ZERO);
        let mut out = Vec::new();
        // Not allowed (a congested queue, not a writer): passed over, still dirty.
        assert_eq!(c.shrink_zone(1, 2, false, &mut out), 1);
        assert!(out.is_empty() && c.page(cold).dirty);
        // Allowed: put under writeback for the caller to submit, and kept.
        let mut c = two_lists_with(10, 10);
        let cold = c.get(1, 0).unwrap();
        c.set_dirty(cold, Instant::ZERO);
        assert_eq!(c.shrink_zone(1, 2, true, &mut out), 1);
        assert_eq!(out, vec![cold]);
        assert!(c.page(cold).writeback && !c.page(cold).dirty && c.contains(1, 0));
        assert_eq!((c.nr_dirty, c.nr_writeback), (0, 1));
        // Under writeback: passed over — scanned here, since more pages are asked for
        // than are clean — and never written twice.
        out.clear();
        assert_eq!(c.shrink_zone(20, 20, true, &mut out), 8);
        assert!(out.is_empty() && c.contains(1, 0) && c.page(cold).writeback);
    }

    #[test]
    fn a_page_reclaim_wrote_is_freed_first_once_its_write_ends() {
        let mut c = two_lists_with(10, 10);
        let cold = c.get(1, 0).unwrap();
        c.set_dirty(cold, Instant::ZERO);
        let mut out = Vec::new();
        c.shrink_zone(1, 2, true, &mut out); // pages out page 0, frees page 1
        assert!(!c.contains(1, 1));
        c.end_writeback(cold);
        // rotate_reclaimable_page: page 0 is at the cold end again, ahead of page 2.
        c.shrink_zone(1, 1, false, &mut out);
        assert!(!c.contains(1, 0) && c.contains(1, 2));
    }

    /// Activate page `i` of file 1 (two accesses), then stream `n` used-once pages of file
    /// 2 through the cache in `shrink_zone` calls of `call` pages. Whether page `i` is left.
    fn active_page_survives(mapped: u64, call: u64, n: u64) -> bool {
        let mut c = PageCache::with_active_list(2000);
        c.add_mapped(MAPPED, mapped);
        let p = c.try_add(1, 0, true).unwrap();
        c.lookup(1, 0);
        c.lookup(1, 0);
        assert!(c.page(p).active);
        let mut out = Vec::new();
        for i in 0..n {
            if c.free() == 0 {
                c.shrink_zone(call, 2 * call, false, &mut out);
            }
            c.try_add(2, i, true).unwrap();
        }
        c.contains(1, 0)
    }

    #[test]
    fn mapped_pages_stay_active_and_slow_the_deactivation_of_the_rest() {
        // Without mapped pages the one active page is deactivated 33 calls after the cache
        // fills and streamed out an inactive list later (about 5,000 pages in); with 500
        // mapped pages it first moves down a 501-page active list (about 5,600 pages in).
        assert!(!active_page_survives(0, 32, 5300));
        assert!(active_page_survives(500, 32, 5300));
        let mut c = PageCache::with_active_list(100);
        c.add_mapped(MAPPED, 10);
        let mut out = Vec::new();
        for i in 0..1000 {
            if c.free() == 0 {
                c.shrink_zone(8, 90, false, &mut out);
            }
            c.try_add(2, i, true).unwrap();
        }
        assert!((0..10).all(|i| c.contains(MAPPED, i)), "mapped pages are never reclaimed");
    }

    #[test]
    fn truncating_a_file_under_writeback_leaves_no_orphan_dirty_page() {
        let mut c = two_lists_with(4, 4);
        let p = c.get(1, 0).unwrap();
        c.set_dirty(p, Instant::ZERO);
        c.start_writeback(p);
        c.set_dirty(p, Instant::ZERO); // written again while its write is in flight
        c.drop_file(1);
        assert_eq!(c.nr_dirty, 0);
        c.end_writeback(p);
        // Reclaim can now free it like any clean page (it used to find a dirty page of an
        // inode with no dirty list, and start_writeback panicked).
        assert_eq!(c.shrink_zone(4, 4, true, &mut Vec::new()), 1);
    }

    #[test]
    fn shrink_zone_with_only_mapped_pages_active_and_nothing_inactive_stops() {
        // 300 mapped pages at the active tail, 100 activated file pages ahead of them.
        let mut c = PageCache::with_active_list(400);
        c.add_mapped(MAPPED, 300);
        for i in 0..100 {
            c.try_add(1, i, true).unwrap();
            c.lookup(1, i);
            c.lookup(1, i);
        }
        assert_eq!(c.nr_inactive(), 0);
        // The refills (128, then 32) meet only mapped pages, which stay active: nothing
        // becomes inactive, nothing is freed, and the scan stops.
        assert_eq!(c.shrink_zone(32, 64, false, &mut Vec::new()), 0);
    }

    #[test]
    fn writeback_is_cyclic_from_the_writeback_index() {
        let mut c = PageCache::new(10);
        for i in 0..5 {
            let p = c.add(7, i, true).unwrap();
            c.set_dirty(p, Instant::ZERO);
        }
        c.set_writeback_index(7, 3);
        assert_eq!(c.dirty_pages_cyclic(7), vec![3, 4, 0, 1, 2]);
    }

    /// A pass visits exactly what a copy of the dirty set taken when it began would hold,
    /// in the same order, whatever happens to the pages meanwhile: pages dirtied, written,
    /// written again, files truncated, the writeback index moved, other passes running,
    /// and a page peeked at but left for later.
    #[test]
    fn a_pass_visits_the_dirty_set_as_of_its_start() {
        use iosched_core::Rng;
        for seed in 0..40 {
            let mut rng = Rng::new(seed);
            let mut c = PageCache::with_active_list(48);
            // Live passes, each with the copy it must match.
            let mut passes: Vec<(PassId, u32, VecDeque<u64>)> = Vec::new();
            let mut visited = 0;
            for _ in 0..3000 {
                let file = 1 + rng.below(3) as u32;
                let index = rng.below(24);
                match rng.below(10) {
                    0..=2 => {
                        let p = c.get(file, index).or_else(|| c.add(file, index, true));
                        if let Some(p) = p
                            && !c.page(p).locked
                        {
                            c.set_dirty(p, Instant::ZERO);
                        }
                    }
                    3 => {
                        if let Some(p) = c.get(file, index)
                            && c.page(p).dirty
                            && !c.page(p).writeback
                        {
                            c.start_writeback(p);
                        }
                    }
                    4 => {
                        if let Some(p) = c.get(file, index)
                            && c.page(p).writeback
                        {
                            c.end_writeback(p);
                        }
                    }
                    5 if rng.below(8) == 0 => c.drop_file(file),
                    5 => c.set_writeback_index(file, index),
                    6 if passes.len() < 4 => {
                        let copy = c.dirty_pages_cyclic(file).into();
                        passes.push((c.begin_pass(file), file, copy));
                    }
                    _ if !passes.is_empty() => {
                        let k = rng.below(passes.len() as u64) as usize;
                        let (id, f, copy) = &mut passes[k];
                        let got = c.pass_peek(*id);
                        assert_eq!(got.map(|(i, _)| i), copy.front().copied(), "seed {seed}");
                        match got {
                            // Peeked and left there, as a bio that ends before this page
                            // does: the pass comes back to it after what happens next.
                            Some(_) if rng.below(3) == 0 => {}
                            Some((i, known)) => {
                                if let Some(p) = known {
                                    assert_eq!(c.get(*f, i), Some(p), "seed {seed}: the page of a dirty index");
                                }
                                c.pass_pop(*id, i);
                                copy.pop_front();
                                visited += 1;
                                // The pass writes the page, as writeback does.
                                if let Some(p) = c.get(*f, i)
                                    && c.page(p).dirty
                                    && !c.page(p).writeback
                                    && rng.below(2) == 0
                                {
                                    c.start_writeback(p);
                                }
                            }
                            None => {
                                c.end_pass(*id);
                                passes.swap_remove(k);
                            }
                        }
                    }
                    _ => {}
                }
            }
            assert!(visited > 100, "seed {seed}: the passes visited {visited} pages");
        }
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    /// A sequential scan larger than the cache hits nothing under LRU.
    #[test]
    fn scan_after_write_misses() {
        let mut c = PageCache::new(100);
        // Write 250 pages (dirty, then written back in order).
        for i in 0..250u64 {
            let p = c.add(1, i, true).expect("a clean page to evict");
            c.set_dirty(p, Instant::ZERO);
            c.start_writeback(p);
            c.end_writeback(p);
        }
        let mut hits = 0;
        for i in 0..250u64 {
            match c.lookup(1, i) {
                Lookup::Uptodate(_) => hits += 1,
                _ => {
                    let p = c.add(1, i, false).unwrap();
                    c.read_done(p);
                }
            }
        }
        assert_eq!(hits, 0);
    }
}
