//! The queue's configuration: `/sys/block/<dev>/queue/*` and what the driver sets up
//! (its largest request, its queue depth, whether it is rotational), each a tunable
//! declared once in [`QUEUE_TUNABLES`], and the request pool's rule (2.5 or 2.6.20).

use crate::time::{Duration, Hz};
use crate::tunable::{Spec, TunableError};

/// Queue-level settings (`/sys/block/<dev>/queue/*` and driver properties).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueConfig {
    /// Request slots per data direction (`nr_requests`, default 128, min 4).
    pub nr_requests: u32,
    /// Largest request in sectors (`max_sectors_kb` × 2; IDE LBA28 = 256 sectors).
    pub max_sectors: u32,
    /// Requests the device holds at once: 1 = IDE without TCQ, N = tagged queueing.
    pub depth: u32,
    /// Plug an idle queue until `unplug_thresh` requests or `unplug_delay` pass
    /// ([`Unplug::Timer`]), or until a task runs `tq_disk` ([`Unplug::TqDisk`]).
    pub plugging: bool,
    pub unplug_thresh: u32,
    pub unplug_delay: Duration,
    /// What ends a plug (`unplug`): the 2.5/2.6 threshold and timer, or 2.4's `tq_disk`.
    pub unplug: Unplug,
    /// When the driver takes a request off the queue's list (`dequeue`): at issue (SCSI,
    /// libata) or at completion (IDE).
    pub dequeue: Dequeue,
    /// A policy's kick unplugs a plugged queue (`kick_unplug`): 2.6.20's
    /// `blk_start_queueing`, which AS's work handler, `cfq_kick_queue` and
    /// `cfq_rq_enqueued` call. 2.5.64's AS work handler calls the request function
    /// directly, which leaves a plugged IDE queue alone (`choose_drive` skips it).
    pub kick_unplug: bool,
    /// Tick rate for the queue's own jiffy arithmetic (allocation batching window).
    pub hz: Hz,
    /// Which kernel's request allocation (`get_request` / freeing) the pool follows.
    pub request_alloc: RequestAlloc,
    /// Whether the device is a rotating disk (`queue/rotational`; the kernel's
    /// `blk_queue_nonrot` is its negation). Only policies that ask read it (BFQ's idling
    /// and seek rules); drivers set it from the device, the default is a disk.
    pub rotational: bool,
}

/// The request allocation a queue follows (`request_alloc`).
///
/// The two differ in who gets a slot that frees up while tasks sleep for one, which
/// decides whether a task that is *running* (say, the reader the anticipatory scheduler
/// is waiting for) can queue its next request at once.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum RequestAlloc {
    /// 2.6.20 (`blk_get_request` in `block/ll_rw_blk.c`): every freed slot below
    /// `nr_requests` wakes the first sleeper, which becomes a *batcher* (may take
    /// `BLK_BATCH_REQ` = 32 slots past a full pool for `HZ/50`); the policy's
    /// `may_queue` can refuse or insist (`ELV_MQUEUE_MUST`, up to 1.5 × `nr_requests`).
    #[default]
    V2_6_20,
    /// 2.5 until May 2003 (`drivers/block/ll_rw_blk.c` of 2.5.61 to 2.5.69, before the
    /// dynamic request allocation): fixed free lists of `nr_requests` per direction; a slot
    /// goes to whoever asks while one is free and the policy's `may_queue` does not refuse
    /// (the hook the 2003 CFQ patch added; `MUST` has no meaning here), with no per-task
    /// batching; a freed slot wakes one sleeper only while at least `batch_requests` =
    /// min(`nr_requests`/8, 8) slots are free. Congested while fewer than `nr/8 − 1` slots
    /// are free, clear again at `nr/8 + 1` free.
    V2_5,
    /// 2.4.20 to 2.4.21 (`drivers/block/ll_rw_blk.c`): the same fixed free lists per
    /// direction (`blk_grow_request_list` alternates READ and WRITE, 64 each of its 128),
    /// no `may_queue`; `blkdev_release_request` wakes one exclusive sleeper
    /// (`__get_request_wait`) once `batch_requests` = min(2 × `nr_requests` / 4, 32) slots
    /// are free — 32 of 64 at the default. 2.4's queue has no congestion state (its writers
    /// are throttled by the VM, not by `blk_congestion_wait`), so none is reported.
    V2_4,
}

