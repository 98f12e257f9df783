//! File read-ahead as in Linux 2.6.10–2.6.22 (`mm/readahead.c`): a current window and an
//! "ahead" window per open file. The first sequential read opens a small window (4× the
//! request, rounded up); each time the reader enters the ahead window the windows shift
//! and a new ahead window is read asynchronously, growing 4× while small and 2× later,
//! up to `read_ahead_kb`. A non-sequential read turns read-ahead off for that read;
//! 256 consecutive fully cached read-aheads turn it off until a miss. Asynchronous
//! read-ahead is skipped while the device's read queue is congested.
//!
//! This module is the pure window arithmetic; the host performs the page allocations and
//! bio submissions the returned [`RaAction`]s ask for.

/// `VM_MAX_CACHE_HIT`.
const MAX_CACHE_HIT: u64 = 256;

/// `struct file_ra_state`.
#[derive(Clone, Debug)]
pub struct RaState {
    pub start: u64,
    pub size: u64,
    pub ahead_start: u64,
    pub ahead_size: u64,
    /// Last page read (−1 before the first read).
    pub prev_page: i64,
    pub cache_hit: u64,
    /// `RA_FLAG_MISS`: a page the window covered was missing when needed.
    pub miss: bool,
    /// `RA_FLAG_INCACHE`: the file is cached; read-ahead is off.
    pub incache: bool,
    pub max: u64,
}

/// Pages to read: `[start, start + nr)`; `blocking` reads are submitted even if the read
/// queue is congested.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RaAction {
    pub start: u64,
    pub nr: u64,
    pub blocking: bool,
}

/// The host's answer to a read-ahead: how many pages it actually started reading
/// (0 if all were cached or it was skipped for congestion).
pub trait RaIo {
    fn readahead(&mut self, a: RaAction) -> RaOutcome;
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RaOutcome {
    /// Started reading this many pages.
    Read(u64),
    /// Non-blocking read-ahead skipped: the read queue is congested.
    Congested,
}

impl RaState {
    pub fn new(max: u64) -> Self {
        RaState {
            start: 0,
            size: 0,
            ahead_start: 0,
            ahead_size: 0,
            prev_page: -1,
            cache_hit: 0,
            miss: false,
            incache: false,
            max,
        }
    }

    fn off(&mut self) {
        self.start = 0;
        self.size = 0;
        self.ahead_start = 0;
        self.ahead_size = 0;
    }

    fn init_size(&self, size: u64) -> u64 {
        let newsize = size.next_power_of_two();
        if newsize <= self.max / 32 {
            newsize * 4
        } else if newsize <= self.max / 4 {
            newsize * 2
        } else {
            self.max
        }
    }

    fn next_size(&mut self) -> u64 {
        let cur = self.size;
        let min = 4.min(self.max);
        let n = if self.miss {
            self.miss = false;
            cur.saturating_sub(2).max(min)
        } else if cur < self.max / 16 {
            4 * cur
        } else {
            2 * cur
        };
        n.min(self.max)
    }

    /// `check_ra_success` folded into `blockable_page_cache_readahead`.
    fn blockable(&mut self, io: &mut dyn RaIo, a: RaAction) -> bool {
        match io.readahead(a) {
            RaOutcome::Congested => false,
            RaOutcome::Read(0) => {
                self.cache_hit += a.nr;
                if self.cache_hit >= MAX_CACHE_HIT {
                    self.off();
                    self.incache = true;
                    false
                } else {
                    true
                }
            }
            RaOutcome::Read(_) => {
                self.cache_hit = 0;
                true
            }
        }
    }

    fn make_ahead_window(&mut self, io: &mut dyn RaIo, force: bool) -> bool {
        self.ahead_size = self.next_size();
        self.ahead_start = self.start + self.size;
        let block = force || self.prev_page >= self.ahead_start as i64;
        let ok = self.blockable(io, RaAction { start: self.ahead_start, nr: self.ahead_size, blocking: block });
        if !ok && !force {
            self.ahead_start = 0;
            self.ahead_size = 0;
        }
        ok
    }

