//! cfq-v1 — the original 2003 "Complete Fair Queueing" (Jens Axboe's CFQ #2 of
//! 14 Feb 2003 as shipped in 2.5.61-mm1, the "2.5.61+CFQ" of the seed report), with the
//! Linux 2.6.6 and 2.6.8 variants as options. Reference: `reference/cfq_v1.md`.
//!
//! Each process gets a private queue of pending requests, sorted by start sector, which
//! exists only while it holds a pending request; a queue that becomes busy goes to the
//! **head** of the round-robin list. When the dispatch list is empty, a refill moves at
//! least `quantum` requests from the busy queues (the lowest-sector request of a queue
//! each time), placing each with CFQ's own simple sector insertion. There are no
//! deadlines, FIFOs, time slices, idling, read preference or completion accounting. The
//! only other lever is `may_queue`, which refuses request allocation to a process that
//! already holds more than its share of the pool.
//!
//! Literal quirks (defaults, each switchable): every refill iteration serves the list
//! *head* rather than the loop cursor (so the newest-activated queue is drained first);
//! `dispatch_sort` is not a true insertion sort; in 2003 the per-queue allocation counter
//! counts insertions and is never decremented, and dispatched requests stay back-mergeable.
//!
//! Bound on waiting: none. Every refill serves the head of `rr_list` (the newest busy
//! queue) until it empties, and a queue that becomes busy is pushed to the head, so a
//! steady stream of new processes with `quantum` or more requests each postpones an old
//! queue without bound (`tests/golden/cfq_v1_new_processes_postpone.scn`) — the weakness
//! the 2.6.10 rewrite names ("no attempt to limit upper latency bound").

use crate::common::{KeyedList, SortTree};
use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Dir, FastMap, IdMap, Instant, IoPrio, MayQueue, MergeKind, Owner, QueueConfig, ReqId, Request,
    Scheduler, Spec,
};

const VERSIONS: &[&str] = &["2003", "2.6.6", "2.6.8"];
const V2003: i64 = 0;

#[derive(Debug, Default)]
struct V1Queue {
    tree: SortTree,
    /// Per data direction; in 2003 it counts insertions and never goes down.
    queued: [u64; 2],
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "cfq-v1",
    aliases: &["cfq1"],
    follows: "CFQ #2 of Feb 2003 (2.5.61-mm1); 2.6.6 / 2.6.8 as options",
    summary: "original CFQ: per-process queues refilled round-robin, no slices, no idling",
    new: |_hz| Box::new(CfqV1::new()),
    variants: &[],
    // A queue that becomes busy goes to the head of the round-robin list and every refill
    // serves the head: a stream of new processes postpones an old queue.
    waiting_bound: |_| WaitBound::None { scenario: "cfq_v1_new_processes_postpone.scn" },
};

#[derive(Debug)]
pub struct CfqV1 {
    version: i64,
    quantum: i64,
    queued_min: i64,
    rr_head_quirk: bool,
    dispatch_sort_quirk: bool,
    /// The request pool size (`queue_nr_requests` / `q->nr_requests`) and 2.6's clamp.
    nr_requests: u64,
    max_queued: u64,

    queues: FastMap<Owner, V1Queue>,
    rr_list: KeyedList<Owner>,
    rqs: IdMap<(Request, Owner)>,
    nr: usize,
}

impl Default for CfqV1 {
    fn default() -> Self {
        Self::new()
    }
}

impl CfqV1 {
    pub fn new() -> Self {
        CfqV1 {
            version: V2003,
            quantum: 4,
            queued_min: 8,
            rr_head_quirk: true,
            dispatch_sort_quirk: true,
            nr_requests: 128,
            max_queued: 128,
            queues: FastMap::default(),
            rr_list: KeyedList::default(),
            rqs: IdMap::default(),
            nr: 0,
        }
    }

    /// Add a request to its owner's tree (alias rule: an existing request at the same
    /// sector is moved to the dispatch list first).
    fn add_to_tree(&mut self, id: ReqId, owner: Owner, ctx: &mut Ctx) {
        let sector = self.rqs[&id].0.sector;
        let dir = self.rqs[&id].0.dir().index();
        // Alias rule first (moving the alias out may empty and free this very queue).
        while let Some(alias) = self.queues.get(&owner).and_then(|q| q.tree.find(sector)) {
            self.take_from_tree(alias);
            let rq = self.rqs.remove(&alias).unwrap().0;
            self.nr -= 1;
            self.place(rq, ctx);
        }
        let q = self.queues.entry(owner).or_default();
        q.tree.add(sector, id).expect("alias removed above");
        // 2.6 counts pending requests; 2003 counts insertions (never decremented).
        q.queued[dir] += 1;
        if !self.rr_list.contains(owner) {
            self.rr_list.push_front(owner);
        }
    }

