//! tiobench (tiotest 0.3.3 driven by tiobench.pl) in the simulator.
//!
//! Semantics (reference `benchmarks.md` §1): N threads, each with a private file of
//! `size/N` MiB in one directory; four phases in tiotest's order — sequential write,
//! random write, sequential read, random read — of synchronous buffered `block`-byte
//! calls; random phases do `random/N` operations per thread at
//! `(rand() % (blocks-1)) * block`, uniform with replacement; write phases end with
//! `fsync` inside the thread's time. Each phase creates its threads, waits (tiotest polls
//! every second) until they are parked, starts the clock and releases them; the phase
//! ends when the last thread exits. The page cache carries over between phases as on a
//! real machine. Per-call latency is the time of the `read`/`write` call alone; CPU is
//! the threads' user+system time.
//!
//! Every number is computed as tiotest / tiobench.pl do: `Rate = MiB / wall`,
//! `CPU% = 100 × cpu / wall`, average latency over all calls of all threads, maximum,
//! and the fractions of calls over 2 s and 10 s.

use crate::error::Error;
use crate::machine::{Machine, RunSpec};
use iosched_benchmarks::tiobench::{Io, check_block, check_split};
pub use iosched_benchmarks::tiobench::{Phase, PhaseResult, RANDOM_MAX, ThreadOps, TiobenchRecord, check_random};
use iosched_core::trace::Trace;
use iosched_core::{Duration, Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{FileId, Outcome, ProgCtx, SysCall, SysOp, TaskId};
use std::cell::RefCell;
use std::rc::Rc;

/// tiobench options.
#[derive(Clone, Debug)]
pub struct TiobenchConfig {
    /// Total file size over all threads, bytes (tiobench.pl `--size`).
    pub size: u64,
    /// Bytes per call.
    pub block: u64,
    /// Random operations over all threads (tiobench.pl `--random`).
    pub random: u64,
    /// Drop clean page-cache pages before each phase, as tiotest 0.4's `-F` does. Off by
    /// default: tiotest 0.3.3 (the seed's) had no such flag, so its read phases start
    /// with whatever the write phases left cached.
    pub drop_caches: bool,
    pub machine: Machine,
}

impl TiobenchConfig {
    pub fn validate(&self, threads: &[u32]) -> Result<(), String> {
        check_block(self.block, Io::Buffered)?;
        if self.size < (1 << 20) {
            return Err(format!(
                "--size {} bytes: expected at least 1 MiB per thread (a bare number is bytes; tiobench.pl's MB are written 512M)",
                self.size
            ));
        }
        if !self.size.is_multiple_of(1 << 20) {
            return Err(format!(
                "--size {} bytes: expected a whole number of MiB (tiobench.pl's --size is in MB), e.g. {}M",
                self.size,
                self.size >> 20
            ));
        }
        check_split(self.size >> 20, threads)?;
        check_random(self.random, threads)?;
        self.machine.validate()?;
        self.machine.check_fits(self.size, &format!("--size {} MiB", self.size >> 20))
    }
}

#[derive(Default)]
struct Collect {
    phase: PhaseResult,
}

/// The counter the main thread raises to release the phase's threads.
const RELEASE: usize = 0;

/// Run tiotest with `threads` threads under `spec`; returns the four phases.
pub fn run(spec: &SchedSpec, threads: u32, cfg: &TiobenchConfig) -> Result<Vec<PhaseResult>, Error> {
    Ok(run_with(spec, threads, cfg, false)?.0)
}

/// As [`run`], also keeping the queue's inputs and dispatches: the queue-input trace
/// (`iosched tiobench --record`) that `iosched replay` checks.
pub fn run_recorded(spec: &SchedSpec, threads: u32, cfg: &TiobenchConfig) -> Result<(Vec<PhaseResult>, Trace), Error> {
    let (phases, trace) = run_with(spec, threads, cfg, true)?;
    Ok((phases, trace.expect("recorded")))
}

/// As [`run`], also keeping every read and write call the tiotest threads made (the
/// offsets are file offsets; each thread's task is `tiotest/<i>`).
pub fn run_logged(
    spec: &SchedSpec,
    threads: u32,
    cfg: &TiobenchConfig,
) -> Result<(Vec<PhaseResult>, Vec<SysCall>), Error> {
    let mut calls = Vec::new();
    let (phases, _) = run_inner(spec, threads, cfg, false, Some(&mut calls))?;
    Ok((phases, calls))
}

/// One run's phases, and its queue-input trace if it was recorded.
type Run = (Vec<PhaseResult>, Option<Trace>);

fn run_with(spec: &SchedSpec, threads: u32, cfg: &TiobenchConfig, record: bool) -> Result<Run, Error> {
    run_inner(spec, threads, cfg, record, None)
}

fn run_inner(
    spec: &SchedSpec,
    threads: u32,
    cfg: &TiobenchConfig,
    record: bool,
    syscalls: Option<&mut Vec<SysCall>>,
) -> Result<Run, Error> {
    let n = threads as u64;
    let file_bytes = iosched_benchmarks::tiobench::file_mb(cfg.size >> 20, threads) << 20;
    let results: Shared<Vec<PhaseResult>> = Rc::new(RefCell::new(Vec::new()));
    let run =
        RunSpec::new(format!("tiobench {spec} {threads} threads"), &format!("tiobench, {threads} threads"), record);
    let log = syscalls.is_some();
    let ((), mut done) = cfg.machine.run(spec, &run, |sim| {
        if log {
            sim.log_syscalls();
        }
        let dir = sim.fs.mkdir(sim.fs.root(), "tiotest");
        let files: Vec<FileId> = (0..threads).map(|i| sim.fs.create(dir, &format!("_1234_tiotest.{i}"))).collect();
        let main = Main {
            phase: 0,
            step: MainStep::Spawn,
            threads: Vec::new(),
            files,
            block: cfg.block,
            file_bytes,
            ops: cfg.random / n,
            seed: cfg.machine.seed,
            collect: Rc::new(RefCell::new(Collect::default())),
            results: results.clone(),
            t0: Instant::ZERO,
            dev0: (0, 0),
            waited: 0,
            drop_caches: cfg.drop_caches,
            dropped: false,
        };
        let t = sim.spawn("tiotest", Box::new(main), IoPrio::NONE);
        sim.watch(t);
        Ok(())
    })?;
    let r = results.borrow().clone();
    if r.len() != 4 {
        return Err(format!("tiobench with {threads} threads did not finish ({} phases done)", r.len()).into());
    }
    if let Some(out) = syscalls {
        *out = done.sim.take_syscalls();
    }
    Ok((r, done.trace))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum MainStep {
    Spawn,
    Park,
    Release,
    Join,
}

/// tiotest's main thread.
struct Main {
    phase: usize,
    step: MainStep,
    threads: Vec<TaskId>,
    files: Vec<FileId>,
    block: u64,
    file_bytes: u64,
    ops: u64,
    seed: u64,
    collect: Shared<Collect>,
    results: Shared<Vec<PhaseResult>>,
    t0: Instant,
    dev0: (u64, u64),
    waited: usize,
    drop_caches: bool,
    dropped: bool,
}

impl iosched_sim::Program for Main {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        loop {
            if self.phase >= Phase::RUN_ORDER.len() {
                return SysOp::Exit;
            }
            let phase = Phase::RUN_ORDER[self.phase];
            match self.step {
                MainStep::Spawn => {
                    if let Some(c) = done.and_then(|d| d.child)
                        && !self.threads.contains(&c)
                    {
                        self.threads.push(c);
                    }
                    let i = self.threads.len();
                    if i < self.files.len() {
                        let w = Worker {
                            phase,
                            release: self.phase as u64 + 1,
                            file: self.files[i],
                            block: self.block,
                            ops: ThreadOps::new(self.seed, phase, i as u32, self.file_bytes, self.block, self.ops),
                            step: 0,
                            data_call_pending: false,
                            cpu0: Duration::ZERO,
                            collect: self.collect.clone(),
                        };
                        return SysOp::Spawn { program: Box::new(w), name: format!("tiotest/{i}"), prio: IoPrio::NONE };
                    }
                    self.step = MainStep::Park;
                    if self.drop_caches && !self.dropped {
                        self.dropped = true;
                        self.step = MainStep::Spawn;
                        return SysOp::DropCaches;
                    }
                    self.dropped = false;
                    // tiotest polls once a second until every thread is parked.
                    return SysOp::Sleep(Duration::from_secs(1));
                }
                MainStep::Park => {
                    self.step = MainStep::Release;
                    self.t0 = ctx.now;
                    self.dev0 = (ctx.device_read, ctx.device_written);
                    *self.collect.borrow_mut() = Collect::default();
                    ctx.signal(RELEASE, self.phase as u64 + 1);
                    self.waited = 0;
                    continue;
                }
                MainStep::Release | MainStep::Join => {
                    self.step = MainStep::Join;
                    if self.waited < self.threads.len() {
                        let t = self.threads[self.waited];
                        self.waited += 1;
                        return SysOp::WaitExit(t);
                    }
                    let wall = (ctx.now - self.t0).as_secs_f64();
                    let mut r = std::mem::take(&mut self.collect.borrow_mut().phase);
                    r.phase = Some(phase);
                    r.threads = self.threads.len() as u32;
                    r.wall_s = wall;
                    r.device_read_mib = Some((ctx.device_read - self.dev0.0) as f64 / (1 << 20) as f64);
                    r.device_write_mib = Some((ctx.device_written - self.dev0.1) as f64 / (1 << 20) as f64);
                    self.results.borrow_mut().push(r);
                    self.threads.clear();
                    self.phase += 1;
                    self.step = MainStep::Spawn;
                    continue;
                }
            }
        }
    }
}

/// One tiotest thread for one phase.
struct Worker {
    phase: Phase,
    release: u64,
    file: FileId,
    block: u64,
    ops: ThreadOps,
    step: u8,
    /// The last operation returned was a read or write call, to be accounted.
    data_call_pending: bool,
    cpu0: Duration,
    collect: Shared<Collect>,
}

impl iosched_sim::Program for Worker {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        // Account the previous data call (not the open or truncate that precedes the
        // first one: tiotest times only the read/write calls).
        if std::mem::take(&mut self.data_call_pending)
            && let Some(d) = done
        {
            self.collect.borrow_mut().phase.add_call(d.latency().as_secs_f64() * 1000.0, d.bytes);
        }
        loop {
            match self.step {
                0 => {
                    self.step = 1;
                    return SysOp::WaitCounter { counter: RELEASE, at_least: self.release };
                }
                1 => {
                    self.cpu0 = ctx.cpu_time;
                    self.step = 3;
                    // 0.3.3 opens with O_CREAT|O_TRUNC for the sequential write.
                    return if self.phase == Phase::SeqWrite {
                        SysOp::Truncate { file: self.file }
                    } else {
                        SysOp::Open { file: self.file }
                    };
                }
                3 => {
                    if let Some(off) = self.ops.next() {
                        self.data_call_pending = true;
                        let len = self.block;
                        return if self.phase.is_write() {
                            SysOp::Write { file: self.file, offset: off, len }
                        } else {
                            SysOp::Read { file: self.file, offset: off, len }
                        };
                    }
                    self.step = 4;
                    if self.phase.is_write() {
                        return SysOp::Fsync { file: self.file };
                    }
                }
                4 => {
                    self.step = 5;
                    return SysOp::Close { file: self.file };
                }
                _ => {
                    let cpu = (ctx.cpu_time - self.cpu0).as_secs_f64();
                    self.collect.borrow_mut().phase.cpu_s += cpu;
                    return SysOp::Exit;
                }
            }
        }
    }
}

