//! sysbench fileio (1.0.20) in the simulator (reference `benchmarks.md` §2; sysbench
//! `src/tests/fileio/sb_fileio.c` and `src/sysbench.c` at tag 1.0.20).
//!
//! **prepare** (untimed, its own process): creates `test_file.0 … test_file.N-1`, each
//! `file-total-size / file-num` bytes, with sequential `write`s of `file-block-size` (the
//! last one may run past the size, as sysbench's loop does), then `fsync` and `close` per
//! file. `seqwr` skips it (its run creates the files). The page cache keeps what prepare
//! left, as with `sysbench prepare && sysbench run`; `drop_caches` empties it first.
//!
//! **run**: the main thread opens every file, starts `threads` workers, and the clock
//! starts when all wait at the start barrier. Each worker loops: check the limits (`time`
//! since the start, or the global `events` count), take one event from the **global**
//! request generator ([`Generator`], one for all threads, as sysbench's mutex-protected
//! one), execute it, and time it. An event is a read, a write or an fsync:
//! * sequential modes: one global cursor through file 0, file 1, … wrapping to file 0;
//! * random modes: `pos = floor(U[0,1) × total)` rounded down to a block, uniform over the
//!   whole data set with replacement (per-thread generators, seeded from the run's seed
//!   as sysbench seeds from the clock);
//! * `rndrw`: read while `(reads+1)/(writes+1) < rw-ratio`, counting *completed* reads
//!   and writes (1.0.20's global counters);
//! * every `fsync-freq` requests, once writes have dirtied the files, `file-num`
//!   consecutive fsync events (one per file) that do not count as requests.
//!
//! Per event latency is the time of its system calls (`sb_event_start`/`stop` around
//! `execute_event`), fsync events included. At the end each worker fsyncs every file in
//! the write modes (`--file-fsync-end`, outside any event but inside the total time) and
//! waits for its outstanding asynchronous I/O. Sync mode is `pread`/`pwrite`; async mode
//! is libaio with up to `file-async-backlog` requests in flight per thread, counted on
//! completion — truly asynchronous only with `direct` (O_DIRECT); without it Linux 2.6
//! performs the I/O inside `io_submit`, and so does the simulation. fsync is synchronous
//! in both modes (1.0.20 calls `fsync()` for async too).
//!
//! Reported as sysbench 1.0.20 does: operations per second over the total time, MiB/s
//! (2^20), total time, events, latency min/avg/max/percentile/sum in ms (the percentile
//! from sysbench's 1024-bucket logarithmic histogram, 0.001 ms .. 100 s), and thread
//! fairness (population standard deviations).
//!
//! Not modelled: `mmap` mode, `--file-extra-flags` sync/dsync, `--file-merged-requests`,
//! fdatasync. The async mode's completions are attributed to requests in submission
//! order (the simulator reports how many completed, not which).

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use crate::oplog::{OpLog, spawn_watched};
use iosched_core::trace::Trace;
use iosched_core::{Duration, Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{FileId, Outcome, ProgCtx, Program, Rng, SysOp, TaskId};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::rc::Rc;

/// `--file-test-mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestMode {
    SeqWr,
    SeqRewr,
    SeqRd,
    RndRd,
    RndWr,
    RndRw,
}

impl TestMode {
    pub const ALL: [TestMode; 6] =
        [TestMode::SeqWr, TestMode::SeqRewr, TestMode::SeqRd, TestMode::RndRd, TestMode::RndWr, TestMode::RndRw];

    pub fn name(self) -> &'static str {
        match self {
            TestMode::SeqWr => "seqwr",
            TestMode::SeqRewr => "seqrewr",
            TestMode::SeqRd => "seqrd",
            TestMode::RndRd => "rndrd",
            TestMode::RndWr => "rndwr",
            TestMode::RndRw => "rndrw",
        }
    }

    pub fn parse(s: &str) -> Result<TestMode, String> {
        TestMode::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            format!(
                "--file-test-mode `{s}`: unknown mode; expected one of {}",
                TestMode::ALL.map(|m| m.name()).join(", ")
            )
        })
    }

    /// sysbench's description (`get_test_mode_str`).
    pub fn describe(self) -> &'static str {
        match self {
            TestMode::SeqWr => "sequential write (creation)",
            TestMode::SeqRewr => "sequential rewrite",
            TestMode::SeqRd => "sequential read",
            TestMode::RndRd => "random read",
            TestMode::RndWr => "random write",
            TestMode::RndRw => "random r/w",
        }
    }

    pub fn is_sequential(self) -> bool {
        matches!(self, TestMode::SeqWr | TestMode::SeqRewr | TestMode::SeqRd)
    }

    /// Modes that write (and so fsync at the end with `--file-fsync-end`).
    pub fn writes(self) -> bool {
        !matches!(self, TestMode::SeqRd | TestMode::RndRd)
    }
}

/// `--file-io-mode`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    Sync,
    Async,
}