    /// Remove a request from its queue's tree; free the queue if it empties.
    fn take_from_tree(&mut self, id: ReqId) {
        let (rq, owner) = self.rqs[&id];
        let q = self.queues.get_mut(&owner).expect("request without queue");
        q.tree.remove(rq.sector, id);
        if self.version != V2003 {
            q.queued[rq.dir().index()] -= 1;
        }
        if q.tree.is_empty() {
            self.queues.remove(&owner);
            self.rr_list.remove(owner);
        }
    }

    /// CFQ v1's `dispatch_sort`.
    fn place(&mut self, rq: Request, ctx: &mut Ctx) {
        let list = &*ctx.list;
        let n = list.len();
        let pos = if self.dispatch_sort_quirk {
            if n > 0 && rq.sector < list.get(0).unwrap().sector {
                n - 1 // immediately before the last element
            } else {
                // The tail-most element at or beyond rq goes after it.
                let mut pos = n;
                for i in (0..n).rev() {
                    if rq.sector <= list.get(i).unwrap().sector {
                        pos = i;
                        break;
                    }
                }
                pos
            }
        } else {
            (0..n).find(|&i| list.get(i).unwrap().sector > rq.sector).unwrap_or(n)
        };
        ctx.list.insert(pos, rq);
    }

    /// Move the lowest-sector request of `owner`'s queue to the dispatch list.
    fn move_one(&mut self, owner: Owner, ctx: &mut Ctx) -> bool {
        let id = self.queues[&owner].tree.first().expect("busy queue with empty tree");
        self.take_from_tree(id);
        let rq = self.rqs.remove(&id).unwrap().0;
        self.nr -= 1;
        self.place(rq, ctx);
        self.queues.contains_key(&owner)
    }
}

