//! mq-deadline (recent mainline `block/mq-deadline.c`, as of the 2024 tag-reservation fix;
//! the reference's \[MQD\], `../shared/reference/modern.md` §1).
//!
//! The legacy deadline algorithm three times over: one instance per I/O priority level
//! (RT, BE — which also takes class NONE — and IDLE), each with a sector-sorted tree and a
//! FIFO per data direction and its own `latest_pos`, sharing one batch state (`batching`,
//! `starved`, `last_dir`). What changed from 2.6.20's `deadline`:
//!
//! - The next request of a sweep is found by position — the first request at or after the
//!   start sector of the last one dispatched in that level and direction — not through a
//!   cached pointer, and a batch needs no contiguity: it simply continues while
//!   `batching < fifo_batch`.
//! - Several requests may start at the same sector (no alias rule).
//! - Strict priority: levels are tried RT, BE, IDLE, and a level that still has requests
//!   *queued* — inserted and not yet completed, so requests in the device count — blocks
//!   the levels below it even when it has nothing left to dispatch.
//! - Priority aging: when at least two levels have queued requests, BE and then IDLE are
//!   first offered the chance to dispatch a request inserted at least `prio_aging_expire`
//!   ago (the candidate is whatever that level's deadline logic picks; if it is younger,
//!   nothing is taken from the level in that pass).
//! - Requests of different I/O priorities are never merged (`blk_rq_merge_ok`,
//!   `attempt_merge`).
//!
//! When the policy holds requests but returns none (a higher level is on the device, a
//! candidate too young for the aging pass), the queue runs it again after 3 ms, as
//! blk-mq's delayed re-run after an empty dispatch (`BLK_MQ_BUDGET_DELAY`) does; this is
//! what lets an aged request out while a higher level keeps the device busy. A completion
//! does not run it (`dd_finish_request` wakes nobody), unless the device was full. Flushes
//! go past the policy, as in blk-mq, instead of draining it as 2.6 barriers do (the
//! queue's blk-mq rules, [`iosched_core::Scheduler::blk_mq`]).
//!
//! Not modelled: the `async_depth` tag limit (recent kernels set it to `nr_requests`, so it
//! limits nothing by default; 5.14 to 2024 reserved a quarter of the tags for synchronous
//! reads), the at-head dispatch list (requeues are the framework's business here), zoned
//! devices.

use crate::common::Fifo;
use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Dir, Hz, IdMap, Instant, IoClass, MergeKind, ReqId, Request, Scheduler, Spec, Status,
};
use std::collections::BTreeMap;

/// `DD_RT_PRIO`, `DD_BE_PRIO`, `DD_IDLE_PRIO`.
const LEVELS: usize = 3;
const LEVEL_NAMES: [&str; LEVELS] = ["rt", "be", "idle"];

/// `ioprio_class_to_prio`.
fn level_of(rq: &Request) -> usize {
    match rq.prio.class {
        IoClass::RealTime => 0,
        IoClass::None | IoClass::BestEffort => 1,
        IoClass::Idle => 2,
    }
}


#[derive(Debug)]
struct DdRq {
    rq: Request,
    level: usize,
    /// `rq->fifo_time`: insertion jiffies + the direction's expiry.
    fifo_time: u64,
    fifo_key: u64,
    /// Tie-break among requests starting at the same sector: later insertions sort after
    /// earlier ones, as `elv_rb_add` puts an equal key to the right.
    seq: u64,
}

/// `struct io_stats_per_prio`.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    inserted: u64,
    merged: u64,
    dispatched: u64,
    completed: u64,
}

/// `struct dd_per_prio`.
#[derive(Debug, Default)]
struct PerPrio {
    sort: [BTreeMap<(u64, u64), ReqId>; 2],
    fifo: [Fifo; 2],
    latest_pos: [u64; 2],
    stats: Stats,
}

