//! Kyber (the histogram version of `block/kyber-iosched.c`, Linux 4.18 to today; the
//! reference's \[KY\], `../shared/reference/modern.md` §3).
//!
//! No sorting and no per-process state. Requests are put in four *domains* by operation —
//! READ, WRITE (sync and async together), DISCARD, OTHER — and each domain may have only
//! `depth` requests on the device at once (its *tokens*: 256, 128, 64, 16 to start with,
//! which are also the maxima). Dispatch takes up to a batch (16, 8, 1, 1) from one domain,
//! in arrival order, then moves round robin to the next domain that has requests and a free
//! token. A domain without a token keeps its requests pending, where they can still merge.
//!
//! The depths follow latency: every completion of a READ, WRITE or DISCARD request adds
//! two samples to that domain's histograms — total latency (from the request's creation)
//! and I/O latency (from its start on the device) — in eight buckets a quarter of the
//! domain's target wide (targets 2 ms, 10 ms, 5 s), and pulls a timer in to at most 100
//! ms away. When it fires, a domain whose p90 I/O latency is above its target marks the
//! device congested; then each domain with a p99 total latency (bucket `b`, 0..7) — fresh,
//! or remembered from a window without congestion — is resized to `depth·(b+1)/4`
//! (clamped to 1..max) if the device is congested or its own p99 is above target. So
//! under congestion domains meeting their target are throttled, and domains missing it
//! always get more depth. A percentile is computed once its histogram holds 500 samples or
//! a second after it was first looked at, and computing it empties the histogram; the two
//! percentiles of a domain share that one-second clock, as in the kernel.
//!
//! A domain out of tokens waits on its token bitmap's wait queue, which is woken — and the
//! queue run — by every `wake_batch`-th token freed while it waits (`sbq_wake_up` as of
//! 4.18 to 6.1: `depth / 8` clamped to 1..8, so 8 at full depth); blk-mq's 3 ms re-run of a
//! queue whose scheduler gave nothing may come first (the queue's blk-mq rules). Flushes
//! go past the policy, as in blk-mq (`blk_insert_flush`), instead of draining it as 2.6
//! barriers do. Not modelled: the per-CPU software queues (there is one; `pending`
//! and `flushed` below are its list and the hardware queue's), the async tag limit (75 %
//! of the scheduler tags), tokens as sbitmap bits (a count here: after a shrink the kernel
//! may briefly have more in flight than the new depth), a requeued request giving its
//! token back (the framework keeps a requeued request on its dispatch list, so it keeps its
//! token until it completes).

use crate::registry::{Policy, WaitBound};
use iosched_core::{Ctx, Decision, Hz, IdMap, Instant, Op, ReqId, Request, Scheduler, Spec, Status};
use std::collections::{BTreeMap, VecDeque};

const READ: usize = 0;
const WRITE: usize = 1;
const DISCARD: usize = 2;
const OTHER: usize = 3;
const DOMAINS: usize = 4;
const DOMAIN_NAMES: [&str; DOMAINS] = ["read", "write", "discard", "other"];

