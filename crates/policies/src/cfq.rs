//! cfq — Completely Fair Queueing as of Linux 2.6.20 (`block/cfq-iosched.c`, the
//! time-sliced "CFQ v3" with I/O priorities, round-robin *lists*, HZ-exact jiffies).
//!
//! Every process gets a queue for its sync requests (reads and sync writes); async
//! writes go to a queue shared per priority. Queues are served one at a time in time
//! slices (`slice_sync` 100 ms / `slice_async` 40 ms at level 4, scaled by priority
//! level), at most `quantum` requests per dispatch round; an async slice also ends after
//! `max_rq` requests. When the active sync queue runs empty inside its slice, CFQ idles up
//! to `slice_idle` (8 ms; 2 ms for seeky processes) for its next request, unless the
//! process's think time exceeds `slice_idle` (its "idle window" is off). Classes: RT
//! queues are always served first, BE by a priority "staircase", IDLE only when nothing
//! else is queued and the disk has been quiet for 100 ms. Inside a queue the order is the
//! AS elevator with limited backward seeks; a FIFO check (`fifo_expire_*`) serves at most
//! one expired request per slice.
//!
//! The 2007 change "cfq-iosched: defer slice activation to first request being active"
//! (commit 44f7c16065c8, reference §5.11) is the tunable `defer_slice_start` (0 = 2.6.20).
//! The 2.6.20 quirks are reproduced by default; each has a `_quirk` toggle.
//!
//! Bound on waiting: a queued request of a BE queue at level 4 is served within one
//! round of the other busy queues' slices at its level and above (each at most its slice
//! plus one `slice_idle` and one dispatch round), plus its own queue's FIFO expiry; RT
//! queues can postpone BE and IDLE queues indefinitely, by design.

use crate::common::{Fifo, IoStats, SortTree, choose_sync_meta_position};
use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Dir, FastMap, Hz, IdMap, Instant, IoClass, IoPrio, MayQueue, MergeKind, Owner, ReqId, Request,
    Scheduler, Slab, Spec, Status,
};

const ASYNC: usize = 0;
const SYNC: usize = 1;
const UINT_MAX: i64 = u32::MAX as i64;

type QId = u32;
const NIL: QId = u32::MAX;

/// The round-robin lists a queue can be on.
const LIST_NONE: u8 = u8::MAX;
const LIST_CUR: u8 = 8;
const LIST_BUSY: u8 = 9;
const LIST_IDLE: u8 = 10;
const NLISTS: usize = 11;

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
enum QKey {
    /// `CFQ_KEY_ASYNC`: the shared async queue(s).
    Async,
    /// A process's sync queue (the kernel keys it by pid).
    Sync(Owner),
}

/// `struct cfq_queue`.
#[derive(Debug)]
struct Cfqq {
    key: QKey,
    refs: u32,
    list: u8,
    prev: QId,
    next: QId,
    sort: SortTree,
    next_rq: Option<ReqId>,
    queued: [u32; 2],
    meta_pending: u32,
    fifo: Fifo,
    slice_start: u64,
    slice_end: u64,
    slice_left: u64,
    /// 2007 change: the slice has not started (no request of it completed yet).
    slice_new: bool,
    on_dispatch: [u32; 2],
    ioprio: u8,
    org_ioprio: u8,
    class: IoClass,
    org_class: IoClass,
    on_rr: bool,
    /// Part of the leading run of `queue_new` queues of its list (see `run_last`).
    in_run: bool,
    wait_request: bool,
    must_alloc_slice: bool,
    must_dispatch: bool,
    fifo_expire: bool,
    idle_window: bool,
    queue_new: bool,
}

impl Cfqq {
    fn dispatched(&self) -> u32 {
        self.on_dispatch[ASYNC] + self.on_dispatch[SYNC]
    }
    /// `cfq_cfqq_class_sync`: a per-process queue.
    fn class_sync(&self) -> bool {
        self.key != QKey::Async
    }
    /// `cfq_cfqq_sync`: per-process, or has sync requests in the driver.
    fn is_sync(&self) -> bool {
        self.class_sync() || self.on_dispatch[SYNC] > 0
    }
    fn is_idle_class(&self) -> bool {
        self.class == IoClass::Idle
    }
    fn is_rt(&self) -> bool {
        self.class == IoClass::RealTime
    }
}

/// `struct cfq_io_context`: per (process, device).
#[derive(Debug)]
struct Cic {
    last_end_request: u64,
    last_request_pos: u64,
    stats: IoStats,
    exited: bool,
    queues: [Option<QId>; 2],
    /// Requests referencing this context.
    refs: u32,
}

/// CFQ's part of a request (`rq->elevator_private`). The context is the request's owner's.
/// One cache line each: with thousands of requests queued most are cold when touched.
#[derive(Debug)]
#[repr(align(64))]
struct CfqRq {
    rq: Request,
    q: QId,
    fifo_key: u64,
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "cfq",
    aliases: &[],
    follows: "Linux 2.6.20 block/cfq-iosched.c (+ 2007 defer_slice_start option)",
    summary: "per-process queues served in time slices with idling; I/O priorities",
    new: |hz| Box::new(Cfq::new(hz)),
    variants: &["defer_slice_start=1"],
    // Six busy processes' slices (≤ 180 ms each) + idle waits, twice over.
    waiting_bound: |_| WaitBound::Ms(2 * 6 * (180 + 8 + 4 * 10) + 100 + 64 * 10),
};

#[derive(Debug)]
pub struct Cfq {
    hz: Hz,
    quantum: u64,
    fifo_expire: [u64; 2],
    back_max_kib: u64,
    back_penalty: u64,
    slice: [u64; 2],
    slice_async_rq: u64,
    slice_idle: u64,
    defer_slice_start: bool,
    expire_no_idle_window: bool,
    leftover_inverted_quirk: bool,
    preempt_new_queue_quirk: bool,
    idle_clamp_quirk: bool,
    resort_new_quirk: bool,

