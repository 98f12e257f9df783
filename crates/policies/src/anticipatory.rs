//! anticipatory (AS) — Linux 2.6.20 `block/as-iosched.c`, HZ-exact jiffy arithmetic.
//!
//! Deadline-like sorted and FIFO queues per class — *sync* (reads and sync writes) and
//! *async* — with three additions:
//!
//! 1. **Batches.** Reads and writes are served in alternating batches: a read batch lasts
//!    `read_batch_expire` (its clock starts at the batch's first completion and only ticks
//!    while writes wait); a write batch lasts `write_batch_expire` or `write_batch_count`
//!    requests, the count autotuned at each write→read switch. A new batch starts only
//!    when every request of the old one has completed.
//! 2. **Anticipation.** During a read batch, after a sync request of process P is
//!    dispatched, the disk may be left idle for up to `antic_expire` (timed from the
//!    completion of P's request) waiting for P's next request — unless per-process
//!    statistics say waiting is useless (`can_break_anticipation`). State machine:
//!    `ANTIC_OFF → ANTIC_WAIT_REQ → ANTIC_WAIT_NEXT → ANTIC_FINISHED`.
//! 3. **Learning.** Per-process think time and seek distance (decaying averages, 1.0 =
//!    256), and queue-wide estimates for new processes (`exit_prob`, `exit_no_coop`,
//!    `new_ttime_mean`, `new_seek_mean`).
//!
//! Inside a class the order is a one-way elevator that allows a backward seek if it is
//! less than half as far as the forward choice (`as_choose_req`). The sync FIFO is checked
//! at most once per `read_expire` so that many expired requests cannot cause a seek storm.
//!
//! The 2.6.20 quirks are reproduced by default and each can be switched off (names
//! ending in `_quirk`); see `docs/schedulers/anticipatory.md`.
//!
//! Bound on waiting: a request is served within two FIFO-check intervals
//! (2 × `read_expire` / `write_expire`) plus one batch of the other class
//! (`read_batch_expire` / `write_batch_expire`, each overrun by at most one request and
//! one `antic_expire`) once it is at the head of its FIFO.

use crate::common::{Fifo, IoStats, SortTree, choose_by_position};
use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Dir, FastMap, Hz, IdMap, Instant, IoPrio, MayQueue, MergeKind, Owner, ReqId, Request, Scheduler,
    Spec, Status,
};

const SYNC: usize = 1;
const ASYNC: usize = 0;
/// Maximum distance (sectors) the disk will go backward for a request.
const MAXBACK: u64 = 1024 * 1024;
const BACK_PENALTY: u64 = 2;

/// The kernel versions whose anticipation heuristics are available.
const VERSIONS: &[&str] = &["2.6.20", "2.6.12"];

/// `enum anticipation_status`.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum AnticStatus {
    /// Not anticipating (normal operation).
    Off,
    /// The anticipated process's last request has not completed yet (no timer).
    WaitReq,
    /// Its request completed; the timer runs until `antic_start + antic_expire`.
    WaitNext,
    /// A good request arrived or the wait timed out; the next dispatch must not anticipate.
    Finished,
}

impl AnticStatus {
    fn name(self) -> &'static str {
        match self {
            AnticStatus::Off => "ANTIC_OFF",
            AnticStatus::WaitReq => "ANTIC_WAIT_REQ",
            AnticStatus::WaitNext => "ANTIC_WAIT_NEXT",
            AnticStatus::Finished => "ANTIC_FINISHED",
        }
    }
    fn waiting(self) -> bool {
        matches!(self, AnticStatus::WaitReq | AnticStatus::WaitNext)
    }
}

/// `struct as_io_context`: per process, shared by everything the process does.
#[derive(Debug, Default)]
struct Aic {
    /// `AS_TASK_RUNNING`: has not exited.
    running: bool,
    /// `AS_TASK_IOSTARTED`: has queued at least one sync request.
    iostarted: bool,
    /// `AS_TASK_IORUNNING`: at least one sync request completed.
    iorunning: bool,
    nr_queued: u32,
    /// Requests on the dispatch list not yet started by the driver (QUIRK-AS-4).
    nr_dispatched: u32,
    last_end_request: u64,
    last_request_pos: u64,
    stats: IoStats,
    /// Requests of ours the scheduler still references (for forgetting exited processes).
    refs: u32,
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum RqState {
    Queued,
    Dispatched,
    /// Started by the driver (`AS_RQ_REMOVED`).
    Removed,
}

#[derive(Debug)]
struct AsRq {
    rq: Request,
    class: usize,
    /// The io_context the request is accounted to (can differ from `rq.owner` after a
    /// ≤2.6.18-style merge swap).
    ioc: Owner,
    fifo_time: u64,
    fifo_key: u64,
    state: RqState,
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "anticipatory",
    aliases: &["as"],
    follows: "Linux 2.6.20 block/as-iosched.c",
    summary: "deadline-like read/write batches plus anticipation of a process's next read",
    new: |hz| Box::new(Anticipatory::new(hz)),
    variants: &[],
    // At the head of the async FIFO (anticipatory.md, "Waiting bound"):
    // 2·write_expire + read_batch_expire + antic_expire + D·t, plus jiffy rounding.
    waiting_bound: |_| WaitBound::HeadMs(2 * 250 + 500 + 7 + 10 + 5),
};

#[derive(Debug)]
pub struct Anticipatory {
    hz: Hz,
    // Tunables (jiffies).
    fifo_expire: [u64; 2],
    batch_expire: [u64; 2],
    antic_expire: u64,
    /// 2.6.12-era heuristics (`version=2.6.12`).
    v2612: bool,
    close_req_ms_quirk: bool,
    front_merge_dir_quirk: bool,
    dispatched_until_activate_quirk: bool,
    initial_batch_async_quirk: bool,
    merge_swaps_ioc: bool,
    merge_stamps_ioc_quirk: bool,

