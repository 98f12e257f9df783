//! fio job files in the simulator: the jobs of an `iosched_benchmarks::fio::JobSet` as
//! programs for `iosched-sim`, reported with fio's figures (`backend.c` `thread_main`,
//! `io_u.c` `get_next_offset` / `get_next_buflen`, `stat.c`).
//!
//! What a job does here, as in fio:
//!
//! - **Files**: `filename=` names them (shared by the job's clones), else
//!   `section.jobnum.filenum`, `nrfiles` of them, each `size / nrfiles` bytes from `offset`
//!   (+ `offset_increment` × clone). fio lays out a file that is too small, then drops it
//!   from the cache (`invalidate=1`); here every file exists at its full size before the
//!   jobs start and nothing of it is cached, which is the state fio's layout leaves.
//! - **Groups**: `stonewall` and `new_group` start a reporting group; the jobs between two
//!   `stonewall`s start together, in job order, and start when every job before the
//!   `stonewall` has finished (fio's `run_threads`); a job with `wait_for=NAME` starts once
//!   every thread of the earlier job NAME has exited. Clones (`numjobs`) are jobs of their
//!   own.
//! - **Each I/O**: its file, direction, size and offset come from the job's
//!   `iosched_benchmarks::fio::stream::JobStream` (fio's rules, shared with any other
//!   executor); this executor decides when each one goes.
//! - **Engines**: `sync`, `psync`, `vsync`, `pvsync`, `pvsync2` are one blocking call per
//!   I/O, buffered or, with `direct=1`, O_DIRECT; `libaio`, `io_uring` and `posixaio` with
//!   `direct=1` keep `iodepth` I/Os in flight (`io_submit`, reaped one or more at a time);
//!   without `direct` Linux performs a buffered AIO inside the submission, so they are
//!   blocking calls too, as in fio on 2.6; `mmap` touches mapped pages.
//! - **Limits**: `size` (or `io_size`) × `loops` bytes, or `runtime` (with `time_based`,
//!   passes repeat until it), or `number_ios` × `loops` I/Os if that comes first;
//!   `ramp_time` runs before the measured time; `startdelay`,
//!   `thinktime` (`thinktime_spin` of CPU, the rest asleep, every `thinktime_blocks`),
//!   `rate` / `rate_iops` (linear: each I/O no earlier than its share of the budget;
//!   `rate_process=poisson`: each I/O no earlier than the sum of exponential gaps of mean
//!   one block's time, as fio's `usec_for_io`).
//! - **Syncs**: `fsync=N` / `fdatasync=N` after every N writes, `end_fsync`,
//!   `fsync_on_close`.
//! - **Priority**: `prioclass` / `prio` as the job's I/O priority.
//! - **Logs**: with `read_iolog` the log's I/Os replace the job's pattern, on the log's
//!   own files (each as large as its furthest I/O), timed as fio's `delay_since_ttime`
//!   and `iolog_delay` time them (`iosched_benchmarks::fio::iolog`); `write_iolog`
//!   records what the job issued, returned in [`FioRun::iologs`] for the caller to write.
//!
//! Refused, with the job named: trim (`rw=trim`, …), `cmdprio_percentage`, a percentage for
//! `size` or `offset` (of a file that does not exist yet), `filesize` ranges.

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use iosched_benchmarks::fio::iolog::{Action, Iolog, Issued, write_v3};
use iosched_benchmarks::fio::job::{Engine, Job, JobSet, Pattern, RateProcess};
use iosched_benchmarks::fio::report::{DirStats, DiskUtil, JobResult, Report, Sample};
use iosched_benchmarks::fio::stream::{JobStream, Region};
use iosched_benchmarks::fio::value::SizeOrPercent;
use iosched_core::trace::Trace;
use iosched_core::{Duration, Instant, IoPrio, Rng};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{FileId, Outcome, ProgCtx, Program, SysOp, TaskId};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;

/// A log's actions (the name `Action` reads as the log's in this file).
type LogAction = Action;

/// A set of fio jobs to run on a machine.
#[derive(Clone, Debug)]
pub struct FioConfig {
    pub jobs: JobSet,
    pub machine: Machine,
    /// Keep the queue-input trace (`--record`).
    pub record_trace: bool,
}

