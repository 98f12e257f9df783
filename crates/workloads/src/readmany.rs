//! Reading many small files while a streaming I/O runs (reference `benchmarks.md` §6;
//! the seed: Andrew Morton, "iosched: impact of streaming write on read-many-files",
//! LKML 2003-02-20).
//!
//! The measured command is `find kernel-tree -type f | xargs cat > /dev/null` over a
//! synthesized 2.4.19 tree ([`iosched_benchmarks::kernel_tree`]), from a cold cache. It is modelled as
//! the three programs it is:
//!
//! * `find` walks the tree in readdir order: `getdents` on each directory, `lstat` on each
//!   entry (findutils of 2003 stat()ed every entry for `-type`), and writes each path to
//!   the pipe; it blocks when the pipe (one 4 KiB page) and its stdio buffer (4 KiB) are
//!   full.
//! * `xargs` reads paths into an argument list of at most 128 KiB − 2 KiB (findutils'
//!   default `ARG_MAX - 2048`), then forks a `cat` with them and waits for it.
//! * each `cat` opens, reads in `st_blksize` (4 KiB) calls to EOF, and closes each file in
//!   turn; output to /dev/null costs nothing.
//!
//! The background load starts first and runs for `warmup` before the timed command:
//! `stream-write` is `while true; do dd if=/dev/zero of=foo bs=1M count=512 conv=notrunc;
//! done` (an existing 512 MB file rewritten in place through the page cache, one `dd`
//! process per pass); `stream-read` is `while true; do cat big > /dev/null; done` over a
//! 512 MB file. The elapsed time runs from the start of `find` to the exit of the last
//! `cat`. A run still going at `timeout` is reported as timed out, as the seed did for 2.4.

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use iosched_benchmarks::kernel_tree::KernelTree;
use iosched_core::time::format_duration;
use iosched_core::trace::Trace;
use iosched_core::{Duration, Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::{Dispatched, Shared};
use iosched_sim::{DirId, FileId, Fs, Outcome, ProgCtx, SysOp, VmstatLine};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// The load running beside the reader.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Background {
    None,
    StreamWrite,
    StreamRead,
}

impl Background {
    pub const ALL: [Background; 3] = [Background::None, Background::StreamWrite, Background::StreamRead];
    pub fn name(self) -> &'static str {
        match self {
            Background::None => "none",
            Background::StreamWrite => "stream-write",
            Background::StreamRead => "stream-read",
        }
    }
    pub fn parse(s: &str) -> Result<Background, String> {
        Background::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown background `{s}`: expected none, stream-write or stream-read"))
    }
}

#[derive(Clone, Debug)]
pub struct ReadmanyConfig {
    pub machine: Machine,
    pub background: Background,
    /// How long the background load runs before the timed command starts.
    pub warmup: Duration,
    /// Give up (and report "> timeout") after this much simulated time of the command.
    pub timeout: Duration,
    /// Size of the streamed file.
    pub stream_bytes: u64,
    pub vmstat: bool,
    /// Keep a blkparse-like trace of the block-layer events of the whole run.
    pub trace: bool,
    /// Keep the queue-input trace of the whole run (`--record`), for `iosched replay`.
    pub record_trace: bool,
    /// Fraction of the kernel tree to read (1.0 = the whole 2.4.19 tree; `--quick`
    /// runs use less).
    pub tree_scale: f64,
    /// Keep the requests dispatched to the device in this window, (offset from the
    /// command's start, length): the report's seek picture.
    pub seek_window: Option<(Duration, Duration)>,
}

/// The most dispatches a seek window keeps.
pub const SEEK_SAMPLE_MAX: usize = 20_000;

impl ReadmanyConfig {
    pub fn new(machine: Machine, background: Background) -> Self {
        ReadmanyConfig {
            machine,
            background,
            warmup: Duration::from_secs(20),
            timeout: Duration::from_secs(30 * 60),
            stream_bytes: 512 << 20,
            vmstat: false,
            trace: false,
            record_trace: false,
            tree_scale: 1.0,
            seek_window: None,
        }
    }
}

