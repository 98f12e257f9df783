//! aio-stress (v0.21, Chris Mason / SuSE 2004) in the simulator (reference
//! `benchmarks.md` §4; `ltp-aiodio/aio-stress.c`).
//!
//! Each thread drives its own file (`aio-stress -t N file.0 … file.N-1`; one context per
//! file) with libaio: an "operation" builds `-i` (8) iocbs of `-r` (64 KiB) — taking a free
//! io unit for each, and when none is free (`-d` (64) are pending) first reaping events
//! with `io_getevents(min = min(8, pending))` — then submits them with one `io_submit`.
//! Stages run in order over the whole file: sequential write, sequential read, random
//! write, random read (`-o` selects some). A random stage issues as many I/Os as a
//! sequential pass, at `start + k MiB + p` with `k` uniform in `1 ..= size/1MiB − 1` and
//! `p` a page-rounded offset in `1 ..= 1 MiB`, pulled back by one record if it would pass
//! the end — from the C library's unseeded `rand()`, so every run uses the same offsets.
//! After submitting everything, the thread reaps the rest one event at a time, fsyncs the
//! file (`-n` turns that off) and prints its stage totals: the stage time includes the
//! fsync. With several threads, stages start and end at barriers; once one thread has
//! finished a stage the others stop submitting (stonewalling, `-x` turns it off), and the
//! last thread to finish prints the combined throughput.
//!
//! With `-O` (O_DIRECT) the I/O is asynchronous. Without it Linux 2.6 performs buffered
//! AIO synchronously inside `io_submit`, and so does the simulation: each iocb is a
//! buffered `read`/`write` whose event is ready at once.
//!
//! MB is 2^20 bytes throughout. Not modelled: several files or contexts per thread,
//! `-b`, `-I`, `-S`, latency statistics (`-l`, `-L`), verification, shared-memory buffers.
//! One `io_submit` of k iocbs is k submissions in the simulator (same order, same
//! blocking on request slots).

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use crate::oplog::{OpLog, OpRecord, spawn_watched};
use iosched_core::trace::Trace;
use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{FileId, Outcome, ProgCtx, Program, SysOp};
use serde::Serialize;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::rc::Rc;

const MIB: u64 = 1 << 20;
const PAGE: u64 = 4096;

/// An aio-stress stage.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Write,
    Read,
    RandomWrite,
    RandomRead,
}

impl Stage {
    /// In run order (`-o 0` … `-o 3`).
    pub const ALL: [Stage; 4] = [Stage::Write, Stage::Read, Stage::RandomWrite, Stage::RandomRead];

    /// aio-stress's `stage_name`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Write => "write",
            Stage::Read => "read",
            Stage::RandomWrite => "random write",
            Stage::RandomRead => "random read",
        }
    }

    /// From `-o n`.
    pub fn from_number(n: u32) -> Result<Stage, String> {
        Stage::ALL.get(n as usize).copied().ok_or_else(|| {
            format!("-o {n}: unknown stage; expected 0 (write), 1 (read), 2 (random write) or 3 (random read)")
        })
    }

    fn is_write(self) -> bool {
        matches!(self, Stage::Write | Stage::RandomWrite)
    }
    fn is_random(self) -> bool {
        matches!(self, Stage::RandomWrite | Stage::RandomRead)
    }
}

/// aio-stress options.
#[derive(Clone, Debug)]
pub struct AioStressConfig {
    /// `-s` (1024 MiB).
    pub file_size: u64,
    /// `-r` (64 KiB).
    pub record: u64,
    /// `-d`: pending requests per file (64).
    pub depth: u32,
    /// `-i`: iocbs per file before switching to the next (8).
    pub io_iter: u32,
    /// `-t`: threads, one file each (1).
    pub threads: u32,
    /// `-O`: O_DIRECT.
    pub direct: bool,
    /// `-o` stages, in the order given (empty = all four).
    pub stages: Vec<Stage>,
    /// fsync between stages (off with `-n`).
    pub fsync_stages: bool,
    /// Stonewalling (off with `-x`).
    pub stonewall: bool,
    pub machine: Machine,
    /// Record every operation (for tests and traces).
    pub record_ops: bool,
    /// Keep the queue-input trace of the run (`--record`), for `iosched replay`.
    pub record_trace: bool,
}