/// A finished run: fio's report, and the queue trace if it was recorded.
#[derive(Clone, Debug)]
pub struct FioRun {
    pub report: Report,
    pub trace: Option<Trace>,
    /// Each `write_iolog=`: (the path as the job gives it, the log's text, fio iolog v3),
    /// in job order; the caller writes them.
    pub iologs: Vec<(String, String)>,
}

/// The fio jobs under `spec`.
pub fn run(spec: &SchedSpec, cfg: &FioConfig) -> Result<FioRun, Error> {
    let (r, stopped) = run_or_stop(spec, cfg)?;
    match stopped {
        Some(e) => Err(e),
        None => Ok(r),
    }
}

/// [`run`], but a run that `--max-sim-time` or an interrupt stopped returns the report of
/// what each job did until then (fio's report when it is stopped), with the error beside
/// it. A stopped run has no queue trace.
pub fn run_or_stop(spec: &SchedSpec, cfg: &FioConfig) -> Result<(FioRun, Option<Error>), Error> {
    for j in &cfg.jobs.jobs {
        check(j)?;
    }
    let results: Shared<Vec<Option<JobResult>>> = Rc::new(RefCell::new(Vec::new()));
    let iologs: Shared<Vec<(usize, String, String)>> = Rc::new(RefCell::new(Vec::new()));
    let stopped_at: Shared<Option<Instant>> = Rc::new(RefCell::new(None));
    let run = RunSpec::new(format!("fio {spec}"), "fio", cfg.record_trace);
    let ((), Finished { trace, sim, disk }, stopped) = cfg.machine.run_or_stop(spec, &run, |sim| {
        let root = sim.fs.root();
        let ids = make_files(sim, root, &cfg.jobs)?;
        let mut phases: Vec<VecDeque<Worker>> = Vec::new();
        let mut thread_number = 0u64;
        for (ji, job) in cfg.jobs.jobs.iter().enumerate() {
            let group = cfg.jobs.groups[ji];
            let phase = cfg.jobs.phases[ji] as usize;
            for clone in 0..job.numjobs {
                thread_number += 1;
                let files: Vec<JobFile> = match job.replay_files() {
                    // A replayed log's files, each whole: its offsets are the file's own.
                    Some(v) => v.iter().map(|(n, size)| JobFile { id: ids[n], start: 0, len: *size }).collect(),
                    None => {
                        let (start, len) = job.file_region(clone).expect("checked");
                        job.file_names(clone).iter().map(|n| JobFile { id: ids[n], start, len }).collect()
                    }
                };
                while phases.len() <= phase {
                    phases.push(VecDeque::new());
                }
                let slot = {
                    let mut r = results.borrow_mut();
                    r.push(None);
                    r.len() - 1
                };
                phases[phase].push_back(Worker::new(
                    job,
                    group,
                    clone,
                    files,
                    thread_number,
                    cfg.machine.seed,
                    slot,
                    results.clone(),
                    iologs.clone(),
                    stopped_at.clone(),
                ));
            }
        }
        let main =
            Main { phases: phases.into(), running: Vec::new(), waited: 0, started: Vec::new(), pending_name: None };
        let t = sim.spawn("fio", Box::new(main), IoPrio::NONE);
        sim.watch(t);
        Ok(())
    })?;
    let end = sim.sim_time();
    if stopped.is_some() {
        *stopped_at.borrow_mut() = Some(end);
    }
    // The workers still in the simulator (a stopped run) report as they are dropped.
    drop(sim);
    let jobs: Vec<JobResult> =
        results.borrow_mut().drain(..).collect::<Option<Vec<_>>>().ok_or("fio: a job did not finish")?;
    let report = Report {
        world: "simulated".into(),
        scheduler: spec.to_string(),
        seed: cfg.machine.seed,
        jobs,
        warnings: cfg.jobs.warnings.clone(),
        // The jobs start at time zero: the counters cover the run, as fio's do.
        disk: Some(DiskUtil { name: cfg.machine.disk.clone(), stats: disk, msec: end.as_nanos() / 1_000_000 }),
    };
    let mut logs = iologs.borrow_mut().drain(..).collect::<Vec<_>>();
    logs.sort_by_key(|l| l.0);
    Ok((FioRun { report, trace, iologs: logs.into_iter().map(|(_, p, t)| (p, t)).collect() }, stopped))
}