impl PerPrio {
    /// `deadline_from_pos`: the first request whose start sector is at least `pos`.
    fn first_from(&self, d: usize, pos: u64) -> Option<ReqId> {
        self.sort[d].range((pos, 0)..).next().map(|(_, &id)| id)
    }
    /// `dd_queued`: inserted and not yet completed (requests in the device count).
    fn queued(&self) -> u64 {
        self.stats.inserted - self.stats.completed
    }
    fn has_work(&self) -> bool {
        !self.fifo[0].is_empty() || !self.fifo[1].is_empty()
    }
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "mq-deadline",
    aliases: &["mq_deadline"],
    follows: "recent mainline block/mq-deadline.c (2024 tag fix; async_depth not modelled)",
    summary: "deadline per I/O priority level (RT, BE, IDLE), strict priority with aging",
    new: |hz| Box::new(MqDeadline::new(hz)),
    variants: &[],
    // As deadline: write_expire + (writes_starved + 1) batches of fifo_batch requests.
    waiting_bound: |_| WaitBound::Ms(5000 + 3 * 16 * 10 + 100),
};

#[derive(Debug)]
pub struct MqDeadline {
    hz: Hz,
    fifo_expire: [u64; 2],
    writes_starved: i64,
    fifo_batch: i64,
    front_merges: bool,
    prio_aging_expire: u64,

    rqs: IdMap<DdRq>,
    /// Requests handed to the driver and not yet completed, with their level
    /// (`rq->elv.priv[0]`), so a completion is counted where its insertion was.
    owned: IdMap<usize>,
    per_prio: [PerPrio; LEVELS],
    last_dir: usize,
    batching: i64,
    /// `unsigned int starved`, compared with the signed tunable as C does: converted to
    /// unsigned, so a negative `writes_starved` is huge and reads always win.
    starved: u32,
    seq: u64,
}

impl MqDeadline {
    pub fn new(hz: Hz) -> Self {
        MqDeadline {
            hz,
            fifo_expire: [hz.msecs_to_jiffies(500), hz.msecs_to_jiffies(5000)],
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
            prio_aging_expire: hz.msecs_to_jiffies(10_000),
            rqs: IdMap::default(),
            owned: IdMap::default(),
            per_prio: Default::default(),
            // dd_init_sched: the first batch check looks at writes.
            last_dir: Dir::Write.index(),
            batching: 0,
            starved: 0,
            seq: 0,
        }
    }

    /// `deadline_remove_request`: off the FIFO and the sort tree.
    fn remove_request(&mut self, id: ReqId) -> DdRq {
        let e = self.rqs.remove(&id).expect("request held by mq-deadline");
        let d = e.rq.dir().index();
        let pp = &mut self.per_prio[e.level];
        pp.sort[d].remove(&(e.rq.sector, e.seq));
        pp.fifo[d].remove(e.fifo_key);
        e
    }

    /// `deadline_check_fifo`: the direction's oldest request has expired.
    fn check_fifo(&self, level: usize, d: usize, now_j: u64) -> bool {
        let head = self.per_prio[level].fifo[d].front().expect("check_fifo on an empty FIFO");
        now_j >= self.rqs[&head].fifo_time
    }

    /// `started_after`: inserted after `latest_start` (jiffies; may be negative early on).
    fn started_after(&self, id: ReqId, latest_start: i64) -> bool {
        let e = &self.rqs[&id];
        let start = e.fifo_time as i64 - self.fifo_expire[e.rq.dir().index()] as i64;
        start > latest_start
    }