/// One run's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct ReadmanyResult {
    pub scheduler: String,
    pub background: Background,
    /// Elapsed time of the command; the timeout if it did not finish.
    pub elapsed_s: f64,
    pub timed_out: bool,
    /// When the command started, seconds since the start of the run (the warm-up's end).
    pub start_s: f64,
    pub files_read: u64,
    pub bytes_read: u64,
    /// Bytes the background load moved while the command ran.
    pub background_bytes: u64,
    /// Per-second samples over the command's run (with `vmstat`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vmstat: Vec<VmstatLine>,
    /// The requests dispatched in `seek_window`, if one was asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub seeks: Vec<Dispatched>,
    #[serde(skip)]
    pub trace: Vec<String>,
    /// The queue-input trace of the whole run, warm-up included (with `record_trace`).
    #[serde(skip)]
    pub queue_trace: Option<Trace>,
}

const PIPE_WRITTEN: usize = 0;
const PIPE_READ: usize = 1;
const START: usize = 2;
/// Pipe page plus find's stdio buffer.
const PIPE_CAPACITY: u64 = 8 << 10;
/// findutils' default argument space: ARG_MAX (128 KiB) − 2048.
const ARG_MAX: u64 = (128 << 10) - 2048;

#[derive(Default)]
struct Pipe {
    /// (file, path length + NUL) not yet read by xargs.
    names: VecDeque<(FileId, u64)>,
    bytes: u64,
    written: u64,
    read: u64,
    find_done: bool,
    files_read: u64,
    bytes_read: u64,
    background_bytes: u64,
    start: Option<Instant>,
    end: Option<Instant>,
}

/// The longest `--timeout` and `--warmup` (simulated time).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
pub const MAX_WARMUP: Duration = Duration::from_secs(3600);

/// Run the command once under `spec`.
pub fn run(spec: &SchedSpec, cfg: &ReadmanyConfig) -> Result<ReadmanyResult, Error> {
    cfg.machine.validate()?;
    if cfg.timeout.is_zero() {
        return Err("--timeout 0: expected a positive duration, e.g. 30m".into());
    }
    // Simulated time costs wall time (the streaming background keeps the disk busy
    // throughout): an hour of warm-up and a day of command are far past anything the
    // experiment needs (the seed killed 2.4 after 15 minutes), and a typo beyond them would
    // run for hours.
    if cfg.timeout > MAX_TIMEOUT {
        return Err(format!("--timeout {}: out of range: expected up to 24h", format_duration(cfg.timeout)).into());
    }
    if cfg.warmup > MAX_WARMUP {
        return Err(format!("--warmup {}: out of range: expected 0s..=1h", format_duration(cfg.warmup)).into());
    }
    if !(cfg.tree_scale > 0.0 && cfg.tree_scale <= 1.0) {
        return Err(format!("tree scale {}: expected a fraction in (0, 1]", cfg.tree_scale).into());
    }
    let tree = KernelTree::scaled(cfg.machine.seed, cfg.tree_scale);
    let stream_bytes = if cfg.background == Background::None { 0 } else { cfg.stream_bytes };
    cfg.machine.check_fits(
        tree.total_bytes() + stream_bytes,
        &format!("the kernel tree and the {} MiB streaming file", stream_bytes >> 20),
    )?;
    let pipe: Shared<Pipe> = Rc::new(RefCell::new(Pipe::default()));
    let run = RunSpec {
        what: format!("readmany {spec}"),
        trace_label: format!("readmany, background {}", cfg.background.name()),
        record: cfg.record_trace,
        time_limit: Some(Instant::ZERO + cfg.warmup + cfg.timeout),
        vmstat: cfg.vmstat,
    };
    let ((), Finished { mut sim, trace: queue_trace, .. }) = cfg.machine.run(spec, &run, |sim| {
        if cfg.trace {
            sim.trace = Some(Vec::new());
        }
        if let Some((off, len)) = cfg.seek_window {
            let from = Instant::ZERO + cfg.warmup + off;
            sim.sample_dispatches(from, from + len, SEEK_SAMPLE_MAX);
        }
        let root = sim.fs.root();
        let (tree_root, _) = create_tree(&tree, &mut sim.fs, root);
        let stream = match cfg.background {
            Background::None => None,
            Background::StreamWrite => Some(sim.fs.create_with_size(root, "foo", cfg.stream_bytes)),
            Background::StreamRead => Some(sim.fs.create_with_size(root, "big", cfg.stream_bytes)),
        };
        let walk = find_walk(&sim.fs, tree_root);
        if let Some(f) = stream {
            let write = cfg.background == Background::StreamWrite;
            let bytes = cfg.stream_bytes;
            let p = pipe.clone();
            sim.spawn("sh", Box::new(Looper { file: f, bytes, write, pipe: p, child: None }), IoPrio::NONE);
        }
        let starter = Starter { warmup: cfg.warmup, walk: Some(walk), pipe: pipe.clone(), step: 0, xargs: None };
        let t = sim.spawn("time", Box::new(starter), IoPrio::NONE);
        sim.watch(t);
        Ok(())
    })?;
    let p = pipe.borrow();
    let start = p.start.unwrap_or(Instant::ZERO + cfg.warmup);
    let (elapsed, timed_out) = match p.end {
        Some(e) => ((e - start).as_secs_f64(), false),
        None => (cfg.timeout.as_secs_f64(), true),
    };
    let first = (start - Instant::ZERO).as_secs_f64().floor() as u64;
    let last = first + elapsed.ceil() as u64;
    let vmstat = sim.stats.vmstat.iter().filter(|l| l.second > first && l.second <= last).cloned().collect();
    Ok(ReadmanyResult {
        scheduler: spec.to_string(),
        background: cfg.background,
        elapsed_s: elapsed,
        timed_out,
        start_s: (start - Instant::ZERO).as_secs_f64(),
        files_read: p.files_read,
        bytes_read: p.bytes_read,
        background_bytes: p.background_bytes,
        vmstat,
        seeks: sim.take_dispatches(),
        trace: sim.trace.take().unwrap_or_default(),
        queue_trace,
    })
}