    rqs: IdMap<AsRq>,
    sort: [SortTree; 2],
    fifo: [Fifo; 2],
    next_rq: [Option<ReqId>; 2],
    last_sector: [u64; 2],

    exit_prob: u64,
    exit_no_coop: u64,
    new_ttime_total: u64,
    new_ttime_mean: u64,
    new_seek_total: u64,
    new_seek_mean: u64,

    current_batch_expires: u64,
    last_check_fifo: [u64; 2],
    changed_batch: bool,
    new_batch: bool,
    batch_dir: usize,
    write_batch_count: i64,
    current_write_count: i64,
    write_batch_idled: bool,

    antic_status: AnticStatus,
    antic_start: u64,
    antic_timer: Option<u64>,
    /// The process being anticipated: owner of the last dispatched sync request.
    io_context: Option<Owner>,
    ioc_finished: bool,
    nr_dispatched: u32,

    aics: FastMap<Owner, Aic>,
}

impl Anticipatory {
    pub fn new(hz: Hz) -> Self {
        let h = hz.get() as u64;
        let batch_expire = [h / 8, h / 2];
        let mut s = Anticipatory {
            hz,
            fifo_expire: [h / 4, h / 8],
            batch_expire,
            antic_expire: if h / 150 > 0 { h / 150 } else { 1 },
            v2612: false,
            close_req_ms_quirk: true,
            front_merge_dir_quirk: true,
            dispatched_until_activate_quirk: true,
            initial_batch_async_quirk: true,
            merge_swaps_ioc: false,
            merge_stamps_ioc_quirk: true,
            rqs: IdMap::default(),
            sort: Default::default(),
            fifo: Default::default(),
            next_rq: [None; 2],
            last_sector: [0; 2],
            exit_prob: 0,
            exit_no_coop: 0,
            new_ttime_total: 0,
            new_ttime_mean: 0,
            new_seek_total: 0,
            new_seek_mean: 0,
            // The queue is initialised at jiffies 0.
            current_batch_expires: batch_expire[SYNC],
            last_check_fifo: [0; 2],
            changed_batch: false,
            new_batch: false,
            batch_dir: ASYNC,
            write_batch_count: ((batch_expire[ASYNC] / 10) as i64).max(2),
            current_write_count: 0,
            write_batch_idled: false,
            antic_status: AnticStatus::Off,
            antic_start: 0,
            antic_timer: None,
            io_context: None,
            ioc_finished: false,
            nr_dispatched: 0,
            aics: FastMap::default(),
        };
        s.batch_dir = ASYNC;
        s
    }

    fn class_of(rq: &Request) -> usize {
        if rq.is_sync() { SYNC } else { ASYNC }
    }

    fn aic(&mut self, owner: Owner) -> &mut Aic {
        self.aics.entry(owner).or_insert_with(|| Aic { running: true, ..Default::default() })
    }

    /// Forget an exited process nobody references any more.
    fn maybe_forget(&mut self, owner: Owner) {
        if self.io_context == Some(owner) {
            return;
        }
        if let Some(a) = self.aics.get(&owner)
            && !a.running
            && a.refs == 0
        {
            self.aics.remove(&owner);
        }
    }

    fn pos(&self, id: ReqId) -> (u64, ReqId) {
        (self.rqs[&id].rq.sector, id)
    }

    // ---------------------------------------------------------------------------------
    // Elevator order

    fn choose_req(&self, class: usize, a: Option<ReqId>, b: Option<ReqId>) -> Option<ReqId> {
        choose_by_position(
            a.map(|i| self.pos(i)),
            b.map(|i| self.pos(i)),
            self.last_sector[class],
            MAXBACK,
            BACK_PENALTY,
        )
        .map(|(_, i)| i)
    }

    /// `as_find_next_rq`: the better of the tree successor (wrapping to the first) and the
    /// predecessor of `id`, which is still in the tree.
    fn find_next_rq(&self, id: ReqId) -> Option<ReqId> {
        let r = &self.rqs[&id];
        let tree = &self.sort[r.class];
        let prev = tree.prev(r.rq.sector);
        let next = tree.next(r.rq.sector).or_else(|| tree.first().filter(|&f| f != id));
        self.choose_req(r.class, next, prev)
    }

    // ---------------------------------------------------------------------------------
    // Anticipation

