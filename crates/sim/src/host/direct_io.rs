//! `O_DIRECT` reads and writes, after `fs/direct-io.c`: the page cache is bypassed, the
//! request is cut into bios of at most the queue's largest request, and the caller waits
//! for all of them (or, through AIO, collects them with `io_getevents`).

use super::*;

impl Sim {
    // ---------------------------------------------------------------------------------
    // Direct I/O

    pub(super) fn direct_io(&mut self, t: TaskId, file: FileId, offset: u64, len: u64, write: bool, aio: bool) {
        let first = offset / BLOCK;
        let last = (offset + len).div_ceil(BLOCK);
        let max = self.max_bio_sectors() / SECTORS_PER_BLOCK;
        let iocb = if aio { self.token() } else { 0 };
        // The size before the call (allocation below moves it to each block's end).
        let old = self.fs.file(file).size;
        let mut fb = first;
        let mut bios = 0;
        while fb < last {
            if self.fs.map(file, fb).is_none() {
                if write {
                    let a = self.fs.allocate(file, fb, self.pid(t));
                    self.allocated_blocks(file);
                    self.charge(t, self.cfg.cpu.block_alloc);
                    for b in a.meta {
                        self.dirty_meta(b);
                    }
                } else {
                    fb += 1;
                    continue; // a hole reads as zeros
                }
            }
            let start = self.fs.map(file, fb).unwrap();
            let mut n = 1;
            while fb + n < last && n < max && self.fs.map(file, fb + n) == Some(start + n) {
                n += 1;
            }
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(start);
            let op = if write { Op::Write } else { Op::Read };
            // 2.6.20 direct I/O writes are WRITE_SYNC.
            self.queue_bio(
                t,
                op,
                sector,
                (n * SECTORS_PER_BLOCK) as u32,
                true,
                BioKind::Direct { task: t, aio, iocb },
                false,
            );
            bios += 1;
            fb += n;
        }
        if write {
            let end = offset + len;
            let size = self.fs.file(file).size.max(end);
            self.fs.set_size(file, size);
            // __generic_file_aio_write_nolock calls file_update_time for O_DIRECT too; on
            // the 2.4/2.5 hosts direct writes dirty the inode only through allocation, as
            // they were calibrated.
            if self.cfg.host.mtime_granularity.is_some() {
                self.update_mtime(file, size > old);
            }
        }
        let task = &mut self.tasks[t.0 as usize];
        if bios > 0 {
            // direct_io_worker: "All IO is now issued, send it on its way" —
            // blk_run_address_space, for synchronous and asynchronous direct I/O alike.
            task.unplug_after_bios = true;
        }
        if aio {
            // One event per iocb; a read of a hole needs no bio and completes at once.
            let n = task.aio_next;
            task.aio_next += 1;
            if bios > 0 {
                task.aio_bios.insert(iocb, (bios, n));
                task.aio_inflight += 1;
            } else {
                task.aio_done += 1;
                task.aio_completed.push(n);
            }
        } else if bios > 0 {
            task.io_outstanding += bios;
            task.unplug_before_block = true;
            task.block_after = Some(Block::Io);
        }
    }
}
