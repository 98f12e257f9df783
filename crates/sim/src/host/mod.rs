//! The simulated host: tasks that make system calls, a CPU run queue, the page cache with
//! read-ahead and writeback, dirty throttling, and the filesystem layout — connected to a
//! device model through the core's [`Queue`] and driver loop ([`iosched_core::run`]).
//!
//! [`Sim`] implements [`Env`]: `wait` runs host and device events in virtual time until
//! the queue has an input (a bio, a completion, an unplug, a task exit) or its timer is due.
//!
//! Tasks block exactly where Linux blocks: on a page being read, on a request slot
//! (`get_request_wait`), on dirty throttling (`balance_dirty_pages` → `congestion_wait`),
//! on their own direct I/O, and in fsync until every page of the file is written.
//!
//! The host is one `impl Sim` split by kernel subsystem, one file each: `program` (the
//! API programs are written against), `sched` (CPU and task states), `syscalls` (a call
//! becoming its continuation, path lookup), `filemap` (buffered reads and writes),
//! `readahead`, `vmscan` (reclaim), `page_writeback` (dirty limits, throttling, pdflush),
//! `fsync`, `journal` (ext3's journal and kjournald), `direct_io`, `bio` (the block layer
//! and the [`Env`] for the driver loop) and
//! `stats` (vmstat samples, and what tasks wait for when a run stops early).
//! This file holds the state they share and the calls a workload makes to set up and
//! watch a run.

mod bio;
mod direct_io;
mod filemap;
mod fsync;
mod journal;
mod page_writeback;
mod program;
mod readahead;
mod sched;
mod stats;
mod syscalls;
mod vmscan;

pub use journal::{CommitRecord, JournalStats};
pub use program::{Outcome, ProgCtx, Program, SysCall, SysOp, TaskId};
use readahead::HostRa;

