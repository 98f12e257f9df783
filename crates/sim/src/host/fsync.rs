//! `fsync`, after `fs/sync.c` and ext2's `ext2_sync_file`: write the file's dirty pages
//! and wait for all of its writeback, then its metadata blocks (inode, indirect blocks).
//! On ext3 (`ext3_sync_file`) the metadata is the journal's: a dirty inode forces a
//! commit and the fsync waits for it (`host/journal.rs`).

use super::*;

impl Sim {
    // ---------------------------------------------------------------------------------
    // fsync

    /// `sys_fsync` on ext2 (2.5) or ext3 (2.6.20), step by step (see [`FsyncStep`]). Each
    /// wait is for this file's own buffers: an fsync does not wait for other files'
    /// metadata, so fsyncs ending at different times each pay their own trip to the inode
    /// table.
    pub(super) fn step_fsync(&mut self, t: TaskId, file: FileId, step: FsyncStep) -> Cont {
        let next = |step| Cont::Fsync { file, step };
        match step {
            FsyncStep::WriteData => {
                // filemap_fdatawrite: all the file's dirty pages (WB_SYNC_ALL: blocking).
                let after = if self.journaled() { FsyncStep::ForceCommit } else { FsyncStep::WriteIndirect };
                self.writeback_cont(i64::MAX, false, None, Some(file.0), Box::new(next(after)))
            }
            FsyncStep::ForceCommit => {
                // ext3_sync_file: an inode the VFS still has dirty is written by
                // sync_inode → ext3_write_inode(wait) → ext3_force_commit.
                if !self.inode_dirty.remove(&file.0) {
                    return next(FsyncStep::WaitData);
                }
                let tid = self.journal_force_commit();
                next(FsyncStep::WaitCommit(tid))
            }
            FsyncStep::WaitCommit(tid) => {
                self.journal_wait_commit(t, tid, next(FsyncStep::WaitCommit(tid))).unwrap_or(next(FsyncStep::WaitData))
            }
            FsyncStep::WriteIndirect => {
                // sync_mapping_buffers: ll_rw_block on the inode's dirty indirect blocks...
                let blocks = self.fs.indirect_blocks(file);
                self.write_meta_blocks(blocks, Box::new(next(FsyncStep::WaitIndirect)))
            }
            FsyncStep::WaitIndirect => {
                // ... then wait_on_buffer on each.
                let blocks = self.fs.indirect_blocks(file);
                self.wait_meta_written(t, &blocks, next(FsyncStep::WaitIndirect)).unwrap_or(next(FsyncStep::WriteInode))
            }
            FsyncStep::WriteInode => {
                // ext2_sync_file: an inode that is not dirty is not written (a writeback
                // pass may have copied it into its block already; that block stays dirty).
                if !self.inode_dirty.contains(&file.0) {
                    return next(FsyncStep::WaitData);
                }
                // ext2_sync_inode → ext2_update_inode(do_sync): the raw inode goes into
                // its block and sync_dirty_buffer writes it: lock_buffer waits for a read or
                // write of the block in flight, then the (dirty) block is written.
                let ino = self.fs.inode_block(self.fs.file(file).inode);
                if let Some(c) = self.wait_meta_written(t, &[ino], next(FsyncStep::WriteInode)) {
                    return c;
                }
                self.inode_dirty.remove(&file.0);
                self.dirty_meta(ino);
                self.write_meta_blocks(vec![ino], Box::new(next(FsyncStep::WaitInode)))
            }
            FsyncStep::WaitInode => {
                let ino = self.fs.inode_block(self.fs.file(file).inode);
                self.wait_meta_written(t, &[ino], next(FsyncStep::WaitInode)).unwrap_or(next(FsyncStep::WaitData))
            }
            FsyncStep::WaitData => {
                // filemap_fdatawait: every page of the file under writeback.
                if self.cache.writeback_by_file.get(&file.0).copied().unwrap_or(0) > 0 {
                    let task = &mut self.tasks[t.0 as usize];
                    task.unplug_before_block = true;
                    task.block_after = Some(Block::Fsync(file.0));
                    return next(FsyncStep::WaitData);
                }
                Cont::Finish { bytes: 0 }
            }
        }
    }

    /// `ll_rw_block(WRITE)` on metadata blocks: write those that are dirty and not already
    /// being written (a blocking submission, like any writeback bio).
    pub(super) fn write_meta_blocks(&mut self, mut blocks: Vec<u64>, then: Box<Cont>) -> Cont {
        blocks.sort_unstable();
        blocks.dedup();
        self.write_buffers(META, blocks.into(), then)
    }

    /// `ll_rw_block(WRITE)` on the given pages of `file` (metadata blocks, or the data
    /// pages of a committing ext3 transaction), in the order given: the dirty ones not
    /// already being written go out, contiguous ones in one bio; the file's cyclic
    /// writeback position is left alone.
    pub(super) fn write_buffers(&mut self, file: u32, pages: VecDeque<u64>, then: Box<Cont>) -> Cont {
        Cont::Writeback(Writeback {
            nr_to_write: i64::MAX,
            nonblocking: false,
            older_than: None,
            only_file: Some(file),
            inodes: VecDeque::new(),
            pages: WbPages::List(pages),
            file: Some(file),
            written: 0,
            encountered_congestion: false,
            buffers_only: true,
            lru24: false,
            then,
        })
    }

    /// `wait_on_buffer` for each of `blocks`: if one is being read or written, block until
    /// that I/O completes and return `again` (to check the rest).
    pub(super) fn wait_meta_written(&mut self, t: TaskId, blocks: &[u64], again: Cont) -> Option<Cont> {
        let p = blocks.iter().filter_map(|&b| self.cache.get(META, b)).find(|&p| {
            let pg = self.cache.page(p);
            pg.writeback || pg.locked
        })?;
        let task = &mut self.tasks[t.0 as usize];
        task.unplug_before_block = true;
        task.block_after = Some(Block::Page(p));
        Some(again)
    }
}
