//! The program API: what a simulated task's program sees ([`ProgCtx`]) and asks for
//! ([`SysOp`]), and what it is told back ([`Outcome`]). A workload is a set of
//! [`Program`]s, sans-IO generators of system calls; the host carries each call out.

use crate::fs::{DirId, FileId, Fs};
use iosched_core::{Duration, Instant, IoPrio, Status};

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
        /// The I/O's own priority (`aio_reqprio` with `IOCB_FLAG_IOPRIO`, Linux 5.0; fio's
        /// `cmdprio_*`): its requests carry it instead of the task's (`ki_ioprio` →
        /// `bi_ioprio`). `None`: the task's.
        prio: Option<IoPrio>,
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

/// One file operation a program made, as [`Sim::log_syscalls`](super::Sim::log_syscalls) keeps them: what strace
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
    /// For `AioWait`: the reaped I/Os, each by its number among the task's `AioSubmit`s
    /// (from 0), in the order they completed.
    pub reaped: Vec<u64>,
}

impl Outcome {
    pub fn latency(&self) -> Duration {
        self.finished - self.started
    }
}

impl std::fmt::Debug for ProgCtx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgCtx").field("now", &self.now).field("task", &self.task).finish_non_exhaustive()
    }
}

/// What a program can see and do when choosing its next operation.
pub struct ProgCtx<'a> {
    pub now: Instant,
    pub task: TaskId,
    /// CPU time this task has used (user + system).
    pub cpu_time: Duration,
    /// Bytes the device has read and written so far (completed requests).
    pub device_read: u64,
    pub device_written: u64,
    pub fs: &'a mut Fs,
    pub(super) counters: &'a mut Vec<u64>,
    pub(super) counter_bumped: &'a mut bool,
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