/// Run every (scheduler, thread count) pair, in parallel over the machine's cores, and
/// return the table rows in tiobench.pl's order (scheduler, then thread count, as given).
/// `progress(done, total)` is called as runs finish. Each run is independent and
/// deterministic, so the result does not depend on the number of worker threads.
pub fn run_matrix(
    specs: &[SchedSpec],
    threads: &[u32],
    cfg: &TiobenchConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<TiobenchRecord>, Error> {
    Ok(matrix(specs, threads, cfg, progress, false)?.0)
}

/// As [`run_matrix`], with each run's queue-input trace, in the same order (scheduler,
/// then thread count).
pub fn run_matrix_recorded(
    specs: &[SchedSpec],
    threads: &[u32],
    cfg: &TiobenchConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Vec<TiobenchRecord>, Vec<Trace>), Error> {
    matrix(specs, threads, cfg, progress, true)
}

fn matrix(
    specs: &[SchedSpec],
    threads: &[u32],
    cfg: &TiobenchConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
    record: bool,
) -> Result<(Vec<TiobenchRecord>, Vec<Trace>), Error> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    cfg.validate(threads)?;
    let jobs: Vec<(usize, u32)> = (0..specs.len()).flat_map(|s| threads.iter().map(move |&t| (s, t))).collect();
    let done = AtomicUsize::new(0);
    let runs: Vec<Result<Run, Error>> = jobs
        .par_iter()
        .map(|&(s, t)| {
            let r = run_with(&specs[s], t, cfg, record);
            progress(done.fetch_add(1, Ordering::SeqCst) + 1, jobs.len());
            r
        })
        .collect();
    // Interrupted (SIGINT/SIGTERM): the runs that finished make a partial report; the
    // caller, which owns the flag, says so.
    let mut out = Vec::new();
    let mut traces = Vec::new();
    for (r, &(s, _)) in runs.into_iter().zip(&jobs) {
        let (phases, trace) = match r {
            Ok(x) => x,
            Err(e) if e.is_interrupted() => continue,
            Err(e) => return Err(e),
        };
        for p in phases {
            out.push(p.record(&specs[s].to_string(), cfg.size >> 20, cfg.block as u32));
        }
        traces.extend(trace);
    }
    Ok((out, traces))
}

