//! Dirty-page writeback, after `mm/page-writeback.c` and `fs/fs-writeback.c`: the dirty
//! limits, a writer's throttling (`balance_dirty_pages`), background writeout and
//! kupdate's periodic pass run by the pdflush threads (`mm/pdflush.c`), and the inode
//! walk that writes a file's dirty pages in index order (`writeback_inodes`,
//! `mpage_writepages`).

use super::*;

impl Sim {
    pub(super) fn ratelimit_pages(&self) -> u64 {
        // writeback_set_ratelimit(): total pages / (CPUs * 32), at least 16, at most 4 MiB.
        let total = self.cfg.host.mem_bytes / 4096;
        (total / (self.cfg.cpu.cpus as u64 * 32)).clamp(16, 1024)
    }

    /// `get_dirty_limits`: (background, dirty) thresholds in pages.
    pub(super) fn dirty_limits(&self) -> (u64, u64) {
        let avail = self.cfg.host.mem_bytes / 4096;
        let mut dirty_ratio = self.cfg.host.dirty_ratio as u64;
        dirty_ratio = dirty_ratio.max(5);
        let mut bg = self.cfg.host.dirty_background_ratio as u64;
        if bg >= dirty_ratio {
            bg = dirty_ratio / 2;
        }
        (bg * avail / 100, dirty_ratio * avail / 100)
    }

    /// `balance_dirty_pages`.
    pub(super) fn step_balance(&mut self, t: TaskId, mut b: Balance) -> Cont {
        if let WbRule::Bdflush24 { .. } = self.cfg.host.writeback {
            return self.step_balance24(b);
        }
        let write_chunk = (self.ratelimit_pages() + self.ratelimit_pages() / 2) as i64;
        let (_, dirty_thresh) = self.dirty_limits();
        let over = |s: &Sim| s.cache.nr_dirty + s.cache.nr_writeback > dirty_thresh;
        match b.phase {
            0 => {
                if !over(self) {
                    return self.balance_done(t, b);
                }
                self.dirty_exceeded = true;
                if self.cache.nr_dirty > 0 {
                    b.phase = 1;
                    let then = Box::new(Cont::Balance(b));
                    return self.writeback_cont(write_chunk, false, None, None, then);
                }
                b.phase = 2;
                let token = self.token();
                self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                Cont::Balance(b)
            }
            1 => {
                // After our writeback pass: how much did it write?
                let written = self.tasks[t.0 as usize].last_wb_written();
                if !over(self) {
                    return self.balance_done(t, b);
                }
                b.pages_written += written as u64;
                if b.pages_written >= write_chunk as u64 {
                    return self.balance_done(t, b);
                }
                b.phase = 2;
                let token = self.token();
                self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                Cont::Balance(b)
            }
            _ => {
                b.phase = 0;
                Cont::Balance(b)
            }
        }
    }

    pub(super) fn balance_done(&mut self, _t: TaskId, b: Balance) -> Cont {
        let (bg, dirty_thresh) = self.dirty_limits();
        if self.cache.nr_dirty + self.cache.nr_writeback <= dirty_thresh {
            self.dirty_exceeded = false;
        }
        if !self.bdi_writeback && self.cache.nr_dirty > bg {
            self.start_background_writeout();
        }
        Cont::Finish { bytes: b.then_bytes }
    }

    pub(super) fn start_background_writeout(&mut self) {
        self.background_writeout(0);
    }

    /// `wakeup_bdflush(nr_pages)`: background writeback of at least `min_pages` pages,
    /// below the background threshold too (direct reclaim asks for what it scanned).
    pub(super) fn wakeup_bdflush(&mut self, min_pages: u64) {
        self.stats.bdflush_wakeups += 1;
        self.background_writeout(min_pages as i64);
    }

    pub(super) fn background_writeout(&mut self, min_pages: i64) {
        if self.background_running {
            return;
        }
        if self.pdflush_operation(PdKind::Background, min_pages) {
            self.background_running = true;
        }
    }