/// What this executor refuses, by the job.
fn check(j: &Job) -> Result<(), Error> {
    let bad = |m: &str| Err(Error::Invalid(format!("{}: job `{}`: {m}", j.origin, j.section)));
    if matches!(j.rw, Pattern::Trim | Pattern::RandTrim | Pattern::TrimWrite | Pattern::RandTrimWrite) {
        return bad("trim is not modelled in the simulator's host");
    }
    if j.cmdprio_percentage != [0, 0] {
        return bad("cmdprio_percentage is not modelled yet");
    }
    if matches!(j.size, Some(SizeOrPercent::Percent(_))) || matches!(j.offset, SizeOrPercent::Percent(_)) {
        return bad("a percentage of a file's size needs the file to exist; give bytes");
    }
    if matches!(j.offset_increment, SizeOrPercent::Percent(_)) || matches!(j.io_size, Some(SizeOrPercent::Percent(_))) {
        return bad("percentages for offset_increment and io_size are not modelled; give bytes");
    }
    if j.filesize.is_some_and(|(a, b)| a != b) {
        return bad("a filesize range is not modelled; give one size");
    }
    if j.iolog.is_some() {
        if j.loops > 1 {
            return bad("loops with read_iolog is not modelled: a log is replayed once");
        }
        return Ok(());
    }
    if j.size.is_none() && j.filesize.is_none() {
        if let Some(dev) = j.filename.iter().find(|f| f.starts_with("/dev/")) {
            // fio sizes a job on a block device by the device; the simulator's jobs run on
            // files of its file system, whose size the job must give.
            return bad(&format!(
                "no size: fio would take {dev}'s size from the device; in the simulator a job's files are files \
                 on the simulated disk's file system, so give size= (e.g. size=8g)"
            ));
        }
        return bad("no size: fio needs size= or filesize= for a file it creates");
    }
    if j.rate_process == RateProcess::Poisson {
        for d in 0..2 {
            if (j.rate[d] > 0 || j.rate_iops[d] > 0) && poisson_iops(j, d) == 0 {
                return bad("rate_process=poisson with a rate under one block per second (fio divides by zero)");
            }
        }
    }
    Ok(())
}

/// The smallest block of direction `d` (0 read, 1 write): fio's `min_bs[ddir]`.
fn min_bs_of(j: &Job, d: usize) -> u64 {
    let mut m = j.bs[d];
    if let Some(r) = &j.bsrange {
        m = m.min(r[d].0);
    }
    if let Some(s) = &j.bssplit {
        m = m.min(s[d].iter().map(|x| x.0).min().unwrap_or(m));
    }
    m.max(1)
}

/// `rate_process=poisson`'s mean I/Os per second in direction `d`: fio's `rate_bps / min_bs`
/// (`rate_iops` is turned into `rate_bps` at one minimal block per I/O); 0 without a rate.
fn poisson_iops(j: &Job, d: usize) -> u64 {
    let bs = min_bs_of(j, d);
    let bps = if j.rate[d] > 0 { j.rate[d] } else { j.rate_iops[d] * bs };
    bps / bs
}

/// One file of a job: where its I/O region is.
#[derive(Clone, Debug)]
struct JobFile {
    id: FileId,
    start: u64,
    len: u64,
}

/// The jobs' files ([`JobSet::files`]), created in that order at their sizes; a job whose
/// region is under one block is refused.
fn make_files(
    sim: &mut iosched_sim::Sim,
    root: iosched_sim::DirId,
    jobs: &JobSet,
) -> Result<std::collections::HashMap<String, FileId>, String> {
    for job in jobs.jobs.iter().filter(|j| j.iolog.is_none()) {
        let (_, per_file) = job.file_region(0).expect("checked");
        if per_file < job.min_bs() {
            return Err(format!(
                "{}: job `{}`: {per_file} bytes per file is less than one block",
                job.origin, job.section
            ));
        }
    }
    let files = jobs.files().expect("checked");
    // A job larger than the disk is refused (the allocator would run out).
    let block = iosched_sim::fs::BLOCK;
    let need: u64 = files.iter().map(|(_, size)| iosched_sim::Fs::blocks_for_size(*size)).sum();
    let free = sim.fs.free_blocks();
    if need > free {
        return Err(format!(
            "the jobs' files take {} MiB; the simulated disk's file system has {} MiB free (choose a larger --disk, \
             or smaller size=)",
            (need * block) >> 20,
            (free * block) >> 20
        ));
    }
    Ok(files.into_iter().map(|(n, size)| (n.clone(), sim.fs.create_with_size(root, &n, size))).collect())
}

