//! The policy interface — the analog of the kernel's `elevator_ops` table — and the
//! dispatch list policies move requests onto.
//!
//! A policy only *chooses*. The [`crate::Queue`] framework owns mechanism (request pool,
//! merging, plugging, device depth) and calls the hooks below in the order the 2.6 block
//! layer does:
//!
//! `insert → (merged | merge_requests)* → dispatch (moves it to the dispatch list) →
//! activate (driver takes it) → (deactivate → activate)* → completed`.
//!
//! Requests are passed by reference; a policy keeps its own copy of what it needs,
//! keyed by [`ReqId`], and updates it in `merged` / `merge_requests`.
//!
//! Deviation from the one-request-per-call shape in DESIGN.md, for fidelity: `dispatch`
//! moves requests onto the framework's [`DispatchList`] (as `elv_dispatch_sort` /
//! `elv_dispatch_add_tail` do) and returns a [`Decision`]. CFQ moves up to `quantum`
//! requests in one dispatch round and its slice accounting depends on rounds, so the
//! round must be one call.

use crate::dispatch::DispatchList;
use crate::request::{Dir, IoPrio, Owner, ReqId, Request, Status};
use crate::time::Instant;
use crate::tunable::Spec;

/// What a dispatch call decided.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Decision {
    /// One or more requests were moved onto the dispatch list.
    Dispatch,
    /// Requests are held back on purpose (anticipation, slice idling, waiting for the old
    /// batch to drain). `until` is when the policy's timer fires; `None` means it is waiting
    /// for an in-flight request to complete.
    Idle { until: Option<Instant> },
    /// The policy holds nothing it could dispatch.
    Empty,
}

/// Which end of a request a bio was merged onto.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MergeKind {
    Front,
    Back,
}

/// What a policy that scans for merges itself (2.4's `elevator_merge_fn`) decided for a
/// bio: see [`Scheduler::merge_scan`].
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MergeChoice {
    /// Merge the bio into this queued request, at this end.
    Merge(ReqId, MergeKind),
    /// No merge: the bio becomes a new request (the policy has noted where it goes).
    Insert,
}

/// Answer of `may_queue` (`ELV_MQUEUE_*`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum MayQueue {
    /// Refuse the allocation.
    No,
    /// Normal rules apply.
    May,
    /// Allow even if the pool is full (up to the hard cap).
    Must,
}

/// Context handed to policy hooks: the dispatch list and a way to ask for the queue to be
/// run (the kernel's `kblockd_schedule_work` / `blk_start_queueing`).
#[derive(Debug)]
pub struct Ctx<'a> {
    pub list: &'a mut DispatchList,
    kick: bool,
}

impl<'a> Ctx<'a> {
    pub fn new(list: &'a mut DispatchList) -> Self {
        Ctx { list, kick: false }
    }
    /// Ask the framework to run the queue (call `dispatch` again when the device has room).
    pub fn kick(&mut self) {
        self.kick = true;
    }
    pub fn kicked(&self) -> bool {
        self.kick
    }
    /// `elv_dispatch_sort`: insert into the dispatch list in one-way elevator order.
    pub fn dispatch_sort(&mut self, rq: Request) {
        self.list.sort_in(rq);
    }
    /// `elv_dispatch_add_tail`: append and make this request the sort boundary.
    pub fn dispatch_add_tail(&mut self, rq: Request) {
        self.list.add_tail(rq);
    }
}

/// A policy: the analog of one `block/*-iosched.c` file.
///
/// Hooks that a policy does not need have empty defaults, as optional `elevator_ops` do.
pub trait Scheduler: Send {
    /// The kernel's name (`noop`, `deadline`, `anticipatory`, `cfq`).
    fn name(&self) -> &'static str;

    /// The tunables this policy has, by sysfs name.
    fn tunables(&self) -> &'static [Spec];
    /// Current value of a tunable in its sysfs unit.
    fn get_tunable(&self, name: &str) -> Option<i64>;
    /// Set a tunable; `value` has been range-checked against the spec.
    fn set_tunable(&mut self, name: &str, value: i64);

    /// `elevator_init_fn`: the policy is attached to a queue with this configuration.
    fn init_queue(&mut self, _cfg: &crate::config::QueueConfig) {}

