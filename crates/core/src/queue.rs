//! The block-layer framework around a policy: the analog of 2.6.20's `ll_rw_blk.c` and
//! `elevator.c`. It owns the *mechanism* every elevator relies on:
//!
//! - the request pool: `nr_requests` slots per data direction, congestion thresholds, the
//!   "queue full" state and allocation batching (§1.3 of the reference), with submitters
//!   that find no slot told to wait and woken one at a time, in order;
//! - merging: the one-hit `last_merge` cache, the back-merge hash on request end, the
//!   policy's front-merge hook, `max_sectors`, and request-request merging;
//! - plugging (`unplug_thresh`, `unplug_delay`, unplug on demand; or 2.4's `tq_disk` rule), as a toggle;
//! - the dispatch list, the device depth budget and requeue;
//! - barriers (flush) that drain the policy.
//!
//! # Call order
//!
//! Inputs are `handle_arrival`, `handle_completion`, `handle_requeue`, `handle_timeout`,
//! `handle_unplug`, `handle_owner_exit` and `drain`; every one takes the current time,
//! which never goes backwards. After each input, call `poll_dispatch(now)` until it
//! returns `None` and issue what it returns to the device; drain `poll_event()` for
//! completions, wake-ups and traces; then wait until the next input or `poll_timeout()`,
//! whichever is first. The queue never reads a clock and never blocks.
//!
//! `poll_dispatch` only consults the policy when the kernel would run the queue's
//! `request_fn`: after an unplug, a completion, a policy kick or a barrier — so policies
//! with side effects in `dispatch` (CFQ arming its idle timer) behave as in the kernel.

use crate::config::{BATCH_REQUESTS, Dequeue, QueueConfig, RequestAlloc, Unplug};
use crate::dispatch::DispatchList;
use crate::fastmap::{FastMap, IdMap};
use crate::request::{Dir, Op, Owner, ReqId, Request, Status};
use crate::scheduler::{Ctx, MayQueue, MergeChoice, MergeKind, Scheduler};
use crate::time::Instant;
use crate::trace::Record;
use std::collections::VecDeque;

/// blk-mq's delay before running a queue again after a run that dispatched nothing while
/// the scheduler held requests (`BLK_MQ_BUDGET_DELAY`, 3 ms).
const BLK_MQ_BUDGET_DELAY: crate::time::Duration = crate::time::Duration::from_millis(3);

/// One input to a [`Queue`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Input {
    Arrival(Request),
    Completion { id: ReqId, status: Status },
    Requeue(ReqId),
    Unplug,
    OwnerExit(Owner),
    Drain,
    Timeout,
}

/// What happened to a submitted request.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Admission {
    /// Allocated a slot and handed to the policy.
    Queued,
    /// Merged into an existing request (no slot used).
    Merged { into: ReqId, kind: MergeKind },
    /// No slot: the submitter must wait; [`Event::Admitted`] tells when it may go on.
    Wait,
}

/// One submitted unit inside a (possibly merged) request.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Segment {
    pub id: ReqId,
    pub sector: u64,
    pub len_sectors: u32,
}

/// Things the queue reports, for waking submitters, statistics and traces
/// (blktrace's letters in brackets).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// A new request was inserted (I).
    Queued {
        id: ReqId,
    },
    /// A submitted unit was merged into a request (M / F).
    Merged {
        id: ReqId,
        into: ReqId,
        kind: MergeKind,
    },
    /// Request `id` was absorbed by request `into` (request-request merge).
    Coalesced {
        id: ReqId,
        into: ReqId,
    },
    /// The submitter of `id` must sleep for a request slot (S).
    Sleep {
        id: ReqId,
    },
    /// A sleeping submitter got its slot; `id` is now queued.
    Admitted {
        id: ReqId,
    },
    /// Request `id` went to the device (D).
    Issued {
        id: ReqId,
    },
    /// Submitted unit `id`, part of request `request`, finished (C).
    Completed {
        id: ReqId,
        request: ReqId,
        status: Status,
    },
    /// The driver gave request `id` back.
    Requeued {
        id: ReqId,
    },
    /// The queue was plugged (P) / unplugged (U; `timer` if by the unplug timer).
    Plug,
    Unplug {
        timer: bool,
    },
    /// A direction's pool crossed the congestion threshold (`congested: true`), or released
    /// a request while below the release threshold (`false`: sent on every such release,
    /// as the kernel's `blk_clear_queue_congested` wakes `blk_congestion_wait` sleepers on
    /// each, whether or not the flag was set).
    Congestion {
        dir: Dir,
        congested: bool,
    },
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum State {
    /// Inside the policy.
    Sorted,
    /// On the dispatch list.
    Dispatched,
    /// Started by the device.
    InFlight,
}

/// The framework's record of a request. One cache line: with thousands of requests queued
/// most records are cold when the request is dispatched or completed.
#[derive(Debug)]
#[repr(align(64))]
struct Slot {
    rq: Request,
    state: State,
    /// Went through the policy (everything but barriers).
    sorted: bool,
    /// `REQ_NOMERGE`: a merge failed on size; never try again.
    nomerge: bool,
    /// The submitted units, in sector order; empty means "just `rq` itself".
    merged: Merged,
}