    fn antic_expired(&self, now_j: u64) -> bool {
        now_j.abs_diff(self.antic_start) >= self.antic_expire
    }

    fn antic_waitnext(&mut self) {
        debug_assert!(matches!(self.antic_status, AnticStatus::Off | AnticStatus::WaitReq));
        self.antic_timer = Some(self.antic_start + self.antic_expire);
        self.antic_status = AnticStatus::WaitNext;
    }

    fn antic_waitreq(&mut self) {
        debug_assert_ne!(self.antic_status, AnticStatus::Finished);
        if self.antic_status == AnticStatus::Off {
            if self.io_context.is_none() || self.ioc_finished {
                self.antic_waitnext();
            } else {
                self.antic_status = AnticStatus::WaitReq;
            }
        }
    }

    /// `as_antic_stop`: end anticipation and kick the queue.
    fn antic_stop(&mut self, ctx: &mut Ctx) {
        if self.antic_status.waiting() {
            self.antic_timer = None;
            self.antic_status = AnticStatus::Finished;
            ctx.kick();
        }
    }

    fn update_thinktime(&mut self, owner: Owner, ttime: u64) {
        if self.aics[&owner].stats.ttime_samples == 0 {
            // A new process's first sample feeds the queue-wide estimate.
            self.new_ttime_total = (7 * self.new_ttime_total + 256 * ttime) / 8;
            self.new_ttime_mean = self.new_ttime_total / 256;
            self.exit_prob = (7 * self.exit_prob) / 8;
        }
        self.aics.get_mut(&owner).unwrap().stats.add_thinktime(ttime);
    }

    fn update_seekdist(&mut self, owner: Owner, sdist: u64) {
        if self.aics[&owner].stats.seek_samples == 0 {
            self.new_seek_total = (7 * self.new_seek_total + 256 * sdist) / 8;
            self.new_seek_mean = self.new_seek_total / 256;
        }
        self.aics.get_mut(&owner).unwrap().stats.add_seek(sdist);
    }

    /// `as_update_iohist`: sample think time and seek distance of sync requests.
    fn update_iohist(&mut self, owner: Owner, rq: &Request, now_j: u64) {
        if !rq.is_sync() {
            return;
        }
        let max_thinktime = self.hz.get() as u64 / 50;
        let (started, sample_tt, last_pos) = {
            let a = self.aic(owner);
            let in_flight = a.nr_queued + a.nr_dispatched;
            let tt = if a.iorunning && in_flight == 0 {
                Some(now_j.saturating_sub(a.last_end_request).min(max_thinktime - 1))
            } else {
                None
            };
            (a.iorunning || a.iostarted, tt.unwrap_or(0), a.last_request_pos)
        };
        if started {
            self.update_thinktime(owner, sample_tt);
            self.update_seekdist(owner, rq.sector.abs_diff(last_pos));
        }
        let a = self.aic(owner);
        a.last_request_pos = rq.end();
        a.iostarted = true;
    }

    /// 2.6.12 `as_close_req`: a window of 64 sectors, doubling per millisecond waited
    /// after the first, `[last - delta/2, last + delta]`; no seek-mean clause.
    fn close_req_2612(&self, rq: &Request, now_j: u64) -> bool {
        let last = self.last_sector[self.batch_dir];
        let next = rq.sector;
        let delay = if self.antic_status == AnticStatus::Off || !self.ioc_finished {
            0
        } else {
            now_j.saturating_sub(self.antic_start) * 1000 / self.hz.get() as u64
        };
        let delta: u64 = if delay <= 1 {
            64
        } else if delay <= 20 && delay <= self.antic_expire {
            64 << (delay - 1)
        } else {
            return true;
        };
        // sector_t arithmetic: `last - delta/2` wraps near sector 0, as in the kernel.
        last.wrapping_sub(delta >> 1) <= next && next <= last + delta
    }

    /// 2.6.12 `as_can_break_anticipation`, in that kernel's rule order.
    fn can_break_2612(&mut self, rq: Option<&Request>, now_j: u64) -> bool {
        let ioc = self.io_context.expect("can_break_anticipation without an anticipated process");
        if let Some(r) = rq
            && self.rqs.get(&r.id).map(|x| x.ioc).unwrap_or(r.owner) == ioc
        {
            return true;
        }
        if self.ioc_finished && self.antic_expired(now_j) {
            return true;
        }
        let Some(a) = self.aics.get(&ioc) else { return false };
        if !a.running {
            if a.stats.ttime_samples == 0 {
                self.exit_prob = (7 * self.exit_prob + 256) / 8;
            }
            return true;
        }
        if a.nr_queued > 0 || a.nr_dispatched > 0 {
            return true;
        }
        let (samples, ttime_mean, seek_samples, seek_mean) =
            (a.stats.ttime_samples, a.stats.ttime_mean, a.stats.seek_samples, a.stats.seek_mean);
        if let Some(r) = rq
            && r.is_sync()
            && self.close_req_2612(r, now_j)
        {
            // A close request from a cooperating process resets our think time.
            self.aics.get_mut(&ioc).unwrap().last_end_request = now_j;
            return true;
        }
        if samples == 0 {
            if self.new_ttime_mean > self.antic_expire || self.exit_prob > 128 {
                return true;
            }
        } else if ttime_mean > self.antic_expire {
            return true;
        }
        let Some(r) = rq else { return false };
        let s = self.last_sector[SYNC].abs_diff(r.sector);
        let mean = if seek_samples == 0 { self.new_seek_mean } else { seek_mean };
        mean > s
    }