    /// `pdflush_operation`: give `kind` of work to an idle pdflush thread, if there is one.
    /// On 2.4, which has no pdflush, the work goes to bdflush (`wakeup_bdflush`) or
    /// kupdated, and nothing is reported as running.
    pub(super) fn pdflush_operation(&mut self, kind: PdKind, budget: i64) -> bool {
        if let WbRule::Bdflush24 { .. } = self.cfg.host.writeback {
            self.wake24(if kind == PdKind::Kupdate { PdKind::Kupdate24 } else { PdKind::Bdflush24 });
            return false;
        }
        let idle = self
            .pdflush
            .iter()
            .copied()
            .find(|&p| matches!(self.tasks[p.0 as usize].state, State::Blocked(Block::Sleep { .. })));
        let Some(p) = idle else { return false };
        self.tasks[p.0 as usize].cont = Cont::Pdflush(PdState { kind, phase: 0, budget });
        self.make_runnable(p);
        true
    }

    pub(super) fn writeback_cont(
        &mut self,
        nr_to_write: i64,
        nonblocking: bool,
        older_than: Option<Instant>,
        only_file: Option<u32>,
        then: Box<Cont>,
    ) -> Cont {
        let inodes: VecDeque<u32> = match only_file {
            Some(f) => [f].into_iter().collect(),
            None => {
                // writeback_inodes walks the superblocks newest first: the filesystem's
                // inodes (oldest dirtied first), then the block device's, mounted at boot,
                // whose pages are the filesystem's metadata.
                let mut v: VecDeque<u32> = self
                    .cache
                    .dirty_inodes()
                    .filter(|(since, _)| older_than.is_none_or(|o| *since <= o))
                    .map(|(_, f)| f)
                    .collect();
                if let Some(i) = v.iter().position(|&f| f == META) {
                    v.remove(i);
                    v.push_back(META);
                }
                v
            }
        };
        Cont::Writeback(Writeback {
            nr_to_write,
            nonblocking,
            older_than,
            only_file,
            inodes,
            pages: WbPages::None,
            file: None,
            written: 0,
            encountered_congestion: false,
            buffers_only: false,
            lru24: false,
            then,
        })
    }