use crate::cache::{Lookup, MAPPED, META, PageCache, PageId, PassId};
use crate::engine::Engine;
use crate::fs::{BLOCK, FileId, Fs, SECTORS_PER_BLOCK};
use crate::profile::{CpuProfile, HostProfile, Readahead, Reclaim, Writeback as WbRule};
use crate::readahead::{Ra24, Ra25, RaAction, RaIo, RaOutcome, RaState};
use crate::rng::Rng;
use iosched_core::{
    Dir, Duration, Env, Event, FastMap, FastSet, Input, Instant, IoPrio, Op, Owner, Queue, ReqId, Request, Segments,
    Status, Wake,
};
use iosched_disk::{Device, DiskCommand};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// Why a task is not running.
#[derive(Clone, Debug, PartialEq)]
enum Block {
    /// On a page being read.
    Page(PageId),
    /// For a request slot for bio `id`.
    Slot(ReqId),
    /// Until its own direct / sync bios complete.
    Io,
    /// Until the file has no page dirty or under writeback.
    Fsync(u32),
    /// `blk_congestion_wait`: until a write request is freed below the congestion-off
    /// threshold, or `timeout`.
    Congestion {
        token: u64,
        timeout: Duration,
    },
    Sleep {
        token: u64,
    },
    Counter {
        counter: usize,
        at_least: u64,
    },
    Exit(TaskId),
    /// For a free page-cache page (everything dirty or in flight).
    Memory {
        token: u64,
    },
    Aio {
        min: u32,
    },
    /// `log_wait_commit`: until the journal has committed transaction `tid`.
    Commit {
        tid: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
enum State {
    /// Wants a CPU.
    Runnable,
    /// Owns a CPU and is executing its continuation.
    Running,
    /// Owns a CPU, burning `debt` until a CpuDone event.
    Burning,
    /// Waiting for the queue to admit the bio just submitted.
    Submitting,
    Blocked(Block),
    Exited,
}

/// Where a task is inside its current operation.
enum Cont {
    /// Ask the program for the next operation.
    Next,
    Read {
        file: FileId,
        /// Where the call started (its return value is the bytes from here).
        start: u64,
        pos: u64,
        end: u64,
        next_ra: u64,
        copied: u64,
        mmap: bool,
    },
    Write {
        file: FileId,
        pos: u64,
        end: u64,
        written: u64,
        mmap: bool,
    },
    /// After the operation: maybe throttle, then finish.
    Balance(Balance),
    Writeback(Writeback),
    Fsync {
        file: FileId,
        step: FsyncStep,
    },
    Meta {
        blocks: Vec<u64>,
        i: usize,
        then: Box<Cont>,
    },
    Finish {
        bytes: u64,
    },
    /// Finish an `AioWait`: reap the completed asynchronous I/Os.
    AioReap,
    Pdflush(PdState),
    /// kswapd's `balance_pgdat` at this scanning priority.
    Kswapd {
        priority: u32,
    },
    /// ext3's kjournald (`host/journal.rs`).
    Kjournald(journal::Kj),
}

/// The steps of `sys_fsync` on ext2 (2.5), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FsyncStep {
    /// `filemap_fdatawrite`.
    WriteData,
    /// `ext2_sync_file` → `sync_mapping_buffers`: write the inode's dirty indirect blocks…
    WriteIndirect,
    /// … and wait for them.
    WaitIndirect,
    /// `ext2_sync_inode` → `ext2_update_inode(do_sync)` → `sync_dirty_buffer`: wait for
    /// I/O on the inode's block in flight, then write it…
    WriteInode,
    /// … and wait for that write.
    WaitInode,
    /// ext3 (`ext3_sync_file`): a dirty inode forces a commit…
    ForceCommit,
    /// … and `log_wait_commit` waits for transaction `tid`.
    WaitCommit(u64),
    /// `filemap_fdatawait`.
    WaitData,
}

/// `balance_dirty_pages`.
struct Balance {
    pages_written: u64,
    phase: u8,
    then_bytes: u64,
}

/// An in-progress `writeback_inodes` pass driven by the task doing it.
struct Writeback {
    nr_to_write: i64,
    nonblocking: bool,
    older_than: Option<Instant>,
    only_file: Option<u32>,
    /// Snapshot of inodes to visit.
    inodes: VecDeque<u32>,
    /// The current inode's pages still to consider.
    pages: WbPages,
    file: Option<u32>,
    written: i64,
    encountered_congestion: bool,
    /// Given buffers (`ll_rw_block`), not a mapping's pages: the mapping's cyclic
    /// writeback position is left alone.
    buffers_only: bool,
    /// 2.4's walk of the dirty-buffer list (`write_some_buffers`): no I_LOCK (bdflush, a
    /// throttled writer and kupdated write one inode's buffers at once), and with
    /// `older_than` it ends at the first page dirtied after it (kupdated's
    /// `b_flushtime` test on the list's oldest buffer).
    lru24: bool,
    then: Box<Cont>,
}

/// The pages a writeback pass has yet to consider on its current inode.
enum WbPages {
    None,
    /// Given blocks (`ll_rw_block`), in order.
    List(VecDeque<u64>),
    /// The inode's pages dirty when the pass reached it, in cyclic order from its
    /// writeback index (as `mpage_writepages` takes them; see [`PageCache::begin_pass`]).
    Pass(PassId),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum PdKind {
    Background,
    Kupdate,
    /// 2.4's bdflush (`fs/buffer.c`), and kupdated.
    Bdflush24,
    Kupdate24,
}

struct PdState {
    kind: PdKind,
    phase: u8,
    budget: i64,
}

struct Task {
    name: String,
    owner: Owner,
    prio: IoPrio,
    /// The priority of the I/O being submitted, when it has its own
    /// ([`SysOp::AioSubmit`]'s `prio`); its bios carry it.
    cmd_prio: Option<IoPrio>,
    program: Option<Box<dyn Program>>,
    state: State,
    cont: Cont,
    cpu: Option<usize>,
    slice_used: Duration,
    debt: Duration,
    cpu_time: Duration,
    bio_out: VecDeque<Request>,
    block_after: Option<Block>,
    unplug_before_block: bool,
    ra: FastMap<u32, FileRa>,
    /// Unplug the queue once the queued bios are submitted (2.5 read-ahead's
    /// `blk_run_queues`).
    unplug_after_bios: bool,
    op_started: Instant,
    op_kind: &'static str,
    last_outcome: Option<Outcome>,
    child: Option<TaskId>,
    /// Direct / sync bios outstanding for the current op.
    io_outstanding: u32,
    io_error: Option<Status>,
    /// Completed asynchronous I/Os not yet reaped, and those in flight (per iocb).
    aio_done: u32,
    aio_inflight: u32,
    /// Per in-flight iocb: bios still outstanding, and the task's number for the
    /// submission (its `AioSubmit`s count from 0).
    aio_bios: FastMap<u64, (u32, u64)>,
    /// The next submission's number, and the numbers of the completed, not yet reaped
    /// ones in the order they completed (the events `io_getevents` returns).
    aio_next: u64,
    aio_completed: Vec<u64>,
    exit_waiters: Vec<TaskId>,
    pdflush: bool,
    /// Result of the last writeback pass this task drove: (pages written, congested).
    wb: (i64, bool),
    /// Direct reclaim in progress: (next priority, pages freed so far).
    direct_reclaim: Option<(u32, u64)>,
    /// The last allocation failed after a direct-reclaim pass: nap this long in
    /// `blk_congestion_wait` before retrying.
    reclaim_wait: Option<Duration>,
    /// Part of `debt` that is user time (Think).
    user_debt: Duration,
    /// O(1) scheduler sleep credit: grows while blocked, drains while on a CPU.
    sleep_avg: Duration,
    /// Dynamic priority, recomputed from `sleep_avg` when the task wakes or its slice
    /// ends (as `recalc_task_prio`/`effective_prio` do), not while it runs.
    dprio: i32,
    blocked_since: Instant,
    /// When the current burn started, and its token (a preempted burn's CpuDone is stale).
    burn_started: Instant,
    burn_token: u64,
    /// Bytes read and written by the requests it submitted, when they completed.
    io: (u64, u64),
}

/// Per open file read-ahead state.
#[derive(Clone, Debug)]
enum FileRa {
    V24(Ra24),
    V25(Ra25),
    V26(RaState),
}

/// What a submitted unit of I/O is for.
#[derive(Clone, Debug)]
enum BioKind {
    /// Filling cache pages.
    CacheRead(Vec<PageId>),
    /// Writing cache pages back.
    CacheWrite(Vec<PageId>),
    /// Direct I/O of a task (sync or async; `iocb` names an asynchronous one).
    Direct { task: TaskId, aio: bool, iocb: u64 },
}

#[derive(Clone, Debug)]
struct Bio {
    kind: BioKind,
    /// Device time accounting for vmstat.
    bytes: u64,
    write: bool,
    /// Who submitted it (the per-task I/O counts).
    owner: Owner,
}

#[derive(Debug)]
enum Ev {
    CpuDone {
        task: TaskId,
        cpu: usize,
        token: u64,
    },
    Timer {
        task: TaskId,
        token: u64,
    },
    Kupdate,
    Sample,
    Stop,
    /// `max_sim_time` reached.
    Limit,
}

/// Per-second samples like vmstat's.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct VmstatLine {
    pub second: u64,
    /// Runnable tasks.
    pub r: u32,
    /// Tasks blocked on I/O.
    pub b: u32,
    pub free_kb: u64,
    pub cache_kb: u64,
    pub dirty_kb: u64,
    /// KiB read / written per second (completed).
    pub bi: u64,
    pub bo: u64,
    pub us: u32,
    pub sy: u32,
    pub id: u32,
    pub wa: u32,
}

/// One request as it went to the device: what a seek picture (blktrace's seekwatcher)
/// draws.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dispatched {
    /// Time since the start of the run, ns.
    pub at_ns: u64,
    pub sector: u64,
    pub sectors: u32,
    pub write: bool,
}