    /// `add_request`: take ownership of a new request. May move aliases to dispatch.
    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx);

    /// 2.4's `elevator_merge_fn`: the policy scans its own queue for `bio`, with the
    /// scan's side effects (2.4's latency accounting), and chooses the merge itself.
    /// `None` (the default): the framework's 2.6 rules choose — the `last_merge` cache,
    /// the back-merge hash, then [`Scheduler::front_merge_candidate`]. A chosen merge still
    /// passes the framework's checks (same operation, not yet dispatched, `max_sectors`).
    fn merge_scan(&mut self, _now: Instant, _bio: &Request) -> Option<MergeChoice> {
        None
    }
    /// `merge`: a queued request that `bio` could be front-merged into (one starting at
    /// `bio.end()`), or `None`.
    fn front_merge_candidate(&self, _bio: &Request) -> Option<ReqId> {
        None
    }
    /// `allow_merge`: veto merging `bio` into `rq`.
    fn allow_merge(&self, _rq: &Request, _bio: &Request) -> bool {
        true
    }
    /// Veto absorbing request `next` into `rq` (`attempt_merge`; recent kernels refuse
    /// requests of different I/O priorities).
    fn allow_rq_merge(&self, _rq: &Request, _next: &Request) -> bool {
        true
    }
    /// `merged`: a bio was merged into `rq` (already updated); re-sort if needed.
    fn merged(&mut self, _now: Instant, _rq: &Request, _kind: MergeKind, _ctx: &mut Ctx) {}
    /// `merge_requests`: `next` was absorbed into `rq` (already updated) and disappears.
    fn merge_requests(&mut self, _now: Instant, _rq: &Request, _next: &Request) {}
    /// `former_request`: the queued request before `rq` in the policy's order.
    fn former(&self, _rq: &Request) -> Option<ReqId> {
        None
    }
    /// `latter_request`: the queued request after `rq` in the policy's order.
    fn latter(&self, _rq: &Request) -> Option<ReqId> {
        None
    }

    /// `dispatch(q, 0)`: move zero or more requests to the dispatch list.
    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision;
    /// `dispatch(q, 1)`: move everything to the dispatch list and stop any idling.
    fn drain(&mut self, now: Instant, ctx: &mut Ctx);

    /// `activate_req`: the driver started `rq`.
    fn activate(&mut self, _now: Instant, _rq: &Request) {}
    /// `deactivate_req`: the driver gave `rq` back (requeue).
    fn deactivate(&mut self, _now: Instant, _rq: &Request) {}
    /// `completed_req`: `rq` finished.
    fn completed(&mut self, _now: Instant, _rq: &Request, _status: Status, _ctx: &mut Ctx) {}

    /// `may_queue`: called before allocating a request for `owner`.
    fn may_queue(&mut self, _now: Instant, _owner: Owner, _prio: IoPrio, _dir: Dir, _sync: bool) -> MayQueue {
        MayQueue::May
    }
    /// The owner (task) exited (`exit_io_context`).
    fn owner_exited(&mut self, _now: Instant, _owner: Owner, _ctx: &mut Ctx) {}

    /// When the policy's earliest timer fires, if any is armed.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Fire timers due at `now`. Idempotent: a spurious call changes nothing.
    fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx);

    /// `queue_empty`: true if the policy holds no requests.
    fn is_empty(&self) -> bool;
    /// Number of requests the policy holds (`nr_sorted`).
    fn queued(&self) -> usize;

    /// Whether this is a blk-mq scheduler (mq-deadline, Kyber, BFQ), which the queue runs
    /// by blk-mq's rules rather than the 2.6 request queue's (see [`crate::Queue`]): no
    /// plug, a completion re-runs the queue only after the device was full
    /// (`SCHED_RESTART`), a run that dispatches nothing while the policy holds requests
    /// is repeated 3 ms later (`BLK_MQ_BUDGET_DELAY`), and a flush goes past the policy
    /// (`blk_insert_flush`) where the 2.6 block layer drains the elevator first
    /// (`ELEVATOR_INSERT_BACK`).
    fn blk_mq(&self) -> bool {
        false
    }

    /// 2003 CFQ kept requests back-mergeable while on the dispatch list. Everything from
    /// 2.6.6 on removes them from the merge hash when dispatched.
    fn dispatched_mergeable(&self) -> bool {
        false
    }

    /// Internal state for golden tests and traces, with the kernel's names
    /// (`antic_status`, `batch_dir`, `active_queue`, …).
    fn debug_state(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}
