//! The CPU side of the host, after `kernel/sched.c` of 2.5/2.6 in the small: the run
//! queue ordered by dynamic priority, a task's CPU debt burnt on a CPU, blocking and
//! waking, and the step that turns a task's next system call into its continuation.

use super::*;

impl Sim {
    // ---------------------------------------------------------------------------------
    // CPU

    // The CPU scheduler follows the 2.5/2.6 O(1) scheduler in the parts that shape I/O:
    // a task's dynamic priority is its static one (all nice 0 here) minus an
    // interactivity bonus from its sleep credit (`sleep_avg`: +time blocked, −time on a
    // CPU, capped at `max_sleep_avg`), from −5 (slept a lot) to +5 (CPU hog); a woken task
    // with a better priority than a running one preempts it at once (`try_to_wake_up` →
    // `resched_task`); equal priorities share the CPU round robin in `timeslice` slices.
    // Not modelled: the expired array and starvation limit, SMP balancing beyond "any
    // free CPU", nice levels.

    /// Dynamic priority (lower runs first): `effective_prio`'s bonus from sleep credit.
    pub(super) fn effective_prio(&self, t: TaskId) -> i32 {
        let max = self.cfg.cpu.max_sleep_avg.as_nanos().max(1);
        let avg = self.tasks[t.0 as usize].sleep_avg.as_nanos().min(max);
        5 - (avg * 10 / max) as i32
    }

    pub(super) fn dyn_prio(&self, t: TaskId) -> i32 {
        self.tasks[t.0 as usize].dprio
    }

    pub(super) fn enqueue(&mut self, t: TaskId, front: bool) {
        let p = self.dyn_prio(t);
        self.runq_seq += 1;
        let seq = if front { -self.runq_seq } else { self.runq_seq };
        self.runq.insert((p, seq), t);
    }

    pub(super) fn best_waiting_prio(&self) -> Option<i32> {
        self.runq.keys().next().map(|&(p, _)| p)
    }

    pub(super) fn give_cpu(&mut self, c: usize, t: TaskId) {
        self.cpus[c] = Some(t);
        let task = &mut self.tasks[t.0 as usize];
        task.cpu = Some(c);
        task.slice_used = Duration::ZERO;
        task.state = State::Running;
        self.ready.push_back(t);
    }

    pub(super) fn make_runnable(&mut self, t: TaskId) {
        let now = self.now;
        let max = self.cfg.cpu.max_sleep_avg;
        let task = &mut self.tasks[t.0 as usize];
        if task.state == State::Exited {
            return;
        }
        if matches!(task.state, State::Blocked(_)) {
            task.sleep_avg = (task.sleep_avg + (now - task.blocked_since)).min(max);
        }
        task.state = State::Runnable;
        self.tasks[t.0 as usize].dprio = self.effective_prio(t);
        if let Some(c) = self.cpus.iter().position(|c| c.is_none()) {
            self.give_cpu(c, t);
            return;
        }
        // Preempt the worst-priority task burning CPU if the woken one is better.
        let p = self.dyn_prio(t);
        let victim = self
            .cpus
            .iter()
            .flatten()
            .copied()
            .filter(|&v| self.tasks[v.0 as usize].state == State::Burning)
            .map(|v| (self.dyn_prio(v), v))
            .max_by_key(|&(vp, v)| (vp, std::cmp::Reverse(v.0)));
        if let Some((vp, v)) = victim
            && p < vp
        {
            let c = self.tasks[v.0 as usize].cpu.unwrap();
            self.stop_burn(v);
            let vt = &mut self.tasks[v.0 as usize];
            vt.cpu = None;
            vt.state = State::Runnable;
            self.enqueue(v, true);
            self.give_cpu(c, t);
            return;
        }
        self.enqueue(t, false);
    }

    /// Account the part of a burn done so far and cancel its completion event.
    pub(super) fn stop_burn(&mut self, t: TaskId) {
        let now = self.now;
        let tk = &mut self.tasks[t.0 as usize];
        let done = (now - tk.burn_started).min(tk.debt);
        tk.burn_token += 1;
        tk.debt -= done;
        let user = tk.user_debt.min(done);
        tk.user_debt -= user;
        tk.sleep_avg = tk.sleep_avg.saturating_sub(done);
        tk.cpu_time += done;
        tk.slice_used += done;
        self.cpu_busy_sample += done;
        self.cpu_sys_sample += done - user;
    }