impl IoMode {
    pub fn parse(s: &str) -> Result<IoMode, String> {
        match s {
            "sync" => Ok(IoMode::Sync),
            "async" => Ok(IoMode::Async),
            "mmap" => Err("--file-io-mode mmap: not simulated; expected sync or async".into()),
            _ => Err(format!("--file-io-mode `{s}`: unknown I/O mode; expected sync or async")),
        }
    }
    fn describe(self) -> &'static str {
        match self {
            IoMode::Sync => "synchronous",
            IoMode::Async => "asynchronous",
        }
    }
}

/// sysbench fileio options (1.0.20 names and defaults).
#[derive(Clone, Debug)]
pub struct SysbenchConfig {
    pub mode: TestMode,
    /// `--file-num` (128).
    pub file_num: u32,
    /// `--file-total-size` (2 GiB).
    pub file_total_size: u64,
    /// `--file-block-size` (16 KiB).
    pub file_block_size: u64,
    /// `--file-io-mode` (sync).
    pub io_mode: IoMode,
    /// `--file-async-backlog` (128): asynchronous requests in flight per thread.
    pub async_backlog: u32,
    /// `--file-extra-flags=direct`: O_DIRECT.
    pub direct: bool,
    /// `--file-fsync-freq` (100; 0 = off).
    pub fsync_freq: u32,
    /// `--file-fsync-all` (off): fsync after every write; turns the periodic ones into no-ops.
    pub fsync_all: bool,
    /// `--file-fsync-end` (on).
    pub fsync_end: bool,
    /// `--file-rw-ratio` (1.5).
    pub rw_ratio: f64,
    /// `--threads` (1).
    pub threads: u32,
    /// `--time` (10 s); `None` = no time limit.
    pub time: Option<Duration>,
    /// `--events` (0 = unlimited).
    pub events: u64,
    /// `--percentile` (95; 0 = off).
    pub percentile: u32,
    /// Drop the page cache between prepare and run.
    pub drop_caches: bool,
    pub machine: Machine,
    /// Record every operation (for tests and traces).
    pub record_ops: bool,
    /// Keep the queue-input trace of the run (`--record`), for `iosched replay`.
    pub record_trace: bool,
}

impl SysbenchConfig {
    /// sysbench 1.0.20's defaults for `mode`.
    pub fn new(mode: TestMode, machine: Machine) -> Self {
        SysbenchConfig {
            mode,
            file_num: 128,
            file_total_size: 2 << 30,
            file_block_size: 16384,
            io_mode: IoMode::Sync,
            async_backlog: 128,
            direct: false,
            fsync_freq: 100,
            fsync_all: false,
            fsync_end: true,
            rw_ratio: 1.5,
            threads: 1,
            time: Some(Duration::from_secs(10)),
            events: 0,
            percentile: 95,
            drop_caches: false,
            machine,
            record_ops: false,
            record_trace: false,
        }
    }

    /// Bytes per file (`file-total-size / file-num`).
    pub fn file_size(&self) -> u64 {
        self.file_total_size / self.file_num.max(1) as u64
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.file_num == 0 {
            return Err("--file-num 0: expected at least 1 file".into());
        }
        if self.file_total_size == 0 {
            return Err("--file-total-size 0: expected a positive size, e.g. 2G".into());
        }
        if !self.file_total_size.is_multiple_of(self.file_num as u64) {
            return Err(format!(
                "--file-total-size {} is not a multiple of --file-num {}: sysbench's random offsets would fall past the last file",
                self.file_total_size, self.file_num
            ));
        }
        if self.file_block_size == 0 {
            return Err("--file-block-size 0: expected a positive size, e.g. 16K".into());
        }
        if self.file_block_size > self.file_size() {
            return Err(format!(
                "--file-block-size {} is larger than each file ({} bytes = --file-total-size / --file-num)",
                self.file_block_size,
                self.file_size()
            ));
        }
        if self.direct && (!self.file_block_size.is_multiple_of(4096) || !self.file_size().is_multiple_of(4096)) {
            return Err(format!(
                "--file-extra-flags=direct needs --file-block-size ({}) and the file size ({}) to be multiples of 4096 bytes",
                self.file_block_size,
                self.file_size()
            ));
        }
        if !(self.rw_ratio.is_finite() && self.rw_ratio >= 0.0) {
            return Err(format!("--file-rw-ratio {}: expected a non-negative number", self.rw_ratio));
        }
        if !(1..=THREADS_MAX).contains(&self.threads) {
            return Err(format!("--threads {}: out of range: expected 1..={THREADS_MAX}", self.threads));
        }
        if self.io_mode == IoMode::Async && self.async_backlog == 0 {
            return Err("--file-async-backlog 0: expected at least 1".into());
        }
        // sysbench keeps --time in a C int of seconds.
        if let Some(t) = self.time
            && t.as_secs() > i32::MAX as u64
        {
            return Err(format!("--time {}: out of range: expected 0..={} seconds", t.as_secs(), i32::MAX));
        }
        if self.time.is_none_or(|t| t.is_zero()) && self.events == 0 {
            return Err("no limit: set --time or --events (or both)".into());
        }
        if self.percentile > 100 {
            return Err(format!("--percentile {}: expected 0..=100 (0: none)", self.percentile));
        }
        self.machine.validate()?;
        self.machine.check_fits(self.file_total_size, &format!("--file-total-size {} MiB", self.file_total_size >> 20))
    }

