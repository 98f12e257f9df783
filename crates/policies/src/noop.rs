//! noop: a FIFO (Linux 2.6.20 `block/noop-iosched.c`).
//!
//! Requests are kept in arrival order; each dispatch call moves the oldest one to the
//! dispatch list with `elv_dispatch_sort` (so it is placed in one-way elevator order among
//! requests not yet started — in practice the list is usually empty and noop is a FIFO).
//! Merging happens only through the framework's `last_merge` cache and back-merge hash;
//! request-request merges only between FIFO neighbours. No tunables.
//!
//! Bound on waiting: a request waits for at most the requests queued before it.

use crate::common::Fifo;
use crate::registry::{Policy, WaitBound};
use iosched_core::{Ctx, Decision, IdMap, Instant, ReqId, Request, Scheduler};

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "noop",
    aliases: &["none"],
    follows: "Linux 2.6.20 block/noop-iosched.c",
    summary: "FIFO; merging only",
    new: |_hz| Box::new(Noop::new()),
    variants: &[],
    // FIFO: at most the requests ahead (the kit's load keeps 24 outstanding; 64 allows for
    // the dispatch list and merges), 10 ms each.
    waiting_bound: |_| WaitBound::Ms(64 * 10 + 10),
};

#[derive(Debug, Default)]
pub struct Noop {
    fifo: Fifo,
    /// Queued requests with their FIFO position.
    rqs: IdMap<(Request, u64)>,
}

impl Noop {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    iosched_core::tunables! {}

    fn insert(&mut self, _now: Instant, rq: &Request, _ctx: &mut Ctx) {
        let key = self.fifo.push_back(rq.id);
        self.rqs.insert(rq.id, (*rq, key));
    }

    fn merged(&mut self, _now: Instant, rq: &Request, _kind: iosched_core::MergeKind, _ctx: &mut Ctx) {
        if let Some(e) = self.rqs.get_mut(&rq.id) {
            e.0 = *rq;
        }
    }

    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        let (_, key) = self.rqs.remove(&next.id).expect("merged request not queued");
        self.fifo.remove(key);
        self.rqs.get_mut(&rq.id).expect("surviving request not queued").0 = *rq;
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        self.rqs.get(&rq.id).and_then(|&(_, k)| self.fifo.before(k))
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        self.rqs.get(&rq.id).and_then(|&(_, k)| self.fifo.after(k))
    }

    fn dispatch(&mut self, _now: Instant, ctx: &mut Ctx) -> Decision {
        let Some(id) = self.fifo.front() else {
            return Decision::Empty;
        };
        let (rq, key) = self.rqs.remove(&id).unwrap();
        self.fifo.remove(key);
        ctx.dispatch_sort(rq);
        Decision::Dispatch
    }

    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        while self.dispatch(now, ctx) == Decision::Dispatch {}
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant, _ctx: &mut Ctx) {}

    fn is_empty(&self) -> bool {
        self.fifo.is_empty()
    }
    fn queued(&self) -> usize {
        self.fifo.len()
    }
}
