//! The host's side of read-ahead: the window logic is `crate::readahead` (the 2.4, 2.5
//! and 2.6 algorithms, sans-IO); here a task's read asks it what to read and the pages it names
//! are allocated and sent to the block layer in contiguous runs (`mm/readahead.c`'s
//! `__do_page_cache_readahead` and `read_pages`).

use super::*;

impl Sim {
    pub(super) fn new_ra(&self) -> FileRa {
        let max = self.cfg.host.readahead_max_pages;
        match self.cfg.host.readahead {
            Readahead::Linux24 => FileRa::V24(Ra24::new(max)),
            Readahead::Linux25 => FileRa::V25(Ra25::new(max)),
            Readahead::Linux26 => FileRa::V26(RaState::new(max)),
        }
    }

    /// `do_page_cache_readahead`: allocate the missing pages of the window and build
    /// bios of on-disk contiguous runs. Returns the number of pages started.
    pub(super) fn do_readahead(&mut self, t: TaskId, file: FileId, a: RaAction) -> RaOutcome {
        if !a.blocking && self.read_congested {
            return RaOutcome::Congested;
        }
        let size = self.fs.file(file).size;
        if size == 0 {
            return RaOutcome::Read(0);
        }
        let end_index = (size - 1) / BLOCK;
        let max_pages = (self.max_bio_sectors() / SECTORS_PER_BLOCK).max(1);
        let mut started = 0;
        let mut run: Vec<PageId> = Vec::new();
        let mut run_start_block = 0;
        let mut last_block = None;
        for index in a.start..a.start + a.nr {
            if index > end_index {
                break;
            }
            if self.cache.contains(file.0, index) {
                self.flush_ra_run(t, &mut run, run_start_block);
                last_block = None;
                continue;
            }
            let Some(b) = self.fs.map(file, index) else {
                continue;
            };
            // mpage_readpages maps each page with get_block, which reads a cold indirect
            // block on the way. Its read goes out ahead of the data it maps.
            if let Some(ib) = self.fs.indirect_for(file, index)
                && !self.cache.contains(META, ib)
            {
                self.flush_ra_run(t, &mut run, run_start_block);
                last_block = None;
                match self.cache_add(t, META, ib, false) {
                    Some(p) => {
                        self.charge(t, self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit);
                        self.read_block(t, ib, p, true);
                    }
                    None => self.forget_reclaim(t),
                }
            }
            let Some(p) = self.cache_add(t, file.0, index, false) else {
                self.forget_reclaim(t);
                break;
            };
            started += 1;
            self.charge(t, self.cfg.cpu.page_alloc);
            let contiguous = last_block == Some(b.wrapping_sub(1)) && (run.len() as u64) < max_pages;
            if !contiguous {
                self.flush_ra_run(t, &mut run, run_start_block);
                run_start_block = b;
            }
            run.push(p);
            last_block = Some(b);
        }
        self.flush_ra_run(t, &mut run, run_start_block);
        RaOutcome::Read(started)
    }

    pub(super) fn flush_ra_run(&mut self, t: TaskId, run: &mut Vec<PageId>, start_block: u64) {
        if run.is_empty() {
            return;
        }
        let pages = std::mem::take(run);
        self.charge(t, self.cfg.cpu.bio_submit);
        let sector = self.fs.sector(start_block);
        let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
        self.queue_bio(t, Op::Read, sector, len, true, BioKind::CacheRead(pages), false);
    }
}

/// Read-ahead I/O performed on behalf of a task.
pub(super) struct HostRa<'a> {
    pub(super) sim: &'a mut Sim,
    pub(super) t: TaskId,
    pub(super) file: FileId,
}

impl RaIo for HostRa<'_> {
    fn readahead(&mut self, a: RaAction) -> RaOutcome {
        self.sim.do_readahead(self.t, self.file, a)
    }
}