/// A merged request's submitted units, out of line (most requests never merge, and the
/// record stays one cache line).
#[derive(Debug, Default)]
// Boxed on purpose: 8 bytes in the record instead of a Vec's 24.
#[allow(clippy::box_collection)]
struct Merged(Option<Box<Vec<Segment>>>);

impl Merged {
    fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|v| v.is_empty())
    }
    fn vec(&mut self) -> &mut Vec<Segment> {
        self.0.get_or_insert_with(Default::default)
    }
    fn iter(&self) -> std::slice::Iter<'_, Segment> {
        self.0.as_deref().map_or([].iter(), |v| v.iter())
    }
    fn take(&mut self) -> Vec<Segment> {
        self.0.take().map_or_else(Vec::new, |b| *b)
    }
}

impl Slot {
    fn segments(&self) -> Segments<'_> {
        if self.merged.is_empty() {
            Segments::One(Some(Segment { id: self.rq.id, sector: self.rq.sector, len_sectors: self.rq.len_sectors }))
        } else {
            Segments::Many(self.merged.iter())
        }
    }
    fn take_segments(&mut self) -> Vec<Segment> {
        if self.merged.is_empty() {
            vec![Segment { id: self.rq.id, sector: self.rq.sector, len_sectors: self.rq.len_sectors }]
        } else {
            self.merged.take()
        }
    }
}

/// Iterator over the submitted units of a request.
#[derive(Debug)]
pub enum Segments<'a> {
    One(Option<Segment>),
    Many(std::slice::Iter<'a, Segment>),
}

impl Iterator for Segments<'_> {
    type Item = Segment;
    fn next(&mut self) -> Option<Segment> {
        match self {
            Segments::One(s) => s.take(),
            Segments::Many(it) => it.next().copied(),
        }
    }
}

/// Per-owner allocation batching (`io_context.nr_batch_requests`, `last_waited`).
#[derive(Copy, Clone, Debug, Default)]
struct Batch {
    nr: u32,
    last_waited: u64,
}

/// The request pool of one queue (`struct request_list`).
#[derive(Debug, Default)]
struct Pool {
    count: [u32; 2],
    starved: [bool; 2],
    full: [bool; 2],
    congested: [bool; 2],
    waiters: [VecDeque<Request>; 2],
}

/// A request queue with its policy.
pub struct Queue {
    cfg: QueueConfig,
    sched: Box<dyn Scheduler>,
    list: DispatchList,
    slots: IdMap<Slot>,
    /// Back-merge hash: end sector → mergeable requests ending there.
    hash: MergeHash,
    /// Scratch buffer for ids the policy moved to the dispatch list.
    moved: Vec<ReqId>,
    last_merge: Option<ReqId>,
    pool: Pool,
    batching: FastMap<Owner, Batch>,
    in_flight: u32,
    plugged: bool,
    unplug_at: Option<Instant>,
    /// The kernel would call `request_fn` now.
    run: bool,
    /// Bios of tasks woken for a slot, whose requests go in after the current dispatch
    /// decision (`admit_woken`).
    woken: Vec<Request>,
    /// A blk-mq scheduler ([`Scheduler::blk_mq`]): the queue follows blk-mq's rules.
    mq: bool,
    /// blk-mq: the last run stopped because the device was full (`SCHED_RESTART`), so the
    /// next completion runs the queue again.
    restart: bool,
    /// blk-mq: a run dispatched nothing while the policy held requests; the queue runs
    /// again at this time (`blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY)`).
    rerun_at: Option<Instant>,
    events: VecDeque<Event>,
    record: Option<Vec<Record>>,
    last_now: Instant,
    /// `/proc/diskstats`' counters ([`crate::diskstats`]).
    acct: crate::diskstats::Accounting,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("scheduler", &self.sched.name())
            .field("config", &self.cfg)
            .field("queued", &self.sched.queued())
            .field("dispatch_list", &self.list.len())
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl Queue {
    pub fn new(cfg: QueueConfig, mut sched: Box<dyn Scheduler>) -> Self {
        assert!(cfg.nr_requests >= 4 && cfg.depth >= 1 && cfg.max_sectors >= 8);
        sched.init_queue(&cfg);
        let mq = sched.blk_mq();
        Queue {
            mq,
            restart: false,
            rerun_at: None,
            cfg,
            sched,
            list: DispatchList::default(),
            slots: IdMap::default(),
            hash: MergeHash::default(),
            moved: Vec::new(),
            last_merge: None,
            pool: Pool::default(),
            batching: FastMap::default(),
            in_flight: 0,
            plugged: false,
            unplug_at: None,
            run: false,
            woken: Vec::new(),
            events: VecDeque::new(),
            record: None,
            last_now: Instant::ZERO,
            acct: Default::default(),
        }
    }

    /// The disk's counters as `/proc/diskstats` would show them at `now`
    /// ([`crate::diskstats`]).
    pub fn disk_stats(&self, now: Instant) -> crate::DiskStats {
        self.acct.at(now)
    }

    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }
    pub fn scheduler(&self) -> &dyn Scheduler {
        &*self.sched
    }
    pub fn scheduler_mut(&mut self) -> &mut dyn Scheduler {
        &mut *self.sched
    }
    /// Requests started by the device and not completed.
    /// Is request `id` on the device (dispatched, not yet completed or requeued)? Drivers
    /// that take completions from outside (scenario scripts, trace replay) check this;
    /// completing anything else is a caller bug and panics.
    pub fn is_in_flight(&self, id: ReqId) -> bool {
        self.slots.get(&id).is_some_and(|s| s.state == State::InFlight)
    }

