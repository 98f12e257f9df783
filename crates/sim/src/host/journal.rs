//! ext3's journal, after Linux 2.6.20's `fs/jbd/` (`transaction.c`, `commit.c`,
//! `checkpoint.c`, `journal.c`) and the ext3 calls into it (`fs/ext3/inode.c`,
//! `fs/ext3/fsync.c`).
//!
//! - **Transactions.** Every change to metadata — an inode (a write's mtime and size, a
//!   read's atime), a block bitmap or group descriptor, an indirect block — joins the
//!   running transaction (`journal_dirty_metadata`): its block is not written home while
//!   a transaction holds it (`BH_JBDDirty`), and it stays in memory (the journal head
//!   holds the buffer), so here it is a dirty page that writeback passes over. In `data=ordered` mode every page a buffered write
//!   dirties also joins it (`ext3_ordered_commit_write` → `journal_dirty_data`). The first
//!   change after a commit begins a transaction (`get_transaction`), which expires
//!   `commit=` seconds later (`t_expires`, 5 s by default).
//! - **kjournald**, a kernel thread with its own I/O context (so CFQ and AS see it as
//!   another process), commits a transaction when it expires, when it holds a quarter of
//!   the journal (`j_max_transaction_buffers`), or when `fsync` asks
//!   (`journal_commit_transaction`): in ordered mode it first writes the transaction's
//!   data pages that are still dirty and waits for those under writeback, whoever started
//!   it (`journal_submit_data_buffers`, `t_locked_list`); then it writes a descriptor block
//!   and a copy of each metadata block to the log at its head (`journal_write_metadata_buffer`,
//!   one descriptor per 506 tags), waits for them, writes the commit block
//!   (`journal_write_commit_record`, no barrier: 2.6.20 ext3 mounts with `barrier=0`) and
//!   waits for it. The journal writes are plain `WRITE`s, not sync ones.
//! - **Checkpointing.** After the commit the metadata blocks are dirty in the block
//!   device's cache (`__journal_refile_buffer` turns `BH_JBDDirty` into `BH_Dirty`), so
//!   ordinary writeback writes them home once they are `dirty_expire` old; a block is on
//!   the checkpoint list of the newest transaction that committed it. The log's space
//!   is freed only by `log_do_checkpoint`, when a commit would leave less than a quarter
//!   of the journal (`__log_space_left` < `jbd_space_needed`): the tail moves past the
//!   transactions whose blocks are all home (`cleanup_journal_tail`, which writes the
//!   journal superblock), or else the oldest transaction's dirty blocks are written and
//!   waited for.
//! - **fsync** (`ext3_sync_file`): after the data is written (`filemap_fdatawrite`), an
//!   inode that is dirty (`I_DIRTY_SYNC`/`I_DIRTY_DATASYNC`) forces a commit of the running
//!   transaction and waits for it (`ext3_write_inode` → `ext3_force_commit` →
//!   `log_wait_commit`); then the data is waited for. An inode a writeback pass already
//!   cleaned (`ext3_write_inode` without wait does nothing) forces no commit.
//!
//! Simplified, and why: handles have no credits and never wait — a change joins the
//! running transaction at once, also while a commit locks it down (2.6.20 makes a new
//! handle wait for `T_LOCKED` to pass, which takes no disk time here) and when the
//! transaction is full (the commit is asked for, not waited on). A writer that dirties a
//! page the committing transaction is writing does not write it itself
//! (`journal_dirty_data`'s `sync_dirty_buffer` case). `log_do_checkpoint` runs in kjournald
//! before a commit, where 2.6.20 runs it in the task opening a handle. No revoke records.

use super::*;
use crate::profile::{DataMode, Ext3};
use std::collections::BTreeSet;

/// Tags per descriptor block: after the 12-byte header, 8 bytes a tag and the first one's
/// 16-byte UUID, `journal_commit_transaction` closes a descriptor once fewer than 24 bytes
/// are left: 506 tags.
const TAGS_PER_DESCRIPTOR: u64 = 506;
/// `MIN_LOG_RESERVED_BLOCKS`: log blocks `__log_space_left` never counts as free.
const MIN_LOG_RESERVED_BLOCKS: u64 = 32;