    pub(super) fn release_cpu(&mut self, t: TaskId) {
        let Some(c) = self.tasks[t.0 as usize].cpu.take() else {
            return;
        };
        self.cpus[c] = None;
        if let Some((_, next)) = self.runq.pop_first() {
            self.give_cpu(c, next);
        }
    }

    pub(super) fn block(&mut self, t: TaskId, why: Block) {
        let now = self.now;
        let task = &mut self.tasks[t.0 as usize];
        task.blocked_since = now;
        task.state = State::Blocked(why.clone());
        if task.unplug_before_block {
            task.unplug_before_block = false;
            self.pending.push_back(Input::Unplug);
        }
        match why {
            Block::Page(p) => self.page_waiters.entry(p).or_default().push(t),
            Block::Fsync(f) => self.fsync_waiters.entry(f).or_default().push(t),
            Block::Congestion { token, timeout } => {
                self.congestion_waiters.push(t);
                self.engine.schedule(self.now + timeout, Ev::Timer { task: t, token });
            }
            Block::Sleep { .. } | Block::Memory { .. } => {}
            Block::Counter { .. } => self.counter_waiters.push(t),
            Block::Exit(child) => self.tasks[child.0 as usize].exit_waiters.push(t),
            Block::Slot(_) | Block::Io | Block::Aio { .. } | Block::Commit { .. } => {}
        }
        self.release_cpu(t);
    }

    /// Whether a wait the task is about to start is already satisfied: for waits whose
    /// only wake-up is the event itself (its own I/O, its asynchronous I/O, a journal
    /// commit), a task that slept after the event would sleep for ever.
    fn wait_is_over(&self, t: TaskId, why: &Block) -> bool {
        let task = &self.tasks[t.0 as usize];
        match *why {
            Block::Io => task.io_outstanding == 0,
            Block::Aio { min } => task.aio_done >= min || task.aio_inflight == 0,
            Block::Commit { tid } => self.journal_committed(tid),
            _ => false,
        }
    }

    pub(super) fn wake(&mut self, t: TaskId) {
        if matches!(self.tasks[t.0 as usize].state, State::Blocked(_)) {
            self.make_runnable(t);
        }
    }

    /// `wake_up` on a wait queue whose sleepers queued themselves in `ws`'s order. They
    /// are woken newest first, as in 2.5.64 and 2.6.20: `prepare_to_wait` and
    /// `add_wait_queue` put a non-exclusive sleeper at the head of the queue
    /// (`__add_wait_queue` → `list_add`) and `__wake_up_common` walks from the head. Tasks
    /// of equal priority then run in that order.
    pub(super) fn wake_all(&mut self, ws: Vec<TaskId>) {
        for w in ws.into_iter().rev() {
            self.wake(w);
        }
    }

    pub(super) fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    // ---------------------------------------------------------------------------------
    // Running tasks

    /// Run a task that owns a CPU until it burns CPU, submits a bio, or blocks.
    pub(super) fn run_task(&mut self, t: TaskId) {
        loop {
            let task = &mut self.tasks[t.0 as usize];
            if task.state != State::Running {
                return;
            }
            if task.debt > Duration::ZERO {
                // Preemption points: a better task is waiting (woken while we were not
                // burning), or our slice is used up and an equal one waits (round robin).
                let expired = task.slice_used >= self.cfg.cpu.timeslice;
                if expired {
                    self.tasks[t.0 as usize].dprio = self.effective_prio(t);
                }
                if let Some(best) = self.best_waiting_prio() {
                    let me = self.dyn_prio(t);
                    if best < me || (expired && best <= me) {
                        let task = &mut self.tasks[t.0 as usize];
                        task.state = State::Runnable;
                        let c = task.cpu.take().unwrap();
                        self.cpus[c] = None;
                        self.enqueue(t, !expired);
                        let (_, next) = self.runq.pop_first().unwrap();
                        self.give_cpu(c, next);
                        return;
                    }
                }
                let task = &mut self.tasks[t.0 as usize];
                if expired {
                    task.slice_used = Duration::ZERO;
                }
                let d = task.debt;
                task.state = State::Burning;
                task.burn_started = self.now;
                let token = task.burn_token;
                let cpu = task.cpu.unwrap();
                self.engine.schedule(self.now + d, Ev::CpuDone { task: t, cpu, token });
                return;
            }
            if task.bio_out.is_empty() && task.unplug_after_bios {
                task.unplug_after_bios = false;
                self.pending.push_back(Input::Unplug);
            }
            if let Some(bio) = task.bio_out.pop_front() {
                task.state = State::Submitting;
                self.awaiting = Some((t, bio.id));
                if self.trace.is_some() {
                    self.trace_line("Q", bio.id, Some(&bio));
                    self.traced_bio = Some(bio);
                }
                self.pending.push_back(Input::Arrival(bio));
                return;
            }
            if let Some(b) = task.block_after.take() {
                if self.wait_is_over(t, &b) {
                    // The condition came true while the task, its bio admitted, waited for a
                    // CPU (a write-cached disk can complete it first): wait_event checks
                    // before it sleeps, so the task goes on.
                    self.tasks[t.0 as usize].unplug_before_block = false;
                    continue;
                }
                self.block(t, b);
                return;
            }
            self.step(t);
        }
    }