/// What unplugs a plugged queue (`unplug`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Unplug {
    /// 2.5.6x and 2.6 (`blk_plug_device`, `blk_unplug_timeout`, `__make_request`): the
    /// `unplug_thresh`-th queued request or the `unplug_delay` timer ends the plug, as
    /// does a task about to wait for I/O (`sync_page` → `unplug_fn`).
    #[default]
    Timer,
    /// 2.4 (`drivers/block/ll_rw_blk.c` of 2.4.20/2.4.21, `generic_plug_device`): a queue
    /// is plugged only when its list is empty (for an IDE queue, whose list holds the
    /// request being served, see [`Dequeue::Completion`]). A plug has no threshold and no
    /// timer: it lasts until somebody runs the `tq_disk` task queue — a task waiting on a
    /// buffer or page (`__wait_on_buffer`, `___wait_on_page` → `block_sync_page`), a task
    /// sleeping for a request (`__get_request_wait` → `generic_unplug_device`), or
    /// kupdated after its pass.
    TqDisk,
}

/// When the driver takes a request off the queue's list (`dequeue`), a property of the
/// device's driver. It decides whether a queue with a request in flight counts as empty:
/// `__make_request` plugs only an empty queue (`elv_queue_empty`, which looks at
/// `q->queue_head` first), and the unplug threshold counts the requests allocated less
/// `q->in_flight`, which `elv_dequeue_request` raises.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Dequeue {
    /// SCSI and libata (`scsi_request_fn` → `blkdev_dequeue_request`, 2.6.20): a request
    /// leaves the list when it is issued, so a queue whose only request is on the device
    /// is empty and may plug. A completion runs the queue (`scsi_run_queue` →
    /// `blk_run_queue`), which removes a plug.
    #[default]
    Issue,
    /// IDE (2.4's `q->head_active`; 2.5.64 and 2.6.20 `drivers/ide/ide-io.c`: the request
    /// taken with `elv_next_request` is dequeued by `__ide_end_request`): the request the
    /// drive is serving stays on the list until it completes, so a queue with one in
    /// flight never plugs, the completion interrupt starts the next (`ide_intr` →
    /// `ide_do_request`), and the request in flight counts toward `unplug_thresh`.
    Completion,
}

/// `dequeue` values, in [`Dequeue`] order.
const DEQUEUE_NAMES: &[&str] = &["issue", "completion"];

impl Dequeue {
    /// The `dequeue` setting's value for this rule.
    pub fn name(self) -> &'static str {
        DEQUEUE_NAMES[self as usize]
    }
}

/// `unplug` values, in [`Unplug`] order.
const UNPLUG_NAMES: &[&str] = &["timer", "tq_disk"];

impl Unplug {
    /// The `unplug` setting's value for this rule.
    pub fn name(self) -> &'static str {
        UNPLUG_NAMES[self as usize]
    }
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            nr_requests: 128,
            max_sectors: 256,
            depth: 1,
            plugging: true,
            unplug_thresh: 4,
            unplug_delay: Duration::from_millis(3),
            unplug: Unplug::Timer,
            dequeue: Dequeue::Issue,
            kick_unplug: true,
            hz: Hz::default(),
            request_alloc: RequestAlloc::V2_6_20,
            rotational: true,
        }
    }
}

/// `BLK_BATCH_REQ`: requests a batching task may allocate past a full pool.
pub(crate) const BATCH_REQUESTS: u32 = 32;