    /// `as_close_req`: is `rq` near where the head is, given how long we have waited?
    fn close_req(&self, owner: Owner, rq: &Request, now_j: u64) -> bool {
        let last = self.last_sector[self.batch_dir];
        let next = rq.sector;
        let waited_j = if self.antic_status == AnticStatus::Off || !self.ioc_finished {
            0
        } else {
            now_j.saturating_sub(self.antic_start)
        };
        let (delay, limit) = if self.close_req_ms_quirk {
            // Milliseconds, compared below with antic_expire in jiffies (QUIRK-AS-1).
            (waited_j * 1000 / self.hz.get() as u64, 20)
        } else {
            (waited_j, 20 * self.hz.get() as u64 / 1000)
        };
        let delta: u64 = if delay == 0 {
            8192
        } else if delay <= limit && delay <= self.antic_expire {
            8192 << delay
        } else {
            return true;
        };
        if last <= next + (delta >> 1) && next <= last + delta {
            return true;
        }
        let s = last.abs_diff(next);
        let a = &self.aics[&owner];
        let mean = if a.stats.seek_samples == 0 { self.new_seek_mean } else { a.stats.seek_mean };
        mean > s
    }

    /// `as_can_break_anticipation`, in the kernel's rule order.
    fn can_break_anticipation(&mut self, rq: Option<&Request>, now_j: u64) -> bool {
        if self.v2612 {
            return self.can_break_2612(rq, now_j);
        }
        let ioc = self.io_context.expect("can_break_anticipation without an anticipated process");
        if let Some(r) = rq
            && self.rqs.get(&r.id).map(|x| x.ioc).unwrap_or(r.owner) == ioc
        {
            return true; // request from the same process
        }
        if self.ioc_finished && self.antic_expired(now_j) {
            return true; // the timer just hasn't run yet
        }
        let Some(a) = self.aics.get(&ioc) else {
            return false;
        };
        if a.nr_queued > 0 || a.nr_dispatched > 0 {
            return true; // process has more requests queued or dispatched
        }
        let (running, samples, ttime_mean) = (a.running, a.stats.ttime_samples, a.stats.ttime_mean);
        if let Some(r) = rq
            && r.is_sync()
            && self.close_req(ioc, r, now_j)
        {
            // A close request from a cooperating process: it updates our history.
            if !running {
                if samples == 0 {
                    self.exit_prob = (7 * self.exit_prob + 256) / 8;
                }
                self.exit_no_coop = (7 * self.exit_no_coop) / 8;
            }
            let r = *r;
            self.update_iohist(ioc, &r, now_j);
            return true;
        }
        if !running {
            // The process anticipated on has exited.
            if samples == 0 {
                self.exit_prob = (7 * self.exit_prob + 256) / 8;
            }
            if self.exit_no_coop > 128 {
                return true;
            }
        }
        if samples == 0 {
            if self.new_ttime_mean > self.antic_expire {
                return true;
            }
            if self.exit_prob * self.exit_no_coop > 128 * 256 {
                return true;
            }
        } else if ttime_mean > self.antic_expire {
            return true; // the process thinks too long between requests
        }
        false
    }

    /// `as_can_anticipate`: should we wait instead of dispatching `rq`?
    fn can_anticipate(&mut self, rq: Option<ReqId>, now_j: u64) -> bool {
        if self.io_context.is_none() {
            return false; // last request dispatched was async
        }
        if self.antic_status == AnticStatus::Finished {
            return false;
        }
        let r = rq.map(|i| self.rqs[&i].rq);
        !self.can_break_anticipation(r.as_ref(), now_j)
    }

    // ---------------------------------------------------------------------------------
    // Batches

    fn update_write_batch(&mut self, now_j: u64) {
        let batch = self.batch_expire[ASYNC] as i64;
        let write_time = ((now_j as i64) - (self.current_batch_expires as i64) + batch).max(0);
        if write_time > batch && !self.write_batch_idled {
            if write_time > batch * 3 {
                self.write_batch_count /= 2;
            } else {
                self.write_batch_count -= 1;
            }
        } else if write_time < batch && self.current_write_count == 0 {
            if batch > write_time * 3 {
                self.write_batch_count *= 2;
            } else {
                self.write_batch_count += 1;
            }
        }
        if self.write_batch_count < 1 {
            self.write_batch_count = 1;
        }
    }

    /// `as_fifo_expired`, rate limited to one check per `fifo_expire` interval.
    fn fifo_expired(&mut self, class: usize, now_j: u64) -> bool {
        if now_j.abs_diff(self.last_check_fifo[class]) < self.fifo_expire[class] {
            return false;
        }
        self.last_check_fifo[class] = now_j;
        match self.fifo[class].front() {
            None => false,
            Some(id) => now_j > self.rqs[&id].fifo_time,
        }
    }