    /// The sysbench command line this configuration stands for.
    pub fn command_line(&self) -> String {
        let mut s = format!(
            "sysbench fileio --file-test-mode={} --file-num={} --file-total-size={} --file-block-size={} --file-io-mode={}",
            self.mode.name(),
            self.file_num,
            self.file_total_size,
            self.file_block_size,
            match self.io_mode {
                IoMode::Sync => "sync",
                IoMode::Async => "async",
            }
        );
        if self.direct {
            s.push_str(" --file-extra-flags=direct");
        }
        let _ = write!(
            s,
            " --file-fsync-freq={} --file-fsync-end={} --file-rw-ratio={} --threads={} --time={} --events={} run",
            self.fsync_freq,
            if self.fsync_end { "on" } else { "off" },
            self.rw_ratio,
            self.threads,
            self.time.map_or(0, |t| t.as_secs()),
            self.events
        );
        if self.fsync_all {
            s = s.replace(" run", " --file-fsync-all=on run");
        }
        s
    }
}

// ---------------------------------------------------------------------------------------
// The request generator

/// The most `--threads` a simulated run takes (as `real tiobench`): each is a simulated
/// task with its own state.
pub const THREADS_MAX: u32 = 4096;

/// One sysbench event.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Read { file: u32, pos: u64, size: u64 },
    Write { file: u32, pos: u64, size: u64 },
    Fsync { file: u32 },
}

/// sysbench's global request generator (`file_get_seq_request` / `file_get_rnd_request`),
/// a pure function of its state, the caller's random generator and the completed-op
/// counters.
#[derive(Clone, Debug)]
pub struct Generator {
    mode: TestMode,
    file_num: u32,
    file_size: u64,
    total_size: u64,
    block: u64,
    fsync_freq: u64,
    rw_ratio: f64,
    position: u64,
    current_file: u32,
    fsynced_file: u32,
    is_dirty: bool,
    /// Requests (reads and writes) generated so far.
    pub req_performed: u64,
}

impl Generator {
    pub fn new(cfg: &SysbenchConfig) -> Self {
        Generator {
            mode: cfg.mode,
            file_num: cfg.file_num,
            file_size: cfg.file_size(),
            total_size: cfg.file_total_size,
            block: cfg.file_block_size,
            fsync_freq: cfg.fsync_freq as u64,
            rw_ratio: cfg.rw_ratio,
            position: 0,
            current_file: 0,
            fsynced_file: 0,
            is_dirty: false,
            req_performed: 0,
        }
    }

    /// The periodic fsync series: one fsync per file, then the files are clean.
    fn fsync_due(&mut self) -> Option<Event> {
        if self.fsync_freq != 0 && self.is_dirty && self.req_performed.is_multiple_of(self.fsync_freq) {
            let file = self.fsynced_file;
            self.fsynced_file += 1;
            if self.fsynced_file == self.file_num {
                self.fsynced_file = 0;
                self.is_dirty = false;
            }
            return Some(Event::Fsync { file });
        }
        None
    }

    /// The next event. `reads` and `writes` are the completed reads and writes so far
    /// (they steer `rndrw`); `rng` is the calling thread's generator.
    pub fn next(&mut self, rng: &mut Rng, reads: u64, writes: u64) -> Event {
        if self.mode.is_sequential() {
            let write = self.mode != TestMode::SeqRd;
            if write && let Some(f) = self.fsync_due() {
                return f;
            }
            self.req_performed += 1;
            if write {
                self.is_dirty = true;
            }
            if self.current_file == self.file_num {
                self.position = 0;
                self.current_file = 0;
            }
            let (file, pos) = (self.current_file, self.position);
            let size = self.block.min(self.file_size - pos);
            self.position += size;
            if self.position == self.file_size {
                self.current_file += 1;
                self.position = 0;
            }
            return if write { Event::Write { file, pos, size } } else { Event::Read { file, pos, size } };
        }
        let write = match self.mode {
            TestMode::RndRw => (reads + 1) as f64 / (writes + 1) as f64 >= self.rw_ratio,
            m => m == TestMode::RndWr,
        };
        if let Some(f) = self.fsync_due() {
            return f;
        }
        let mut pos = (rng.unit() * self.total_size as f64) as u64;
        pos -= pos % self.block;
        let file = (pos / self.file_size) as u32;
        let pos = pos % self.file_size;
        let size = self.block.min(self.file_size - pos);
        self.req_performed += 1;
        if write {
            self.is_dirty = true;
            Event::Write { file, pos, size }
        } else {
            Event::Read { file, pos, size }
        }
    }
}

/// sysbench's latency histogram: 1024 logarithmic buckets from 0.001 ms to 100 s
/// (`sb_histogram` with `OPER_LOG_GRANULARITY`, `OPER_LOG_MIN_VALUE`, `OPER_LOG_MAX_VALUE`).
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Vec<u64>,
    deduct: f64,
    mult: f64,
    count: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        let (size, min, max) = (1024usize, 1e-3f64, 1e5f64);
        Histogram {
            buckets: vec![0; size],
            deduct: min.ln(),
            mult: (size - 1) as f64 / (max.ln() - min.ln()),
            count: 0,
        }
    }
}