    queues: Slab<Cfqq>,
    /// Queue lookup (`cfq_hash`): the newest queue of a key inline, older ones (other
    /// priorities of the shared async key) in `hash_more`, newest first.
    hash: FastMap<QKey, QId>,
    hash_more: FastMap<QKey, Vec<QId>>,
    heads: [QId; NLISTS],
    tails: [QId; NLISTS],
    /// Last queue of each list's leading run of never-serviced (`queue_new`) queues, kept
    /// incrementally so that `resort_rr_list` does not walk the run (the kernel does; with
    /// thousands of new queues that walk would make us quadratic).
    run_last: [QId; NLISTS],
    busy_queues: u32,
    rq_in_driver: u32,
    hw_tag: bool,
    idle_slice_timer: Option<u64>,
    idle_class_timer: Option<u64>,
    active_queue: Option<QId>,
    active_cic: Option<Owner>,
    cur_prio: usize,
    cur_end_prio: usize,
    dispatch_slice: u64,
    last_sector: u64,
    last_end_request: u64,

    rqs: IdMap<CfqRq>,
    cics: FastMap<Owner, Cic>,
    nr_sorted: usize,
}

impl Cfq {
    pub fn new(hz: Hz) -> Self {
        let h = hz.get() as u64;
        Cfq {
            hz,
            quantum: 4,
            fifo_expire: [h / 4, h / 8],
            back_max_kib: 16 * 1024,
            back_penalty: 2,
            slice: [(h / 25).max(1), h / 10],
            slice_async_rq: 2,
            slice_idle: (h / 125).max(1),
            defer_slice_start: false,
            expire_no_idle_window: true,
            leftover_inverted_quirk: false,
            preempt_new_queue_quirk: true,
            idle_clamp_quirk: true,
            resort_new_quirk: true,
            queues: Slab::default(),
            hash: FastMap::default(),
            hash_more: FastMap::default(),
            heads: [NIL; NLISTS],
            tails: [NIL; NLISTS],
            run_last: [NIL; NLISTS],
            busy_queues: 0,
            rq_in_driver: 0,
            hw_tag: false,
            idle_slice_timer: None,
            idle_class_timer: None,
            active_queue: None,
            active_cic: None,
            cur_prio: 0,
            cur_end_prio: 0,
            dispatch_slice: 0,
            last_sector: 0,
            last_end_request: 0,
            rqs: IdMap::default(),
            cics: FastMap::default(),
            nr_sorted: 0,
        }
    }

    fn q(&self, id: QId) -> &Cfqq {
        self.queues.get(id).expect("dead cfq queue")
    }
    fn qm(&mut self, id: QId) -> &mut Cfqq {
        self.queues.get_mut(id).expect("dead cfq queue")
    }

    // ---------------------------------------------------------------------------------
    // Intrusive round-robin lists (O(1) insert and remove, as the kernel's list_head).

    fn list_del(&mut self, id: QId) {
        let (l, p, n, in_run) = {
            let q = self.q(id);
            (q.list, q.prev, q.next, q.in_run)
        };
        if l == LIST_NONE {
            return;
        }
        let li = l as usize;
        if in_run && self.run_last[li] == id {
            self.run_last[li] = p;
        }
        if p == NIL {
            self.heads[li] = n;
        } else {
            self.qm(p).next = n;
        }
        if n == NIL {
            self.tails[li] = p;
        } else {
            self.qm(n).prev = p;
        }
        let q = self.qm(id);
        q.list = LIST_NONE;
        q.prev = NIL;
        q.next = NIL;
        q.in_run = false;
        // The removed queue may have been the first old queue after the run.
        self.extend_run(l);
    }

    /// Debug check: `run_last` is the end of the leading run of new queues of every list.
    #[cfg(debug_assertions)]
    fn check_runs(&self) {
        for l in 0..NLISTS {
            let mut last = NIL;
            let mut c = self.heads[l];
            while c != NIL && self.q(c).queue_new {
                debug_assert!(self.q(c).in_run, "queue {c} in the leading new run but not marked");
                last = c;
                c = self.q(c).next;
            }
            debug_assert_eq!(self.run_last[l], last, "run_last of list {l} out of date");
            while c != NIL {
                debug_assert!(!self.q(c).in_run, "queue {c} marked in_run outside the run");
                c = self.q(c).next;
            }
        }
    }

    /// Grow the leading run of new queues forward from its end.
    fn extend_run(&mut self, l: u8) {
        let li = l as usize;
        let mut c = if self.run_last[li] == NIL { self.heads[li] } else { self.q(self.run_last[li]).next };
        while c != NIL && self.q(c).queue_new {
            self.qm(c).in_run = true;
            self.run_last[li] = c;
            c = self.q(c).next;
        }
    }

    /// Insert `id` into list `l` before `before` (NIL = at the tail).
    fn list_insert_before(&mut self, id: QId, l: u8, before: QId) {
        let li = l as usize;
        let prev = if before == NIL { self.tails[li] } else { self.q(before).prev };
        {
            let q = self.qm(id);
            debug_assert_eq!(q.list, LIST_NONE);
            q.list = l;
            q.prev = prev;
            q.next = before;
        }
        if prev == NIL {
            self.heads[li] = id;
        } else {
            self.qm(prev).next = id;
        }
        if before == NIL {
            self.tails[li] = id;
        } else {
            self.qm(before).prev = id;
        }
        if before != NIL && self.q(before).in_run {
            // Landed inside the run.
            if self.q(id).queue_new {
                self.qm(id).in_run = true;
            } else {
                // An old queue cuts the run: everything from `before` on leaves it.
                let mut c = before;
                let last = self.run_last[li];
                loop {
                    self.qm(c).in_run = false;
                    if c == last {
                        break;
                    }
                    c = self.q(c).next;
                }
                self.run_last[li] = if prev != NIL && self.q(prev).in_run { prev } else { NIL };
            }
        } else {
            self.extend_run(l);
        }
    }

    fn list_push_front(&mut self, id: QId, l: u8) {
        let head = self.heads[l as usize];
        self.list_insert_before(id, l, head);
    }

    fn list_ids(&self, l: u8) -> Vec<QId> {
        let mut v = Vec::new();
        let mut c = self.heads[l as usize];
        while c != NIL {
            v.push(c);
            c = self.q(c).next;
        }
        v
    }

