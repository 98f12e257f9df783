//! Buffered reads and writes through the page cache, after `mm/filemap.c`
//! (`do_generic_mapping_read`, `generic_file_buffered_write`): a read waits on each page
//! it needs (reading it, or waiting for read-ahead to bring it), a write dirties pages and
//! then throttles itself (`balance_dirty_pages_ratelimited`, in `page_writeback.rs`).

use super::*;

impl Sim {
    /// A synchronous read of one block into cache page `p` (a metadata block, or a data
    /// page read outside read-ahead).
    pub(super) fn read_block(&mut self, t: TaskId, block: u64, p: PageId, meta: bool) {
        let sector = self.fs.sector(block);
        self.queue_bio(t, Op::Read, sector, SECTORS_PER_BLOCK as u32, true, BioKind::CacheRead(vec![p]), meta);
    }

    // ---------------------------------------------------------------------------------
    // Reads

    #[allow(clippy::too_many_arguments)]
    pub(super) fn step_read(
        &mut self,
        t: TaskId,
        file: FileId,
        start: u64,
        pos: u64,
        end: u64,
        mut next_ra: u64,
        copied: u64,
        mmap: bool,
    ) -> Cont {
        if self.cfg.host.readahead == Readahead::Linux24 && !mmap {
            return self.step_read24(t, file, start, pos, end, next_ra, copied);
        }
        let size = self.fs.file(file).size;
        let end = end.min(size);
        if pos >= end {
            return self.finish_read(t, start, end, copied, mmap);
        }
        let index = pos / BLOCK;
        let last = (end - 1) / BLOCK;
        if index == next_ra {
            if mmap {
                // filemap_nopage read-around on a miss.
                if !self.cache.contains(file.0, index) {
                    let ra = self.cfg.host.mmap_readaround_pages;
                    let start = index & !(ra - 1);
                    let mut io = HostRa { sim: self, t, file };
                    io.readahead(RaAction { start, nr: ra, blocking: true });
                }
                next_ra = index + 1;
            } else {
                let mut ra = self.tasks[t.0 as usize].ra.remove(&file.0).unwrap_or_else(|| self.new_ra());
                let mut io = HostRa { sim: self, t, file };
                next_ra = match &mut ra {
                    FileRa::V26(r) => r.page_cache_readahead(&mut io, index, last - index + 1),
                    FileRa::V25(r) => {
                        r.page_cache_readahead(&mut io, index);
                        index + 1
                    }
                    FileRa::V24(_) => index + 1,
                };
                let is25 = matches!(ra, FileRa::V25(_));
                let task = &mut self.tasks[t.0 as usize];
                task.ra.insert(file.0, ra);
                if is25 && !task.bio_out.is_empty() {
                    task.unplug_after_bios = true;
                }
            }
            if !self.tasks[t.0 as usize].bio_out.is_empty() || self.tasks[t.0 as usize].block_after.is_some() {
                return Cont::Read { file, start, pos, end, next_ra, copied, mmap };
            }
        }
        match self.cache.lookup(file.0, index) {
            Lookup::Uptodate(_) => {
                self.charge(t, self.cfg.cpu.page_lookup);
                let npos = ((index + 1) * BLOCK).min(end);
                Cont::Read { file, start, pos: npos, end, next_ra, copied: copied + 1, mmap }
            }
            Lookup::Locked(p) => {
                let task = &mut self.tasks[t.0 as usize];
                task.unplug_before_block = true;
                task.block_after = Some(Block::Page(p));
                Cont::Read { file, start, pos, end, next_ra, copied, mmap }
            }
            Lookup::Absent => {
                match self.tasks[t.0 as usize].ra.get_mut(&file.0) {
                    Some(FileRa::V25(r)) => r.miss(),
                    Some(FileRa::V24(_)) => {}
                    Some(FileRa::V26(r)) => r.miss(),
                    None => {}
                }
                // Indirect block first, if needed and not cached.
                if let Some(ib) = self.fs.indirect_for(file, index)
                    && !matches!(self.cache.lookup(META, ib), Lookup::Uptodate(_))
                {
                    let then = Box::new(Cont::Read { file, start, pos, end, next_ra, copied, mmap });
                    return Cont::Meta { blocks: vec![ib], i: 0, then };
                }
                match self.cache_add(t, file.0, index, false) {
                    None => self.wait_memory(t, Cont::Read { file, start, pos, end, next_ra, copied, mmap }),
                    Some(p) => match self.fs.map(file, index) {
                        None => {
                            // A hole: zero-filled without I/O.
                            self.cache.read_done(p);
                            Cont::Read { file, start, pos, end, next_ra, copied, mmap }
                        }
                        Some(b) => {
                            let c = self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit;
                            self.charge(t, c);
                            self.read_block(t, b, p, false);
                            Cont::Read { file, start, pos, end, next_ra, copied, mmap }
                        }
                    },
                }
            }
        }
    }

