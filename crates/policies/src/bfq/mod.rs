//! BFQ, Budget Fair Queueing (mainline `block/bfq-iosched.c` and `bfq-wf2q.c` of the 6.x
//! series; the reference's \[BFQ\], `../shared/reference/modern.md` §2), without cgroups.
//!
//! One queue per process for its synchronous requests, and asynchronous queues shared per
//! (class, level). The device belongs to one queue at a time, the *in-service* queue, for
//! a *budget* of sectors; B-WF2Q+ (module `wf2q`) picks the next queue so that each backlogged
//! queue gets service in proportion to its weight (`(8 − level) × 10`). A queue is
//! expired when its budget is used up (BUDGET_EXHAUSTED), when it empties and idling is
//! not worth it (NO_MORE_REQUESTS), when the idle timer fires (TOO_IDLE), when its
//! budget timeout passes (BUDGET_TIMEOUT, 125 ms), or when a newly busy queue preempts it
//! (PREEMPTED). At expiration its next budget is fed back from how the slot went, and a
//! slow or timed-out queue is charged for the time it held the device rather than for
//! its sectors, which turns sector fairness into time fairness for seeky processes.
//!
//! Modelled: B-WF2Q+ with idle trees and back-shifting; per-class service trees with the
//! 200 ms IDLE-class guarantee; budgets, their feedback and the auto-tuned maximum from
//! the estimated peak rate; budget timeouts and time charging of slow queues; device
//! idling (`slice_idle`, shorter for seeky queues) decided by `bfq_better_to_idle` from
//! think time, seekiness, I/O-boundness, the rotational flag, detected command queueing
//! and the asymmetry of weights and classes; preemption and service-hole recovery when a
//! queue turns busy; weight raising (`low_latency`: interactive ×30 for a duration scaled
//! by the peak rate, soft real-time ×3000, async raising) and large-burst detection;
//! `strict_guarantees`; FIFO expiry once per slot; the elevator order inside a queue
//! (`bfq_choose_req`); blk-mq's 3 ms re-run after an empty dispatch.
//!
//! Not modelled: queue merging (EQM and stable merges), I/O injection and waker
//! detection, tag depth limits, multiple actuators, cgroups. The kernel cannot turn
//! merging or injection off; with them this model would serve cooperating processes and
//! idling holes more efficiently than it does.

mod wf2q;

use crate::common::{Fifo, choose_sync_meta_position};
use crate::registry::{Policy, WaitBound};
use iosched_core::{
    Ctx, Decision, Duration, FastMap, Hz, IdMap, Instant, IoClass, MergeKind, Owner, QueueConfig, ReqId, Request,
    Scheduler, Spec, Status,
};
use std::collections::BTreeMap;
use wf2q::{QId, Tree, Wf2q};

const NS_PER_MS: u64 = 1_000_000;
/// `bfq_default_max_budget`, sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `bfq_stats_min_budgets`.
const STATS_MIN_BUDGETS: u64 = 194;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `BFQ_MIN_TT`: 2 ms.
const MIN_TT: u64 = 2 * NS_PER_MS;
/// `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
const HW_QUEUE_THRESHOLD: u32 = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// `BFQQ_SEEK_THR`, `BFQQ_SECT_THR_NONROT`.
const SEEK_THR: u64 = 8 * 100;
const SECT_THR_NONROT: u32 = 64;
/// `BFQ_RATE_SHIFT`; the rate is in sectors per microsecond, fixed point.
const RATE_SHIFT: u32 = 16;
/// `BFQ_RATE_MIN_SAMPLES`, `BFQ_RATE_MIN_INTERVAL`, `BFQ_RATE_REF_INTERVAL`.
const RATE_MIN_SAMPLES: u32 = 32;
const RATE_MIN_INTERVAL: u64 = 300 * NS_PER_MS;
const RATE_REF_INTERVAL: u64 = 1000 * NS_PER_MS;
/// `ref_rate` (rotational, non-rotational), (sectors/µs) << RATE_SHIFT.
const REF_RATE: [u64; 2] = [14_000, 33_000];
/// Weight raising (`low_latency`): the interactive factor, and the soft real-time factor
/// on top of it (`bfq_wr_coeff`, `BFQ_SOFTRT_WEIGHT_FACTOR`).
const WR_COEFF: u32 = 30;
const SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `bfq_wr_rt_max_time`, `bfq_wr_min_idle_time`, `bfq_wr_min_inter_arr_async`, ms.
const WR_RT_MAX_TIME_MS: u64 = 300;
const WR_MIN_IDLE_TIME_MS: u64 = 2000;
const WR_MIN_INTER_ARR_ASYNC_MS: u64 = 500;
/// `bfq_wr_max_softrt_rate`, sectors per second.
const WR_MAX_SOFTRT_RATE: i64 = 7000;
/// `max_service_from_wr`, sectors: interactive raising ends after this much service.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `ref_wr_duration` (rotational, non-rotational), ms.
const REF_WR_DURATION_MS: [u64; 2] = [7000, 2500];
/// `bfq_burst_interval` (ms) and `bfq_large_burst_thresh`.
const BURST_INTERVAL_MS: u64 = 180;
const LARGE_BURST_THRESH: u32 = 8;
/// "Minus infinity from now" in jiffies (`bfq_smallest_from_now`).
const NEVER: i64 = i64::MIN / 4;

/// `bfq_timeout` = HZ/8 jiffies: the default budget timeout, and what time charging is
/// scaled to whatever `timeout_sync` says.
fn default_timeout(hz: Hz) -> u64 {
    hz.get() as u64 / 8
}
/// `bfq_slice_idle`, the default idle slice, which `bfq_bfqq_is_slow` uses whatever
/// `slice_idle` says.
const DEFAULT_SLICE_IDLE: u64 = 8 * NS_PER_MS;

/// Why the in-service queue is expired (`enum bfqq_expiration`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Reason {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

/// Which queue a request belongs to (`bic_to_bfqq`): a process's sync queue, or the
/// async queue of its (class, level), shared by every process.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
enum QKey {
    Sync(Owner),
    Async(usize, u8),
}

/// Class index of a priority (0 RT, 1 BE — also class NONE — 2 IDLE).
fn class_of(rq: &Request) -> usize {
    match rq.prio.effective_class() {
        IoClass::RealTime => 0,
        IoClass::Idle => 2,
        _ => 1,
    }
}

/// The queue a request (or bio) goes to.
fn key_of(rq: &Request) -> QKey {
    if rq.is_sync() { QKey::Sync(rq.owner) } else { QKey::Async(class_of(rq), rq.prio.level) }
}

/// `bfq_ioprio_to_weight`.
fn weight_of(level: u8) -> u32 {
    (8 - level as u32) * 10
}

#[derive(Debug)]
struct BfqRq {
    rq: Request,
    q: QId,
    /// `rq->fifo_time`, ns.
    fifo_time: u64,
    fifo_key: u64,
    seq: u64,
}

/// Think time (`struct bfq_ttime`), ns, in the kernel's fixed point (samples × 256).
#[derive(Debug, Default)]
struct TTime {
    last_end_request: u64,
    samples: u64,
    total: u64,
    mean: u64,
}

/// `struct bfq_queue`.
#[derive(Debug)]
struct BfqQueue {
    key: QKey,
    sync: bool,
    class: usize,
    /// `max_budget` of the queue (its feedback-tuned budget), sectors.
    max_budget: u64,
    sort: BTreeMap<(u64, u64), ReqId>,
    fifo: Fifo,
    next_rq: Option<ReqId>,
    /// Requests queued, by `rq_is_sync` (index 1 = sync).
    queued: [u32; 2],
    /// Requests in the device.
    dispatched: u32,
    busy: bool,
    /// The owning process still exists (`bfqq_process_refs` > 0); async queues always.
    process_refs: bool,
    wait_request: bool,
    non_blocking_wait_rq: bool,
    fifo_expire: bool,
    io_bound: bool,
    has_short_ttime: bool,
    just_created: bool,
    /// In the weight-counter tree (busy or with requests in the device).
    in_weights: bool,
    /// Jiffies: end of the slot's budget timeout; while idle, when it became idle.
    budget_timeout: i64,
    /// The weight of its I/O priority (`orig_weight`); the entity's is this × `wr_coeff`.
    orig_weight: u32,
    /// The owner's I/O priority as last seen (class index, level: `bic->ioprio`).
    ioprio: (usize, u8),
    /// A changed priority's weight, taken with the entity's pending weight
    /// (`entity.new_weight` while `prio_changed`).
    new_orig_weight: Option<u32>,
    /// The weight it is counted under in the weight-counter tree.
    weights_key: u32,
    // Weight raising (jiffies as i64, so that "minus infinity" compares).
    wr_coeff: u32,
    wr_cur_max_time: i64,
    last_wr_start_finish: i64,
    wr_start_at_switch_to_srt: i64,
    soft_rt_next_start: i64,
    service_from_wr: u64,
    last_idle_bklogged: i64,
    service_from_backlogged: u64,
    softrt_update: bool,
    in_large_burst: bool,
    in_burst_list: bool,
    seek_history: u32,
    last_request_pos: u64,
    ttime: TTime,
    io_start_time: u64,
    tot_idle_time: u64,
}

impl BfqQueue {
    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeky.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }
    /// `BFQQ_TOTALLY_SEEKY`: all of the last 32 were.
    fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }
    fn queued_total(&self) -> u32 {
        self.queued[0] + self.queued[1]
    }
}

