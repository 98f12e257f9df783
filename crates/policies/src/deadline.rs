//! deadline (Linux 2.6.20 `block/deadline-iosched.c`, HZ-exact jiffy arithmetic).
//!
//! Two sort trees and two FIFOs, one per data direction. Requests are dispatched one per
//! call in batches: a batch continues in ascending sector order while it stays exactly
//! contiguous (the 2.6.20 rule, `batch_requires_contiguity`) and shorter than
//! `fifo_batch`; a new batch picks a direction (reads preferred, writes after
//! `writes_starved` read choices while writes wait) and serves that direction's oldest
//! request if its deadline passed, else continues the elevator sweep, else restarts at the
//! lowest sector. Deadlines are only looked at when a batch starts, so they are soft.
//!
//! Bound on waiting: a read is served within `read_expire` plus `writes_starved + 1`
//! batches of at most `fifo_batch` requests after its deadline passes; a write within
//! `write_expire` plus `writes_starved + 1` batches, as writes get a batch at least every
//! `writes_starved + 1` direction choices.

use crate::common::{Fifo, SortTree};
use crate::registry::{Policy, WaitBound};
use iosched_core::{Ctx, Decision, Dir, Hz, IdMap, Instant, MergeKind, ReqId, Request, Scheduler, Spec};

#[derive(Debug)]
struct DlRq {
    rq: Request,
    /// FIFO deadline in jiffies.
    deadline: u64,
    fifo_key: u64,
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "deadline",
    aliases: &[],
    follows: "Linux 2.6.20 block/deadline-iosched.c",
    summary: "sector-sorted batches per direction with FIFO deadlines; reads preferred",
    new: |hz| Box::new(Deadline::new(hz)),
    variants: &[],
    // write_expire + (writes_starved + 1) batches of fifo_batch requests of ≤ 10 ms.
    waiting_bound: |_| WaitBound::Ms(5000 + 3 * 16 * 10 + 100),
};

#[derive(Debug)]
pub struct Deadline {
    hz: Hz,
    fifo_expire: [u64; 2],
    writes_starved: i64,
    fifo_batch: i64,
    front_merges: bool,
    batch_requires_contiguity: bool,

    rqs: IdMap<DlRq>,
    sort: [SortTree; 2],
    fifo: [Fifo; 2],
    next_rq: [Option<ReqId>; 2],
    batching: i64,
    last_sector: u64,
    /// `unsigned int starved`: C compares it with the signed `writes_starved` as unsigned,
    /// so a negative tunable is a huge count and reads always win.
    starved: u32,
}

impl Deadline {
    pub fn new(hz: Hz) -> Self {
        Deadline {
            hz,
            fifo_expire: [(hz.get() / 2) as u64, 5 * hz.get() as u64],
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
            batch_requires_contiguity: true,
            rqs: IdMap::default(),
            sort: Default::default(),
            fifo: Default::default(),
            next_rq: [None; 2],
            batching: 0,
            last_sector: 0,
            starved: 0,
        }
    }

    fn sector(&self, id: ReqId) -> u64 {
        self.rqs[&id].rq.sector
    }

    /// `deadline_add_rq_rb` with the alias rule.
    fn add_rq_rb(&mut self, rq: &Request, ctx: &mut Ctx) {
        let (id, sector, d) = (rq.id, rq.sector, rq.dir().index());
        while let Err(alias) = self.sort[d].add(sector, id) {
            self.move_request(alias, ctx);
        }
    }

    /// `deadline_del_rq_rb`: keeps `next_rq` pointing at the successor.
    fn del_rq_rb(&mut self, rq: &Request) {
        let d = rq.dir().index();
        if self.next_rq[d] == Some(rq.id) {
            self.next_rq[d] = self.sort[d].next(rq.sector);
        }
        self.sort[d].remove(rq.sector, rq.id);
    }

    /// `deadline_remove_request`: off the FIFO and the tree.
    fn remove_request(&mut self, id: ReqId) -> Request {
        let e = self.rqs.remove(&id).unwrap();
        self.del_rq_rb(&e.rq);
        self.fifo[e.rq.dir().index()].remove(e.fifo_key);
        e.rq
    }

    /// `deadline_move_request`: dispatch `id`, remembering where the sweep continues.
    fn move_request(&mut self, id: ReqId, ctx: &mut Ctx) {
        let e = self.rqs.remove(&id).unwrap();
        let d = e.rq.dir().index();
        self.next_rq = [None, None];
        self.next_rq[d] = self.sort[d].next(e.rq.sector);
        self.last_sector = e.rq.end();
        self.del_rq_rb(&e.rq);
        self.fifo[d].remove(e.fifo_key);
        ctx.dispatch_add_tail(e.rq);
    }