/// What `find` does, in order: read a directory, then stat each of its files (and
/// descend into subdirectories in readdir order).
enum FindStep {
    ReadDir(DirId),
    Stat(FileId, u64),
}

fn find_walk(fs: &Fs, top: DirId) -> VecDeque<FindStep> {
    let mut out = VecDeque::new();
    fn visit(fs: &Fs, d: DirId, out: &mut VecDeque<FindStep>) {
        out.push_back(FindStep::ReadDir(d));
        for &f in &fs.dir(d).files {
            out.push_back(FindStep::Stat(f, fs.path(f).len() as u64 + 1));
        }
        for &s in &fs.dir(d).subdirs {
            visit(fs, s, out);
        }
    }
    visit(fs, top, &mut out);
    out
}

/// The shell running `time (find | xargs cat)` after the warm-up.
struct Starter {
    warmup: Duration,
    walk: Option<VecDeque<FindStep>>,
    pipe: Shared<Pipe>,
    step: u8,
    xargs: Option<iosched_sim::TaskId>,
}

impl iosched_sim::Program for Starter {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        match self.step {
            0 => {
                self.step = 1;
                if self.warmup > Duration::ZERO {
                    return SysOp::Sleep(self.warmup);
                }
                self.next(ctx, None)
            }
            1 => {
                self.step = 2;
                self.pipe.borrow_mut().start = Some(ctx.now);
                ctx.signal(START, 1);
                let find = Find { walk: self.walk.take().unwrap(), pipe: self.pipe.clone(), pending: None };
                SysOp::Spawn { program: Box::new(find), name: "find".into(), prio: IoPrio::NONE }
            }
            2 => {
                self.step = 3;
                let xargs = Xargs { pipe: self.pipe.clone(), batch: Vec::new(), batch_bytes: 0, waiting: false };
                SysOp::Spawn { program: Box::new(xargs), name: "xargs".into(), prio: IoPrio::NONE }
            }
            3 => {
                self.xargs = done.and_then(|d| d.child);
                self.step = 4;
                SysOp::WaitExit(self.xargs.expect("xargs started"))
            }
            _ => {
                let mut p = self.pipe.borrow_mut();
                if p.end.is_none() {
                    p.end = Some(ctx.now);
                }
                SysOp::Exit
            }
        }
    }
}