    /// `page_cache_readahead`: called when the reader reaches page `offset` wanting
    /// `req_size` pages; returns the page at which to call again.
    pub fn page_cache_readahead(&mut self, io: &mut dyn RaIo, offset: u64, req_size: u64) -> u64 {
        let sequential = offset as i64 == self.prev_page + 1;
        self.prev_page = offset as i64;
        let newsize = req_size.min(self.max);
        if newsize == 0 || self.incache {
            return (self.prev_page + 1) as u64;
        }
        self.prev_page += newsize as i64 - 1;

        if sequential && self.size == 0 {
            // First read at the start of a file (or a new sequential stream).
            self.size = self.init_size(newsize);
            self.start = offset;
            if !self.blockable(io, RaAction { start: offset, nr: self.size, blocking: true }) {
                return (self.prev_page + 1) as u64;
            }
            if req_size >= self.max {
                self.make_ahead_window(io, true);
            }
            return (self.prev_page + 1) as u64;
        }
        if !sequential {
            // Random access: read just what was asked.
            self.off();
            self.blockable(io, RaAction { start: offset, nr: newsize, blocking: true });
            return (self.prev_page + 1) as u64;
        }
        // Sequential with an existing window.
        if self.ahead_start == 0 && !self.make_ahead_window(io, false) {
            self.prev_page = self.prev_page.min((self.ahead_start + self.ahead_size) as i64 - 1);
            return (self.prev_page + 1) as u64;
        }
        if self.prev_page >= self.ahead_start as i64 {
            self.start = self.ahead_start;
            self.size = self.ahead_size;
            self.make_ahead_window(io, false);
            self.prev_page = self.prev_page.min((self.ahead_start + self.ahead_size) as i64 - 1);
        }
        (self.prev_page + 1) as u64
    }

    /// `handle_ra_miss`: a page was not cached when the reader needed it.
    pub fn miss(&mut self) {
        self.miss = true;
        self.incache = false;
        self.cache_hit = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the read-ahead a policy asks for (and lets all of it be read).
    pub(super) struct Rec(pub(super) Vec<RaAction>);
    impl RaIo for Rec {
        fn readahead(&mut self, a: RaAction) -> RaOutcome {
            self.0.push(a);
            RaOutcome::Read(a.nr)
        }
    }

    #[test]
    fn sequential_reader_grows_to_the_maximum() {
        let mut ra = RaState::new(32);
        let mut io = Rec(vec![]);
        let mut next = 0;
        for page in 0..200u64 {
            if page == next {
                next = ra.page_cache_readahead(&mut io, page, 1);
            }
        }
        let sizes: Vec<u64> = io.0.iter().map(|a| a.nr).collect();
        assert_eq!(&sizes[..5], &[4, 8, 16, 32, 32]);
        // Windows are contiguous.
        for w in io.0.windows(2) {
            assert_eq!(w[0].start + w[0].nr, w[1].start);
        }
        // Only the first is blocking.
        assert!(io.0[0].blocking && io.0[1..].iter().all(|a| !a.blocking));
    }

    #[test]
    fn random_reads_read_only_the_page() {
        let mut ra = RaState::new(32);
        let mut io = Rec(vec![]);
        ra.page_cache_readahead(&mut io, 100, 1);
        ra.page_cache_readahead(&mut io, 7, 1);
        assert_eq!(io.0.last().unwrap(), &RaAction { start: 7, nr: 1, blocking: true });
    }
}

/// Read-ahead as in Linux 2.5.4x–2.5.6x (akpm's 2002 `mm/readahead.c`, the seed
/// reports' kernels). Called for *every* page read. The window grows by two pages per
/// hit; a read of the first page of a file opens a half-maximum window; a miss shrinks
/// the next window by 25 %, with a 4-page minimum (so even random reads fetch 16 KiB).
/// When the reader steps into the ahead window it becomes the current window and
/// nothing is submitted; the next ahead window is submitted at the *second* page of the
/// new window, i.e. after its I/O completed — so a sequential reader has one read
/// outstanding at a time.
#[derive(Clone, Debug)]
pub struct Ra25 {
    start: u64,
    size: u64,
    /// Pages to read on the next miss; `None` once maximally shrunk (read-ahead off).
    next_size: Option<u64>,
    prev_page: i64,
    ahead_start: u64,
    ahead_size: u64,
    max: u64,
    min: u64,
}

impl Ra25 {
    /// `VM_MIN_READAHEAD` = 16 KiB.
    pub fn new(max: u64) -> Self {
        Ra25 {
            start: 0,
            size: 0,
            next_size: Some(0),
            prev_page: -1,
            ahead_start: 0,
            ahead_size: 0,
            max,
            min: 4.min(max),
        }
    }