/// `kyber_depth`: maximum (and initial) tokens per domain.
const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`.
const BATCH_SIZE: [u32; DOMAINS] = [16, 8, 1, 1];
/// `kyber_latency_targets` (ns); OTHER is not monitored.
const DEFAULT_TARGETS: [u64; OTHER] = [2_000_000, 10_000_000, 5_000_000_000];

/// `KYBER_LATENCY_SHIFT`: a bucket is a quarter of the target.
const LATENCY_SHIFT: u32 = 2;
/// `KYBER_GOOD_BUCKETS`: buckets at or below the target.
const GOOD_BUCKETS: usize = 1 << LATENCY_SHIFT;
const BUCKETS: usize = 2 << LATENCY_SHIFT;
const TOTAL: usize = 0;
const IO: usize = 1;
/// A percentile needs this many samples (or a second).
const MIN_SAMPLES: u64 = 500;

/// `sbq_calc_wake_batch` for a token sbitmap of `depth` (no shallow depth): frees
/// before a waiter is woken, `depth / SBQ_WAIT_QUEUES` (8) clamped to 1..=`SBQ_WAKE_BATCH`
/// (8) — 8 for every domain at its full depth but OTHER's 16 tokens (2).
fn wake_batch(depth: u32) -> u32 {
    (depth / 8).clamp(1, 8)
}

/// `kyber_sched_domain`.
fn domain_of(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write => WRITE,
        Op::Discard => DISCARD,
        Op::Flush => OTHER,
    }
}

#[derive(Debug)]
struct KyRq {
    rq: Request,
    /// `start_time_ns`: when the request got its scheduler tag — here, when it was
    /// inserted (allocation and insertion coincide in this framework; a bio that waited
    /// for a pool slot does not count that wait).
    start: Instant,
    domain: usize,
    /// Position in `pending[domain]` while pending (`kcq->rq_list`).
    seq: u64,
    /// Flushed to the hardware queue's list (`khd->rqs`): no longer mergeable.
    flushed: bool,
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "kyber",
    aliases: &[],
    follows: "block/kyber-iosched.c, histogram version (4.18 to today; async tag limit not modelled)",
    summary: "per-operation token depths tuned from p90/p99 latency histograms; FIFO, batches per domain",
    new: |hz| Box::new(Kyber::new(hz)),
    variants: &[],
    // FIFO per domain, batches of 16 reads and 8 writes: a request has at most the 24
    // outstanding ahead of it, so at most three rounds of both batches.
    waiting_bound: |_| WaitBound::Ms(3 * (16 + 8) * 10 + 100),
};

#[derive(Debug)]
pub struct Kyber {
    hz: Hz,
    /// `latency_targets` (ns) for READ, WRITE, DISCARD.
    targets: [u64; OTHER],

    rqs: IdMap<KyRq>,
    /// The software queue's lists, by arrival (`kcq->rq_list`), keyed by sequence number.
    pending: [BTreeMap<u64, ReqId>; DOMAINS],
    /// The hardware queue's flushed lists (`khd->rqs`).
    flushed: [VecDeque<ReqId>; DOMAINS],
    seq: u64,
    cur_domain: usize,
    batching: u32,
    /// `domain_tokens`: current depth and tokens in use.
    depth: [u32; DOMAINS],
    in_use: [u32; DOMAINS],
    /// The hardware queue waits for a token of the domain (`khd->domain_wait`, on the
    /// token sbitmap's wait queue), and the frees still due before that wait queue is
    /// woken (`ws->wait_cnt`).
    waiting: [bool; DOMAINS],
    wait_cnt: [u32; DOMAINS],
    /// Requests holding a token: domain, `start_time_ns`, `io_start_time_ns`.
    on_device: IdMap<(usize, Instant, Option<Instant>)>,

    /// `latency_buckets[domain][type][bucket]`.
    buckets: [[[u64; BUCKETS]; 2]; OTHER],
    /// `latency_timeout` (jiffies; 0 = not running).
    latency_timeout: [u64; OTHER],
    /// `domain_p99` (-1 = none remembered).
    domain_p99: [i32; OTHER],
    /// The statistics timer (`kqd->timer`), in jiffies.
    timer: Option<u64>,
}

impl Kyber {
    pub fn new(hz: Hz) -> Self {
        Kyber {
            hz,
            targets: DEFAULT_TARGETS,
            rqs: IdMap::default(),
            pending: Default::default(),
            flushed: Default::default(),
            seq: 0,
            cur_domain: READ,
            batching: 0,
            depth: MAX_DEPTH,
            in_use: [0; DOMAINS],
            waiting: [false; DOMAINS],
            wait_cnt: MAX_DEPTH.map(wake_batch),
            on_device: IdMap::default(),
            buckets: [[[0; BUCKETS]; 2]; OTHER],
            latency_timeout: [0; OTHER],
            domain_p99: [-1; OTHER],
            timer: None,
        }
    }

    /// `add_latency_sample`.
    fn add_sample(&mut self, domain: usize, kind: usize, latency_ns: u64) {
        let bucket = if latency_ns > 0 {
            let divisor = (self.targets[domain] >> LATENCY_SHIFT).max(1);
            (((latency_ns - 1) / divisor) as usize).min(BUCKETS - 1)
        } else {
            0
        };
        self.buckets[domain][kind][bucket] += 1;
    }

    /// `calculate_percentile`: the bucket holding the percentile, or -1 while the window
    /// is still open (fewer than 500 samples and less than a second since first asked).
    fn percentile(&mut self, domain: usize, kind: usize, percentile: u64, now_j: u64) -> i32 {
        let samples: u64 = self.buckets[domain][kind].iter().sum();
        if samples == 0 {
            return -1;
        }
        if self.latency_timeout[domain] == 0 {
            self.latency_timeout[domain] = (now_j + self.hz.get() as u64).max(1);
        }
        if samples < MIN_SAMPLES && self.latency_timeout[domain] > now_j {
            return -1;
        }
        self.latency_timeout[domain] = 0;
        let mut wanted = (samples * percentile).div_ceil(100);
        let b = &self.buckets[domain][kind];
        let mut bucket = 0;
        while bucket < BUCKETS - 1 {
            if b[bucket] >= wanted {
                break;
            }
            wanted -= b[bucket];
            bucket += 1;
        }
        self.buckets[domain][kind] = [0; BUCKETS];
        bucket as i32
    }

    /// `kyber_timer_fn`.
    fn timer_fn(&mut self, now_j: u64) {
        let mut bad = false;
        for d in 0..OTHER {
            if self.percentile(d, IO, 90, now_j) >= GOOD_BUCKETS as i32 {
                bad = true;
            }
        }
        for (d, &max_depth) in MAX_DEPTH.iter().enumerate().take(OTHER) {
            let mut p99 = self.percentile(d, TOTAL, 99, now_j);
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= GOOD_BUCKETS as i32 {
                let depth = (self.depth[d] as u64 * (p99 as u64 + 1)) >> LATENCY_SHIFT;
                // kyber_resize_domain → sbitmap_queue_resize: a new wake batch sets
                // every wait queue's count to 1 (`sbitmap_queue_update_wake_batch`).
                let depth = (depth as u32).clamp(1, max_depth);
                if wake_batch(depth) != wake_batch(self.depth[d]) {
                    self.wait_cnt[d] = 1;
                }
                self.depth[d] = depth;
            }
        }
    }

    /// `kyber_dispatch_cur_domain`: the head of the domain's flushed list, or — if it is
    /// empty — flush the pending list first; either only with a token in hand.
    fn dispatch_cur_domain(&mut self, ctx: &mut Ctx) -> bool {
        let d = self.cur_domain;
        if self.flushed[d].is_empty() && self.pending[d].is_empty() {
            return false;
        }
        if self.in_use[d] >= self.depth[d] {
            // No token (`kyber_get_domain_token`): the requests stay pending (and
            // mergeable) and the hardware queue waits on the domain's token wait queue.
            self.waiting[d] = true;
            return false;
        }
        self.waiting[d] = false;
        if self.flushed[d].is_empty() {
            for (_, id) in std::mem::take(&mut self.pending[d]) {
                self.rqs.get_mut(&id).expect("pending request").flushed = true;
                self.flushed[d].push_back(id);
            }
        }
        let id = self.flushed[d].pop_front().expect("a flushed request");
        self.batching += 1;
        self.send_to_device(id, ctx);
        true
    }

    /// Hand `id` to the driver holding one of its domain's tokens.
    fn send_to_device(&mut self, id: ReqId, ctx: &mut Ctx) {
        let e = self.rqs.remove(&id).expect("request held by kyber");
        self.in_use[e.domain] += 1;
        self.on_device.insert(id, (e.domain, e.start, None));
        ctx.dispatch_add_tail(e.rq);
    }

    fn holds(&self) -> bool {
        !self.rqs.is_empty()
    }

    /// Whether `id` is pending and among the 8 newest of its domain's list
    /// (`blk_bio_list_merge` looks at no more).
    fn among_newest_pending(&self, id: ReqId) -> bool {
        let Some(e) = self.rqs.get(&id) else { return false };
        !e.flushed && self.pending[e.domain].range(e.seq..).take(9).count() <= 8
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }
    iosched_core::tunables! {
        Spec::nanos("read_lat_nsec", 0, i64::MAX, "target latency of reads")
            => get |s| s.targets[READ] as i64,
            set |s, v| s.targets[READ] = v as u64;
        Spec::nanos("write_lat_nsec", 0, i64::MAX, "target latency of writes")
            => get |s| s.targets[WRITE] as i64,
            set |s, v| s.targets[WRITE] = v as u64;
    }

    /// `kyber_insert_requests`: to the tail of the domain's pending list.
    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        // blk-mq runs the hardware queue after every insertion.
        ctx.kick();
        let domain = domain_of(rq.op);
        self.seq += 1;
        self.pending[domain].insert(self.seq, rq.id);
        self.rqs.insert(rq.id, KyRq { rq: *rq, start: now, domain, seq: self.seq, flushed: false });
    }

    /// `kyber_bio_merge` → `blk_bio_list_merge`: a pending request of the bio's domain,
    /// among the 8 newest, that starts where the bio ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        let d = domain_of(bio.op);
        self.pending[d].values().rev().take(8).copied().find(|id| self.rqs[id].rq.sector == bio.end())
    }
    /// Only the 8 newest pending requests of a domain take bios, flushed ones none, and
    /// never across I/O priorities (`blk_rq_merge_ok`).
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        rq.prio == bio.prio && self.among_newest_pending(rq.id)
    }
    /// blk-mq's bio-list merge never merges two requests.
    fn allow_rq_merge(&self, _rq: &Request, _next: &Request) -> bool {
        false
    }
    fn merged(&mut self, _now: Instant, rq: &Request, _kind: iosched_core::MergeKind, _ctx: &mut Ctx) {
        if let Some(e) = self.rqs.get_mut(&rq.id) {
            e.rq = *rq;
        }
    }
    fn merge_requests(&mut self, _now: Instant, rq: &Request, next: &Request) {
        // Not reached (allow_rq_merge refuses); kept consistent all the same.
        if let Some(e) = self.rqs.get_mut(&rq.id) {
            e.rq = *rq;
        }
        if let Some(n) = self.rqs.remove(&next.id) {
            self.pending[n.domain].remove(&n.seq);
            self.flushed[n.domain].retain(|&x| x != next.id);
        }
    }

    /// `kyber_dispatch_request`.
    fn dispatch(&mut self, _now: Instant, ctx: &mut Ctx) -> Decision {
        if self.batching < BATCH_SIZE[self.cur_domain] && self.dispatch_cur_domain(ctx) {
            return Decision::Dispatch;
        }
        // Start another batch, round robin, back to the same domain last.
        self.batching = 0;
        for _ in 0..DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % DOMAINS;
            if self.dispatch_cur_domain(ctx) {
                return Decision::Dispatch;
            }
        }
        if self.holds() {
            // Out of tokens: a completion frees one and runs the queue.
            Decision::Idle { until: None }
        } else {
            Decision::Empty
        }
    }

    /// Everything out, domain by domain, tokens or not.
    fn drain(&mut self, _now: Instant, ctx: &mut Ctx) {
        for d in 0..DOMAINS {
            let mut ids: Vec<ReqId> = self.flushed[d].drain(..).collect();
            ids.extend(std::mem::take(&mut self.pending[d]).into_values());
            for id in ids {
                self.send_to_device(id, ctx);
            }
        }
    }

    /// `blk_mq_start_request` sets `io_start_time_ns`.
    fn activate(&mut self, now: Instant, rq: &Request) {
        // Every start (also after a requeue) sets it again.
        if let Some(e) = self.on_device.get_mut(&rq.id) {
            e.2 = Some(now);
        }
    }

    /// `kyber_completed_request` (latency samples, timer) and `kyber_finish_request`
    /// (the token goes back).
    fn completed(&mut self, now: Instant, rq: &Request, _status: Status, ctx: &mut Ctx) {
        let Some((d, start, io_start)) = self.on_device.remove(&rq.id) else { return };
        self.in_use[d] -= 1;
        // sbitmap_queue_clear → sbq_wake_up: a free counts toward waking the domain's
        // waiter only while there is one; every `wake_batch`-th wakes it, and the
        // wake-up runs the queue (`kyber_domain_wake`).
        if self.waiting[d] {
            self.wait_cnt[d] -= 1;
            if self.wait_cnt[d] == 0 {
                self.wait_cnt[d] = wake_batch(self.depth[d]);
                self.waiting[d] = false;
                ctx.kick();
            }
        }
        if d != OTHER {
            let total = now.saturating_duration_since(start).as_nanos() as u64;
            let io = now.saturating_duration_since(io_start.unwrap_or(now)).as_nanos() as u64;
            self.add_sample(d, TOTAL, total);
            self.add_sample(d, IO, io);
            // timer_reduce(jiffies + HZ / 10)
            let at = self.hz.jiffies(now) + (self.hz.get() / 10) as u64;
            self.timer = Some(self.timer.map_or(at, |t| t.min(at)));
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timer.map(|j| self.hz.instant(j))
    }
    fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx) {
        let now_j = self.hz.jiffies(now);
        if self.timer.is_some_and(|j| now_j >= j) {
            self.timer = None;
            self.timer_fn(now_j);
            if self.holds() {
                ctx.kick();
            }
        }
    }

    /// A blk-mq scheduler: flushes go past it, and the queue runs it by blk-mq's rules.
    fn blk_mq(&self) -> bool {
        true
    }

    fn is_empty(&self) -> bool {
        !self.holds()
    }
    fn queued(&self) -> usize {
        self.rqs.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("cur_domain".into(), DOMAIN_NAMES[self.cur_domain].into()),
            ("batching".into(), self.batching.to_string()),
        ];
        for (d, name) in DOMAIN_NAMES.iter().enumerate() {
            v.push((format!("{name}_depth"), self.depth[d].to_string()));
            v.push((format!("{name}_in_use"), self.in_use[d].to_string()));
        }
        v
    }
}