    /// `__dd_dispatch_request`: the level's choice, if it was inserted by `latest_start`.
    /// Choosing a direction updates `starved`, `last_dir` and `batching` even when the
    /// choice turns out too young, as in the kernel.
    fn dispatch_level(&mut self, level: usize, now_j: u64, latest_start: i64, ctx: &mut Ctx) -> bool {
        let pp = &self.per_prio[level];
        // Continue the batch in the last direction while it is entitled to.
        let mut chosen =
            pp.first_from(self.last_dir, pp.latest_pos[self.last_dir]).filter(|_| self.batching < self.fifo_batch);
        if chosen.is_none() {
            let reads = !pp.fifo[0].is_empty();
            let writes = !pp.fifo[1].is_empty();
            let d = if reads
                && !(writes && {
                    let s = self.starved;
                    self.starved = s.wrapping_add(1);
                    s >= self.writes_starved as i32 as u32
                }) {
                Dir::Read.index()
            } else if writes {
                self.starved = 0;
                Dir::Write.index()
            } else {
                return false;
            };
            let pp = &self.per_prio[level];
            let next = pp.first_from(d, pp.latest_pos[d]);
            let id = match next {
                Some(id) if !self.check_fifo(level, d, now_j) => id,
                // An expired request, or the sweep ran off the end: the oldest one.
                _ => pp.fifo[d].front().expect("non-empty FIFO"),
            };
            self.last_dir = d;
            self.batching = 0;
            chosen = Some(id);
        }
        let id = chosen.unwrap();
        if self.started_after(id, latest_start) {
            return false;
        }
        self.batching += 1;
        let e = self.remove_request(id);
        let d = e.rq.dir().index();
        // dd_start_request
        let pp = &mut self.per_prio[e.level];
        pp.latest_pos[d] = e.rq.sector;
        pp.stats.dispatched += 1;
        self.owned.insert(id, e.level);
        ctx.dispatch_add_tail(e.rq);
        true
    }

    /// `dd_dispatch_prio_aged_requests`.
    fn dispatch_aged(&mut self, now_j: u64, ctx: &mut Ctx) -> bool {
        let busy = self.per_prio.iter().filter(|p| p.queued() > 0).count();
        if busy < 2 {
            return false;
        }
        let latest_start = now_j as i64 - self.prio_aging_expire as i64;
        (1..LEVELS).any(|level| self.dispatch_level(level, now_j, latest_start, ctx))
    }

    /// A request leaves the policy's accounting (completed, or merged away).
    fn finish(&mut self, level: usize) {
        self.per_prio[level].stats.completed += 1;
    }
}