    pub(super) fn charge(&mut self, t: TaskId, d: Duration) {
        self.tasks[t.0 as usize].debt += d;
    }

    /// One step of the task's current operation.
    pub(super) fn step(&mut self, t: TaskId) {
        let cont = std::mem::replace(&mut self.tasks[t.0 as usize].cont, Cont::Next);
        let next = match cont {
            Cont::Next => self.next_op(t),
            Cont::Read { file, start, pos, end, next_ra, copied, mmap } => {
                self.step_read(t, file, start, pos, end, next_ra, copied, mmap)
            }
            Cont::Write { file, pos, end, written, mmap } => self.step_write(t, file, pos, end, written, mmap),
            Cont::Balance(b) => self.step_balance(t, b),
            Cont::Writeback(w) => self.step_writeback(t, w),
            Cont::Fsync { file, step } => self.step_fsync(t, file, step),
            Cont::Meta { blocks, i, then } => self.step_meta(t, blocks, i, then),
            Cont::Finish { bytes } => {
                self.finish_op(t, bytes);
                Cont::Next
            }
            Cont::AioReap => {
                let n = std::mem::take(&mut self.tasks[t.0 as usize].aio_done);
                self.finish_op(t, n as u64);
                let task = &mut self.tasks[t.0 as usize];
                let reaped = std::mem::take(&mut task.aio_completed);
                if let Some(o) = &mut task.last_outcome {
                    o.reaped = reaped;
                }
                Cont::Next
            }
            Cont::Pdflush(p) => self.step_pdflush(t, p),
            Cont::Kswapd { priority } => self.step_kswapd(t, priority),
            Cont::Kjournald(k) => self.step_kjournald(t, k),
        };
        let task = &mut self.tasks[t.0 as usize];
        if task.state != State::Exited {
            task.cont = next;
        }
    }

    pub(super) fn finish_op(&mut self, t: TaskId, bytes: u64) {
        let now = self.now;
        let task = &mut self.tasks[t.0 as usize];
        let error = task.io_error.take();
        task.last_outcome = Some(Outcome {
            kind: task.op_kind,
            started: task.op_started,
            finished: now,
            bytes,
            child: task.child.take(),
            error,
            reaped: Vec::new(),
        });
    }

    pub(super) fn exit_task(&mut self, t: TaskId) {
        let owner = self.tasks[t.0 as usize].owner;
        self.release_cpu(t);
        let task = &mut self.tasks[t.0 as usize];
        task.state = State::Exited;
        task.ra.clear();
        let waiters = std::mem::take(&mut task.exit_waiters);
        self.wake_all(waiters);
        self.pending.push_back(Input::OwnerExit(owner));
    }

    pub(super) fn handle_timer(&mut self, t: TaskId, token: u64) {
        let task = &self.tasks[t.0 as usize];
        let matches = match &task.state {
            State::Blocked(Block::Sleep { token: tk })
            | State::Blocked(Block::Congestion { token: tk, .. })
            | State::Blocked(Block::Memory { token: tk }) => *tk == token,
            _ => false,
        };
        if matches {
            self.congestion_waiters.retain(|&w| w != t);
            self.memory_waiters.retain(|&w| w != t);
            self.make_runnable(t);
        }
    }
}