/// One transaction's contents.
#[derive(Debug, Default)]
pub(super) struct Transaction {
    pub tid: u64,
    expires: Instant,
    /// Metadata blocks (`t_buffers`).
    meta: BTreeSet<u64>,
    /// Ordered data pages by file (`t_sync_datalist`).
    data: BTreeMap<u32, BTreeSet<u64>>,
}

/// A committed transaction whose metadata blocks may not all be home yet.
#[derive(Debug)]
struct Checkpoint {
    blocks: Vec<u64>,
    /// Log blocks it holds (descriptors, copies, commit block).
    log_blocks: u64,
}

/// What the journal did in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct JournalStats {
    pub commits: u64,
    /// Commits fsync asked for.
    pub forced_commits: u64,
    /// Blocks written to the log: descriptors, metadata copies, commit blocks, journal
    /// superblocks.
    pub log_blocks: u64,
    /// Ordered-data pages kjournald wrote itself.
    pub data_pages: u64,
    /// `log_do_checkpoint` runs, and the metadata blocks they wrote home.
    pub checkpoints: u64,
    pub checkpoint_blocks: u64,
    /// Each commit: when kjournald took the transaction (ns of simulated time) and the
    /// sector of its commit block, for reading a commit's order from a trace.
    pub log: Vec<CommitRecord>,
}

/// One commit (`JournalStats::log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CommitRecord {
    pub tid: u64,
    pub started_ns: u64,
    pub commit_sector: u64,
}

/// The journal of the mounted ext3 (`journal_t`).
pub(super) struct Journal {
    pub cfg: Ext3,
    /// kjournald.
    pub task: TaskId,
    /// The log's blocks on disk, in log order; log block 0 is the journal superblock.
    runs: Vec<(u64, u64)>,
    len: u64,
    /// Next log block to write (`j_head`), 1..len.
    head: u64,
    /// Log blocks held by transactions not yet checkpointed (`j_head` − `j_tail`).
    used: u64,
    pub running: Option<Transaction>,
    committing: Option<Transaction>,
    checkpoints: VecDeque<Checkpoint>,
    next_tid: u64,
    /// The last transaction committed (`j_commit_sequence`) and the last one asked for
    /// (`j_commit_request`).
    commit_sequence: u64,
    commit_request: u64,
    /// Tasks in `log_wait_commit`.
    waiters: Vec<TaskId>,
    /// The running transaction's `t_expires_timer`.
    timer_token: u64,
    /// When the committing transaction was taken.
    commit_started: Instant,
    pub stats: JournalStats,
}

/// Where kjournald is (`kjournald` and `journal_commit_transaction`).
#[derive(Debug)]
pub(super) enum Kj {
    /// Waiting for a transaction to expire or a commit to be asked for.
    Idle,
    /// Before writing the log: free log space if a commit would leave too little.
    Space,
    /// Writing the checkpoint's blocks home, then waiting for them.
    CheckpointWait(Vec<u64>),
    /// Ordered data: the files whose dirty pages are still to be written.
    Data(VecDeque<(u32, VecDeque<u64>)>),
    /// One file's pages were written: count them, then the next file.
    DataDone(VecDeque<(u32, VecDeque<u64>)>),
    /// Waiting for each ordered page under writeback.
    WaitData(Vec<(u32, u64)>),
    /// Write the descriptor and metadata copies, then wait.
    Log,
    /// Write the commit block, then wait.
    Commit,
    /// The commit block is on disk.
    Done,
}

impl Journal {
    /// The log's disk block for log block `i`.
    fn disk_block(&self, mut i: u64) -> u64 {
        for &(s, l) in &self.runs {
            if i < l {
                return s + i;
            }
            i -= l;
        }
        unreachable!("log block past the journal")
    }

    /// `j_max_transaction_buffers`: a quarter of the journal.
    fn max_transaction(&self) -> u64 {
        self.len / 4
    }

    /// Log blocks a transaction of `n` metadata blocks takes: descriptors, copies, commit.
    fn log_blocks_for(n: u64) -> u64 {
        n.div_ceil(TAGS_PER_DESCRIPTOR) + n + 1
    }