struct Find {
    walk: VecDeque<FindStep>,
    pipe: Shared<Pipe>,
    /// A path stat()ed but not yet written to the pipe (it was full).
    pending: Option<(FileId, u64)>,
}

impl iosched_sim::Program for Find {
    fn next(&mut self, ctx: &mut ProgCtx, _done: Option<&Outcome>) -> SysOp {
        if let Some((f, len)) = self.pending {
            let mut p = self.pipe.borrow_mut();
            if p.bytes + len > PIPE_CAPACITY {
                let read = p.read;
                return SysOp::WaitCounter { counter: PIPE_READ, at_least: read + 1 };
            }
            p.names.push_back((f, len));
            p.bytes += len;
            p.written += 1;
            let w = p.written;
            drop(p);
            ctx.signal(PIPE_WRITTEN, w);
            self.pending = None;
        }
        match self.walk.pop_front() {
            Some(FindStep::ReadDir(d)) => SysOp::ReadDir { dir: d },
            Some(FindStep::Stat(f, len)) => {
                self.pending = Some((f, len));
                SysOp::Stat { file: f }
            }
            None => {
                let mut p = self.pipe.borrow_mut();
                p.find_done = true;
                // Wake xargs for the end of input.
                let w = p.written + 1;
                drop(p);
                ctx.signal(PIPE_WRITTEN, w);
                SysOp::Exit
            }
        }
    }
}

struct Xargs {
    pipe: Shared<Pipe>,
    batch: Vec<FileId>,
    batch_bytes: u64,
    waiting: bool,
}

impl iosched_sim::Program for Xargs {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if self.waiting {
            // The `cat` just spawned: wait for it.
            self.waiting = false;
            if let Some(c) = done.and_then(|d| d.child) {
                return SysOp::WaitExit(c);
            }
        }
        loop {
            let mut p = self.pipe.borrow_mut();
            if let Some(&(f, len)) = p.names.front() {
                if self.batch_bytes + len > ARG_MAX && !self.batch.is_empty() {
                    drop(p);
                    return self.run_batch();
                }
                p.names.pop_front();
                p.bytes -= len;
                p.read += 1;
                let r = p.read;
                drop(p);
                ctx.signal(PIPE_READ, r);
                self.batch.push(f);
                self.batch_bytes += len;
                continue;
            }
            if p.find_done {
                drop(p);
                if self.batch.is_empty() {
                    return SysOp::Exit;
                }
                return self.run_batch();
            }
            let w = p.written;
            return SysOp::WaitCounter { counter: PIPE_WRITTEN, at_least: w + 1 };
        }
    }
}

impl Xargs {
    fn run_batch(&mut self) -> SysOp {
        let files = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        self.waiting = true;
        let cat = Cat { files: files.into(), pipe: self.pipe.clone(), cur: None, offset: 0 };
        SysOp::Spawn { program: Box::new(cat), name: "cat".into(), prio: IoPrio::NONE }
    }
}

const CAT_BLOCK: u64 = 4096;

struct Cat {
    files: VecDeque<FileId>,
    pipe: Shared<Pipe>,
    /// The open file and whether the last read returned data.
    cur: Option<FileId>,
    offset: u64,
}

impl iosched_sim::Program for Cat {
    fn next(&mut self, _ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let (Some(f), Some(d)) = (self.cur, done)
            && d.kind == "read"
        {
            self.pipe.borrow_mut().bytes_read += d.bytes;
            if d.bytes == 0 {
                // EOF.
                self.cur = None;
                self.pipe.borrow_mut().files_read += 1;
                return SysOp::Close { file: f };
            }
            self.offset += d.bytes;
            return SysOp::Read { file: f, offset: self.offset, len: CAT_BLOCK };
        }
        if let Some(f) = self.cur {
            // Just opened.
            return SysOp::Read { file: f, offset: self.offset, len: CAT_BLOCK };
        }
        match self.files.pop_front() {
            Some(f) => {
                self.cur = Some(f);
                self.offset = 0;
                SysOp::Open { file: f }
            }
            None => SysOp::Exit,
        }
    }
}

