//! SSTF — shortest seek time first — as an iosched policy written outside the tree: the
//! template for testing a scheduling idea of your own (`docs/writing-a-scheduler.md`).
//!
//! The policy: queued requests are kept sorted by sector; each dispatch serves the request
//! whose start is nearest the end of the last one dispatched, in either direction (a tie
//! goes forward). That is the classic textbook SSTF, which Linux never shipped: it
//! minimises seeking and starves a request far from a busy region for as long as requests
//! keep arriving near the head (`tests/golden/sstf_starves.scn`). The one tunable,
//! `fifo_expire`, bounds that: a request older than it is served first, oldest first, as
//! deadline's FIFOs do; 0 (the default) is pure SSTF.
//!
//! Bound on waiting: none with `fifo_expire=0`; otherwise a request is served within
//! `fifo_expire` plus the service of the requests that expired before it.
//!
//! The framework (`iosched_core::Queue`) does the rest, as the kernel's elevator core does:
//! the request pool, back merges through its hash, plugging, the dispatch list and the
//! device's queue depth. The policy only chooses.

use iosched_core::{Ctx, Decision, Duration, Hz, Instant, MergeKind, ReqId, Request, Scheduler, Spec};
use iosched_policies::{Policy, WaitBound};
use std::collections::{BTreeSet, HashMap};

/// The registry entry: what `iosched_cli::main_with` and the test kit need to know.
pub const POLICY: Policy = Policy {
    name: "sstf",
    aliases: &[],
    follows: "no kernel: the textbook shortest-seek-first elevator (an example policy)",
    summary: "nearest request to the head first, either direction; optional FIFO expiry",
    new: |_hz: Hz| Box::new(Sstf::default()),
    variants: &["fifo_expire=250"],
    waiting_bound: |spec| match spec.setting_for("fifo_expire") {
        // 250 ms, then at most the 24 requests the kit's load keeps outstanding, ≤ 10 ms
        // each, expired before it; 100 ms for the harness's step.
        Some((_, v)) if v == "250" => WaitBound::Ms(250 + 24 * 10 + 100),
        _ => WaitBound::None { scenario: "sstf_starves.scn" },
    },
};

/// The policy's state.
#[derive(Debug, Default)]
pub struct Sstf {
    /// `fifo_expire`, 0 = off.
    expire: Duration,
    rqs: HashMap<ReqId, Request>,
    /// Queued requests by (start sector, id): the nearest to the head is a range lookup.
    by_sector: BTreeSet<(u64, ReqId)>,
    /// Queued requests by (arrival, id), for the expiry.
    by_age: BTreeSet<(Instant, ReqId)>,
    /// One past the last sector dispatched: where the head will be.
    head: u64,
}

impl Sstf {
    fn add(&mut self, rq: Request) {
        self.by_sector.insert((rq.sector, rq.id));
        self.by_age.insert((rq.arrival, rq.id));
        self.rqs.insert(rq.id, rq);
    }

    fn take(&mut self, id: ReqId) -> Request {
        let rq = self.rqs.remove(&id).expect("queued");
        self.by_sector.remove(&(rq.sector, id));
        self.by_age.remove(&(rq.arrival, id));
        rq
    }

    /// The queued request nearest the head; a tie goes forward.
    fn nearest(&self) -> Option<ReqId> {
        let fwd = self.by_sector.range((self.head, 0)..).next();
        let back = self.by_sector.range(..(self.head, 0)).next_back();
        match (fwd, back) {
            (Some(&(f, fid)), Some(&(b, bid))) => Some(if f - self.head <= self.head - b { fid } else { bid }),
            (Some(&(_, id)), None) | (None, Some(&(_, id))) => Some(id),
            (None, None) => None,
        }
    }
}

impl Scheduler for Sstf {
    fn name(&self) -> &'static str {
        "sstf"
    }

    iosched_core::tunables! {
        Spec::millis("fifo_expire", 0, i32::MAX as i64, "age after which a request is served first, oldest first (0 = never: pure SSTF)")
            => get |s| (s.expire.as_nanos() / 1_000_000) as i64,
            set |s, v| s.expire = Duration::from_millis(v as u64);
    }

    fn insert(&mut self, _now: Instant, rq: &Request, _ctx: &mut Ctx) {
        self.add(*rq);
    }

    /// A queued request that `bio` could be front-merged into: one starting where it ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        let &(sector, id) = self.by_sector.range((bio.end(), 0)..).next()?;
        (sector == bio.end() && self.rqs[&id].dir() == bio.dir()).then_some(id)
    }

    /// A bio was merged into `rq`: its start (front merge) or arrival may have changed.
    fn merged(&mut self, _now: Instant, rq: &Request, _kind: MergeKind, _ctx: &mut Ctx) {
        self.take(rq.id);
        self.add(*rq);
    }

    /// `next` was merged into `rq` and leaves the queue.
    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        self.take(next.id);
        self.take(rq.id);
        self.add(*rq);
    }

    /// The neighbours in sector order, for request-to-request merges.
    fn former(&self, rq: &Request) -> Option<ReqId> {
        self.by_sector.range(..(rq.sector, rq.id)).next_back().map(|&(_, id)| id)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        self.by_sector.range((rq.sector, rq.id + 1)..).next().map(|&(_, id)| id)
    }

    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let expired = self
            .by_age
            .first()
            .filter(|&&(t, _)| !self.expire.is_zero() && now.saturating_duration_since(t) >= self.expire)
            .map(|&(_, id)| id);
        let Some(id) = expired.or_else(|| self.nearest()) else {
            return Decision::Empty;
        };
        let rq = self.take(id);
        self.head = rq.end();
        ctx.dispatch_add_tail(rq);
        Decision::Dispatch
    }

    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        while self.dispatch(now, ctx) == Decision::Dispatch {}
    }

    /// No timer: the expiry is looked at when the queue asks for a request, as deadline's.
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant, _ctx: &mut Ctx) {}

    fn is_empty(&self) -> bool {
        self.rqs.is_empty()
    }
    fn queued(&self) -> usize {
        self.rqs.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        vec![("head".into(), self.head.to_string())]
    }
}