/// The registry's entry for this policy (`crate::registry::SCHEDULERS`).
pub const POLICY: Policy = Policy {
    name: "bfq",
    aliases: &[],
    follows: "block/bfq-iosched.c + bfq-wf2q.c, 6.x, with weight raising; no cgroups, queue merging or injection",
    summary: "per-process queues served in sector budgets by B-WF2Q+ (weight from I/O priority), with idling",
    new: |hz| Box::new(Bfq::new(hz)),
    variants: &["low_latency=0"],
    waiting_bound: |spec| match spec.setting_for("low_latency") {
        // B-WF2Q+ bounds a queue's lag in charged service, not in time: a slot that reaches
        // its budget timeout is charged for its time (max_budget sectors for a full slot), a
        // short slot of a queue that is not seeky only the sectors it moved (8 per read
        // here), so the queue that timed out waits for some max_budget / 8 such slots per
        // competing queue. The wait grows linearly with max_budget (bfq_time_charge_512.scn
        // doubles the 256 one); at the default 16384 the scenario's three processes keep a
        // read waiting 27 s (bfq.md, "Waiting bound").
        Some((_, v)) if v == "0" => WaitBound::None { scenario: "bfq_time_charge_256.scn" },
        // Each new process's queue is raised (×30, budget 1024 sectors): its finish time is
        // just past its start, and it is served before a waiting queue whose finish is its
        // budget (up to max_budget) / 40 after its start. A stream of new processes keeps
        // such a queue waiting; once raising ends, the time charging above applies too.
        _ => WaitBound::None { scenario: "bfq_raised_newcomers.scn" },
    },
};

/// BFQ (see the module documentation).
#[derive(Debug)]
pub struct Bfq {
    hz: Hz,
    // Tunables.
    slice_idle: u64,
    timeout_j: u64,
    user_max_budget: u64,
    strict_guarantees: bool,
    fifo_expire: [u64; 2],
    back_seek_max_kib: u64,
    back_seek_penalty: u64,
    low_latency: bool,

    /// The current time in jiffies (set at every hook).
    now_j: i64,
    wr_busy_queues: u32,
    /// `rate_dur_prod`: reference rate × reference raising duration (jiffies).
    rate_dur_prod: u64,
    // Burst detection (`burst_list`, `burst_size`, `large_burst`, `last_ins_in_burst`).
    burst_list: Vec<QId>,
    burst_size: u32,
    large_burst: bool,
    last_ins_in_burst: i64,

    // Device properties (`blk_queue_nonrot`, inferred `hw_tag`).
    rotational: bool,
    /// -1 unknown (treated as queueing), 0 no, 1 yes.
    hw_tag: i32,
    max_rq_in_driver: u32,
    hw_tag_samples: u32,

    sched: Wf2q,
    queues: FastMap<QId, BfqQueue>,
    keys: FastMap<QKey, QId>,
    next_qid: QId,
    rqs: IdMap<BfqRq>,
    /// Requests in the device, with their queue.
    owned: IdMap<QId>,
    seq: u64,
    /// `bfqd->queued`.
    queued: u32,
    /// `tot_rq_in_driver`.
    in_driver: u32,
    busy_queues: [u32; 3],
    /// The weight-counter tree: weight → queues with it.
    weights: BTreeMap<u32, u32>,

    // Budgets.
    max_budget: u64,
    budgets_assigned: u64,

    // Peak-rate estimation, ns and sectors.
    peak_rate: u64,
    peak_rate_samples: u32,
    sequential_samples: u32,
    tot_sectors_dispatched: u64,
    last_rq_max_size: u64,
    first_dispatch: u64,
    last_dispatch: u64,
    delta_from_first: u64,
    last_completion: u64,
    last_position: u64,

    // Slot timing.
    last_budget_start: u64,
    last_idling_start: u64,
    idle_timer: Option<Instant>,
}

impl Bfq {
    pub fn new(hz: Hz) -> Self {
        let mut b = Bfq {
            hz,
            slice_idle: 8 * NS_PER_MS,
            timeout_j: default_timeout(hz),
            user_max_budget: 0,
            strict_guarantees: false,
            fifo_expire: [250 * NS_PER_MS, 125 * NS_PER_MS],
            back_seek_max_kib: 16 * 1024,
            back_seek_penalty: 2,
            low_latency: true,
            now_j: 0,
            wr_busy_queues: 0,
            rate_dur_prod: 0,
            burst_list: Vec::new(),
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: NEVER,
            rotational: true,
            hw_tag: -1,
            max_rq_in_driver: 0,
            hw_tag_samples: 0,
            // BFQ_CL_IDLE_TIMEOUT = HZ/5.
            sched: Wf2q::new(hz.get() as u64 / 5),
            queues: FastMap::default(),
            keys: FastMap::default(),
            next_qid: 0,
            rqs: IdMap::default(),
            owned: IdMap::default(),
            seq: 0,
            queued: 0,
            in_driver: 0,
            busy_queues: [0; 3],
            weights: BTreeMap::new(),
            max_budget: DEFAULT_MAX_BUDGET,
            budgets_assigned: 0,
            peak_rate: 0,
            peak_rate_samples: 0,
            sequential_samples: 0,
            tot_sectors_dispatched: 0,
            last_rq_max_size: 0,
            first_dispatch: 0,
            last_dispatch: 0,
            delta_from_first: 0,
            last_completion: 0,
            last_position: 0,
            last_budget_start: 0,
            last_idling_start: 0,
            idle_timer: None,
        };
        b.reset_peak_rate();
        b
    }

    /// `bfq_init_queue`: the initial peak rate is 2/3 of the reference for the device
    /// kind; the maximum budget stays at the default until a rate has been measured.
    fn reset_peak_rate(&mut self) {
        let kind = !self.rotational as usize;
        self.peak_rate = REF_RATE[kind] * 2 / 3;
        self.rate_dur_prod = REF_RATE[kind] * self.hz.msecs_to_jiffies(REF_WR_DURATION_MS[kind]);
        if self.user_max_budget == 0 {
            self.max_budget = DEFAULT_MAX_BUDGET;
        }
    }

    /// `bfq_calc_max_budget` (applied unless the user fixed `max_budget`).
    fn update_max_budget(&mut self) {
        if self.user_max_budget == 0 {
            let timeout_ms = self.hz.jiffies_to_msecs(self.timeout_j);
            self.max_budget = ((self.peak_rate * 1000 * timeout_ms) >> RATE_SHIFT).max(1);
        }
    }

    fn q(&self, q: QId) -> &BfqQueue {
        &self.queues[&q]
    }
    fn qm(&mut self, q: QId) -> &mut BfqQueue {
        self.queues.get_mut(&q).expect("bfq queue exists")
    }

    /// Every hook starts here: the clock for jiffy arithmetic and B-WF2Q+'s lookups.
    fn tick(&mut self, now: Instant) {
        self.now_j = self.hz.jiffies(now) as i64;
        self.sched.set_now(self.now_j as u64);
    }
    fn ms_j(&self, ms: u64) -> i64 {
        self.hz.msecs_to_jiffies(ms) as i64
    }

    /// `bfq_wr_duration`: interactive raising lasts the reference duration scaled by how
    /// much slower than the reference the device is, 3 s to 25 s.
    fn wr_duration(&self) -> i64 {
        let dur = (self.rate_dur_prod / self.peak_rate.max(1)) as i64;
        dur.clamp(self.ms_j(3000), self.ms_j(25_000))
    }
    fn wr_rt_max_time(&self) -> i64 {
        self.ms_j(WR_RT_MAX_TIME_MS)
    }

    /// Set the raising factor; the weight follows at the next (re)queueing
    /// (`prio_changed`), and `wr_busy_queues` counts busy raised queues.
    fn set_wr_coeff(&mut self, q: QId, coeff: u32) {
        let b = self.qm(q);
        let (old, busy) = (b.wr_coeff, b.busy);
        b.wr_coeff = coeff;
        let w = b.new_orig_weight.unwrap_or(b.orig_weight) * coeff;
        if busy && (old > 1) != (coeff > 1) {
            if coeff > 1 {
                self.wr_busy_queues += 1;
            } else {
                self.wr_busy_queues -= 1;
            }
        }
        if old != coeff {
            self.sched.entity_mut(q).pending_weight = Some(w);
        }
    }

    /// `bfq_bfqq_end_wr`.
    fn end_wr(&mut self, q: QId) {
        if self.q(q).wr_cur_max_time != self.wr_rt_max_time() {
            self.qm(q).soft_rt_next_start = self.now_j;
        }
        self.set_wr_coeff(q, 1);
        let now_j = self.now_j;
        let b = self.qm(q);
        b.wr_cur_max_time = 0;
        b.last_wr_start_finish = now_j;
    }

    /// `switch_back_to_interactive_wr`: a soft real-time period ends inside an interactive
    /// one, which resumes from where it was.
    fn switch_back_to_interactive_wr(&mut self, q: QId) {
        let dur = self.wr_duration();
        self.set_wr_coeff(q, WR_COEFF);
        let b = self.qm(q);
        b.wr_cur_max_time = dur;
        b.last_wr_start_finish = b.wr_start_at_switch_to_srt;
    }

    /// `bfq_bfqq_softrt_next_start`: the earliest time at which the next batch may come
    /// for the queue to stay under the soft real-time rate, and after an idle slice.
    fn softrt_next_start(&self, q: QId) -> i64 {
        let b = self.q(q);
        let by_rate =
            b.last_idle_bklogged + self.hz.get() as i64 * b.service_from_backlogged as i64 / WR_MAX_SOFTRT_RATE;
        // nsecs_to_jiffies rounds down.
        let slice = (self.slice_idle as u128 * self.hz.get() as u128 / 1_000_000_000) as i64;
        b.soft_rt_next_start.max(by_rate).max(self.now_j + slice + 4)
    }