    fn check_fifo(&self, d: usize, now_j: u64) -> bool {
        let head = self.fifo[d].front().expect("check_fifo on empty FIFO");
        now_j > self.rqs[&head].deadline
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }
    iosched_core::tunables! {
        Spec::millis("read_expire", 0, i32::MAX as i64, "deadline given to a read at insertion")
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[0]) as i64,
            set |s, v| s.fifo_expire[0] = s.hz.msecs_to_jiffies(v as u64);
        Spec::millis("write_expire", 0, i32::MAX as i64, "deadline given to a write at insertion")
            => get |s| s.hz.jiffies_to_msecs(s.fifo_expire[1]) as i64,
            set |s, v| s.fifo_expire[1] = s.hz.msecs_to_jiffies(v as u64);
        Spec::count(
            "writes_starved",
            i32::MIN as i64,
            i32::MAX as i64,
            "read batches allowed while writes wait before writes get a batch",
        )
            => get |s| s.writes_starved,
            set |s, v| s.writes_starved = v;
        Spec::count("fifo_batch", 0, i32::MAX as i64, "maximum requests in one batch")
            => get |s| s.fifo_batch,
            set |s, v| s.fifo_batch = v;
        Spec::boolean("front_merges", "look up front-merge candidates in the sort tree")
            => get |s| s.front_merges as i64,
            set |s, v| s.front_merges = v != 0;
        Spec::boolean(
            "batch_requires_contiguity",
            "2.6.20: a batch continues only across exactly contiguous requests (0 = later kernels: any gap allowed)",
        )
            => get |s| s.batch_requires_contiguity as i64,
            set |s, v| s.batch_requires_contiguity = v != 0;
    }

    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        let d = rq.dir().index();
        let deadline = self.hz.jiffies(now) + self.fifo_expire[d];
        // The FIFO position first: the alias rule in add_rq_rb may dispatch another
        // request, which does not change where this one lands.
        let fifo_key = self.fifo[d].push_back(rq.id);
        self.rqs.insert(rq.id, DlRq { rq: *rq, deadline, fifo_key });
        self.add_rq_rb(rq, ctx);
    }

    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        if !self.front_merges {
            return None;
        }
        self.sort[bio.dir().index()].find(bio.end())
    }

    fn merged(&mut self, _now: Instant, rq: &Request, kind: MergeKind, ctx: &mut Ctx) {
        let d = rq.dir().index();
        let old_sector = self.rqs[&rq.id].rq.sector;
        if kind == MergeKind::Front {
            // elv_rb_del + re-add; next_rq is deliberately not touched (as in the kernel).
            self.sort[d].remove(old_sector, rq.id);
            self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
            self.add_rq_rb(rq, ctx);
        } else {
            self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        }
    }

    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        let d = rq.dir().index();
        let (n_deadline, n_key) = {
            let n = &self.rqs[&next.id];
            (n.deadline, n.fifo_key)
        };
        // If `next` expires first, `rq` takes its FIFO position and deadline.
        if n_deadline < self.rqs[&rq.id].deadline {
            let r = self.rqs.get_mut(&rq.id).unwrap();
            let old_key = r.fifo_key;
            r.deadline = n_deadline;
            r.fifo_key = n_key;
            self.fifo[d].replace(n_key, rq.id);
            self.fifo[d].remove(old_key);
            // `next` no longer owns a FIFO slot.
            self.rqs.get_mut(&next.id).unwrap().fifo_key = u64::MAX;
        }
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        self.remove_request(next.id);
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        self.sort[rq.dir().index()].prev(rq.sector)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        self.sort[rq.dir().index()].next(rq.sector)
    }

    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let now_j = self.hz.jiffies(now);
        let reads = !self.fifo[0].is_empty();
        let writes = !self.fifo[1].is_empty();

        // Continue the current batch?
        if let Some(id) = self.next_rq[1].or(self.next_rq[0]) {
            if self.batch_requires_contiguity && self.last_sector != self.sector(id) {
                // A non-sequential request ends the batch.
                self.batching += self.fifo_batch;
            }
            if self.batching < self.fifo_batch {
                self.batching += 1;
                self.move_request(id, ctx);
                return Decision::Dispatch;
            }
        }

        // Choose a direction.
        let d = if reads {
            if writes && {
                let s = self.starved;
                self.starved = s.wrapping_add(1);
                s >= self.writes_starved as i32 as u32
            } {
                self.starved = 0;
                Dir::Write
            } else {
                Dir::Read
            }
        } else if writes {
            self.starved = 0;
            Dir::Write
        } else {
            return Decision::Empty;
        }
        .index();

        let id = if self.check_fifo(d, now_j) {
            // An expired request exists: serve the oldest.
            self.batching = 0;
            self.fifo[d].front().unwrap()
        } else if let Some(id) = self.next_rq[d] {
            id
        } else {
            // One-way elevator: restart the sweep at the lowest sector.
            self.batching = 0;
            self.sort[d].first().unwrap()
        };
        self.batching += 1;
        self.move_request(id, ctx);
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
        self.fifo[0].is_empty() && self.fifo[1].is_empty()
    }
    fn queued(&self) -> usize {
        self.rqs.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let opt = |x: Option<ReqId>| x.map(|i| i.to_string()).unwrap_or_else(|| "-".into());
        vec![
            ("batching".into(), self.batching.to_string()),
            ("starved".into(), self.starved.to_string()),
            ("last_sector".into(), self.last_sector.to_string()),
            ("next_rq_read".into(), opt(self.next_rq[0])),
            ("next_rq_write".into(), opt(self.next_rq[1])),
        ]
    }
}
