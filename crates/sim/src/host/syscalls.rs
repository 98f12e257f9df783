//! The system-call entry: a program's next [`SysOp`] becomes the continuation that carries
//! it out (`next_op`), and the path lookup that `open`, `stat` and `readdir` do first
//! (directory and inode blocks read through the page cache, `fs/namei.c`).

use super::*;

impl Sim {
    pub(super) fn next_op(&mut self, t: TaskId) -> Cont {
        if self.tasks[t.0 as usize].pdflush {
            return Cont::Pdflush(PdState { kind: PdKind::Background, phase: 0, budget: 0 });
        }
        if Some(t) == self.kswapd {
            return Cont::Kswapd { priority: DEF_PRIORITY };
        }
        let mut program = self.tasks[t.0 as usize].program.take().expect("task without program");
        let done = self.tasks[t.0 as usize].last_outcome.take();
        let cpu_time = self.tasks[t.0 as usize].cpu_time;
        let mut bumped = false;
        let op = {
            let mut ctx = ProgCtx {
                now: self.now,
                task: t,
                cpu_time,
                device_read: self.stats.bytes_read,
                device_written: self.stats.bytes_written,
                fs: &mut self.fs,
                counters: &mut self.counters,
                counter_bumped: &mut bumped,
            };
            program.next(&mut ctx, done.as_ref())
        };
        self.tasks[t.0 as usize].program = Some(program);
        if bumped {
            for w in std::mem::take(&mut self.counter_waiters) {
                self.wake(w);
            }
        }
        if let Some(log) = &mut self.syscalls
            && let Some((file, offset, len)) = op.file_range()
        {
            let task = self.tasks[t.0 as usize].name.clone();
            log.push(SysCall { at: self.now, task, kind: op.kind(), file, offset, len });
        }
        let cpu = self.cfg.cpu.clone();
        let task = &mut self.tasks[t.0 as usize];
        task.op_started = self.now;
        task.op_kind = op.kind();
        match op {
            SysOp::Read { file, offset, len } => {
                task.debt += cpu.syscall;
                self.touch_atime(file);
                let first = offset / BLOCK;
                Cont::Read {
                    file,
                    start: offset,
                    pos: offset,
                    end: offset + len,
                    next_ra: first,
                    copied: 0,
                    mmap: false,
                }
            }
            SysOp::MmapRead { file, offset, len } => Cont::Read {
                file,
                start: offset,
                pos: offset,
                end: offset + len,
                next_ra: offset / BLOCK,
                copied: 0,
                mmap: true,
            },
            SysOp::Write { file, offset, len } => {
                task.debt += cpu.syscall;
                Cont::Write { file, pos: offset, end: offset + len, written: 0, mmap: false }
            }
            SysOp::MmapWrite { file, offset, len } => {
                Cont::Write { file, pos: offset, end: offset + len, written: 0, mmap: true }
            }
            SysOp::DirectRead { file, offset, len } => {
                task.debt += cpu.syscall;
                self.touch_atime(file);
                self.direct_io(t, file, offset, len, false, false);
                Cont::Finish { bytes: len }
            }
            SysOp::DirectWrite { file, offset, len } => {
                task.debt += cpu.syscall;
                self.direct_io(t, file, offset, len, true, false);
                Cont::Finish { bytes: len }
            }
            SysOp::AioSubmit { file, offset, len, write, prio } => {
                task.debt += cpu.syscall;
                if !write {
                    self.touch_atime(file);
                }
                self.tasks[t.0 as usize].cmd_prio = prio;
                self.direct_io(t, file, offset, len, write, true);
                self.tasks[t.0 as usize].cmd_prio = None;
                Cont::Finish { bytes: len }
            }
            SysOp::AioWait { min } => {
                task.debt += cpu.syscall;
                if task.aio_done < min && task.aio_inflight > 0 {
                    task.block_after = Some(Block::Aio { min });
                }
                Cont::AioReap
            }
            SysOp::Fsync { file } => {
                task.debt += cpu.syscall;
                Cont::Fsync { file, step: FsyncStep::WriteData }
            }
            SysOp::Open { file } | SysOp::Truncate { file } => {
                let trunc = matches!(op, SysOp::Truncate { .. });
                task.debt += cpu.syscall * 3;
                let ra = self.new_ra();
                self.tasks[t.0 as usize].ra.insert(file.0, ra);
                if trunc {
                    self.cache.drop_file(file.0);
                    self.fs.truncate(file);
                }
                let blocks = self.lookup_blocks(file);
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::Close { file } => {
                task.debt += cpu.syscall;
                task.ra.remove(&file.0);
                self.fs.discard_prealloc(file);
                Cont::Finish { bytes: 0 }
            }
            SysOp::Stat { file } => {
                task.debt += cpu.syscall * 2;
                let blocks = vec![self.fs.inode_block(self.fs.file(file).inode)];
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::ReadDir { dir } => {
                task.debt += cpu.syscall * 2;
                let d = self.fs.dir(dir);
                let mut blocks = vec![self.fs.inode_block(d.inode)];
                blocks.extend(d.blocks.iter().copied());
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::Think(d) => {
                task.debt += d;
                task.user_debt += d;
                Cont::Finish { bytes: 0 }
            }
            SysOp::Sleep(d) => {
                let token = self.token();
                self.engine.schedule(self.now + d, Ev::Timer { task: t, token });
                self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token });
                Cont::Finish { bytes: 0 }
            }
            SysOp::WaitCounter { counter, at_least } => {
                if self.counters.get(counter).copied().unwrap_or(0) < at_least {
                    task.block_after = Some(Block::Counter { counter, at_least });
                }
                Cont::Finish { bytes: 0 }
            }
            SysOp::Spawn { program, name, prio } => {
                task.debt += cpu.process_spawn;
                let child = self.spawn(name, program, prio);
                self.tasks[t.0 as usize].child = Some(child);
                Cont::Finish { bytes: 0 }
            }
            SysOp::WaitExit(c) => {
                if self.tasks[c.0 as usize].state != State::Exited {
                    self.tasks[t.0 as usize].block_after = Some(Block::Exit(c));
                }
                Cont::Finish { bytes: 0 }
            }
            SysOp::DropCaches => {
                self.cache.drop_clean();
                Cont::Finish { bytes: 0 }
            }
            SysOp::Exit => {
                self.exit_task(t);
                Cont::Next
            }
        }
    }

    /// Metadata blocks an open needs: the directory's blocks and the file's inode block.
    pub(super) fn lookup_blocks(&self, file: FileId) -> Vec<u64> {
        let f = self.fs.file(file);
        if f.device {
            // A device node's lookup is in memory (devtmpfs, bdev).
            return Vec::new();
        }
        let d = self.fs.dir(f.dir);
        // The directory entry lives in one of the directory's blocks.
        let pos = d.files.iter().position(|&x| x == file).unwrap_or(0);
        let dblock = d.blocks[(pos / 128).min(d.blocks.len() - 1)];
        vec![dblock, self.fs.inode_block(f.inode)]
    }

    /// Read metadata blocks one at a time (each a synchronous read if not cached).
    pub(super) fn step_meta(&mut self, t: TaskId, blocks: Vec<u64>, i: usize, then: Box<Cont>) -> Cont {
        if i >= blocks.len() {
            return *then;
        }
        let b = blocks[i];
        match self.cache.lookup(META, b) {
            Lookup::Uptodate(_) => {
                self.charge(t, self.cfg.cpu.page_lookup);
                Cont::Meta { blocks, i: i + 1, then }
            }
            Lookup::Locked(p) => {
                self.tasks[t.0 as usize].unplug_before_block = true;
                self.tasks[t.0 as usize].block_after = Some(Block::Page(p));
                Cont::Meta { blocks, i, then }
            }
            Lookup::Absent => match self.cache_add(t, META, b, false) {
                None => self.wait_memory(t, Cont::Meta { blocks, i, then }),
                Some(p) => {
                    let c = self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit;
                    self.charge(t, c);
                    self.read_block(t, b, p, true);
                    Cont::Meta { blocks, i, then }
                }
            },
        }
    }

    pub(super) fn wait_memory(&mut self, t: TaskId, cont: Cont) -> Cont {
        let token = self.token();
        if let Some(timeout) = self.tasks[t.0 as usize].reclaim_wait.take() {
            // Direct reclaim freed too little: blk_congestion_wait.
            self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout });
            return cont;
        }
        self.memory_waiters.push(t);
        self.engine.schedule(self.now + Duration::from_millis(10), Ev::Timer { task: t, token });
        self.tasks[t.0 as usize].block_after = Some(Block::Memory { token });
        cont
    }
}