    /// `bfq_bfqq_served`: charge the service to B-WF2Q+ and to the raising and backlog
    /// counters.
    fn served(&mut self, q: QId, sectors: u64) {
        self.sched.served(q, sectors);
        let b = self.qm(q);
        if b.wr_coeff > 1 {
            b.service_from_wr += sectors;
        }
        b.service_from_backlogged += sectors;
        self.free_released();
    }

    /// `bfq_handle_burst`, for a newly created sync queue's first request: queues created
    /// within 180 ms of each other form a burst; at eight the burst is large and its
    /// queues get no weight raising.
    fn handle_burst(&mut self, q: QId) {
        let b = self.q(q);
        if b.in_burst_list || b.in_large_burst {
            return;
        }
        let now_j = self.now_j;
        if self.last_ins_in_burst + self.ms_j(BURST_INTERVAL_MS) < now_j {
            // The burst is over: a possible new one starts with this queue, if nothing
            // else is busy.
            self.large_burst = false;
            for old in std::mem::take(&mut self.burst_list) {
                if let Some(o) = self.queues.get_mut(&old) {
                    o.in_burst_list = false;
                }
            }
            if self.tot_busy() == 0 {
                self.burst_list.push(q);
                self.qm(q).in_burst_list = true;
                self.burst_size = 1;
            } else {
                self.burst_size = 0;
            }
        } else if self.large_burst {
            self.qm(q).in_large_burst = true;
        } else {
            // bfq_add_to_burst
            self.burst_size += 1;
            if self.burst_size == LARGE_BURST_THRESH {
                self.large_burst = true;
                for m in std::mem::take(&mut self.burst_list) {
                    if let Some(o) = self.queues.get_mut(&m) {
                        o.in_large_burst = true;
                        o.in_burst_list = false;
                    }
                }
                self.qm(q).in_large_burst = true;
            } else {
                self.burst_list.push(q);
                self.qm(q).in_burst_list = true;
            }
        }
        self.last_ins_in_burst = now_j;
    }

    fn leave_burst_list(&mut self, q: QId) {
        if self.q(q).in_burst_list {
            self.burst_list.retain(|&x| x != q);
            self.qm(q).in_burst_list = false;
        }
    }

    /// `bfq_update_wr_data`, at each dispatch from the in-service queue: end raising
    /// that ran out (a soft real-time period inside a live interactive one falls back to
    /// it) or went past 120 000 sectors, and apply the weight at once.
    fn update_wr_data(&mut self, q: QId) {
        if self.q(q).wr_coeff > 1 {
            let (in_burst, start, max_time, srt_start) = {
                let b = self.q(q);
                (b.in_large_burst, b.last_wr_start_finish, b.wr_cur_max_time, b.wr_start_at_switch_to_srt)
            };
            let rt_max = self.wr_rt_max_time();
            if in_burst {
                self.end_wr(q);
            } else if start + max_time < self.now_j {
                if max_time != rt_max || srt_start + self.wr_duration() < self.now_j {
                    self.end_wr(q);
                } else {
                    self.switch_back_to_interactive_wr(q);
                }
            }
            let b = self.q(q);
            if b.wr_coeff > 1 && b.wr_cur_max_time != rt_max && b.service_from_wr > MAX_SERVICE_FROM_WR {
                self.end_wr(q);
            }
        }
        let raised_weight = self.sched.entity(q).weight > self.q(q).orig_weight;
        if raised_weight != (self.q(q).wr_coeff > 1) {
            self.sched.apply_pending_weight(q);
            self.free_released();
        }
    }