    /// Is request `id` known to the queue (waiting, queued or in flight)?
    pub fn knows(&self, id: ReqId) -> bool {
        self.slots.contains_key(&id) || self.woken.iter().any(|b| b.id == id)
    }

    /// The queue is plugged (holding requests back so they can gather; `plugging`).
    pub fn is_plugged(&self) -> bool {
        self.plugged
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }
    /// Allocated request slots in a direction.
    pub fn allocated(&self, dir: Dir) -> u32 {
        self.pool.count[dir.index()]
    }
    /// Submitters waiting for a slot in a direction.
    pub fn waiting(&self, dir: Dir) -> usize {
        self.pool.waiters[dir.index()].len()
    }
    pub fn is_congested(&self, dir: Dir) -> bool {
        self.pool.congested[dir.index()]
    }
    /// Requests inside the policy or on the dispatch list (not yet started), and those
    /// of woken submitters about to go in.
    pub fn pending(&self) -> usize {
        self.sched.queued() + self.list.len() + self.woken.len()
    }
    /// True when nothing is queued, dispatched, in flight or waiting for a slot.
    pub fn is_idle(&self) -> bool {
        self.slots.is_empty() && self.woken.is_empty() && self.pool.waiters.iter().all(|w| w.is_empty())
    }
    /// The submitted units of a request that `poll_dispatch` returned.
    pub fn segments(&self, id: ReqId) -> Segments<'_> {
        self.slots.get(&id).expect("segments of an unknown request").segments()
    }

    /// Keep a record of every input and dispatch (see [`crate::trace`]).
    pub fn start_recording(&mut self) {
        self.record = Some(Vec::new());
    }
    /// Whether [`Queue::start_recording`] was called.
    pub fn recording(&self) -> bool {
        self.record.is_some()
    }
    pub fn take_record(&mut self) -> Vec<Record> {
        self.record.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn tick(&mut self, now: Instant) {
        assert!(now >= self.last_now, "time went backwards: {now} < {}", self.last_now);
        self.last_now = now;
    }

    fn rec(&mut self, r: impl FnOnce() -> Record) {
        if let Some(v) = &mut self.record {
            v.push(r());
        }
    }

    // ----------------------------------------------------------------------------------
    // Submission (`__make_request`)

    /// A submitter hands over a unit of I/O.
    pub fn handle_arrival(&mut self, now: Instant, bio: Request) -> Admission {
        self.enter(now);
        self.rec(|| Record::Arrival { at: now, rq: bio });
        assert!(bio.len_sectors > 0 || bio.op == Op::Flush, "empty request {}", bio.id);
        assert!(!self.slots.contains_key(&bio.id), "duplicate request id {}", bio.id);
        let barrier = bio.op == Op::Flush;
        if !barrier
            && bio.op != Op::Discard
            && !self.queue_empty()
            && let Some(adm) = self.try_merge(now, &bio)
        {
            return adm;
        }
        if !self.get_request(now, &bio) {
            let d = bio.dir().index();
            self.pool.waiters[d].push_back(bio);
            self.events.push_back(Event::Sleep { id: bio.id });
            // The sleeping task unplugs the queue so its wait is not prolonged.
            self.unplug(false);
            return Admission::Wait;
        }
        self.insert_new(now, bio);
        Admission::Queued
    }

    /// `elv_queue_empty`: nothing on the dispatch list and nothing in the policy.
    fn queue_empty(&self) -> bool {
        self.list.is_empty() && self.sched.is_empty()
    }

    /// Insert a freshly allocated request.
    fn insert_new(&mut self, now: Instant, rq: Request) {
        self.acct.started(now, &rq);
        let barrier = rq.op == Op::Flush;
        let mut slot = Slot { rq, state: State::Sorted, sorted: !barrier, nomerge: false, merged: Merged::default() };
        if barrier {
            // INSERT_BACK: drain the policy, append, start the queue (a blk-mq scheduler
            // is bypassed instead, keeping what it holds).
            slot.state = State::Dispatched;
            slot.nomerge = true;
            self.slots.insert(rq.id, slot);
            self.events.push_back(Event::Queued { id: rq.id });
            if !self.mq {
                let mut ctx = Ctx::new(&mut self.list);
                self.sched.drain(now, &mut ctx);
            }
            self.list.add_barrier(rq);
            self.after_policy(false);
            self.remove_plug();
            self.run = true;
            return;
        }
        // IDE: the request in flight is still on the list, so the queue is not empty.
        let head_active = self.cfg.dequeue == Dequeue::Completion && self.in_flight > 0;
        // blk-mq has no queue plug: an insertion runs the hardware queue.
        if self.cfg.plugging && !self.mq && self.queue_empty() && !head_active {
            self.plug(now);
        }
        if rq.op == Op::Discard {
            slot.nomerge = true;
        }
        let mergeable = !slot.nomerge;
        self.slots.insert(rq.id, slot);
        if mergeable {
            self.hash.insert(rq.end(), rq.id);
            if self.last_merge.is_none() {
                self.last_merge = Some(rq.id);
            }
        }
        self.events.push_back(Event::Queued { id: rq.id });
        let mut ctx = Ctx::new(&mut self.list);
        self.sched.insert(now, &rq, &mut ctx);
        let kicked = ctx.kicked();
        self.after_policy(kicked);
        if !self.cfg.plugging || self.mq {
            self.run = true;
        } else if self.plugged && self.cfg.unplug == Unplug::Timer {
            // q->in_flight counts requests the driver has dequeued: an IDE request only
            // once it completes.
            let dequeued = if self.cfg.dequeue == Dequeue::Issue { self.in_flight } else { 0 };
            let nrq = self.pool.count[0] + self.pool.count[1] - dequeued;
            if nrq >= self.cfg.unplug_thresh {
                self.unplug(false);
            }
        }
    }

    /// Bookkeeping after a policy hook: requests it moved to the dispatch list leave the
    /// merge hash (unless the policy keeps them mergeable); a kick runs the queue.
    fn after_policy(&mut self, kicked: bool) {
        let keep = self.sched.dispatched_mergeable();
        let mut moved = std::mem::take(&mut self.moved);
        moved.extend(self.list.take_moved());
        for &id in &moved {
            let slot = self.slots.get_mut(&id).expect("policy dispatched an unknown request");
            if slot.state == State::Sorted || slot.state == State::Dispatched {
                slot.state = State::Dispatched;
            } else {
                panic!("policy dispatched request {id} twice");
            }
            if !keep {
                let end = slot.rq.end();
                self.hash.remove(end, id);
                if self.last_merge == Some(id) {
                    self.last_merge = None;
                }
            }
        }
        moved.clear();
        self.moved = moved;
        if kicked {
            // blk_start_queueing: a plugged queue is unplugged, an unplugged one run.
            if self.cfg.kick_unplug {
                self.unplug(false);
            }
            self.run = true;
        }
    }

    fn mergeable(&self, slot: &Slot, bio: &Request) -> bool {
        let state_ok = match slot.state {
            State::Sorted => true,
            // On the dispatch list and not yet started.
            State::Dispatched => self.sched.dispatched_mergeable(),
            State::InFlight => false,
        };
        state_ok
            && !slot.nomerge
            && slot.rq.op == bio.op
            && matches!(bio.op, Op::Read | Op::Write)
            && self.sched.allow_merge(&slot.rq, bio)
    }

    /// `elv_merge` and the merge half of `__make_request`.
    fn try_merge(&mut self, now: Instant, bio: &Request) -> Option<Admission> {
        let mut found: Option<(ReqId, MergeKind)> = None;
        // A 2.4 elevator chooses for itself (`elevator_linus_merge`).
        let chosen = if matches!(bio.op, Op::Read | Op::Write) { self.sched.merge_scan(now, bio) } else { None };
        match chosen {
            Some(MergeChoice::Insert) => return None,
            Some(MergeChoice::Merge(id, kind)) => {
                let fits = self.slots.get(&id).is_some_and(|slot| {
                    self.mergeable(slot, bio)
                        && match kind {
                            MergeKind::Back => slot.rq.end() == bio.sector,
                            MergeKind::Front => slot.rq.sector == bio.end(),
                        }
                });
                if !fits {
                    return None;
                }
                found = Some((id, kind));
            }
            None => {}
        }
        if found.is_none()
            && chosen.is_none()
            && let Some(lm) = self.last_merge
        {
            let slot = &self.slots[&lm];
            if self.mergeable(slot, bio) {
                if slot.rq.end() == bio.sector {
                    found = Some((lm, MergeKind::Back));
                } else if slot.rq.sector.checked_sub(bio.len_sectors as u64) == Some(bio.sector) {
                    found = Some((lm, MergeKind::Front));
                }
            }
        }
        if found.is_none() && chosen.is_none() {
            // The hash lookup returns the first live entry with that end (stale entries are
            // removed eagerly when requests leave the policy, so all entries are live).
            if let Some(id) = self.hash.first(bio.sector)
                && self.mergeable(&self.slots[&id], bio)
            {
                found = Some((id, MergeKind::Back));
            }
        }
        if found.is_none()
            && chosen.is_none()
            && let Some(id) = self.sched.front_merge_candidate(bio)
            && let Some(slot) = self.slots.get(&id)
            && slot.rq.sector == bio.end()
            && self.mergeable(slot, bio)
        {
            found = Some((id, MergeKind::Front));
        }
        let (id, kind) = found?;
        // ll_back_merge_fn / ll_front_merge_fn: the size limit.
        let slot = self.slots.get_mut(&id).unwrap();
        if slot.rq.len_sectors + bio.len_sectors > self.cfg.max_sectors {
            slot.nomerge = true;
            let end = slot.rq.end();
            self.hash.remove(end, id);
            if self.last_merge == Some(id) {
                self.last_merge = None;
            }
            return None;
        }
        let old_end = slot.rq.end();
        if slot.merged.is_empty() {
            slot.merged.vec().push(Segment {
                id: slot.rq.id,
                sector: slot.rq.sector,
                len_sectors: slot.rq.len_sectors,
            });
        }
        let seg = Segment { id: bio.id, sector: bio.sector, len_sectors: bio.len_sectors };
        match kind {
            MergeKind::Back => slot.merged.vec().push(seg),
            MergeKind::Front => {
                slot.merged.vec().insert(0, seg);
                slot.rq.sector = bio.sector;
            }
        }
        slot.rq.len_sectors += bio.len_sectors;
        slot.rq.prio = crate::request::IoPrio::best(slot.rq.prio, bio.prio);
        let rq = slot.rq;
        let state = slot.state;
        self.acct.merged(bio);
        self.events.push_back(Event::Merged { id: bio.id, into: id, kind });
        if state == State::Dispatched {
            // 2003 CFQ: growing a request already on the dispatch list.
            self.list.update(&rq);
            self.hash.remove(old_end, id);
            self.hash.insert(rq.end(), id);
            self.last_merge = Some(id);
            return Some(Admission::Merged { into: id, kind });
        }
        if kind == MergeKind::Back {
            // elv_rqhash_reposition: the request's end moved.
            self.hash.remove(old_end, id);
            self.hash.insert(rq.end(), id);
        }
        // Try to close the gap to the neighbour (attempt_back_merge / attempt_front_merge).
        let coalesced = match kind {
            MergeKind::Back => self.sched.latter(&rq).and_then(|next| self.attempt_merge(now, id, next)),
            MergeKind::Front => self.sched.former(&rq).and_then(|prev| self.attempt_merge(now, prev, id)),
        };
        match coalesced {
            Some(survivor) => {
                self.last_merge = Some(survivor);
                Some(Admission::Merged { into: survivor, kind })
            }
            None => {
                let mut ctx = Ctx::new(&mut self.list);
                self.sched.merged(now, &rq, kind, &mut ctx);
                let kicked = ctx.kicked();
                self.after_policy(kicked);
                self.last_merge = Some(id);
                Some(Admission::Merged { into: id, kind })
            }
        }
    }

    /// `attempt_merge(q, rq, next)`: absorb `next` into `rq` if they are exactly
    /// contiguous and both still mergeable. Returns the survivor.
    fn attempt_merge(&mut self, now: Instant, rq_id: ReqId, next_id: ReqId) -> Option<ReqId> {
        let (a, b) = (&self.slots[&rq_id], &self.slots[&next_id]);
        if a.state != State::Sorted || b.state != State::Sorted || a.nomerge || b.nomerge {
            return None;
        }
        if a.rq.end() != b.rq.sector || a.rq.op != b.rq.op || !self.sched.allow_rq_merge(&a.rq, &b.rq) {
            return None;
        }
        if a.rq.len_sectors + b.rq.len_sectors > self.cfg.max_sectors {
            return None;
        }
        let mut next = self.slots.remove(&next_id).unwrap();
        let next_segs = next.take_segments();
        let a = self.slots.get_mut(&rq_id).unwrap();
        let old_end = a.rq.end();
        if a.merged.is_empty() {
            a.merged.vec().push(Segment { id: a.rq.id, sector: a.rq.sector, len_sectors: a.rq.len_sectors });
        }
        a.merged.vec().extend(next_segs);
        a.rq.len_sectors += next.rq.len_sectors;
        if a.rq.arrival > next.rq.arrival {
            a.rq.arrival = next.rq.arrival;
        }
        a.rq.prio = crate::request::IoPrio::best(a.rq.prio, next.rq.prio);
        let rq = a.rq;
        self.sched.merge_requests(now, &rq, &next.rq);
        self.hash.remove(old_end, rq_id);
        self.hash.remove(next.rq.end(), next_id);
        self.hash.insert(rq.end(), rq_id);
        if self.last_merge == Some(next_id) {
            self.last_merge = None;
        }
        self.events.push_back(Event::Coalesced { id: next_id, into: rq_id });
        self.acct.absorbed(now, &next.rq);
        self.freed_request(now, next.rq.dir());
        Some(rq_id)
    }

    // ----------------------------------------------------------------------------------
    // The request pool (`get_request`, `freed_request`)

    fn batching_now(&self, owner: Owner, now_j: u64) -> bool {
        match self.batching.get(&owner) {
            None => false,
            Some(b) => b.nr == BATCH_REQUESTS || (b.nr > 0 && now_j < b.last_waited + self.batch_time_j()),
        }
    }

    /// `BLK_BATCH_TIME` = HZ/50.
    fn batch_time_j(&self) -> u64 {
        (self.cfg.hz.get() / 50) as u64
    }

    fn set_batching(&mut self, owner: Owner, now_j: u64) {
        if self.batching_now(owner, now_j) {
            return;
        }
        self.batching.insert(owner, Batch { nr: BATCH_REQUESTS, last_waited: now_j });
    }

    /// Try to allocate a slot for `bio` (2.6.20 `get_request`).
    fn get_request(&mut self, now: Instant, bio: &Request) -> bool {
        if self.cfg.request_alloc != RequestAlloc::V2_6_20 {
            return self.get_request_2_5(now, bio);
        }
        let d = bio.dir().index();
        let now_j = self.cfg.hz.jiffies(now);
        let m = self.sched.may_queue(now, bio.owner, bio.prio, bio.dir(), bio.is_sync());
        if m == MayQueue::No {
            if self.pool.count[d] == 0 {
                self.pool.starved[d] = true;
            }
            return false;
        }
        let nr = self.cfg.nr_requests;
        let mut looked_up_ioc = false;
        if self.pool.count[d] + 1 >= self.cfg.congestion_on() {
            if self.pool.count[d] + 1 >= nr {
                looked_up_ioc = true;
                if !self.pool.full[d] {
                    self.set_batching(bio.owner, now_j);
                    self.pool.full[d] = true;
                } else if m != MayQueue::Must && !self.batching_now(bio.owner, now_j) {
                    return false;
                }
            }
            self.set_congested(bio.dir());
        }
        if self.pool.count[d] >= 3 * nr / 2 {
            return false;
        }
        self.pool.count[d] += 1;
        self.pool.starved[d] = false;
        if looked_up_ioc
            && self.batching_now(bio.owner, now_j)
            && let Some(b) = self.batching.get_mut(&bio.owner)
        {
            b.nr -= 1;
        }
        true
    }

    /// 2.5 `get_request`: a slot if one is free and the policy does not refuse, whoever
    /// asks. 2.4's is the same without the policy's say (it has no `may_queue`).
    fn get_request_2_5(&mut self, now: Instant, bio: &Request) -> bool {
        let d = bio.dir().index();
        if self.pool.count[d] >= self.cfg.nr_requests {
            return false;
        }
        if self.cfg.request_alloc == RequestAlloc::V2_5
            && self.sched.may_queue(now, bio.owner, bio.prio, bio.dir(), bio.is_sync()) == MayQueue::No
        {
            return false;
        }
        if self.pool.count[d] + 1 >= self.cfg.congestion_on() {
            self.set_congested(bio.dir());
        }
        self.pool.count[d] += 1;
        true
    }

    /// A request slot was released.
    fn freed_request(&mut self, now: Instant, dir: Dir) {
        let d = dir.index();
        self.pool.count[d] -= 1;
        if self.cfg.request_alloc != RequestAlloc::V2_6_20 {
            // __blk_put_request (2.4: blkdev_release_request): back on the free list; one
            // sleeper is woken only once batch_requests slots are free, so until then a
            // running task takes them.
            if self.cfg.request_alloc == RequestAlloc::V2_5 {
                self.report_release(dir);
            }
            if self.cfg.nr_requests - self.pool.count[d] >= self.cfg.batch_requests() {
                self.wake_one(now, dir);
            }
            return;
        }
        self.freed_dir(now, dir);
        if self.pool.starved[d ^ 1] {
            self.freed_dir(now, dir.other());
        }
    }

    /// Mark `dir` congested (once, when it becomes so).
    fn set_congested(&mut self, dir: Dir) {
        let d = dir.index();
        if !self.pool.congested[d] {
            self.pool.congested[d] = true;
            self.events.push_back(Event::Congestion { dir, congested: true });
        }
    }

    /// After a release: below the release threshold the direction is uncongested, and
    /// that is reported on every such release (`blk_clear_queue_congested` wakes the
    /// `blk_congestion_wait` sleepers each time, whether or not the flag was set).
    fn report_release(&mut self, dir: Dir) {
        let d = dir.index();
        if self.pool.count[d] < self.cfg.congestion_off() {
            self.pool.congested[d] = false;
            self.events.push_back(Event::Congestion { dir, congested: false });
        }
    }

    fn freed_dir(&mut self, now: Instant, dir: Dir) {
        let d = dir.index();
        self.report_release(dir);
        if self.pool.count[d] < self.cfg.nr_requests {
            self.pool.full[d] = false;
            self.wake_one(now, dir);
        }
    }

    /// The start of every input: the clock moves on, and the tasks the previous input
    /// woke have run.
    fn enter(&mut self, now: Instant) {
        self.tick(now);
        self.admit_woken(now);
    }

    /// Insert the requests of tasks woken for a slot (`wake_one`), as each woken task
    /// does when it runs: after the dispatch decision of the path that woke it, before
    /// the next input.
    fn admit_woken(&mut self, now: Instant) {
        for bio in std::mem::take(&mut self.woken) {
            // init_request_from_bio runs after get_request_wait returns: the request's
            // start_time (what CFQ's FIFO ages from) is now, not the bio's submission.
            self.insert_new(now, Request { arrival: now, ..bio });
        }
    }

    /// Wake the first sleeper of a direction: it becomes a batcher and retries; if it
    /// still gets no slot it sleeps again at the back of the line.
    fn wake_one(&mut self, now: Instant, dir: Dir) {
        let d = dir.index();
        let Some(bio) = self.pool.waiters[d].pop_front() else {
            return;
        };
        if self.cfg.request_alloc == RequestAlloc::V2_6_20 {
            let now_j = self.cfg.hz.jiffies(now);
            self.set_batching(bio.owner, now_j);
        }
        if self.get_request(now, &bio) {
            self.events.push_back(Event::Admitted { id: bio.id });
            // freed_request only wakes the sleeper; the driver's request function runs in
            // the same completion path, and the woken task inserts its request when it
            // runs, after that dispatch decision (`admit_woken`).
            self.woken.push(bio);
        } else {
            self.pool.waiters[d].push_back(bio);
        }
    }

    // ----------------------------------------------------------------------------------
    // Plugging

    fn plug(&mut self, now: Instant) {
        if !self.plugged {
            self.plugged = true;
            self.unplug_at = match self.cfg.unplug {
                Unplug::Timer => Some(now.saturating_add(self.cfg.unplug_delay)),
                Unplug::TqDisk => None,
            };
            self.events.push_back(Event::Plug);
        }
    }

    fn remove_plug(&mut self) -> bool {
        let was = self.plugged;
        self.plugged = false;
        self.unplug_at = None;
        was
    }

    /// `__generic_unplug_device`: only a plugged queue is started by an unplug.
    fn unplug(&mut self, timer: bool) {
        if self.remove_plug() {
            self.events.push_back(Event::Unplug { timer });
            self.run = true;
        }
    }

    /// A submitter is about to wait for I/O it issued (`sync_page` → `unplug_fn`), or a
    /// sync bio was submitted: start a plugged queue now.
    pub fn handle_unplug(&mut self, now: Instant) {
        self.enter(now);
        self.rec(|| Record::Unplug { at: now });
        self.unplug(false);
    }

    // ----------------------------------------------------------------------------------
    // Dispatch and completion

    /// The next request for the device, if the device has room and the queue would run.
    /// Once the driver has nothing more to take, the tasks a freed slot woke insert their
    /// requests, and the queue is asked again.
    pub fn poll_dispatch(&mut self, now: Instant) -> Option<Request> {
        if let Some(rq) = self.next_dispatch(now) {
            return Some(rq);
        }
        if self.woken.is_empty() {
            return None;
        }
        self.admit_woken(now);
        self.next_dispatch(now)
    }

    /// `request_fn` → `elv_next_request`: one request for the device, if it has room.
    fn next_dispatch(&mut self, now: Instant) -> Option<Request> {
        self.tick(now);
        if !self.run || self.plugged {
            return None;
        }
        if self.in_flight >= self.cfg.depth {
            // blk-mq: out of driver tags or budget, so a completion restarts the queue.
            self.restart = self.mq;
            self.run = false;
            return None;
        }
        if self.list.is_empty() {
            self.rerun_at = None;
            let mut ctx = Ctx::new(&mut self.list);
            let _ = self.sched.dispatch(now, &mut ctx);
            // A kick from inside dispatch does not re-run: the loop below already runs.
            self.after_policy(false);
            if self.list.is_empty() {
                self.run = false;
                // blk-mq: a scheduler that holds requests but gave none is run again in
                // 3 ms (`__blk_mq_do_dispatch_sched`); its own timer or a completion may
                // come first.
                if self.mq && !self.sched.is_empty() {
                    self.rerun_at = Some(now.saturating_add(BLK_MQ_BUDGET_DELAY));
                }
                return None;
            }
        }
        let rq = self.list.pop_front().expect("non-empty dispatch list");
        let slot = self.slots.get_mut(&rq.id).expect("dispatched request has no slot");
        debug_assert_eq!(slot.state, State::Dispatched);
        slot.state = State::InFlight;
        let sorted = slot.sorted;
        if self.last_merge == Some(rq.id) {
            self.last_merge = None;
        }
        if self.sched.dispatched_mergeable() {
            // Otherwise after_policy took it out of the hash when the policy dispatched it.
            self.hash.remove(rq.end(), rq.id);
        }
        self.in_flight += 1;
        if sorted {
            self.sched.activate(now, &rq);
        }
        self.events.push_back(Event::Issued { id: rq.id });
        self.rec(|| Record::Dispatch { at: now, id: rq.id });
        Some(rq)
    }

    /// The device finished request `id`.
    pub fn handle_completion(&mut self, now: Instant, id: ReqId, status: Status) {
        self.enter(now);
        self.rec(|| Record::Completion { at: now, id, status });
        let mut slot = self.slots.remove(&id).unwrap_or_else(|| panic!("completion of unknown request {id}"));
        assert_eq!(slot.state, State::InFlight, "completion of request {id} that is not in flight");
        self.in_flight -= 1;
        self.acct.completed(now, &slot.rq);
        if slot.sorted {
            let mut ctx = Ctx::new(&mut self.list);
            self.sched.completed(now, &slot.rq, status, &mut ctx);
            let kicked = ctx.kicked();
            self.after_policy(kicked);
        }
        // (Not take_segments: that allocates for the common one-unit request.)
        if slot.merged.is_empty() {
            self.events.push_back(Event::Completed { id, request: id, status });
        }
        for seg in slot.merged.take() {
            self.events.push_back(Event::Completed { id: seg.id, request: id, status });
        }
        self.freed_request(now, slot.rq.dir());
        if self.mq {
            // blk-mq: a completion runs the queue only if the last run found the device
            // full (`blk_mq_sched_restart`) or requests wait on the dispatch list; the
            // policy's own wake-ups (a kick above) run it otherwise.
            if std::mem::take(&mut self.restart) || !self.list.is_empty() {
                self.run = true;
            }
            return;
        }
        // The driver asks for more work after every completion; a 2.6 SCSI completion
        // does so through blk_run_queue, which removes a plug first (under 2.4's tq_disk
        // rule the plug stays).
        if self.cfg.dequeue == Dequeue::Issue && self.cfg.unplug == Unplug::Timer {
            self.unplug(false);
        }
        self.run = true;
    }

    /// The device gave request `id` back unstarted; it goes to the head of the list.
    pub fn handle_requeue(&mut self, now: Instant, id: ReqId) {
        self.enter(now);
        self.rec(|| Record::Requeue { at: now, id });
        let slot = self.slots.get_mut(&id).unwrap_or_else(|| panic!("requeue of unknown request {id}"));
        assert_eq!(slot.state, State::InFlight, "requeue of request {id} that is not in flight");
        slot.state = State::Dispatched;
        let (rq, sorted) = (slot.rq, slot.sorted);
        self.in_flight -= 1;
        if sorted {
            self.sched.deactivate(now, &rq);
        }
        self.list.add_front(rq);
        self.events.push_back(Event::Requeued { id });
        self.run = true;
    }

    /// Fire due timers: the unplug timer and the policy's. Safe to call spuriously.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.enter(now);
        self.rec(|| Record::Timeout { at: now });
        if self.plugged && self.unplug_at.is_some_and(|t| t <= now) {
            self.unplug(true);
        }
        if self.rerun_at.is_some_and(|t| t <= now) {
            self.rerun_at = None;
            self.run = true;
        }
        let mut ctx = Ctx::new(&mut self.list);
        self.sched.handle_timeout(now, &mut ctx);
        let kicked = ctx.kicked();
        self.after_policy(kicked);
    }

    /// The earliest time `handle_timeout` has work to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let plug = if self.plugged { self.unplug_at } else { None };
        [plug, self.rerun_at, self.sched.poll_timeout()].into_iter().flatten().min()
    }

    /// A task exited (the policy forgets or learns from it).
    pub fn handle_owner_exit(&mut self, now: Instant, owner: Owner) {
        self.enter(now);
        self.rec(|| Record::Exit { at: now, owner });
        self.batching.remove(&owner);
        let mut ctx = Ctx::new(&mut self.list);
        self.sched.owner_exited(now, owner, &mut ctx);
        let kicked = ctx.kicked();
        self.after_policy(kicked);
    }

    /// Force every queued request onto the dispatch list (`elv_drain_elevator`).
    pub fn drain(&mut self, now: Instant) {
        self.enter(now);
        self.rec(|| Record::Drain { at: now });
        let mut ctx = Ctx::new(&mut self.list);
        self.sched.drain(now, &mut ctx);
        self.after_policy(false);
        assert!(self.sched.is_empty(), "{} kept requests after drain", self.sched.name());
        self.remove_plug();
        self.run = true;
    }

    /// Feed one recorded input (see [`crate::trace`]).
    pub fn handle_input(&mut self, input: &Input, now: Instant) -> Option<Admission> {
        match *input {
            Input::Arrival(rq) => return Some(self.handle_arrival(now, rq)),
            Input::Completion { id, status } => self.handle_completion(now, id, status),
            Input::Requeue(id) => self.handle_requeue(now, id),
            Input::Unplug => self.handle_unplug(now),
            Input::OwnerExit(o) => self.handle_owner_exit(now, o),
            Input::Drain => self.drain(now),
            Input::Timeout => self.handle_timeout(now),
        }
        None
    }

    /// The next [`Event`] the queue has to report, oldest first, or `None` when all have
    /// been taken. Events are produced by the inputs and by `poll_dispatch` (a request
    /// issued, a unit completed, a sleeper admitted); drain them after each input and its
    /// dispatches, as the driver loop does, to wake submitters and keep statistics. Not
    /// draining them only grows the queue of events; it changes no decision.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