#[derive(Clone, Debug)]
struct DispatchSample {
    from: Instant,
    to: Instant,
    max: usize,
    points: Vec<Dispatched>,
}

/// Totals of a run.
#[derive(Clone, Debug, Default)]
pub struct SimStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub requests_completed: u64,
    pub vmstat: Vec<VmstatLine>,
    /// Device busy time (some request in flight).
    pub device_busy: Duration,
    /// Pages kswapd freed, and pages tasks freed in direct reclaim (`Reclaim::Kswapd25`).
    pub kswapd_freed: u64,
    pub direct_freed: u64,
    /// Pages reclaim wrote back (`writepage` from `shrink_list`), by kswapd and by tasks.
    pub kswapd_paged_out: u64,
    pub direct_paged_out: u64,
    /// Direct-reclaim passes that freed too little and woke pdflush (`wakeup_bdflush`).
    pub bdflush_wakeups: u64,
}

/// Settings of a simulation run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub host: HostProfile,
    pub cpu: CpuProfile,
    pub seed: u64,
    /// Collect vmstat lines each second.
    pub vmstat: bool,
    /// Stop at this simulated time at the latest (a workload's own bound, such as
    /// read-many's timeout: the run counts as complete).
    pub time_limit: Option<Instant>,
    /// The bound a user sets on any run (`--max-sim-time`): a run that reaches it ends
    /// [`Ended::SimTimeLimit`], and its report is not complete.
    pub max_sim_time: Option<Instant>,
    /// Set from outside (the CLI's SIGINT/SIGTERM handler) to end the run at the next
    /// event: [`Ended::Interrupted`]. Read, never written, by the simulator.
    pub interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Where the run publishes its simulated time (nanoseconds) for a progress display;
    /// written, never read, by the simulator, so it cannot change a result.
    pub clock: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Keep a blkparse-like trace of queue events.
    pub trace: bool,
    /// Largest bio the block layer builds (`bio_add_page` stops at the queue's
    /// `max_sectors`).
    pub max_bio_sectors: u32,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.now).field("tasks", &self.tasks.len()).finish_non_exhaustive()
    }
}