    /// The end of a read: the copy (or, for mmap, the lookups) of the `copied` pages, and
    /// the bytes up to end of file (a short read at EOF, 0 past it).
    fn finish_read(&mut self, t: TaskId, start: u64, end: u64, copied: u64, mmap: bool) -> Cont {
        let cpu = &self.cfg.cpu;
        let c = if mmap { cpu.page_lookup * copied as u32 } else { cpu.copy_page * copied as u32 };
        self.charge(t, c);
        Cont::Finish { bytes: end.saturating_sub(start) }
    }

    /// A buffered read on the 2.4 host (`do_generic_file_read`): per page, an uptodate page
    /// gets `generic_file_readahead` and is copied; a page being read gets it and is
    /// waited for; a missing page is read (`readpage`) first, then read ahead from, then
    /// waited for. `next_ra` is the page whose read-ahead call is still to come.
    #[allow(clippy::too_many_arguments)]
    fn step_read24(
        &mut self,
        t: TaskId,
        file: FileId,
        start: u64,
        pos: u64,
        end: u64,
        mut next_ra: u64,
        copied: u64,
    ) -> Cont {
        let size = self.fs.file(file).size;
        if pos == start && next_ra == start / BLOCK {
            // The prologue, once per call (a retry after a metadata read or a wait for
            // memory repeats it unchanged: nothing moved the context in between).
            let ra = self.ra24(t, file);
            ra.begin_read(start / BLOCK, start % BLOCK, end - start);
        }
        let end = end.min(size);
        if pos >= end {
            return self.finish_read(t, start, end, copied, false);
        }
        let index = pos / BLOCK;
        let end_index = size / BLOCK;
        let here =
            |pos: u64, next_ra: u64, copied: u64| Cont::Read { file, start, pos, end, next_ra, copied, mmap: false };
        match self.cache.lookup(file.0, index) {
            Lookup::Uptodate(_) => {
                if next_ra == index {
                    self.readahead24(t, file, index, false, end_index);
                    next_ra = index + 1;
                    if !self.tasks[t.0 as usize].bio_out.is_empty() {
                        return here(pos, next_ra, copied);
                    }
                }
                self.charge(t, self.cfg.cpu.page_lookup);
                here(((index + 1) * BLOCK).min(end), next_ra, copied + 1)
            }
            Lookup::Locked(p) => {
                if next_ra == index {
                    self.readahead24(t, file, index, true, end_index);
                    next_ra = index + 1;
                }
                let task = &mut self.tasks[t.0 as usize];
                task.unplug_before_block = true;
                task.block_after = Some(Block::Page(p));
                here(pos, next_ra, copied)
            }
            Lookup::Absent => {
                if let Some(ib) = self.fs.indirect_for(file, index)
                    && !matches!(self.cache.lookup(META, ib), Lookup::Uptodate(_))
                {
                    return Cont::Meta { blocks: vec![ib], i: 0, then: Box::new(here(pos, next_ra, copied)) };
                }
                match self.cache_add(t, file.0, index, false) {
                    None => self.wait_memory(t, here(pos, next_ra, copied)),
                    Some(p) => {
                        match self.fs.map(file, index) {
                            None => self.cache.read_done(p),
                            Some(b) => {
                                let c = self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit;
                                self.charge(t, c);
                                self.read_block(t, b, p, false);
                            }
                        }
                        if next_ra == index {
                            self.readahead24(t, file, index, true, end_index);
                            next_ra = index + 1;
                        }
                        here(pos, next_ra, copied)
                    }
                }
            }
        }
    }