/// The phases in order (`stonewall`): spawn a phase's jobs in job order, as fio's
/// `run_threads` starts them, wait for all, then the next phase. A job with `wait_for`
/// starts under a [`Waiter`] that first waits for its waitee's threads.
struct Main {
    phases: VecDeque<VecDeque<Worker>>,
    running: Vec<TaskId>,
    waited: usize,
    /// Every task spawned so far, with its job's name (a waiter's waitees).
    started: Vec<(String, TaskId)>,
    /// The job name of the task being spawned, recorded with its id when the spawn returns.
    pending_name: Option<String>,
}

/// A `wait_for` job before it starts: it waits for each thread of its waitee to exit,
/// then runs the job as its child, and exits when the job does.
struct Waiter {
    waitees: Vec<TaskId>,
    worker: Option<Worker>,
    child: Option<TaskId>,
}

impl Program for Waiter {
    fn next(&mut self, _ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let Some(t) = self.waitees.pop() {
            return SysOp::WaitExit(t);
        }
        if let Some(w) = self.worker.take() {
            let (prio, name) = (w.prio, w.name.clone());
            return SysOp::Spawn { program: Box::new(w), name, prio };
        }
        match (self.child, done.and_then(|d| d.child)) {
            (None, Some(c)) => {
                self.child = Some(c);
                SysOp::WaitExit(c)
            }
            _ => SysOp::Exit,
        }
    }
}