/// The queue tunables that describe the device and the kernel under the scheduler (what
/// a driver or host sets up), not the scheduler: a recording's values of these carry
/// over when its inputs are replayed under another scheduler.
pub const DRIVER_TUNABLES: &[&str] =
    &["queue_depth", "rotational", "max_sectors", "request_alloc", "unplug", "dequeue", "kick_unplug"];

/// The queue-level tunables, by sysfs name.
pub const QUEUE_TUNABLES: &[Spec] = &[
    Spec::count("nr_requests", 4, 1 << 20, "request slots per direction (reads and writes separately)"),
    Spec::kib(
        "max_sectors_kb",
        4,
        32767,
        "largest request the queue builds by merging (default: the device's; simulated disks set it from the profile)",
    ),
    Spec::count(
        "max_sectors",
        8,
        65535,
        "the same in 512-byte sectors, as a driver sets it (2.5 IDE: 255; default: the device's)",
    ),
    // Up to the deepest queue a device description may declare (a DiskSim `.parv`'s
    // 65,536), so a machine's own depth is always a valid setting.
    Spec::count(
        "queue_depth",
        1,
        65536,
        "requests the device holds at once (1 = IDE without TCQ; default: the device's, from the disk profile or the real target)",
    ),
    Spec::boolean("plugging", "plug an idle queue briefly so requests can gather and merge"),
    Spec::count("unplug_thresh", 1, 1 << 20, "queued requests that unplug a plugged queue"),
    Spec::millis("unplug_delay", 1, 1000, "time after which a plugged queue unplugs itself"),
    Spec::choice(
        "unplug",
        UNPLUG_NAMES,
        "what ends a plug: timer (2.5/2.6: unplug_thresh requests, unplug_delay, or a waiting task) or tq_disk (2.4: only a task that waits runs tq_disk)",
    ),
    Spec::choice(
        "dequeue",
        DEQUEUE_NAMES,
        "when the driver takes a request off the queue: issue (SCSI, libata: a queue with only requests in flight may plug; a completion runs the queue) or completion (IDE: the request being served stays queued, so the queue does not plug while one is in flight); default: the device's interface",
    ),
    Spec::boolean(
        "kick_unplug",
        "a policy's kick unplugs a plugged queue (2.6.20's blk_start_queueing; 0: 2.5.64, where the kick runs the request function and a plugged IDE queue waits)",
    ),
    Spec::values("hz", &[100, 250, 300, 1000], "kernel tick rate used for jiffy arithmetic"),
    Spec::choice(
        "request_alloc",
        REQUEST_ALLOC_NAMES,
        "request-slot allocation: 2.6.20 (per-task batching, may_queue), 2.5 (free lists, wake-ups batched) or 2.4 (free lists, a sleeper woken at 32 free, no congestion)",
    ),
    Spec::boolean(
        "rotational",
        "the device is a rotating disk (sysfs queue/rotational; the driver's value by default)",
    ),
];

impl RequestAlloc {
    /// The `request_alloc` setting's value for this mode (`2.6.20`, `2.5`).
    pub fn name(self) -> &'static str {
        REQUEST_ALLOC_NAMES[self as usize]
    }
}

/// `request_alloc` values, in [`RequestAlloc`] order.
const REQUEST_ALLOC_NAMES: &[&str] = &["2.6.20", "2.5", "2.4"];

impl QueueConfig {
    pub fn get(&self, name: &str) -> Option<i64> {
        Some(match name {
            "nr_requests" => self.nr_requests as i64,
            "max_sectors_kb" => self.max_sectors as i64 / 2,
            "max_sectors" => self.max_sectors as i64,
            "queue_depth" => self.depth as i64,
            "plugging" => self.plugging as i64,
            "unplug_thresh" => self.unplug_thresh as i64,
            "unplug_delay" => self.unplug_delay.as_millis() as i64,
            "unplug" => self.unplug as i64,
            "dequeue" => self.dequeue as i64,
            "kick_unplug" => self.kick_unplug as i64,
            "hz" => self.hz.get() as i64,
            "request_alloc" => self.request_alloc as i64,
            "rotational" => self.rotational as i64,
            _ => return None,
        })
    }