    /// The task's 2.4 read-ahead context for `file` (its `struct file`'s `f_ra*`).
    fn ra24(&mut self, t: TaskId, file: FileId) -> &mut Ra24 {
        let fresh = self.new_ra();
        let ra = self.tasks[t.0 as usize].ra.entry(file.0).or_insert(fresh);
        match ra {
            FileRa::V24(r) => r,
            _ => unreachable!("a 2.4 host keeps 2.4 read-ahead contexts"),
        }
    }

    fn readahead24(&mut self, t: TaskId, file: FileId, index: u64, locked: bool, end_index: u64) {
        let mut ra = match self.tasks[t.0 as usize].ra.remove(&file.0) {
            Some(FileRa::V24(r)) => r,
            _ => Ra24::new(self.cfg.host.readahead_max_pages),
        };
        let mut io = HostRa { sim: self, t, file };
        ra.readahead(&mut io, index, locked, end_index);
        self.tasks[t.0 as usize].ra.insert(file.0, FileRa::V24(ra));
    }

    // ---------------------------------------------------------------------------------
    // Writes and dirty throttling

    pub(super) fn step_write(&mut self, t: TaskId, file: FileId, pos: u64, end: u64, written: u64, mmap: bool) -> Cont {
        if pos >= end {
            let n = written.div_ceil(BLOCK).max(1);
            if let WbRule::Bdflush24 { .. } = self.cfg.host.writeback {
                // balance_dirty after each buffer dirtied, here after the call's pages.
                return Cont::Balance(Balance { pages_written: n, phase: 0, then_bytes: written });
            }
            self.ratelimit_count += n;
            let limit = if self.dirty_exceeded { 8 } else { self.ratelimit_pages() };
            if self.ratelimit_count >= limit {
                self.ratelimit_count = 0;
                return Cont::Balance(Balance { pages_written: 0, phase: 0, then_bytes: written });
            }
            return Cont::Finish { bytes: written };
        }
        let index = pos / BLOCK;
        let page_end = ((index + 1) * BLOCK).min(end);
        let partial = !pos.is_multiple_of(BLOCK) || (page_end - pos) < BLOCK;
        let size = self.fs.file(file).size;
        let cpu = self.cfg.cpu.clone();
        let found = if self.cfg.host.write_marks_accessed {
            self.cache.lookup(file.0, index)
        } else {
            self.cache.lookup_quiet(file.0, index)
        };
        let p = match found {
            Lookup::Uptodate(p) => p,
            Lookup::Locked(p) => {
                let task = &mut self.tasks[t.0 as usize];
                task.unplug_before_block = true;
                task.block_after = Some(Block::Page(p));
                return Cont::Write { file, pos, end, written, mmap };
            }
            Lookup::Absent => {
                // ext2_get_block walks the indirect chain to map (or allocate) the block: a
                // cold indirect block is a synchronous read before the write can go on.
                if let Some(ib) = self.fs.indirect_for(file, index)
                    && !matches!(self.cache.lookup(META, ib), Lookup::Uptodate(_))
                {
                    let then = Box::new(Cont::Write { file, pos, end, written, mmap });
                    return Cont::Meta { blocks: vec![ib], i: 0, then };
                }
                let allocated = self.fs.map(file, index);
                let need_read = allocated.is_some() && (mmap || (partial && index * BLOCK < size));
                match self.cache_add(t, file.0, index, !need_read) {
                    None => {
                        return self.wait_memory(t, Cont::Write { file, pos, end, written, mmap });
                    }
                    Some(p) => {
                        self.charge(t, cpu.page_alloc);
                        if need_read {
                            // Read-modify-write of a partial page (or an mmap fault).
                            self.charge(t, cpu.bio_submit);
                            self.read_block(t, allocated.unwrap(), p, false);
                            return Cont::Write { file, pos, end, written, mmap };
                        }
                        p
                    }
                }
            }
        };
        // Allocate the block (ext2_get_block with create), dirtying metadata and the inode
        // (its block count: ext2_splice_branch's mark_inode_dirty; on ext3
        // ext3_mark_inode_dirty journals it without dirtying the VFS inode).
        if self.fs.map(file, index).is_none() {
            let alloc = self.fs.allocate(file, index, self.pid(t));
            self.charge(t, cpu.block_alloc);
            for b in alloc.meta {
                self.dirty_meta(b);
            }
            self.allocated_blocks(file);
        }
        // (`size` is from before the allocation, which moves the size to the block's end.)
        let new_size = self.fs.file(file).size.max(page_end);
        self.fs.set_size(file, new_size);
        let copy = if mmap { cpu.page_lookup } else { cpu.copy_page };
        self.charge(t, copy + cpu.page_lookup);
        if !self.cfg.host.write_marks_accessed {
            self.cache.set_referenced(p);
        }
        if self.cache.set_dirty(p, self.now) {
            self.charge(t, cpu.dirty_page);
        }
        // ext3 data=ordered: the page joins the running transaction.
        self.journal_dirty_data(file, index);
        // The inode: its mtime (by the host's rule) and, when the write extends the file,
        // its size (generic_commit_write).
        self.update_mtime(file, new_size > size);
        Cont::Write { file, pos: page_end, end, written: written + (page_end - pos), mmap }
    }

