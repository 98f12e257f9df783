//! fio job files on a real target: the jobs of an `iosched_benchmarks::fio::JobSet` through
//! our queue and runtime, each job thread an `iosched_benchmarks::fio::thread::JobThread`
//! — the simulated `iosched fio`'s state machine: the same I/Os, limits, think time,
//! rates, syncs and log replay — on an OS thread of its own, as fio runs a job; reported
//! as fio reports (`iosched_benchmarks::fio::report`).
//!
//! - **The target holds the jobs' files back to back**, in job order (a name used twice is
//!   one file; a replayed log's files are its own, each as large as its furthest I/O),
//!   each file its `size / nrfiles` bytes from `offset`: a file or device of their total
//!   size. Jobs that read lay it out first, as fio lays out a new file.
//! - **Groups**: the jobs between two `stonewall`s run one phase after another (`new_group`
//!   alone starts a reporting group, not a wait, as in fio); the jobs of a phase,
//!   numjobs clones included, run together, each its own owner (a process to the
//!   scheduler) at its `prioclass`/`prio`. A job with `wait_for=NAME` starts once every
//!   thread of NAME has ended.
//! - **The thread's ops**: a sync engine's I/O is submitted and waited for; an async
//!   engine's is submitted and reaped later (completions in any order, latency taken at
//!   the reap as fio takes it); sleeps sleep, `thinktime_spin` spins; a sync is a flush
//!   through the queue (`fsync` of the target). Open and close do nothing: the target is
//!   open for the whole run.
//!
//! Refused, with the job named: buffered jobs (`direct=0`: the runtime bypasses the page
//! cache, so a buffered job's I/O would not be what the kernel sends; run it with `iosched
//! fio` in the simulator), and what this executor does not carry out: `mmap`, trim,
//! `filesize` and percentages. Block sizes, regions and a replayed
//! log's I/Os must be whole 4 KiB blocks (O_DIRECT).