    /// `cfq_resort_rr_list`.
    fn resort_rr_list(&mut self, id: QId, preempted: bool) {
        debug_assert!(self.q(id).on_rr);
        self.list_del(id);
        let q = self.q(id);
        let target = if q.is_rt() {
            LIST_CUR
        } else if q.is_idle_class() {
            LIST_IDLE
        } else if q.dispatched() > 0 {
            // Not selectable before it finished what it has in the driver.
            LIST_BUSY
        } else {
            q.ioprio
        };
        if preempted || q.queue_new {
            // "Added first for fairness but behind other new queues". The kernel walks the
            // leading new queues; we keep the end of that run.
            let last_new = self.run_last[target as usize];
            let before = if self.resort_new_quirk {
                // list_add_tail(new, n): before the last new queue, or at the tail if none.
                last_new
            } else if last_new == NIL {
                self.heads[target as usize]
            } else {
                self.q(last_new).next
            };
            self.list_insert_before(id, target, before);
        } else {
            self.list_insert_before(id, target, NIL);
        }
        #[cfg(debug_assertions)]
        self.check_runs();
    }

    fn add_cfqq_rr(&mut self, id: QId) {
        debug_assert!(!self.q(id).on_rr);
        self.qm(id).on_rr = true;
        self.busy_queues += 1;
        self.resort_rr_list(id, false);
    }

    fn del_cfqq_rr(&mut self, id: QId) {
        debug_assert!(self.q(id).on_rr);
        self.qm(id).on_rr = false;
        self.list_del(id);
        self.busy_queues -= 1;
    }

    // ---------------------------------------------------------------------------------
    // Queue lookup and lifetime

    /// `cfq_find_cfq_hash`: a queue with this key whose original priority equals `prio`,
    /// or any queue with this key if `prio` was never set (class NONE).
    fn find_hash(&self, key: QKey, prio: IoPrio) -> Option<QId> {
        let (class, level) = Self::prio_data(prio);
        let matches = |id: QId| {
            let q = self.q(id);
            prio.class == IoClass::None || (q.org_class == class && q.org_ioprio == level)
        };
        let first = *self.hash.get(&key)?;
        if matches(first) {
            return Some(first);
        }
        self.hash_more.get(&key)?.iter().copied().find(|&id| matches(id))
    }

    /// `cfq_init_prio_data`: class and level a queue gets from its task's priority.
    fn prio_data(prio: IoPrio) -> (IoClass, u8) {
        match prio.class {
            IoClass::None | IoClass::BestEffort => (IoClass::BestEffort, prio.level),
            IoClass::RealTime => (IoClass::RealTime, prio.level),
            IoClass::Idle => (IoClass::Idle, 7),
        }
    }

    /// `cfq_get_queue`: find or create.
    fn get_queue(&mut self, key: QKey, prio: IoPrio) -> QId {
        if let Some(id) = self.find_hash(key, prio) {
            return id;
        }
        let (class, level) = Self::prio_data(prio);
        let q = Cfqq {
            key,
            refs: 0,
            list: LIST_NONE,
            prev: NIL,
            next: NIL,
            sort: SortTree::default(),
            next_rq: None,
            queued: [0; 2],
            meta_pending: 0,
            fifo: Fifo::default(),
            slice_start: 0,
            slice_end: 0,
            // Allow preemption for a new process.
            slice_left: 2 * self.slice_idle,
            slice_new: false,
            on_dispatch: [0; 2],
            ioprio: level,
            org_ioprio: level,
            class,
            org_class: class,
            on_rr: false,
            in_run: false,
            wait_request: false,
            must_alloc_slice: false,
            must_dispatch: false,
            fifo_expire: false,
            idle_window: class != IoClass::Idle,
            queue_new: true,
        };
        let id = self.queues.insert(q);
        // hlist_add_head: the newest queue is found first.
        if let Some(old) = self.hash.insert(key, id) {
            self.hash_more.entry(key).or_default().insert(0, old);
        }
        id
    }

    /// `cfq_put_queue`: drop a reference; free the queue when none is left.
    fn put_queue(&mut self, id: QId, now_j: u64, ctx: &mut Ctx) {
        let q = self.qm(id);
        q.refs -= 1;
        if q.refs > 0 {
            return;
        }
        debug_assert!(q.sort.is_empty() && !q.on_rr && q.dispatched() == 0);
        if self.active_queue == Some(id) {
            self.slice_expired_q(id, false, now_j, ctx);
        }
        self.list_del(id);
        let key = self.q(id).key;
        if self.hash.get(&key) == Some(&id) {
            self.hash.remove(&key);
            if let Some(v) = self.hash_more.get_mut(&key) {
                let next = v.remove(0);
                if v.is_empty() {
                    self.hash_more.remove(&key);
                }
                self.hash.insert(key, next);
            }
        } else if let Some(v) = self.hash_more.get_mut(&key) {
            v.retain(|&x| x != id);
            if v.is_empty() {
                self.hash_more.remove(&key);
            }
        }
        self.queues.remove(id);
    }

    fn cic(&mut self, owner: Owner, now_j: u64) -> &mut Cic {
        self.cics.entry(owner).or_insert_with(|| Cic {
            last_end_request: now_j,
            last_request_pos: 0,
            stats: IoStats::default(),
            exited: false,
            queues: [None; 2],
            refs: 0,
        })
    }

    /// A request let go of its context: one lookup for the count and the forget check.
    fn put_cic(&mut self, owner: Owner) {
        let Some(c) = self.cics.get_mut(&owner) else {
            return;
        };
        c.refs -= 1;
        if c.exited && c.refs == 0 && self.active_cic != Some(owner) {
            self.cics.remove(&owner);
        }
    }

    fn maybe_forget_cic(&mut self, owner: Owner) {
        if self.active_cic == Some(owner) {
            return;
        }
        if let Some(c) = self.cics.get(&owner)
            && c.exited
            && c.refs == 0
        {
            self.cics.remove(&owner);
        }
    }

    fn key_for(rq: &Request) -> QKey {
        if rq.is_sync() { QKey::Sync(rq.owner) } else { QKey::Async }
    }

    // ---------------------------------------------------------------------------------
    // Elevator order inside a queue

    fn choose_req(&self, a: Option<ReqId>, b: Option<ReqId>) -> Option<ReqId> {
        let r = |id: Option<ReqId>| id.map(|i| &self.rqs[&i].rq);
        choose_sync_meta_position(r(a), r(b), self.last_sector, self.back_max_kib * 2, self.back_penalty)
    }