    /// `check_ra_success`.
    fn check(&mut self, actual: u64, orig: u64) {
        if actual == 0 {
            if orig > 1 {
                self.next_size = Some(orig - 1);
                if self.ahead_size != 0 {
                    self.ahead_size = orig - 1;
                }
            } else {
                self.next_size = None;
            }
        }
    }

    fn read(io: &mut dyn RaIo, start: u64, nr: u64) -> u64 {
        match io.readahead(RaAction { start, nr, blocking: true }) {
            RaOutcome::Read(n) => n,
            RaOutcome::Congested => 0,
        }
    }

    /// `page_cache_readahead(file, offset)`.
    pub fn page_cache_readahead(&mut self, io: &mut dyn RaIo, offset: u64) {
        if offset as i64 == self.prev_page && self.next_size != Some(0) {
            return;
        }
        let Some(next) = self.next_size else { return };
        if self.max == 0 {
            return;
        }
        let orig = next;
        let mut next = next;
        if next == 0 && offset == 0 {
            // First read from the first page: assume a whole-file read.
            next = self.max / 2;
            self.next_size = Some(next);
            return self.do_io(io, offset, orig);
        }
        self.prev_page = offset as i64;
        if offset >= self.start && offset <= self.start + self.size {
            next += 2; // a hit: grow
        } else {
            next -= next / 4; // a miss: shrink by 25 %
        }
        next = next.clamp(self.min, self.max);
        self.next_size = Some(next);
        if offset < self.start || offset >= self.start + self.size {
            if offset == self.ahead_start && self.ahead_size != 0 {
                // Stepped into the ahead window: it becomes current; I/O for the next
                // one is submitted at its second page.
                self.start = self.ahead_start;
                self.size = self.ahead_size;
                self.prev_page = self.start as i64;
                self.ahead_start = 0;
                self.ahead_size = 0;
                return;
            }
            self.do_io(io, offset, orig);
        } else if self.ahead_start == 0 {
            self.ahead_start = self.start + self.size;
            self.ahead_size = next;
            let actual = Self::read(io, self.ahead_start, self.ahead_size);
            self.check(actual, orig);
        }
    }

    fn do_io(&mut self, io: &mut dyn RaIo, offset: u64, orig: u64) {
        self.start = offset;
        self.size = self.next_size.unwrap_or(0);
        self.ahead_start = 0;
        self.ahead_size = 0;
        let actual = Self::read(io, offset, self.size);
        self.check(actual, orig);
    }

    /// `handle_ra_miss`.
    pub fn miss(&mut self) {
        self.next_size = match self.next_size {
            None => Some(self.min),
            Some(n) => Some(n.saturating_sub(3).max(self.min)),
        };
    }
}

#[cfg(test)]
mod tests25 {
    use super::tests::Rec;
    use super::*;

    #[test]
    fn next_ahead_window_waits_for_the_second_page() {
        let mut ra = Ra25::new(32);
        let mut io = Rec(vec![]);
        for page in 0..200u64 {
            let before = io.0.len();
            ra.page_cache_readahead(&mut io, page);
            for a in &io.0[before..] {
                // I/O is submitted at or beyond the reader, and never for a window adjacent to one
                // still unread beyond the reader: at most one window ahead.
                assert!(a.start >= page, "page {page} window {a:?}");
                assert!(a.start <= page + 33, "page {page} window {a:?}");
            }
        }
        assert_eq!(io.0[0], RaAction { start: 0, nr: 16, blocking: true });
        assert!(io.0.iter().skip(3).all(|a| a.nr == 32), "{:?}", io.0);
    }