    fn batch_expired(&self, now_j: u64) -> bool {
        if self.changed_batch || self.new_batch {
            return false;
        }
        if self.batch_dir == SYNC {
            now_j > self.current_batch_expires
        } else {
            now_j > self.current_batch_expires || self.current_write_count == 0
        }
    }

    // ---------------------------------------------------------------------------------
    // Queue manipulation

    /// `as_add_rq_rb` with the alias rule: an existing request at the same sector is
    /// dispatched at once.
    fn add_rq_rb(&mut self, id: ReqId, ctx: &mut Ctx) {
        let (sector, class) = (self.rqs[&id].rq.sector, self.rqs[&id].class);
        while let Err(alias) = self.sort[class].add(sector, id) {
            self.move_to_dispatch(alias, ctx);
            self.antic_stop(ctx);
        }
    }

    /// `as_remove_queued_request`.
    fn remove_queued(&mut self, id: ReqId) {
        let (class, ioc, sector, key) = {
            let r = &self.rqs[&id];
            debug_assert_eq!(r.state, RqState::Queued);
            (r.class, r.ioc, r.rq.sector, r.fifo_key)
        };
        if let Some(a) = self.aics.get_mut(&ioc) {
            a.nr_queued -= 1;
        }
        if self.next_rq[class] == Some(id) {
            self.next_rq[class] = self.find_next_rq(id);
        }
        self.fifo[class].remove(key);
        self.sort[class].remove(sector, id);
    }

    /// `as_move_to_dispatch`.
    fn move_to_dispatch(&mut self, id: ReqId, ctx: &mut Ctx) {
        self.antic_stop(ctx);
        self.antic_status = AnticStatus::Off;
        let (class, end, ioc) = {
            let r = &self.rqs[&id];
            (r.class, r.rq.end(), r.ioc)
        };
        self.last_sector[class] = end;
        if class == SYNC {
            let old = self.io_context.replace(ioc);
            if let Some(o) = old
                && o != ioc
            {
                self.maybe_forget(o);
            }
        } else {
            if let Some(o) = self.io_context.take() {
                self.maybe_forget(o);
            }
            if self.current_write_count != 0 {
                self.current_write_count -= 1;
            }
        }
        self.ioc_finished = false;
        self.next_rq[class] = self.find_next_rq(id);
        self.remove_queued(id);
        let r = self.rqs.get_mut(&id).unwrap();
        r.state = RqState::Dispatched;
        let rq = r.rq;
        ctx.dispatch_sort(rq);
        if let Some(a) = self.aics.get_mut(&ioc) {
            a.nr_dispatched += 1;
        }
        self.nr_dispatched += 1;
    }

    /// Release a request's io_context reference (`as_put_io_context`).
    fn put_io_context(&mut self, ioc: Owner, sync: bool, now_j: u64) {
        if let Some(a) = self.aics.get_mut(&ioc) {
            if sync {
                a.iorunning = true;
                a.last_end_request = now_j;
            }
            a.refs -= 1;
        }
        self.maybe_forget(ioc);
    }

    fn antic_timer_fire(&mut self, ctx: &mut Ctx) {
        if !self.antic_status.waiting() {
            return;
        }
        self.antic_status = AnticStatus::Finished;
        self.antic_timer = None;
        ctx.kick();
        let ioc = self.io_context.expect("anticipating without a process");
        if let Some(a) = self.aics.get(&ioc) {
            let (samples, running) = (a.stats.ttime_samples, a.running);
            if samples == 0 {
                // The process anticipated on has exited or timed out.
                self.exit_prob = (7 * self.exit_prob + 256) / 8;
            }
            if !running && !self.v2612 {
                // Not "saved" by a cooperating request.
                self.exit_no_coop = (7 * self.exit_no_coop + 256) / 8;
            }
        }
    }