    /// One bio of a writeback pass (`writeback_inodes` → `mpage_writepages`).
    pub(super) fn step_writeback(&mut self, t: TaskId, mut w: Writeback) -> Cont {
        loop {
            if w.nr_to_write <= 0 {
                return self.writeback_done(t, w);
            }
            if w.nonblocking && self.write_congested {
                w.encountered_congestion = true;
                return self.writeback_done(t, w);
            }
            if self.wb_peek(&w).is_none() {
                self.release_inode(&mut w);
                let Some(f) = w.inodes.pop_front() else {
                    return self.writeback_done(t, w);
                };
                if self.cache.inode_dirty(f).is_none() {
                    continue;
                }
                if w.older_than.is_some_and(|o| self.cache.inode_dirty(f).is_some_and(|d| d.since > o)) {
                    continue;
                }
                if w.only_file.is_none() && !w.lru24 && !self.inodes_under_writeback.insert(f) {
                    // I_LOCK: another task is writing this inode back; WB_SYNC_NONE passes
                    // skip it (`__writeback_single_inode` requeues it) rather than wait.
                    continue;
                }
                w.pages = WbPages::Pass(self.cache.begin_pass(f));
                w.file = Some(f);
                continue;
            }
            // Build one bio of pages contiguous in the file and on disk.
            let f = w.file.unwrap();
            let max_pages = (self.max_bio_sectors() / SECTORS_PER_BLOCK) as usize;
            let mut pages: Vec<PageId> = Vec::new();
            let mut first_block = 0;
            let mut prev: Option<(u64, u64)> = None;
            while let Some((idx, known)) = self.wb_peek(&w) {
                debug_assert!(known.is_none() || known == self.cache.get(f, idx));
                let Some(p) = known.or_else(|| self.cache.get(f, idx)) else {
                    self.wb_pop(&mut w, idx);
                    continue;
                };
                let pg = self.cache.page(p);
                // (ext3: a metadata block a live transaction holds is not written home.)
                if !pg.dirty || pg.writeback || pg.locked || (f == META && self.journal_holds(idx)) {
                    self.wb_pop(&mut w, idx);
                    continue;
                }
                if w.lru24 && w.older_than.is_some_and(|o| pg.dirtied > o) {
                    // kupdated: the oldest dirty buffer is young enough; the pass is over.
                    w.nr_to_write = 0;
                    break;
                }
                let block = if f == META { Some(idx) } else { self.fs.map(FileId(f), idx) };
                let Some(block) = block else {
                    self.wb_pop(&mut w, idx);
                    continue;
                };
                if let Some((pi, pb)) = prev
                    && (idx != pi + 1 || block != pb + 1)
                {
                    break;
                }
                if pages.len() >= max_pages || (pages.len() as i64) >= w.nr_to_write {
                    break;
                }
                if pages.is_empty() {
                    first_block = block;
                }
                // Past the page before its writeback starts: the pass has visited it.
                self.wb_pop(&mut w, idx);
                self.cache.start_writeback(p);
                pages.push(p);
                prev = Some((idx, block));
            }
            if pages.is_empty() {
                continue;
            }
            let n = pages.len() as i64;
            w.nr_to_write -= n;
            w.written += n;
            if let Some((pi, _)) = prev
                && !w.buffers_only
            {
                self.cache.set_writeback_index(f, pi + 1);
            }
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(first_block);
            let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
            self.queue_bio(t, Op::Write, sector, len, false, BioKind::CacheWrite(pages), f == META);
            return Cont::Writeback(w);
        }
    }

    /// The next page the pass considers on its inode: its index, and its page if known.
    pub(super) fn wb_peek(&mut self, w: &Writeback) -> Option<(u64, Option<PageId>)> {
        match &w.pages {
            WbPages::None => None,
            WbPages::List(q) => q.front().map(|&i| (i, None)),
            WbPages::Pass(id) => self.cache.pass_peek(*id),
        }
    }

    /// Move past the page `wb_peek` returned.
    pub(super) fn wb_pop(&mut self, w: &mut Writeback, index: u64) {
        match &mut w.pages {
            WbPages::None => {}
            WbPages::List(q) => {
                q.pop_front();
            }
            WbPages::Pass(id) => self.cache.pass_pop(*id, index),
        }
    }

    /// Drop the I_LOCK a `writeback_inodes` pass holds on the inode it is writing.
    pub(super) fn release_inode(&mut self, w: &mut Writeback) {
        if let WbPages::Pass(id) = std::mem::replace(&mut w.pages, WbPages::None) {
            self.cache.end_pass(id);
        }
        if let Some(f) = w.file.take()
            && w.only_file.is_none()
        {
            if !w.lru24 {
                self.inodes_under_writeback.remove(&f);
            }
            // __sync_single_inode: after its pages, a dirty inode is written
            // (ext2_write_inode without wait copies it into its block, which is dirtied;
            // ext3_write_inode without wait does nothing: the journal has the inode).
            if f != META && self.inode_dirty.remove(&f) && !self.journaled() {
                let ino = self.fs.inode_block(self.fs.file(FileId(f)).inode);
                self.dirty_meta(ino);
            }
        }
    }

    pub(super) fn writeback_done(&mut self, t: TaskId, mut w: Writeback) -> Cont {
        self.release_inode(&mut w);
        self.tasks[t.0 as usize].set_wb_result(w.written, w.encountered_congestion);
        *w.then
    }

    // ---------------------------------------------------------------------------------
    // pdflush