impl Program for Main {
    fn next(&mut self, _ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let Some(c) = done.and_then(|d| d.child) {
            self.running.push(c);
            if let Some(n) = self.pending_name.take() {
                self.started.push((n, c));
            }
        }
        if let Some(g) = self.phases.front_mut()
            && let Some(w) = g.pop_front()
        {
            let prio = w.prio;
            let name = w.name.clone();
            let job_name = w.job.name.clone();
            let program: Box<dyn Program> = match &w.job.wait_for {
                None => Box::new(w),
                Some(waitee) => {
                    // The waitee was defined earlier, so its threads are spawned already.
                    let waitees = self.started.iter().filter(|s| s.0 == *waitee).map(|s| s.1).collect();
                    Box::new(Waiter { waitees, worker: Some(w), child: None })
                }
            };
            // The task id is known once the spawn returns: record it then.
            self.pending_name = Some(job_name);
            return SysOp::Spawn { program, name, prio };
        }
        if self.waited < self.running.len() {
            self.waited += 1;
            return SysOp::WaitExit(self.running[self.waited - 1]);
        }
        self.phases.pop_front();
        if self.phases.is_empty() {
            return SysOp::Exit;
        }
        self.running.clear();
        self.waited = 0;
        self.next(_ctx, None)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Start,
    Open(usize),
    Run,
    Drain,
    EndFsync(usize),
    Close(usize),
    Done,
}

/// The data call awaiting its outcome.
#[derive(Debug, Clone, Copy)]
enum Pending {
    None,
    Data { write: bool, bytes: u64, at: Instant },
    Fsync,
    Reap,
    Other,
}

/// One fio job (one clone) as a program.
struct Worker {
    name: String,
    groupid: u32,
    prio: IoPrio,
    job: Job,
    files: Vec<JobFile>,
    slot: usize,
    results: Shared<Vec<Option<JobResult>>>,
    stream: JobStream,
    step: Step,
    pending: Pending,
    // Progress.
    t0: Instant,
    measured_from: Instant,
    issued_bytes: u64,
    target_bytes: u64,
    ios: u64,
    writes_since_sync: u64,
    wrote: bool,
    /// The file of the last I/O (a periodic fsync syncs it).
    last_file: usize,
    inflight: VecDeque<(bool, u64, Instant)>,
    stats: [DirStats; 2],
    fsyncs: u64,
    think_due: u32,
    think_sleep: Option<Duration>,
    /// The I/O chosen but held back by the rate limit.
    held: Option<(bool, usize, u64, u64)>,
    /// `rate_process=poisson`, per direction: the gaps' generator and when the next I/O
    /// may go, since the job started (fio's `poisson_state` and `last_usec`).
    poisson: Option<[(Rng, Duration); 2]>,
    /// `read_iolog`: the log and the next entry to replay.
    replay: Option<(Arc<Iolog>, usize)>,
    /// When the last I/O was issued (a log's delays count from it).
    last_issue: Instant,
    /// When completions were last reaped while waiting for a log's next time.
    reaped_at: Option<Instant>,
    /// `write_iolog`: every I/O issued, (µs since the job started, file, action, offset,
    /// length).
    logged: Option<Vec<Issued>>,
    iologs: Shared<Vec<(usize, String, String)>>,
    /// I/Os by the depth at their submission (fio's `io_u_map`).
    depth_map: [u64; 7],
    /// Every measured I/O, for the job's per-I/O logs.
    samples: Option<Vec<Sample>>,
    thread_number: u64,
    /// When a limit stopped the run (set before the simulator is dropped): a job that has
    /// not finished then reports what it did so far, as fio does when it is stopped.
    stopped_at: Shared<Option<Instant>>,
}

/// While a replayed log's next I/O is not due and I/Os are in flight, completions are
/// reaped at least this often (fio polls them in `iolog_delay`).
const REPLAY_REAP_STEP: Duration = Duration::from_millis(1);

impl Worker {
    #[allow(clippy::too_many_arguments)]
    fn new(
        job: &Job,
        groupid: u32,
        clone: u32,
        files: Vec<JobFile>,
        thread_number: u64,
        machine_seed: u64,
        slot: usize,
        results: Shared<Vec<Option<JobResult>>>,
        iologs: Shared<Vec<(usize, String, String)>>,
        stopped_at: Shared<Option<Instant>>,
    ) -> Worker {
        let regions: Vec<Region> = files.iter().map(|f| Region { start: f.start, len: f.len }).collect();
        let region_bytes: u64 = files.iter().map(|f| f.len).sum();
        Worker {
            name: job.thread_name(clone),
            groupid,
            prio: job.ioprio().unwrap_or(IoPrio::NONE),
            job: job.clone(),
            stream: JobStream::new(job, regions, thread_number, machine_seed),
            files,
            slot,
            results,
            step: Step::Start,
            pending: Pending::None,
            t0: Instant::ZERO,
            measured_from: Instant::ZERO,
            issued_bytes: 0,
            target_bytes: job.bytes_to_issue(region_bytes),
            ios: 0,
            writes_since_sync: 0,
            wrote: false,
            last_file: 0,
            inflight: VecDeque::new(),
            stats: Default::default(),
            fsyncs: 0,
            think_due: 0,
            think_sleep: None,
            held: None,
            poisson: (job.rate_process == RateProcess::Poisson).then(|| {
                let seed = machine_seed ^ thread_number.rotate_left(32);
                [(Rng::derive(seed, 0x9015_0000), Duration::ZERO), (Rng::derive(seed, 0x9015_0001), Duration::ZERO)]
            }),
            replay: job.iolog.clone().map(|l| (l, 0)),
            last_issue: Instant::ZERO,
            reaped_at: None,
            logged: job.write_iolog.is_some().then(Vec::new),
            iologs,
            depth_map: [0; 7],
            samples: job.logs_samples().then(Vec::new),
            thread_number,
            stopped_at,
        }
    }

    fn is_async(&self) -> bool {
        self.job.ioengine.is_async() && self.job.direct
    }

    fn timed(&self) -> bool {
        self.job.runtime_us > 0
    }

    fn out_of_time(&self, now: Instant) -> bool {
        self.timed() && now.saturating_duration_since(self.measured_from) >= Duration::from_micros(self.job.runtime_us)
    }

    fn more_to_issue(&self, now: Instant) -> bool {
        if self.out_of_time(now) {
            return false;
        }
        if let Some((log, next)) = &self.replay {
            return *next < log.entries.len();
        }
        if self.job.number_ios > 0 && self.ios >= self.job.number_ios.saturating_mul(self.job.loops as u64) {
            return false;
        }
        self.job.time_based || self.issued_bytes < self.target_bytes
    }