    #[test]
    fn random_reads_fetch_the_minimum_window() {
        let mut ra = Ra25::new(32);
        let mut io = Rec(vec![]);
        ra.page_cache_readahead(&mut io, 1000);
        ra.page_cache_readahead(&mut io, 37);
        assert_eq!(io.0.last().unwrap().nr, 4);
    }
}

/// Read-ahead as in Linux 2.4.20/2.4.21 (`mm/filemap.c`: `do_generic_file_read` and
/// `generic_file_readahead`), kept in the open file (`f_raend`, `f_ralen`, `f_rawin`,
/// `f_ramax`). A read that starts outside the previous window resets the context; one
/// inside it may read ahead (`reada_ok`). Each read sets the window's maximum to what the
/// call needs, at least `vm_min_readahead` (3 pages) when sequential and at most
/// `vm_max_readahead` (31 pages; 2.4's IDE copies it into `max_readahead[]`). On a page
/// that is not yet read (locked), a read outside the last window reads `f_ramax` pages
/// after it synchronously; on an uptodate page inside the last window's I/O the next
/// window, `f_ramax + 1` pages, is read asynchronously. Each read-ahead doubles `f_ramax`.
/// The page at `i_size >> PAGE_SHIFT` (the file's partial last page) is never read ahead.
/// Pages are read one at a time (`page_cache_read` → `readpage`), so the window reaches
/// the queue as one buffer per page for the elevator to merge; no call unplugs the queue
/// (the reader's wait for its page runs `tq_disk`).
#[derive(Clone, Debug)]
pub struct Ra24 {
    raend: u64,
    ralen: u64,
    rawin: u64,
    ramax: u64,
    /// This call's `reada_ok` (0, 1, or 2 once an asynchronous read-ahead was started).
    reada_ok: u8,
    max: u64,
    min: u64,
}

impl Ra24 {
    /// `vm_min_readahead` = 3 pages.
    pub const MIN: u64 = 3;

    pub fn new(max: u64) -> Self {
        Ra24 { raend: 0, ralen: 0, rawin: 0, ramax: 0, reada_ok: 0, max, min: Self::MIN.min(max) }
    }

    /// The prologue of `do_generic_file_read` for a read of `count` bytes at page `index`,
    /// byte `offset` in it.
    pub fn begin_read(&mut self, index: u64, offset: u64, count: u64) {
        if index > self.raend || index + self.rawin < self.raend {
            self.reada_ok = 0;
            self.raend = 0;
            self.ralen = 0;
            self.ramax = 0;
            self.rawin = 0;
        } else {
            self.reada_ok = 1;
        }
        if index == 0 && offset + count <= 4096 / 2 {
            self.ramax = 0;
        } else {
            let needed = ((offset + count) >> 12) + 1;
            self.ramax = self.ramax.max(needed);
            if self.reada_ok != 0 && self.ramax < self.min {
                self.ramax = self.min;
            }
            self.ramax = self.ramax.min(self.max);
        }
    }