impl AioStressConfig {
    /// aio-stress's defaults, buffered (without `-O`).
    pub fn new(machine: Machine) -> Self {
        AioStressConfig {
            file_size: 1024 * MIB,
            record: 64 << 10,
            depth: 64,
            io_iter: 8,
            threads: 1,
            direct: false,
            stages: Vec::new(),
            fsync_stages: true,
            stonewall: true,
            machine,
            record_ops: false,
            record_trace: false,
        }
    }

    /// The stages that run, in run order.
    pub fn run_stages(&self) -> Vec<Stage> {
        Stage::ALL.into_iter().filter(|s| self.stages.is_empty() || self.stages.contains(s)).collect()
    }

    /// `-i` as aio-stress uses it: dropped to the depth when larger.
    pub fn effective_io_iter(&self) -> u32 {
        self.io_iter.min(self.depth)
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.file_size == 0 {
            return Err("-s 0: expected a positive file size, e.g. 1024m".into());
        }
        if self.record == 0 {
            return Err("-r 0: expected a positive record size, e.g. 64k".into());
        }
        if self.record > self.file_size {
            return Err(format!(
                "-r {} is larger than the file (-s {}): expected a record no larger than the file",
                size_arg(self.record, false),
                size_arg(self.file_size, true)
            ));
        }
        if self.direct && !self.record.is_multiple_of(PAGE) {
            return Err(format!("-O with -r {}: O_DIRECT records must be whole 4 KiB pages", self.record));
        }
        if self.depth == 0 {
            return Err("-d 0: expected at least 1 pending request per file".into());
        }
        if self.io_iter == 0 {
            return Err("-i 0: expected at least 1 I/O per iteration".into());
        }
        if self.threads == 0 {
            return Err("-t 0: expected at least 1 thread".into());
        }
        if self.run_stages().iter().any(|s| s.is_random()) && self.file_size < 2 * MIB {
            return Err(format!(
                "-s {} bytes with a random stage: random offsets start 1 MiB into the file plus up to 1 MiB, so the file must be at least 2 MiB",
                self.file_size
            ));
        }
        self.machine.validate()?;
        let total = self.file_size.saturating_mul(self.threads as u64);
        self.machine.check_fits(total, &format!("-t {} × -s {} MiB", self.threads, self.file_size / MIB))
    }

    /// The aio-stress command line this configuration stands for.
    pub fn command_line(&self) -> String {
        let mut s = format!(
            "aio-stress -s {} -r {} -d {} -i {}",
            size_arg(self.file_size, true),
            size_arg(self.record, false),
            self.depth,
            self.io_iter
        );
        if self.threads > 1 {
            let _ = write!(s, " -t {}", self.threads);
        }
        if self.direct {
            s.push_str(" -O");
        }
        for st in &self.stages {
            let _ = write!(s, " -o {}", Stage::ALL.iter().position(|x| x == st).unwrap_or(0));
        }
        if !self.fsync_stages {
            s.push_str(" -n");
        }
        if !self.stonewall {
            s.push_str(" -x");
        }
        for i in 0..self.threads {
            let _ = write!(s, " {}", file_name(i));
        }
        s
    }
}

fn file_name(i: u32) -> String {
    format!("aio-stress.{i}")
}

/// glibc's `rand()` (the TYPE_3 additive feedback generator), unseeded = `srand(1)`.
#[derive(Clone, Debug)]
pub struct GlibcRand {
    r: [u32; 34],
    i: usize,
}