    /// `__log_space_left`: free log blocks, pessimistically — less 32 reserved, less an
    /// eighth of the rest for descriptor blocks.
    fn space_left(&self) -> u64 {
        let left = (self.len - 1).saturating_sub(self.used).saturating_sub(MIN_LOG_RESERVED_BLOCKS);
        left - (left >> 3)
    }
}

impl Sim {
    /// Mount ext3: make the journal (`mke2fs -j`: its size for the file system's,
    /// where it puts it) and start kjournald.
    pub(super) fn mount_ext3(&mut self, cfg: Ext3) {
        let len = cfg.journal_mb.map_or_else(|| self.fs.default_journal_blocks(), |mb| mb << 8);
        let runs = self.fs.reserve_journal(len, cfg.journal_at == crate::profile::JournalAt::Middle);
        let task = self.add_task("kjournald".into(), None, IoPrio::NONE, false);
        self.tasks[task.0 as usize].state = State::Blocked(Block::Sleep { token: 0 });
        self.tasks[task.0 as usize].cont = Cont::Kjournald(Kj::Idle);
        self.journal = Some(Journal {
            cfg,
            task,
            runs,
            len,
            head: 1,
            used: 0,
            running: None,
            committing: None,
            checkpoints: VecDeque::new(),
            next_tid: 1,
            commit_sequence: 0,
            commit_request: 0,
            waiters: Vec::new(),
            timer_token: 0,
            commit_started: Instant::ZERO,
            stats: JournalStats::default(),
        });
    }

    /// What the journal did, on ext3.
    pub fn journal_stats(&self) -> Option<&JournalStats> {
        self.journal.as_ref().map(|j| &j.stats)
    }

    /// kjournald's task, on ext3.
    pub fn kjournald(&self) -> Option<TaskId> {
        self.journal.as_ref().map(|j| j.task)
    }

    /// `journal_start`: the running transaction, begun (with its expiry timer) if there is
    /// none. `None` on ext2.
    fn journal_start(&mut self) -> Option<&mut Transaction> {
        let now = self.now;
        let token = self.next_token + 1;
        let j = self.journal.as_mut()?;
        if j.running.is_none() {
            let tid = j.next_tid;
            j.next_tid += 1;
            let expires = now + j.cfg.commit;
            j.running = Some(Transaction { tid, expires, ..Default::default() });
            j.timer_token = token;
            let kj = j.task;
            self.next_token = token;
            self.engine.schedule(expires, Ev::Timer { task: kj, token });
            // kjournald sleeps until this timer (or a commit request) wakes it.
            if let State::Blocked(Block::Sleep { token: t }) = &mut self.tasks[kj.0 as usize].state {
                *t = token;
            }
        }
        self.journal.as_mut().and_then(|j| j.running.as_mut())
    }

    /// Whether a running or committing transaction holds metadata block `block`, so it may
    /// not be written home yet.
    pub(super) fn journal_holds(&self, block: u64) -> bool {
        self.journal.as_ref().is_some_and(|j| {
            j.running.as_ref().is_some_and(|t| t.meta.contains(&block))
                || j.committing.as_ref().is_some_and(|t| t.meta.contains(&block))
        })
    }

    /// Whether metadata goes through the journal (ext3).
    pub(super) fn journaled(&self) -> bool {
        self.journal.is_some()
    }

    /// `journal_dirty_metadata` for metadata block `block` (its page already dirty, see
    /// `dirty_meta`): it joins the running transaction and is not written home until
    /// that commits.
    pub(super) fn journal_dirty_metadata(&mut self, block: u64) {
        let full = {
            let Some(tx) = self.journal_start() else { return };
            tx.meta.insert(block);
            (tx.tid, tx.meta.len() as u64)
        };
        let j = self.journal.as_ref().expect("ext3");
        if full.1 >= j.max_transaction() {
            self.log_start_commit(full.0);
        }
    }