    /// `bfq_max_budget`: the default until enough budgets were handed out.
    fn dev_max_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS { DEFAULT_MAX_BUDGET } else { self.max_budget }
    }
    /// `bfq_min_budget`.
    fn min_budget(&self) -> u64 {
        self.dev_max_budget() / 32
    }

    fn tot_busy(&self) -> u32 {
        self.busy_queues.iter().sum()
    }

    /// The queue for `rq`, created on first use (`bfq_get_queue`, `bfq_init_bfqq`).
    fn queue_for(&mut self, rq: &Request, now_ns: u64) -> QId {
        let class = class_of(rq);
        let sync = rq.is_sync();
        let key = key_of(rq);
        let level = if class == 2 { 7 } else { rq.prio.level };
        // Any request of the process, async too, shows its sync queue a changed priority.
        if let Some(&sq) = self.keys.get(&QKey::Sync(rq.owner))
            && self.q(sq).ioprio != (class, level)
        {
            self.ioprio_changed(sq, class, level);
        }
        if let Some(&q) = self.keys.get(&key) {
            return q;
        }
        let q = self.next_qid;
        self.next_qid += 1;
        self.sched.add(q, class, weight_of(level));
        let max_budget = 2 * self.dev_max_budget() / 3;
        self.sched.entity_mut(q).budget = max_budget;
        // Tentative initial values for sync queues: I/O-bound with a short think time
        // (idle-class queues never idle, so they are not marked).
        let tentative = sync && class != 2;
        self.queues.insert(
            q,
            BfqQueue {
                key,
                sync,
                class,
                max_budget,
                sort: BTreeMap::new(),
                fifo: Fifo::default(),
                next_rq: None,
                queued: [0; 2],
                dispatched: 0,
                busy: false,
                process_refs: true,
                wait_request: false,
                non_blocking_wait_rq: false,
                fifo_expire: false,
                io_bound: tentative,
                has_short_ttime: tentative,
                just_created: sync,
                in_weights: false,
                budget_timeout: NEVER,
                orig_weight: weight_of(level),
                ioprio: (class, level),
                new_orig_weight: None,
                weights_key: 0,
                wr_coeff: 1,
                wr_cur_max_time: 0,
                last_wr_start_finish: self.now_j,
                wr_start_at_switch_to_srt: NEVER,
                soft_rt_next_start: self.now_j,
                service_from_wr: 0,
                last_idle_bklogged: 0,
                service_from_backlogged: 0,
                softrt_update: false,
                in_large_burst: false,
                in_burst_list: false,
                seek_history: 1,
                last_request_pos: 0,
                ttime: TTime { last_end_request: now_ns + 1, ..TTime::default() },
                io_start_time: now_ns,
                tot_idle_time: 0,
            },
        );
        self.keys.insert(key, q);
        q
    }

    /// `bfq_check_ioprio_change` for a sync queue (`bfq_set_next_ioprio_data`): the owner's
    /// priority changed. The new weight and class wait for the queue's next (re)queueing,
    /// as the kernel's `prio_changed`. (An async request of the new priority already goes
    /// to the shared queue of that priority: async queues are looked up by it.)
    fn ioprio_changed(&mut self, q: QId, class: usize, level: u8) {
        let b = self.qm(q);
        b.ioprio = (class, level);
        let orig = weight_of(level);
        b.new_orig_weight = Some(orig);
        let w = orig * b.wr_coeff;
        let e = self.sched.entity_mut(q);
        e.pending_weight = Some(w);
        e.pending_class = (class != e.class).then_some(class);
    }

    /// Drop a queue nobody can use any more: its process exited and it holds nothing.
    fn maybe_free(&mut self, q: QId) {
        let Some(b) = self.queues.get(&q) else { return };
        if b.process_refs
            || b.busy
            || b.dispatched > 0
            || !b.sort.is_empty()
            || self.sched.in_service() == Some(q)
            || self.sched.entity(q).tree != Tree::None
        {
            return;
        }
        let key = b.key;
        self.leave_burst_list(q);
        self.queues.remove(&q);
        self.keys.remove(&key);
        self.sched.remove(q);
    }

    /// After B-WF2Q+ operations: free queues released from the idle trees, and move the
    /// ones that took a new weight in the weight-counter tree (raised queues leave it).
    fn free_released(&mut self) {
        for q in self.sched.take_reweighted() {
            // A changed priority took effect: the queue's own weight, and its class with
            // the busy count per class.
            if let Some(orig) = self.qm(q).new_orig_weight.take() {
                self.qm(q).orig_weight = orig;
            }
            let (old_class, new_class) = (self.q(q).class, self.sched.entity(q).class);
            if old_class != new_class {
                if self.q(q).busy {
                    self.busy_queues[old_class] -= 1;
                    self.busy_queues[new_class] += 1;
                }
                self.qm(q).class = new_class;
            }
            // As `__bfq_entity_update_weight_prio`: out of its old counter, into the new
            // one unless raised (even if it had none: a queue whose raising just ended).
            self.weights_remove(q);
            if self.q(q).wr_coeff == 1 {
                self.weights_add(q);
            }
        }
        for q in self.sched.take_released() {
            self.maybe_free(q);
        }
    }

    // ----------------------------------------------------------------------------------
    // Weight counters and the scenario

    fn weights_add(&mut self, q: QId) {
        if !self.q(q).in_weights {
            let w = self.sched.entity(q).weight;
            *self.weights.entry(w).or_insert(0) += 1;
            let b = self.qm(q);
            b.in_weights = true;
            b.weights_key = w;
        }
    }
    fn weights_remove(&mut self, q: QId) {
        if self.q(q).in_weights {
            let w = self.q(q).weights_key;
            let c = self.weights.get_mut(&w).expect("weight counted");
            *c -= 1;
            if *c == 0 {
                self.weights.remove(&w);
            }
            self.qm(q).in_weights = false;
        }
    }

    /// `bfq_asymmetric_scenario`: weights differ (unless `q` has the smallest), or more
    /// than one class has busy queues.
    fn asymmetric(&self, q: Option<QId>) -> bool {
        let smallest =
            q.is_some_and(|q| self.q(q).in_weights && self.weights.keys().next() == Some(&self.q(q).weights_key));
        let varied = !smallest && self.weights.len() > 1;
        let classes = self.busy_queues.iter().filter(|&&n| n > 0).count();
        varied || classes > 1
    }

    /// `bfq_serv_to_charge`: async requests cost three times their size when the
    /// scenario is symmetric.
    fn serv_to_charge(&self, id: ReqId, q: QId) -> u64 {
        let sectors = self.rqs[&id].rq.len_sectors as u64;
        if self.q(q).sync || self.q(q).wr_coeff > 1 || self.asymmetric(Some(q)) {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    fn budget_left(&self, q: QId) -> u64 {
        let e = self.sched.entity(q);
        e.budget.saturating_sub(e.service)
    }

    // ----------------------------------------------------------------------------------
    // Idling decisions

    /// `idling_boosts_thr_without_issues` (no weight-raised queue can be busy here).
    fn idling_boosts_thr(&self, q: QId) -> bool {
        let b = self.q(q);
        if !b.process_refs {
            return false;
        }
        let hw_tag = self.hw_tag != 0;
        let rot_without_queueing = self.rotational && !hw_tag;
        let seq_io_bound = !b.seeky() && b.io_bound && b.has_short_ttime;
        // While a raised queue is busy, the others lose throughput idling, so that the
        // raised ones get the device's slots.
        (rot_without_queueing || ((self.rotational || !hw_tag) && seq_io_bound)) && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`.
    fn idling_needed_for_guarantees(&self, q: QId) -> bool {
        let b = self.q(q);
        if !b.process_refs {
            return false;
        }
        (b.wr_coeff > 1 && (self.wr_busy_queues < self.tot_busy() || self.in_driver >= b.dispatched + 4))
            || self.asymmetric(Some(q))
            || self.tot_busy() == 1
    }

    /// `bfq_better_to_idle`.
    fn better_to_idle(&self, q: QId) -> bool {
        let b = self.q(q);
        if !b.process_refs {
            return false;
        }
        if self.strict_guarantees {
            return true;
        }
        if self.slice_idle == 0 || !b.sync || b.class == 2 {
            return false;
        }
        self.idling_boosts_thr(q) || self.idling_needed_for_guarantees(q)
    }

    /// `bfq_bfqq_must_idle`.
    fn must_idle(&self, q: QId) -> bool {
        self.q(q).sort.is_empty() && self.better_to_idle(q)
    }

    fn budget_timed_out(&self, q: QId) -> bool {
        self.now_j >= self.q(q).budget_timeout
    }

    /// `bfq_may_expire_for_budg_timeout`: an idling queue is expired for its timeout only
    /// if at least a third of its budget is left.
    fn may_expire_for_budget_timeout(&self, q: QId) -> bool {
        (!self.q(q).wait_request || self.budget_left(q) >= self.sched.entity(q).budget / 3) && self.budget_timed_out(q)
    }

    /// `bfq_arm_slice_timer`.
    fn arm_slice_timer(&mut self, q: QId, now: Instant) {
        self.qm(q).wait_request = true;
        let mut sl = self.slice_idle;
        if self.q(q).seeky() && self.q(q).wr_coeff == 1 && !self.asymmetric(Some(q)) {
            sl = sl.min(MIN_TT);
        } else if self.q(q).wr_coeff > 1 {
            sl = sl.max(20 * NS_PER_MS);
        }
        self.last_idling_start = now.as_nanos();
        self.idle_timer = Some(now + Duration::from_nanos(sl));
    }

    // ----------------------------------------------------------------------------------
    // Per-queue statistics

    /// `bfq_update_io_thinktime`: only when the queue had nothing queued or in flight.
    fn update_thinktime(&mut self, q: QId, now_ns: u64) {
        let cap = 2 * self.slice_idle;
        let b = self.qm(q);
        if b.dispatched > 0 || b.busy {
            return;
        }
        let elapsed = now_ns.saturating_sub(b.ttime.last_end_request).min(cap);
        let t = &mut b.ttime;
        t.samples = (7 * t.samples + 256) / 8;
        t.total = (7 * t.total + 256 * elapsed) / 8;
        t.mean = (t.total + 128) / t.samples;
    }

    /// `bfq_update_has_short_ttime`.
    fn update_has_short_ttime(&mut self, q: QId) {
        let slice_idle = self.slice_idle;
        let b = self.qm(q);
        if !b.sync || b.class == 2 || slice_idle == 0 {
            return;
        }
        // `bfq_sample_valid`: more than 80 in the 256-scaled count, i.e. three samples.
        let long = !b.process_refs || (b.ttime.samples > 80 && b.ttime.mean > slice_idle / 2);
        b.has_short_ttime = !long;
    }

    /// `BFQ_RQ_SEEKY`: far from `last_pos`, and on flash also small (`get_sdist`: no
    /// distance from position 0, i.e. from no previous request).
    fn rq_seeky(&self, last_pos: u64, rq: &Request) -> bool {
        let sdist = if last_pos == 0 { 0 } else { rq.sector.abs_diff(last_pos) };
        sdist > SEEK_THR && (self.rotational || rq.len_sectors < SECT_THR_NONROT)
    }

    /// `bfq_update_io_seektime`.
    fn update_seektime(&mut self, q: QId, rq: &Request) {
        let seeky = self.rq_seeky(self.q(q).last_request_pos, rq);
        let b = self.qm(q);
        b.seek_history = (b.seek_history << 1) | seeky as u32;
        // A soft real-time queue that turns totally seeky loses that raising.
        let rt_max = self.wr_rt_max_time();
        let b = self.q(q);
        if b.wr_coeff > 1 && b.wr_cur_max_time == rt_max && b.totally_seeky() {
            if b.wr_start_at_switch_to_srt + self.wr_duration() < self.now_j {
                self.end_wr(q);
            } else {
                self.switch_back_to_interactive_wr(q);
            }
        }
    }

    /// `bfq_update_io_intensity`: I/O-bound unless idle for over a fifth of the recent
    /// past (a window halved whenever it exceeds 200 ms).
    fn update_io_intensity(&mut self, q: QId, now_ns: u64) {
        let b = self.qm(q);
        let tot_io_time = now_ns.saturating_sub(b.io_start_time);
        if b.sort.is_empty() && b.dispatched == 0 {
            b.tot_idle_time += now_ns.saturating_sub(b.ttime.last_end_request);
        }
        if b.just_created {
            return;
        }
        b.io_bound = b.tot_idle_time * 5 <= tot_io_time;
        // Past 200 ms, both halves are halved: older history counts less.
        if tot_io_time > 200 * NS_PER_MS {
            b.io_start_time = now_ns - (tot_io_time >> 1);
            b.tot_idle_time >>= 1;
        }
    }

    /// `bfq_update_hw_tag`, at each completion.
    fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.in_driver);
        if self.hw_tag == 1 || self.in_driver + self.queued <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(q) = self.sched.in_service() {
            let b = self.q(q);
            if b.has_short_ttime
                && b.dispatched + b.queued_total() < HW_QUEUE_THRESHOLD
                && self.in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        self.hw_tag_samples += 1;
        if self.hw_tag_samples <= HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = (self.max_rq_in_driver > HW_QUEUE_THRESHOLD) as i32;
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
    }

    // ----------------------------------------------------------------------------------
    // Peak rate

    /// `bfq_reset_rate_computation`.
    fn reset_rate_computation(&mut self, rq: Option<&Request>, now_ns: u64) {
        if let Some(rq) = rq {
            self.last_dispatch = now_ns;
            self.first_dispatch = now_ns;
            self.peak_rate_samples = 1;
            self.sequential_samples = 0;
            self.tot_sectors_dispatched = rq.len_sectors as u64;
            self.last_rq_max_size = rq.len_sectors as u64;
        } else {
            self.peak_rate_samples = 0;
        }
    }

    /// `bfq_update_rate_reset`: close the observation interval and fold its rate into
    /// the peak-rate estimate through a low-pass filter.
    fn update_rate_reset(&mut self, rq: Option<&Request>, now_ns: u64) {
        if self.peak_rate_samples >= RATE_MIN_SAMPLES && self.delta_from_first >= RATE_MIN_INTERVAL {
            self.delta_from_first = self.delta_from_first.max(self.last_completion.saturating_sub(self.first_dispatch));
            let us = (self.delta_from_first / 1000).max(1);
            let rate = (self.tot_sectors_dispatched << RATE_SHIFT) / us;
            let ignore = (self.sequential_samples < (3 * self.peak_rate_samples) >> 2 && rate <= self.peak_rate)
                || rate > 20 << RATE_SHIFT;
            if !ignore {
                let w = (9 * self.sequential_samples as u64) / self.peak_rate_samples as u64;
                let w = (w * self.delta_from_first / RATE_REF_INTERVAL).min(8);
                let divisor = 10 - w;
                self.peak_rate = self.peak_rate * (divisor - 1) / divisor + rate / divisor;
                self.peak_rate = self.peak_rate.max(1);
                self.update_max_budget();
            }
        }
        self.reset_rate_computation(rq, now_ns);
    }

    /// `bfq_update_peak_rate`, at each dispatch.
    fn update_peak_rate(&mut self, rq: &Request, now_ns: u64) {
        if self.peak_rate_samples == 0 {
            self.reset_rate_computation(Some(rq), now_ns);
        } else if now_ns.saturating_sub(self.last_dispatch) > 100 * NS_PER_MS && self.in_driver == 0 {
            self.update_rate_reset(Some(rq), now_ns);
        } else {
            self.peak_rate_samples += 1;
            if (self.in_driver > 0 || now_ns.saturating_sub(self.last_completion) < MIN_TT)
                && !self.rq_seeky(self.last_position, rq)
            {
                self.sequential_samples += 1;
            }
            self.tot_sectors_dispatched += rq.len_sectors as u64;
            if !self.peak_rate_samples.is_multiple_of(32) {
                self.last_rq_max_size = self.last_rq_max_size.max(rq.len_sectors as u64);
            } else {
                self.last_rq_max_size = rq.len_sectors as u64;
            }
            self.delta_from_first = now_ns - self.first_dispatch;
            if self.delta_from_first >= RATE_REF_INTERVAL {
                self.update_rate_reset(Some(rq), now_ns);
            }
        }
        self.last_position = rq.end();
        self.last_dispatch = now_ns;
    }

    // ----------------------------------------------------------------------------------
    // Requests inside a queue

    /// `bfq_choose_req`: sync before async, metadata first, then the elevator rule.
    fn choose_req(&self, a: Option<ReqId>, b: Option<ReqId>, last: u64) -> Option<ReqId> {
        let r = |id: Option<ReqId>| id.map(|i| &self.rqs[&i].rq);
        choose_sync_meta_position(r(a), r(b), last, self.back_seek_max_kib * 2, self.back_seek_penalty)
    }

    /// `bfq_check_fifo`: the oldest request, if expired — looked at once per slot.
    fn check_fifo(&mut self, q: QId, last: ReqId, now_ns: u64) -> Option<ReqId> {
        let b = self.qm(q);
        if b.fifo_expire {
            return None;
        }
        b.fifo_expire = true;
        let head = b.fifo.front()?;
        if head == last || now_ns < self.rqs[&head].fifo_time {
            return None;
        }
        Some(head)
    }

    /// `bfq_find_next_rq`: after `last` leaves, the expired FIFO head or the better of
    /// its neighbours in the sort tree.
    fn find_next_rq(&mut self, q: QId, last: ReqId, now_ns: u64) -> Option<ReqId> {
        if let Some(f) = self.check_fifo(q, last, now_ns) {
            return Some(f);
        }
        let (sector, seq) = (self.rqs[&last].rq.sector, self.rqs[&last].seq);
        let b = self.q(q);
        let prev = b.sort.range(..(sector, seq)).next_back().map(|(_, &i)| i);
        let next = b
            .sort
            .range((sector, seq + 1)..)
            .next()
            .map(|(_, &i)| i)
            .or_else(|| b.sort.iter().next().map(|(_, &i)| i).filter(|&f| f != last));
        self.choose_req(next, prev, sector)
    }

    /// `bfq_remove_request`.
    fn remove_request(&mut self, id: ReqId, now_ns: u64) -> BfqRq {
        let q = self.rqs[&id].q;
        if self.q(q).next_rq == Some(id) {
            let n = self.find_next_rq(q, id, now_ns);
            self.qm(q).next_rq = n;
            if n.is_some() {
                self.updated_next_req(q);
            }
        }
        let e = self.rqs.remove(&id).expect("request held by bfq");
        let sync = e.rq.is_sync() as usize;
        let b = self.qm(q);
        b.sort.remove(&(e.rq.sector, e.seq));
        b.fifo.remove(e.fifo_key);
        b.queued[sync] -= 1;
        self.queued -= 1;
        if self.q(q).sort.is_empty() {
            self.qm(q).next_rq = None;
            if self.q(q).busy && self.sched.in_service() != Some(q) {
                self.del_busy(q);
                self.sched.deactivate(q, false);
                // Emptied out of service: its service and budget no longer describe a
                // slot, so both restart from zero.
                let e = self.sched.entity_mut(q);
                e.budget = 0;
                e.service = 0;
                self.free_released();
            }
        }
        e
    }

    // ----------------------------------------------------------------------------------
    // Busy / idle transitions, expiration, selection

    /// `bfq_add_bfqq_busy` (without the activation, done by the caller).
    fn add_busy(&mut self, q: QId) {
        let b = self.qm(q);
        b.busy = true;
        let class = b.class;
        let dispatched = b.dispatched;
        self.busy_queues[class] += 1;
        if dispatched == 0 && self.q(q).wr_coeff == 1 {
            self.weights_add(q);
        }
        if self.q(q).wr_coeff > 1 {
            self.wr_busy_queues += 1;
        }
    }

    /// `bfq_del_bfqq_busy` (without the deactivation).
    fn del_busy(&mut self, q: QId) {
        let b = self.qm(q);
        b.busy = false;
        let class = b.class;
        let dispatched = b.dispatched;
        self.busy_queues[class] -= 1;
        if dispatched == 0 {
            self.weights_remove(q);
        }
        if self.q(q).wr_coeff > 1 {
            self.wr_busy_queues -= 1;
        }
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: budget for the new activity, weight raising
    /// (a queue idle for 2 s, or new, is interactive; one that keeps under the soft
    /// real-time rate is soft real-time), activation, and preemption of the in-service
    /// queue where due. Returns whether the queue was deemed interactive.
    fn idle_busy_switch(&mut self, q: QId, now_ns: u64) -> bool {
        let now = self.now_j;
        let b = self.q(q);
        let idle_for_long_time = b.dispatched == 0 && b.budget_timeout + self.ms_j(WR_MIN_IDLE_TIME_MS) < now;
        let arrived_in_time = now_ns <= b.ttime.last_end_request + 3 * self.slice_idle;
        let in_burst = b.in_large_burst;
        // The kernel tests `entity.new_weight`: a priority change counts at once here.
        let default_weight = b.new_orig_weight.unwrap_or(b.orig_weight) == 40;
        let soft_rt =
            !b.totally_seeky() && !in_burst && b.soft_rt_next_start < now && b.dispatched == 0 && default_weight;
        let interactive = !in_burst && idle_for_long_time && default_weight;
        let old_wr_coeff = b.wr_coeff;
        let wr_or_deserves_wr = self.low_latency && (b.wr_coeff > 1 || (b.sync && (interactive || soft_rt)));
        // bfq_bfqq_update_budg_for_activation
        let wants_to_preempt = if self.q(q).non_blocking_wait_rq && arrived_in_time && self.budget_left(q) > 0 {
            let left = self.budget_left(q).min(self.q(q).max_budget);
            let e = self.sched.entity_mut(q);
            e.budget = left;
            e.service = 0;
            true
        } else {
            let next = self.q(q).next_rq.expect("a busy queue has a request");
            let charge = self.serv_to_charge(next, q);
            let max = self.q(q).max_budget;
            let e = self.sched.entity_mut(q);
            e.service = 0;
            e.budget = max.max(charge);
            self.qm(q).non_blocking_wait_rq = false;
            false
        };
        // A queue of a burst that has been idle far longer than an interactive one has
        // finished its part of the burst.
        if !self.q(q).just_created && idle_for_long_time && self.q(q).budget_timeout + self.ms_j(10_000) < now {
            self.leave_burst_list(q);
            self.qm(q).in_large_burst = false;
        }
        self.qm(q).just_created = false;
        if self.low_latency {
            self.update_wr_on_rq_arrival(q, old_wr_coeff, wr_or_deserves_wr, interactive, in_burst, soft_rt);
        }
        let b = self.qm(q);
        b.last_idle_bklogged = now;
        b.service_from_backlogged = 0;
        b.softrt_update = false;
        // bfq_add_bfqq_busy: activation (taking a new weight if raising changed), then busy.
        let (nbw, wr) = (b.non_blocking_wait_rq, b.wr_coeff);
        self.sched.activate(q, nbw, wr);
        self.qm(q).non_blocking_wait_rq = false;
        self.free_released();
        self.add_busy(q);
        if let Some(s) = self.sched.in_service()
            && s != q
            && ((wants_to_preempt && self.q(q).wr_coeff >= self.q(s).wr_coeff)
                || self.higher_class_or_weight(q, s)
                || !self.better_to_idle(s))
        {
            // `next_queue_may_preempt` always holds without groups: the in-service queue
            // is off the active tree, so the next one to serve is never it.
            self.expire(s, false, Reason::Preempted, now_ns);
        }
        interactive
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`: start, renew or end a raising period.
    fn update_wr_on_rq_arrival(
        &mut self,
        q: QId,
        old_wr_coeff: u32,
        wr_or_deserves_wr: bool,
        interactive: bool,
        in_burst: bool,
        soft_rt: bool,
    ) {
        let rt_max = self.wr_rt_max_time();
        if old_wr_coeff == 1 && wr_or_deserves_wr {
            if interactive {
                let dur = self.wr_duration();
                self.qm(q).service_from_wr = 0;
                self.set_wr_coeff(q, WR_COEFF);
                self.qm(q).wr_cur_max_time = dur;
            } else {
                // No interactive period under way to fall back to.
                self.qm(q).wr_start_at_switch_to_srt = NEVER;
                self.set_wr_coeff(q, WR_COEFF * SOFTRT_WEIGHT_FACTOR);
                self.qm(q).wr_cur_max_time = rt_max;
            }
            // A small budget close to the backlog, so the raised queue is served early.
            let cap = 2 * self.min_budget();
            let e = self.sched.entity_mut(q);
            e.budget = e.budget.min(cap);
        } else if old_wr_coeff > 1 {
            if interactive {
                let dur = self.wr_duration();
                self.set_wr_coeff(q, WR_COEFF);
                self.qm(q).wr_cur_max_time = dur;
            } else if in_burst {
                self.set_wr_coeff(q, 1);
            } else if soft_rt {
                if self.q(q).wr_cur_max_time != rt_max {
                    let b = self.qm(q);
                    b.wr_start_at_switch_to_srt = b.last_wr_start_finish;
                    b.wr_cur_max_time = rt_max;
                    self.set_wr_coeff(q, WR_COEFF * SOFTRT_WEIGHT_FACTOR);
                }
                self.qm(q).last_wr_start_finish = self.now_j;
            }
        }
    }

    /// `bfq_updated_next_req`: a new head request of a waiting queue may need a bigger
    /// budget; the queue is then repositioned with it (its start time stays).
    fn updated_next_req(&mut self, q: QId) {
        let Some(next) = self.q(q).next_rq else { return };
        if self.sched.in_service() == Some(q) {
            return; // budgets cannot change once a queue is selected
        }
        let charge = self.serv_to_charge(next, q);
        let e = self.sched.entity(q);
        let new_budget = self.q(q).max_budget.max(charge).max(e.service);
        if e.budget != new_budget && e.tree == Tree::Active {
            self.sched.entity_mut(q).budget = new_budget;
            self.sched.requeue_active(q);
            // A pending weight may have applied: the weight counters follow at once.
            self.free_released();
        }
    }

    /// `bfq_bfqq_higher_class_or_weight`.
    fn higher_class_or_weight(&self, q: QId, than: QId) -> bool {
        // A better class wins; otherwise (even from a worse class) a higher weight does.
        if self.q(q).class < self.q(than).class {
            return true;
        }
        self.sched.entity(q).weight > self.sched.entity(than).weight
    }

    /// `bfq_bfqq_is_slow`, with the slot length in ms for time charging.
    fn is_slow(&self, q: QId, compensate: bool, now_ns: u64) -> (bool, u64) {
        let b = self.q(q);
        let mut slow = b.seeky();
        if !b.sync {
            return (false, 0);
        }
        let end = if compensate { self.last_idling_start } else { now_ns };
        let delta_us = end.saturating_sub(self.last_budget_start) / 1000;
        if delta_us < 1000 {
            // Charge at least one seek (the default idle slice), on flash the minimum think time.
            let ms = if self.rotational { DEFAULT_SLICE_IDLE / NS_PER_MS } else { MIN_TT / NS_PER_MS };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            slow = self.sched.entity(q).service < self.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// `bfq_bfqq_charge_time`: charge the service the device could have given in that
    /// time, at least what was received.
    fn charge_time(&mut self, q: QId, time_ms: u64) {
        let timeout_ms = self.hz.jiffies_to_msecs(default_timeout(self.hz)).max(1);
        let serv_for_time = self.max_budget * time_ms.min(timeout_ms) / timeout_ms;
        let service = self.sched.entity(q).service;
        let tot = serv_for_time.max(service);
        let e = self.sched.entity_mut(q);
        if tot > e.budget {
            e.budget = tot;
        }
        self.served(q, tot - service);
    }

    /// `__bfq_bfqq_recalc_budget`.
    fn recalc_budget(&mut self, q: QId, reason: Reason) {
        let min_budget = self.min_budget();
        let dev_max = self.max_budget;
        let b = self.q(q);
        let mut budget = if b.wr_coeff == 1 { b.max_budget } else { 2 * min_budget };
        if b.sync && b.wr_coeff == 1 {
            budget = match reason {
                Reason::TooIdle if b.dispatched > 0 => (budget * 2).min(dev_max),
                Reason::TooIdle => {
                    if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Reason::BudgetTimeout => (budget * 2).min(dev_max),
                Reason::BudgetExhausted => (budget * 4).min(dev_max),
                Reason::NoMoreRequests => self.sched.entity(q).service.max(min_budget),
                Reason::Preempted => return,
            };
        } else if !b.sync {
            budget = dev_max;
        }
        let mut mb = budget;
        if self.budgets_assigned >= STATS_MIN_BUDGETS && self.user_max_budget == 0 {
            mb = mb.min(self.max_budget);
        }
        self.qm(q).max_budget = mb;
        if let Some(next) = self.q(q).next_rq {
            let charge = self.serv_to_charge(next, q);
            self.sched.entity_mut(q).budget = mb.max(charge);
        }
    }

    /// `bfq_bfqq_expire`.
    fn expire(&mut self, q: QId, compensate: bool, reason: Reason, now_ns: u64) {
        let (slow, delta_ms) = self.is_slow(q, compensate, now_ns);
        let e = self.sched.entity(q);
        if self.q(q).wr_coeff == 1 && (slow || (reason == Reason::BudgetTimeout && self.budget_left(q) >= e.budget / 3))
        {
            self.charge_time(q, delta_ms);
        }
        if self.low_latency && self.q(q).wr_coeff == 1 {
            self.qm(q).last_wr_start_finish = self.now_j;
        }
        if self.low_latency && self.q(q).sort.is_empty() {
            // Emptied: if nothing is in flight the pattern is isochronous so far, and the
            // soft real-time start follows; otherwise that waits for the last completion.
            if self.q(q).dispatched == 0 {
                let t = self.softrt_next_start(q);
                self.qm(q).soft_rt_next_start = t;
            } else {
                self.qm(q).softrt_update = true;
            }
        }
        self.recalc_budget(q, reason);
        self.expire_inner(q, reason);
        if !self.q(q).busy && reason != Reason::BudgetTimeout && reason != Reason::BudgetExhausted {
            // Service kept: if its next request comes in time, the queue goes on with
            // this same budget as if it never expired.
            self.qm(q).non_blocking_wait_rq = true;
        } else {
            self.sched.entity_mut(q).service = 0;
        }
        self.maybe_free(q);
    }

    /// `__bfq_bfqq_expire` + `__bfq_bfqd_reset_in_service`.
    fn expire_inner(&mut self, q: QId, reason: Reason) {
        if self.q(q).sort.is_empty() && !(reason == Reason::Preempted && self.idling_needed_for_guarantees(q)) {
            if self.q(q).dispatched == 0 {
                self.qm(q).budget_timeout = self.now_j;
            }
            self.del_busy(q);
            self.sched.deactivate(q, true);
        } else {
            self.sched.requeue_in_service(q);
        }
        self.free_released();
        self.qm(q).wait_request = false;
        self.idle_timer = None;
    }

    /// `bfq_set_in_service_queue`: the next queue by B-WF2Q+, with its budget timeout.
    fn set_in_service(&mut self, now_ns: u64) -> Option<QId> {
        if self.tot_busy() == 0 {
            return None;
        }
        let q = self.sched.set_in_service()?;
        self.free_released();
        self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
        let now = self.now_j;
        let rt_max = self.wr_rt_max_time();
        let b = self.qm(q);
        b.fifo_expire = false;
        // A soft real-time queue's raising period moves forward by the time it waited.
        if b.last_wr_start_finish < now && b.wr_coeff > 1 && b.wr_cur_max_time == rt_max && b.budget_timeout < now {
            if b.budget_timeout > b.last_wr_start_finish {
                b.last_wr_start_finish += now - b.budget_timeout;
            } else {
                b.last_wr_start_finish = now;
            }
        }
        // bfq_set_budget_timeout: an interactively raised queue gets its weight factor
        // times the timeout.
        let (max_time, orig) = (b.wr_cur_max_time, b.orig_weight);
        let coeff = if max_time == rt_max { 1 } else { self.sched.entity(q).weight / orig };
        let timeout = now + self.timeout_j as i64 * coeff as i64;
        self.qm(q).budget_timeout = timeout;
        self.last_budget_start = now_ns;
        Some(q)
    }

    /// `bfq_select_queue`: keep, expire or replace the in-service queue; `None` while
    /// plugging (idling for the in-service queue).
    fn select_queue(&mut self, now_ns: u64) -> Option<QId> {
        let mut q = match self.sched.in_service() {
            None => self.set_in_service(now_ns)?,
            Some(q) => {
                if self.may_expire_for_budget_timeout(q) && !self.must_idle(q) {
                    self.expire(q, false, Reason::BudgetTimeout, now_ns);
                    self.set_in_service(now_ns)?
                } else {
                    q
                }
            }
        };
        loop {
            let reason = if let Some(next) = self.q(q).next_rq {
                if self.serv_to_charge(next, q) > self.budget_left(q) {
                    Reason::BudgetExhausted
                } else {
                    if self.q(q).wait_request {
                        self.qm(q).wait_request = false;
                        self.idle_timer = None;
                    }
                    return Some(q);
                }
            } else if self.q(q).wait_request || (self.q(q).dispatched != 0 && self.better_to_idle(q)) {
                return None;
            } else {
                Reason::NoMoreRequests
            };
            self.expire(q, false, reason, now_ns);
            q = self.set_in_service(now_ns)?;
        }
    }

    /// `bfq_dispatch_rq_from_bfqq`: charge, take the request off the queue, sample the
    /// peak rate; an IDLE-class queue gives way after every request when others wait.
    fn dispatch_from(&mut self, q: QId, now: Instant, ctx: &mut Ctx) {
        let now_ns = now.as_nanos();
        let id = self.q(q).next_rq.expect("selected queue has a request");
        let charge = self.serv_to_charge(id, q);
        self.served(q, charge);
        let e = self.remove_request(id, now_ns);
        self.qm(q).dispatched += 1;
        self.owned.insert(id, q);
        // Sampled before the request counts as in the driver, as `bfq_dispatch_remove` is.
        self.update_peak_rate(&e.rq, now_ns);
        self.in_driver += 1;
        ctx.dispatch_add_tail(e.rq);
        if self.sched.in_service() != Some(q) {
            return;
        }
        self.update_wr_data(q);
        if self.tot_busy() > 1 && self.q(q).class == 2 {
            self.expire(q, false, Reason::BudgetExhausted, now_ns);
        }
    }

    /// `bfq_idle_slice_timer_body`.
    fn idle_timer_fired(&mut self, now: Instant) {
        self.idle_timer = None;
        let Some(q) = self.sched.in_service() else { return };
        self.qm(q).wait_request = false;
        let reason = if self.budget_timed_out(q) {
            Reason::BudgetTimeout
        } else if self.q(q).queued_total() == 0 {
            Reason::TooIdle
        } else {
            return;
        };
        self.expire(q, true, reason, now.as_nanos());
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }
    iosched_core::tunables! {
        Spec::millis("slice_idle", 0, i32::MAX as i64, "how long the empty in-service queue is waited for")
            => get |s| (s.slice_idle / NS_PER_MS) as i64,
            set |s, v| s.slice_idle = (v as u64) * NS_PER_MS;
        Spec::micros("slice_idle_us", 0, i32::MAX as i64, "the same in microseconds")
            => get |s| (s.slice_idle / 1000) as i64,
            set |s, v| s.slice_idle = (v as u64) * 1000;
        Spec::millis("timeout_sync", 1, i32::MAX as i64, "budget timeout of a queue's service slot")
            => get |s| s.hz.jiffies_to_msecs(s.timeout_j) as i64,
            set |s, v| {
                s.timeout_j = s.hz.msecs_to_jiffies(v as u64).max(1);
                s.update_max_budget();
            };
        Spec::count(
            "max_budget",
            0,
            i32::MAX as i64,
            "largest budget in sectors; 0 = auto (estimated peak rate × timeout_sync)",
        )
            => get |s| s.user_max_budget as i64,
            set |s, v| {
                s.user_max_budget = v as u64;
                if v > 0 {
                    s.max_budget = v as u64;
                } else {
                    s.update_max_budget();
                }
            };
        Spec::boolean("low_latency", "weight raising of interactive and soft real-time queues")
            => get |s| s.low_latency as i64,
            set |s, v| {
                let on = v != 0;
                if !on && s.low_latency {
                    // bfq_end_wr: every queue's raising ends at once.
                    let qs: Vec<QId> = s.queues.keys().copied().collect();
                    for q in qs {
                        if s.q(q).wr_coeff > 1 {
                            s.end_wr(q);
                        }
                    }
                }
                s.low_latency = on;
            };
        Spec::boolean("strict_guarantees", "always idle, and one request in the device at a time")
            => get |s| s.strict_guarantees as i64,
            set |s, v| {
                s.strict_guarantees = v != 0;
                if s.strict_guarantees && s.slice_idle < 8 * NS_PER_MS {
                    s.slice_idle = 8 * NS_PER_MS;
                }
            };
        Spec::millis("fifo_expire_sync", 1, i32::MAX as i64, "age after which a sync request is served first")
            => get |s| (s.fifo_expire[1] / NS_PER_MS) as i64,
            set |s, v| s.fifo_expire[1] = (v as u64) * NS_PER_MS;
        Spec::millis("fifo_expire_async", 1, i32::MAX as i64, "age after which an async request is served first")
            => get |s| (s.fifo_expire[0] / NS_PER_MS) as i64,
            set |s, v| s.fifo_expire[0] = (v as u64) * NS_PER_MS;
        Spec::kib("back_seek_max", 0, i32::MAX as i64, "longest backward seek preferred to a forward one")
            => get |s| s.back_seek_max_kib as i64,
            set |s, v| s.back_seek_max_kib = v as u64;
        Spec::count("back_seek_penalty", 1, i32::MAX as i64, "cost factor of a backward seek")
            => get |s| s.back_seek_penalty as i64,
            set |s, v| s.back_seek_penalty = v as u64;
    }

    fn init_queue(&mut self, cfg: &QueueConfig) {
        self.rotational = cfg.rotational;
        self.reset_peak_rate();
    }

    /// `bfq_insert_request` → `__bfq_insert_request` → `bfq_add_request`.
    fn insert(&mut self, now: Instant, rq: &Request, ctx: &mut Ctx) {
        let now_ns = now.as_nanos();
        self.tick(now);
        // blk-mq runs the hardware queue after every insertion
        // (`blk_mq_sched_insert_request` → `blk_mq_run_hw_queue`): the request an idling
        // queue waits for is dispatched at once, even while its idle timer still runs.
        ctx.kick();
        let q = self.queue_for(rq, now_ns);
        // bfq_init_rq: a new sync queue may belong to a burst of queue creations.
        if self.q(q).just_created && (self.burst_size > 0 || self.tot_busy() == 0) {
            self.handle_burst(q);
        }
        self.update_thinktime(q, now_ns);
        self.update_has_short_ttime(q);
        self.update_seektime(q, rq);
        if self.q(q).sync {
            self.update_io_intensity(q, now_ns);
        }
        // bfq_add_request
        let sync = rq.is_sync() as usize;
        self.seq += 1;
        let seq = self.seq;
        let fifo_time = now_ns + self.fifo_expire[sync];
        let b = self.qm(q);
        b.queued[sync] += 1;
        b.sort.insert((rq.sector, seq), rq.id);
        let fifo_key = b.fifo.push_back(rq.id);
        self.queued += 1;
        self.rqs.insert(rq.id, BfqRq { rq: *rq, q, fifo_time, fifo_key, seq });
        let prev = self.q(q).next_rq;
        let next = self.choose_req(prev, Some(rq.id), self.last_position);
        self.qm(q).next_rq = next;
        let old_wr_coeff = self.q(q).wr_coeff;
        let mut interactive = false;
        if !self.q(q).busy {
            interactive = self.idle_busy_switch(q, now_ns);
        } else {
            // An async queue that gets a request 500 ms after its last one is raised.
            if self.low_latency
                && old_wr_coeff == 1
                && !rq.is_sync()
                && self.q(q).last_wr_start_finish + self.ms_j(WR_MIN_INTER_ARR_ASYNC_MS) < self.now_j
            {
                let dur = self.wr_duration();
                self.set_wr_coeff(q, WR_COEFF);
                self.qm(q).wr_cur_max_time = dur;
            }
            if prev != next {
                self.updated_next_req(q);
            }
        }
        // For a queue not raised, the time of its last request; for one starting (or
        // restarting, if interactive) a raising period, the period's start.
        if self.low_latency && (old_wr_coeff == 1 || self.q(q).wr_coeff == 1 || interactive) {
            self.qm(q).last_wr_start_finish = self.now_j;
        }
        // bfq_rq_enqueued
        let b = self.qm(q);
        b.last_request_pos = rq.end();
        if self.sched.in_service() == Some(q) && self.q(q).wait_request {
            let small = self.q(q).queued[sync] == 1 && rq.len_sectors < 32;
            let timed_out = self.budget_timed_out(q);
            if small && self.idling_boosts_thr(q) && !timed_out {
                return;
            }
            self.qm(q).wait_request = false;
            self.idle_timer = None;
            if timed_out {
                self.expire(q, false, Reason::BudgetTimeout, now_ns);
            }
        }
    }

    /// `bfq_request_merge`: a request of the bio's own queue starting where it ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<ReqId> {
        let q = self.keys.get(&key_of(bio))?;
        let sector = bio.end();
        self.q(*q).sort.range((sector, 0)..(sector + 1, 0)).next().map(|(_, &id)| id)
    }

    /// `bfq_allow_bio_merge`: only into a request of the bio's own queue.
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        let Some(e) = self.rqs.get(&rq.id) else { return false };
        self.keys.get(&key_of(bio)) == Some(&e.q)
    }
    fn allow_rq_merge(&self, rq: &Request, next: &Request) -> bool {
        match (self.rqs.get(&rq.id), self.rqs.get(&next.id)) {
            (Some(a), Some(b)) => a.q == b.q,
            _ => false,
        }
    }

    /// `bfq_request_merged`: a front merge that moves the request before its predecessor
    /// repositions it and may make it the queue's next.
    fn merged(&mut self, _now: Instant, rq: &Request, kind: MergeKind, _ctx: &mut Ctx) {
        let e = self.rqs.get_mut(&rq.id).expect("merged into a request bfq holds");
        let q = e.q;
        let old = (e.rq.sector, e.seq);
        e.rq = *rq;
        if kind != MergeKind::Front {
            return;
        }
        let prev_sector = self.q(q).sort.range(..old).next_back().map(|(&(s, _), _)| s);
        let b = self.qm(q);
        b.sort.remove(&old);
        if prev_sector.is_some_and(|p| rq.sector < p) {
            self.seq += 1;
            let seq = self.seq;
            self.rqs.get_mut(&rq.id).unwrap().seq = seq;
            self.qm(q).sort.insert((rq.sector, seq), rq.id);
            let prev = self.q(q).next_rq;
            let next = self.choose_req(prev, Some(rq.id), self.last_position);
            self.qm(q).next_rq = next;
            if prev != next {
                self.updated_next_req(q);
            }
        } else {
            // Still in order: same place in the tree, under its new start sector.
            b.sort.insert((rq.sector, old.1), rq.id);
        }
    }

    /// `bfq_requests_merged`: `rq` takes `next`'s FIFO place if `next` is older; `next`
    /// leaves the queue.
    fn merge_requests(&mut self, now: Instant, rq: &Request, next: &Request) {
        self.tick(now);
        let (n_time, n_key) = (self.rqs[&next.id].fifo_time, self.rqs[&next.id].fifo_key);
        let r = self.rqs.get_mut(&rq.id).expect("merge into a request bfq holds");
        r.rq = *rq;
        if n_time < r.fifo_time {
            let q = r.q;
            let old_key = r.fifo_key;
            r.fifo_time = n_time;
            r.fifo_key = n_key;
            let fifo = &mut self.qm(q).fifo;
            fifo.replace(n_key, rq.id);
            fifo.remove(old_key);
            self.rqs.get_mut(&next.id).unwrap().fifo_key = u64::MAX;
        }
        let q = self.rqs[&next.id].q;
        if self.q(q).next_rq == Some(next.id) {
            self.qm(q).next_rq = Some(rq.id);
        }
        self.remove_request(next.id, now.as_nanos());
    }

    fn former(&self, rq: &Request) -> Option<ReqId> {
        let e = self.rqs.get(&rq.id)?;
        self.q(e.q).sort.range(..(rq.sector, e.seq)).next_back().map(|(_, &id)| id)
    }
    fn latter(&self, rq: &Request) -> Option<ReqId> {
        let e = self.rqs.get(&rq.id)?;
        self.q(e.q).sort.range((rq.sector, e.seq + 1)..).next().map(|(_, &id)| id)
    }

    /// `bfq_dispatch_request` (one request per call, as blk-mq asks).
    fn dispatch(&mut self, now: Instant, ctx: &mut Ctx) -> Decision {
        let now_ns = now.as_nanos();
        self.tick(now);
        if self.tot_busy() > 0
            && !(self.strict_guarantees && self.in_driver > 0)
            && let Some(q) = self.select_queue(now_ns)
        {
            self.dispatch_from(q, now, ctx);
            return Decision::Dispatch;
        }
        if self.rqs.is_empty() {
            return Decision::Empty;
        }
        // Plugging (or one request at a time): blk-mq runs the queue again after 3 ms
        // (the queue's rule); the idle timer or a completion may come first.
        Decision::Idle { until: self.idle_timer }
    }

    /// Everything out, queue by queue in B-WF2Q+ order, with no idling.
    fn drain(&mut self, now: Instant, ctx: &mut Ctx) {
        self.idle_timer = None;
        let now_ns = now.as_nanos();
        self.tick(now);
        while !self.rqs.is_empty() {
            let q = match self.sched.in_service() {
                Some(q) => q,
                None => self.set_in_service(now_ns).expect("requests held, so a queue is busy"),
            };
            if self.q(q).next_rq.is_none() {
                // An empty queue kept busy (preempted while idling was due) or idling.
                self.qm(q).wait_request = false;
                self.expire(q, false, Reason::NoMoreRequests, now_ns);
                continue;
            }
            self.dispatch_from(q, now, ctx);
        }
    }

    /// `bfq_finish_requeue_request` → `bfq_completed_request`.
    fn completed(&mut self, now: Instant, rq: &Request, _status: Status, ctx: &mut Ctx) {
        let Some(q) = self.owned.remove(&rq.id) else { return };
        let now_ns = now.as_nanos();
        self.tick(now);
        self.update_hw_tag();
        self.in_driver -= 1;
        self.qm(q).dispatched -= 1;
        if self.q(q).dispatched == 0 && !self.q(q).busy {
            self.qm(q).budget_timeout = self.now_j;
            self.weights_remove(q);
        }
        self.qm(q).ttime.last_end_request = now_ns;
        // A completion that shows a very slow service closes the rate observation.
        let delta_us = now_ns.saturating_sub(self.last_completion) / 1000;
        if delta_us > MIN_TT / 1000 && (self.last_rq_max_size << RATE_SHIFT) / delta_us < 1 << (RATE_SHIFT - 10) {
            self.update_rate_reset(None, now_ns);
        }
        self.last_completion = now_ns;
        let b = self.q(q);
        if b.softrt_update && b.dispatched == 0 && b.sort.is_empty() && b.wr_coeff != WR_COEFF {
            let t = self.softrt_next_start(q);
            self.qm(q).soft_rt_next_start = t;
        }
        if self.sched.in_service() == Some(q) {
            if self.must_idle(q) {
                if self.q(q).dispatched == 0 {
                    self.arm_slice_timer(q, now);
                }
                self.maybe_free(q);
                return;
            } else if self.may_expire_for_budget_timeout(q) {
                self.expire(q, false, Reason::BudgetTimeout, now_ns);
            } else if self.q(q).sort.is_empty() && (self.q(q).dispatched == 0 || !self.better_to_idle(q)) {
                self.expire(q, false, Reason::NoMoreRequests, now_ns);
            }
        }
        self.maybe_free(q);
        if self.in_driver == 0 {
            ctx.kick();
        }
    }

    /// `bfq_exit_icq_bfqq`: the process's sync queue loses its process; if in service,
    /// it is expired at once.
    fn owner_exited(&mut self, now: Instant, owner: Owner, ctx: &mut Ctx) {
        let Some(&q) = self.keys.get(&QKey::Sync(owner)) else { return };
        self.tick(now);
        self.qm(q).process_refs = false;
        // `bfq_release_process_ref`: a queue left busy while empty (preempted when idling
        // was due) stops being busy.
        if self.q(q).busy && self.q(q).sort.is_empty() && self.sched.in_service() != Some(q) {
            self.del_busy(q);
            self.sched.deactivate(q, false);
            self.free_released();
        }
        if self.sched.in_service() == Some(q) {
            self.expire_inner(q, Reason::BudgetExhausted);
            ctx.kick();
        }
        self.maybe_free(q);
    }

    /// A blk-mq scheduler: flushes go past it, and the queue runs it by blk-mq's rules.
    fn blk_mq(&self) -> bool {
        true
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.idle_timer
    }
    fn handle_timeout(&mut self, now: Instant, ctx: &mut Ctx) {
        self.tick(now);
        if self.idle_timer.is_some_and(|t| now >= t) {
            self.idle_timer_fired(now);
            ctx.kick();
        }
    }

    fn is_empty(&self) -> bool {
        self.rqs.is_empty()
    }
    fn queued(&self) -> usize {
        self.rqs.len()
    }

    fn debug_state(&self) -> Vec<(String, String)> {
        let mut v = vec![
            (
                "in_service_queue".into(),
                self.sched.in_service().map_or("none".into(), |q| format!("{:?}", self.q(q).key)),
            ),
            (
                "next_in_service".into(),
                self.sched.next_in_service().map_or("none".into(), |q| format!("{:?}", self.q(q).key)),
            ),
            ("busy_queues".into(), format!("{:?}", self.busy_queues)),
            ("wr_busy_queues".into(), self.wr_busy_queues.to_string()),
            ("max_budget".into(), self.max_budget.to_string()),
            ("peak_rate".into(), self.peak_rate.to_string()),
            ("hw_tag".into(), self.hw_tag.to_string()),
            ("vtime_be".into(), self.sched.vtime(1).to_string()),
            ("wsum_be".into(), self.sched.wsum(1).to_string()),
            ("active_be".into(), self.sched.active_len(1).to_string()),
        ];
        if let Some(q) = self.sched.in_service() {
            let e = self.sched.entity(q);
            v.push(("budget".into(), e.budget.to_string()));
            v.push(("service".into(), e.service.to_string()));
            v.push(("wait_request".into(), self.q(q).wait_request.to_string()));
            v.push(("wr_coeff".into(), self.q(q).wr_coeff.to_string()));
            let b = self.q(q);
            v.push((
                "queue_flags".into(),
                format!(
                    "io_bound={} short_ttime={} seeky={} process_refs={}",
                    b.io_bound,
                    b.has_short_ttime,
                    b.seeky(),
                    b.process_refs
                ),
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iosched_core::IoPrio;

    #[test]
    fn weights_follow_ioprio() {
        assert_eq!(weight_of(0), 80);
        assert_eq!(weight_of(4), 40);
        assert_eq!(weight_of(7), 10);
    }

    /// A priority change reaches the process's sync queue from any of its requests, an
    /// async write included, and counts at once for the raising rules (`new_weight`),
    /// while the queue's weight and class wait for its next (re)queueing.
    #[test]
    fn a_priority_change_seen_on_an_async_request_reaches_the_sync_queue() {
        let mut b = Bfq::new(Hz::new(1000));
        let owner = Owner(7);
        let mut r = Request::read(1, 0, 8, owner, Instant::ZERO);
        r.prio = IoPrio::be(4);
        let sq = b.queue_for(&r, 0);
        assert_eq!((b.q(sq).class, b.q(sq).orig_weight), (1, 40));
        let mut w = Request::write(2, 100, 8, owner, Instant::ZERO);
        w.prio = IoPrio::idle();
        let aq = b.queue_for(&w, 0);
        assert_ne!(aq, sq, "async requests have their own queue");
        assert_eq!(b.q(sq).ioprio, (2, 7));
        assert_eq!(b.q(sq).new_orig_weight, Some(10));
        assert_eq!(b.sched.entity(sq).pending_class, Some(2));
        assert_eq!((b.q(sq).class, b.q(sq).orig_weight), (1, 40), "applied only at (re)queueing");
    }

    /// The maximum budget is the default until a rate is measured; with the HDD
    /// reference rate (≈104 MiB/s) the automatic one is ≈26.7 k sectors.
    #[test]
    fn auto_max_budget_from_peak_rate() {
        let mut b = Bfq::new(Hz::new(1000));
        assert_eq!(b.max_budget, DEFAULT_MAX_BUDGET);
        b.peak_rate = REF_RATE[0];
        b.update_max_budget();
        assert_eq!(b.max_budget, 26_702);
        b.set_tunable("max_budget", 4096);
        b.peak_rate = 1;
        b.update_max_budget();
        assert_eq!(b.max_budget, 4096, "a user maximum is kept");
    }
}