/// tiobench with one thread count, as an A/B study runs it: four rows, one per phase.
#[derive(Clone, Debug)]
pub struct TiobenchRun {
    pub threads: u32,
    pub cfg: TiobenchConfig,
}

impl crate::compare::Benchmark for TiobenchRun {
    fn name(&self) -> &'static str {
        "tiobench"
    }
    fn command_line(&self) -> String {
        format!(
            "tiobench.pl --size {} --block {} --random {} --threads {}",
            self.cfg.size >> 20,
            self.cfg.block,
            self.cfg.random,
            self.threads
        )
    }
    fn machine(&self) -> &Machine {
        &self.cfg.machine
    }
    fn validate(&self) -> Result<(), String> {
        self.cfg.validate(&[self.threads])
    }
    fn measure(&self, spec: &SchedSpec, seed: u64) -> Result<Vec<crate::compare::Measure>, Error> {
        let mut cfg = self.cfg.clone();
        cfg.machine.seed = seed;
        let phase_name = |p: Phase| match p {
            Phase::SeqWrite => "seq write",
            Phase::RandWrite => "random write",
            Phase::SeqRead => "seq read",
            Phase::RandRead => "random read",
        };
        Ok(run(spec, self.threads, &cfg)?
            .iter()
            .map(|p| crate::compare::Measure {
                test: format!("{} {}t", phase_name(p.phase.expect("a finished phase")), self.threads),
                value: p.rate_mb_s(),
                unit: "MB/s",
            })
            .collect())
    }
}
