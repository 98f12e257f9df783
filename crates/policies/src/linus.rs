//! linus: the 2.4 elevator (Linux 2.4.21-pre4 `drivers/block/elevator.c`,
//! `elevator_linus_merge`; the same code as 2.4.20's — 2.4.21-pre1 to -pre4 changed
//! neither it nor `include/linux/elevator.h`).
//!
//! One queue for reads and writes together, in the order the driver takes requests from
//! its head. A new buffer is matched against the queue from the tail towards the head
//! (`elevator_linus_merge`):
//!
//! - a request whose `elevator_sequence` has run out (≤ 0) ends the scan: nothing is
//!   merged into it or placed before it — it is a barrier;
//! - the first request the buffer fits after in sector order (`bh_rq_in_between`: between
//!   it and its successor, or at the wrap point of the ascending order) is where a new
//!   request would go;
//! - a request of the same direction that the buffer extends at its end (back merge) or
//!   its start (front merge, which also costs that request one from its sequence) takes
//!   it, and the scan stops;
//! - then every request behind the merged or placed one loses 1 (a merge) or
//!   `ELV_LINUS_SEEK_COST` = 16 (a request placed ahead of it) from its sequence; a buffer
//!   that fits nowhere goes to the tail, costing no one.
//!
//! A new request starts with `read_latency` (reads, read-ahead included) or
//! `write_latency` (writes) as its sequence (`elevator_request_latency` in
//! `__make_request`); two requests merged into one keep the smaller
//! (`elevator_linus_merge_req`). The driver dequeues from the head (`blkdev_dequeue_request`;
//! 2.4 has no elevator dequeue hook).
//!
//! Tunables, as `elvtune` sets them (`BLKELVSET`): `read_latency` (default 2048) and
//! `write_latency` (8192). `elvtune -b` (max bomb segments) is accepted by that ioctl and
//! ignored: 2.4.20's `elevator_t` has no such field and `BLKELVGET` reports 0, so it is not a
//! tunable here. Named options for later 2.4 trees, off by default:
//!
//! - `seek_cost` (default 16, `ELV_LINUS_SEEK_COST`): 2.4.22 made it 1, with latencies 128
//!   and 512 (`linus:read_latency=128,write_latency=512,seek_cost=1,backmerge_at_barrier=1`
//!   is 2.4.22's elevator; its new request queue is not modelled);
//! - `backmerge_at_barrier` (default 0): 2.4.21-pre5 (Andrea Arcangeli's backmerge patch)
//!   still lets the buffer back-merge into the request where the sequence ran out before
//!   the scan stops, with no front merge and no placement there.
//!
//! Not modelled: a request someone waits on (`req->waiting`, the 2.4 `ide_do_drive_cmd`
//! path) — no such request exists here; the per-device check (`rq_dev`) — one device per
//! queue. Where a bio has to wait for a free request, the framework has chosen to insert
//! before the sleep; at insertion the placement scan runs again on the queue as it is then,
//! as 2.4's `goto again` does after `__get_request_wait`, but a merge it would find then is
//! not taken (the request is already allocated).
//!
//! Bound on waiting: nothing is placed ahead of a request once its sequence is spent, and
//! each request placed ahead costs it `seek_cost`, so at most `latency / seek_cost` new
//! requests get in front of it; merges into requests ahead (1 each, at most `latency`) only
//! lengthen them.

use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Dir, Instant, MergeChoice, MergeKind, QueueConfig, ReqId, Request, Scheduler, Spec,
};

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "linus",
    aliases: &["2.4", "elevator_linus"],
    follows: "Linux 2.4.21-pre4 drivers/block/elevator.c (= 2.4.20)",
    summary: "the 2.4 elevator: one sector-sorted queue, passover counters that turn a request into a barrier",
    new: |_hz| Box::new(Linus::new()),
    variants: &["read_latency=128,write_latency=512,seek_cost=1,backmerge_at_barrier=1", "backmerge_at_barrier=1"],
    // Under the kit's load (24 outstanding, ≤ 10 ms each): the requests ahead at insertion
    // (≤ 64, counting merges' growth), then at most write_latency / seek_cost placed ahead.
    waiting_bound: |spec| {
        let setting = |k: &str, d: i64| spec.setting_for(k).and_then(|(_, v)| v.parse::<i64>().ok()).unwrap_or(d);
        let passes = setting("write_latency", 8192).max(setting("read_latency", 2048)) / setting("seek_cost", 16).max(1);
        WaitBound::Ms((64 + passes as u64) * 10 + 100)
    },
};