/// The simulated host and device, as an [`Env`] for the core's driver loop.
pub struct Sim {
    pub now: Instant,
    engine: Engine<Ev>,
    pub fs: Fs,
    /// The pid of the task that set the machine up (builds file sets before the run);
    /// tasks get the next pids in spawn order. ext2 places a file's first block by the
    /// writer's pid (`Fs::colour_goal`), so this is where a rerun's file placement varies.
    pid_base: u32,
    pub cache: PageCache,
    cfg: SimConfig,
    device: Box<dyn Device>,
    device_next: Option<Instant>,
    device_inflight: u32,
    device_busy_since: Option<Instant>,
    tasks: Vec<Task>,
    cpus: Vec<Option<TaskId>>,
    /// Tasks wanting a CPU, by (dynamic priority, order): lowest first.
    runq: BTreeMap<(i32, i64), TaskId>,
    runq_seq: i64,
    pending: VecDeque<Input>,
    ready: VecDeque<TaskId>,
    bios: FastMap<ReqId, Bio>,
    next_bio: u64,
    awaiting: Option<(TaskId, ReqId)>,
    /// The bio being submitted, kept for its trace line if it merges.
    traced_bio: Option<Request>,
    /// Dispatched requests, for their completion's trace line.
    traced_inflight: FastMap<ReqId, Request>,
    read_congested: bool,
    write_congested: bool,
    page_waiters: FastMap<PageId, Vec<TaskId>>,
    fsync_waiters: FastMap<u32, Vec<TaskId>>,
    congestion_waiters: Vec<TaskId>,
    memory_waiters: Vec<TaskId>,
    counters: Vec<u64>,
    counter_waiters: Vec<TaskId>,
    next_token: u64,
    /// Per-CPU count of pages dirtied since the last throttle check (`ratelimits`).
    ratelimit_count: u64,
    dirty_exceeded: bool,
    pdflush: Vec<TaskId>,
    /// The kswapd thread (with [`Reclaim::Kswapd25`]).
    kswapd: Option<TaskId>,
    /// A pdflush is writing this device (`BDI_pdflush`).
    bdi_writeback: bool,
    background_running: bool,
    /// Tasks whose exit ends the run (when all have exited).
    watched: Vec<TaskId>,
    pub stats: SimStats,
    sample: VmstatLine,
    cpu_busy_sample: Duration,
    cpu_sys_sample: Duration,
    stopped: bool,
    /// Why the run ended before its programs did, if it did.
    ended: Option<Ended>,
    /// Turns of the event loop, to look outside now and then (`look_outside`).
    turns: u32,
    pub trace: Option<Vec<String>>,
    /// The requests dispatched to the device in a window, when
    /// [`Sim::sample_dispatches`] asked for them.
    dispatch_sample: Option<DispatchSample>,
    /// The programs' file operations, when [`Sim::log_syscalls`] asked for them.
    syscalls: Option<Vec<SysCall>>,
    /// Inodes a `writeback_inodes` pass is writing (I_LOCK).
    inodes_under_writeback: FastSet<u32>,
    /// Files whose inode is dirty (`I_DIRTY_SYNC`): changed since it was last copied into
    /// its inode-table block. A `write()` dirties it by the host's `mtime_granularity`
    /// (every write on 2.4 and 2.5, once a second on 2.6) and when it extends the file.
    inode_dirty: FastSet<u32>,
    /// ext3's journal and kjournald (`None` on ext2).
    journal: Option<journal::Journal>,
    /// Each file's access time, in whole seconds, once a read set it (`touch_atime`).
    atime: FastMap<u32, u64>,
    /// Each file's mtime in steps of the host's `mtime_granularity`, once a write set it.
    mtime: FastMap<u32, u64>,
}