/// The back-merge hash (`elv_rqhash`): requests by end sector, the newest first, as
/// 2.6.20's `elv_rqhash_add` puts a request at the head of its chain (`hlist_add_head`)
/// and `elv_rqhash_find` returns the first match (a request whose end moved is re-added,
/// so it counts as newest). Almost always one request per end: `first` holds the newest,
/// and the rare older ones (overlapping requests) wait in `overflow`, oldest first.
#[derive(Debug, Default)]
struct MergeHash {
    first: FastMap<u64, ReqId>,
    overflow: Vec<(u64, ReqId)>,
}

impl MergeHash {
    fn insert(&mut self, end: u64, id: ReqId) {
        match self.first.insert(end, id) {
            Some(old) if old != id => {
                self.overflow.retain(|&x| x != (end, id));
                self.overflow.push((end, old));
            }
            _ => {}
        }
    }
    fn remove(&mut self, end: u64, id: ReqId) {
        if self.first.get(&end) == Some(&id) {
            self.first.remove(&end);
            // The next newest with that end takes its place.
            if let Some(i) = self.overflow.iter().rposition(|&(e, _)| e == end) {
                let (_, other) = self.overflow.remove(i);
                self.first.insert(end, other);
            }
        } else if let Some(i) = self.overflow.iter().position(|&x| x == (end, id)) {
            self.overflow.remove(i);
        }
    }
    fn first(&self, end: u64) -> Option<ReqId> {
        self.first.get(&end).copied()
    }
}
