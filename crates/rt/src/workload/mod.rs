//! Workloads on real targets: [`tiobench`] (tiotest 0.3.3 semantics, one region of the
//! target per thread like tiotest's raw-device mode), [`readmany`] (read a generated tree
//! of small files while a streaming writer runs), [`fio`] (fio job files, each job thread
//! the simulator's `JobThread`) and [`fio_like`] (a random or sequential load at a fixed
//! queue depth given by a few flags, run as fio jobs by [`fio`], for comparing with fio).
//!
//! All of them stop cleanly when [`Control::stop`] is set (Ctrl-C in the CLI) and return
//! what they measured so far, and stop at the first per-request error, which they return
//! with the partial results.

pub mod fio;
pub mod fio_like;
pub mod readmany;
pub mod tiobench;

use crate::error::IoError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Where a workload stands, for a progress display the caller draws: `what` is running,
/// `done` of `total` operations are complete (`total` is `None` for a timed run).
#[derive(Clone, Copy, Debug)]
pub struct Tick<'a> {
    pub what: &'a str,
    pub done: u64,
    pub total: Option<u64>,
}

/// A caller's progress display: called about every 200 ms while a workload runs, and once
/// with `done == total` (or, timed, at the end). The library draws nothing itself.
pub type OnProgress = Arc<dyn Fn(Tick<'_>) + Send + Sync>;

/// Run control shared by a workload's threads.
#[derive(Clone, Default)]
pub struct Control {
    /// Set to stop the run: the caller owns it (the CLI sets it on SIGINT and SIGTERM);
    /// the workload's threads finish their current request and the report covers what ran.
    pub stop: Arc<AtomicBool>,
    /// Progress for the caller to show (the CLI draws it on a terminal); `None`: none.
    pub progress: Option<OnProgress>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control").field("stop", &self.stop).field("progress", &self.progress.is_some()).finish()
    }
}

impl Control {
    /// No progress display, not stopped.
    pub fn new() -> Control {
        Control { stop: Arc::new(AtomicBool::new(false)), progress: None }
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Why a workload ended early.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// Ran to completion.
    Complete,
    /// Stopped by the user.
    Interrupted,
    /// A request failed (the error names the offset).
    Failed(IoError),
}

impl Ended {
    pub fn is_complete(&self) -> bool {
        *self == Ended::Complete
    }
}

/// SplitMix64: the core's generator (seeded with `Rng::from_state`).
pub use iosched_core::Rng;

/// Progress of one phase, handed to [`Control::progress`] at most every 200 ms.
pub(crate) struct Progress {
    cb: Option<OnProgress>,
    label: String,
    total: u64,
    last: Instant,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress").field("label", &self.label).field("total", &self.total).finish()
    }
}

impl Progress {
    pub(crate) fn new(ctl: &Control, label: String, total: u64) -> Progress {
        Progress { cb: ctl.progress.clone(), label, total: total.max(1), last: Instant::now() - Duration::from_secs(1) }
    }
    pub(crate) fn tick(&mut self, done: &AtomicU64) {
        let Some(cb) = &self.cb else { return };
        if self.last.elapsed() < Duration::from_millis(200) {
            return;
        }
        self.last = Instant::now();
        let d = done.load(Ordering::Relaxed).min(self.total);
        cb(Tick { what: &self.label, done: d, total: Some(self.total) });
    }
    pub(crate) fn finish(&self) {
        if let Some(cb) = &self.cb {
            cb(Tick { what: &self.label, done: self.total, total: Some(self.total) });
        }
    }
}

/// Wait for scoped threads while showing progress.
pub(crate) fn wait_with_progress<T>(
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    p: &mut Progress,
    done: &AtomicU64,
) {
    while !handles.iter().all(|h| h.is_finished()) {
        p.tick(done);
        std::thread::sleep(Duration::from_millis(20));
    }
    p.finish();
}

/// Join threads that return `(result, end time)` (see [`ended`]); the results and the
/// time from `t0` to the last end — a phase's wall time, not when the progress poll
/// noticed the last thread.
pub(crate) fn join_timed<T>(
    handles: Vec<std::thread::ScopedJoinHandle<'_, (T, Instant)>>,
    t0: Instant,
) -> (Vec<T>, Duration) {
    let ended: Vec<(T, Instant)> = handles.into_iter().map(|h| h.join().expect("workload thread")).collect();
    let last = ended.iter().map(|e| e.1).max().unwrap_or(t0);
    (ended.into_iter().map(|e| e.0).collect(), last.saturating_duration_since(t0))
}

/// Run a thread's work and note when it ended (for [`join_timed`]).
pub(crate) fn ended<T>(work: impl FnOnce() -> T) -> (T, Instant) {
    let r = work();
    (r, Instant::now())
}

/// What a job's completion callbacks share, once the last callback holding a clone of it
/// has let go (the callback's closure is dropped right after it ran).
pub(crate) fn take_when_released<T>(sh: Arc<T>) -> T {
    while Arc::strong_count(&sh) > 1 {
        std::thread::yield_now();
    }
    let Ok(inner) = Arc::try_unwrap(sh) else { unreachable!("no callback outstanding") };
    inner
}

/// The first error of a set of thread results, if any.
pub(crate) fn first_error(errs: impl IntoIterator<Item = Option<IoError>>) -> Option<IoError> {
    errs.into_iter().flatten().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_bounded() {
        let mut a = Rng::from_state(7);
        let mut b = Rng::from_state(7);
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
    }
}
