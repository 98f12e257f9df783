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
//! - **Each job thread** is an `iosched_benchmarks::fio::thread::JobThread` — when each
//!   I/O goes, the job's limits, think time, rate, syncs and log replay, and its
//!   accounting, shared with the real runtime's executor — whose ops this executor
//!   carries out as the host's system calls: a sync engine's I/O is one blocking call,
//!   buffered or, with `direct=1`, O_DIRECT; `libaio`, `io_uring` and `posixaio` with
//!   `direct=1` submit (`io_submit`) and reap one or more at a time (the host's
//!   `io_getevents` returns the events of the I/Os that completed, in completion order,
//!   so each I/O's latency is its own); without `direct` Linux performs a buffered AIO
//!   inside the submission, so they
//!   are blocking calls too, as in fio on 2.6; `mmap` touches mapped pages.
//! - **Priority**: `prioclass` / `prio` as the job's I/O priority (the task's).
//! - **Logs**: a replayed log's files are its own, each as large as its furthest I/O;
//!   `write_iolog`'s text is returned in [`FioRun::iologs`] for the caller to write.
//!
//! - **Devices**: a job whose `filename`s are block devices (`/dev/…`) does its I/O on the
//!   simulated disk's partition, raw ([`iosched_sim::Fs::create_device`]), sized as fio
//!   sizes a device: without `size`, to its end; percentages of it.
//! - **Per-command priorities** (`cmdprio_*`): an async I/O drawn for one carries it in
//!   its requests (`SysOp::AioSubmit`'s `prio`), as the block layer carries `bi_ioprio`.
//!
//! Refused, with the job named: trim (`rw=trim`, …), a percentage for `size` or `offset`
//! of a file that does not exist yet, `filesize` ranges.

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use iosched_benchmarks::fio::job::{Engine, Job, JobSet, Pattern};
use iosched_benchmarks::fio::report::{DiskUtil, JobResult, Report};
use iosched_benchmarks::fio::stream::Region;
use iosched_benchmarks::fio::thread::{Flows, JobThread, Outcome as ThreadOutcome, Reaped, Terminator, ThreadOp};
use iosched_benchmarks::fio::value::SizeOrPercent;
use iosched_core::trace::Trace;
use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{FileId, Outcome, ProgCtx, Program, SysOp, TaskId};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

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
    let jobs = &on_devices(&cfg.jobs, cfg.machine.device_bytes()?)?;
    for j in &jobs.jobs {
        check(j)?;
    }
    let results: Shared<Vec<Option<JobResult>>> = Rc::new(RefCell::new(Vec::new()));
    let iologs: Shared<Vec<(usize, String, String)>> = Rc::new(RefCell::new(Vec::new()));
    let stopped_at: Shared<Option<Instant>> = Rc::new(RefCell::new(None));
    let terminator: Shared<Terminator> = Rc::new(RefCell::new(Terminator::new(jobs)));
    let mut flows = Flows::default();
    // The shared counters `io_submit_mode=offload`'s pools wake their tasks with.
    let counters: Shared<usize> = Rc::new(RefCell::new(0));
    let run = RunSpec::new(format!("fio {spec}"), "fio", cfg.record_trace);
    let ((), Finished { trace, sim, disk }, stopped) = cfg.machine.run_or_stop(spec, &run, |sim| {
        let root = sim.fs.root();
        let ids = make_files(sim, root, jobs)?;
        let mut phases: Vec<VecDeque<Worker>> = Vec::new();
        let mut thread_number = 0u64;
        for (ji, job) in jobs.jobs.iter().enumerate() {
            let group = jobs.groups[ji];
            let phase = jobs.phases[ji] as usize;
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
                let regions = files.iter().map(|f| Region { start: f.start, len: f.len }).collect();
                let mut thread = JobThread::new(job, group, clone, regions, thread_number, cfg.machine.seed);
                terminator.borrow_mut().add(&thread);
                flows.join(&mut thread);
                phases[phase].push_back(Worker {
                    thread,
                    prio: job.ioprio().unwrap_or(IoPrio::NONE),
                    files: files.iter().map(|f| f.id).collect(),
                    slot,
                    results: results.clone(),
                    iologs: iologs.clone(),
                    stopped_at: stopped_at.clone(),
                    reaping: false,
                    aio_tokens: Tokens::default(),
                    offload: job.offload.then(|| {
                        let mut next = counters.borrow_mut();
                        Rc::new(RefCell::new(Pool::new(job.iodepth as usize, &mut next)))
                    }),
                    submitters: Vec::new(),
                    spawning: false,
                    offload_reaped: None,
                    terminator: terminator.clone(),
                    number: thread_number as usize - 1,
                    started: false,
                });
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
        global_options: cfg.jobs.global_options.clone(),
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
    if j.existing_size.is_none() && matches!(j.io_size, Some(SizeOrPercent::Percent(_))) {
        return bad("a percentage of a file's size needs the file to exist; give bytes");
    }
    if j.verify.is_some() && j.do_verify && j.rw.writes() && !j.direct {
        return bad("verify with direct=0: fio drops the file's cached pages before it reads them back \
             (`file_invalidate_cache`), which this model does not do; give direct=1");
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
    if let Some(e) = (0..j.numjobs).find_map(|c| j.region_error(c)) {
        return bad(&e);
    }
    iosched_benchmarks::fio::thread::check(j).or_else(|e| bad(&e))
}

/// Whether a file name names a block device: in the simulator, the simulated disk.
/// (The character devices of [`CHAR_DEVICES`] are refused before.)
fn is_device(name: &str) -> bool {
    name.starts_with("/dev/")
}

/// Character devices fio jobs name (`/dev/null` to sink writes, `/dev/zero` to read
/// zeros): their I/O reaches no disk, so a simulated run would have nothing of them to
/// schedule, and they are refused.
const CHAR_DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout", "/dev/tty"];

/// `jobs` with each job whose files are block devices (`filename=/dev/…`) on the simulated
/// disk's partition of `device_bytes` ([`Job::existing_size`]): fio sizes such a job by
/// the device. A job naming both a device and other files is refused.
fn on_devices(jobs: &JobSet, device_bytes: u64) -> Result<JobSet, Error> {
    let mut out = jobs.clone();
    for j in &mut out.jobs {
        if let Some(c) = j.filename.iter().find(|f| CHAR_DEVICES.contains(&f.as_str())) {
            return Err(Error::Invalid(format!(
                "{}: job `{}`: filename={c}: a character device, whose I/O reaches no disk; the simulator's \
                 jobs do I/O on its disk (a block device such as /dev/sdb, or files)",
                j.origin, j.section
            )));
        }
        let devices = j.filename.iter().filter(|f| is_device(f)).count();
        if devices == 0 || j.iolog.is_some() {
            continue;
        }
        if devices < j.filename.len() {
            return Err(Error::Invalid(format!(
                "{}: job `{}`: filename names both a block device and files; the simulator's devices are its one \
                 disk, its files files on that disk's file system",
                j.origin, j.section
            )));
        }
        j.existing_size = Some(device_bytes);
    }
    Ok(out)
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
        // Named by the job whose file first goes past the free space.
        let mut sum = 0;
        let over = files.iter().find(|(_, size)| {
            sum += iosched_sim::Fs::blocks_for_size(*size);
            sum > free
        });
        let job = over.and_then(|(name, _)| {
            jobs.jobs.iter().find(|j| match j.replay_files() {
                Some(v) => v.iter().any(|f| f.0 == *name),
                None => (0..j.numjobs).any(|c| j.file_names(c).contains(name)),
            })
        });
        let at = job.map_or(String::new(), |j| format!("{}: job `{}`: ", j.origin, j.section));
        return Err(format!(
            "{at}the jobs' files take {} MiB; the simulated disk's file system has {} MiB free (choose a larger \
             --disk, or smaller size=)",
            (need * block) >> 20,
            (free * block) >> 20
        ));
    }
    let mut ids: std::collections::HashMap<String, FileId> =
        files.into_iter().map(|(n, size)| (n.clone(), sim.fs.create_with_size(root, &n, size))).collect();
    for job in jobs.jobs.iter().filter(|j| j.existing_size.is_some()) {
        for name in &job.filename {
            if !ids.contains_key(name) {
                let id = sim.fs.create_device(root, name);
                ids.insert(name.clone(), id);
            }
        }
    }
    Ok(ids)
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
            let (prio, name) = (w.prio, w.thread.name().to_string());
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
            let name = w.thread.name().to_string();
            let job_name = w.thread.job().name.clone();
            let program: Box<dyn Program> = match w.thread.job().wait_for.clone() {
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

/// One fio job thread (one clone) as a simulated program: the shared [`JobThread`]'s ops
/// carried out as the host's system calls.
struct Worker {
    thread: JobThread,
    prio: IoPrio,
    files: Vec<FileId>,
    slot: usize,
    results: Shared<Vec<Option<JobResult>>>,
    iologs: Shared<Vec<(usize, String, String)>>,
    /// When a limit stopped the run (set before the simulator is dropped): a job that has
    /// not finished then reports what it did so far, as fio does when it is stopped.
    stopped_at: Shared<Option<Instant>>,
    /// The last call was a reap: its outcome names the I/Os the host reaped.
    reaping: bool,
    /// The thread's token of each async I/O in flight, by its number among this task's
    /// submissions (the host's [`Outcome::reaped`] names them so).
    aio_tokens: Tokens,
    /// `io_submit_mode=offload`: the submitters' shared state, the submitters spawned
    /// so far (and whether the last call spawned one), and completions taken in a reap
    /// that did not have to wait.
    offload: Option<Shared<Pool>>,
    submitters: Vec<TaskId>,
    spawning: bool,
    offload_reaped: Option<Vec<(u64, Instant, Instant)>>,
    /// `exitall`: this thread's number among the run's, and whether it has started.
    terminator: Shared<Terminator>,
    number: usize,
    started: bool,
}

/// An I/O's system call: fio's engine for the job, buffered or O_DIRECT; `queued` for an
/// async engine's submission.
fn data_op(job: &Job, write: bool, file: FileId, offset: u64, len: u64, queued: bool, prio: Option<IoPrio>) -> SysOp {
    {
        if job.ioengine == Engine::Mmap {
            return if write { SysOp::MmapWrite { file, offset, len } } else { SysOp::MmapRead { file, offset, len } };
        }
        match (queued, job.direct, write) {
            (true, _, write) => SysOp::AioSubmit { file, offset, len, write, prio },
            (false, true, false) => SysOp::DirectRead { file, offset, len },
            (false, true, true) => SysOp::DirectWrite { file, offset, len },
            (false, false, false) => SysOp::Read { file, offset, len },
            (false, false, true) => SysOp::Write { file, offset, len },
        }
    }
}

impl Worker {
    /// Keep the thread's result and `write_iolog` once it has them.
    fn collect(&mut self) {
        if let Some(r) = self.thread.take_result() {
            self.results.borrow_mut()[self.slot] = Some(r);
        }
        if let Some((path, text)) = self.thread.take_iolog() {
            self.iologs.borrow_mut().push((self.slot, path, text));
        }
    }
}

impl Program for Worker {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if self.offload.is_some() {
            // Spawn the submitters first (`workqueue_init`), as fio does before its I/O.
            if let Some(c) = done.and_then(|d| d.child)
                && self.spawning
            {
                self.submitters.push(c);
            }
            let o = self.offload.clone().expect("offload");
            if self.submitters.len() < o.borrow().workers.len() {
                self.spawning = true;
                let i = self.submitters.len();
                let prog = Submitter {
                    pool: o,
                    me: i,
                    job: self.thread.job().clone(),
                    inflight: Default::default(),
                    n: 0,
                    quiescing: false,
                    current: None,
                };
                return SysOp::Spawn {
                    program: Box::new(prog),
                    name: format!("{}-submit{i}", self.thread.name()),
                    prio: self.prio,
                };
            }
            if std::mem::take(&mut self.spawning) {
                return self.next(ctx, None);
            }
        }
        let outcome = match (done, std::mem::take(&mut self.reaping)) {
            _ if self.offload_reaped.is_some() => {
                ThreadOutcome::Reaped(Reaped::At(self.offload_reaped.take().expect("reaped")))
            }
            (Some(_), true) if self.offload.is_some() => {
                let o = self.offload.clone().expect("offload");
                let mut pool = o.borrow_mut();
                let done = std::mem::take(&mut pool.done);
                pool.reported += done.len() as u64;
                ThreadOutcome::Reaped(Reaped::At(done))
            }
            (Some(d), true) => {
                ThreadOutcome::Reaped(Reaped::These(d.reaped.iter().filter_map(|&n| self.aio_tokens.take(n)).collect()))
            }
            (Some(d), false) => ThreadOutcome::Moved(d.bytes),
            (None, _) => ThreadOutcome::None,
        };
        if !std::mem::replace(&mut self.started, true) {
            self.terminator.borrow_mut().started(self.number);
        }
        let op = self.thread.next(ctx.now, outcome);
        self.collect();
        match op {
            ThreadOp::Sleep(d) => SysOp::Sleep(d),
            ThreadOp::Spin(d) => SysOp::Think(d),
            ThreadOp::Open(i) => SysOp::Open { file: self.files[i] },
            ThreadOp::Close(i) => SysOp::Close { file: self.files[i] },
            ThreadOp::Io { write, file, offset, len, prio, token, .. } if self.offload.is_some() => {
                // `workqueue_enqueue`: to an idle submitter, round robin, else the one
                // given work longest ago; the thread goes on at once.
                let o = self.offload.as_ref().expect("offload");
                let mut pool = o.borrow_mut();
                let w = pool.pick();
                pool.workers[w].queue.push_back(Work { token, write, file: self.files[file], offset, len, prio });
                pool.workers[w].given += 1;
                let (c, v) = (pool.workers[w].counter, pool.workers[w].given);
                drop(pool);
                ctx.signal(c, v);
                self.next(ctx, None)
            }
            ThreadOp::Reap { min } if self.offload.is_some() => {
                // The submitters' completions, once there are `min` of them.
                let o = self.offload.clone().expect("offload");
                let mut pool = o.borrow_mut();
                if (pool.done.len() as u32) < min {
                    let want = pool.reported + min as u64;
                    let c = pool.done_counter;
                    drop(pool);
                    self.reaping = true;
                    return SysOp::WaitCounter { counter: c, at_least: want };
                }
                let done = std::mem::take(&mut pool.done);
                pool.reported += done.len() as u64;
                drop(pool);
                self.offload_reaped = Some(done);
                self.next(ctx, None)
            }
            ThreadOp::Io { write, file, offset, len, queued, prio, token } => {
                let op = data_op(self.thread.job(), write, self.files[file], offset, len, queued, prio);
                if matches!(op, SysOp::AioSubmit { .. }) {
                    self.aio_tokens.push(token);
                }
                op
            }
            ThreadOp::Reap { min } => {
                self.reaping = true;
                SysOp::AioWait { min }
            }
            ThreadOp::Fsync { file, .. } => SysOp::Fsync { file: self.files[file] },
            ThreadOp::Exit => {
                self.terminator.borrow_mut().ended(self.number);
                if let Some(o) = &self.offload {
                    // `workqueue_exit`: the submitters, idle now, are told to end.
                    let mut pool = o.borrow_mut();
                    pool.closed = true;
                    let wake: Vec<(usize, u64)> = pool.workers.iter().map(|w| (w.counter, w.given + 1)).collect();
                    drop(pool);
                    for (c, v) in wake {
                        ctx.signal(c, v);
                    }
                }
                SysOp::Exit
            }
        }
    }
}

/// The thread's token of each async I/O in flight, by its number among the task's
/// submissions (numbered from 0 in order, so a window from the oldest in flight).
#[derive(Debug, Default)]
struct Tokens {
    base: u64,
    window: VecDeque<Option<u64>>,
}

impl Tokens {
    fn push(&mut self, token: u64) {
        self.window.push_back(Some(token));
    }

    fn take(&mut self, n: u64) -> Option<u64> {
        let t = self.window.get_mut(n.checked_sub(self.base)? as usize)?.take();
        while self.window.front().is_some_and(Option::is_none) {
            self.window.pop_front();
            self.base += 1;
        }
        t
    }
}

/// One I/O handed to a submitter.
#[derive(Clone, Copy, Debug)]
struct Work {
    token: u64,
    write: bool,
    file: FileId,
    offset: u64,
    len: u64,
    prio: Option<IoPrio>,
}

/// A job thread's submitters under `io_submit_mode=offload` (fio's `rate-submit.c` and
/// `workqueue.c`): `iodepth` of them, each a task of its own (a thread, which Linux gives
/// its own I/O context), each with its queue of work and the counter it waits on; the
/// completions they timed, for the job thread to reap, and the counter it waits on.
#[derive(Debug)]
struct Pool {
    workers: Vec<PoolWorker>,
    next_free: usize,
    done: Vec<(u64, Instant, Instant)>,
    done_counter: usize,
    /// Completions handed to the job thread so far, and all of them so far.
    reported: u64,
    completed: u64,
    closed: bool,
}

#[derive(Debug)]
struct PoolWorker {
    queue: VecDeque<Work>,
    counter: usize,
    /// Work items given to it so far (its counter's value).
    given: u64,
    idle: bool,
    /// When it was last given work (`sw->seq`).
    seq: u64,
}

impl Pool {
    fn new(n: usize, next_counter: &mut usize) -> Pool {
        let mut take = || {
            *next_counter += 1;
            *next_counter - 1
        };
        let done_counter = take();
        let workers = (0..n)
            .map(|_| PoolWorker { queue: VecDeque::new(), counter: take(), given: 0, idle: true, seq: 0 })
            .collect();
        Pool { workers, next_free: 0, done: Vec::new(), done_counter, reported: 0, completed: 0, closed: false }
    }

    /// `get_submit_worker`: the first idle submitter from `next_free_worker` on (wrapping),
    /// else the one given work longest ago.
    fn pick(&mut self) -> usize {
        let n = self.workers.len();
        let order = (self.next_free..n).chain(0..self.next_free);
        let w = order
            .clone()
            .find(|&i| self.workers[i].idle)
            .unwrap_or_else(|| order.min_by_key(|&i| self.workers[i].seq).expect("a submitter"));
        if w == self.next_free {
            self.next_free = (w + 1) % n;
        }
        let seq = self.workers.iter().map(|x| x.seq).max().unwrap_or(0) + 1;
        self.workers[w].seq = seq;
        self.workers[w].idle = false;
        w
    }
}

/// One submitter (`io_workqueue_fn`): it issues each I/O it is given with the job's
/// engine — an async one's submission then a reap that does not wait (one that waits
/// for one at `iodepth=1`), a sync one's call — and, with no work left, waits for what it
/// has in flight (`io_u_quiesce` before sleeping) and sleeps until it is given more. Each
/// I/O is timed from its submission to its completion here, as fio's worker times it.
struct Submitter {
    pool: Shared<Pool>,
    me: usize,
    job: Job,
    /// Its async I/Os in flight, by their number among its submissions: (token, submitted).
    inflight: std::collections::HashMap<u64, (u64, Instant)>,
    n: u64,
    quiescing: bool,
    /// The blocking I/O under way: (token, submitted).
    current: Option<(u64, Instant)>,
}

impl Submitter {
    fn complete(&mut self, ctx: &mut ProgCtx, done: Vec<(u64, Instant, Instant)>) {
        if done.is_empty() {
            return;
        }
        let mut pool = self.pool.borrow_mut();
        pool.completed += done.len() as u64;
        pool.done.extend(done);
        let (c, v) = (pool.done_counter, pool.completed);
        drop(pool);
        ctx.signal(c, v);
    }
}

impl Program for Submitter {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let Some((token, at)) = self.current.take() {
            self.complete(ctx, vec![(token, at, ctx.now)]);
        }
        if let Some(d) = done
            && d.kind == "aio-wait"
        {
            let now = ctx.now;
            let v = d.reaped.iter().filter_map(|n| self.inflight.remove(n)).map(|(t, at)| (t, at, now)).collect();
            self.complete(ctx, v);
            self.quiescing = false;
        }
        let work = self.pool.borrow_mut().workers[self.me].queue.pop_front();
        if let Some(w) = work {
            let queued = self.job.ioengine.is_async() && self.job.direct;
            let op = data_op(&self.job, w.write, w.file, w.offset, w.len, queued, w.prio);
            if queued {
                self.inflight.insert(self.n, (w.token, ctx.now));
                self.n += 1;
                // Then a reap that waits for nothing (for one at iodepth=1).
                self.quiescing = true;
            } else {
                self.current = Some((w.token, ctx.now));
            }
            return op;
        }
        if self.quiescing || !self.inflight.is_empty() {
            // The reap after a submission, or `io_u_quiesce` before sleeping.
            let min = if self.quiescing && self.job.iodepth > 1 { 0 } else { self.inflight.len() as u32 };
            self.quiescing = false;
            if self.inflight.is_empty() {
                return self.next(ctx, None);
            }
            return SysOp::AioWait { min };
        }
        let mut pool = self.pool.borrow_mut();
        if pool.closed {
            return SysOp::Exit;
        }
        // Everything given has been taken: sleep until the next is given.
        let w = &mut pool.workers[self.me];
        w.idle = true;
        SysOp::WaitCounter { counter: w.counter, at_least: w.given + 1 }
    }
}

/// A job the run's limit stopped (or that never started) reports what it did by then.
impl Drop for Worker {
    fn drop(&mut self) {
        let Some(at) = *self.stopped_at.borrow() else { return };
        if self.results.borrow()[self.slot].is_some() {
            return;
        }
        if let Some(r) = self.thread.stop_result(at) {
            self.results.borrow_mut()[self.slot] = Some(r);
        }
        if let Some((path, text)) = self.thread.take_iolog() {
            self.iologs.borrow_mut().push((self.slot, path, text));
        }
    }
}