    /// `journal_dirty_data` (data=ordered): page `index` of `file` joins the running
    /// transaction's data list. Nothing in data=writeback or on ext2.
    pub(super) fn journal_dirty_data(&mut self, file: FileId, index: u64) {
        if self.journal.as_ref().is_none_or(|j| j.cfg.data != DataMode::Ordered) {
            return;
        }
        if let Some(tx) = self.journal_start() {
            tx.data.entry(file.0).or_default().insert(index);
        }
    }

    /// `mark_inode_dirty` on ext3 (`ext3_dirty_inode`): the inode's block joins the
    /// running transaction.
    pub(super) fn journal_dirty_inode(&mut self, file: FileId) {
        if self.journaled() {
            let ino = self.fs.inode_block(self.fs.file(file).inode);
            self.dirty_meta(ino);
        }
    }

    /// `touch_atime` on a read of `file`: with atime on, a new second dirties the inode
    /// (`mark_inode_dirty_sync`), on ext3 into the journal. ext2's atime is not modelled.
    pub(super) fn touch_atime(&mut self, file: FileId) {
        if self.fs.file(file).device || !self.journal.as_ref().is_some_and(|j| j.cfg.atime) {
            return;
        }
        if !time_moved(&mut self.atime, file, self.now, Duration::from_secs(1)) {
            return;
        }
        self.inode_dirty.insert(file.0);
        self.journal_dirty_inode(file);
    }

    /// `__log_start_commit`: ask kjournald to commit transaction `tid`.
    fn log_start_commit(&mut self, tid: u64) {
        let j = self.journal.as_mut().expect("ext3");
        if j.commit_request >= tid {
            return;
        }
        j.commit_request = tid;
        let kj = j.task;
        if let State::Blocked(Block::Sleep { .. }) = self.tasks[kj.0 as usize].state {
            self.make_runnable(kj);
        }
    }

    /// `ext3_force_commit` from fsync: commit the running transaction (begun if there is
    /// none) and return its tid to wait for.
    pub(super) fn journal_force_commit(&mut self) -> u64 {
        let tid = self.journal_start().expect("ext3").tid;
        self.journal.as_mut().expect("ext3").stats.forced_commits += 1;
        self.log_start_commit(tid);
        tid
    }

    /// Whether transaction `tid` has committed.
    pub(super) fn journal_committed(&self, tid: u64) -> bool {
        self.journal.as_ref().is_some_and(|j| j.commit_sequence >= tid)
    }

    /// `log_wait_commit`: `None` once `tid` is committed, else block `t` until a commit
    /// ends and return `again`.
    pub(super) fn journal_wait_commit(&mut self, t: TaskId, tid: u64, again: Cont) -> Option<Cont> {
        let j = self.journal.as_mut().expect("ext3");
        if j.commit_sequence >= tid {
            return None;
        }
        j.waiters.push(t);
        self.tasks[t.0 as usize].block_after = Some(Block::Commit { tid });
        Some(again)
    }