impl Histogram {
    pub fn update(&mut self, ms: f64) {
        let i = ((ms.ln() - self.deduct) * self.mult + 0.5).floor();
        let i = if i.is_nan() || i < 0.0 { 0 } else { (i as usize).min(self.buckets.len() - 1) };
        self.buckets[i] += 1;
        self.count += 1;
    }

    /// The bucket value at `pct` percent, as `sb_histogram_get_pct_cumulative` computes it.
    pub fn percentile(&self, pct: f64) -> f64 {
        let nmax = (self.count as f64 * pct / 100.0 + 0.5).floor() as u64;
        let mut cur = 0;
        let mut i = 0;
        while i < self.buckets.len() {
            cur += self.buckets[i];
            if cur >= nmax {
                break;
            }
            i += 1;
        }
        (i as f64 / self.mult + self.deduct).exp()
    }
}

// ---------------------------------------------------------------------------------------
// The run

/// A sysbench fileio run's results (the numbers of sysbench's report).
#[derive(Clone, Debug, Serialize)]
pub struct SysbenchReport {
    pub scheduler: String,
    pub mode: TestMode,
    pub seed: u64,
    pub threads: u32,
    pub file_num: u32,
    pub file_size: u64,
    pub block_size: u64,
    pub io_mode: IoMode,
    pub direct: bool,
    pub fsync_freq: u32,
    pub fsync_end: bool,
    pub fsync_all: bool,
    pub rw_ratio: f64,
    pub max_events: u64,
    pub max_time_s: f64,
    pub reads: u64,
    pub writes: u64,
    pub fsyncs: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub total_time_s: f64,
    pub events: u64,
    pub percentile: u32,
    pub lat_min_ms: f64,
    pub lat_avg_ms: f64,
    pub lat_max_ms: f64,
    pub lat_pct_ms: f64,
    pub lat_sum_ms: f64,
    pub events_avg: f64,
    pub events_stddev: f64,
    pub exec_time_avg_s: f64,
    pub exec_time_stddev_s: f64,
    /// The queue-input trace (with `record_trace`).
    #[serde(skip)]
    pub queue_trace: Option<Trace>,
    #[serde(skip)]
    pub ops: Vec<crate::oplog::OpRecord>,
}

const MIB: f64 = (1u64 << 20) as f64;

impl SysbenchReport {
    fn per_s(&self, n: f64) -> f64 {
        if self.total_time_s > 0.0 { n / self.total_time_s } else { 0.0 }
    }
    pub fn reads_per_s(&self) -> f64 {
        self.per_s(self.reads as f64)
    }
    pub fn writes_per_s(&self) -> f64 {
        self.per_s(self.writes as f64)
    }
    pub fn fsyncs_per_s(&self) -> f64 {
        self.per_s(self.fsyncs as f64)
    }
    pub fn read_mib_s(&self) -> f64 {
        self.per_s(self.bytes_read as f64 / MIB)
    }
    pub fn written_mib_s(&self) -> f64 {
        self.per_s(self.bytes_written as f64 / MIB)
    }
    /// Read plus written MiB/s (legacy sysbench's "Total transferred … /sec").
    pub fn total_mib_s(&self) -> f64 {
        self.read_mib_s() + self.written_mib_s()
    }
}

#[derive(Default)]
struct Stats {
    reads: u64,
    writes: u64,
    fsyncs: u64,
    bytes_read: u64,
    bytes_written: u64,
    /// Events started against `--events` (sysbench's `nevents`, bumped on every check).
    nevents: u64,
    hist: Histogram,
    lat_min: Option<Duration>,
    lat_max: Duration,
    lat_sum: Duration,
    /// Per thread: events and their summed time.
    per_thread: Vec<(u64, Duration)>,
    t0: Option<Instant>,
    t_end: Option<Instant>,
}

struct State {
    generator: Generator,
    stats: Stats,
}

/// The counter the main thread raises to start the workers.
const START: usize = 0;

