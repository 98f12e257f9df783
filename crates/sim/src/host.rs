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

use crate::cache::{Lookup, MAPPED, META, PageCache, PageId, PassId};
use crate::engine::Engine;
use crate::fs::{BLOCK, DirId, FileId, Fs, SECTORS_PER_BLOCK};
use crate::profile::{CpuProfile, HostProfile, Readahead, Reclaim};
use crate::readahead::{Ra25, RaAction, RaIo, RaOutcome, RaState};
use crate::rng::Rng;
use iosched_core::{
    Dir, Duration, Env, Event, FastMap, FastSet, Input, Instant, IoPrio, Op, Owner, Queue, ReqId, Request, Segments,
    Status, Wake,
};
use iosched_disk::{Device, DiskCommand};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

/// A task (process or thread).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct TaskId(pub u32);

/// A system call (or user-space action) a task performs.
pub enum SysOp {
    /// Buffered read (`read`/`pread`).
    Read {
        file: FileId,
        offset: u64,
        len: u64,
    },
    /// Buffered write (`write`/`pwrite`); allocates blocks on first write.
    Write {
        file: FileId,
        offset: u64,
        len: u64,
    },
    /// `O_DIRECT` read / write: straight to the device, sync.
    DirectRead {
        file: FileId,
        offset: u64,
        len: u64,
    },
    DirectWrite {
        file: FileId,
        offset: u64,
        len: u64,
    },
    /// Submit direct I/O asynchronously (`io_submit` with `O_DIRECT`); completions are
    /// collected with `AioWait`.
    AioSubmit {
        file: FileId,
        offset: u64,
        len: u64,
        write: bool,
    },
    /// Wait until at least `min` submitted asynchronous I/Os completed, or none is in
    /// flight; reaps every completed one (`io_getevents`): `Outcome::bytes` is their count.
    /// An I/O counts once, whatever number of bios it became.
    AioWait {
        min: u32,
    },
    /// `fsync`: write the file's dirty pages and wait for all its writeback.
    Fsync {
        file: FileId,
    },
    /// `open`: path lookup of the file's directory blocks and inode (reads them if cold);
    /// starts a fresh read-ahead state.
    Open {
        file: FileId,
    },
    /// `open(O_TRUNC)`: like open, then free the file's blocks and cached pages.
    Truncate {
        file: FileId,
    },
    /// `close`: releases the file's preallocated blocks.
    Close {
        file: FileId,
    },
    /// `stat`/`lstat`: read the file's inode (its inode-table block, if not cached).
    Stat {
        file: FileId,
    },
    /// `getdents`: read a directory's blocks (and its inode).
    ReadDir {
        dir: DirId,
    },
    /// Touch mapped pages for reading (page faults with mmap read-around).
    MmapRead {
        file: FileId,
        offset: u64,
        len: u64,
    },
    /// Store into mapped pages (fault them in, dirty them).
    MmapWrite {
        file: FileId,
        offset: u64,
        len: u64,
    },
    /// User-space computation.
    Think(Duration),
    /// Sleep without using the CPU.
    Sleep(Duration),
    /// Wait until shared counter `counter` reaches `at_least`.
    WaitCounter {
        counter: usize,
        at_least: u64,
    },
    /// Start a child task; `Outcome::child` names it.
    Spawn {
        program: Box<dyn Program>,
        name: String,
        prio: IoPrio,
    },
    /// Wait for a task to exit.
    WaitExit(TaskId),
    /// `echo 1 > /proc/sys/vm/drop_caches`: drop clean, unused page-cache pages.
    DropCaches,
    Exit,
}

impl std::fmt::Debug for SysOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind())
    }
}

/// One file operation a program made, as [`Sim::log_syscalls`] keeps them: what strace
/// would show of its reads and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysCall {
    /// When the program made the call.
    pub at: Instant,
    /// The task's name (`tiotest/3`).
    pub task: String,
    /// [`SysOp::kind`]: `read`, `write`, `direct-read`, …
    pub kind: &'static str,
    pub file: FileId,
    pub offset: u64,
    pub len: u64,
}

impl SysOp {
    /// The file, offset and length of an operation that moves data, `None` for the others.
    pub fn file_range(&self) -> Option<(FileId, u64, u64)> {
        match *self {
            SysOp::Read { file, offset, len }
            | SysOp::Write { file, offset, len }
            | SysOp::DirectRead { file, offset, len }
            | SysOp::DirectWrite { file, offset, len }
            | SysOp::AioSubmit { file, offset, len, .. }
            | SysOp::MmapRead { file, offset, len }
            | SysOp::MmapWrite { file, offset, len } => Some((file, offset, len)),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            SysOp::Read { .. } => "read",
            SysOp::Write { .. } => "write",
            SysOp::DirectRead { .. } => "direct-read",
            SysOp::DirectWrite { .. } => "direct-write",
            SysOp::AioSubmit { .. } => "aio-submit",
            SysOp::AioWait { .. } => "aio-wait",
            SysOp::Fsync { .. } => "fsync",
            SysOp::Open { .. } => "open",
            SysOp::Truncate { .. } => "truncate",
            SysOp::Close { .. } => "close",
            SysOp::Stat { .. } => "stat",
            SysOp::ReadDir { .. } => "readdir",
            SysOp::MmapRead { .. } => "mmap-read",
            SysOp::MmapWrite { .. } => "mmap-write",
            SysOp::Think(_) => "think",
            SysOp::Sleep(_) => "sleep",
            SysOp::WaitCounter { .. } => "wait-counter",
            SysOp::Spawn { .. } => "spawn",
            SysOp::WaitExit(_) => "wait-exit",
            SysOp::DropCaches => "drop-caches",
            SysOp::Exit => "exit",
        }
    }
}

/// How an operation went.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub kind: &'static str,
    pub started: Instant,
    pub finished: Instant,
    /// Bytes read or written (for `AioWait`: completed I/Os count).
    pub bytes: u64,
    pub child: Option<TaskId>,
    /// An I/O error or short transfer, if any.
    pub error: Option<Status>,
}

impl Outcome {
    pub fn latency(&self) -> Duration {
        self.finished - self.started
    }
}

/// What a program can see and do when choosing its next operation.
impl std::fmt::Debug for ProgCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgCtx").field("now", &self.now).field("task", &self.task).finish_non_exhaustive()
    }
}

pub struct ProgCtx<'a> {
    pub now: Instant,
    pub task: TaskId,
    /// CPU time this task has used (user + system).
    pub cpu_time: Duration,
    /// Bytes the device has read and written so far (completed requests).
    pub device_read: u64,
    pub device_written: u64,
    pub fs: &'a mut Fs,
    counters: &'a mut Vec<u64>,
    counter_bumped: &'a mut bool,
}

impl ProgCtx<'_> {
    /// Raise shared counter `c` to `value` (wakes `WaitCounter` waiters).
    pub fn signal(&mut self, c: usize, value: u64) {
        if self.counters.len() <= c {
            self.counters.resize(c + 1, 0);
        }
        if value > self.counters[c] {
            self.counters[c] = value;
            *self.counter_bumped = true;
        }
    }
    pub fn counter(&self, c: usize) -> u64 {
        self.counters.get(c).copied().unwrap_or(0)
    }
}

/// A task's program: a generator of operations.
pub trait Program {
    /// The next operation; `done` is the outcome of the previous one (None at start).
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp;
}

impl<F: FnMut(&mut ProgCtx, Option<&Outcome>) -> SysOp> Program for F {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        self(ctx, done)
    }
}

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
    /// Bios still outstanding per in-flight iocb.
    aio_bios: FastMap<u64, u32>,
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
}