use super::{Control, Ended};
use crate::error::{Error, IoError};
use crate::runtime::{Completion, Handle, Options, Report as RtReport, Target};
use crate::sys::{ALIGN, IoBuf};
use iosched_benchmarks::fio::job::{Engine, Job, JobSet, Pattern};
use iosched_benchmarks::fio::report::{JobResult, Report};
use iosched_benchmarks::fio::stream::Region;
use iosched_benchmarks::fio::thread::{Flows, JobThread, Outcome, Reaped, Terminator, ThreadOp};
use iosched_benchmarks::fio::value::SizeOrPercent;
use iosched_core::Op;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What this executor refuses, by the job.
fn check(j: &Job) -> Result<(), Error> {
    let bad = |m: &str| Err(Error(format!("{}: job `{}`: {m}", j.origin, j.section)));
    if !j.direct {
        return bad(
            "direct=0 (buffered): the real runtime bypasses the page cache (O_DIRECT), so a buffered job's I/O \
             would not be what the kernel sends; run it in the simulator (`iosched fio`)",
        );
    }
    let unsupported = [
        (j.ioengine == Engine::Mmap, "ioengine=mmap"),
        (matches!(j.rw, Pattern::Trim | Pattern::RandTrim | Pattern::TrimWrite | Pattern::RandTrimWrite), "trim"),
        (j.filesize.is_some(), "filesize"),
        (j.offload, "io_submit_mode=offload"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|u| u.0) {
        return bad(&format!("{what}: not carried out on real targets yet (the simulator's `iosched fio` runs it)"));
    }
    if let Some(v) = &j.verify {
        return bad(&format!(
            "verify={v}: fio's checksums of its own buffers are not written here (the runtime writes its own \
             fill), so nothing could be checked; run it in the simulator (`iosched fio`), which reads back what \
             was written"
        ));
    }
    if let Some(k) = j.data_options.first() {
        return bad(&format!(
            "{k}: fio's buffer contents are not written here (the runtime writes its own fill), and a device that \
             compresses or dedupes would see other data; run it in the simulator (`iosched fio`), whose disk does \
             not look at data"
        ));
    }
    iosched_benchmarks::fio::thread::check(j).or_else(|e| bad(&e))?;
    if let Some(log) = &j.iolog {
        if j.loops > 1 {
            return bad("loops with read_iolog: a log is replayed once");
        }
        let a = ALIGN as u64;
        if let Some(e) = log.entries.iter().find(|e| !e.offset.is_multiple_of(a) || !e.len.is_multiple_of(a)) {
            return bad(&format!(
                "read_iolog: an I/O of {} bytes at offset {}: O_DIRECT needs whole {ALIGN}-byte blocks",
                e.len, e.offset
            ));
        }
        return Ok(());
    }
    let bytes = |v: SizeOrPercent, what: &str| match v {
        SizeOrPercent::Bytes(b) => Ok(b),
        SizeOrPercent::Percent(_) => {
            Err(Error(format!("{}: job `{}`: {what} as a percentage: give bytes", j.origin, j.section)))
        }
    };
    bytes(j.offset, "offset")?;
    bytes(j.offset_increment, "offset_increment")?;
    if let Some(s) = j.size {
        bytes(s, "size")?;
    } else {
        return bad("no size: give size=");
    }
    let sizes: Vec<u64> =
        j.bs.iter()
            .copied()
            .chain(j.bsrange.iter().flatten().flat_map(|r| [r.0, r.1]))
            .chain(j.bssplit.iter().flatten().flatten().map(|e| e.0))
            .collect();
    if let Some(b) = sizes.iter().find(|&&b| !b.is_multiple_of(ALIGN as u64)) {
        return bad(&format!("block size {b}: O_DIRECT needs whole multiples of {ALIGN} bytes"));
    }
    Ok(())
}

/// A job thread to run: its state machine, where its files start on the target, its
/// reporting group, phase and `wait_for`.
struct Thread {
    thread: JobThread,
    /// Its number among the run's threads, from 0 (for the `exitall` [`Terminator`]).
    number: usize,
    bases: Vec<u64>,
    phase: u32,
    prio: Option<iosched_core::IoPrio>,
}

/// What a job thread leaves: its result, its `write_iolog`, its first error.
type ThreadEnd = (Option<JobResult>, Option<(String, String)>, Option<IoError>);

/// The threads of each job still running, by job name (for `wait_for`).
type Running = (Mutex<HashMap<String, usize>>, Condvar);

/// How long a sleep runs before looking at the stop flag again.
const STOP_POLL: Duration = Duration::from_millis(20);

/// A job thread's state machine and what its executor knows about it, shared between
/// the job's OS thread and the completion callbacks on the runtime's dispatcher thread.
///
/// While the machine waits in a reap (`parked`), completions step it on the dispatcher
/// thread and submit the I/Os it then asks for there, as fio's reap-then-submit loop
/// does in one thread; anything else it asks for (a sleep, a sync, the end) is handed to
/// the job's thread (`handoff`), which carries out all ops that block.
struct Driven {
    thread: JobThread,
    bases: Vec<u64>,
    /// Waiting in a reap of at least `min` completions.
    parked: bool,
    min: u32,
    /// Completions not yet given to the machine: successes by token, and how many ended
    /// (failures included, which a reap counts too).
    done: Vec<u64>,
    ended: u32,
    /// The op the dispatcher thread hands back to the job's thread.
    handoff: Option<ThreadOp>,
    /// A blocking I/O's result.
    sync: Option<Result<u32, IoError>>,
    /// Buffers back from completed I/Os, for the next ones (the data is not looked at).
    bufs: Vec<IoBuf>,
    error: Option<IoError>,
}

/// One job thread's shared part.
struct JobRun {
    state: Mutex<Driven>,
    wake: Condvar,
    handle: Handle,
    epoch: Instant,
    stop: Arc<AtomicBool>,
    /// The run's completed I/Os, for the progress display.
    done: Arc<AtomicU64>,
}

/// A lock, whoever panicked holding it before.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn now_of(epoch: Instant) -> iosched_core::Instant {
    iosched_core::Instant::from_nanos(epoch.elapsed().as_nanos() as u64)
}

impl Driven {
    fn fail(&mut self, e: IoError) {
        self.error.get_or_insert(e);
        self.thread.stop_issuing();
    }
}