const MAX_WRITEBACK_PAGES: i64 = 1024;
/// `SWAP_CLUSTER_MAX`: pages direct reclaim asks for.
const SWAP_CLUSTER_MAX: u64 = 32;
/// `DEF_PRIORITY`: reclaim scans `inactive >> priority` pages, from 12 down to 0.
const DEF_PRIORITY: u32 = 12;
/// `HZ/10`, the usual `blk_congestion_wait`.
const HZ_10: Duration = Duration::from_millis(100);
/// The seed's stream for the machine's pids (distinct from the workloads' streams, which
/// number phases and threads from 0).
const PID_STREAM: u64 = 0x5049_4400;
impl Sim {
    pub fn new(cfg: SimConfig, device: Box<dyn Device>) -> Self {
        let mut fs = Fs::for_device(device.capacity_sectors());
        // A pid as a booted machine hands out (past the boot-time daemons' 300), drawn
        // from the seed: a real rerun's pids differ, and with them where ext2 puts files.
        let pid_base = 300 + Rng::derive(cfg.seed, PID_STREAM).below(30_000) as u32;
        fs.set_setup_pid(pid_base);
        fs.set_colour(cfg.host.ext2_colour);
        let mut cache = match cfg.host.lru {
            crate::profile::Lru::Single => PageCache::new(cfg.host.cache_pages()),
            crate::profile::Lru::ActiveInactive25 => PageCache::with_active_list(cfg.host.cache_pages()),
        };
        let mapped = cfg.host.mapped_bytes / 4096;
        let keep_free = match cfg.host.reclaim {
            Reclaim::Kswapd25 { pages_high, .. } => pages_high,
            Reclaim::OnDemand => 0,
        };
        assert!(
            mapped + keep_free < cache.capacity(),
            "{} MiB of mapped pages leave no room in a {} MiB page cache",
            cfg.host.mapped_bytes >> 20,
            (cache.capacity() * 4096) >> 20
        );
        cache.add_mapped(MAPPED, mapped);
        let ncpu = cfg.cpu.cpus as usize;
        let trace = cfg.trace.then(Vec::new);
        let mut s = Sim {
            now: Instant::ZERO,
            engine: Engine::default(),
            fs,
            pid_base,
            cache,
            device,
            device_next: None,
            device_inflight: 0,
            device_busy_since: None,
            tasks: Vec::new(),
            cpus: vec![None; ncpu],
            runq: BTreeMap::new(),
            runq_seq: 0,
            pending: VecDeque::new(),
            ready: VecDeque::new(),
            bios: FastMap::default(),
            next_bio: 1,
            awaiting: None,
            traced_bio: None,
            traced_inflight: FastMap::default(),
            read_congested: false,
            write_congested: false,
            page_waiters: FastMap::default(),
            fsync_waiters: FastMap::default(),
            congestion_waiters: Vec::new(),
            memory_waiters: Vec::new(),
            counters: Vec::new(),
            counter_waiters: Vec::new(),
            next_token: 1,
            ratelimit_count: 0,
            dirty_exceeded: false,
            pdflush: Vec::new(),
            kswapd: None,
            bdi_writeback: false,
            background_running: false,
            watched: Vec::new(),
            stats: SimStats::default(),
            sample: VmstatLine::default(),
            cpu_busy_sample: Duration::ZERO,
            cpu_sys_sample: Duration::ZERO,
            stopped: false,
            ended: None,
            turns: 0,
            trace,
            dispatch_sample: None,
            syscalls: None,
            inodes_under_writeback: FastSet::default(),
            inode_dirty: FastSet::default(),
            journal: None,
            atime: FastMap::default(),
            mtime: FastMap::default(),
            cfg,
        };
        for i in 0..s.cfg.host.pdflush_threads {
            let name = match (s.cfg.host.writeback, i) {
                (WbRule::Bdflush24 { .. }, 0) => "bdflush".to_string(),
                (WbRule::Bdflush24 { .. }, _) => "kupdated".to_string(),
                _ => format!("pdflush/{i}"),
            };
            let t = s.add_task(name, None, IoPrio::NONE, true);
            s.tasks[t.0 as usize].state = State::Blocked(Block::Sleep { token: 0 });
            s.pdflush.push(t);
        }
        if let Reclaim::Kswapd25 { .. } = s.cfg.host.reclaim {
            assert_eq!(s.cfg.host.lru, crate::profile::Lru::ActiveInactive25, "kswapd reclaim needs the 2.5 lists");
            let t = s.add_task("kswapd0".into(), None, IoPrio::NONE, false);
            s.tasks[t.0 as usize].state = State::Blocked(Block::Sleep { token: 0 });
            s.kswapd = Some(t);
        }
        if let crate::profile::FsKind::Ext3(e) = s.cfg.host.fs {
            s.mount_ext3(e);
        }
        let wi = s.cfg.host.writeback_interval;
        s.engine.schedule(Instant::ZERO + wi, Ev::Kupdate);
        if s.cfg.vmstat {
            s.engine.schedule(Instant::from_secs(1), Ev::Sample);
        }
        if let Some(t) = s.cfg.time_limit {
            s.engine.schedule(t, Ev::Stop);
        }
        if let Some(t) = s.cfg.max_sim_time {
            s.engine.schedule(t, Ev::Limit);
        }
        s
    }