/// Per open file read-ahead state.
#[derive(Clone, Debug)]
enum FileRa {
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

/// The simulated host and device, as an [`Env`] for the core's driver loop.
impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.now).field("tasks", &self.tasks.len()).finish_non_exhaustive()
    }
}

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
    /// The programs' file operations, when [`Sim::log_syscalls`] asked for them.
    syscalls: Option<Vec<SysCall>>,
    /// Tracing of which requests are in flight, for the blkparse-like trace.
    owners_by_bio: FastMap<ReqId, (Owner, u32)>,
    /// Inodes a `writeback_inodes` pass is writing (I_LOCK).
    inodes_under_writeback: FastSet<u32>,
    /// Files whose inode is dirty (`I_DIRTY_SYNC`): changed since it was last copied into
    /// its inode-table block. Every `write()` dirties it (mtime has jiffy resolution in 2.5).
    inode_dirty: FastSet<u32>,
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
            syscalls: None,
            owners_by_bio: FastMap::default(),
            inodes_under_writeback: FastSet::default(),
            inode_dirty: FastSet::default(),
            cfg,
        };
        for i in 0..s.cfg.host.pdflush_threads {
            let t = s.add_task(format!("pdflush/{i}"), None, IoPrio::NONE, true);
            s.tasks[t.0 as usize].state = State::Blocked(Block::Sleep { token: 0 });
            s.pdflush.push(t);
        }
        if let Reclaim::Kswapd25 { .. } = s.cfg.host.reclaim {
            assert_eq!(s.cfg.host.lru, crate::profile::Lru::ActiveInactive25, "kswapd reclaim needs the 2.5 lists");
            let t = s.add_task("kswapd0".into(), None, IoPrio::NONE, false);
            s.tasks[t.0 as usize].state = State::Blocked(Block::Sleep { token: 0 });
            s.kswapd = Some(t);
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

    /// What the programs that have not finished are waiting for, counted by kind
    /// ("3 tasks: 2 for a request slot, 1 in fsync"): the message of a run that
    /// `--max-sim-time` stopped.
    pub fn waiting(&self) -> String {
        let mut kinds: Vec<(&'static str, usize)> = Vec::new();
        let mut n = 0;
        for (i, task) in self.tasks.iter().enumerate() {
            // The programs, not the kernel's daemons (always there, mostly asleep).
            let t = TaskId(i as u32);
            if self.pdflush.contains(&t) || self.kswapd == Some(t) {
                continue;
            }
            let what = match &task.state {
                State::Exited => continue,
                State::Runnable | State::Running | State::Burning => "running or runnable",
                State::Submitting => "submitting a request",
                State::Blocked(b) => match b {
                    Block::Page(_) => "on a page being read",
                    Block::Slot(_) => "for a request slot",
                    Block::Io => "for their own I/O to complete",
                    Block::Fsync(_) => "in fsync",
                    Block::Congestion { .. } => "in blk_congestion_wait",
                    Block::Sleep { .. } => "sleeping",
                    Block::Counter { .. } => "for other tasks (a barrier)",
                    Block::Exit(_) => "for a child to exit",
                    Block::Memory { .. } => "for free memory",
                    #[allow(unreachable_patterns)]
                    _ => "blocked",
                },
            };
            n += 1;
            match kinds.iter_mut().find(|(k, _)| *k == what) {
                Some(e) => e.1 += 1,
                None => kinds.push((what, 1)),
            }
        }
        let parts: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
        format!(
            "{n} task{} not done: {}; {} request{} on the device",
            if n == 1 { "" } else { "s" },
            parts.join(", "),
            self.device_inflight,
            if self.device_inflight == 1 { "" } else { "s" },
        )
    }

    // ---------------------------------------------------------------------------------
    // CPU

    // The CPU scheduler follows the 2.5/2.6 O(1) scheduler in the parts that shape I/O:
    // a task's dynamic priority is its static one (all nice 0 here) minus an
    // interactivity bonus from its sleep credit (`sleep_avg`: +time blocked, −time on a
    // CPU, capped at `max_sleep_avg`), from −5 (slept a lot) to +5 (CPU hog); a woken task
    // with a better priority than a running one preempts it at once (`try_to_wake_up` →
    // `resched_task`); equal priorities share the CPU round robin in `timeslice` slices.
    // Not modelled: the expired array and starvation limit, SMP balancing beyond "any
    // free CPU", nice levels.

    /// Dynamic priority (lower runs first): `effective_prio`'s bonus from sleep credit.
    fn effective_prio(&self, t: TaskId) -> i32 {
        let max = self.cfg.cpu.max_sleep_avg.as_nanos().max(1);
        let avg = self.tasks[t.0 as usize].sleep_avg.as_nanos().min(max);
        5 - (avg * 10 / max) as i32
    }

    fn dyn_prio(&self, t: TaskId) -> i32 {
        self.tasks[t.0 as usize].dprio
    }

    fn enqueue(&mut self, t: TaskId, front: bool) {
        let p = self.dyn_prio(t);
        self.runq_seq += 1;
        let seq = if front { -self.runq_seq } else { self.runq_seq };
        self.runq.insert((p, seq), t);
    }

    fn best_waiting_prio(&self) -> Option<i32> {
        self.runq.keys().next().map(|&(p, _)| p)
    }

    fn give_cpu(&mut self, c: usize, t: TaskId) {
        self.cpus[c] = Some(t);
        let task = &mut self.tasks[t.0 as usize];
        task.cpu = Some(c);
        task.slice_used = Duration::ZERO;
        task.state = State::Running;
        self.ready.push_back(t);
    }

    fn make_runnable(&mut self, t: TaskId) {
        let now = self.now;
        let max = self.cfg.cpu.max_sleep_avg;
        let task = &mut self.tasks[t.0 as usize];
        if task.state == State::Exited {
            return;
        }
        if matches!(task.state, State::Blocked(_)) {
            task.sleep_avg = (task.sleep_avg + (now - task.blocked_since)).min(max);
        }
        task.state = State::Runnable;
        self.tasks[t.0 as usize].dprio = self.effective_prio(t);
        if let Some(c) = self.cpus.iter().position(|c| c.is_none()) {
            self.give_cpu(c, t);
            return;
        }
        // Preempt the worst-priority task burning CPU if the woken one is better.
        let p = self.dyn_prio(t);
        let victim = self
            .cpus
            .iter()
            .flatten()
            .copied()
            .filter(|&v| self.tasks[v.0 as usize].state == State::Burning)
            .map(|v| (self.dyn_prio(v), v))
            .max_by_key(|&(vp, v)| (vp, std::cmp::Reverse(v.0)));
        if let Some((vp, v)) = victim
            && p < vp
        {
            let c = self.tasks[v.0 as usize].cpu.unwrap();
            self.stop_burn(v);
            let vt = &mut self.tasks[v.0 as usize];
            vt.cpu = None;
            vt.state = State::Runnable;
            self.enqueue(v, true);
            self.give_cpu(c, t);
            return;
        }
        self.enqueue(t, false);
    }

    /// Account the part of a burn done so far and cancel its completion event.
    fn stop_burn(&mut self, t: TaskId) {
        let now = self.now;
        let tk = &mut self.tasks[t.0 as usize];
        let done = (now - tk.burn_started).min(tk.debt);
        tk.burn_token += 1;
        tk.debt -= done;
        let user = tk.user_debt.min(done);
        tk.user_debt -= user;
        tk.sleep_avg = tk.sleep_avg.saturating_sub(done);
        tk.cpu_time += done;
        tk.slice_used += done;
        self.cpu_busy_sample += done;
        self.cpu_sys_sample += done - user;
    }

    fn release_cpu(&mut self, t: TaskId) {
        let Some(c) = self.tasks[t.0 as usize].cpu.take() else {
            return;
        };
        self.cpus[c] = None;
        if let Some((_, next)) = self.runq.pop_first() {
            self.give_cpu(c, next);
        }
    }

    fn block(&mut self, t: TaskId, why: Block) {
        let now = self.now;
        let task = &mut self.tasks[t.0 as usize];
        task.blocked_since = now;
        task.state = State::Blocked(why.clone());
        if task.unplug_before_block {
            task.unplug_before_block = false;
            self.pending.push_back(Input::Unplug);
        }
        match why {
            Block::Page(p) => self.page_waiters.entry(p).or_default().push(t),
            Block::Fsync(f) => self.fsync_waiters.entry(f).or_default().push(t),
            Block::Congestion { token, timeout } => {
                self.congestion_waiters.push(t);
                self.engine.schedule(self.now + timeout, Ev::Timer { task: t, token });
            }
            Block::Sleep { .. } | Block::Memory { .. } => {}
            Block::Counter { .. } => self.counter_waiters.push(t),
            Block::Exit(child) => self.tasks[child.0 as usize].exit_waiters.push(t),
            Block::Slot(_) | Block::Io | Block::Aio { .. } => {}
        }
        self.release_cpu(t);
    }

    fn wake(&mut self, t: TaskId) {
        if matches!(self.tasks[t.0 as usize].state, State::Blocked(_)) {
            self.make_runnable(t);
        }
    }

    /// `wake_up` on a wait queue whose sleepers queued themselves in `ws`'s order. They
    /// are woken newest first, as in 2.5.64 and 2.6.20: `prepare_to_wait` and
    /// `add_wait_queue` put a non-exclusive sleeper at the head of the queue
    /// (`__add_wait_queue` → `list_add`) and `__wake_up_common` walks from the head. Tasks
    /// of equal priority then run in that order.
    fn wake_all(&mut self, ws: Vec<TaskId>) {
        for w in ws.into_iter().rev() {
            self.wake(w);
        }
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    // ---------------------------------------------------------------------------------
    // Running tasks

    /// Run a task that owns a CPU until it burns CPU, submits a bio, or blocks.
    fn run_task(&mut self, t: TaskId) {
        loop {
            let task = &mut self.tasks[t.0 as usize];
            if task.state != State::Running {
                return;
            }
            if task.debt > Duration::ZERO {
                // Preemption points: a better task is waiting (woken while we were not
                // burning), or our slice is used up and an equal one waits (round robin).
                let expired = task.slice_used >= self.cfg.cpu.timeslice;
                if expired {
                    self.tasks[t.0 as usize].dprio = self.effective_prio(t);
                }
                if let Some(best) = self.best_waiting_prio() {
                    let me = self.dyn_prio(t);
                    if best < me || (expired && best <= me) {
                        let task = &mut self.tasks[t.0 as usize];
                        task.state = State::Runnable;
                        let c = task.cpu.take().unwrap();
                        self.cpus[c] = None;
                        self.enqueue(t, !expired);
                        let (_, next) = self.runq.pop_first().unwrap();
                        self.give_cpu(c, next);
                        return;
                    }
                }
                let task = &mut self.tasks[t.0 as usize];
                if expired {
                    task.slice_used = Duration::ZERO;
                }
                let d = task.debt;
                task.state = State::Burning;
                task.burn_started = self.now;
                let token = task.burn_token;
                let cpu = task.cpu.unwrap();
                self.engine.schedule(self.now + d, Ev::CpuDone { task: t, cpu, token });
                return;
            }
            if task.bio_out.is_empty() && task.unplug_after_bios {
                task.unplug_after_bios = false;
                self.pending.push_back(Input::Unplug);
            }
            if let Some(bio) = task.bio_out.pop_front() {
                task.state = State::Submitting;
                self.awaiting = Some((t, bio.id));
                if self.trace.is_some() {
                    self.trace_line("Q", bio.id, Some(&bio));
                    self.traced_bio = Some(bio);
                }
                self.pending.push_back(Input::Arrival(bio));
                return;
            }
            if let Some(b) = task.block_after.take() {
                self.block(t, b);
                return;
            }
            self.step(t);
        }
    }

    fn charge(&mut self, t: TaskId, d: Duration) {
        self.tasks[t.0 as usize].debt += d;
    }

    /// One step of the task's current operation.
    fn step(&mut self, t: TaskId) {
        let cont = std::mem::replace(&mut self.tasks[t.0 as usize].cont, Cont::Next);
        let next = match cont {
            Cont::Next => self.next_op(t),
            Cont::Read { file, start, pos, end, next_ra, copied, mmap } => {
                self.step_read(t, file, start, pos, end, next_ra, copied, mmap)
            }
            Cont::Write { file, pos, end, written, mmap } => self.step_write(t, file, pos, end, written, mmap),
            Cont::Balance(b) => self.step_balance(t, b),
            Cont::Writeback(w) => self.step_writeback(t, w),
            Cont::Fsync { file, step } => self.step_fsync(t, file, step),
            Cont::Meta { blocks, i, then } => self.step_meta(t, blocks, i, then),
            Cont::Finish { bytes } => {
                self.finish_op(t, bytes);
                Cont::Next
            }
            Cont::AioReap => {
                let n = std::mem::take(&mut self.tasks[t.0 as usize].aio_done);
                self.finish_op(t, n as u64);
                Cont::Next
            }
            Cont::Pdflush(p) => self.step_pdflush(t, p),
            Cont::Kswapd { priority } => self.step_kswapd(t, priority),
        };
        let task = &mut self.tasks[t.0 as usize];
        if task.state != State::Exited {
            task.cont = next;
        }
    }

    fn finish_op(&mut self, t: TaskId, bytes: u64) {
        let now = self.now;
        let task = &mut self.tasks[t.0 as usize];
        let error = task.io_error.take();
        task.last_outcome = Some(Outcome {
            kind: task.op_kind,
            started: task.op_started,
            finished: now,
            bytes,
            child: task.child.take(),
            error,
        });
    }

    fn next_op(&mut self, t: TaskId) -> Cont {
        if self.tasks[t.0 as usize].pdflush {
            return Cont::Pdflush(PdState { kind: PdKind::Background, phase: 0, budget: 0 });
        }
        if Some(t) == self.kswapd {
            return Cont::Kswapd { priority: DEF_PRIORITY };
        }
        let mut program = self.tasks[t.0 as usize].program.take().expect("task without program");
        let done = self.tasks[t.0 as usize].last_outcome.take();
        let cpu_time = self.tasks[t.0 as usize].cpu_time;
        let mut bumped = false;
        let op = {
            let mut ctx = ProgCtx {
                now: self.now,
                task: t,
                cpu_time,
                device_read: self.stats.bytes_read,
                device_written: self.stats.bytes_written,
                fs: &mut self.fs,
                counters: &mut self.counters,
                counter_bumped: &mut bumped,
            };
            program.next(&mut ctx, done.as_ref())
        };
        self.tasks[t.0 as usize].program = Some(program);
        if bumped {
            for w in std::mem::take(&mut self.counter_waiters) {
                self.wake(w);
            }
        }
        if let Some(log) = &mut self.syscalls
            && let Some((file, offset, len)) = op.file_range()
        {
            let task = self.tasks[t.0 as usize].name.clone();
            log.push(SysCall { at: self.now, task, kind: op.kind(), file, offset, len });
        }
        let cpu = self.cfg.cpu.clone();
        let task = &mut self.tasks[t.0 as usize];
        task.op_started = self.now;
        task.op_kind = op.kind();
        match op {
            SysOp::Read { file, offset, len } => {
                task.debt += cpu.syscall;
                let first = offset / BLOCK;
                Cont::Read {
                    file,
                    start: offset,
                    pos: offset,
                    end: offset + len,
                    next_ra: first,
                    copied: 0,
                    mmap: false,
                }
            }
            SysOp::MmapRead { file, offset, len } => Cont::Read {
                file,
                start: offset,
                pos: offset,
                end: offset + len,
                next_ra: offset / BLOCK,
                copied: 0,
                mmap: true,
            },
            SysOp::Write { file, offset, len } => {
                task.debt += cpu.syscall;
                Cont::Write { file, pos: offset, end: offset + len, written: 0, mmap: false }
            }
            SysOp::MmapWrite { file, offset, len } => {
                Cont::Write { file, pos: offset, end: offset + len, written: 0, mmap: true }
            }
            SysOp::DirectRead { file, offset, len } => {
                task.debt += cpu.syscall;
                self.direct_io(t, file, offset, len, false, false);
                Cont::Finish { bytes: len }
            }
            SysOp::DirectWrite { file, offset, len } => {
                task.debt += cpu.syscall;
                self.direct_io(t, file, offset, len, true, false);
                Cont::Finish { bytes: len }
            }
            SysOp::AioSubmit { file, offset, len, write } => {
                task.debt += cpu.syscall;
                self.direct_io(t, file, offset, len, write, true);
                Cont::Finish { bytes: len }
            }
            SysOp::AioWait { min } => {
                task.debt += cpu.syscall;
                if task.aio_done < min && task.aio_inflight > 0 {
                    task.block_after = Some(Block::Aio { min });
                }
                Cont::AioReap
            }
            SysOp::Fsync { file } => {
                task.debt += cpu.syscall;
                Cont::Fsync { file, step: FsyncStep::WriteData }
            }
            SysOp::Open { file } | SysOp::Truncate { file } => {
                let trunc = matches!(op, SysOp::Truncate { .. });
                task.debt += cpu.syscall * 3;
                let ra = self.new_ra();
                self.tasks[t.0 as usize].ra.insert(file.0, ra);
                if trunc {
                    self.cache.drop_file(file.0);
                    self.fs.truncate(file);
                }
                let blocks = self.lookup_blocks(file);
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::Close { file } => {
                task.debt += cpu.syscall;
                task.ra.remove(&file.0);
                self.fs.discard_prealloc(file);
                Cont::Finish { bytes: 0 }
            }
            SysOp::Stat { file } => {
                task.debt += cpu.syscall * 2;
                let blocks = vec![self.fs.inode_block(self.fs.file(file).inode)];
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::ReadDir { dir } => {
                task.debt += cpu.syscall * 2;
                let d = self.fs.dir(dir);
                let mut blocks = vec![self.fs.inode_block(d.inode)];
                blocks.extend(d.blocks.iter().copied());
                Cont::Meta { blocks, i: 0, then: Box::new(Cont::Finish { bytes: 0 }) }
            }
            SysOp::Think(d) => {
                task.debt += d;
                task.user_debt += d;
                Cont::Finish { bytes: 0 }
            }
            SysOp::Sleep(d) => {
                let token = self.token();
                self.engine.schedule(self.now + d, Ev::Timer { task: t, token });
                self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token });
                Cont::Finish { bytes: 0 }
            }
            SysOp::WaitCounter { counter, at_least } => {
                if self.counters.get(counter).copied().unwrap_or(0) < at_least {
                    task.block_after = Some(Block::Counter { counter, at_least });
                }
                Cont::Finish { bytes: 0 }
            }
            SysOp::Spawn { program, name, prio } => {
                task.debt += cpu.process_spawn;
                let child = self.spawn(name, program, prio);
                self.tasks[t.0 as usize].child = Some(child);
                Cont::Finish { bytes: 0 }
            }
            SysOp::WaitExit(c) => {
                if self.tasks[c.0 as usize].state != State::Exited {
                    self.tasks[t.0 as usize].block_after = Some(Block::Exit(c));
                }
                Cont::Finish { bytes: 0 }
            }
            SysOp::DropCaches => {
                self.cache.drop_clean();
                Cont::Finish { bytes: 0 }
            }
            SysOp::Exit => {
                self.exit_task(t);
                Cont::Next
            }
        }
    }

    fn exit_task(&mut self, t: TaskId) {
        let owner = self.tasks[t.0 as usize].owner;
        self.release_cpu(t);
        let task = &mut self.tasks[t.0 as usize];
        task.state = State::Exited;
        task.ra.clear();
        let waiters = std::mem::take(&mut task.exit_waiters);
        self.wake_all(waiters);
        self.pending.push_back(Input::OwnerExit(owner));
    }

    fn new_ra(&self) -> FileRa {
        let max = self.cfg.host.readahead_max_pages;
        match self.cfg.host.readahead {
            Readahead::Linux25 => FileRa::V25(Ra25::new(max)),
            Readahead::Linux26 => FileRa::V26(RaState::new(max)),
        }
    }

    /// Metadata blocks an open needs: the directory's blocks and the file's inode block.
    fn lookup_blocks(&self, file: FileId) -> Vec<u64> {
        let f = self.fs.file(file);
        let d = self.fs.dir(f.dir);
        // The directory entry lives in one of the directory's blocks.
        let pos = d.files.iter().position(|&x| x == file).unwrap_or(0);
        let dblock = d.blocks[(pos / 128).min(d.blocks.len() - 1)];
        vec![dblock, self.fs.inode_block(f.inode)]
    }

    /// Read metadata blocks one at a time (each a synchronous read if not cached).
    fn step_meta(&mut self, t: TaskId, blocks: Vec<u64>, i: usize, then: Box<Cont>) -> Cont {
        if i >= blocks.len() {
            return *then;
        }
        let b = blocks[i];
        match self.cache.lookup(META, b) {
            Lookup::Uptodate(_) => {
                self.charge(t, self.cfg.cpu.page_lookup);
                Cont::Meta { blocks, i: i + 1, then }
            }
            Lookup::Locked(p) => {
                self.tasks[t.0 as usize].unplug_before_block = true;
                self.tasks[t.0 as usize].block_after = Some(Block::Page(p));
                Cont::Meta { blocks, i, then }
            }
            Lookup::Absent => match self.cache_add(t, META, b, false) {
                None => self.wait_memory(t, Cont::Meta { blocks, i, then }),
                Some(p) => {
                    let c = self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit;
                    self.charge(t, c);
                    self.read_block(t, b, p, true);
                    Cont::Meta { blocks, i, then }
                }
            },
        }
    }

    fn wait_memory(&mut self, t: TaskId, cont: Cont) -> Cont {
        let token = self.token();
        if let Some(timeout) = self.tasks[t.0 as usize].reclaim_wait.take() {
            // Direct reclaim freed too little: blk_congestion_wait.
            self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout });
            return cont;
        }
        self.memory_waiters.push(t);
        self.engine.schedule(self.now + Duration::from_millis(10), Ev::Timer { task: t, token });
        self.tasks[t.0 as usize].block_after = Some(Block::Memory { token });
        cont
    }

    fn new_bio_id(&mut self) -> ReqId {
        let id = self.next_bio;
        self.next_bio += 1;
        id
    }

    /// A synchronous read of one block into cache page `p` (a metadata block, or a data
    /// page read outside read-ahead).
    fn read_block(&mut self, t: TaskId, block: u64, p: PageId, meta: bool) {
        let sector = self.fs.sector(block);
        self.queue_bio(t, Op::Read, sector, SECTORS_PER_BLOCK as u32, true, BioKind::CacheRead(vec![p]), meta);
    }

    /// Queue a bio for the task to submit next.
    #[allow(clippy::too_many_arguments)]
    fn queue_bio(&mut self, t: TaskId, op: Op, sector: u64, len: u32, sync: bool, kind: BioKind, meta: bool) {
        let id = self.new_bio_id();
        let task = &self.tasks[t.0 as usize];
        let rq = Request {
            id,
            op,
            sector,
            len_sectors: len,
            sync,
            meta,
            prio: task.prio,
            owner: task.owner,
            arrival: self.now,
        };
        let bytes = len as u64 * 512;
        self.bios.insert(id, Bio { kind, bytes, write: op == Op::Write });
        self.tasks[t.0 as usize].bio_out.push_back(rq);
    }

    /// Allocate a page-cache page for task `t` (`__alloc_pages` for `page_cache_alloc`).
    /// `None` means wait and retry ([`wait_memory`](Self::wait_memory)).
    ///
    /// With [`Reclaim::Kswapd25`] this follows 2.5.6x: a free page is taken while more
    /// than `pages_low` are free; below that kswapd is woken and the page is still taken
    /// down to `pages_min`; below `pages_min` the task reclaims itself
    /// (`try_to_free_pages`): one `shrink_zone` pass per call at falling priority, asking
    /// for 32 pages; a pass that frees fewer ends in `blk_congestion_wait` (up to 100 ms)
    /// before the next. Dirty pages that reclaim meets are written from here — by a task
    /// in `write()` (its `current->backing_dev_info` is the device) whether or not the
    /// queue is congested — so the task submits them and may wait for request slots.
    fn cache_add(&mut self, t: TaskId, file: u32, index: u64, uptodate: bool) -> Option<PageId> {
        let Reclaim::Kswapd25 { pages_min, pages_low, .. } = self.cfg.host.reclaim else {
            return self.cache.add(file, index, uptodate);
        };
        self.tasks[t.0 as usize].reclaim_wait = None;
        let free = self.cache.free();
        if free <= pages_low {
            self.wake_kswapd();
        }
        if free > pages_min {
            self.tasks[t.0 as usize].direct_reclaim = None;
            return self.cache.try_add(file, index, uptodate);
        }
        // Metadata comes through __getblk, a GFP_NOFS allocation: reclaim may not call
        // into the filesystem (no writeback) and gives up after one pass.
        let nofs = file == META;
        let (priority, so_far) = self.tasks[t.0 as usize].direct_reclaim.take().unwrap_or((DEF_PRIORITY, 0));
        let may_write = !nofs && (self.tasks[t.0 as usize].op_kind == "write" || !self.write_congested);
        let max_scan = (self.cache.nr_inactive() >> priority).max(2 * SWAP_CLUSTER_MAX);
        let mut out = Vec::new();
        let freed = self.cache.shrink_zone(SWAP_CLUSTER_MAX, max_scan, may_write, &mut out);
        self.stats.direct_freed += freed;
        self.stats.direct_paged_out += out.len() as u64;
        self.submit_pageout(t, out);
        let total = so_far + freed;
        if total >= SWAP_CLUSTER_MAX || priority == 0 || nofs {
            // try_to_free_pages is done (a GFP_NOFS one after a single pass);
            // __alloc_pages tries the zone again against pages_min and, failing, naps
            // (blk_congestion_wait, HZ/50 = 20 ms) and reclaims anew.
            if self.cache.free() > pages_min {
                return self.cache.try_add(file, index, uptodate);
            }
            self.tasks[t.0 as usize].reclaim_wait = Some(Duration::from_millis(20));
            return None;
        }
        // A pass that freed too little wakes pdflush for what it scanned
        // (wakeup_bdflush) and naps before the next priority.
        self.wakeup_bdflush(max_scan);
        let task = &mut self.tasks[t.0 as usize];
        task.direct_reclaim = Some((priority - 1, total));
        task.reclaim_wait = Some(HZ_10);
        None
    }

    /// Read-ahead gives up on a page it could not allocate; the read that follows
    /// allocates (and, if it must, reclaims and naps) for itself, from the top.
    fn forget_reclaim(&mut self, t: TaskId) {
        let task = &mut self.tasks[t.0 as usize];
        task.reclaim_wait = None;
        task.direct_reclaim = None;
    }

    /// A page for metadata being dirtied inside an operation that cannot wait here (a new
    /// indirect block, a bitmap, an inode block): a free page if there is one, else one
    /// `GFP_NOFS` reclaim pass for it. `None` (nothing clean anywhere) leaves the block
    /// undirtied.
    fn cache_add_nowait(&mut self, file: u32, index: u64) -> Option<PageId> {
        let Reclaim::Kswapd25 { pages_low, .. } = self.cfg.host.reclaim else {
            return self.cache.add(file, index, true);
        };
        if self.cache.free() <= pages_low {
            self.wake_kswapd();
        }
        if self.cache.free() == 0 {
            let max_scan = self.cache.nr_inactive().max(2 * SWAP_CLUSTER_MAX);
            self.stats.direct_freed += self.cache.shrink_zone(SWAP_CLUSTER_MAX, max_scan, false, &mut Vec::new());
        }
        self.cache.try_add(file, index, true)
    }

    /// Submit the writes of pages reclaim paged out: one bio per run of pages contiguous
    /// in the file and on disk (the queue would merge `writepage`'s single-page bios so).
    fn submit_pageout(&mut self, t: TaskId, paged_out: Vec<PageId>) {
        let max_pages = self.max_bio_sectors() / SECTORS_PER_BLOCK;
        let mut runs: Vec<(u32, u64, u64, Vec<PageId>)> = Vec::new();
        for q in paged_out {
            let (f, idx) = (self.cache.page(q).file, self.cache.page(q).index);
            let block = if f == META { idx } else { self.fs.map(FileId(f), idx).expect("a dirty page has a block") };
            match runs.last_mut() {
                Some((rf, ri, rb, pages))
                    if *rf == f
                        && *ri + pages.len() as u64 == idx
                        && *rb + pages.len() as u64 == block
                        && (pages.len() as u64) < max_pages =>
                {
                    pages.push(q)
                }
                _ => runs.push((f, idx, block, vec![q])),
            }
        }
        for (f, _, block, pages) in runs {
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(block);
            let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
            self.queue_bio(t, Op::Write, sector, len, false, BioKind::CacheWrite(pages), f == META);
        }
    }

    fn wake_kswapd(&mut self) {
        if let Some(k) = self.kswapd
            && self.tasks[k.0 as usize].state == State::Blocked(Block::Sleep { token: 0 })
        {
            self.make_runnable(k);
        }
    }

    /// kswapd (2.5.6x `balance_pgdat`), one priority pass per step, priorities 12 down to
    /// 1: a pass that finds fewer than `pages_high` pages free calls `shrink_zone` for the
    /// difference, scanning at least twice that, writing back the dirty pages it meets
    /// whatever the queue's state (`may_write_to_queue` lets kswapd block on a full
    /// queue), and then naps in `blk_congestion_wait` (up to 100 ms) before the next
    /// pass; a pass that finds the zone balanced, or the end of the priorities, sends
    /// kswapd back to sleep until an allocation wakes it.
    fn step_kswapd(&mut self, t: TaskId, priority: u32) -> Cont {
        let Reclaim::Kswapd25 { pages_high, .. } = self.cfg.host.reclaim else {
            unreachable!("kswapd runs only with Reclaim::Kswapd25")
        };
        let free = self.cache.free();
        if free >= pages_high || priority == 0 {
            self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
            return Cont::Kswapd { priority: DEF_PRIORITY };
        }
        let to_reclaim = pages_high - free;
        let max_scan = (self.cache.nr_inactive() >> priority).max(2 * to_reclaim);
        let mut out = Vec::new();
        self.stats.kswapd_freed += self.cache.shrink_zone(to_reclaim, max_scan, true, &mut out);
        self.stats.kswapd_paged_out += out.len() as u64;
        self.submit_pageout(t, out);
        let token = self.token();
        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
        Cont::Kswapd { priority: priority - 1 }
    }

    // ---------------------------------------------------------------------------------
    // Reads

    #[allow(clippy::too_many_arguments)]
    fn step_read(
        &mut self,
        t: TaskId,
        file: FileId,
        start: u64,
        pos: u64,
        end: u64,
        mut next_ra: u64,
        copied: u64,
        mmap: bool,
    ) -> Cont {
        let size = self.fs.file(file).size;
        let end = end.min(size);
        if pos >= end {
            let cpu = &self.cfg.cpu;
            let c = if mmap { cpu.page_lookup * copied as u32 } else { cpu.copy_page * copied as u32 };
            self.charge(t, c);
            // Bytes up to end of file (a short read at EOF, 0 past it).
            return Cont::Finish { bytes: end.saturating_sub(start) };
        }
        let index = pos / BLOCK;
        let last = (end - 1) / BLOCK;
        if index == next_ra {
            if mmap {
                // filemap_nopage read-around on a miss.
                if !self.cache.contains(file.0, index) {
                    let ra = self.cfg.host.mmap_readaround_pages;
                    let start = index & !(ra - 1);
                    let mut io = HostRa { sim: self, t, file };
                    io.readahead(RaAction { start, nr: ra, blocking: true });
                }
                next_ra = index + 1;
            } else {
                let mut ra = self.tasks[t.0 as usize].ra.remove(&file.0).unwrap_or_else(|| self.new_ra());
                let mut io = HostRa { sim: self, t, file };
                next_ra = match &mut ra {
                    FileRa::V26(r) => r.page_cache_readahead(&mut io, index, last - index + 1),
                    FileRa::V25(r) => {
                        r.page_cache_readahead(&mut io, index);
                        index + 1
                    }
                };
                let is25 = matches!(ra, FileRa::V25(_));
                let task = &mut self.tasks[t.0 as usize];
                task.ra.insert(file.0, ra);
                if is25 && !task.bio_out.is_empty() {
                    task.unplug_after_bios = true;
                }
            }
            if !self.tasks[t.0 as usize].bio_out.is_empty() || self.tasks[t.0 as usize].block_after.is_some() {
                return Cont::Read { file, start, pos, end, next_ra, copied, mmap };
            }
        }
        match self.cache.lookup(file.0, index) {
            Lookup::Uptodate(_) => {
                self.charge(t, self.cfg.cpu.page_lookup);
                let npos = ((index + 1) * BLOCK).min(end);
                Cont::Read { file, start, pos: npos, end, next_ra, copied: copied + 1, mmap }
            }
            Lookup::Locked(p) => {
                let task = &mut self.tasks[t.0 as usize];
                task.unplug_before_block = true;
                task.block_after = Some(Block::Page(p));
                Cont::Read { file, start, pos, end, next_ra, copied, mmap }
            }
            Lookup::Absent => {
                match self.tasks[t.0 as usize].ra.get_mut(&file.0) {
                    Some(FileRa::V25(r)) => r.miss(),
                    Some(FileRa::V26(r)) => r.miss(),
                    None => {}
                }
                // Indirect block first, if needed and not cached.
                if let Some(ib) = self.fs.indirect_for(file, index)
                    && !matches!(self.cache.lookup(META, ib), Lookup::Uptodate(_))
                {
                    let then = Box::new(Cont::Read { file, start, pos, end, next_ra, copied, mmap });
                    return Cont::Meta { blocks: vec![ib], i: 0, then };
                }
                match self.cache_add(t, file.0, index, false) {
                    None => self.wait_memory(t, Cont::Read { file, start, pos, end, next_ra, copied, mmap }),
                    Some(p) => match self.fs.map(file, index) {
                        None => {
                            // A hole: zero-filled without I/O.
                            self.cache.read_done(p);
                            Cont::Read { file, start, pos, end, next_ra, copied, mmap }
                        }
                        Some(b) => {
                            let c = self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit;
                            self.charge(t, c);
                            self.read_block(t, b, p, false);
                            Cont::Read { file, start, pos, end, next_ra, copied, mmap }
                        }
                    },
                }
            }
        }
    }

    /// `do_page_cache_readahead`: allocate the missing pages of the window and build
    /// bios of on-disk contiguous runs. Returns the number of pages started.
    fn do_readahead(&mut self, t: TaskId, file: FileId, a: RaAction) -> RaOutcome {
        if !a.blocking && self.read_congested {
            return RaOutcome::Congested;
        }
        let size = self.fs.file(file).size;
        if size == 0 {
            return RaOutcome::Read(0);
        }
        let end_index = (size - 1) / BLOCK;
        let max_pages = (self.max_bio_sectors() / SECTORS_PER_BLOCK).max(1);
        let mut started = 0;
        let mut run: Vec<PageId> = Vec::new();
        let mut run_start_block = 0;
        let mut last_block = None;
        for index in a.start..a.start + a.nr {
            if index > end_index {
                break;
            }
            if self.cache.contains(file.0, index) {
                self.flush_ra_run(t, &mut run, run_start_block);
                last_block = None;
                continue;
            }
            let Some(b) = self.fs.map(file, index) else {
                continue;
            };
            // mpage_readpages maps each page with get_block, which reads a cold indirect
            // block on the way. Its read goes out ahead of the data it maps.
            if let Some(ib) = self.fs.indirect_for(file, index)
                && !self.cache.contains(META, ib)
            {
                self.flush_ra_run(t, &mut run, run_start_block);
                last_block = None;
                match self.cache_add(t, META, ib, false) {
                    Some(p) => {
                        self.charge(t, self.cfg.cpu.page_alloc + self.cfg.cpu.bio_submit);
                        self.read_block(t, ib, p, true);
                    }
                    None => self.forget_reclaim(t),
                }
            }
            let Some(p) = self.cache_add(t, file.0, index, false) else {
                self.forget_reclaim(t);
                break;
            };
            started += 1;
            self.charge(t, self.cfg.cpu.page_alloc);
            let contiguous = last_block == Some(b.wrapping_sub(1)) && (run.len() as u64) < max_pages;
            if !contiguous {
                self.flush_ra_run(t, &mut run, run_start_block);
                run_start_block = b;
            }
            run.push(p);
            last_block = Some(b);
        }
        self.flush_ra_run(t, &mut run, run_start_block);
        RaOutcome::Read(started)
    }

    fn flush_ra_run(&mut self, t: TaskId, run: &mut Vec<PageId>, start_block: u64) {
        if run.is_empty() {
            return;
        }
        let pages = std::mem::take(run);
        self.charge(t, self.cfg.cpu.bio_submit);
        let sector = self.fs.sector(start_block);
        let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
        self.queue_bio(t, Op::Read, sector, len, true, BioKind::CacheRead(pages), false);
    }

    /// Largest bio the queue accepts (bio_add_page stops at max_sectors; 128 KiB).
    fn max_bio_sectors(&self) -> u64 {
        self.cfg.max_bio_sectors as u64
    }

    // ---------------------------------------------------------------------------------
    // Writes and dirty throttling

    fn step_write(&mut self, t: TaskId, file: FileId, pos: u64, end: u64, written: u64, mmap: bool) -> Cont {
        if pos >= end {
            let n = written.div_ceil(BLOCK).max(1);
            self.ratelimit_count += n;
            let limit = if self.dirty_exceeded { 8 } else { self.ratelimit_pages() };
            if self.ratelimit_count >= limit {
                self.ratelimit_count = 0;
                return Cont::Balance(Balance { pages_written: 0, phase: 0, then_bytes: written });
            }
            return Cont::Finish { bytes: written };
        }
        let index = pos / BLOCK;
        let page_end = ((index + 1) * BLOCK).min(end);
        let partial = !pos.is_multiple_of(BLOCK) || (page_end - pos) < BLOCK;
        let size = self.fs.file(file).size;
        let cpu = self.cfg.cpu.clone();
        let found = if self.cfg.host.write_marks_accessed {
            self.cache.lookup(file.0, index)
        } else {
            self.cache.lookup_quiet(file.0, index)
        };
        let p = match found {
            Lookup::Uptodate(p) => p,
            Lookup::Locked(p) => {
                let task = &mut self.tasks[t.0 as usize];
                task.unplug_before_block = true;
                task.block_after = Some(Block::Page(p));
                return Cont::Write { file, pos, end, written, mmap };
            }
            Lookup::Absent => {
                // ext2_get_block walks the indirect chain to map (or allocate) the block: a
                // cold indirect block is a synchronous read before the write can go on.
                if let Some(ib) = self.fs.indirect_for(file, index)
                    && !matches!(self.cache.lookup(META, ib), Lookup::Uptodate(_))
                {
                    let then = Box::new(Cont::Write { file, pos, end, written, mmap });
                    return Cont::Meta { blocks: vec![ib], i: 0, then };
                }
                let allocated = self.fs.map(file, index);
                let need_read = allocated.is_some() && (mmap || (partial && index * BLOCK < size));
                match self.cache_add(t, file.0, index, !need_read) {
                    None => {
                        return self.wait_memory(t, Cont::Write { file, pos, end, written, mmap });
                    }
                    Some(p) => {
                        self.charge(t, cpu.page_alloc);
                        if need_read {
                            // Read-modify-write of a partial page (or an mmap fault).
                            self.charge(t, cpu.bio_submit);
                            self.read_block(t, allocated.unwrap(), p, false);
                            return Cont::Write { file, pos, end, written, mmap };
                        }
                        p
                    }
                }
            }
        };
        // Allocate the block (ext2_get_block with create), dirtying metadata.
        if self.fs.map(file, index).is_none() {
            let alloc = self.fs.allocate(file, index, self.pid(t));
            self.charge(t, cpu.block_alloc);
            for b in alloc.meta {
                self.dirty_meta(b);
            }
        }
        let new_size = self.fs.file(file).size.max(page_end);
        self.fs.set_size(file, new_size);
        let copy = if mmap { cpu.page_lookup } else { cpu.copy_page };
        self.charge(t, copy + cpu.page_lookup);
        if !self.cfg.host.write_marks_accessed {
            self.cache.set_referenced(p);
        }
        if self.cache.set_dirty(p, self.now) {
            self.charge(t, cpu.dirty_page);
        }
        // mtime (and the size or block count) changed: the inode is dirty.
        self.inode_dirty.insert(file.0);
        Cont::Write { file, pos: page_end, end, written: written + (page_end - pos), mmap }
    }

    /// Mark a metadata block dirty (allocating its cache page without reading: ext2 reads
    /// bitmaps once and keeps them; new indirect blocks are fresh).
    fn dirty_meta(&mut self, block: u64) {
        let p = match self.cache.get(META, block) {
            Some(p) => p,
            None => match self.cache_add_nowait(META, block) {
                Some(p) => p,
                None => return,
            },
        };
        if !self.cache.page(p).locked {
            self.cache.set_dirty(p, self.now);
        }
    }

    /// Task `t`'s pid: the machine's setup task's plus its spawn order.
    pub fn pid(&self, t: TaskId) -> u32 {
        self.pid_base + 1 + t.0
    }

    /// The pid of the task that set the machine up (it builds file sets before a run).
    pub fn setup_pid(&self) -> u32 {
        self.pid_base
    }

    fn ratelimit_pages(&self) -> u64 {
        // writeback_set_ratelimit(): total pages / (CPUs * 32), at least 16, at most 4 MiB.
        let total = self.cfg.host.mem_bytes / 4096;
        (total / (self.cfg.cpu.cpus as u64 * 32)).clamp(16, 1024)
    }

    /// `get_dirty_limits`: (background, dirty) thresholds in pages.
    fn dirty_limits(&self) -> (u64, u64) {
        let avail = self.cfg.host.mem_bytes / 4096;
        let mut dirty_ratio = self.cfg.host.dirty_ratio as u64;
        dirty_ratio = dirty_ratio.max(5);
        let mut bg = self.cfg.host.dirty_background_ratio as u64;
        if bg >= dirty_ratio {
            bg = dirty_ratio / 2;
        }
        (bg * avail / 100, dirty_ratio * avail / 100)
    }

    /// `balance_dirty_pages`.
    fn step_balance(&mut self, t: TaskId, mut b: Balance) -> Cont {
        let write_chunk = (self.ratelimit_pages() + self.ratelimit_pages() / 2) as i64;
        let (_, dirty_thresh) = self.dirty_limits();
        let over = |s: &Sim| s.cache.nr_dirty + s.cache.nr_writeback > dirty_thresh;
        match b.phase {
            0 => {
                if !over(self) {
                    return self.balance_done(t, b);
                }
                self.dirty_exceeded = true;
                if self.cache.nr_dirty > 0 {
                    b.phase = 1;
                    let then = Box::new(Cont::Balance(b));
                    return self.writeback_cont(write_chunk, false, None, None, then);
                }
                b.phase = 2;
                let token = self.token();
                self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                Cont::Balance(b)
            }
            1 => {
                // After our writeback pass: how much did it write?
                let written = self.tasks[t.0 as usize].last_wb_written();
                if !over(self) {
                    return self.balance_done(t, b);
                }
                b.pages_written += written as u64;
                if b.pages_written >= write_chunk as u64 {
                    return self.balance_done(t, b);
                }
                b.phase = 2;
                let token = self.token();
                self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                Cont::Balance(b)
            }
            _ => {
                b.phase = 0;
                Cont::Balance(b)
            }
        }
    }

    fn balance_done(&mut self, _t: TaskId, b: Balance) -> Cont {
        let (bg, dirty_thresh) = self.dirty_limits();
        if self.cache.nr_dirty + self.cache.nr_writeback <= dirty_thresh {
            self.dirty_exceeded = false;
        }
        if !self.bdi_writeback && self.cache.nr_dirty > bg {
            self.start_background_writeout();
        }
        Cont::Finish { bytes: b.then_bytes }
    }

    fn start_background_writeout(&mut self) {
        self.background_writeout(0);
    }

    /// `wakeup_bdflush(nr_pages)`: background writeback of at least `min_pages` pages,
    /// below the background threshold too (direct reclaim asks for what it scanned).
    fn wakeup_bdflush(&mut self, min_pages: u64) {
        self.stats.bdflush_wakeups += 1;
        self.background_writeout(min_pages as i64);
    }

    fn background_writeout(&mut self, min_pages: i64) {
        if self.background_running {
            return;
        }
        if self.pdflush_operation(PdKind::Background, min_pages) {
            self.background_running = true;
        }
    }

    /// `pdflush_operation`: give `kind` of work to an idle pdflush thread, if there is one.
    fn pdflush_operation(&mut self, kind: PdKind, budget: i64) -> bool {
        let idle = self
            .pdflush
            .iter()
            .copied()
            .find(|&p| matches!(self.tasks[p.0 as usize].state, State::Blocked(Block::Sleep { .. })));
        let Some(p) = idle else { return false };
        self.tasks[p.0 as usize].cont = Cont::Pdflush(PdState { kind, phase: 0, budget });
        self.make_runnable(p);
        true
    }

    fn writeback_cont(
        &mut self,
        nr_to_write: i64,
        nonblocking: bool,
        older_than: Option<Instant>,
        only_file: Option<u32>,
        then: Box<Cont>,
    ) -> Cont {
        let inodes: VecDeque<u32> = match only_file {
            Some(f) => [f].into_iter().collect(),
            None => {
                // writeback_inodes walks the superblocks newest first: the filesystem's
                // inodes (oldest dirtied first), then the block device's, mounted at boot,
                // whose pages are the filesystem's metadata.
                let mut v: VecDeque<u32> = self
                    .cache
                    .dirty_inodes()
                    .filter(|(since, _)| older_than.is_none_or(|o| *since <= o))
                    .map(|(_, f)| f)
                    .collect();
                if let Some(i) = v.iter().position(|&f| f == META) {
                    v.remove(i);
                    v.push_back(META);
                }
                v
            }
        };
        Cont::Writeback(Writeback {
            nr_to_write,
            nonblocking,
            older_than,
            only_file,
            inodes,
            pages: WbPages::None,
            file: None,
            written: 0,
            encountered_congestion: false,
            buffers_only: false,
            then,
        })
    }

    /// One bio of a writeback pass (`writeback_inodes` → `mpage_writepages`).
    fn step_writeback(&mut self, t: TaskId, mut w: Writeback) -> Cont {
        loop {
            if w.nr_to_write <= 0 {
                return self.writeback_done(t, w);
            }
            if w.nonblocking && self.write_congested {
                w.encountered_congestion = true;
                return self.writeback_done(t, w);
            }
            if self.wb_peek(&w).is_none() {
                self.release_inode(&mut w);
                let Some(f) = w.inodes.pop_front() else {
                    return self.writeback_done(t, w);
                };
                if self.cache.inode_dirty(f).is_none() {
                    continue;
                }
                if w.older_than.is_some_and(|o| self.cache.inode_dirty(f).is_some_and(|d| d.since > o)) {
                    continue;
                }
                if w.only_file.is_none() && !self.inodes_under_writeback.insert(f) {
                    // I_LOCK: another task is writing this inode back; WB_SYNC_NONE passes
                    // skip it (`__writeback_single_inode` requeues it) rather than wait.
                    continue;
                }
                w.pages = WbPages::Pass(self.cache.begin_pass(f));
                w.file = Some(f);
                continue;
            }
            // Build one bio of pages contiguous in the file and on disk.
            let f = w.file.unwrap();
            let max_pages = (self.max_bio_sectors() / SECTORS_PER_BLOCK) as usize;
            let mut pages: Vec<PageId> = Vec::new();
            let mut first_block = 0;
            let mut prev: Option<(u64, u64)> = None;
            while let Some((idx, known)) = self.wb_peek(&w) {
                debug_assert!(known.is_none() || known == self.cache.get(f, idx));
                let Some(p) = known.or_else(|| self.cache.get(f, idx)) else {
                    self.wb_pop(&mut w, idx);
                    continue;
                };
                let pg = self.cache.page(p);
                if !pg.dirty || pg.writeback || pg.locked {
                    self.wb_pop(&mut w, idx);
                    continue;
                }
                let block = if f == META { Some(idx) } else { self.fs.map(FileId(f), idx) };
                let Some(block) = block else {
                    self.wb_pop(&mut w, idx);
                    continue;
                };
                if let Some((pi, pb)) = prev
                    && (idx != pi + 1 || block != pb + 1)
                {
                    break;
                }
                if pages.len() >= max_pages || (pages.len() as i64) >= w.nr_to_write {
                    break;
                }
                if pages.is_empty() {
                    first_block = block;
                }
                // Past the page before its writeback starts: the pass has visited it.
                self.wb_pop(&mut w, idx);
                self.cache.start_writeback(p);
                pages.push(p);
                prev = Some((idx, block));
            }
            if pages.is_empty() {
                continue;
            }
            let n = pages.len() as i64;
            w.nr_to_write -= n;
            w.written += n;
            if let Some((pi, _)) = prev
                && !w.buffers_only
            {
                self.cache.set_writeback_index(f, pi + 1);
            }
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(first_block);
            let len = (pages.len() as u64 * SECTORS_PER_BLOCK) as u32;
            self.queue_bio(t, Op::Write, sector, len, false, BioKind::CacheWrite(pages), f == META);
            return Cont::Writeback(w);
        }
    }

    /// The next page the pass considers on its inode: its index, and its page if known.
    fn wb_peek(&mut self, w: &Writeback) -> Option<(u64, Option<PageId>)> {
        match &w.pages {
            WbPages::None => None,
            WbPages::List(q) => q.front().map(|&i| (i, None)),
            WbPages::Pass(id) => self.cache.pass_peek(*id),
        }
    }

    /// Move past the page `wb_peek` returned.
    fn wb_pop(&mut self, w: &mut Writeback, index: u64) {
        match &mut w.pages {
            WbPages::None => {}
            WbPages::List(q) => {
                q.pop_front();
            }
            WbPages::Pass(id) => self.cache.pass_pop(*id, index),
        }
    }

    /// Drop the I_LOCK a `writeback_inodes` pass holds on the inode it is writing.
    fn release_inode(&mut self, w: &mut Writeback) {
        if let WbPages::Pass(id) = std::mem::replace(&mut w.pages, WbPages::None) {
            self.cache.end_pass(id);
        }
        if let Some(f) = w.file.take()
            && w.only_file.is_none()
        {
            self.inodes_under_writeback.remove(&f);
            // __sync_single_inode: after its pages, a dirty inode is written
            // (ext2_write_inode without wait copies it into its block, which is dirtied).
            if f != META && self.inode_dirty.remove(&f) {
                let ino = self.fs.inode_block(self.fs.file(FileId(f)).inode);
                self.dirty_meta(ino);
            }
        }
    }

    fn writeback_done(&mut self, t: TaskId, mut w: Writeback) -> Cont {
        self.release_inode(&mut w);
        self.tasks[t.0 as usize].set_wb_result(w.written, w.encountered_congestion);
        *w.then
    }

    // ---------------------------------------------------------------------------------
    // fsync

    /// `sys_fsync` on ext2 (2.5), step by step (see [`FsyncStep`]). Each wait is for this
    /// file's own buffers: an fsync does not wait for other files' metadata, so fsyncs
    /// ending at different times each pay their own trip to the inode table.
    fn step_fsync(&mut self, t: TaskId, file: FileId, step: FsyncStep) -> Cont {
        let next = |step| Cont::Fsync { file, step };
        match step {
            FsyncStep::WriteData => {
                // filemap_fdatawrite: all the file's dirty pages (WB_SYNC_ALL: blocking).
                self.writeback_cont(i64::MAX, false, None, Some(file.0), Box::new(next(FsyncStep::WriteIndirect)))
            }
            FsyncStep::WriteIndirect => {
                // sync_mapping_buffers: ll_rw_block on the inode's dirty indirect blocks...
                let blocks = self.fs.indirect_blocks(file);
                self.write_meta_blocks(blocks, Box::new(next(FsyncStep::WaitIndirect)))
            }
            FsyncStep::WaitIndirect => {
                // ... then wait_on_buffer on each.
                let blocks = self.fs.indirect_blocks(file);
                self.wait_meta_written(t, &blocks, next(FsyncStep::WaitIndirect)).unwrap_or(next(FsyncStep::WriteInode))
            }
            FsyncStep::WriteInode => {
                // ext2_sync_file: an inode that is not dirty is not written (a writeback
                // pass may have copied it into its block already; that block stays dirty).
                if !self.inode_dirty.contains(&file.0) {
                    return next(FsyncStep::WaitData);
                }
                // ext2_sync_inode → ext2_update_inode(do_sync): the raw inode goes into
                // its block and sync_dirty_buffer writes it: lock_buffer waits for a read or
                // write of the block in flight, then the (dirty) block is written.
                let ino = self.fs.inode_block(self.fs.file(file).inode);
                if let Some(c) = self.wait_meta_written(t, &[ino], next(FsyncStep::WriteInode)) {
                    return c;
                }
                self.inode_dirty.remove(&file.0);
                self.dirty_meta(ino);
                self.write_meta_blocks(vec![ino], Box::new(next(FsyncStep::WaitInode)))
            }
            FsyncStep::WaitInode => {
                let ino = self.fs.inode_block(self.fs.file(file).inode);
                self.wait_meta_written(t, &[ino], next(FsyncStep::WaitInode)).unwrap_or(next(FsyncStep::WaitData))
            }
            FsyncStep::WaitData => {
                // filemap_fdatawait: every page of the file under writeback.
                if self.cache.writeback_by_file.get(&file.0).copied().unwrap_or(0) > 0 {
                    let task = &mut self.tasks[t.0 as usize];
                    task.unplug_before_block = true;
                    task.block_after = Some(Block::Fsync(file.0));
                    return next(FsyncStep::WaitData);
                }
                Cont::Finish { bytes: 0 }
            }
        }
    }

    /// `ll_rw_block(WRITE)` on metadata blocks: write those that are dirty and not already
    /// being written (a blocking submission, like any writeback bio).
    fn write_meta_blocks(&mut self, mut blocks: Vec<u64>, then: Box<Cont>) -> Cont {
        blocks.sort_unstable();
        blocks.dedup();
        Cont::Writeback(Writeback {
            nr_to_write: i64::MAX,
            nonblocking: false,
            older_than: None,
            only_file: Some(META),
            inodes: VecDeque::new(),
            pages: WbPages::List(blocks.into()),
            file: Some(META),
            written: 0,
            encountered_congestion: false,
            buffers_only: true,
            then,
        })
    }

    /// `wait_on_buffer` for each of `blocks`: if one is being read or written, block until
    /// that I/O completes and return `again` (to check the rest).
    fn wait_meta_written(&mut self, t: TaskId, blocks: &[u64], again: Cont) -> Option<Cont> {
        let p = blocks.iter().filter_map(|&b| self.cache.get(META, b)).find(|&p| {
            let pg = self.cache.page(p);
            pg.writeback || pg.locked
        })?;
        let task = &mut self.tasks[t.0 as usize];
        task.unplug_before_block = true;
        task.block_after = Some(Block::Page(p));
        Some(again)
    }

    // ---------------------------------------------------------------------------------
    // Direct I/O

    fn direct_io(&mut self, t: TaskId, file: FileId, offset: u64, len: u64, write: bool, aio: bool) {
        let first = offset / BLOCK;
        let last = (offset + len).div_ceil(BLOCK);
        let max = self.max_bio_sectors() / SECTORS_PER_BLOCK;
        let iocb = if aio { self.token() } else { 0 };
        let mut fb = first;
        let mut bios = 0;
        while fb < last {
            if self.fs.map(file, fb).is_none() {
                if write {
                    let a = self.fs.allocate(file, fb, self.pid(t));
                    self.inode_dirty.insert(file.0);
                    self.charge(t, self.cfg.cpu.block_alloc);
                    for b in a.meta {
                        self.dirty_meta(b);
                    }
                } else {
                    fb += 1;
                    continue; // a hole reads as zeros
                }
            }
            let start = self.fs.map(file, fb).unwrap();
            let mut n = 1;
            while fb + n < last && n < max && self.fs.map(file, fb + n) == Some(start + n) {
                n += 1;
            }
            self.charge(t, self.cfg.cpu.bio_submit);
            let sector = self.fs.sector(start);
            let op = if write { Op::Write } else { Op::Read };
            // 2.6.20 direct I/O writes are WRITE_SYNC.
            self.queue_bio(
                t,
                op,
                sector,
                (n * SECTORS_PER_BLOCK) as u32,
                true,
                BioKind::Direct { task: t, aio, iocb },
                false,
            );
            bios += 1;
            fb += n;
        }
        if write {
            let end = offset + len;
            let size = self.fs.file(file).size.max(end);
            self.fs.set_size(file, size);
        }
        let task = &mut self.tasks[t.0 as usize];
        if bios > 0 {
            // direct_io_worker: "All IO is now issued, send it on its way" —
            // blk_run_address_space, for synchronous and asynchronous direct I/O alike.
            task.unplug_after_bios = true;
        }
        if aio {
            // One event per iocb; a read of a hole needs no bio and completes at once.
            if bios > 0 {
                task.aio_bios.insert(iocb, bios);
                task.aio_inflight += 1;
            } else {
                task.aio_done += 1;
            }
        } else if bios > 0 {
            task.io_outstanding += bios;
            task.unplug_before_block = true;
            task.block_after = Some(Block::Io);
        }
    }

    // ---------------------------------------------------------------------------------
    // pdflush

    fn step_pdflush(&mut self, t: TaskId, mut p: PdState) -> Cont {
        let (bg, _) = self.dirty_limits();
        match (p.kind, p.phase) {
            (_, 0) => {
                // Acquire the device for writeback (writeback_acquire).
                if self.bdi_writeback {
                    return self.pdflush_idle(t, p.kind);
                }
                self.bdi_writeback = true;
                // background_writeout(min_pages): on while above the background
                // threshold or short of the pages it was asked for.
                if p.kind == PdKind::Background && self.cache.nr_dirty < bg && p.budget <= 0 {
                    return self.pdflush_idle(t, p.kind);
                }
                if p.kind == PdKind::Kupdate {
                    p.budget = self.cache.nr_dirty as i64 + 1;
                }
                p.phase = 1;
                let older = (p.kind == PdKind::Kupdate).then(|| self.now - self.cfg.host.dirty_expire);
                let then = Box::new(Cont::Pdflush(PdState { phase: 2, ..p }));
                self.writeback_cont(MAX_WRITEBACK_PAGES, true, older, None, then)
            }
            (_, 2) => {
                let (written, congested) = self.tasks[t.0 as usize].wb_result();
                self.bdi_writeback = false;
                p.budget -= match p.kind {
                    PdKind::Background => written,
                    PdKind::Kupdate => MAX_WRITEBACK_PAGES,
                };
                let wrote_less = written < MAX_WRITEBACK_PAGES;
                let more = match p.kind {
                    PdKind::Background => self.cache.nr_dirty >= bg || p.budget > 0,
                    PdKind::Kupdate => p.budget > 0,
                };
                if wrote_less {
                    if congested {
                        // congestion_wait, then go on.
                        p.phase = 3;
                        let token = self.token();
                        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                        return Cont::Pdflush(p);
                    }
                    if p.kind == PdKind::Background {
                        let token = self.token();
                        p.phase = 4;
                        self.tasks[t.0 as usize].block_after = Some(Block::Congestion { token, timeout: HZ_10 });
                        return Cont::Pdflush(p);
                    }
                    return self.pdflush_idle(t, p.kind);
                }
                if !more {
                    return self.pdflush_idle(t, p.kind);
                }
                p.phase = 0;
                Cont::Pdflush(p)
            }
            (_, 3) => {
                p.phase = 0;
                Cont::Pdflush(p)
            }
            _ => self.pdflush_idle(t, p.kind),
        }
    }

    fn pdflush_idle(&mut self, t: TaskId, kind: PdKind) -> Cont {
        if kind == PdKind::Background {
            self.background_running = false;
        }
        self.bdi_writeback = false;
        self.tasks[t.0 as usize].block_after = Some(Block::Sleep { token: 0 });
        Cont::Pdflush(PdState { kind, phase: 0, budget: 0 })
    }

    fn kupdate(&mut self) {
        let wi = self.cfg.host.writeback_interval;
        self.engine.schedule(self.now + wi, Ev::Kupdate);
        self.pdflush_operation(PdKind::Kupdate, 0);
    }

    // ---------------------------------------------------------------------------------
    // Completions and queue events

    fn bio_completed(&mut self, id: ReqId, status: Status) {
        let Some(bio) = self.bios.remove(&id) else {
            return;
        };
        self.owners_by_bio.remove(&id);
        if bio.write {
            self.stats.bytes_written += bio.bytes;
            self.sample.bo += bio.bytes;
        } else {
            self.stats.bytes_read += bio.bytes;
            self.sample.bi += bio.bytes;
        }
        match bio.kind {
            BioKind::CacheRead(pages) => {
                for p in pages {
                    self.cache.read_done(p);
                    if let Some(ws) = self.page_waiters.remove(&p) {
                        if self.cfg.host.lock_page_exclusive && self.cache.page(p).file != META {
                            // A file page's readers wait in lock_page, which queues them
                            // in order on this host; a metadata block's in
                            // wait_on_buffer, at the head.
                            for w in ws {
                                self.wake(w);
                            }
                        } else {
                            self.wake_all(ws);
                        }
                    }
                }
            }
            BioKind::CacheWrite(pages) => {
                let mut files = Vec::new();
                for p in pages {
                    let f = self.cache.page(p).file;
                    self.cache.end_writeback(p);
                    if !files.contains(&f) {
                        files.push(f);
                    }
                    // wait_on_buffer (an fsync waiting for its metadata blocks).
                    if f == META
                        && let Some(ws) = self.page_waiters.remove(&p)
                    {
                        self.wake_all(ws);
                    }
                }
                for f in files {
                    if self.cache.writeback_by_file.get(&f).is_none_or(|&n| n == 0)
                        && let Some(ws) = self.fsync_waiters.remove(&f)
                    {
                        self.wake_all(ws);
                    }
                }
                let ws = std::mem::take(&mut self.memory_waiters);
                self.wake_all(ws);
            }
            BioKind::Direct { task, aio, iocb } => {
                let tk = &mut self.tasks[task.0 as usize];
                if status != Status::Ok {
                    tk.io_error = Some(status);
                }
                if aio {
                    let left = tk.aio_bios.get_mut(&iocb).expect("bio of an iocb in flight");
                    *left -= 1;
                    if *left == 0 {
                        tk.aio_bios.remove(&iocb);
                        tk.aio_inflight -= 1;
                        tk.aio_done += 1;
                        if let State::Blocked(Block::Aio { min }) = tk.state
                            && (tk.aio_done >= min || tk.aio_inflight == 0)
                        {
                            self.wake(task);
                        }
                    }
                } else {
                    tk.io_outstanding -= 1;
                    if tk.io_outstanding == 0 && tk.state == State::Blocked(Block::Io) {
                        self.wake(task);
                    }
                }
            }
        }
    }

    /// Collected AIO completions (clears the count).
    pub fn take_aio_done(&mut self, t: TaskId) -> u32 {
        std::mem::take(&mut self.tasks[t.0 as usize].aio_done)
    }

    fn handle_timer(&mut self, t: TaskId, token: u64) {
        let task = &self.tasks[t.0 as usize];
        let matches = match &task.state {
            State::Blocked(Block::Sleep { token: tk })
            | State::Blocked(Block::Congestion { token: tk, .. })
            | State::Blocked(Block::Memory { token: tk }) => *tk == token,
            _ => false,
        };
        if matches {
            self.congestion_waiters.retain(|&w| w != t);
            self.memory_waiters.retain(|&w| w != t);
            self.make_runnable(t);
        }
    }

    fn take_sample(&mut self) {
        let sec = self.now.as_nanos() / 1_000_000_000;
        let mut runnable = 0;
        let mut blocked = 0;
        for task in &self.tasks {
            if task.pdflush {
                continue;
            }
            match &task.state {
                State::Runnable | State::Running | State::Burning | State::Submitting => runnable += 1,
                State::Blocked(
                    Block::Page(_)
                    | Block::Io
                    | Block::Slot(_)
                    | Block::Fsync(_)
                    | Block::Congestion { .. }
                    | Block::Aio { .. },
                ) => blocked += 1,
                _ => {}
            }
        }
        let busy = self.cpu_busy_sample.min(Duration::from_secs(1) * self.cfg.cpu.cpus);
        let total = Duration::from_secs(1) * self.cfg.cpu.cpus;
        let pct = |d: Duration| (d.as_nanos() * 100 / total.as_nanos().max(1)) as u32;
        let sy = pct(self.cpu_sys_sample.min(busy));
        let us = pct(busy).saturating_sub(sy);
        let idle = 100u32.saturating_sub(us + sy);
        let wa = if blocked > 0 { idle } else { 0 };
        let line = VmstatLine {
            second: sec,
            r: runnable,
            b: blocked,
            free_kb: self.cache.free() * 4,
            cache_kb: self.cache.used() * 4,
            dirty_kb: self.cache.nr_dirty * 4,
            bi: self.sample.bi / 1024,
            bo: self.sample.bo / 1024,
            us,
            sy,
            id: idle - wa,
            wa,
        };
        self.stats.vmstat.push(line);
        self.sample = VmstatLine::default();
        self.cpu_busy_sample = Duration::ZERO;
        self.cpu_sys_sample = Duration::ZERO;
        self.engine.schedule(self.now + Duration::from_secs(1), Ev::Sample);
    }

    fn done(&self) -> bool {
        self.stopped
            || (!self.watched.is_empty()
                && self.watched.iter().all(|&t| self.tasks[t.0 as usize].state == State::Exited))
    }

    fn trace_line(&mut self, letter: &str, id: ReqId, rq: Option<&Request>) {
        let Some(tr) = &mut self.trace else { return };
        let t = self.now.as_nanos();
        let (owner, rwbs, sector, len) = match rq {
            Some(r) => (
                r.owner.0,
                if r.op == Op::Write { if r.sync { "WS" } else { "W" } } else { "R" },
                r.sector,
                r.len_sectors,
            ),
            None => (0, "N", 0, 0),
        };
        tr.push(format!(
            "8,0    0 {:8} {:5}.{:09} {:5} {:>2} {:>3} {} + {} [{}]",
            id,
            t / 1_000_000_000,
            t % 1_000_000_000,
            owner,
            letter,
            rwbs,
            sector,
            len,
            owner
        ));
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

/// Read-ahead I/O performed on behalf of a task.
struct HostRa<'a> {
    sim: &'a mut Sim,
    t: TaskId,
    file: FileId,
}

impl RaIo for HostRa<'_> {
    fn readahead(&mut self, a: RaAction) -> RaOutcome {
        self.sim.do_readahead(self.t, self.file, a)
    }
}