    fn find_next_rq(&self, qid: QId, id: ReqId) -> Option<ReqId> {
        let q = self.q(qid);
        let s = self.rqs[&id].rq.sector;
        let prev = q.sort.prev(s);
        let next = q.sort.next(s).or_else(|| q.sort.first().filter(|&f| f != id));
        self.choose_req(next, prev)
    }

    /// `cfq_add_rq_rb` with the alias rule.
    fn add_rq_rb(&mut self, id: ReqId, now_j: u64, ctx: &mut Ctx) {
        let (qid, sector, sync) = {
            let r = &self.rqs[&id];
            (r.q, r.rq.sector, r.rq.is_sync() as usize)
        };
        self.qm(qid).queued[sync] += 1;
        loop {
            match self.qm(qid).sort.add(sector, id) {
                Ok(()) => break,
                Err(alias) => self.dispatch_insert(alias, now_j, ctx),
            }
        }
        if !self.q(qid).on_rr {
            self.add_cfqq_rr(qid);
        }
    }

    /// `cfq_del_rq_rb`.
    fn del_rq_rb(&mut self, id: ReqId) {
        let (qid, sector, sync) = {
            let r = &self.rqs[&id];
            (r.q, r.rq.sector, r.rq.is_sync() as usize)
        };
        let q = self.qm(qid);
        q.queued[sync] -= 1;
        q.sort.remove(sector, id);
        if q.on_rr && q.sort.is_empty() {
            self.del_cfqq_rr(qid);
        }
    }

    /// `cfq_remove_request`.
    fn remove_request(&mut self, id: ReqId) {
        let (qid, key, meta) = {
            let r = &self.rqs[&id];
            (r.q, r.fifo_key, r.rq.meta)
        };
        if self.q(qid).next_rq == Some(id) {
            let n = self.find_next_rq(qid, id);
            self.qm(qid).next_rq = n;
        }
        self.qm(qid).fifo.remove(key);
        self.del_rq_rb(id);
        if meta {
            self.qm(qid).meta_pending -= 1;
        }
        self.nr_sorted -= 1;
    }

    /// `cfq_dispatch_insert`.
    fn dispatch_insert(&mut self, id: ReqId, _now_j: u64, ctx: &mut Ctx) {
        self.remove_request(id);
        let (qid, rq) = {
            let r = &self.rqs[&id];
            (r.q, r.rq)
        };
        self.qm(qid).on_dispatch[rq.is_sync() as usize] += 1;
        ctx.dispatch_sort(rq);
        self.last_sector = ctx.list.tail_end().unwrap_or(rq.end());
    }

    // ---------------------------------------------------------------------------------
    // Slices

    /// `cfq_prio_to_slice`.
    fn prio_to_slice(&self, q: &Cfqq) -> u64 {
        let base = self.slice[q.is_sync() as usize];
        let scale = (base / 5) as i64 * (4 - q.ioprio as i64);
        (base as i64 + scale).max(0) as u64
    }

    /// `cfq_prio_to_maxrq`.
    fn prio_to_maxrq(&self, q: &Cfqq) -> u64 {
        let base = self.slice_async_rq;
        2 * (base + base * (7 - q.ioprio as u64))
    }

    /// Has the queue used its slice? (2.6.20: `time_after(now, slice_end)`.)
    fn slice_used(&self, q: &Cfqq, now_j: u64) -> bool {
        if self.defer_slice_start { !q.slice_new && now_j >= q.slice_end } else { now_j > q.slice_end }
    }

    fn schedule_dispatch(&self, ctx: &mut Ctx) {
        if self.busy_queues > 0 {
            ctx.kick();
        }
    }

    /// `__cfq_slice_expired`.
    fn slice_expired_q(&mut self, id: QId, preempted: bool, now_j: u64, ctx: &mut Ctx) {
        if self.q(id).wait_request {
            self.idle_slice_timer = None;
        }
        if !preempted && self.q(id).dispatched() == 0 {
            self.schedule_dispatch(ctx);
        }
        let inverted = self.defer_slice_start && self.leftover_inverted_quirk;
        let used = self.slice_used(self.q(id), now_j);
        let q = self.qm(id);
        q.must_dispatch = false;
        q.wait_request = false;
        q.queue_new = false;
        q.slice_left = if inverted {
            // QUIRK-CFQ-3: stores slice_end - now (wrapped) when the slice is used.
            if used { q.slice_end.wrapping_sub(now_j) & 0xffff_ffff } else { 0 }
        } else {
            q.slice_end.saturating_sub(now_j)
        };
        if q.on_rr {
            self.resort_rr_list(id, preempted);
        }
        if self.active_queue == Some(id) {
            self.active_queue = None;
        }
        if let Some(c) = self.active_cic.take() {
            self.maybe_forget_cic(c);
        }
        self.dispatch_slice = 0;
    }

    fn slice_expired(&mut self, preempted: bool, now_j: u64, ctx: &mut Ctx) {
        if let Some(id) = self.active_queue {
            self.slice_expired_q(id, preempted, now_j, ctx);
        }
    }

    /// `cfq_get_next_prio_level`: the priority staircase.
    fn next_prio_level(&mut self) -> Option<usize> {
        let mut prio = None;
        let mut wrap = false;
        loop {
            for p in self.cur_prio..=self.cur_end_prio {
                if self.heads[p] != NIL {
                    prio = Some(p);
                    break;
                }
            }
            if prio.is_some() {
                break;
            }
            self.cur_prio = 0;
            self.cur_end_prio += 1;
            if self.cur_end_prio == 8 {
                self.cur_end_prio = 0;
                if wrap {
                    break;
                }
                wrap = true;
            }
        }
        let p = prio?;
        // Splice rr_list[p] into cur_rr (which is empty here), whole: same order, and the
        // leading run of new queues stays the leading run.
        debug_assert_eq!(self.heads[LIST_CUR as usize], NIL);
        let pi = p;
        let mut c = self.heads[pi];
        while c != NIL {
            let q = self.qm(c);
            q.list = LIST_CUR;
            c = q.next;
        }
        let cur = LIST_CUR as usize;
        self.heads[cur] = std::mem::replace(&mut self.heads[pi], NIL);
        self.tails[cur] = std::mem::replace(&mut self.tails[pi], NIL);
        self.run_last[cur] = std::mem::replace(&mut self.run_last[pi], NIL);
        #[cfg(debug_assertions)]
        self.check_runs();
        self.cur_prio = p + 1;
        if self.cur_prio > self.cur_end_prio {
            self.cur_end_prio = self.cur_prio;
            self.cur_prio = 0;
        }
        if self.cur_end_prio == 8 {
            self.cur_prio = 0;
            self.cur_end_prio = 0;
        }
        Some(p)
    }