    /// `file_update_time` (2.6.20) or its 2.4/2.5 counterpart for a write to `file`: the
    /// inode is dirtied (on ext3, into the journal) when the mtime moved by the host's rule
    /// or `extended` (the size grew).
    pub(super) fn update_mtime(&mut self, file: FileId, extended: bool) {
        if self.fs.file(file).device {
            // A block device's inode is bdev's, in memory.
            return;
        }
        let moved = match self.cfg.host.mtime_granularity {
            None => true,
            Some(g) => journal::time_moved(&mut self.mtime, file, self.now, g),
        };
        if moved || extended {
            self.inode_dirty.insert(file.0);
            self.journal_dirty_inode(file);
        }
    }

    /// New blocks for `file`: its inode's block count changed. ext2 marks the VFS inode
    /// dirty (`ext2_splice_branch`); ext3 journals the inode without doing so
    /// (`ext3_splice_branch` → `ext3_mark_inode_dirty`).
    pub(super) fn allocated_blocks(&mut self, file: FileId) {
        if self.journaled() {
            self.journal_dirty_inode(file);
        } else {
            self.inode_dirty.insert(file.0);
        }
    }

    /// Mark a metadata block dirty (allocating its cache page without reading: ext2 reads
    /// bitmaps once and keeps them; new indirect blocks are fresh). On ext3 the block
    /// joins the running transaction instead (`host/journal.rs`).
    pub(super) fn dirty_meta(&mut self, block: u64) {
        if self.journaled() && self.fs.is_superblock(block) {
            // ext3_new_blocks journals the bitmap and group descriptor only; the
            // superblock's counts are percpu counters, written at unmount or sync.
            return;
        }
        let p = match self.cache.get(META, block) {
            Some(p) => p,
            None => match self.cache_add_nowait(META, block) {
                Some(p) => p,
                None => return,
            },
        };
        if !self.cache.page(p).locked {
            self.cache.set_dirty(p, self.now);
        }
        if self.journaled() {
            // ext3 (BH_JBDDirty): into the running transaction, home only after it
            // commits; the dirty page cannot be dropped (the journal head holds the
            // buffer) and writeback passes over it while a transaction holds it.
            self.journal_dirty_metadata(block);
        }
    }
}