impl Env for Sim {
    fn now(&mut self) -> Instant {
        self.now
    }

    fn issue(&mut self, now: Instant, rq: &Request, _segments: Segments<'_>) {
        self.device.submit(now, DiskCommand { id: rq.id, op: rq.op, sector: rq.sector, len_sectors: rq.len_sectors });
        if self.device_inflight == 0 {
            self.device_busy_since = Some(now);
        }
        self.device_inflight += 1;
        self.device_next = self.device.poll_timeout();
        if self.trace.is_some() {
            self.trace_line("D", rq.id, Some(rq));
            self.traced_inflight.insert(rq.id, *rq);
        }
    }

    fn notify(&mut self, _now: Instant, ev: &Event) {
        match *ev {
            Event::Queued { id } | Event::Merged { id, .. } => {
                if matches!(ev, Event::Merged { .. })
                    && let Some(b) = self.traced_bio.take().filter(|b| b.id == id)
                {
                    self.trace_line("M", id, Some(&b));
                }
                if let Some((t, bid)) = self.awaiting
                    && bid == id
                {
                    self.awaiting = None;
                    self.tasks[t.0 as usize].state = State::Running;
                    self.ready.push_back(t);
                }
            }
            Event::Sleep { id } => {
                if let Some((t, bid)) = self.awaiting
                    && bid == id
                {
                    self.awaiting = None;
                    self.tasks[t.0 as usize].state = State::Running;
                    self.block(t, Block::Slot(id));
                }
            }
            Event::Admitted { id } => {
                if let Some(t) = self.tasks.iter().position(|tk| tk.state == State::Blocked(Block::Slot(id))) {
                    self.make_runnable(TaskId(t as u32));
                }
            }
            Event::Completed { id, status, .. } => self.bio_completed(id, status),
            Event::Congestion { dir, congested } => {
                match dir {
                    Dir::Read => self.read_congested = congested,
                    Dir::Write => self.write_congested = congested,
                }
                if dir == Dir::Write && !congested {
                    let ws = std::mem::take(&mut self.congestion_waiters);
                    self.wake_all(ws);
                }
            }
            _ => {}
        }
    }