/// `while true; do dd …; done` or `while true; do cat big; done`: a shell forking one
/// process per pass.
struct Looper {
    file: FileId,
    bytes: u64,
    write: bool,
    pipe: Shared<Pipe>,
    child: Option<iosched_sim::TaskId>,
}

impl iosched_sim::Program for Looper {
    fn next(&mut self, _ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if self.child.is_none() {
            if let Some(c) = done.and_then(|d| d.child) {
                self.child = Some(c);
                return SysOp::WaitExit(c);
            }
        } else {
            self.child = None;
        }
        let pass = Pass {
            file: self.file,
            bytes: self.bytes,
            write: self.write,
            pos: 0,
            opened: false,
            pipe: self.pipe.clone(),
        };
        let name = if self.write { "dd" } else { "cat" };
        SysOp::Spawn { program: Box::new(pass), name: name.into(), prio: IoPrio::NONE }
    }
}

/// One `dd bs=1M count=512 conv=notrunc` (1 MiB writes in place) or one `cat` of the
/// big file (4 KiB reads).
struct Pass {
    file: FileId,
    bytes: u64,
    write: bool,
    pos: u64,
    opened: bool,
    pipe: Shared<Pipe>,
}

impl iosched_sim::Program for Pass {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        if let Some(d) = done
            && (d.kind == "read" || d.kind == "write")
        {
            let mut p = self.pipe.borrow_mut();
            if ctx.counter(START) > 0 && p.end.is_none() {
                p.background_bytes += d.bytes;
            }
        }
        if !self.opened {
            self.opened = true;
            return SysOp::Open { file: self.file };
        }
        if self.pos >= self.bytes {
            if self.pos != u64::MAX {
                self.pos = u64::MAX;
                return SysOp::Close { file: self.file };
            }
            return SysOp::Exit;
        }
        let len = if self.write { 1 << 20 } else { CAT_BLOCK }.min(self.bytes - self.pos);
        let off = self.pos;
        self.pos += len;
        if self.write {
            SysOp::Write { file: self.file, offset: off, len }
        } else {
            SysOp::Read { file: self.file, offset: off, len }
        }
    }
}

/// Run every (scheduler, background) pair in parallel; results in the order given
/// (scheduler-major). `progress(done, total)` is called as runs finish.
pub fn run_matrix(
    specs: &[SchedSpec],
    backgrounds: &[Background],
    cfg: &ReadmanyConfig,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<ReadmanyResult>, Error> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let jobs: Vec<(usize, Background)> =
        (0..specs.len()).flat_map(|s| backgrounds.iter().map(move |&b| (s, b))).collect();
    let done = AtomicUsize::new(0);
    jobs.par_iter()
        .map(|&(s, b)| {
            let mut c = cfg.clone();
            c.background = b;
            let r = run(&specs[s], &c);
            progress(done.fetch_add(1, Ordering::SeqCst) + 1, jobs.len());
            r
        })
        .collect()
}

/// Create the tree under `parent` with the filesystem's allocator, in creation order
/// (each directory, then its files, as `tar x` does). Returns the tree's root.
fn create_tree(
    tree: &KernelTree,
    fs: &mut iosched_sim::Fs,
    parent: iosched_sim::DirId,
) -> (iosched_sim::DirId, Vec<iosched_sim::FileId>) {
    let mut ids: Vec<iosched_sim::DirId> = Vec::with_capacity(tree.dirs.len());
    let mut out = Vec::with_capacity(tree.files.len());
    let mut fi = 0;
    for (i, (p, name)) in tree.dirs.iter().enumerate() {
        let pid = p.map(|p| ids[p]).unwrap_or(parent);
        ids.push(fs.mkdir(pid, name));
        while fi < tree.files.len() && tree.files[fi].0 == i {
            let (_, name, size) = &tree.files[fi];
            out.push(fs.create_with_size(ids[i], name, *size));
            fi += 1;
        }
    }
    (ids[0], out)
}