    pub(super) fn step_pdflush(&mut self, t: TaskId, mut p: PdState) -> Cont {
        if matches!(p.kind, PdKind::Bdflush24 | PdKind::Kupdate24) {
            return self.step_bdflush24(t, p);
        }
        let (bg, _) = self.dirty_limits();
        match (p.kind, p.phase) {
            (_, 0) => {
                // Acquire the device for writeback (writeback_acquire).
                if self.bdi_writeback {
                    return self.pdflush_idle(t, p.kind);
                }
                self.bdi_writeback = true;
                // background_writeout(min_pages): on while above the background
                // threshold or short of the pages it was asked for.
                if p.kind == PdKind::Background && self.cache.nr_dirty < bg && p.budget <= 0 {
                    return self.pdflush_idle(t, p.kind);
                }
                if p.kind == PdKind::Kupdate {
                    p.budget = self.cache.nr_dirty as i64 + 1;
                }
                p.phase = 1;
                let older = (p.kind == PdKind::Kupdate).then(|| self.now - self.cfg.host.dirty_expire);
                let then = Box::new(Cont::Pdflush(PdState { phase: 2, ..p }));
                self.writeback_cont(MAX_WRITEBACK_PAGES, true, older, None, then)
            }
            (_, 2) => {
                let (written, congested) = self.tasks[t.0 as usize].wb_result();
                self.bdi_writeback = false;
                p.budget -= match p.kind {
                    PdKind::Background => written,
                    _ => MAX_WRITEBACK_PAGES,
                };
                let wrote_less = written < MAX_WRITEBACK_PAGES;
                let more = match p.kind {
                    PdKind::Background => self.cache.nr_dirty >= bg || p.budget > 0,
                    _ => p.budget > 0,
                };
                if wrote_less {
                    if congested {
                        // congestion_wait, then go on.
                        p.phase = 3;
                        let token = self.token();
                        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                        return Cont::Pdflush(p);
                    }
                    if p.kind == PdKind::Background {
                        let token = self.token();
                        p.phase = 4;
                        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                        return Cont::Pdflush(p);
                    }
                    return self.pdflush_idle(t, p.kind);
                }
                if !more {
                    return self.pdflush_idle(t, p.kind);
                }
                p.phase = 0;
                Cont::Pdflush(p)
            }
            (_, 3) => {
                p.phase = 0;
                Cont::Pdflush(p)
            }
            _ => self.pdflush_idle(t, p.kind),
        }
    }

    pub(super) fn pdflush_idle(&mut self, t: TaskId, kind: PdKind) -> Cont {
        if kind == PdKind::Background {
            self.background_running = false;
        }
        self.bdi_writeback = false;
        self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
        Cont::Pdflush(PdState { kind, phase: 0, budget: 0 })
    }

    pub(super) fn kupdate(&mut self) {
        let wi = self.cfg.host.writeback_interval;
        self.engine.schedule(self.now + wi, Ev::Kupdate);
        if let WbRule::Bdflush24 { .. } = self.cfg.host.writeback {
            return self.wake24(PdKind::Kupdate24);
        }
        self.pdflush_operation(PdKind::Kupdate, 0);
    }

    // ---------------------------------------------------------------------------------
    // 2.4: bdflush and kupdated (`fs/buffer.c` of 2.4.19 to 2.4.22)

    /// `balance_dirty_state`: −1 below `nfract` % of `nr_free_buffer_pages()` dirty, 1
    /// above `nfract_sync` %, else 0. Only dirty buffers count, not those being written.
    fn balance_dirty_state24(&self) -> i32 {
        let WbRule::Bdflush24 { nfract, nfract_sync, .. } = self.cfg.host.writeback else { return -1 };
        let (dirty, tot) = (self.cache.nr_dirty * 100, self.cache.capacity());
        if dirty > tot * nfract as u64 { if dirty > tot * nfract_sync as u64 { 1 } else { 0 } } else { -1 }
    }