    fn wait(&mut self, deadline: Option<Instant>) -> Wake {
        loop {
            // The outside world, every 1024 turns of the loop (tasks running count too, so
            // a run whose time stands still still sees the interrupt): publish the clock
            // and look at the interrupt flag. Neither changes what the run computes.
            self.turns = self.turns.wrapping_add(1);
            if self.turns.is_multiple_of(1024) && self.look_outside() {
                self.stopped = true;
                return Wake::Stop;
            }
            if let Some(i) = self.pending.pop_front() {
                return Wake::Input(i);
            }
            debug_assert!(self.awaiting.is_none(), "a submitted bio got no admission");
            if let Some(t) = self.ready.pop_front() {
                self.run_task(t);
                continue;
            }
            if self.done() {
                return Wake::Stop;
            }
            let next_ev = self.engine.peek_time();
            let next_dev = self.device_next;
            let next = match (next_ev, next_dev) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(d) = deadline
                && next.is_none_or(|n| d <= n)
            {
                self.now = self.now.max(d);
                return Wake::Timeout;
            }
            let Some(next) = next else {
                // Nothing can happen any more.
                return Wake::Stop;
            };
            self.now = self.now.max(next);
            if next_dev == Some(next) {
                while let Some(c) = self.device.poll_completion(self.now) {
                    self.device_inflight -= 1;
                    self.stats.requests_completed += 1;
                    if self.device_inflight == 0
                        && let Some(s) = self.device_busy_since.take()
                    {
                        self.stats.device_busy += self.now - s;
                    }
                    if self.trace.is_some() {
                        let rq = self.traced_inflight.remove(&c.id);
                        self.trace_line("C", c.id, rq.as_ref());
                    }
                    self.pending.push_back(Input::Completion { id: c.id, status: Status::Ok });
                }
                self.device_next = self.device.poll_timeout();
                continue;
            }
            let (_, ev) = self.engine.pop().unwrap();
            match ev {
                Ev::CpuDone { task, cpu, token } => {
                    let tk = &mut self.tasks[task.0 as usize];
                    if tk.burn_token != token || tk.state != State::Burning {
                        continue; // preempted: this burn was cut short
                    }
                    tk.burn_token += 1;
                    let d = tk.debt;
                    tk.sleep_avg = tk.sleep_avg.saturating_sub(d);
                    let user = std::mem::take(&mut tk.user_debt).min(d);
                    tk.debt = Duration::ZERO;
                    tk.cpu_time += d;
                    tk.slice_used += d;
                    self.cpu_busy_sample += d;
                    self.cpu_sys_sample += d - user;
                    debug_assert_eq!(tk.cpu, Some(cpu));
                    tk.state = State::Running;
                    self.run_task(task);
                }
                Ev::Timer { task, token } => self.handle_timer(task, token),
                Ev::Kupdate => self.kupdate(),
                Ev::Sample => self.take_sample(),
                Ev::Stop => self.stopped = true,
                Ev::Limit => {
                    self.stopped = true;
                    self.ended = Some(Ended::SimTimeLimit);
                }
            }
        }
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