/// `ELV_LINUS_SEEK_COST`.
const SEEK_COST: i64 = 16;

#[derive(Debug, Clone, Copy)]
struct Entry {
    rq: Request,
    /// `elevator_sequence`: passovers left before the request becomes a barrier.
    seq: i64,
}

/// Where the last scan placed a bio that did not merge: after this request (`None`: at
/// the tail), valid while the queue is unchanged (`generation`).
#[derive(Debug, Clone, Copy)]
struct Placement {
    bio: ReqId,
    after: Option<ReqId>,
    generation: u64,
}

#[derive(Debug)]
pub struct Linus {
    read_latency: i64,
    write_latency: i64,
    seek_cost: i64,
    backmerge_at_barrier: bool,
    max_sectors: u32,
    /// `q->queue_head`, head first.
    queue: Vec<Entry>,
    generation: u64,
    placed: Option<Placement>,
}

impl Default for Linus {
    fn default() -> Self {
        Self::new()
    }
}

impl Linus {
    pub fn new() -> Self {
        Linus {
            read_latency: 2048,
            write_latency: 8192,
            seek_cost: SEEK_COST,
            backmerge_at_barrier: false,
            max_sectors: u32::MAX,
            queue: Vec::new(),
            generation: 0,
            placed: None,
        }
    }

    /// Where `id` is in the queue (2.4 walks the list too).
    fn pos(&self, id: ReqId) -> Option<usize> {
        self.queue.iter().position(|e| e.rq.id == id)
    }

    /// `bh_rq_in_between`: whether `bio` goes right after the request at `i`.
    fn in_between(&self, bio: &Request, i: usize) -> bool {
        let Some(next) = self.queue.get(i + 1) else { return false };
        let (s, rq, next) = (bio.sector, self.queue[i].rq.sector, next.rq.sector);
        if s < next && s > rq {
            return true;
        }
        if next > rq {
            return false;
        }
        s > rq || s < next
    }

    /// `elevator_linus_merge`, with its accounting: the merge it finds, or where a new
    /// request goes (after `Some(i)`, or at the tail).
    fn scan(&mut self, bio: &Request, merges: bool) -> (Option<(usize, MergeKind)>, Option<usize>) {
        let count = bio.len_sectors;
        let mut req: Option<usize> = None;
        let mut merge: Option<(usize, MergeKind)> = None;
        let mut i = self.queue.len();
        while i > 0 {
            i -= 1;
            let spent = self.queue[i].seq <= 0;
            if spent && !self.backmerge_at_barrier {
                break; // "we can't insert beyond a zero sequence point"
            }
            let e = self.queue[i].rq;
            if !spent && req.is_none() && self.in_between(bio, i) {
                req = Some(i);
            }
            let fits = e.dir() == bio.dir() && e.len_sectors.saturating_add(count) <= self.max_sectors;
            if merges && fits {
                if e.end() == bio.sector {
                    merge = Some((i, MergeKind::Back));
                    req = Some(i);
                    break;
                } else if !spent && e.sector.checked_sub(count as u64) == Some(bio.sector) {
                    self.queue[i].seq -= 1;
                    merge = Some((i, MergeKind::Front));
                    req = Some(i);
                    break;
                }
            }
            if spent {
                break; // 2.4.21-pre5: a back merge into the barrier, then no further
            }
        }
        if let Some(r) = req {
            let cost = if merge.is_some() { 1 } else { self.seek_cost };
            for e in &mut self.queue[r + 1..] {
                e.seq -= cost;
            }
        }
        (merge, if merge.is_some() { None } else { req })
    }

