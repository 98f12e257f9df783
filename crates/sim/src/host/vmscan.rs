//! Page reclaim, after `mm/vmscan.c`: adding a page to a full cache reclaims first
//! (`try_to_free_pages` in the allocating task, kswapd in the background), clean pages
//! are dropped and dirty ones written out (`pageout`), and a task with nothing to reclaim
//! waits for memory.

use super::*;

impl Sim {
    /// Allocate a page-cache page for task `t` (`__alloc_pages` for `page_cache_alloc`).
    /// `None` means wait and retry ([`wait_memory`](Self::wait_memory)).
    ///
    /// With [`Reclaim::Kswapd25`] this follows 2.5.6x: a free page is taken while more
    /// than `pages_low` are free; below that kswapd is woken and the page is still taken
    /// down to `pages_min`; below `pages_min` the task reclaims itself
    /// (`try_to_free_pages`): one `shrink_zone` pass per call at falling priority, asking
    /// for 32 pages; a pass that frees fewer ends in `blk_congestion_wait` (up to 100 ms)
    /// before the next. Dirty pages that reclaim meets are written from here — by a task
    /// in `write()` (its `current->backing_dev_info` is the device) whether or not the
    /// queue is congested — so the task submits them and may wait for request slots.
    pub(super) fn cache_add(&mut self, t: TaskId, file: u32, index: u64, uptodate: bool) -> Option<PageId> {
        let Reclaim::Kswapd25 { pages_min, pages_low, .. } = self.cfg.host.reclaim else {
            return self.cache.add(file, index, uptodate);
        };
        self.tasks[t.0 as usize].reclaim_wait = None;
        let free = self.cache.free();
        if free <= pages_low {
            self.wake_kswapd();
        }
        if free > pages_min {
            self.tasks[t.0 as usize].direct_reclaim = None;
            return self.cache.try_add(file, index, uptodate);
        }
        // Metadata comes through __getblk, a GFP_NOFS allocation: reclaim may not call
        // into the filesystem (no writeback) and gives up after one pass.
        let nofs = file == META;
        let (priority, so_far) = self.tasks[t.0 as usize].direct_reclaim.take().unwrap_or((DEF_PRIORITY, 0));
        let may_write = !nofs && (self.tasks[t.0 as usize].op_kind == "write" || !self.write_congested);
        let max_scan = (self.cache.nr_inactive() >> priority).max(2 * SWAP_CLUSTER_MAX);
        let mut out = Vec::new();
        let freed = self.cache.shrink_zone(SWAP_CLUSTER_MAX, max_scan, may_write, &mut out);
        self.stats.direct_freed += freed;
        self.stats.direct_paged_out += out.len() as u64;
        self.submit_pageout(t, out);
        let total = so_far + freed;
        if total >= SWAP_CLUSTER_MAX || priority == 0 || nofs {
            // try_to_free_pages is done (a GFP_NOFS one after a single pass);
            // __alloc_pages tries the zone again against pages_min and, failing, naps
            // (blk_congestion_wait, HZ/50 = 20 ms) and reclaims anew.
            if self.cache.free() > pages_min {
                return self.cache.try_add(file, index, uptodate);
            }
            self.tasks[t.0 as usize].reclaim_wait = Some(Duration::from_millis(20));
            return None;
        }
        // A pass that freed too little wakes pdflush for what it scanned
        // (wakeup_bdflush) and naps before the next priority.
        self.wakeup_bdflush(max_scan);
        let task = &mut self.tasks[t.0 as usize];
        task.direct_reclaim = Some((priority - 1, total));
        task.reclaim_wait = Some(HZ_10);
        None
    }

    /// Read-ahead gives up on a page it could not allocate; the read that follows
    /// allocates (and, if it must, reclaims and naps) for itself, from the top.
    pub(super) fn forget_reclaim(&mut self, t: TaskId) {
        let task = &mut self.tasks[t.0 as usize];
        task.reclaim_wait = None;
        task.direct_reclaim = None;
    }

