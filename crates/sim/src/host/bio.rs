//! The block-layer side of the host: bios built and handed to the core's `Queue`
//! (`submit_bio`, `ll_rw_blk.c`), completions delivered back to the pages and tasks that
//! wait for them (`bio_endio`), the blkparse-like trace, and the [`Env`] the core's driver
//! loop runs the whole machine through.

use super::*;

impl Sim {
    pub(super) fn new_bio_id(&mut self) -> ReqId {
        let id = self.next_bio;
        self.next_bio += 1;
        id
    }

    /// Queue a bio for the task to submit next.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue_bio(
        &mut self,
        t: TaskId,
        op: Op,
        sector: u64,
        len: u32,
        sync: bool,
        kind: BioKind,
        meta: bool,
    ) {
        let id = self.new_bio_id();
        let task = &self.tasks[t.0 as usize];
        let rq = Request {
            id,
            op,
            sector,
            len_sectors: len,
            sync,
            meta,
            prio: task.cmd_prio.unwrap_or(task.prio),
            owner: task.owner,
            arrival: self.now,
        };
        let bytes = len as u64 * 512;
        self.bios.insert(id, Bio { kind, bytes, write: op == Op::Write, owner: task.owner });
        self.tasks[t.0 as usize].bio_out.push_back(rq);
    }

    /// Largest bio the queue accepts (bio_add_page stops at max_sectors; 128 KiB).
    /// The largest unit the host submits: a bio up to the queue's limit, or on 2.4 one
    /// buffer (`submit_bh` per 4 KiB block; the elevator merges them).
    pub(super) fn max_bio_sectors(&self) -> u64 {
        if self.cfg.host.buffer_heads { SECTORS_PER_BLOCK } else { self.cfg.max_bio_sectors as u64 }
    }

    // ---------------------------------------------------------------------------------
    // Completions and queue events

    pub(super) fn bio_completed(&mut self, id: ReqId, status: Status) {
        let Some(bio) = self.bios.remove(&id) else {
            return;
        };
        // Owners are task ids + 1.
        let by = &mut self.tasks[(bio.owner.0 - 1) as usize].io;
        if bio.write {
            by.1 += bio.bytes;
        } else {
            by.0 += bio.bytes;
        }
        if bio.write {
            self.stats.bytes_written += bio.bytes;
            self.sample.bo += bio.bytes;
        } else {
            self.stats.bytes_read += bio.bytes;
            self.sample.bi += bio.bytes;
        }
        match bio.kind {
            BioKind::CacheRead(pages) => {
                for p in pages {
                    self.cache.read_done(p);
                    if let Some(ws) = self.page_waiters.remove(&p) {
                        if self.cfg.host.lock_page_exclusive && self.cache.page(p).file != META {
                            // A file page's readers wait in lock_page, which queues them
                            // in order on this host; a metadata block's in
                            // wait_on_buffer, at the head.
                            for w in ws {
                                self.wake(w);
                            }
                        } else {
                            self.wake_all(ws);
                        }
                    }
                }
            }
            BioKind::CacheWrite(pages) => {
                let mut files = Vec::new();
                for p in pages {
                    let f = self.cache.page(p).file;
                    self.cache.end_writeback(p);
                    if !files.contains(&f) {
                        files.push(f);
                    }
                    // wait_on_buffer: an fsync waiting for its metadata blocks, kjournald
                    // for a transaction's data.
                    if let Some(ws) = self.page_waiters.remove(&p) {
                        self.wake_all(ws);
                    }
                }
                for f in files {
                    if self.cache.writeback_by_file.get(&f).is_none_or(|&n| n == 0)
                        && let Some(ws) = self.fsync_waiters.remove(&f)
                    {
                        self.wake_all(ws);
                    }
                }
                let ws = std::mem::take(&mut self.memory_waiters);
                self.wake_all(ws);
            }
            BioKind::Direct { task, aio, iocb } => {
                let tk = &mut self.tasks[task.0 as usize];
                if status != Status::Ok {
                    tk.io_error = Some(status);
                }
                if aio {
                    let (left, n) = tk.aio_bios.get_mut(&iocb).expect("bio of an iocb in flight");
                    *left -= 1;
                    if *left == 0 {
                        tk.aio_completed.push(*n);
                        tk.aio_bios.remove(&iocb);
                        tk.aio_inflight -= 1;
                        tk.aio_done += 1;
                        if let State::Blocked(Block::Aio { min }) = tk.state
                            && (tk.aio_done >= min || tk.aio_inflight == 0)
                        {
                            self.wake(task);
                        }
                    }
                } else {
                    tk.io_outstanding -= 1;
                    if tk.io_outstanding == 0 && tk.state == State::Blocked(Block::Io) {
                        self.wake(task);
                    }
                }
            }
        }
    }

    pub(super) fn trace_line(&mut self, letter: &str, id: ReqId, rq: Option<&Request>) {
        if self.trace.is_none() {
            return;
        }
        let t = self.now.as_nanos();
        let (owner, rwbs, sector, len) = match rq {
            Some(r) => (
                r.owner.0,
                if r.op == Op::Write { if r.sync { "WS" } else { "W" } } else { "R" },
                r.sector,
                r.len_sectors,
            ),
            None => (0, "N", 0, 0),
        };
        // blkparse's last field: the process (owners are task ids + 1).
        let name = owner.checked_sub(1).and_then(|i| self.tasks.get(i as usize)).map_or("", |tk| tk.name.as_str());
        let line = format!(
            "8,0    0 {:8} {:5}.{:09} {:5} {:>2} {:>3} {} + {} [{}]",
            id,
            t / 1_000_000_000,
            t % 1_000_000_000,
            owner,
            letter,
            rwbs,
            sector,
            len,
            name
        );
        self.trace.as_mut().expect("tracing").push(line);
    }
}