/// Run sysbench fileio (prepare, then run) once under `spec`.
pub fn run(spec: &SchedSpec, cfg: &SysbenchConfig) -> Result<SysbenchReport, Error> {
    cfg.validate()?;
    let state: Shared<State> = Rc::new(RefCell::new(State {
        generator: Generator::new(cfg),
        stats: Stats { per_thread: vec![(0, Duration::ZERO); cfg.threads as usize], ..Stats::default() },
    }));
    let log: Option<OpLog> = cfg.record_ops.then(|| Rc::new(RefCell::new(Vec::new())));
    let run = RunSpec::new(format!("sysbench fileio {spec}"), "sysbench fileio", cfg.record_trace);
    let ((), Finished { trace: queue_trace, .. }) = cfg.machine.run(spec, &run, |sim| {
        let root = sim.fs.root();
        let files: Rc<Vec<FileId>> =
            Rc::new((0..cfg.file_num).map(|i| sim.fs.create(root, &format!("test_file.{i}"))).collect());
        let main = Main { cfg: cfg.clone(), files, state: state.clone(), step: 0, i: 0, workers: Vec::new() };
        spawn_watched(sim, "sysbench", Box::new(main), log.as_ref());
        Ok(())
    })?;
    let st = state.borrow();
    let s = &st.stats;
    let (Some(t0), Some(t1)) = (s.t0, s.t_end) else {
        return Err("sysbench run did not finish".into());
    };
    let events: u64 = s.per_thread.iter().map(|p| p.0).sum();
    let n = cfg.threads as f64;
    let ev_avg = events as f64 / n;
    let ev_sd = (s.per_thread.iter().map(|p| (p.0 as f64 - ev_avg).powi(2)).sum::<f64>() / n).sqrt();
    let sum_s = s.lat_sum.as_secs_f64();
    let t_avg = sum_s / n;
    let t_sd = (s.per_thread.iter().map(|p| (p.1.as_secs_f64() - t_avg).powi(2)).sum::<f64>() / n).sqrt();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok(SysbenchReport {
        scheduler: spec.to_string(),
        mode: cfg.mode,
        seed: cfg.machine.seed,
        threads: cfg.threads,
        file_num: cfg.file_num,
        file_size: cfg.file_size(),
        block_size: cfg.file_block_size,
        io_mode: cfg.io_mode,
        direct: cfg.direct,
        fsync_freq: cfg.fsync_freq,
        fsync_end: cfg.fsync_end,
        fsync_all: cfg.fsync_all,
        rw_ratio: cfg.rw_ratio,
        max_events: cfg.events,
        max_time_s: cfg.time.map_or(0.0, |t| t.as_secs_f64()),
        reads: s.reads,
        writes: s.writes,
        fsyncs: s.fsyncs,
        bytes_read: s.bytes_read,
        bytes_written: s.bytes_written,
        total_time_s: (t1 - t0).as_secs_f64(),
        events,
        percentile: cfg.percentile,
        lat_min_ms: s.lat_min.map_or(0.0, ms),
        lat_avg_ms: if events > 0 { ms(s.lat_sum) / events as f64 } else { 0.0 },
        lat_max_ms: ms(s.lat_max),
        lat_pct_ms: if cfg.percentile > 0 { s.hist.percentile(cfg.percentile as f64) } else { 0.0 },
        lat_sum_ms: ms(s.lat_sum),
        events_avg: ev_avg,
        events_stddev: ev_sd,
        exec_time_avg_s: t_avg,
        exec_time_stddev_s: t_sd,
        queue_trace,
        ops: log.map(|l| l.take()).unwrap_or_default(),
    })
}

/// The sysbench process: prepare (a child process), open the files, start the workers,
/// time them.
struct Main {
    cfg: SysbenchConfig,
    files: Rc<Vec<FileId>>,
    state: Shared<State>,
    step: u8,
    i: usize,
    workers: Vec<TaskId>,
}

impl Program for Main {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        loop {
            match self.step {
                0 => {
                    self.step = 1;
                    if self.cfg.mode != TestMode::SeqWr {
                        let p =
                            Prepare { cfg: self.cfg.clone(), files: self.files.clone(), file: 0, offset: 0, step: 0 };
                        return SysOp::Spawn {
                            program: Box::new(p),
                            name: "sysbench-prepare".into(),
                            prio: IoPrio::NONE,
                        };
                    }
                }
                1 => {
                    self.step = 2;
                    if let Some(c) = done.and_then(|d| d.child) {
                        return SysOp::WaitExit(c);
                    }
                }
                2 => {
                    self.step = 3;
                    if self.cfg.drop_caches {
                        return SysOp::DropCaches;
                    }
                }
                3 => {
                    // file_prepare: seqwr creates the files, every mode opens them.
                    if self.i < self.files.len() {
                        let file = self.files[self.i];
                        self.i += 1;
                        return if self.cfg.mode == TestMode::SeqWr {
                            SysOp::Truncate { file }
                        } else {
                            SysOp::Open { file }
                        };
                    }
                    self.step = 4;
                }
                4 => {
                    if let Some(c) = done.and_then(|d| d.child) {
                        self.workers.push(c);
                    }
                    let id = self.workers.len();
                    if id < self.cfg.threads as usize {
                        let w = Worker::new(id, &self.cfg, self.files.clone(), self.state.clone());
                        let name = format!("sysbench/{id}");
                        // Children inherit recording through the Spawn wrapper.
                        return SysOp::Spawn { program: Box::new(w), name, prio: IoPrio::NONE };
                    }
                    self.step = 5;
                }
                5 => {
                    self.state.borrow_mut().stats.t0 = Some(ctx.now);
                    ctx.signal(START, 1);
                    self.step = 6;
                    self.i = 0;
                }
                6 => {
                    if self.i < self.workers.len() {
                        self.i += 1;
                        return SysOp::WaitExit(self.workers[self.i - 1]);
                    }
                    self.state.borrow_mut().stats.t_end = Some(ctx.now);
                    self.step = 7;
                }
                _ => return SysOp::Exit,
            }
        }
    }
}

/// `sysbench prepare`: create each file with sequential block writes, fsync, close.
struct Prepare {
    cfg: SysbenchConfig,
    files: Rc<Vec<FileId>>,
    file: usize,
    offset: u64,
    step: u8,
}

