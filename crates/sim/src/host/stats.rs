//! What a run shows while it goes and when it stops: the per-second vmstat sample
//! (`take_sample`), whether the watched tasks are done, and what every task is waiting for
//! when a run is stopped early (`waiting`).

use super::*;

impl Sim {
    /// Keep the requests dispatched to the device from `from` until `to` (at most `max`
    /// of them): recording only, it changes nothing in the run.
    pub fn sample_dispatches(&mut self, from: Instant, to: Instant, max: usize) {
        self.dispatch_sample = Some(DispatchSample { from, to, max, points: Vec::new() });
    }

    /// What [`Sim::sample_dispatches`] kept, in dispatch order.
    pub fn take_dispatches(&mut self) -> Vec<Dispatched> {
        self.dispatch_sample.as_mut().map(|s| std::mem::take(&mut s.points)).unwrap_or_default()
    }

    /// What the programs that have not finished are waiting for, counted by kind
    /// ("3 tasks: 2 for a request slot, 1 in fsync"): the message of a run that
    /// `--max-sim-time` stopped.
    pub fn waiting(&self) -> String {
        let mut kinds: Vec<(&'static str, usize)> = Vec::new();
        let mut n = 0;
        for (i, task) in self.tasks.iter().enumerate() {
            // The programs, not the kernel's daemons (always there, mostly asleep).
            let t = TaskId(i as u32);
            if self.pdflush.contains(&t) || self.kswapd == Some(t) || self.kjournald() == Some(t) {
                continue;
            }
            let what = match &task.state {
                State::Exited => continue,
                s => state_name(s),
            };
            n += 1;
            match kinds.iter_mut().find(|(k, _)| *k == what) {
                Some(e) => e.1 += 1,
                None => kinds.push((what, 1)),
            }
        }
        let parts: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
        // kjournald, when it is not asleep: fsyncs wait for it.
        let kj = self
            .kjournald()
            .map(|t| &self.tasks[t.0 as usize].state)
            .filter(|s| !matches!(s, State::Blocked(Block::Sleep { .. })))
            .map(|s| format!("; kjournald {}", state_name(s)))
            .unwrap_or_default();
        format!(
            "{n} task{} not done: {}{kj}; {} request{} on the device",
            if n == 1 { "" } else { "s" },
            parts.join(", "),
            self.device_inflight,
            if self.device_inflight == 1 { "" } else { "s" },
        )
    }
    pub(super) fn take_sample(&mut self) {
        let sec = self.now.as_nanos() / 1_000_000_000;
        let mut runnable = 0;
        let mut blocked = 0;
        let kj = self.kjournald();
        for (i, task) in self.tasks.iter().enumerate() {
            // The kernel's writeback daemons are left out (kswapd is counted).
            if task.pdflush || kj == Some(TaskId(i as u32)) {
                continue;
            }
            match &task.state {
                State::Runnable | State::Running | State::Burning | State::Submitting => runnable += 1,
                State::Blocked(
                    Block::Page(_)
                    | Block::Io
                    | Block::Slot(_)
                    | Block::Fsync(_)
                    | Block::Congestion { .. }
                    | Block::Aio { .. }
                    | Block::Commit { .. },
                ) => blocked += 1,
                _ => {}
            }
        }
        let busy = self.cpu_busy_sample.min(Duration::from_secs(1) * self.cfg.cpu.cpus);
        let total = Duration::from_secs(1) * self.cfg.cpu.cpus;
        let pct = |d: Duration| (d.as_nanos() * 100 / total.as_nanos().max(1)) as u32;
        let sy = pct(self.cpu_sys_sample.min(busy));
        let us = pct(busy).saturating_sub(sy);
        let idle = 100u32.saturating_sub(us + sy);
        let wa = if blocked > 0 { idle } else { 0 };
        let line = VmstatLine {
            second: sec,
            r: runnable,
            b: blocked,
            free_kb: self.cache.free() * 4,
            cache_kb: self.cache.used() * 4,
            dirty_kb: self.cache.nr_dirty * 4,
            bi: self.sample.bi / 1024,
            bo: self.sample.bo / 1024,
            us,
            sy,
            id: idle - wa,
            wa,
        };
        self.stats.vmstat.push(line);
        self.sample = VmstatLine::default();
        self.cpu_busy_sample = Duration::ZERO;
        self.cpu_sys_sample = Duration::ZERO;
        self.engine.schedule(self.now + Duration::from_secs(1), Ev::Sample);
    }
    pub(super) fn done(&self) -> bool {
        self.stopped
            || (!self.watched.is_empty()
                && self.watched.iter().all(|&t| self.tasks[t.0 as usize].state == State::Exited))
    }
}

/// What a task in `state` is doing, for [`Sim::waiting`].
fn state_name(state: &State) -> &'static str {
    match state {
        State::Exited => "exited",
        State::Runnable | State::Running | State::Burning => "running or runnable",
        State::Submitting => "submitting a request",
        State::Blocked(b) => match b {
            Block::Page(_) => "on a page being read or written",
            Block::Slot(_) => "for a request slot",
            Block::Io => "for their own I/O to complete",
            Block::Fsync(_) => "in fsync",
            Block::Congestion { .. } => "in blk_congestion_wait",
            Block::Sleep { .. } => "sleeping",
            Block::Counter { .. } => "for other tasks (a barrier)",
            Block::Exit(_) => "for a child to exit",
            Block::Memory { .. } => "for free memory",
            Block::Commit { .. } => "for a journal commit",
            Block::Aio { .. } => "for asynchronous I/O",
        },
    }
}