    /// `bdflush_stop`: fewer than `nfract_stop` % dirty.
    fn bdflush_stop24(&self) -> bool {
        let WbRule::Bdflush24 { nfract_stop, .. } = self.cfg.host.writeback else { return true };
        self.cache.nr_dirty * 100 <= self.cache.capacity() * nfract_stop as u64
    }

    /// `balance_dirty`, once per buffer the write dirtied (`b.pages_written` of them left):
    /// above `nfract` wake bdflush; above `nfract_sync` also write 32 buffers here, in the
    /// writer's own time (it sleeps only if the request pool is empty).
    fn step_balance24(&mut self, mut b: Balance) -> Cont {
        let state = self.balance_dirty_state24();
        if state < 0 || b.pages_written == 0 {
            return Cont::Finish { bytes: b.then_bytes };
        }
        self.wake24(PdKind::Bdflush24);
        if state == 0 {
            return Cont::Finish { bytes: b.then_bytes };
        }
        b.pages_written -= 1;
        self.write_some_buffers24(None, Box::new(Cont::Balance(b)))
    }

    /// `write_some_buffers(NODEV)`: up to `NRSYNC` of the oldest dirty buffers, each its
    /// own submission; with `older_than`, only those dirtied by then.
    fn write_some_buffers24(&mut self, older_than: Option<Instant>, then: Box<Cont>) -> Cont {
        let Cont::Writeback(mut w) = self.writeback_cont(NRSYNC, false, older_than, None, then) else {
            unreachable!("writeback_cont builds a writeback pass")
        };
        w.lru24 = true;
        Cont::Writeback(w)
    }

    /// `wakeup_bdflush` (bdflush is thread 0) or kupdated's timer (thread 1): wake it if
    /// it sleeps; a busy daemon carries on with what it is doing.
    pub(super) fn wake24(&mut self, kind: PdKind) {
        let Some(&t) = self.pdflush.get(if kind == PdKind::Bdflush24 { 0 } else { 1 }) else { return };
        if matches!(self.tasks[t.0 as usize].state, State::Blocked(Block::Sleep { .. })) {
            self.tasks[t.0 as usize].cont = Cont::Pdflush(PdState { kind, phase: 0, budget: NDIRTY });
            self.make_runnable(t);
        }
    }

    /// bdflush's loop: `write_some_buffers` until `ndirty` = 500 buffers are written, then
    /// on unless `bdflush_stop`; asleep once a call finds fewer than 32 to write. kupdated's
    /// `sync_old_buffers`: 32 at a time while the oldest is older than `age_buffer`, then
    /// `run_task_queue(&tq_disk)`.
    fn step_bdflush24(&mut self, t: TaskId, mut p: PdState) -> Cont {
        if p.phase == 0 {
            p.phase = 1;
            let older = (p.kind == PdKind::Kupdate24).then(|| self.now - self.cfg.host.dirty_expire);
            return self.write_some_buffers24(older, Box::new(Cont::Pdflush(p)));
        }
        let (written, _) = self.tasks[t.0 as usize].wb_result();
        p.phase = 0;
        let sleep = match p.kind {
            PdKind::Bdflush24 => {
                p.budget -= NRSYNC;
                if written < NRSYNC {
                    true
                } else if p.budget > 0 {
                    false
                } else if self.bdflush_stop24() {
                    true
                } else {
                    p.budget = NDIRTY;
                    false
                }
            }
            _ => {
                if written < NRSYNC {
                    // run_task_queue(&tq_disk) as kupdated goes back to sleep.
                    self.tasks[t.0 as usize].unplug_before_block = true;
                    true
                } else {
                    false
                }
            }
        };
        if !sleep {
            return Cont::Pdflush(p);
        }
        self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
        Cont::Pdflush(PdState { kind: p.kind, phase: 0, budget: NDIRTY })
    }
}

/// `NRSYNC`: buffers `write_some_buffers` takes at once.
const NRSYNC: i64 = 32;
/// `bdf_prm.ndirty`: buffers bdflush writes before it checks `bdflush_stop`.
const NDIRTY: i64 = 500;