    /// Count a submitted I/O at the job's depth (the I/Os in flight, itself included), as
    /// fio's `io_u_mark_depth` does; not during `ramp_time`, whose counts fio resets.
    fn mark_depth(&mut self, now: Instant) {
        if now >= self.measured_from {
            let depth = if self.is_async() { self.inflight.len() as u32 } else { 1 };
            self.depth_map[iosched_benchmarks::fio::report::depth_bucket(depth)] += 1;
        }
    }

    /// Note an issued I/O for `write_iolog`.
    fn log_issue(&mut self, now: Instant, file: usize, action: Action, offset: u64, len: u64) {
        let t = now.saturating_duration_since(self.t0).as_micros() as u64;
        if let Some(v) = &mut self.logged {
            v.push((t, file, action, offset, len));
        }
    }

    /// The next step of a replayed log (`read_iolog_get`, `iolog_delay`), or `None` when
    /// the log is done.
    fn replay_step(&mut self, now: Instant) -> Option<SysOp> {
        let (log, next) = self.replay.clone()?;
        let e = *log.entries.get(next)?;
        if let LogAction::Wait(us) = e.action {
            self.replay = Some((log, next + 1));
            if us == 0 {
                return self.replay_step(now);
            }
            self.pending = Pending::Other;
            return Some(SysOp::Sleep(Duration::from_micros(us)));
        }
        let due = self.last_issue
            + Duration::from_micros(log.delay_us(next, self.job.replay_time_scale, self.job.replay_no_stall));
        if now < due {
            self.pending = Pending::Other;
            if !self.inflight.is_empty() {
                if self.reaped_at != Some(now) {
                    self.reaped_at = Some(now);
                    self.pending = Pending::Reap;
                    return Some(SysOp::AioWait { min: 0 });
                }
                return Some(SysOp::Sleep((due - now).min(REPLAY_REAP_STEP)));
            }
            return Some(SysOp::Sleep(due - now));
        }
        let file = self.files[e.file].id;
        match e.action {
            LogAction::Sync | LogAction::Datasync => {
                if !self.inflight.is_empty() {
                    self.pending = Pending::Reap;
                    return Some(SysOp::AioWait { min: 1 });
                }
                self.replay = Some((log, next + 1));
                self.last_issue = now;
                self.log_issue(now, e.file, e.action, 0, 0);
                self.pending = Pending::Fsync;
                Some(SysOp::Fsync { file })
            }
            LogAction::Read | LogAction::Write => {
                if self.is_async() && self.inflight.len() >= self.job.iodepth as usize {
                    self.pending = Pending::Reap;
                    return Some(SysOp::AioWait { min: 1 });
                }
                let write = e.action == LogAction::Write;
                self.replay = Some((log, next + 1));
                self.last_issue = now;
                Some(self.issue(now, write, e.file, e.offset, e.len))
            }
            LogAction::Wait(_) => unreachable!("handled above"),
        }
    }

    /// Issue a read or write of file `fi` (`io_u_submit`): counted, logged for
    /// `write_iolog`, in flight for an async engine or awaited for a sync one.
    fn issue(&mut self, now: Instant, write: bool, fi: usize, offset: u64, len: u64) -> SysOp {
        self.issued_bytes += len;
        self.ios += 1;
        if write {
            self.wrote = true;
        }
        self.log_issue(now, fi, if write { Action::Write } else { Action::Read }, offset, len);
        let op = self.data_op(write, self.files[fi].id, offset, len);
        if self.is_async() {
            self.inflight.push_back((write, len, now));
            self.pending = Pending::Other;
        } else {
            self.pending = Pending::Data { write, bytes: len, at: now };
        }
        self.mark_depth(now);
        op
    }

    fn account(&mut self, write: bool, bytes: u64, lat: Duration, now: Instant) {
        if now < self.measured_from {
            return; // ramp_time: not measured
        }
        let at = now.saturating_duration_since(self.measured_from);
        self.stats[write as usize].add(bytes, lat.as_nanos() as u64, at.as_nanos() as u64);
        if let Some(v) = &mut self.samples {
            let rt = self.job.prioclass == 1;
            v.push(Sample { at_ms: at.as_millis() as u64, write, bytes, clat_ns: lat.as_nanos() as u64, rt });
        }
    }