    /// Set a queue tunable from text; `Ok(false)` if `name` is not a queue tunable.
    pub fn set(&mut self, name: &str, text: &str) -> Result<bool, TunableError> {
        let Some(spec) = QUEUE_TUNABLES.iter().find(|s| s.name == name) else {
            return Ok(false);
        };
        let v = spec.parse(text)?;
        match name {
            "nr_requests" => self.nr_requests = v as u32,
            "max_sectors_kb" => self.max_sectors = v as u32 * 2,
            "max_sectors" => self.max_sectors = v as u32,
            "queue_depth" => self.depth = v as u32,
            "plugging" => self.plugging = v != 0,
            "unplug_thresh" => self.unplug_thresh = v as u32,
            "unplug_delay" => self.unplug_delay = Duration::from_millis(v as u64),
            "unplug" => self.unplug = if v == 0 { Unplug::Timer } else { Unplug::TqDisk },
            "dequeue" => self.dequeue = if v == 0 { Dequeue::Issue } else { Dequeue::Completion },
            "kick_unplug" => self.kick_unplug = v != 0,
            // (`Spec::values` admits only Hz::ALLOWED.)
            "hz" => self.hz = Hz::new(v as u32),
            "request_alloc" => {
                self.request_alloc = match v {
                    0 => RequestAlloc::V2_6_20,
                    1 => RequestAlloc::V2_5,
                    _ => RequestAlloc::V2_4,
                };
            }
            "rotational" => self.rotational = v != 0,
            _ => unreachable!(),
        }
        Ok(true)
    }

    /// `batch_requests`: free slots needed before a sleeper is woken — 2.5's
    /// min(nr/8, 8); 2.4's `q->nr_requests / 4` capped at 32, of a pool of both directions
    /// (2 × nr).
    pub(crate) fn batch_requests(&self) -> u32 {
        match self.request_alloc {
            RequestAlloc::V2_4 => (2 * self.nr_requests / 4).clamp(1, 32),
            _ => (self.nr_requests / 8).clamp(1, 8),
        }
    }

    /// Allocated requests at which a direction becomes congested: 2.6.20's `nr − nr/8 + 1`
    /// (capped at `nr`; 113 for 128); 2.5 counted free slots instead, congested while fewer
    /// than `nr/8 − 1` are free (1 when that is negative), i.e. from `nr − (nr/8 − 1) + 1`
    /// allocated (114 for 128).
    pub(crate) fn congestion_on(&self) -> u32 {
        let nr = self.nr_requests;
        match self.request_alloc {
            RequestAlloc::V2_6_20 => (nr - nr / 8 + 1).min(nr),
            RequestAlloc::V2_5 => {
                let on_free = match nr / 8 {
                    0 => 1,
                    k => k - 1,
                };
                nr - on_free + 1
            }
            // Never: 2.4 has no queue congestion.
            RequestAlloc::V2_4 => u32::MAX,
        }
    }

    /// Allocated requests below which a direction is reported uncongested: 2.6.20's `nr −
    /// nr/8 − nr/16 − 1` (at least 1; 103 for 128); 2.5's "at least `nr/8 + 1` (at most
    /// `nr`) free", i.e. below `nr − (nr/8 + 1) + 1` allocated (112 for 128).
    pub(crate) fn congestion_off(&self) -> u32 {
        let nr = self.nr_requests;
        match self.request_alloc {
            RequestAlloc::V2_6_20 => (nr as i64 - (nr / 8) as i64 - (nr / 16) as i64 - 1).max(1) as u32,
            RequestAlloc::V2_5 => nr - (nr / 8 + 1).min(nr) + 1,
            RequestAlloc::V2_4 => 0,
        }
    }
}