impl Default for GlibcRand {
    fn default() -> Self {
        Self::new(1)
    }
}

impl GlibcRand {
    pub const RAND_MAX: u32 = 2147483647;

    pub fn new(seed: u32) -> Self {
        let mut r = [0u32; 34];
        r[0] = seed;
        for i in 1..31 {
            r[i] = ((16807 * r[i - 1] as i64) % 2147483647) as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = GlibcRand { r, i: 34 };
        for _ in 34..344 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        let v = self.r[(self.i - 31) % 34].wrapping_add(self.r[(self.i - 3) % 34]);
        self.r[self.i % 34] = v;
        self.i += 1;
        v
    }

    /// The next `rand()` value, in `0 ..= RAND_MAX`.
    pub fn rand(&mut self) -> u32 {
        self.step() >> 1
    }
}

/// A size as aio-stress's `parse_size` reads it back exactly, with its unit spelled out
/// (a bare number is MiB after `-s` and KiB after `-r`): `4m` (with `mib`, the file size),
/// `1500k` or `1500b`.
fn size_arg(b: u64, mib: bool) -> String {
    if mib && b.is_multiple_of(MIB) {
        format!("{}m", b / MIB)
    } else if b.is_multiple_of(1024) {
        format!("{}k", b >> 10)
    } else {
        format!("{b}b")
    }
}

/// `random_byte_offset` for a file range `[start, end)` and record size.
pub fn random_byte_offset(rand: &mut GlibcRand, start: u64, end: u64, record: u64) -> u64 {
    let mut range = (end - start) / MIB;
    // offset = 1 MiB (pages are smaller than a MiB).
    range = range.saturating_sub(1);
    let scale = |r: u64, x: u32| (r as f64 * x as f64 / (GlibcRand::RAND_MAX as f64 + 1.0)) as u64;
    let mut pos = start + (1 + scale(range, rand.rand())) * MIB;
    let mut num = 1 + scale(MIB, rand.rand());
    num = (num + PAGE - 1) & !(PAGE - 1);
    pos += num;
    if pos + record > end {
        pos -= record;
    }
    pos
}

// ---------------------------------------------------------------------------------------
// The run

/// One stage's results.
#[derive(Clone, Debug, Serialize)]
pub struct StageResult {
    pub stage: Stage,
    /// Per thread: MB moved and seconds (stage start to after the fsync).
    pub thread_mb: Vec<f64>,
    pub thread_s: Vec<f64>,
    /// With several threads: combined MB, seconds from the last thread's start to the
    /// last thread's end, and the printed "min transfer".
    pub global: Option<(f64, f64, f64)>,
}

impl StageResult {
    /// The stage's throughput: the thread's totals with one thread, the combined
    /// throughput with several.
    pub fn mb_s(&self) -> f64 {
        match self.global {
            Some((mb, s, _)) => {
                if s > 0.0 {
                    mb / s
                } else {
                    0.0
                }
            }
            None => {
                let (mb, s) = (self.thread_mb[0], self.thread_s[0]);
                if s > 0.0 { mb / s } else { 0.0 }
            }
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct AioStressReport {
    pub scheduler: String,
    pub seed: u64,
    pub command: String,
    pub stages: Vec<StageResult>,
    /// Everything aio-stress printed, in order.
    pub output: Vec<String>,
    /// The queue-input trace (with `record_trace`).
    #[serde(skip)]
    pub queue_trace: Option<Trace>,
    #[serde(skip)]
    pub ops: Vec<OpRecord>,
}

struct SharedState {
    rand: GlibcRand,
    threads: u32,
    start_arrivals: u64,
    end_arrivals: u64,
    global_start: Instant,
    stages: Vec<StageResult>,
    output: Vec<String>,
}

const START_BARRIER: usize = 0;
const END_BARRIER: usize = 1;

/// Run aio-stress once under `spec`.
pub fn run(spec: &SchedSpec, cfg: &AioStressConfig) -> Result<AioStressReport, Error> {
    cfg.validate()?;
    let stages = cfg.run_stages();
    let mut output = header(cfg);
    output.push(if cfg.threads > 1 {
        format!("Running multi thread version num_threads:{}", cfg.threads)
    } else {
        "Running single thread version ".to_string()
    });
    let shared: Shared<SharedState> = Rc::new(RefCell::new(SharedState {
        rand: GlibcRand::default(),
        threads: cfg.threads,
        start_arrivals: 0,
        end_arrivals: 0,
        global_start: Instant::ZERO,
        stages: stages
            .iter()
            .map(|&s| StageResult {
                stage: s,
                thread_mb: vec![0.0; cfg.threads as usize],
                thread_s: vec![0.0; cfg.threads as usize],
                global: None,
            })
            .collect(),
        output,
    }));
    let log: Option<OpLog> = cfg.record_ops.then(|| Rc::new(RefCell::new(Vec::new())));
    let run = RunSpec::new(format!("aio-stress {spec}"), "aio-stress", cfg.record_trace);
    let ((), Finished { trace: queue_trace, .. }) = cfg.machine.run(spec, &run, |sim| {
        let root = sim.fs.root();
        let files: Vec<FileId> = (0..cfg.threads).map(|i| sim.fs.create(root, &file_name(i))).collect();
        let main = Launcher { cfg: cfg.clone(), files, shared: shared.clone(), spawned: Vec::new(), joined: 0 };
        spawn_watched(sim, "aio-stress", Box::new(main), log.as_ref());
        Ok(())
    })?;
    let st = shared.borrow();
    if st.end_arrivals != stages.len() as u64 * cfg.threads as u64 {
        return Err("aio-stress did not finish".into());
    }
    Ok(AioStressReport {
        scheduler: spec.to_string(),
        seed: cfg.machine.seed,
        command: cfg.command_line(),
        stages: st.stages.clone(),
        output: st.output.clone(),
        queue_trace,
        ops: log.map(|l| l.take()).unwrap_or_default(),
    })
}

/// The lines aio-stress prints before the threads start.
fn header(cfg: &AioStressConfig) -> Vec<String> {
    let mut out = Vec::new();
    for s in &cfg.stages {
        out.push(format!("adding stage {}", s.name()));
    }
    if let Some(first) = cfg.run_stages().first()
        && !cfg.stages.is_empty()
    {
        out.push(format!("starting with {}", first.name()));
    }
    if cfg.depth < cfg.io_iter {
        out.push(format!("dropping io_iter to {}", cfg.depth));
    }
    let io_iter = cfg.effective_io_iter();
    out.push(format!(
        "file size {}MB, record size {}KB, depth {}, ios per iteration {}",
        cfg.file_size / MIB,
        cfg.record / 1024,
        cfg.depth,
        io_iter
    ));
    out.push(format!("max io_submit {}, buffer alignment set to 4KB", cfg.threads * io_iter));
    out.push(format!("threads {} files {} contexts 1 context offset 2MB verification off", cfg.threads, cfg.threads));
    out
}

/// The main thread: start the workers (`pthread_create`) and join them.
struct Launcher {
    cfg: AioStressConfig,
    files: Vec<FileId>,
    shared: Shared<SharedState>,
    spawned: Vec<iosched_sim::TaskId>,
    joined: usize,
}

impl Program for Launcher {
    fn next(&mut self, _ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let Some(c) = done.and_then(|d| d.child) {
            self.spawned.push(c);
        }
        let i = self.spawned.len();
        if i < self.files.len() {
            let w = Worker::new(i as u32, self.files[i], &self.cfg, self.shared.clone());
            return SysOp::Spawn { program: Box::new(w), name: format!("aio-stress/{i}"), prio: IoPrio::NONE };
        }
        if self.joined < self.spawned.len() {
            self.joined += 1;
            return SysOp::WaitExit(self.spawned[self.joined - 1]);
        }
        SysOp::Exit
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum WStep {
    Open,
    /// Wait at the stage's start barrier, then start the stage.
    StageStart,
    StageRun,
    /// Build the batch: take free io units, reaping events when there are none.
    Build,
    /// Submit the built batch.
    Submit,
    /// Reap the remaining events one by one.
    WaitAll,
    /// After the stage's fsync.
    Fsynced,
    /// After the end barrier.
    StageDone,
    Close,
    Done,
}

/// One aio-stress thread and its file.
struct Worker {
    id: u32,
    file: FileId,
    cfg: AioStressConfig,
    io_iter: u32,
    shared: Shared<SharedState>,
    stages: Vec<Stage>,
    stage: usize,
    step: WStep,
    total_ios: u64,
    started_ios: u64,
    pending: u64,
    free: u64,
    last_offset: u64,
    stonewalled: bool,
    oper_start: Option<Instant>,
    stage_time: Instant,
    /// Offsets built for the next io_submit, and how many of them are submitted.
    batch: Vec<u64>,
    submitted: usize,
    /// A wait was issued and its events are still to be counted.
    waiting: bool,
}

impl Worker {
    fn new(id: u32, file: FileId, cfg: &AioStressConfig, shared: Shared<SharedState>) -> Self {
        Worker {
            id,
            file,
            cfg: cfg.clone(),
            io_iter: cfg.effective_io_iter(),
            shared,
            stages: cfg.run_stages(),
            stage: 0,
            step: WStep::Open,
            total_ios: cfg.file_size / cfg.record,
            started_ios: 0,
            pending: 0,
            free: cfg.depth as u64,
            last_offset: 0,
            stonewalled: false,
            oper_start: None,
            stage_time: Instant::ZERO,
            batch: Vec::new(),
            submitted: 0,
            waiting: false,
        }
    }

    fn rw(&self) -> Stage {
        self.stages[self.stage]
    }

    fn mb(&self) -> f64 {
        (self.started_ios * self.cfg.record) as f64 / MIB as f64
    }

    fn print(&self, line: String) {
        self.shared.borrow_mut().output.push(line);
    }

    /// `io_getevents`: with O_DIRECT `min` completions (or all in flight); without it every
    /// submitted iocb already completed inside `io_submit`.
    fn wait(&mut self, min: u64) -> SysOp {
        self.waiting = true;
        SysOp::AioWait { min: if self.cfg.direct { min as u32 } else { 0 } }
    }

    /// Count the events a wait returned, at most `max` of them (`io_getevents(…, max)`).
    fn reap(&mut self, done: Option<&Outcome>, max: u64, now: Instant) {
        if !std::mem::take(&mut self.waiting) {
            return;
        }
        let n = if self.cfg.direct { done.map_or(0, |d| d.bytes) } else { self.pending.min(max) };
        let n = n.min(self.pending);
        self.pending -= n;
        self.free += n;
        if n > 0 && self.pending == 0 && (self.started_ios == self.total_ios || self.stonewalled) {
            // print_time: the operation's last event.
            let secs = (now - self.oper_start.unwrap_or(now)).as_secs_f64();
            let mb = self.mb();
            let line = format!(
                "{} on {} ({:.2} MB/s) {:.2} MB in {:.2}s",
                self.rw().name(),
                file_name(self.id),
                if secs > 0.0 { mb / secs } else { 0.0 },
                mb,
                secs
            );
            self.print(line);
        }
    }

    fn next_offset(&mut self) -> u64 {
        if self.rw().is_random() {
            let off = random_byte_offset(&mut self.shared.borrow_mut().rand, 0, self.cfg.file_size, self.cfg.record);
            self.last_offset = off;
            off
        } else {
            let off = self.last_offset;
            self.last_offset += self.cfg.record;
            off
        }
    }

    fn submit_op(&self, offset: u64) -> SysOp {
        let (file, len, write) = (self.file, self.cfg.record, self.rw().is_write());
        match (self.cfg.direct, write) {
            (true, write) => SysOp::AioSubmit { file, offset, len, write, prio: None },
            (false, true) => SysOp::Write { file, offset, len },
            (false, false) => SysOp::Read { file, offset, len },
        }
    }

    /// Whether another thread has already finished this stage.
    fn threads_ending(&self) -> bool {
        let st = self.shared.borrow();
        st.end_arrivals > self.stage as u64 * st.threads as u64
    }
}

impl Program for Worker {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        let threads = self.cfg.threads as u64;
        loop {
            match self.step {
                WStep::Open => {
                    self.step = WStep::StageStart;
                    return SysOp::Open { file: self.file };
                }
                WStep::StageStart => {
                    self.step = WStep::StageRun;
                    if threads > 1 {
                        let want = (self.stage as u64 + 1) * threads;
                        let mut st = self.shared.borrow_mut();
                        st.start_arrivals += 1;
                        if st.start_arrivals == want {
                            st.global_start = ctx.now;
                        }
                        let n = st.start_arrivals;
                        drop(st);
                        ctx.signal(START_BARRIER, n);
                        return SysOp::WaitCounter { counter: START_BARRIER, at_least: want };
                    }
                }
                WStep::StageRun => {
                    self.stage_time = ctx.now;
                    self.step = WStep::Build;
                }
                WStep::Build => {
                    let max = self.io_iter as u64;
                    self.reap(done, self.cfg.depth as u64, ctx.now);
                    if self.batch.is_empty() {
                        if self.started_ios == self.total_ios || self.stonewalled {
                            self.step = WStep::WaitAll;
                            continue;
                        }
                        if self.cfg.stonewall && threads > 1 && self.threads_ending() {
                            self.stonewalled = true;
                            self.step = WStep::WaitAll;
                            continue;
                        }
                        if self.started_ios == 0 && self.oper_start.is_none() {
                            self.oper_start = Some(ctx.now);
                        }
                    }
                    let want = max.min(self.total_ios - self.started_ios) as usize;
                    while self.batch.len() < want {
                        if self.free == 0 {
                            // read_some_events: min(io_iter, pending) events, up to all.
                            return self.wait(max.min(self.pending));
                        }
                        self.free -= 1;
                        let off = self.next_offset();
                        self.batch.push(off);
                    }
                    self.submitted = 0;
                    self.step = WStep::Submit;
                }
                WStep::Submit => {
                    if self.submitted < self.batch.len() {
                        self.submitted += 1;
                        return self.submit_op(self.batch[self.submitted - 1]);
                    }
                    let n = self.batch.len() as u64;
                    self.started_ios += n;
                    self.pending += n;
                    self.batch.clear();
                    self.step = WStep::Build;
                }
                WStep::WaitAll => {
                    // io_oper_wait: io_getevents(1, 1) until nothing is pending.
                    self.reap(done, 1, ctx.now);
                    if self.pending > 0 {
                        return self.wait(1);
                    }
                    self.step = WStep::Fsynced;
                    if self.cfg.fsync_stages {
                        return SysOp::Fsync { file: self.file };
                    }
                }
                WStep::Fsynced => {
                    let mb = self.mb();
                    let secs = (ctx.now - self.stage_time).as_secs_f64();
                    let name = self.rw().name();
                    {
                        let mut st = self.shared.borrow_mut();
                        let r = &mut st.stages[self.stage];
                        r.thread_mb[self.id as usize] = mb;
                        r.thread_s[self.id as usize] = secs;
                    }
                    if mb > 0.0 {
                        self.print(format!(
                            "thread {} {name} totals ({:.2} MB/s) {:.2} MB in {:.2}s",
                            self.id,
                            if secs > 0.0 { mb / secs } else { 0.0 },
                            mb,
                            secs
                        ));
                    }
                    self.step = WStep::StageDone;
                    let want = (self.stage as u64 + 1) * threads;
                    let mut st = self.shared.borrow_mut();
                    st.end_arrivals += 1;
                    let n = st.end_arrivals;
                    if threads > 1 && n == want {
                        // global_thread_throughput, printed by the last thread to finish;
                        // its "min transfer" is that thread's own amount, as in the C code.
                        let secs = (ctx.now - st.global_start).as_secs_f64();
                        let total: f64 = st.stages[self.stage].thread_mb.iter().sum();
                        st.stages[self.stage].global = Some((total, secs, mb));
                        if total > 0.0 {
                            let mut line = format!(
                                "{name} throughput ({:.2} MB/s) {:.2} MB in {:.2}s",
                                if secs > 0.0 { total / secs } else { 0.0 },
                                total,
                                secs
                            );
                            if self.cfg.stonewall {
                                let _ = write!(line, " min transfer {mb:.2}MB");
                            }
                            st.output.push(line);
                        }
                    }
                    drop(st);
                    if threads > 1 {
                        ctx.signal(END_BARRIER, n);
                        return SysOp::WaitCounter { counter: END_BARRIER, at_least: want };
                    }
                }
                WStep::StageDone => {
                    // restart_oper: the next selected stage, from the start of the file.
                    self.stage += 1;
                    if self.stage < self.stages.len() {
                        self.started_ios = 0;
                        self.last_offset = 0;
                        self.stonewalled = false;
                        self.oper_start = None;
                        self.step = WStep::StageStart;
                    } else {
                        self.step = WStep::Close;
                    }
                }
                WStep::Close => {
                    self.step = WStep::Done;
                    return SysOp::Close { file: self.file };
                }
                WStep::Done => return SysOp::Exit,
            }
        }
    }
}

/// The run's output as aio-stress prints it (after a line naming the simulation).
pub fn render(r: &AioStressReport, m: &Machine) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "aio-stress 0.21, simulated by iosched: scheduler {}, {}", r.scheduler, m.describe());
    let _ = writeln!(s, "{}", r.command);
    for l in &r.output {
        let _ = writeln!(s, "{l}");
    }
    s
}

/// aio-stress in an A/B study: one row per stage.
impl crate::compare::Benchmark for AioStressConfig {
    fn name(&self) -> &'static str {
        "aio-stress"
    }
    fn command_line(&self) -> String {
        AioStressConfig::command_line(self)
    }
    fn machine(&self) -> &Machine {
        &self.machine
    }
    fn validate(&self) -> Result<(), String> {
        AioStressConfig::validate(self)
    }
    fn measure(&self, spec: &SchedSpec, seed: u64) -> Result<Vec<crate::compare::Measure>, Error> {
        let mut c = self.clone();
        c.machine.seed = seed;
        let r = run(spec, &c)?;
        let prefix = if c.direct { "direct" } else { "buffered" };
        Ok(r.stages
            .iter()
            .map(|s| crate::compare::Measure {
                test: format!("{prefix} {}", s.stage.name()),
                value: s.mb_s(),
                unit: "MB/s",
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand_matches_glibc() {
        let mut r = GlibcRand::default();
        let v: Vec<u32> = (0..4).map(|_| r.rand()).collect();
        assert_eq!(v, [1804289383, 846930886, 1681692777, 1714636915]);
    }

    #[test]
    fn random_offsets_stay_in_the_file() {
        let mut r = GlibcRand::default();
        let (size, rec) = (64 * MIB, 64 << 10);
        for _ in 0..10_000 {
            let o = random_byte_offset(&mut r, 0, size, rec);
            assert!(o >= MIB + PAGE, "{o}");
            assert!(o + rec <= size, "{o}");
            assert_eq!(o % PAGE, 0);
        }
    }
}