    /// `cfq_set_active_queue`.
    fn set_active_queue(&mut self, now_j: u64) -> Option<QId> {
        let mut sel = None;
        if self.heads[LIST_CUR as usize] != NIL || self.next_prio_level().is_some() {
            sel = Some(self.heads[LIST_CUR as usize]);
        } else if self.heads[LIST_BUSY as usize] != NIL {
            sel = Some(self.heads[LIST_BUSY as usize]);
        } else if self.heads[LIST_IDLE as usize] != NIL {
            let end = self.last_end_request + self.hz.get() as u64 / 10; // CFQ_IDLE_GRACE
            if now_j >= end {
                sel = Some(self.heads[LIST_IDLE as usize]);
            } else {
                self.idle_class_timer = Some(end);
            }
        }
        if let Some(id) = sel {
            self.idle_class_timer = None;
            let defer = self.defer_slice_start;
            let q = self.qm(id);
            q.slice_start = now_j;
            q.slice_end = 0;
            q.slice_left = 0;
            q.slice_new = defer;
            q.must_alloc_slice = false;
            q.fifo_expire = false;
        }
        self.active_queue = sel;
        sel
    }

    /// `cfq_arm_slice_timer`: idle for the active queue's next request?
    fn arm_slice_timer(&mut self, id: QId, now_j: u64) -> bool {
        if self.slice_idle == 0 || !self.q(id).idle_window {
            return false;
        }
        let Some(c) = self.active_cic else {
            return false;
        };
        let Some(cic) = self.cics.get(&c) else {
            return false;
        };
        if cic.exited {
            return false; // task has exited, don't wait
        }
        let seeky = cic.stats.seek_samples > 80 && cic.stats.seek_mean > 128 * 1024;
        let (clamp, slice_idle) = (self.idle_clamp_quirk, self.slice_idle);
        let q = self.qm(id);
        q.must_dispatch = true;
        q.wait_request = true;
        let mut sl = if clamp {
            q.slice_end.wrapping_sub(1).min(slice_idle)
        } else {
            q.slice_end.saturating_sub(now_j).min(slice_idle)
        };
        if seeky {
            sl = sl.min(self.hz.msecs_to_jiffies(2));
        }
        self.idle_slice_timer = Some(now_j + sl);
        true
    }

    /// `cfq_check_fifo`: at most one FIFO-expired request per slice.
    fn check_fifo(&mut self, id: QId, now_j: u64) -> Option<ReqId> {
        let q = self.q(id);
        if q.fifo_expire {
            return None;
        }
        let head = q.fifo.front()?;
        let expire = self.fifo_expire[q.class_sync() as usize];
        let start = self.hz.jiffies(self.rqs[&head].rq.arrival);
        if now_j > start + expire {
            self.qm(id).fifo_expire = true;
            return Some(head);
        }
        None
    }

    /// `cfq_select_queue`.
    fn select_queue(&mut self, now_j: u64, ctx: &mut Ctx) -> Option<QId> {
        if let Some(id) = self.active_queue {
            let q = self.q(id);
            let expire = !q.must_dispatch && self.slice_used(q, now_j);
            if !expire {
                if !q.sort.is_empty() {
                    return Some(id);
                }
                if q.dispatched() > 0 || (self.defer_slice_start && q.slice_new) {
                    return None; // wait for it to finish what it has in the driver
                }
                if q.class_sync() && self.arm_slice_timer(id, now_j) {
                    return None;
                }
            }
            self.slice_expired(false, now_j, ctx);
        }
        self.set_active_queue(now_j)
    }