    fn data_op(&self, write: bool, file: FileId, offset: u64, len: u64) -> SysOp {
        if self.job.ioengine == Engine::Mmap {
            return if write { SysOp::MmapWrite { file, offset, len } } else { SysOp::MmapRead { file, offset, len } };
        }
        match (self.is_async(), self.job.direct, write) {
            (true, _, write) => SysOp::AioSubmit { file, offset, len, write },
            (false, true, false) => SysOp::DirectRead { file, offset, len },
            (false, true, true) => SysOp::DirectWrite { file, offset, len },
            (false, false, false) => SysOp::Read { file, offset, len },
            (false, false, true) => SysOp::Write { file, offset, len },
        }
    }

    /// When the rate limit lets the next I/O go (linear: its share of the budget;
    /// Poisson: the sum of the gaps drawn so far).
    fn rate_wait(&self, now: Instant, write: bool) -> Option<Duration> {
        let d = write as usize;
        let elapsed = now.saturating_duration_since(self.t0);
        let limited = self.job.rate[d] > 0 || self.job.rate_iops[d] > 0;
        let allowed = if let (Some(p), true) = (&self.poisson, limited) {
            p[d].1
        } else if self.job.rate[d] > 0 {
            let done = self.stats[d].io_bytes + self.inflight.iter().filter(|i| i.0 == write).map(|i| i.1).sum::<u64>();
            Duration::from_secs_f64(done as f64 / self.job.rate[d] as f64)
        } else if self.job.rate_iops[d] > 0 {
            Duration::from_secs_f64(self.stats[d].total_ios as f64 / self.job.rate_iops[d] as f64)
        } else {
            return None;
        };
        (allowed > elapsed).then(|| allowed - elapsed)
    }

    /// `rate_process=poisson`: the next I/O of this direction may go one exponential gap
    /// later, of mean one I/O's time — fio's `usec_for_io`: whole microseconds per I/O
    /// (`1000000 / iops`, an integer) times `-ln(U)`, truncated to microseconds.
    fn draw_poisson_gap(&mut self, write: bool) {
        let d = write as usize;
        if self.job.rate[d] == 0 && self.job.rate_iops[d] == 0 {
            return;
        }
        let per_io_us = 1_000_000 / poisson_iops(&self.job, d);
        let Some(p) = &mut self.poisson else { return };
        // U in (0, 1]: -ln(U) is finite.
        let u = 1.0 - p[d].0.unit();
        let gap_us = (per_io_us as f64 * -u.ln()) as u64;
        p[d].1 += Duration::from_micros(gap_us);
    }