impl Scheduler for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
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
            "direction choices that may prefer reads while writes wait",
        )
            => get |s| s.writes_starved,
            set |s, v| s.writes_starved = v;
        Spec::count("fifo_batch", 0, i32::MAX as i64, "maximum requests in one batch")
            => get |s| s.fifo_batch,
            set |s, v| s.fifo_batch = v;
        Spec::boolean("front_merges", "look up front-merge candidates in the sort tree")
            => get |s| s.front_merges as i64,
            set |s, v| s.front_merges = v != 0;
        Spec::millis(
            "prio_aging_expire",
            0,
            i32::MAX as i64,
            "age after which a BE or IDLE request is served although a higher level has requests",
        )
            => get |s| s.hz.jiffies_to_msecs(s.prio_aging_expire) as i64,
            set |s, v| s.prio_aging_expire = s.hz.msecs_to_jiffies(v as u64);
    }

    /// `dd_insert_request` (not at head).
    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        // blk-mq runs the hardware queue after every insertion.
        ctx.kick();
        let (level, d) = (level_of(rq), rq.dir().index());
        let pp = &mut self.per_prio[level];
        pp.stats.inserted += 1;
        self.seq += 1;
        pp.sort[d].insert((rq.sector, self.seq), rq.id);
        let fifo_key = pp.fifo[d].push_back(rq.id);
        let fifo_time = self.hz.jiffies(now) + self.fifo_expire[d];
        self.rqs.insert(rq.id, DdRq { rq: *rq, level, fifo_time, fifo_key, seq: self.seq });
    }

    /// `dd_request_merge`: a request of the bio's level starting where the bio ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        if !self.front_merges {
            return None;
        }
        let sector = bio.end();
        self.per_prio[level_of(bio)].sort[bio.dir().index()]
            .range((sector, 0)..(sector + 1, 0))
            .next()
            .map(|(_, &id)| id)
    }

    /// `blk_rq_merge_ok`: no merging across I/O priorities.
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        rq.prio == bio.prio
    }
    /// `attempt_merge`: likewise for two requests.
    fn allow_rq_merge(&self, rq: &Request, next: &Request) -> bool {
        rq.prio == next.prio
    }

    /// `dd_request_merged`: a front merge moves the request in its tree.
    fn merged(&mut self, _now: Instant, rq: &Request, kind: MergeKind, _ctx: &mut Ctx) {
        let e = self.rqs.get_mut(&rq.id).expect("merged into a request mq-deadline holds");
        let d = rq.dir().index();
        if kind == MergeKind::Front {
            let pp = &mut self.per_prio[e.level];
            pp.sort[d].remove(&(e.rq.sector, e.seq));
            self.seq += 1;
            e.seq = self.seq;
            pp.sort[d].insert((rq.sector, e.seq), rq.id);
        }
        e.rq = *rq;
    }

    /// `dd_merged_requests`: `rq` inherits `next`'s FIFO place if `next` expires first;
    /// `next` is freed, which counts as its completion (`dd_finish_request`).
    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        let d = rq.dir().index();
        let (n_time, n_key, n_level) = {
            let n = &self.rqs[&next.id];
            (n.fifo_time, n.fifo_key, n.level)
        };
        self.per_prio[n_level].stats.merged += 1;
        let r = self.rqs.get_mut(&rq.id).expect("merge into a request mq-deadline holds");
        if n_time < r.fifo_time && r.level == n_level {
            let old_key = r.fifo_key;
            r.fifo_time = n_time;
            r.fifo_key = n_key;
            let fifo = &mut self.per_prio[n_level].fifo[d];
            fifo.replace(n_key, rq.id);
            fifo.remove(old_key);
            // `next` no longer owns a FIFO position.
            self.rqs.get_mut(&next.id).unwrap().fifo_key = u64::MAX;
        }
        self.rqs.get_mut(&rq.id).unwrap().rq = *rq;
        self.remove_request(next.id);
        self.finish(n_level);
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let e = self.rqs.get(&rq.id)?;
        self.per_prio[e.level].sort[rq.dir().index()].range(..(rq.sector, e.seq)).next_back().map(|(_, &id)| id)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let e = self.rqs.get(&rq.id)?;
        self.per_prio[e.level].sort[rq.dir().index()].range((rq.sector, e.seq + 1)..).next().map(|(_, &id)| id)
    }

    /// `dd_dispatch_request`.
    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let now_j = self.hz.jiffies(now);
        if self.dispatch_aged(now_j, ctx) {
            return Decision::Dispatch;
        }
        // Strict priority: a level with requests queued (even only in the device) blocks
        // the levels below it.
        for level in 0..LEVELS {
            if self.dispatch_level(level, now_j, now_j as i64, ctx) {
                return Decision::Dispatch;
            }
            if self.per_prio[level].queued() > 0 {
                break;
            }
        }
        if self.rqs.is_empty() {
            Decision::Empty
        } else {
            // blk-mq runs the queue again after BLK_MQ_BUDGET_DELAY (the queue's rule).
            Decision::Idle { until: None }
        }
    }

    /// Everything out, in each level's deadline order, levels in priority order.
    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        for level in 0..LEVELS {
            while self.dispatch_level(level, now_j, i64::MAX, ctx) {}
        }
    }

    /// `dd_finish_request`.
    fn completed(&mut self, _now: Instant, rq: &Request, _status: Status, _ctx: &mut Ctx) {
        if let Some(level) = self.owned.remove(&rq.id) {
            self.finish(level);
        }
    }

    /// A blk-mq scheduler: flushes go past it, and the queue runs it by blk-mq's rules.
    fn blk_mq(&self) -> bool {
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _now: Instant, _ctx: &mut Ctx) {}

    fn is_empty(&self) -> bool {
        !self.per_prio.iter().any(PerPrio::has_work)
    }
    fn queued(&self) -> usize {
        self.rqs.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("batching".into(), self.batching.to_string()),
            ("starved".into(), self.starved.to_string()),
            ("last_dir".into(), if self.last_dir == 0 { "read" } else { "write" }.into()),
        ];
        for (pp, name) in self.per_prio.iter().zip(LEVEL_NAMES) {
            v.push((format!("queued_{name}"), pp.queued().to_string()));
            v.push((format!("latest_pos_{name}"), format!("{}/{}", pp.latest_pos[0], pp.latest_pos[1])));
        }
        v
    }
}