impl Env for Sim {
    fn now(&mut self) -> Instant {
        self.now
    }

    fn issue(&mut self, now: Instant, rq: &Request, _segments: Segments<'_>) {
        self.device.submit(now, DiskCommand { id: rq.id, op: rq.op, sector: rq.sector, len_sectors: rq.len_sectors });
        if self.device_inflight == 0 {
            self.device_busy_since = Some(now);
        }
        self.device_inflight += 1;
        self.device_next = self.device.poll_timeout();
        if let Some(s) = &mut self.dispatch_sample
            && now >= s.from
            && now < s.to
            && s.points.len() < s.max
        {
            let write = matches!(rq.op, Op::Write);
            s.points.push(Dispatched { at_ns: now.as_nanos(), sector: rq.sector, sectors: rq.len_sectors, write });
        }
        if self.trace.is_some() {
            self.trace_line("D", rq.id, Some(rq));
            self.traced_inflight.insert(rq.id, *rq);
        }
    }

    fn notify(&mut self, _now: Instant, ev: &Event) {
        match *ev {
            Event::Queued { id } | Event::Merged { id, .. } => {
                if matches!(ev, Event::Merged { .. })
                    && let Some(b) = self.traced_bio.take().filter(|b| b.id == id)
                {
                    self.trace_line("M", id, Some(&b));
                }
                if let Some((t, bid)) = self.awaiting
                    && bid == id
                {
                    self.awaiting = None;
                    self.tasks[t.0 as usize].state = State::Running;
                    self.ready.push_back(t);
                }
            }
            Event::Sleep { id } => {
                if let Some((t, bid)) = self.awaiting
                    && bid == id
                {
                    self.awaiting = None;
                    self.tasks[t.0 as usize].state = State::Running;
                    self.block(t, Block::Slot(id));
                }
            }
            Event::Admitted { id } => {
                if let Some(t) = self.tasks.iter().position(|tk| tk.state == State::Blocked(Block::Slot(id))) {
                    self.make_runnable(TaskId(t as u32));
                }
            }
            Event::Completed { id, status, .. } => self.bio_completed(id, status),
            Event::Congestion { dir, congested } => {
                match dir {
                    Dir::Read => self.read_congested = congested,
                    Dir::Write => self.write_congested = congested,
                }
                if dir == Dir::Write && !congested {
                    let ws = std::mem::take(&mut self.congestion_waiters);
                    self.wake_all(ws);
                }
            }
            _ => {}
        }
    }

    fn wait(&mut self, deadline: Option<Instant>) -> Wake {
        loop {
            // The outside world, every 1024 turns of the loop (tasks running count too, so
            // a run whose time stands still still sees the interrupt): publish the clock
            // and look at the interrupt flag. Neither changes what the run computes.
            self.turns = self.turns.wrapping_add(1);
            if self.turns.is_multiple_of(1024) && self.look_outside() {
                self.stopped = true;
                return Wake::Stop;
            }
            if let Some(i) = self.pending.pop_front() {
                return Wake::Input(i);
            }
            debug_assert!(self.awaiting.is_none(), "a submitted bio got no admission");
            if let Some(t) = self.ready.pop_front() {
                self.run_task(t);
                continue;
            }
            if self.done() {
                return Wake::Stop;
            }
            let next_ev = self.engine.peek_time();
            let next_dev = self.device_next;
            let next = match (next_ev, next_dev) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(d) = deadline
                && next.is_none_or(|n| d <= n)
            {
                self.now = self.now.max(d);
                return Wake::Timeout;
            }
            let Some(next) = next else {
                // Nothing can happen any more.
                return Wake::Stop;
            };
            self.now = self.now.max(next);
            if next_dev == Some(next) {
                while let Some(c) = self.device.poll_completion(self.now) {
                    self.device_inflight -= 1;
                    self.stats.requests_completed += 1;
                    if self.device_inflight == 0
                        && let Some(s) = self.device_busy_since.take()
                    {
                        self.stats.device_busy += self.now - s;
                    }
                    if self.trace.is_some() {
                        let rq = self.traced_inflight.remove(&c.id);
                        self.trace_line("C", c.id, rq.as_ref());
                    }
                    self.pending.push_back(Input::Completion { id: c.id, status: Status::Ok });
                }
                self.device_next = self.device.poll_timeout();
                continue;
            }
            let (_, ev) = self.engine.pop().unwrap();
            match ev {
                Ev::CpuDone { task, cpu, token } => {
                    let tk = &mut self.tasks[task.0 as usize];
                    if tk.burn_token != token || tk.state != State::Burning {
                        continue; // preempted: this burn was cut short
                    }
                    tk.burn_token += 1;
                    let d = tk.debt;
                    tk.sleep_avg = tk.sleep_avg.saturating_sub(d);
                    let user = std::mem::take(&mut tk.user_debt).min(d);
                    tk.debt = Duration::ZERO;
                    tk.cpu_time += d;
                    tk.slice_used += d;
                    self.cpu_busy_sample += d;
                    self.cpu_sys_sample += d - user;
                    debug_assert_eq!(tk.cpu, Some(cpu));
                    tk.state = State::Running;
                    self.run_task(task);
                }
                Ev::Timer { task, token } => self.handle_timer(task, token),
                Ev::Kupdate => self.kupdate(),
                Ev::Sample => self.take_sample(),
                Ev::Stop => self.stopped = true,
                Ev::Limit => {
                    self.stopped = true;
                    self.ended = Some(Ended::SimTimeLimit);
                }
            }
        }
    }
}