    /// `__cfq_dispatch_requests`: one dispatch round for queue `id`.
    fn dispatch_round(&mut self, id: QId, max: u64, now_j: u64, ctx: &mut Ctx) -> u64 {
        let mut dispatched = 0;
        loop {
            let rid = match self.check_fifo(id, now_j) {
                Some(r) => r,
                None => self.q(id).next_rq.expect("busy queue without next_rq"),
            };
            let cic = self.rqs[&rid].rq.owner;
            self.dispatch_insert(rid, now_j, ctx);
            self.dispatch_slice += 1;
            dispatched += 1;
            if self.active_cic.is_none() {
                self.active_cic = Some(cic);
            }
            if self.q(id).sort.is_empty() || dispatched >= max {
                break;
            }
        }
        if !self.defer_slice_start && self.q(id).slice_end == 0 {
            let s = self.prio_to_slice(self.q(id));
            self.qm(id).slice_end = now_j + s;
        }
        let q = self.q(id);
        let async_used_up = !q.is_sync() && self.dispatch_slice >= self.prio_to_maxrq(q);
        if async_used_up || q.is_idle_class() || (self.expire_no_idle_window && !q.idle_window) {
            if self.defer_slice_start {
                self.qm(id).slice_end = now_j + 1;
            }
            self.slice_expired(false, now_j, ctx);
        }
        dispatched
    }

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, qid: QId, owner: Owner) {
        let c = &self.cics[&owner];
        let seeky = c.stats.seek_mean > 128 * 1024;
        let mut enable = self.q(qid).idle_window;
        if c.exited || self.slice_idle == 0 || (self.hw_tag && seeky) {
            enable = false;
        } else if c.stats.ttime_samples > 80 {
            enable = c.stats.ttime_mean <= self.slice_idle;
        }
        self.qm(qid).idle_window = enable;
    }

    /// `cfq_should_preempt`.
    fn should_preempt(&self, new: QId, rq: &Request) -> bool {
        let nq = self.q(new);
        if nq.is_idle_class() {
            return false;
        }
        let Some(aid) = self.active_queue else {
            return false;
        };
        let aq = self.q(aid);
        if aq.is_idle_class() {
            return true;
        }
        let waiting = if self.preempt_new_queue_quirk { nq.wait_request } else { aq.wait_request };
        if !waiting {
            return false;
        }
        if nq.slice_left < self.slice_idle {
            return false;
        }
        if rq.is_sync() && !aq.is_sync() {
            return true;
        }
        rq.meta && aq.meta_pending == 0
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, id: QId, now_j: u64, ctx: &mut Ctx) {
        self.slice_expired(true, now_j, ctx);
        if self.q(id).slice_left == 0 {
            let half = self.prio_to_slice(self.q(id)) / 2;
            self.qm(id).slice_left = half;
        }
        self.list_del(id);
        self.list_push_front(id, LIST_CUR);
        let defer = self.defer_slice_start;
        let q = self.qm(id);
        if defer {
            q.slice_end = 0;
            q.slice_new = true;
        } else {
            q.slice_end = q.slice_left + now_j;
        }
    }

    /// `cfq_rq_enqueued`.
    fn rq_enqueued(&mut self, qid: QId, id: ReqId, now_j: u64, ctx: &mut Ctx) {
        let (rq, owner) = {
            let r = &self.rqs[&id];
            (r.rq, r.rq.owner)
        };
        if rq.meta {
            self.qm(qid).meta_pending += 1;
        }
        let n = self.choose_req(self.q(qid).next_rq, Some(id));
        self.qm(qid).next_rq = n;
        if !rq.is_sync() {
            // A sync process issued an async request while we idle for it: stop waiting.
            if self.active_cic == Some(owner) && self.idle_slice_timer.take().is_some() {
                self.slice_expired(false, now_j, ctx);
                ctx.kick();
            }
            return;
        }
        {
            let slice_idle = self.slice_idle;
            let c = self.cics.get_mut(&owner).unwrap();
            let elapsed = now_j.saturating_sub(c.last_end_request);
            c.stats.add_thinktime(elapsed.min(2 * slice_idle));
            c.stats.add_seek(rq.sector.abs_diff(c.last_request_pos));
        }
        self.update_idle_window(qid, owner);
        self.cics.get_mut(&owner).unwrap().last_request_pos = rq.end();
        if self.active_queue == Some(qid) {
            if self.q(qid).wait_request {
                // Our idle wait paid off: let it rip.
                self.qm(qid).must_dispatch = true;
                self.idle_slice_timer = None;
                ctx.kick();
            }
        } else if self.should_preempt(qid, &rq) {
            self.preempt_queue(qid, now_j, ctx);
            self.qm(qid).must_dispatch = true;
            ctx.kick();
        }
    }

    fn idle_slice_timer_fire(&mut self, now_j: u64, ctx: &mut Ctx) {
        if let Some(id) = self.active_queue {
            let q = self.q(id);
            if !self.slice_used(q, now_j) {
                if self.busy_queues == 0 {
                    return; // nothing else wants the disk: keep waiting
                }
                if !q.sort.is_empty() {
                    self.qm(id).must_dispatch = true;
                    self.schedule_dispatch(ctx);
                    return;
                }
            }
        }
        self.slice_expired(false, now_j, ctx);
        self.schedule_dispatch(ctx);
    }

    fn list_name(l: u8) -> String {
        match l {
            LIST_CUR => "cur_rr".into(),
            LIST_BUSY => "busy_rr".into(),
            LIST_IDLE => "idle_rr".into(),
            LIST_NONE => "-".into(),
            p => format!("rr_list[{p}]"),
        }
    }

    fn qname(&self, id: QId) -> String {
        match self.q(id).key {
            QKey::Async => format!("async/{}", self.q(id).org_ioprio),
            QKey::Sync(o) => format!("{o}"),
        }
    }
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }
    iosched_core::tunables! {
        Spec::count("quantum", 1, UINT_MAX, "maximum requests moved from one queue in one dispatch round")
            => get |s| s.quantum as i64,
            set |s, v| s.quantum = v as u64;
        Spec::millis(
            "fifo_expire_sync",
            1,
            UINT_MAX,
            "age after which a sync queue's oldest request is served out of order",
        )
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[SYNC]) as i64,
            set |s, v| s.fifo_expire[SYNC] = s.hz.msecs_to_jiffies(v as u64);
        Spec::millis(
            "fifo_expire_async",
            1,
            UINT_MAX,
            "age after which the async queue's oldest request is served out of order",
        )
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[ASYNC]) as i64,
            set |s, v| s.fifo_expire[ASYNC] = s.hz.msecs_to_jiffies(v as u64);
        Spec::kib("back_seek_max", 0, UINT_MAX, "longest backward seek the in-queue elevator accepts")
            => get |s| s.back_max_kib as i64,
            set |s, v| s.back_max_kib = v as u64;
        Spec::count("back_seek_penalty", 1, UINT_MAX, "cost multiplier of a backward seek against a forward one")
            => get |s| s.back_penalty as i64,
            set |s, v| s.back_penalty = v as u64;
        Spec::millis("slice_sync", 1, UINT_MAX, "base time slice of a sync queue (scaled by priority level)")
            => get |s| s.hz.jiffies_to_msecs(s.slice[SYNC]) as i64,
            set |s, v| s.slice[SYNC] = s.hz.msecs_to_jiffies(v as u64);
        Spec::millis("slice_async", 1, UINT_MAX, "base time slice of an async queue (scaled by priority level)")
            => get |s| s.hz.jiffies_to_msecs(s.slice[ASYNC]) as i64,
            set |s, v| s.slice[ASYNC] = s.hz.msecs_to_jiffies(v as u64);
        Spec::count("slice_async_rq", 1, UINT_MAX, "base request budget of an async slice (scaled by priority level)")
            => get |s| s.slice_async_rq as i64,
            set |s, v| s.slice_async_rq = v as u64;
        Spec::millis("slice_idle", 0, UINT_MAX, "how long an empty sync queue waits for its next request (0 = never idle)")
            => get |s| s.hz.jiffies_to_msecs(s.slice_idle) as i64,
            set |s, v| s.slice_idle = s.hz.msecs_to_jiffies(v as u64);
        Spec::boolean(
            "defer_slice_start",
            "2007 change 44f7c160: a slice starts at the queue's first completion, not at its first dispatch (0 = 2.6.20)",
        )
            => get |s| s.defer_slice_start as i64,
            set |s, v| s.defer_slice_start = v != 0;
        Spec::boolean(
            "expire_no_idle_window",
            "2.6.20: a queue without an idle window is expired after every dispatch round (absent in the 44f7c160 file)",
        )
            => get |s| s.expire_no_idle_window as i64,
            set |s, v| s.expire_no_idle_window = v != 0;
        Spec::boolean(
            "leftover_inverted_quirk",
            "QUIRK-CFQ-3 (44f7c160 file): with defer_slice_start, the left-over slice is stored only when the slice is used (0 = 2.6.20 computation)",
        )
            => get |s| s.leftover_inverted_quirk as i64,
            set |s, v| s.leftover_inverted_quirk = v != 0;
        Spec::boolean(
            "preempt_new_queue_quirk",
            "QUIRK-CFQ-1 (2.6.20): preemption tests wait_request on the new queue, so only an idle-class active queue is ever preempted",
        )
            => get |s| s.preempt_new_queue_quirk as i64,
            set |s, v| s.preempt_new_queue_quirk = v != 0;
        Spec::boolean(
            "idle_clamp_quirk",
            "QUIRK-CFQ-2 (2.6.20): the idle wait is min(slice_end - 1, slice_idle) with slice_end absolute, i.e. slice_idle",
        )
            => get |s| s.idle_clamp_quirk as i64,
            set |s, v| s.idle_clamp_quirk = v != 0;
        Spec::boolean(
            "resort_new_quirk",
            "QUIRK-CFQ-4 (2.6.20): a new or preempted queue is inserted before the last of the leading new queues (0 = after them, as intended)",
        )
            => get |s| s.resort_new_quirk as i64,
            set |s, v| s.resort_new_quirk = v != 0;
    }

    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let sync = rq.is_sync() as usize;
        // cfq_set_request: the task's context and queue.
        let owner = rq.owner;
        let cic = self.cic(owner, now_j);
        cic.refs += 1; // the request's reference to its context
        let cached = cic.queues[sync];
        let qid = match cached {
            Some(q) => q,
            None => {
                let q = self.get_queue(Self::key_for(rq), rq.prio);
                self.qm(q).refs += 1; // the context's reference
                self.cics.get_mut(&owner).unwrap().queues[sync] = Some(q);
                q
            }
        };
        self.qm(qid).refs += 1; // the request's reference
        // The FIFO position first (the alias rule in add_rq_rb may dispatch another
        // request, which does not move this one's position).
        let fifo_key = self.qm(qid).fifo.push_back(rq.id);
        self.rqs.insert(rq.id, CfqRq { rq: *rq, q: qid, fifo_key });
        self.nr_sorted += 1;
        self.add_rq_rb(rq.id, now_j, ctx);
        self.rq_enqueued(qid, rq.id, now_j, ctx);
    }

    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        let q = self.find_hash(Self::key_for(bio), bio.prio)?;
        self.q(q).sort.find(bio.end())
    }

    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        // Never merge a sync bio into an async request.
        if bio.is_sync() && !rq.is_sync() {
            return false;
        }
        // Only into the queue this bio would go to.
        let Some(r) = self.rqs.get(&rq.id) else {
            return false;
        };
        self.find_hash(Self::key_for(bio), bio.prio) == Some(r.q)
    }

    fn merged(&mut self, now: Instant, rq: &Request, kind: MergeKind, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let (qid, old_sector) = {
            let r = &self.rqs[&rq.id];
            (r.q, r.rq.sector)
        };
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        if kind == MergeKind::Front {
            // cfq_reposition_rq_rb
            let q = self.qm(qid);
            q.sort.remove(old_sector, rq.id);
            q.queued[rq.is_sync() as usize] -= 1;
            self.add_rq_rb(rq.id, now_j, ctx);
        }
    }

    fn merge_requests(&mut self, now: Instant, rq: &Request, next: &Request) {
        let now_j = self.hz.jiffies(now);
        let (qid, n_key, n_owner) = {
            let n = &self.rqs[&next.id];
            (n.q, n.fifo_key, n.rq.owner)
        };
        // If next is older, rq takes its FIFO position. The block layer has already given
        // `rq` the older start time, so in 2.6.20 this never fires; kept for fidelity.
        if self.hz.jiffies(next.arrival) < self.hz.jiffies(rq.arrival) {
            let r_key = self.rqs[&rq.id].fifo_key;
            let rq_q = self.rqs[&rq.id].q;
            debug_assert_eq!(rq_q, qid, "CFQ merges only within a queue");
            self.qm(qid).fifo.replace(n_key, rq.id);
            self.qm(rq_q).fifo.remove(r_key);
            self.rqs.get_mut(&rq.id).unwrap().fifo_key = n_key;
            self.rqs.get_mut(&next.id).unwrap().fifo_key = u64::MAX;
        }
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        self.remove_request(next.id);
        self.rqs.remove(&next.id);
        // cfq_put_request for the vanished request.
        let mut scratch = iosched_core::DispatchList::default();
        let mut ctx = Ctx::new(&mut scratch);
        self.put_queue(qid, now_j, &mut ctx);
        if let Some(c) = self.cics.get_mut(&n_owner) {
            c.refs -= 1;
        }
        self.maybe_forget_cic(n_owner);
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let r = self.rqs.get(&rq.id)?;
        self.q(r.q).sort.prev(r.rq.sector)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let r = self.rqs.get(&rq.id)?;
        self.q(r.q).sort.next(r.rq.sector)
    }

    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let now_j = self.hz.jiffies(now);
        if self.busy_queues == 0 {
            return Decision::Empty;
        }
        let mut dispatched = 0;
        let mut prev = None;
        while let Some(id) = self.select_queue(now_j, ctx) {
            if prev == Some(id) {
                break;
            }
            let q = self.qm(id);
            q.must_dispatch = false;
            q.wait_request = false;
            self.idle_slice_timer = None;
            let max = if self.q(id).is_idle_class() { 1 } else { self.quantum };
            dispatched += self.dispatch_round(id, max, now_j, ctx);
            if self.q(id).idle_window && self.active_queue.is_some() {
                break;
            }
            prev = Some(id);
        }
        if dispatched > 0 {
            Decision::Dispatch
        } else if self.busy_queues == 0 {
            Decision::Empty
        } else {
            Decision::Idle { until: self.poll_timeout() }
        }
    }

    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        if self.busy_queues == 0 {
            return;
        }
        let lists: Vec<u8> = (0..8u8).chain([LIST_BUSY, LIST_CUR, LIST_IDLE]).collect();
        for l in lists {
            for id in self.list_ids(l) {
                while let Some(r) = self.queues.get(id).and_then(|q| q.next_rq) {
                    self.dispatch_insert(r, now_j, ctx);
                }
            }
        }
        self.slice_expired(false, now_j, ctx);
        debug_assert_eq!(self.busy_queues, 0);
    }

    fn activate(&mut self, _now: Instant, _rq: &Request) {
        self.rq_in_driver += 1;
        if !self.hw_tag && self.rq_in_driver > 4 {
            self.hw_tag = true;
        }
    }

    fn deactivate(&mut self, _now: Instant, _rq: &Request) {
        self.rq_in_driver -= 1;
    }

    fn completed(&mut self, now: Instant, rq: &Request, _status: Status, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let r = self.rqs.remove(&rq.id).expect("completion of a request CFQ does not know");
        let sync = r.rq.is_sync();
        let qid = r.q;
        self.rq_in_driver -= 1;
        self.qm(qid).on_dispatch[sync as usize] -= 1;
        if !self.q(qid).is_idle_class() {
            self.last_end_request = now_j;
        }
        if self.q(qid).dispatched() == 0 && self.q(qid).on_rr {
            self.resort_rr_list(qid, false);
        }
        if sync && let Some(c) = self.cics.get_mut(&r.rq.owner) {
            c.last_end_request = now_j;
        }
        if self.active_queue == Some(qid) {
            if self.defer_slice_start && self.q(qid).slice_new {
                // The slice starts with its first completion.
                let s = self.prio_to_slice(self.q(qid));
                let q = self.qm(qid);
                q.slice_end = now_j + s;
                q.slice_new = false;
            }
            if self.slice_used(self.q(qid), now_j) {
                self.slice_expired(false, now_j, ctx);
            } else if sync && self.q(qid).sort.is_empty() && !self.arm_slice_timer(qid, now_j) {
                self.schedule_dispatch(ctx);
            }
        }
        // cfq_put_request
        self.put_queue(qid, now_j, ctx);
        self.put_cic(r.rq.owner);
    }

    fn may_queue(&mut self, _now: Instant, owner: Owner, prio: IoPrio, dir: Dir, sync: bool) -> MayQueue {
        let key = if dir == Dir::Read || sync { QKey::Sync(owner) } else { QKey::Async };
        let Some(id) = self.find_hash(key, prio) else {
            return MayQueue::May;
        };
        let q = self.qm(id);
        if q.wait_request && !q.must_alloc_slice {
            q.must_alloc_slice = true;
            return MayQueue::Must;
        }
        MayQueue::May
    }

    fn owner_exited(&mut self, now: Instant, owner: Owner, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        let Some(c) = self.cics.get_mut(&owner) else {
            return;
        };
        c.exited = true;
        let queues = std::mem::take(&mut c.queues);
        for qid in queues.into_iter().flatten() {
            // cfq_exit_cfqq
            if self.active_queue == Some(qid) {
                self.slice_expired_q(qid, false, now_j, ctx);
            }
            self.put_queue(qid, now_j, ctx);
        }
        self.maybe_forget_cic(owner);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let t = match (self.idle_slice_timer, self.idle_class_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        t.map(|j| self.hz.instant(j))
    }

    fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        if let Some(t) = self.idle_slice_timer
            && now_j >= t
        {
            self.idle_slice_timer = None;
            self.idle_slice_timer_fire(now_j, ctx);
        }
        if let Some(t) = self.idle_class_timer
            && now_j >= t
        {
            self.idle_class_timer = None;
            let end = self.last_end_request + self.hz.get() as u64 / 10;
            if now_j < end {
                self.idle_class_timer = Some(end);
            } else {
                self.schedule_dispatch(ctx);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.busy_queues == 0
    }
    fn queued(&self) -> usize {
        self.nr_sorted
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("active_queue".into(), self.active_queue.map(|q| self.qname(q)).unwrap_or_else(|| "-".into())),
            ("busy_queues".into(), self.busy_queues.to_string()),
            ("dispatch_slice".into(), self.dispatch_slice.to_string()),
            ("rq_in_driver".into(), self.rq_in_driver.to_string()),
            ("hw_tag".into(), (self.hw_tag as u8).to_string()),
            ("idle_slice_timer".into(), self.idle_slice_timer.map(|j| j.to_string()).unwrap_or_else(|| "-".into())),
            ("idle_class_timer".into(), self.idle_class_timer.map(|j| j.to_string()).unwrap_or_else(|| "-".into())),
            ("cur_prio".into(), format!("{}..{}", self.cur_prio, self.cur_end_prio)),
        ];
        for l in (0..8u8).chain([LIST_CUR, LIST_BUSY, LIST_IDLE]) {
            let ids = self.list_ids(l);
            if !ids.is_empty() {
                let names: Vec<String> = ids.iter().map(|&i| self.qname(i)).collect();
                v.push((Self::list_name(l), names.join(",")));
            }
        }
        let mut ids: Vec<QId> = self.queues.iter().map(|(i, _)| i).collect();
        ids.sort_by_key(|&i| self.q(i).key);
        for id in ids {
            let q = self.q(id);
            v.push((
                format!("queue.{}", self.qname(id)),
                format!(
                    "class={:?} prio={} slice_end={} slice_left={}{} queued={} dispatched={} idle_window={}{}",
                    q.class,
                    q.ioprio,
                    q.slice_end,
                    q.slice_left,
                    if q.slice_new { " slice_new" } else { "" },
                    q.sort.len(),
                    q.dispatched(),
                    q.idle_window as u8,
                    if q.wait_request { " wait_request" } else { "" },
                ),
            ));
        }
        v
    }
}