    /// A page for metadata being dirtied inside an operation that cannot wait here (a new
    /// indirect block, a bitmap, an inode block): a free page if there is one, else one
    /// `GFP_NOFS` reclaim pass for it. `None` (nothing clean anywhere) leaves the block
    /// undirtied.
    pub(super) fn cache_add_nowait(&mut self, file: u32, index: u64) -> Option<PageId> {
        let Reclaim::Kswapd25 { pages_low, .. } = self.cfg.host.reclaim else {
            return self.cache.add(file, index, true);
        };
        if self.cache.free() <= pages_low {
            self.wake_kswapd();
        }
        if self.cache.free() == 0 {
            let max_scan = self.cache.nr_inactive().max(2 * SWAP_CLUSTER_MAX);
            self.stats.direct_freed += self.cache.shrink_zone(SWAP_CLUSTER_MAX, max_scan, false, &mut Vec::new());
        }
        self.cache.try_add(file, index, true)
    }

    /// Submit the writes of pages reclaim paged out: one bio per run of pages contiguous
    /// in the file and on disk (the queue would merge `writepage`'s single-page bios so).
    pub(super) fn submit_pageout(&mut self, t: TaskId, paged_out: Vec<PageId>) {
        let max_pages = self.max_bio_sectors() / SECTORS_PER_BLOCK;
        let mut runs: Vec<(u32, u64, u64, Vec<PageId>)> = Vec::new();
        for q in paged_out {
            let (f, idx) = (self.cache.page(q).file, self.cache.page(q).index);
            let block = if f == META { idx } else { self.fs.map(FileId(f), idx).expect("a dirty page has a block") };
            match runs.last_mut() {
                Some((rf, ri, rb, pages))
                    if *rf == f
                        && *ri + pages.len() as u64 == idx
                        && *rb + pages.len() as u64 == block
                        && (pages.len() as u64) < max_pages =>
                {
                    pages.push(q)
                }
                _ => runs.push((f, idx, block, vec![q])),
            }
        }
        for (f, _, block, pages) in runs {
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(block);
            let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
            self.queue_bio(t, Op::Write, sector, len, false, BioKind::CacheWrite(pages), f == META);
        }
    }

    pub(super) fn wake_kswapd(&mut self) {
        if let Some(k) = self.kswapd
            && self.tasks[k.0 as usize].state == State::Blocked(Block::Sleep { token: 0 })
        {
            self.make_runnable(k);
        }
    }

    /// kswapd (2.5.6x `balance_pgdat`), one priority pass per step, priorities 12 down to
    /// 1: a pass that finds fewer than `pages_high` pages free calls `shrink_zone` for the
    /// difference, scanning at least twice that, writing back the dirty pages it meets
    /// whatever the queue's state (`may_write_to_queue` lets kswapd block on a full
    /// queue), and then naps in `blk_congestion_wait` (up to 100 ms) before the next
    /// pass; a pass that finds the zone balanced, or the end of the priorities, sends
    /// kswapd back to sleep until an allocation wakes it.
    pub(super) fn step_kswapd(&mut self, t: TaskId, priority: u32) -> Cont {
        let Reclaim::Kswapd25 { pages_high, .. } = self.cfg.host.reclaim else {
            unreachable!("kswapd runs only with Reclaim::Kswapd25")
        };
        let free = self.cache.free();
        if free >= pages_high || priority == 0 {
            self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
            return Cont::Kswapd { priority: DEF_PRIORITY };
        }
        let to_reclaim = pages_high - free;
        let max_scan = (self.cache.nr_inactive() >> priority).max(2 * to_reclaim);
        let mut out = Vec::new();
        self.stats.kswapd_freed += self.cache.shrink_zone(to_reclaim, max_scan, true, &mut out);
        self.stats.kswapd_paged_out += out.len() as u64;
        self.submit_pageout(t, out);
        let token = self.token();
        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
        Cont::Kswapd { priority: priority - 1 }
    }
}