    /// `generic_file_readahead` for page `index` of a file with `end_index` =
    /// `i_size >> PAGE_SHIFT`; `locked` is `PageLocked` (the page is being read).
    pub fn readahead(&mut self, io: &mut dyn RaIo, index: u64, locked: bool, end_index: u64) {
        let mut raend = self.raend;
        let mut max_ahead = 0;
        if locked {
            if self.ralen == 0 || index >= raend || index + self.rawin < raend {
                raend = index;
                if raend < end_index {
                    max_ahead = self.ramax;
                }
                self.rawin = 0;
                self.ralen = 1;
                if max_ahead == 0 {
                    self.raend = index + self.ralen;
                    self.rawin += self.ralen;
                }
            }
        } else if self.reada_ok != 0 && self.ramax != 0 && raend >= 1 && index <= raend && index + self.ralen >= raend {
            raend -= 1;
            if raend < end_index {
                max_ahead = self.ramax + 1;
            }
            if max_ahead != 0 {
                self.rawin = self.ralen;
                self.ralen = 0;
                self.reada_ok = 2;
            }
        }
        // page_cache_read of raend + 1 … until max_ahead pages or end_index.
        let first = raend + 1;
        let ahead = max_ahead.min(end_index.saturating_sub(first));
        if ahead == 0 {
            return;
        }
        // Cached pages count as read ahead too (`page_cache_read` returns 0 for them).
        let _ = io.readahead(RaAction { start: first, nr: ahead, blocking: true });
        self.ralen += ahead;
        self.rawin += self.ralen;
        self.raend = raend + ahead + 1;
        self.ramax = (2 * self.ramax).min(self.max);
    }
}

#[cfg(test)]
mod tests24 {
    use super::tests::Rec;
    use super::*;

    /// `cat` of a file, `read` bytes per read(): the pages each read-ahead asks for.
    fn cat(pages: u64, read: u64) -> Vec<RaAction> {
        let mut ra = Ra24::new(31);
        let mut io = Rec(vec![]);
        let mut cached = std::collections::BTreeSet::new();
        let mut pos = 0;
        while pos < pages * 4096 {
            let index = pos / 4096;
            ra.begin_read(index, pos % 4096, read);
            for p in index..((pos + read).div_ceil(4096)).min(pages) {
                let locked = !cached.contains(&p);
                let before = io.0.len();
                ra.readahead(&mut io, p, locked, pages);
                for a in &io.0[before..] {
                    cached.extend(a.start..a.start + a.nr);
                }
                cached.insert(p);
            }
            pos += read;
        }
        io.0
    }

    /// Every page but the first is read ahead before the reader gets to it; the windows
    /// grow to 31 + 1 pages (asynchronous ones are one page longer) and each starts where
    /// the previous one ended.
    #[test]
    fn windows_grow_to_the_maximum_and_follow_each_other() {
        let io = cat(200, 4096);
        // The first read: page 0 by readpage, then 3 pages (the call needs 2; a fresh
        // context counts as sequential, so vm_min_readahead lifts it to 3).
        assert_eq!(io[0], RaAction { start: 1, nr: 3, blocking: true });
        for w in io.windows(2) {
            assert_eq!(w[1].start, w[0].start + w[0].nr, "{io:?}");
        }
        let sizes: Vec<u64> = io.iter().map(|a| a.nr).collect();
        assert_eq!(&sizes[..4], &[3, 7, 13, 25], "{sizes:?}");
        assert!(sizes[4..sizes.len() - 1].iter().all(|&n| n == 32), "{sizes:?}");
    }

    #[test]
    fn a_small_first_read_reads_no_ahead_and_the_last_partial_page_is_never_read_ahead() {
        let mut ra = Ra24::new(31);
        let mut io = Rec(vec![]);
        ra.begin_read(0, 0, 1000);
        ra.readahead(&mut io, 0, true, 10);
        assert!(io.0.is_empty(), "{:?}", io.0);
        // A file of 2.5 pages (end_index 2): read-ahead covers page 1 only.
        let mut ra = Ra24::new(31);
        ra.begin_read(0, 0, 32768);
        ra.readahead(&mut io, 0, true, 2);
        assert_eq!(io.0, vec![RaAction { start: 1, nr: 1, blocking: true }]);
    }

    #[test]
    fn a_seek_resets_the_context() {
        let mut ra = Ra24::new(31);
        let mut io = Rec(vec![]);
        ra.begin_read(0, 0, 4096);
        ra.readahead(&mut io, 0, true, 1000);
        ra.begin_read(500, 0, 4096);
        assert_eq!(ra.reada_ok, 0);
        ra.readahead(&mut io, 500, true, 1000);
        // needed = 2 pages, no minimum when not sequential.
        assert_eq!(io.0.last().unwrap(), &RaAction { start: 501, nr: 2, blocking: true });
    }
}