/// Submit the machine's I/O: a queued one's completion steps the machine (or waits for
/// its next reap); a blocking one's result is for the job's thread.
fn submit(job: &Arc<JobRun>, d: &mut Driven, io: ThreadOp) {
    let ThreadOp::Io { write, file, offset, len, queued, token, prio } = io else { unreachable!("an I/O") };
    let buf = match d.bufs.iter().rposition(|b| b.len() == len as usize) {
        Some(i) => d.bufs.swap_remove(i),
        None => {
            let mut b = IoBuf::new(len as usize);
            b.fill(0xa5);
            b
        }
    };
    let op = if write { Op::Write } else { Op::Read };
    let j = Arc::clone(job);
    let prio = prio.unwrap_or(job.handle.prio());
    let sent = job.handle.submit_with_prio(op, d.bases[file] + offset, buf, prio, move |c: Completion| {
        let mut d = lock(&j.state);
        if let Some(b) = c.buf {
            d.bufs.push(b);
        }
        if !queued {
            d.sync = Some(c.result);
            j.wake.notify_all();
            return;
        }
        d.ended += 1;
        j.done.fetch_add(1, Ordering::Relaxed);
        match c.result {
            Ok(_) => d.done.push(token),
            Err(e) => {
                d.thread.forget(token);
                d.fail(e);
            }
        }
        if d.parked && d.ended >= d.min {
            d.parked = false;
            // One clock reading for the reap and the submissions it leads to.
            let now = now_of(j.epoch);
            let op = reaped(&j, &mut d, now);
            step(&j, &mut d, op, now);
        }
    });
    if let Err(e) = sent {
        d.fail(e);
        if queued {
            d.thread.forget(token);
        } else {
            d.sync = Some(Err(IoError::Stopped));
        }
    }
}

/// Give the machine the completions so far (a reap's outcome); its next op.
fn reaped(job: &JobRun, d: &mut Driven, now: iosched_core::Instant) -> ThreadOp {
    if job.stop.load(Ordering::Relaxed) {
        d.thread.stop_issuing();
    }
    let done = std::mem::take(&mut d.done);
    d.ended = 0;
    d.thread.next(now, Outcome::Reaped(Reaped::These(done)))
}

/// Carry out the machine's ops that do not block — submissions, and reaps that wait —
/// from `op` on, at `now` (a submission's latency starts at the reading that led to it,
/// microseconds early at most); hand any other op to the job's thread.
fn step(job: &Arc<JobRun>, d: &mut Driven, mut op: ThreadOp, now: iosched_core::Instant) {
    loop {
        match op {
            ThreadOp::Io { queued: true, .. } => {
                submit(job, d, op);
                if job.stop.load(Ordering::Relaxed) {
                    d.thread.stop_issuing();
                }
                op = d.thread.next(now, Outcome::None);
            }
            ThreadOp::Reap { min } if d.ended < min => {
                d.parked = true;
                d.min = min;
                return;
            }
            ThreadOp::Reap { .. } => op = reaped(job, d, now),
            other => {
                d.handoff = Some(other);
                job.wake.notify_all();
                return;
            }
        }
    }
}