    /// One step of kjournald.
    pub(super) fn step_kjournald(&mut self, t: TaskId, k: Kj) -> Cont {
        match k {
            Kj::Idle => {
                let now = self.now;
                let j = self.journal.as_mut().expect("kjournald without a journal");
                let Some(tx) = &j.running else {
                    self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
                    return Cont::Kjournald(Kj::Idle);
                };
                if tx.expires <= now && j.commit_request < tx.tid {
                    j.commit_request = tx.tid;
                }
                if j.commit_request < tx.tid {
                    let token = j.timer_token;
                    self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token });
                    return Cont::Kjournald(Kj::Idle);
                }
                // journal_commit_transaction: the running transaction is now committing.
                j.committing = j.running.take();
                j.commit_started = now;
                Cont::Kjournald(Kj::Space)
            }
            Kj::Space => {
                let j = self.journal.as_mut().expect("ext3");
                let n = j.committing.as_ref().map_or(0, |tx| tx.meta.len() as u64);
                let need = Journal::log_blocks_for(n) + j.max_transaction();
                if j.space_left() >= need {
                    return self.commit_data();
                }
                // log_do_checkpoint: cleanup_journal_tail first — past every transaction
                // whose blocks are home.
                let mut freed = 0;
                while let Some(c) = j.checkpoints.front() {
                    let home = c.blocks.iter().all(|&b| {
                        self.cache.get(META, b).is_none_or(|p| {
                            let pg = self.cache.page(p);
                            !pg.dirty && !pg.writeback
                        })
                    });
                    if !home {
                        break;
                    }
                    freed += c.log_blocks;
                    j.checkpoints.pop_front();
                }
                if freed > 0 {
                    j.used -= freed;
                    j.stats.checkpoints += 1;
                    // journal_update_superblock: the new tail, written and waited for.
                    let sb = j.disk_block(0);
                    j.stats.log_blocks += 1;
                    self.journal_write(t, sb, 1);
                    return Cont::Kjournald(Kj::Space);
                }
                let Some(c) = j.checkpoints.front() else {
                    // Nothing to checkpoint: the transaction fits the whole journal.
                    return self.commit_data();
                };
                // __flush_batch: the oldest transaction's dirty blocks, written and waited for.
                // Those a live transaction holds again cannot go home before it commits
                // (which moves them off this list); if nothing else is left, commit first.
                let blocks: Vec<u64> = c.blocks.clone();
                let writable: Vec<u64> = blocks
                    .iter()
                    .copied()
                    .filter(|&b| {
                        !self.journal_holds(b) && self.cache.get(META, b).is_some_and(|p| self.cache.page(p).dirty)
                    })
                    .collect();
                let in_flight = blocks.iter().any(|&b| {
                    self.cache.get(META, b).is_some_and(|p| {
                        let pg = self.cache.page(p);
                        pg.writeback || pg.locked
                    })
                });
                if writable.is_empty() && !in_flight {
                    return self.commit_data();
                }
                let j = self.journal.as_mut().expect("ext3");
                j.stats.checkpoints += 1;
                j.stats.checkpoint_blocks += writable.len() as u64;
                self.write_meta_blocks(writable, Box::new(Cont::Kjournald(Kj::CheckpointWait(blocks))))
            }
            Kj::CheckpointWait(blocks) => {
                let again = Cont::Kjournald(Kj::CheckpointWait(blocks.clone()));
                self.wait_meta_written(t, &blocks, again).unwrap_or(Cont::Kjournald(Kj::Space))
            }
            Kj::Data(mut files) => {
                let Some((f, pages)) = files.pop_front() else {
                    let tx = self.journal.as_ref().and_then(|j| j.committing.as_ref()).expect("committing");
                    let all = tx.data.iter().flat_map(|(&f, ix)| ix.iter().map(move |&i| (f, i))).collect();
                    return Cont::Kjournald(Kj::WaitData(all));
                };
                self.write_buffers(f, pages, Box::new(Cont::Kjournald(Kj::DataDone(files))))
            }
            Kj::WaitData(mut pages) => {
                // wait_on_buffer on each page still being written (t_locked_list).
                while let Some(&(f, i)) = pages.last() {
                    if let Some(p) = self.cache.get(f, i)
                        && self.cache.page(p).writeback
                    {
                        let task = &mut self.tasks[t.0 as usize];
                        task.unplug_before_block = true;
                        task.block_after = Some(Block::Page(p));
                        return Cont::Kjournald(Kj::WaitData(pages));
                    }
                    pages.pop();
                }
                Cont::Kjournald(Kj::Log)
            }
            Kj::Log => {
                let j = self.journal.as_mut().expect("ext3");
                let n = j.committing.as_ref().map_or(0, |tx| tx.meta.len() as u64);
                let blocks = Journal::log_blocks_for(n) - 1;
                if blocks == 0 {
                    return Cont::Kjournald(Kj::Commit);
                }
                self.log_write(t, blocks);
                Cont::Kjournald(Kj::Commit)
            }
            Kj::Commit => {
                let j = self.journal.as_mut().expect("ext3");
                let record = CommitRecord {
                    tid: j.committing.as_ref().expect("committing").tid,
                    started_ns: j.commit_started.as_nanos(),
                    commit_sector: self.fs.sector(j.disk_block(j.head)),
                };
                j.stats.log.push(record);
                self.log_write(t, 1);
                Cont::Kjournald(Kj::Done)
            }
            Kj::Done => {
                self.commit_done();
                Cont::Kjournald(Kj::Idle)
            }
            Kj::DataDone(files) => {
                let w = self.tasks[t.0 as usize].last_wb_written();
                self.journal.as_mut().expect("ext3").stats.data_pages += w.max(0) as u64;
                Cont::Kjournald(Kj::Data(files))
            }
        }
    }

    /// The ordered-data step of a commit (nothing to write in data=writeback).
    fn commit_data(&mut self) -> Cont {
        let j = self.journal.as_ref().expect("ext3");
        let tx = j.committing.as_ref().expect("committing");
        let files: VecDeque<(u32, VecDeque<u64>)> =
            tx.data.iter().map(|(&f, ix)| (f, ix.iter().copied().collect())).collect();
        Cont::Kjournald(Kj::Data(files))
    }

    /// Write `n` log blocks at the head (wrapping to log block 1) and wait for them: one
    /// bio per run of contiguous disk blocks, up to the largest bio.
    fn log_write(&mut self, t: TaskId, n: u64) {
        let max = self.max_bio_sectors() / SECTORS_PER_BLOCK;
        let mut left = n;
        while left > 0 {
            let j = self.journal.as_mut().expect("ext3");
            let start = j.disk_block(j.head);
            let mut k = 1;
            while k < left && k < max && j.head + k < j.len && j.disk_block(j.head + k) == start + k {
                k += 1;
            }
            j.head += k;
            if j.head >= j.len {
                j.head = 1;
            }
            j.used += k;
            assert!(j.used < j.len, "the log overran its tail ({} of {} blocks)", j.used, j.len);
            j.stats.log_blocks += k;
            left -= k;
            self.journal_write(t, start, k);
        }
    }

    /// A journal write of `n` blocks from disk block `start` by kjournald, waited for.
    fn journal_write(&mut self, t: TaskId, start: u64, n: u64) {
        let sector = self.fs.sector(start);
        self.charge(t, self.cfg.cpu.bio_submit);
        self.queue_bio(
            t,
            Op::Write,
            sector,
            (n * SECTORS_PER_BLOCK) as u32,
            false,
            BioKind::Direct { task: t, aio: false, iocb: 0 },
            false,
        );
        let task = &mut self.tasks[t.0 as usize];
        task.io_outstanding += 1;
        task.unplug_before_block = true;
        task.block_after = Some(Block::Io);
    }

    /// The end of `journal_commit_transaction`: the metadata is dirty for writeback to
    /// take home (unless the running transaction has it again), the transaction is on
    /// the checkpoint list, and those waiting for it go on.
    fn commit_done(&mut self) {
        let now = self.now;
        let j = self.journal.as_mut().expect("ext3");
        let tx = j.committing.take().expect("committing");
        j.commit_sequence = tx.tid;
        j.stats.commits += 1;
        let n = tx.meta.len() as u64;
        let rerun: Vec<u64> = tx.meta.iter().copied().collect();
        let again: BTreeSet<u64> = j.running.as_ref().map(|r| r.meta.clone()).unwrap_or_default();
        // __journal_insert_checkpoint: a block moves to the newest committed transaction's
        // checkpoint list (`__journal_remove_checkpoint` from the older one).
        for c in j.checkpoints.iter_mut() {
            c.blocks.retain(|b| !tx.meta.contains(b));
        }
        j.checkpoints.push_back(Checkpoint { blocks: rerun.clone(), log_blocks: Journal::log_blocks_for(n) });
        let waiters = std::mem::take(&mut j.waiters);
        for b in rerun {
            if again.contains(&b) {
                continue;
            }
            if let Some(p) = self.cache.get(META, b)
                && !self.cache.page(p).locked
            {
                self.cache.set_dirty(p, now);
            }
        }
        self.wake_all(waiters);
    }
}

/// Whether `now`, in steps of `granularity`, differs from the step `map` holds for `file`
/// (recording it): a file time (`i_atime`, `i_mtime`) changes only when its clock moved.
pub(super) fn time_moved(map: &mut FastMap<u32, u64>, file: FileId, now: Instant, granularity: Duration) -> bool {
    let step = now.as_nanos() / (granularity.as_nanos() as u64).max(1);
    map.insert(file.0, step) != Some(step)
}