    fn latency(&self, rq: &Request) -> i64 {
        match rq.dir() {
            Dir::Read => self.read_latency,
            Dir::Write => self.write_latency,
        }
    }

    fn changed(&mut self) {
        self.generation += 1;
    }
}

impl Scheduler for Linus {
    fn name(&self) -> &'static str {
        "linus"
    }
    iosched_core::tunables! {
        Spec::count("read_latency", 0, i32::MAX as i64, "passovers a read allows before it becomes a barrier (elvtune -r)")
            => get |s| s.read_latency, set |s, v| s.read_latency = v;
        Spec::count("write_latency", 0, i32::MAX as i64, "passovers a write allows before it becomes a barrier (elvtune -w)")
            => get |s| s.write_latency, set |s, v| s.write_latency = v;
        Spec::count("seek_cost", 1, 1 << 20, "passovers a request placed ahead costs those behind it (ELV_LINUS_SEEK_COST; 2.4.22: 1)")
            => get |s| s.seek_cost, set |s, v| s.seek_cost = v;
        Spec::boolean("backmerge_at_barrier", "a back merge into the request whose count ran out (2.4.21-pre5 on)")
            => get |s| s.backmerge_at_barrier as i64, set |s, v| s.backmerge_at_barrier = v != 0;
    }

    fn init_queue(&mut self, cfg: &QueueConfig) {
        self.max_sectors = cfg.max_sectors;
    }

    fn merge_scan(&mut self, _now: Instant, bio: &Request) -> Option<MergeChoice> {
        let (merge, after) = self.scan(bio, true);
        match merge {
            Some((i, kind)) => {
                self.placed = None;
                Some(MergeChoice::Merge(self.queue[i].rq.id, kind))
            }
            None => {
                let after = after.map(|i| self.queue[i].rq.id);
                self.placed = Some(Placement { bio: bio.id, after, generation: self.generation });
                Some(MergeChoice::Insert)
            }
        }
    }

    fn insert(&mut self, _now: Instant, rq: &Request, _ctx: &mut Ctx) {
        let after = match self.placed.take() {
            Some(p) if p.bio == rq.id && p.generation == self.generation => p.after,
            // The queue changed while the bio waited for a request: scan again.
            _ => self.scan(rq, false).1.map(|i| self.queue[i].rq.id),
        };
        let at = after.and_then(|id| self.pos(id)).map_or(self.queue.len(), |i| i + 1);
        self.queue.insert(at, Entry { rq: *rq, seq: self.latency(rq) });
        self.changed();
    }

    fn merged(&mut self, _now: Instant, rq: &Request, _kind: MergeKind, _ctx: &mut Ctx) {
        if let Some(i) = self.pos(rq.id) {
            self.queue[i].rq = *rq;
        }
        self.changed();
    }

    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        let n = self.pos(next.id).expect("merged request not queued");
        let gone = self.queue.remove(n);
        let i = self.pos(rq.id).expect("surviving request not queued");
        let e = &mut self.queue[i];
        e.rq = *rq;
        e.seq = e.seq.min(gone.seq);
        self.changed();
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let i = self.pos(rq.id)?;
        i.checked_sub(1).map(|j| self.queue[j].rq.id)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let i = self.pos(rq.id)?;
        self.queue.get(i + 1).map(|e| e.rq.id)
    }

    fn dispatch(&mut self, _now: Instant, ctx: &mut Ctx) -> Decision {
        if self.queue.is_empty() {
            return Decision::Empty;
        }
        let e = self.queue.remove(0);
        self.changed();
        ctx.dispatch_add_tail(e.rq);
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
        self.queue.is_empty()
    }
    fn queued(&self) -> usize {
        self.queue.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        // The queue from its head: each request's id and `elevator_sequence`.
        let q: Vec<String> = self.queue.iter().map(|e| format!("{}:{}", e.rq.id, e.seq)).collect();
        vec![("queue".into(), q.join(","))]
    }
}