impl Scheduler for CfqV1 {
    fn name(&self) -> &'static str {
        "cfq-v1"
    }
    iosched_core::tunables! {
        Spec::choice("version", VERSIONS, "2003 = CFQ #2 in 2.5.61-mm1; 2.6.6 / 2.6.8 = the mainline v1 releases")
            => get |s| s.version,
            set |s, v| s.version = v;
        Spec::count("quantum", 1, i32::MAX as i64, "minimum number of requests moved to the dispatch list per refill")
            => get |s| s.quantum,
            set |s, v| s.quantum = v;
        Spec::count(
            "queued",
            1,
            i32::MAX as i64,
            "per-queue allocation allowance (2003) / term subtracted from the pool in the fair share",
        )
            => get |s| s.queued_min,
            set |s, v| s.queued_min = v;
        Spec::boolean(
            "rr_head_quirk",
            "every refill iteration serves the head of the busy list, not the cursor (literal in all v1 versions; 0 = the vendor/intended cursor)",
        )
            => get |s| s.rr_head_quirk as i64,
            set |s, v| s.rr_head_quirk = v != 0;
        Spec::boolean(
            "dispatch_sort_quirk",
            "v1's dispatch-list placement, which is not a true insertion sort (0 = true ascending insertion)",
        )
            => get |s| s.dispatch_sort_quirk as i64,
            set |s, v| s.dispatch_sort_quirk = v != 0;
    }

    fn init_queue(&mut self, cfg: &QueueConfig) {
        self.nr_requests = cfg.nr_requests as u64;
        self.max_queued = cfg.nr_requests as u64;
    }

    fn insert(&mut self, _now: Instant, rq: &Request, ctx: &mut Ctx) {
        self.rqs.insert(rq.id, (*rq, rq.owner));
        self.nr += 1;
        self.add_to_tree(rq.id, rq.owner, ctx);
    }

    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        // Only in the submitting process's own queue.
        self.queues.get(&bio.owner)?.tree.find(bio.end())
    }

    fn merged(&mut self, _now: Instant, rq: &Request, kind: MergeKind, ctx: &mut Ctx) {
        let Some(&(old, owner)) = self.rqs.get(&rq.id) else {
            return; // grew while on the dispatch list (2003)
        };
        self.rqs.get_mut(&rq.id).unwrap().0 = *rq;
        if kind == MergeKind::Front {
            // Reposition in the tree; in 2003 the re-insertion counts again.
            let q = self.queues.get_mut(&owner).unwrap();
            q.tree.remove(old.sector, rq.id);
            if self.version != V2003 {
                q.queued[rq.dir().index()] -= 1;
            }
            self.add_to_tree(rq.id, owner, ctx);
        }
    }

    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        if let Some(e) = self.rqs.get_mut(&rq.id) {
            e.0 = *rq;
        }
        if self.rqs.contains_key(&next.id) {
            self.take_from_tree(next.id);
            self.rqs.remove(&next.id);
            self.nr -= 1;
        }
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let &(r, owner) = self.rqs.get(&rq.id)?;
        self.queues.get(&owner)?.tree.prev(r.sector)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let &(r, owner) = self.rqs.get(&rq.id)?;
        self.queues.get(&owner)?.tree.next(r.sector)
    }

    /// The refill (`cfq_dispatch_requests`), called only when the dispatch list is empty.
    fn dispatch(&mut self, _now: Instant, ctx: &mut Ctx) -> Decision {
        if self.rr_list.is_empty() {
            return Decision::Empty;
        }
        let mut moved = 0;
        loop {
            let mut nonempty_after = 0;
            let pass: Vec<Owner> = if self.rr_head_quirk { Vec::new() } else { self.rr_list.to_vec() };
            let n = self.rr_list.len();
            let mut rest = pass.iter().copied();
            for _ in 0..n {
                let owner = if self.rr_head_quirk {
                    match self.rr_list.front() {
                        Some(o) => o,
                        None => break,
                    }
                } else {
                    let Some(o) = rest.next() else { break };
                    if !self.queues.contains_key(&o) {
                        continue;
                    }
                    o
                };
                if self.move_one(owner, ctx) {
                    nonempty_after += 1;
                }
                moved += 1;
            }
            if !(moved < self.quantum && nonempty_after > 0) {
                break;
            }
        }
        Decision::Dispatch
    }

    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        while self.dispatch(now, ctx) == Decision::Dispatch {}
    }

    fn may_queue(&mut self, _now: Instant, owner: Owner, _prio: IoPrio, dir: Dir, _sync: bool) -> MayQueue {
        let busy = self.rr_list.len() as u64;
        let Some(q) = self.queues.get(&owner) else {
            return self.exempt();
        };
        if busy == 0 {
            return self.exempt();
        }
        let queued = q.queued[dir.index()];
        let qmin = self.queued_min as u64;
        if self.version == V2003 {
            if queued < qmin {
                return MayQueue::May;
            }
            let limit = self.nr_requests.saturating_sub(qmin) / busy;
            return if queued > limit { MayQueue::No } else { MayQueue::May };
        }
        // 2.6.x: only consulted when the pool is full; a non-zero answer exempts the task.
        let mut limit = self.nr_requests.saturating_sub(qmin) / busy;
        if limit < 3 {
            limit = 3;
        } else if limit > self.max_queued {
            limit = self.max_queued;
        }
        if queued > limit { MayQueue::May } else { MayQueue::Must }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant, _ctx: &mut Ctx) {}

    fn is_empty(&self) -> bool {
        self.rr_list.is_empty()
    }
    fn queued(&self) -> usize {
        self.nr
    }
    fn dispatched_mergeable(&self) -> bool {
        self.version == V2003
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let order: Vec<String> = self.rr_list.to_vec().iter().map(|o| o.to_string()).collect();
        let mut v = vec![("rr_list".into(), order.join(",")), ("busy_queues".into(), self.rr_list.len().to_string())];
        let mut owners: Vec<_> = self.queues.keys().copied().collect();
        owners.sort();
        for o in owners {
            let q = &self.queues[&o];
            v.push((format!("queue.{o}"), format!("pending={} queued={}/{}", q.tree.len(), q.queued[0], q.queued[1])));
        }
        v
    }
}

impl CfqV1 {
    /// 2.6.x answer when the task has no queue or nothing is busy: exempt (allowed even
    /// when the pool is full); 2003: allowed.
    fn exempt(&self) -> MayQueue {
        if self.version == V2003 { MayQueue::May } else { MayQueue::Must }
    }
}