/// Run one job thread's machine until it exits: the ops that block here, the rest through
/// [`step`]. Returns the machine and the first I/O error (which stopped its issuing;
/// what was queued came back first).
fn drive(job: &Arc<JobRun>) -> Option<IoError> {
    let mut op = {
        let mut d = lock(&job.state);
        d.thread.next(now_of(job.epoch), Outcome::None)
    };
    loop {
        let mut outcome = Outcome::None;
        match op {
            ThreadOp::Sleep(dur) => {
                let until = Instant::now() + dur;
                while !job.stop.load(Ordering::Relaxed) {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    std::thread::sleep(left.min(STOP_POLL));
                }
            }
            ThreadOp::Spin(dur) => {
                let until = Instant::now() + dur;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
            ThreadOp::Open(_) | ThreadOp::Close(_) => {}
            ThreadOp::Io { queued: false, .. } => {
                let mut d = lock(&job.state);
                submit(job, &mut d, op);
                while d.sync.is_none() {
                    d = job.wake.wait(d).unwrap_or_else(|e| e.into_inner());
                }
                outcome = match d.sync.take().expect("waited") {
                    Ok(n) => {
                        job.done.fetch_add(1, Ordering::Relaxed);
                        Outcome::Moved(n as u64)
                    }
                    Err(IoError::Stopped) if d.error.is_some() => Outcome::Failed,
                    Err(e) => {
                        d.fail(e);
                        Outcome::Failed
                    }
                };
            }
            ThreadOp::Fsync { .. } => {
                if let Err(e) = job.handle.fsync() {
                    lock(&job.state).fail(e);
                }
            }
            ThreadOp::Exit => {
                return lock(&job.state).error.take();
            }
            queued_or_reap => {
                // Submissions and reaps: stepped here until an op that blocks comes back,
                // by this thread or by a completion on the dispatcher thread.
                let mut d = lock(&job.state);
                step(job, &mut d, queued_or_reap, now_of(job.epoch));
                while d.handoff.is_none() {
                    d = job.wake.wait_timeout(d, STOP_POLL).unwrap_or_else(|e| e.into_inner()).0;
                    if job.stop.load(Ordering::Relaxed) {
                        d.thread.stop_issuing();
                    }
                }
                op = d.handoff.take().expect("waited");
                continue;
            }
        }
        let mut d = lock(&job.state);
        if job.stop.load(Ordering::Relaxed) {
            d.thread.stop_issuing();
        }
        op = d.thread.next(now_of(job.epoch), outcome);
    }
}

/// A run on a real target.
#[derive(Debug)]
pub struct FioRun {
    /// fio's report of the jobs (a stopped or failed run's covers what they did).
    pub report: Report,
    /// The runtime's own report of the run.
    pub runtime: RtReport,
    pub ended: Ended,
    /// Each `write_iolog=`: (the path as the job gives it, the log's text, fio iolog v3),
    /// in job order; the caller writes them.
    pub iologs: Vec<(String, String)>,
    /// The jobs' wall time (the target's opening and layout not counted), and the
    /// process's CPU time in it.
    pub wall: Duration,
    pub cpu: Duration,
}

/// Run `jobs` on `path` with the scheduler in `opts`; `seed` is the run's (fio's
/// `randrepeat=0` streams follow it).
pub fn run(path: &Path, mut opts: Options, jobs: &JobSet, seed: u64, ctl: &Control) -> Result<FioRun, Error> {
    for j in &jobs.jobs {
        check(j)?;
    }
    // The files back to back on the target, in the order the jobs first name them.
    let mut placed: BTreeMap<String, u64> = BTreeMap::new();
    let mut end = 0u64;
    for (name, size) in jobs.files().expect("checked") {
        if !size.is_multiple_of(ALIGN as u64) {
            return Err(Error(format!(
                "file {name}: {size} bytes: O_DIRECT needs whole {ALIGN}-byte blocks; give a size that is"
            )));
        }
        placed.insert(name, end);
        end += size;
    }
    let mut threads = Vec::new();
    let mut flows = Flows::default();
    let mut number = 0;
    for (ji, job) in jobs.jobs.iter().enumerate() {
        for clone in 0..job.numjobs {
            number += 1;
            let (regions, bases): (Vec<Region>, Vec<u64>) = match job.replay_files() {
                Some(files) => files.iter().map(|(n, size)| (Region { start: 0, len: *size }, placed[n])).unzip(),
                None => {
                    let (start, per_file) = job.file_region(clone).expect("checked");
                    if !start.is_multiple_of(ALIGN as u64) || !per_file.is_multiple_of(ALIGN as u64) {
                        return Err(Error(format!(
                            "{}: job `{}`: offset {start} and {per_file} bytes per file: O_DIRECT needs whole \
                             {ALIGN}-byte blocks",
                            job.origin, job.section
                        )));
                    }
                    job.file_names(clone).iter().map(|n| (Region { start, len: per_file }, placed[n])).unzip()
                }
            };
            let mut thread = JobThread::new(job, jobs.groups[ji], clone, regions, number, seed);
            flows.join(&mut thread);
            threads.push(Thread {
                thread,
                number: number as usize - 1,
                bases,
                phase: jobs.phases[ji],
                prio: job.ioprio(),
            });
        }
    }
    if opts.size.is_none() {
        opts.size = Some(end);
    }
    opts.lay_out = jobs.jobs.iter().any(|j| j.rw.reads() || j.iolog.is_some());
    opts.writes = jobs.jobs.iter().any(|j| j.rw.writes() || j.iolog.is_some());
    let label = opts.sched.text.clone();
    let target = Target::open(path, opts)?;
    if target.info().data_len < end {
        return Err(Error(format!(
            "{}: data area is {} bytes; the jobs' files need {end}",
            path.display(),
            target.info().data_len
        )));
    }
    let report = |jobs_done: Vec<JobResult>| Report {
        world: format!("real, {}", path.display()),
        global_options: jobs.global_options.clone(),
        scheduler: label.clone(),
        seed,
        jobs: jobs_done,
        warnings: jobs.warnings.clone(),
        // The target's counters span its layout as well as the jobs: not fio's window.
        disk: None,
    };
    let epoch = Instant::now();
    let cpu0 = crate::sys::process_cpu_time();
    let mut results: Vec<JobResult> = Vec::new();
    let mut failure: Option<IoError> = None;
    let mut iologs = Vec::new();
    let running: Running = (Mutex::new(HashMap::new()), Condvar::new());
    let terminator = Mutex::new(Terminator::new(jobs));
    for t in &threads {
        lock(&terminator).add(&t.thread);
    }
    let phases: std::collections::BTreeSet<u32> = threads.iter().map(|t| t.phase).collect();
    let mut waiting = threads;
    for phase in phases {
        let group: Vec<Thread>;
        (group, waiting) = waiting.into_iter().partition(|t| t.phase == phase);
        let done = Arc::new(AtomicU64::new(0));
        let planned = group.iter().map(|t| t.thread.planned_ios()).sum::<Option<u64>>();
        {
            let mut r = lock(&running.0);
            for t in &group {
                *r.entry(t.thread.job().name.clone()).or_insert(0) += 1;
            }
        }
        let done: Vec<ThreadEnd> = std::thread::scope(|s| {
            let handles: Vec<_> = group
                .into_iter()
                .map(|t| {
                    let mut handle = target.handle();
                    if let Some(p) = t.prio {
                        handle.set_prio(p);
                    }
                    handle.set_unplug(true);
                    let running = &running;
                    let terminator = &terminator;
                    let stop = Arc::clone(&ctl.stop);
                    let done = Arc::clone(&done);
                    s.spawn(move || {
                        let name = t.thread.job().name.clone();
                        if let Some(waitee) = t.thread.job().wait_for.clone() {
                            let mut r = lock(&running.0);
                            while r.get(&waitee).is_some_and(|n| *n > 0) && !stop.load(Ordering::Relaxed) {
                                r = running.1.wait_timeout(r, STOP_POLL).unwrap_or_else(|e| e.into_inner()).0;
                            }
                        }
                        let state = Driven {
                            thread: t.thread,
                            bases: t.bases,
                            parked: false,
                            min: 0,
                            done: Vec::new(),
                            ended: 0,
                            handoff: None,
                            sync: None,
                            bufs: Vec::new(),
                            error: None,
                        };
                        let job = Arc::new(JobRun {
                            state: Mutex::new(state),
                            wake: Condvar::new(),
                            handle,
                            epoch,
                            stop,
                            done,
                        });
                        lock(terminator).started(t.number);
                        let err = drive(&job);
                        lock(terminator).ended(t.number);
                        // The completion callbacks hold the job until they have run.
                        let job = super::take_when_released(job);
                        let mut thread = job.state.into_inner().unwrap_or_else(|e| e.into_inner()).thread;
                        let result = thread.take_result().or_else(|| thread.stop_result(now_of(epoch)));
                        let iolog = thread.take_iolog();
                        let mut r = lock(&running.0);
                        if let Some(n) = r.get_mut(&name) {
                            *n -= 1;
                        }
                        running.1.notify_all();
                        (result, iolog, err)
                    })
                })
                .collect();
            // Progress for the caller, about every 200 ms (`total`: the I/Os the phase's
            // jobs issue, unless one runs for a time).
            let mut last = Instant::now();
            while !handles.iter().all(|h| h.is_finished()) {
                std::thread::sleep(Duration::from_millis(20));
                if let Some(cb) = &ctl.progress
                    && last.elapsed() >= Duration::from_millis(200)
                {
                    last = Instant::now();
                    let what = format!("{label} fio phase {}", phase + 1);
                    cb(super::Tick { what: &what, done: done.load(Ordering::Relaxed), total: planned });
                }
            }
            handles.into_iter().map(|h| h.join().expect("fio job thread")).collect()
        });
        for (r, log, e) in done {
            results.extend(r);
            iologs.extend(log);
            if failure.is_none() {
                failure = e;
            }
        }
        if failure.is_some() || ctl.stopped() {
            break;
        }
    }
    let ended = match failure {
        Some(e) => Ended::Failed(e),
        None if ctl.stopped() => Ended::Interrupted,
        None => Ended::Complete,
    };
    let (wall, cpu) = (epoch.elapsed(), crate::sys::process_cpu_time().saturating_sub(cpu0));
    Ok(FioRun { report: report(results), runtime: target.close()?, ended, iologs, wall, cpu })
}