impl Program for Prepare {
    fn next(&mut self, _ctx: &mut ProgCtx, _done: Option<&Outcome>) -> SysOp {
        let Some(&file) = self.files.get(self.file) else {
            return SysOp::Exit;
        };
        match self.step {
            0 => {
                self.step = 1;
                self.offset = 0;
                SysOp::Open { file }
            }
            1 if self.offset < self.cfg.file_size() => {
                let (offset, len) = (self.offset, self.cfg.file_block_size);
                self.offset += len;
                if self.cfg.direct {
                    SysOp::DirectWrite { file, offset, len }
                } else {
                    SysOp::Write { file, offset, len }
                }
            }
            1 => {
                self.step = 2;
                SysOp::Fsync { file }
            }
            _ => {
                self.step = 0;
                self.file += 1;
                SysOp::Close { file }
            }
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum WStep {
    /// Wait at the start barrier.
    Start,
    /// Check the limits and start the next event.
    Event,
    /// The event's read/write/fsync (or submission) returned.
    Op,
    /// The wait for a free backlog slot returned.
    Reap,
    /// The fsync after a write (`--file-fsync-all`) returned.
    FsyncAll,
    /// `--file-fsync-end`: fsync file `n` next.
    EndFsync(u32),
    /// The final wait for outstanding asynchronous I/O returned.
    EndReap,
    Done,
}

/// One sysbench worker thread.
struct Worker {
    id: usize,
    cfg: SysbenchConfig,
    files: Rc<Vec<FileId>>,
    state: Shared<State>,
    rng: Rng,
    step: WStep,
    cur: Option<Event>,
    started: Instant,
    /// Submitted asynchronous requests not yet reaped, in submission order.
    pending: VecDeque<Event>,
    /// An `AioWait` was issued and its completions are still to be counted.
    waiting: bool,
}

impl Worker {
    fn new(id: usize, cfg: &SysbenchConfig, files: Rc<Vec<FileId>>, state: Shared<State>) -> Self {
        Worker {
            id,
            cfg: cfg.clone(),
            files,
            state,
            rng: Rng::derive(cfg.machine.seed, 1000 + id as u64),
            step: WStep::Start,
            cur: None,
            started: Instant::ZERO,
            pending: VecDeque::new(),
            waiting: false,
        }
    }

    fn is_async(&self) -> bool {
        self.cfg.io_mode == IoMode::Async
    }

    /// `sb_more_events`: the time limit, then the event limit (which counts every check).
    fn more_events(&self, now: Instant) -> bool {
        let mut st = self.state.borrow_mut();
        let s = &mut st.stats;
        if let (Some(t), Some(t0)) = (self.cfg.time, s.t0)
            && !t.is_zero()
            && now - t0 >= t
        {
            return false;
        }
        if self.cfg.events > 0 {
            let n = s.nevents;
            s.nevents += 1;
            if n >= self.cfg.events {
                return false;
            }
        }
        true
    }

    /// Count completed reads and writes.
    fn count(&self, ev: &Event) {
        let mut st = self.state.borrow_mut();
        let s = &mut st.stats;
        match *ev {
            Event::Read { size, .. } => {
                s.reads += 1;
                s.bytes_read += size;
            }
            Event::Write { size, .. } => {
                s.writes += 1;
                s.bytes_written += size;
            }
            Event::Fsync { .. } => s.fsyncs += 1,
        }
    }

    /// Reap `n` asynchronous completions (in submission order).
    fn reap(&mut self, n: usize) {
        for _ in 0..n.min(self.pending.len()) {
            let ev = self.pending.pop_front().expect("pending request");
            self.count(&ev);
        }
    }

    /// Completions an `AioWait` returned: with O_DIRECT the kernel's count; without it
    /// every submitted request already completed inside `io_submit`.
    fn reaped(&self, done: Option<&Outcome>) -> usize {
        if self.cfg.direct { done.map_or(0, |d| d.bytes as usize) } else { self.pending.len() }
    }

    fn finish_event(&mut self, now: Instant) {
        let lat = now - self.started;
        let mut st = self.state.borrow_mut();
        let s = &mut st.stats;
        s.hist.update(lat.as_secs_f64() * 1000.0);
        s.lat_min = Some(s.lat_min.map_or(lat, |m| m.min(lat)));
        s.lat_max = s.lat_max.max(lat);
        s.lat_sum += lat;
        s.per_thread[self.id].0 += 1;
        s.per_thread[self.id].1 += lat;
        self.cur = None;
    }

    fn data_op(&self, ev: Event) -> SysOp {
        let (file, offset, len, write) = match ev {
            Event::Read { file, pos, size } => (file, pos, size, false),
            Event::Write { file, pos, size } => (file, pos, size, true),
            Event::Fsync { .. } => unreachable!("not a data event"),
        };
        let file = self.files[file as usize];
        match (self.is_async() && self.cfg.direct, self.cfg.direct, write) {
            (true, _, write) => SysOp::AioSubmit { file, offset, len, write, prio: None },
            (false, true, false) => SysOp::DirectRead { file, offset, len },
            (false, true, true) => SysOp::DirectWrite { file, offset, len },
            (false, false, false) => SysOp::Read { file, offset, len },
            (false, false, true) => SysOp::Write { file, offset, len },
        }
    }

    fn aio_wait(&mut self, min: usize) -> SysOp {
        self.waiting = true;
        SysOp::AioWait { min: if self.cfg.direct { min as u32 } else { 0 } }
    }
}

impl Program for Worker {
    fn next(&mut self, ctx: &mut ProgCtx, done: Option<&Outcome>) -> SysOp {
        loop {
            match self.step {
                WStep::Start => {
                    self.step = WStep::Event;
                    return SysOp::WaitCounter { counter: START, at_least: 1 };
                }
                WStep::Event => {
                    if !self.more_events(ctx.now) {
                        self.step = WStep::EndFsync(0);
                        continue;
                    }
                    let ev = {
                        let mut st = self.state.borrow_mut();
                        let (r, w) = (st.stats.reads, st.stats.writes);
                        st.generator.next(&mut self.rng, r, w)
                    };
                    self.cur = Some(ev);
                    self.started = ctx.now;
                    self.step = WStep::Op;
                    match ev {
                        // With --file-fsync-all the periodic fsync events are ignored.
                        Event::Fsync { .. } if self.cfg.fsync_all => {
                            self.finish_event(ctx.now);
                            self.step = WStep::Event;
                        }
                        Event::Fsync { file } => return SysOp::Fsync { file: self.files[file as usize] },
                        ev => return self.data_op(ev),
                    }
                }
                WStep::Op => {
                    let ev = self.cur.expect("an event in progress");
                    if let Event::Fsync { .. } = ev {
                        self.count(&ev);
                        self.finish_event(ctx.now);
                        self.step = WStep::Event;
                        continue;
                    }
                    if self.is_async() {
                        self.pending.push_back(ev);
                        if self.pending.len() >= self.cfg.async_backlog as usize {
                            self.step = WStep::Reap;
                            return self.aio_wait(1);
                        }
                    }
                    self.step = WStep::Reap;
                    continue;
                }
                WStep::Reap => {
                    if std::mem::take(&mut self.waiting) {
                        let n = self.reaped(done);
                        self.reap(n);
                    }
                    let ev = self.cur.expect("an event in progress");
                    self.step = WStep::FsyncAll;
                    if self.cfg.fsync_all
                        && let Event::Write { file, .. } = ev
                    {
                        return SysOp::Fsync { file: self.files[file as usize] };
                    }
                    continue;
                }
                WStep::FsyncAll => {
                    let ev = self.cur.expect("an event in progress");
                    if self.cfg.fsync_all && matches!(ev, Event::Write { .. }) {
                        self.count(&Event::Fsync { file: 0 });
                    }
                    if !self.is_async() {
                        self.count(&ev);
                    }
                    self.finish_event(ctx.now);
                    self.step = WStep::Event;
                }
                WStep::EndFsync(i) => {
                    if i > 0 {
                        self.count(&Event::Fsync { file: i - 1 });
                    }
                    if self.cfg.fsync_end && self.cfg.mode.writes() && i < self.cfg.file_num {
                        self.step = WStep::EndFsync(i + 1);
                        return SysOp::Fsync { file: self.files[i as usize] };
                    }
                    self.step = WStep::EndReap;
                    if self.is_async() && !self.pending.is_empty() {
                        let n = self.pending.len();
                        return self.aio_wait(n);
                    }
                }
                WStep::EndReap => {
                    if std::mem::take(&mut self.waiting) {
                        let n = self.reaped(done);
                        self.reap(n);
                        if !self.pending.is_empty() {
                            let n = self.pending.len();
                            return self.aio_wait(n);
                        }
                    }
                    self.step = WStep::Done;
                }
                WStep::Done => return SysOp::Exit,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Output

/// C's `%.5g` for the sizes sysbench prints.
fn fmt_g5(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let exp = format!("{v:.4e}");
    let e: i32 = exp.split('e').nth(1).and_then(|x| x.parse().ok()).unwrap_or(0);
    if !(-4..5).contains(&e) {
        return exp;
    }
    let s = format!("{:.*}", (4 - e).max(0) as usize, v);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// `sb_print_value_size`: 16777216 → `16Mi` (the caller appends `B`).
pub fn print_value_size(v: f64) -> String {
    let mods = ['K', 'M', 'G', 'T'];
    let (mut v, mut i) = (v, 0);
    while i < mods.len() && v >= 1024.0 {
        v /= 1024.0;
        i += 1;
    }
    if i > 0 { format!("{}{}i", fmt_g5(v), mods[i - 1]) } else { fmt_g5(v) }
}

/// The run's output as sysbench 1.0.20 prints it (after a line naming the simulation).
pub fn render(r: &SysbenchReport, m: &Machine) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "sysbench 1.0.20 fileio, simulated by iosched: scheduler {}, {}", r.scheduler, m.describe());
    let _ = writeln!(s);
    let _ = writeln!(s, "Running the test with following options:");
    let _ = writeln!(s, "Number of threads: {}", r.threads);
    let _ = writeln!(s, "Initializing random number generator from seed ({}).\n", r.seed);
    let _ = writeln!(s);
    let _ = writeln!(s, "Extra file open flags: {}", if r.direct { "directio" } else { "(none)" });
    let _ = writeln!(s, "{} files, {}B each", r.file_num, print_value_size(r.file_size as f64));
    let _ = writeln!(s, "{}B total file size", print_value_size((r.file_size * r.file_num as u64) as f64));
    let _ = writeln!(s, "Block size {}B", print_value_size(r.block_size as f64));
    if !r.mode.is_sequential() {
        let _ = writeln!(s, "Number of IO requests: {}", r.max_events);
        let _ = writeln!(s, "Read/Write ratio for combined random IO test: {:.2}", r.rw_ratio);
    }
    if r.fsync_freq > 0 {
        let _ = writeln!(s, "Periodic FSYNC enabled, calling fsync() each {} requests.", r.fsync_freq);
    }
    if r.fsync_end {
        let _ = writeln!(s, "Calling fsync() at the end of test, Enabled.");
    }
    if r.fsync_all {
        let _ = writeln!(s, "Calling fsync() after each write operation.");
    }
    let _ = writeln!(s, "Using {} I/O mode", r.io_mode.describe());
    let _ = writeln!(s, "Doing {} test", r.mode.describe());
    let _ = writeln!(s, "Initializing worker threads...");
    let _ = writeln!(s);
    let _ = writeln!(s, "Threads started!");
    let _ = writeln!(s);
    let _ = writeln!(s);
    let _ = writeln!(s, "File operations:");
    let _ = writeln!(s, "    reads/s:                      {:.2}", r.reads_per_s());
    let _ = writeln!(s, "    writes/s:                     {:.2}", r.writes_per_s());
    let _ = writeln!(s, "    fsyncs/s:                     {:.2}", r.fsyncs_per_s());
    let _ = writeln!(s);
    let _ = writeln!(s, "Throughput:");
    let _ = writeln!(s, "    read, MiB/s:                  {:.2}", r.read_mib_s());
    let _ = writeln!(s, "    written, MiB/s:               {:.2}", r.written_mib_s());
    let _ = writeln!(s);
    let _ = writeln!(s, "General statistics:");
    let _ = writeln!(s, "    total time:                          {:.4}s", r.total_time_s);
    let _ = writeln!(s, "    total number of events:              {}", r.events);
    let _ = writeln!(s);
    let _ = writeln!(s, "Latency (ms):");
    let _ = writeln!(s, "         min: {:>39.2}", r.lat_min_ms);
    let _ = writeln!(s, "         avg: {:>39.2}", r.lat_avg_ms);
    let _ = writeln!(s, "         max: {:>39.2}", r.lat_max_ms);
    if r.percentile > 0 {
        let _ = writeln!(s, "        {:>3}th percentile: {:>27.2}", r.percentile, r.lat_pct_ms);
    } else {
        let _ = writeln!(s, "         percentile stats:               disabled");
    }
    let _ = writeln!(s, "         sum: {:>39.2}", r.lat_sum_ms);
    let _ = writeln!(s);
    let _ = writeln!(s, "Threads fairness:");
    let _ = writeln!(s, "    events (avg/stddev):           {:.4}/{:3.2}", r.events_avg, r.events_stddev);
    let _ = writeln!(s, "    execution time (avg/stddev):   {:.4}/{:3.2}", r.exec_time_avg_s, r.exec_time_stddev_s);
    let _ = writeln!(s);
    s
}

/// sysbench in an A/B study: one row, total MiB/s read and written.
impl crate::compare::Benchmark for SysbenchConfig {
    fn name(&self) -> &'static str {
        "sysbench"
    }
    fn command_line(&self) -> String {
        SysbenchConfig::command_line(self)
    }
    fn machine(&self) -> &Machine {
        &self.machine
    }
    fn validate(&self) -> Result<(), String> {
        SysbenchConfig::validate(self)
    }
    fn measure(&self, spec: &SchedSpec, seed: u64) -> Result<Vec<crate::compare::Measure>, Error> {
        let mut c = self.clone();
        c.machine.seed = seed;
        let r = run(spec, &c)?;
        Ok(vec![crate::compare::Measure { test: c.mode.name().to_string(), value: r.total_mib_s(), unit: "MiB/s" }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_sysbench() {
        assert_eq!(print_value_size(16777216.0), "16Mi");
        assert_eq!(print_value_size(2147483648.0), "2Gi");
        assert_eq!(print_value_size(16384.0), "16Ki");
        assert_eq!(print_value_size(1000.0), "1000");
        assert_eq!(print_value_size(1536.0), "1.5Ki");
        assert_eq!(print_value_size(1024.0 * 1000.0 / 3.0), "333.33Ki");
    }

    #[test]
    fn histogram_percentile_is_a_bucket_value() {
        let mut h = Histogram::default();
        for _ in 0..95 {
            h.update(1.0);
        }
        for _ in 0..5 {
            h.update(50.0);
        }
        let p = h.percentile(95.0);
        // Buckets are ~1.8 % wide: the 95th percentile is the 1 ms bucket.
        assert!((p - 1.0).abs() / 1.0 < 0.02, "{p}");
        assert!((h.percentile(100.0) - 50.0).abs() / 50.0 < 0.02);
        h.update(0.0); // clamps to the first bucket
    }
}