    fn finish(&mut self, now: Instant) {
        let runtime = now.saturating_duration_since(self.measured_from);
        if let (Some(v), Some(path)) = (self.logged.take(), self.job.write_iolog.clone()) {
            let names: Vec<String> = self.job.file_names(0);
            let end = now.saturating_duration_since(self.t0).as_micros() as u64;
            self.iologs.borrow_mut().push((self.slot, path, write_v3(&names, &v, end)));
        }
        self.results.borrow_mut()[self.slot] = Some(JobResult {
            name: self.name.clone(),
            groupid: self.groupid,
            runtime_us: runtime.as_micros() as u64,
            dirs: std::mem::take(&mut self.stats),
            fsyncs: self.fsyncs,
            group_reporting: self.job.group_reporting,
            iodepth: self.job.iodepth,
            depth_map: self.depth_map,
            samples: self.samples.take().unwrap_or_default(),
            number: self.thread_number,
        });
    }
}

/// A job the run's limit stopped (or that never started) reports what it did by then.
impl Drop for Worker {
    fn drop(&mut self) {
        let Some(at) = *self.stopped_at.borrow() else { return };
        if self.results.borrow()[self.slot].is_some() {
            return;
        }
        if matches!(self.step, Step::Start | Step::Open(_)) {
            // Not yet running: no time measured.
            self.measured_from = at;
        }
        self.finish(at);
    }
}

impl Program for Worker {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        let now = ctx.now;
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::Data { write, bytes, at } => {
                let moved = done.map_or(bytes, |d| d.bytes);
                self.account(write, moved, now - at, now);
            }
            Pending::Reap => {
                let n = done.map_or(0, |d| d.bytes as usize);
                for _ in 0..n.min(self.inflight.len()) {
                    let (write, bytes, at) = self.inflight.pop_front().expect("in flight");
                    self.account(write, bytes, now - at, now);
                }
            }
            Pending::Fsync => self.fsyncs += 1,
            Pending::None | Pending::Other => {}
        }
        loop {
            match self.step {
                Step::Start => {
                    self.step = Step::Open(0);
                    if self.job.startdelay_us > 0 {
                        self.pending = Pending::Other;
                        return SysOp::Sleep(Duration::from_micros(self.job.startdelay_us));
                    }
                }
                Step::Open(i) => {
                    if i < self.files.len() {
                        self.step = Step::Open(i + 1);
                        self.pending = Pending::Other;
                        return SysOp::Open { file: self.files[i].id };
                    }
                    self.t0 = now;
                    self.measured_from = now + Duration::from_micros(self.job.ramp_time_us);
                    self.step = Step::Run;
                }
                Step::Run => {
                    if let Some(d) = self.think_sleep.take() {
                        self.pending = Pending::Other;
                        return SysOp::Sleep(d);
                    }
                    if self.job.thinktime_us > 0 && self.think_due >= self.job.thinktime_blocks {
                        self.think_due = 0;
                        let spin = Duration::from_micros(self.job.thinktime_spin_us);
                        let rest = Duration::from_micros(self.job.thinktime_us - self.job.thinktime_spin_us);
                        self.pending = Pending::Other;
                        if spin > Duration::ZERO {
                            self.think_sleep = (rest > Duration::ZERO).then_some(rest);
                            return SysOp::Think(spin);
                        }
                        return SysOp::Sleep(rest);
                    }
                    if self.replay.is_some() {
                        if self.out_of_time(now) {
                            self.replay = None;
                        } else if let Some(op) = self.replay_step(now) {
                            return op;
                        }
                        if !self.inflight.is_empty() {
                            self.pending = Pending::Reap;
                            return SysOp::AioWait { min: 1 };
                        }
                        self.step = Step::Drain;
                        continue;
                    }
                    let sync_every = if self.job.fsync > 0 { self.job.fsync } else { self.job.fdatasync };
                    if sync_every > 0 && self.writes_since_sync >= sync_every as u64 && self.inflight.is_empty() {
                        self.writes_since_sync = 0;
                        self.pending = Pending::Fsync;
                        let (f, a) = (self.last_file, if self.job.fsync > 0 { Action::Sync } else { Action::Datasync });
                        self.log_issue(now, f, a, 0, 0);
                        return SysOp::Fsync { file: self.files[self.last_file].id };
                    }
                    let can_issue = self.more_to_issue(now)
                        && (!self.is_async() || self.inflight.len() < self.job.iodepth as usize);
                    if can_issue {
                        let (write, fi, offset, len) = match self.held.take() {
                            Some(io) => io,
                            None => {
                                let io = self.stream.next_io();
                                (io.write, io.file, io.offset, io.len)
                            }
                        };
                        self.last_file = fi;
                        if let Some(w) = self.rate_wait(now, write) {
                            // Not yet: the same I/O goes when the rate allows it.
                            self.held = Some((write, fi, offset, len));
                            self.pending = Pending::Other;
                            return SysOp::Sleep(w);
                        }
                        self.think_due += 1;
                        if write {
                            self.writes_since_sync += 1;
                        }
                        self.draw_poisson_gap(write);
                        return self.issue(now, write, fi, offset, len);
                    }
                    if !self.inflight.is_empty() {
                        self.pending = Pending::Reap;
                        return SysOp::AioWait { min: 1 };
                    }
                    self.step = Step::Drain;
                }
                Step::Drain => {
                    self.finish(now);
                    self.step = Step::EndFsync(0);
                }
                Step::EndFsync(i) => {
                    if self.wrote && (self.job.end_fsync || self.job.fsync_on_close) && i < self.files.len() {
                        self.step = Step::EndFsync(i + 1);
                        self.pending = Pending::Other;
                        return SysOp::Fsync { file: self.files[i].id };
                    }
                    self.step = Step::Close(0);
                }
                Step::Close(i) => {
                    if i < self.files.len() {
                        self.step = Step::Close(i + 1);
                        self.pending = Pending::Other;
                        return SysOp::Close { file: self.files[i].id };
                    }
                    self.step = Step::Done;
                }
                Step::Done => return SysOp::Exit,
            }
        }
    }
}