    fn idle_decision(&self) -> Decision {
        Decision::Idle { until: self.antic_timer.map(|j| self.hz.instant(j)) }
    }
}

impl Scheduler for Anticipatory {
    fn name(&self) -> &'static str {
        "anticipatory"
    }
    iosched_core::tunables! {
        Spec::choice(
            "version",
            VERSIONS,
            "anticipation heuristics of 2.6.20, or of 2.6.12 (= 2.5.75–2.6.17: 64-sector close window, older rule order; the closest recoverable relative of the 2003 -mm AS)",
        )
            => get |s| s.v2612 as i64,
            set |s, v| s.v2612 = v == 1;
        Spec::millis(
            "read_expire",
            0,
            i32::MAX as i64,
            "FIFO deadline of sync requests; also the minimum interval between sync FIFO checks",
        )
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[SYNC]) as i64,
            set |s, v| s.fifo_expire[SYNC] = s.hz.msecs_to_jiffies(v.max(0) as u64);
        Spec::millis(
            "write_expire",
            0,
            i32::MAX as i64,
            "FIFO deadline of async requests; also the minimum interval between async FIFO checks",
        )
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[ASYNC]) as i64,
            set |s, v| s.fifo_expire[ASYNC] = s.hz.msecs_to_jiffies(v.max(0) as u64);
        Spec::millis("read_batch_expire", 0, i32::MAX as i64, "length of a read batch while writes are waiting")
            => get |s| s.hz.jiffies_to_msecs(s.batch_expire[SYNC]) as i64,
            set |s, v| s.batch_expire[SYNC] = s.hz.msecs_to_jiffies(v.max(0) as u64);
        Spec::millis(
            "write_batch_expire",
            0,
            i32::MAX as i64,
            "target length of a write batch (the write batch count is autotuned to it)",
        )
            => get |s| s.hz.jiffies_to_msecs(s.batch_expire[ASYNC]) as i64,
            set |s, v| s.batch_expire[ASYNC] = s.hz.msecs_to_jiffies(v.max(0) as u64);
        Spec::millis(
            "antic_expire",
            0,
            i32::MAX as i64,
            "longest wait for the anticipated process's next request (0 = never anticipate)",
        )
            => get |s| s.hz.jiffies_to_msecs(s.antic_expire) as i64,
            set |s, v| s.antic_expire = s.hz.msecs_to_jiffies(v.max(0) as u64);
        Spec::boolean(
            "close_req_ms_quirk",
            "QUIRK-AS-1 (2.6.20): as_close_req compares milliseconds waited with antic_expire in jiffies; 0 = later kernels' jiffies",
        )
            => get |s| s.close_req_ms_quirk as i64,
            set |s, v| s.close_req_ms_quirk = v != 0;
        Spec::boolean(
            "front_merge_dir_quirk",
            "QUIRK-AS-2 (2.6.20): front-merge lookup indexes the sync/async trees by data direction, so reads never front-merge",
        )
            => get |s| s.front_merge_dir_quirk as i64,
            set |s, v| s.front_merge_dir_quirk = v != 0;
        Spec::boolean(
            "dispatched_until_activate_quirk",
            "QUIRK-AS-4 (2.6.20): a process's 'dispatched' count drops when the driver starts a request, not when it completes",
        )
            => get |s| s.dispatched_until_activate_quirk as i64,
            set |s, v| s.dispatched_until_activate_quirk = v != 0;
        Spec::boolean(
            "initial_batch_async_quirk",
            "QUIRK-AS-5 (2.6.20): the first batch direction is async (zeroed struct)",
        )
            => get |s| s.initial_batch_async_quirk as i64,
            set |s, v| {
                s.initial_batch_async_quirk = v != 0;
                // Only meaningful before the first dispatch, like a boot-time choice.
                if s.nr_dispatched == 0 && s.rqs.is_empty() {
                    s.batch_dir = if v != 0 { ASYNC } else { SYNC };
                }
            };
        Spec::boolean(
            "merge_swaps_ioc",
            "QUIRK-AS-6: 1 = 2.6.18 and earlier, where a request merge swapped io_contexts; 2.6.20's swap has no effect (0)",
        )
            => get |s| s.merge_swaps_ioc as i64,
            set |s, v| s.merge_swaps_ioc = v != 0;
        Spec::boolean(
            "merge_stamps_ioc_quirk",
            "QUIRK-AS-7 (2.6.20): a sync request merged away stamps its owner's last completion time as if it had completed",
        )
            => get |s| s.merge_stamps_ioc_quirk as i64,
            set |s, v| s.merge_stamps_ioc_quirk = v != 0;
    }

    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let class = Self::class_of(rq);
        let owner = rq.owner;
        self.update_iohist(owner, rq, now_j);
        let a = self.aic(owner);
        a.nr_queued += 1;
        a.refs += 1;
        self.rqs.insert(
            rq.id,
            AsRq {
                rq: *rq,
                class,
                ioc: owner,
                fifo_time: now_j + self.fifo_expire[class],
                fifo_key: 0,
                state: RqState::Queued,
            },
        );
        self.add_rq_rb(rq.id, ctx);
        let key = self.fifo[class].push_back(rq.id);
        self.rqs.get_mut(&rq.id).unwrap().fifo_key = key;
        // as_update_rq: keep next_rq current; maybe this is what we were waiting for.
        self.next_rq[class] = self.choose_req(class, Some(rq.id), self.next_rq[class]);
        if self.antic_status.waiting() && self.can_break_anticipation(Some(rq), now_j) {
            self.antic_stop(ctx);
        }
    }

    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        let tree = if self.front_merge_dir_quirk {
            // sort_list[bio_data_dir(bio)]: READ = 0 = the async tree (QUIRK-AS-2).
            match bio.dir() {
                Dir::Read => ASYNC,
                Dir::Write => SYNC,
            }
        } else {
            Self::class_of(bio)
        };
        self.sort[tree].find(bio.end())
    }

    fn merged(&mut self, _now: Instant, rq: &Request, kind: MergeKind, ctx: &mut Ctx) {
        let (old_sector, class) = (self.rqs[&rq.id].rq.sector, self.rqs[&rq.id].class);
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        if kind == MergeKind::Front {
            // Reposition; next_rq may now be suboptimal, which the kernel accepts.
            self.sort[class].remove(old_sector, rq.id);
            self.add_rq_rb(rq.id, ctx);
        }
    }

    fn merge_requests(&mut self, now: Instant, rq: &Request, next: &Request) {
        let now_j = self.hz.jiffies(now);
        let class = self.rqs[&rq.id].class;
        let (n_time, n_key, n_ioc) = {
            let n = &self.rqs[&next.id];
            (n.fifo_time, n.fifo_key, n.ioc)
        };
        let mut next_ioc = n_ioc;
        if n_time < self.rqs[&rq.id].fifo_time {
            let r = self.rqs.get_mut(&rq.id).unwrap();
            let old_key = r.fifo_key;
            r.fifo_time = n_time;
            r.fifo_key = n_key;
            self.fifo[class].replace(n_key, rq.id);
            self.fifo[class].remove(old_key);
            self.rqs.get_mut(&next.id).unwrap().fifo_key = u64::MAX;
            if self.merge_swaps_ioc {
                // ≤ 2.6.18: the survivor is attributed to next's process, and next (about
                // to be removed) carries ours.
                let r = self.rqs.get_mut(&rq.id).unwrap();
                let mine = r.ioc;
                if mine != n_ioc {
                    r.ioc = n_ioc;
                    self.rqs.get_mut(&next.id).unwrap().ioc = mine;
                    next_ioc = mine;
                }
            }
        }
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        self.remove_queued(next.id);
        let n = self.rqs.remove(&next.id).unwrap();
        let stamp = n.rq.is_sync() && self.merge_stamps_ioc_quirk;
        self.put_io_context(next_ioc, stamp, now_j);
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let r = &self.rqs[&rq.id];
        self.sort[r.class].prev(r.rq.sector)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let r = &self.rqs[&rq.id];
        self.sort[r.class].next(r.rq.sector)
    }

    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let now_j = self.hz.jiffies(now);
        let reads = !self.fifo[SYNC].is_empty();
        let writes = !self.fifo[ASYNC].is_empty();

        // Signal that the write batch was uncontended, so we can't time it.
        if self.batch_dir == ASYNC && !reads && (self.current_write_count == 0 || !writes) {
            self.write_batch_idled = true;
        }
        if !(reads || writes) {
            return Decision::Empty;
        }
        if self.antic_status.waiting() {
            return self.idle_decision();
        }
        if self.changed_batch {
            return Decision::Idle { until: None };
        }

        let mut rq: Option<ReqId>;
        let mut fifo_expired_now = false;
        'select: {
            if !(reads && writes && self.batch_expired(now_j)) {
                // The batch is still running, or only one class has requests.
                rq = self.next_rq[self.batch_dir];
                if self.batch_dir == SYNC && self.antic_expire != 0 {
                    if self.fifo_expired(SYNC, now_j) {
                        fifo_expired_now = true;
                        break 'select;
                    }
                    if self.can_anticipate(rq, now_j) {
                        self.antic_waitreq();
                        return self.idle_decision();
                    }
                }
                if rq.is_some() {
                    if reads && !writes {
                        self.current_batch_expires = now_j + self.batch_expire[SYNC];
                    }
                    break 'select;
                }
            }
            // Not running a batch: choose the direction.
            if reads && !(writes && self.batch_dir == SYNC) {
                if self.batch_dir == ASYNC {
                    debug_assert!(!self.new_batch);
                    self.changed_batch = true;
                }
                self.batch_dir = SYNC;
                rq = self.fifo[SYNC].front(); // a read batch starts at the oldest read
                self.last_check_fifo[SYNC] = now_j;
                break 'select;
            }
            // dispatch_writes: (last batch was a read, or there are no reads)
            debug_assert!(writes);
            if self.batch_dir == SYNC {
                self.changed_batch = true;
                // new_batch may be set when the queue ran out of reads.
                self.new_batch = false;
            }
            self.batch_dir = ASYNC;
            self.current_write_count = self.write_batch_count;
            self.write_batch_idled = false;
            rq = self.next_rq[ASYNC];
        }

        // dispatch_request: if a request has expired, service it.
        if fifo_expired_now || self.fifo_expired(self.batch_dir, now_j) {
            rq = self.fifo[self.batch_dir].front();
        }
        if self.changed_batch {
            debug_assert!(!self.new_batch);
            if self.nr_dispatched > 0 {
                return Decision::Idle { until: None }; // wait for the old batch to drain
            }
            if self.batch_dir == ASYNC {
                self.current_batch_expires = now_j + self.batch_expire[ASYNC];
            } else {
                self.new_batch = true; // the read batch clock starts at its first completion
            }
            self.changed_batch = false;
        }
        let id = rq.expect("AS chose no request although its class has some");
        self.move_to_dispatch(id, ctx);
        Decision::Dispatch
    }

    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        self.batch_dir = SYNC;
        self.changed_batch = false;
        self.new_batch = false;
        while let Some(id) = self.next_rq[SYNC] {
            self.move_to_dispatch(id, ctx);
        }
        self.last_check_fifo[SYNC] = now_j;
        while let Some(id) = self.next_rq[ASYNC] {
            self.move_to_dispatch(id, ctx);
        }
        self.last_check_fifo[ASYNC] = now_j;
    }

    fn activate(&mut self, _now: Instant, rq: &Request) {
        let r = self.rqs.get_mut(&rq.id).expect("activate of unknown request");
        debug_assert_eq!(r.state, RqState::Dispatched);
        r.state = RqState::Removed;
        let ioc = r.ioc;
        if self.dispatched_until_activate_quirk
            && let Some(a) = self.aics.get_mut(&ioc)
        {
            a.nr_dispatched -= 1;
        }
    }

    fn deactivate(&mut self, _now: Instant, rq: &Request) {
        let r = self.rqs.get_mut(&rq.id).expect("deactivate of unknown request");
        r.state = RqState::Dispatched;
        let ioc = r.ioc;
        if self.dispatched_until_activate_quirk
            && let Some(a) = self.aics.get_mut(&ioc)
        {
            a.nr_dispatched += 1;
        }
    }

    fn completed(&mut self, now: Instant, rq: &Request, _status: Status, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let r = self.rqs.remove(&rq.id).expect("completion of a request AS does not know");
        debug_assert_eq!(r.state, RqState::Removed);
        if !self.dispatched_until_activate_quirk
            && let Some(a) = self.aics.get_mut(&r.ioc)
        {
            a.nr_dispatched -= 1;
        }
        if self.changed_batch && self.nr_dispatched == 1 {
            // The last request of the old batch: start the new one.
            ctx.kick();
            self.changed_batch = false;
            if self.batch_dir == SYNC {
                self.new_batch = true;
            }
        }
        self.nr_dispatched -= 1;
        // Start counting the batch from when a request of that class is actually serviced.
        if self.new_batch && self.batch_dir == r.class {
            self.update_write_batch(now_j);
            self.current_batch_expires = now_j + self.batch_expire[SYNC];
            self.new_batch = false;
        }
        if self.io_context == Some(r.ioc) {
            self.antic_start = now_j;
            self.ioc_finished = true;
            if self.antic_status == AnticStatus::WaitReq {
                self.antic_waitnext();
            }
        }
        self.put_io_context(r.ioc, r.class == SYNC, now_j);
    }

    fn may_queue(&mut self, _now: Instant, owner: Owner, _prio: IoPrio, _dir: Dir, _sync: bool) -> MayQueue {
        if self.antic_status.waiting() && self.io_context == Some(owner) { MayQueue::Must } else { MayQueue::May }
    }

    fn owner_exited(&mut self, _now: Instant, owner: Owner, _ctx: &mut Ctx) {
        if let Some(a) = self.aics.get_mut(&owner) {
            a.running = false;
        }
        self.maybe_forget(owner);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.antic_timer.map(|j| self.hz.instant(j))
    }

    fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx) {
        if let Some(t) = self.antic_timer
            && self.hz.jiffies(now) >= t
        {
            self.antic_timer_fire(ctx);
        }
    }

    fn is_empty(&self) -> bool {
        self.fifo[SYNC].is_empty() && self.fifo[ASYNC].is_empty()
    }
    fn queued(&self) -> usize {
        self.fifo[SYNC].len() + self.fifo[ASYNC].len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let dir = |d: usize| if d == SYNC { "sync" } else { "async" };
        let mut v = vec![
            ("antic_status".into(), self.antic_status.name().into()),
            ("batch_dir".into(), dir(self.batch_dir).into()),
            ("changed_batch".into(), (self.changed_batch as u8).to_string()),
            ("new_batch".into(), (self.new_batch as u8).to_string()),
            ("current_batch_expires".into(), self.current_batch_expires.to_string()),
            ("write_batch_count".into(), self.write_batch_count.to_string()),
            ("current_write_count".into(), self.current_write_count.to_string()),
            ("nr_dispatched".into(), self.nr_dispatched.to_string()),
            ("io_context".into(), self.io_context.map(|o| o.to_string()).unwrap_or_else(|| "-".into())),
            ("ioc_finished".into(), (self.ioc_finished as u8).to_string()),
            ("antic_start".into(), self.antic_start.to_string()),
            ("exit_prob".into(), self.exit_prob.to_string()),
            ("exit_no_coop".into(), self.exit_no_coop.to_string()),
            ("new_ttime_mean".into(), self.new_ttime_mean.to_string()),
            ("new_seek_mean".into(), self.new_seek_mean.to_string()),
        ];
        let mut owners: Vec<_> = self.aics.keys().copied().collect();
        owners.sort();
        for o in owners {
            let a = &self.aics[&o];
            v.push((
                format!("aic.{o}"),
                format!(
                    "ttime_mean={} ttime_samples={} seek_mean={} seek_samples={} queued={} dispatched={}{}",
                    a.stats.ttime_mean,
                    a.stats.ttime_samples,
                    a.stats.seek_mean,
                    a.stats.seek_samples,
                    a.nr_queued,
                    a.nr_dispatched,
                    if a.running { "" } else { " exited" }
                ),
            ));
        }
        v
    }
}
