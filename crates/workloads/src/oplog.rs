//! The operation log: every system call a simulated tool's tasks made, with when it
//! returned and what — recorded when a workload's `record_ops` is set, for tests that check
//! a tool's call pattern against the original (sysbench, iozone, aio-stress).

use iosched_core::{Duration, Instant, IoPrio};
use iosched_sim::{Outcome, ProgCtx, Program, SysOp};
use std::cell::RefCell;
use std::rc::Rc;

/// One operation a simulated task performed: what the tool asked the kernel for, and
/// when. Recorded when a workload's `record_ops` is set, for tests and traces.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRecord {
    /// The task's name (`sysbench/0`, `iozone`, `aio-stress/1`, …).
    pub task: String,
    /// [`SysOp::kind`]: `read`, `write`, `direct-read`, `aio-submit`, `fsync`, …
    pub kind: &'static str,
    /// Path of the file, for file operations.
    pub file: Option<String>,
    pub offset: u64,
    pub len: u64,
    /// For `aio-submit`, whether it writes; for `aio-wait`, its `min`.
    pub arg: u64,
    /// For `think` and `sleep`, the duration.
    pub duration: Duration,
    /// When the task issued it.
    pub issued: Instant,
    /// When it returned (None for `exit`, or if the run ended first).
    pub returned: Option<Instant>,
    /// What it returned in `Outcome::bytes`.
    pub result: u64,
}

/// A shared log of recorded operations.
pub type OpLog = Rc<RefCell<Vec<OpRecord>>>;

/// A program wrapper that records every operation of the program, and of every program
/// it spawns, into a log.
struct Recorder {
    name: String,
    inner: Box<dyn Program>,
    log: OpLog,
    last: Option<usize>,
}

impl Program for Recorder {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let (Some(i), Some(d)) = (self.last.take(), done) {
            let mut log = self.log.borrow_mut();
            log[i].returned = Some(d.finished);
            log[i].result = d.bytes;
        }
        let op = match self.inner.next(ctx, done) {
            SysOp::Spawn { program, name, prio } => {
                SysOp::Spawn { program: recorded(&name, program, Some(&self.log)), name, prio }
            }
            op => op,
        };
        let (file, offset, len, arg, duration) = match &op {
            SysOp::Read { file, offset, len }
            | SysOp::Write { file, offset, len }
            | SysOp::DirectRead { file, offset, len }
            | SysOp::DirectWrite { file, offset, len }
            | SysOp::MmapRead { file, offset, len }
            | SysOp::MmapWrite { file, offset, len } => (Some(*file), *offset, *len, 0, Duration::ZERO),
            SysOp::AioSubmit { file, offset, len, write, .. } => {
                (Some(*file), *offset, *len, *write as u64, Duration::ZERO)
            }
            SysOp::AioWait { min } => (None, 0, 0, *min as u64, Duration::ZERO),
            SysOp::Fsync { file }
            | SysOp::Open { file }
            | SysOp::Truncate { file }
            | SysOp::Close { file }
            | SysOp::Stat { file } => (Some(*file), 0, 0, 0, Duration::ZERO),
            SysOp::Think(d) | SysOp::Sleep(d) => (None, 0, 0, 0, *d),
            SysOp::WaitCounter { counter, at_least } => (None, *counter as u64, 0, *at_least, Duration::ZERO),
            _ => (None, 0, 0, 0, Duration::ZERO),
        };
        let mut log = self.log.borrow_mut();
        log.push(OpRecord {
            task: self.name.clone(),
            kind: op.kind(),
            file: file.map(|f| ctx.fs.path(f)),
            offset,
            len,
            arg,
            duration,
            issued: ctx.now,
            returned: None,
            result: 0,
        });
        self.last = Some(log.len() - 1);
        op
    }
}

/// `program`, recorded into `log` when there is one.
pub(crate) fn recorded(name: &str, program: Box<dyn Program>, log: Option<&OpLog>) -> Box<dyn Program> {
    match log {
        Some(log) => Box::new(Recorder { name: name.to_string(), inner: program, log: log.clone(), last: None }),
        None => program,
    }
}

/// Spawn a workload's first task, recorded when `log` is set, and watch it.
pub(crate) fn spawn_watched(sim: &mut iosched_sim::Sim, name: &str, program: Box<dyn Program>, log: Option<&OpLog>) {
    let t = sim.spawn(name, recorded(name, program, log), IoPrio::NONE);
    sim.watch(t);
}