    /// Pages the cache may hold.
    pub fn cache_pages(&self) -> u64 {
        self.cache.capacity()
    }

    fn add_task(&mut self, name: String, program: Option<Box<dyn Program>>, prio: IoPrio, pdflush: bool) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        self.tasks.push(Task {
            name,
            owner: Owner(id.0 as u64 + 1),
            prio,
            cmd_prio: None,
            program,
            state: State::Runnable,
            cont: Cont::Next,
            cpu: None,
            slice_used: Duration::ZERO,
            debt: Duration::ZERO,
            cpu_time: Duration::ZERO,
            bio_out: VecDeque::new(),
            block_after: None,
            unplug_before_block: false,
            ra: FastMap::default(),
            unplug_after_bios: false,
            op_started: Instant::ZERO,
            op_kind: "",
            last_outcome: None,
            child: None,
            io_outstanding: 0,
            io_error: None,
            aio_done: 0,
            aio_inflight: 0,
            aio_bios: FastMap::default(),
            aio_next: 0,
            aio_completed: Vec::new(),
            exit_waiters: Vec::new(),
            pdflush,
            wb: (0, false),
            direct_reclaim: None,
            reclaim_wait: None,
            user_debt: Duration::ZERO,
            sleep_avg: Duration::ZERO,
            dprio: 5,
            blocked_since: Instant::ZERO,
            burn_started: Instant::ZERO,
            burn_token: 0,
            io: (0, 0),
        });
        id
    }

    /// Start a task running `program`. Its owner identity is unique to it.
    pub fn spawn(&mut self, name: impl Into<String>, program: Box<dyn Program>, prio: IoPrio) -> TaskId {
        let id = self.add_task(name.into(), Some(program), prio, false);
        self.make_runnable(id);
        id
    }

    /// The run ends when all watched tasks have exited.
    pub fn watch(&mut self, t: TaskId) {
        self.watched.push(t);
    }

    /// Keep every file operation the programs make from now on ([`Sim::take_syscalls`]).
    pub fn log_syscalls(&mut self) {
        self.syscalls.get_or_insert_with(Vec::new);
    }

    /// The file operations kept since [`Sim::log_syscalls`], in the order they were made.
    pub fn take_syscalls(&mut self) -> Vec<SysCall> {
        self.syscalls.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn task_name(&self, t: TaskId) -> &str {
        &self.tasks[t.0 as usize].name
    }
    pub fn task_cpu_time(&self, t: TaskId) -> Duration {
        self.tasks[t.0 as usize].cpu_time
    }
    pub fn task_owner(&self, t: TaskId) -> Owner {
        self.tasks[t.0 as usize].owner
    }
    /// Bytes read and written by the requests task `t` submitted (completed ones).
    pub fn task_io(&self, t: TaskId) -> (u64, u64) {
        self.tasks[t.0 as usize].io
    }
    /// Every task that did I/O, with its owner id and bytes read and written, in spawn
    /// order: the programs and the kernel's threads (pdflush, kswapd, kjournald).
    pub fn io_by_task(&self) -> Vec<(String, Owner, u64, u64)> {
        self.tasks.iter().filter(|t| t.io != (0, 0)).map(|t| (t.name.clone(), t.owner, t.io.0, t.io.1)).collect()
    }
    pub fn task_exited(&self, t: TaskId) -> bool {
        self.tasks[t.0 as usize].state == State::Exited
    }
    pub fn stopped_by_limit(&self) -> bool {
        self.stopped
    }

    /// Publish the clock (`SimConfig::clock`); whether the interrupt flag is set.
    fn look_outside(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(c) = &self.cfg.clock {
            c.store(self.now.as_nanos(), Relaxed);
        }
        self.cfg.interrupt.as_ref().is_some_and(|f| f.load(Relaxed))
    }

    /// The simulated time now.
    pub fn sim_time(&self) -> Instant {
        self.now
    }

    /// Why the run ended before its programs finished: interrupted, or at
    /// `--max-sim-time`. `None` for a run that finished (or met its own `time_limit`).
    pub fn ended_early(&self) -> Option<Ended> {
        if self.cfg.interrupt.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)) {
            return Some(Ended::Interrupted);
        }
        self.ended
    }

    /// Task `t`'s pid: the machine's setup task's plus its spawn order.
    pub fn pid(&self, t: TaskId) -> u32 {
        self.pid_base + 1 + t.0
    }

    /// The pid of the task that set the machine up (it builds file sets before a run).
    pub fn setup_pid(&self) -> u32 {
        self.pid_base
    }
}

impl Task {
    fn set_wb_result(&mut self, written: i64, congested: bool) {
        self.wb = (written, congested);
    }
    fn wb_result(&self) -> (i64, bool) {
        self.wb
    }
    fn last_wb_written(&self) -> i64 {
        self.wb.0
    }
}

/// Why a run ended before its programs finished.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The interrupt flag was set (SIGINT or SIGTERM in the CLI).
    Interrupted,
    /// Simulated time reached `SimConfig::max_sim_time`.
    SimTimeLimit,
}

/// Run `sim` with `queue` until all watched tasks exit (or the time limit).
pub fn run(sim: &mut Sim, queue: &mut Queue) {
    iosched_core::run(queue, sim);
}

/// A shared, cloneable cell for programs that report into one place.
pub type Shared<T> = Rc<RefCell<T>>;
