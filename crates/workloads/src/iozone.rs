//! iozone (3.487) in the simulator (reference `benchmarks.md` §3; iozone.c
//! `write_perf_test`, `read_perf_test`, `random_perf_test`, `reverse_perf_test`,
//! `rewriterec_perf_test`, `read_stride_perf_test`, `begin`, `auto_test`).
//!
//! One process, one file. For each (file size, record size) — one pair, or auto mode's
//! grid — iozone runs the selected tests in order on the same file and finally unlinks
//! it. Each test times only its loop of `numrecs = size / record` record operations: the
//! clock starts after `open` and the untimed `fsync` that precedes the loop, and stops
//! right after the loop (plus an `fsync` with `-e`); the `fsync` (msync for mmap) and
//! `close` after it are not timed. Rates are `(bytes / seconds) >> 10`, KiB/s as
//! integers.
//!
//! * `-i 0` write/rewrite: the file is truncated, unlinked and created fresh; pass 1
//!   writes every record sequentially (block allocation included), pass 2 rewrites them.
//! * `-i 1` read/reread: each pass opens, fsyncs, reads record 0 once untimed (to prime),
//!   then reads every record sequentially.
//! * `-i 2` random read/random write: one permutation of all record numbers (iozone's
//!   swap shuffle driven by `lrand48` after `srand48(0)`: the same every run) is read in
//!   pass 1 and written in pass 2, each record exactly once.
//! * `-i 3` backward read: from the last record to the first (two passes; the first is
//!   reported, as iozone does).
//! * `-i 4` record rewrite: `numrecs` writes of the record at offset 0.
//! * `-i 5` stride read: read one record, skip `stride` (17) records, wrap with the start
//!   offset bumped by one record.
//! * `-B` mmap: the file is mapped and every record is a `memcpy` to or from the mapping
//!   (page faults with read-around, dirty pages written back by `msync`/writeback); write
//!   tests first extend the file by writing its last record, as iozone's `initfile` does.
//!   The `memcpy` costs user CPU at the CPU profile's page-copy rate.
//!
//! Not modelled: stdio tests (`-i 6`, `-i 7`; their columns print blank, as iozone does
//! for tests not selected), `-I`, `-o`, `-c`, throughput mode. The `sync()` before each
//! size is a no-op here (every test ends with an fsync).

use crate::error::Error;
use crate::machine::{Finished, Machine, RunSpec};
use crate::oplog::{OpLog, OpRecord, spawn_watched};
use iosched_core::trace::Trace;
use iosched_core::{Duration, Instant};
use iosched_policies::SchedSpec;
use iosched_sim::host::Shared;
use iosched_sim::{CpuProfile, FileId, Outcome, ProgCtx, Program, SysOp};
use serde::Serialize;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::rc::Rc;

/// A result column of iozone's table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Column {
    Write,
    Rewrite,
    Read,
    Reread,
    RandomRead,
    RandomWrite,
    BkwdRead,
    RecordRewrite,
    StrideRead,
}

impl Column {
    pub const ALL: [Column; 9] = [
        Column::Write,
        Column::Rewrite,
        Column::Read,
        Column::Reread,
        Column::RandomRead,
        Column::RandomWrite,
        Column::BkwdRead,
        Column::RecordRewrite,
        Column::StrideRead,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Column::Write => "write",
            Column::Rewrite => "rewrite",
            Column::Read => "read",
            Column::Reread => "reread",
            Column::RandomRead => "random read",
            Column::RandomWrite => "random write",
            Column::BkwdRead => "bkwd read",
            Column::RecordRewrite => "record rewrite",
            Column::StrideRead => "stride read",
        }
    }

    /// The `-i` test number that produces this column.
    pub fn test(self) -> u8 {
        match self {
            Column::Write | Column::Rewrite => 0,
            Column::Read | Column::Reread => 1,
            Column::RandomRead | Column::RandomWrite => 2,
            Column::BkwdRead => 3,
            Column::RecordRewrite => 4,
            Column::StrideRead => 5,
        }
    }

    fn index(self) -> usize {
        Column::ALL.iter().position(|&c| c == self).expect("a column")
    }
}

/// File and record sizes: one pair (`-s`, `-r`) or auto mode's grid (`-a`).
#[derive(Clone, Debug, PartialEq)]
pub enum Sizes {
    Single {
        file: u64,
        record: u64,
    },
    /// `-a` with `-n`/`-g` (file sizes, default 64 KiB .. 512 MiB) and `-y`/`-q` (record
    /// sizes, default 4 KiB .. 16 MiB); `-z` keeps small records for large files.
    Auto {
        min_file: u64,
        max_file: u64,
        min_record: Option<u64>,
        max_record: Option<u64>,
        all_records: bool,
    },
}

/// iozone options.
#[derive(Clone, Debug)]
pub struct IozoneConfig {
    /// `-i` tests (0 = write/rewrite … 5 = stride read); 0 must be among them.
    pub tests: Vec<u8>,
    pub sizes: Sizes,
    /// `-B`: mmap files.
    pub mmap: bool,
    /// `-e`: include the fsync in the timing.
    pub include_flush: bool,
    /// `-j`: stride in records (17).
    pub stride: u64,
    pub machine: Machine,
    /// Record every operation (for tests and traces).
    pub record_ops: bool,
    /// Keep the queue-input trace of the run (`--record`), for `iosched replay`.
    pub record_trace: bool,
}

const KIB: u64 = 1024;
/// Auto mode's defaults (iozone.c `KILOBYTES_START`, `KILOBYTES_END`, `RECLEN_START`,
/// `RECLEN_END`, `CROSSOVER`, `LARGE_REC`).
pub const AUTO_MIN_FILE: u64 = 64 * KIB;
pub const AUTO_MAX_FILE: u64 = 512 << 20;
pub const AUTO_MIN_RECORD: u64 = 4 * KIB;
pub const AUTO_MAX_RECORD: u64 = 16 << 20;
const CROSSOVER: u64 = 16 << 20;
const LARGE_REC: u64 = 64 * KIB;

impl IozoneConfig {
    /// `iozone -s file -r record -i 0 -i 1 -i 2 -i 3 -i 4 -i 5`.
    pub fn single(file: u64, record: u64, machine: Machine) -> Self {
        IozoneConfig {
            tests: (0..=5).collect(),
            sizes: Sizes::Single { file, record },
            mmap: false,
            include_flush: false,
            stride: 17,
            machine,
            record_ops: false,
            record_trace: false,
        }
    }

    /// `iozone -a` (tests 0..5).
    pub fn auto(machine: Machine) -> Self {
        IozoneConfig {
            sizes: Sizes::Auto {
                min_file: AUTO_MIN_FILE,
                max_file: AUTO_MAX_FILE,
                min_record: None,
                max_record: None,
                all_records: false,
            },
            ..Self::single(AUTO_MIN_FILE, AUTO_MIN_RECORD, machine)
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.tests.is_empty() {
            return Err("-i: expected at least one test (0..5)".into());
        }
        for &t in &self.tests {
            if t > 5 {
                return Err(format!(
                    "-i {t}: unknown or not simulated test; expected 0 (write/rewrite), 1 (read/reread), 2 (random read/write), 3 (backward read), 4 (record rewrite) or 5 (stride read)"
                ));
            }
        }
        if !self.tests.contains(&0) {
            return Err("-i 0 is required: the other tests read and write the file it creates".into());
        }
        // (Bounded so that stride × record stays inside u64 for records up to 4 GiB.)
        if !(1..=u32::MAX as u64).contains(&self.stride) {
            return Err(format!("-j {}: out of range: expected a stride of 1..={} records", self.stride, u32::MAX));
        }
        let kib = |what: &str, v: u64| -> Result<(), String> {
            if v == 0 {
                Err(format!("{what} 0: expected a positive size"))
            } else if !v.is_multiple_of(KIB) {
                Err(format!("{what} {v}: expected a whole number of KiB (iozone's unit)"))
            } else {
                Ok(())
            }
        };
        match self.sizes {
            Sizes::Single { file, record } => {
                kib("-s", file)?;
                kib("-r", record)?;
                if record > file {
                    return Err(format!(
                        "-r {} KiB is larger than the file (-s {} KiB): expected a record no larger than the file",
                        record / KIB,
                        file / KIB
                    ));
                }
            }
            Sizes::Auto { min_file, max_file, min_record, max_record, .. } => {
                kib("-n", min_file)?;
                kib("-g", max_file)?;
                if min_file > max_file {
                    return Err(format!("-n {} KiB is above -g {} KiB", min_file / KIB, max_file / KIB));
                }
                let (lo, hi) = (min_record.unwrap_or(AUTO_MIN_RECORD), max_record.unwrap_or(AUTO_MAX_RECORD));
                kib("-y", lo)?;
                kib("-q", hi)?;
                if lo > hi {
                    return Err(format!("-y {} KiB is above -q {} KiB", lo / KIB, hi / KIB));
                }
                if lo > min_file {
                    return Err(format!(
                        "record length {} KiB is greater than the smallest file ({} KiB)",
                        lo / KIB,
                        min_file / KIB
                    ));
                }
            }
        }
        self.machine.validate()?;
        let largest = match self.sizes {
            Sizes::Single { file, .. } => file,
            Sizes::Auto { max_file, .. } => max_file,
        };
        self.machine.check_fits(largest, &format!("a {} MiB file", largest >> 20))
    }

    /// The (file size, record size) pairs in run order (`auto_test`).
    pub fn combos(&self) -> Vec<(u64, u64)> {
        match self.sizes {
            Sizes::Single { file, record } => vec![(file, record)],
            Sizes::Auto { min_file, max_file, min_record, max_record, all_records } => {
                let crossover = !all_records && min_record.is_none() && max_record.is_none();
                let mut lo = min_record.unwrap_or(AUTO_MIN_RECORD);
                let hi = max_record.unwrap_or(AUTO_MAX_RECORD);
                let mut out = Vec::new();
                let mut file = min_file;
                while file <= max_file {
                    if crossover && file > CROSSOVER {
                        lo = LARGE_REC;
                    }
                    let mut rec = lo;
                    while rec <= hi && rec <= file {
                        out.push((file, rec));
                        rec *= 2;
                    }
                    file *= 2;
                }
                out
            }
        }
    }

    /// The iozone command line this configuration stands for.
    pub fn command_line(&self) -> String {
        let mut s = String::from("iozone");
        match self.sizes {
            Sizes::Single { file, record } => {
                let _ = write!(s, " -s {}k -r {}k", file / KIB, record / KIB);
            }
            Sizes::Auto { min_file, max_file, min_record, max_record, all_records } => {
                s.push_str(" -a");
                if min_file != AUTO_MIN_FILE {
                    let _ = write!(s, " -n {}k", min_file / KIB);
                }
                if max_file != AUTO_MAX_FILE {
                    let _ = write!(s, " -g {}k", max_file / KIB);
                }
                if let Some(r) = min_record {
                    let _ = write!(s, " -y {}k", r / KIB);
                }
                if let Some(r) = max_record {
                    let _ = write!(s, " -q {}k", r / KIB);
                }
                if all_records {
                    s.push_str(" -z");
                }
            }
        }
        for t in &self.tests {
            let _ = write!(s, " -i {t}");
        }
        if self.mmap {
            s.push_str(" -B");
        }
        if self.include_flush {
            s.push_str(" -e");
        }
        if self.stride != 17 {
            let _ = write!(s, " -j {}", self.stride);
        }
        s
    }
}

// ---------------------------------------------------------------------------------------
// The operation sequence (a pure generator)

/// One step of iozone's sequence on its file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// `open` of the existing file.
    Open,
    /// `creat` / `open(O_CREAT)` + `ftruncate(0)`: an empty file.
    Create,
    Close,
    Fsync,
    /// `unlink`: the file's blocks and cached pages are freed.
    Unlink,
    Read {
        offset: u64,
        len: u64,
    },
    Write {
        offset: u64,
        len: u64,
    },
    MmapRead {
        offset: u64,
        len: u64,
    },
    MmapWrite {
        offset: u64,
        len: u64,
    },
    /// User-space `memcpy` of this many bytes (mmap tests).
    Copy {
        len: u64,
    },
    /// `time_so_far()` before the loop.
    Start,
    /// `time_so_far()` after the loop: the column's time.
    Stop(Column),
}

/// The steps of test `test` (`-i` number) for one (file size, record size), as iozone
/// performs them.
pub fn test_steps(cfg: &IozoneConfig, test: u8, file: u64, record: u64) -> Vec<Step> {
    let n = file / record;
    let bytes = n * record;
    let mut v = Vec::new();
    let read = |v: &mut Vec<Step>, offset: u64| {
        if cfg.mmap {
            v.push(Step::MmapRead { offset, len: record });
            v.push(Step::Copy { len: record });
        } else {
            v.push(Step::Read { offset, len: record });
        }
    };
    let write = |v: &mut Vec<Step>, offset: u64| {
        if cfg.mmap {
            v.push(Step::MmapWrite { offset, len: record });
            v.push(Step::Copy { len: record });
        } else {
            v.push(Step::Write { offset, len: record });
        }
    };
    // initfile(fd, size, 1, …): extend the file by writing its last record before mapping.
    let extend = |v: &mut Vec<Step>| {
        if cfg.mmap {
            v.push(Step::Write { offset: bytes - record, len: record });
        }
    };
    // The end of a test: -e's timed fsync, the stop, then the untimed fsync (msync) and close.
    let stop = |v: &mut Vec<Step>, col: Option<Column>| {
        if cfg.include_flush {
            v.push(Step::Fsync);
        }
        if let Some(c) = col {
            v.push(Step::Stop(c));
        }
        v.push(Step::Fsync);
        v.push(Step::Close);
    };
    match test {
        0 => {
            // The sanity check: open(O_CREAT), ftruncate(0), close, unlink.
            v.extend([Step::Create, Step::Close, Step::Unlink]);
            for (pass, col) in [Column::Write, Column::Rewrite].into_iter().enumerate() {
                if pass == 0 {
                    v.extend([Step::Create, Step::Close]);
                }
                v.push(Step::Open);
                extend(&mut v);
                v.push(Step::Fsync);
                v.push(Step::Start);
                for i in 0..n {
                    write(&mut v, i * record);
                }
                stop(&mut v, Some(col));
            }
        }
        1 => {
            for col in [Column::Read, Column::Reread] {
                v.push(Step::Open);
                v.push(Step::Fsync);
                // Prime: one untimed read of record 0 (read(), even with mmap).
                v.push(Step::Read { offset: 0, len: record });
                v.push(Step::Start);
                for i in 0..n {
                    read(&mut v, i * record);
                }
                stop(&mut v, Some(col));
            }
        }
        2 => {
            let perm = permutation(n);
            for col in [Column::RandomRead, Column::RandomWrite] {
                v.push(Step::Open);
                v.push(Step::Start);
                for &r in &perm {
                    if col == Column::RandomRead { read(&mut v, r * record) } else { write(&mut v, r * record) }
                }
                stop(&mut v, Some(col));
            }
        }
        3 => {
            for pass in 0..2 {
                v.push(Step::Open);
                v.push(Step::Fsync);
                v.push(Step::Start);
                for i in 0..n {
                    read(&mut v, (n - 1 - i) * record);
                }
                stop(&mut v, (pass == 0).then_some(Column::BkwdRead));
            }
        }
        4 => {
            v.push(Step::Open);
            extend(&mut v);
            v.push(Step::Fsync);
            v.push(Step::Start);
            for _ in 0..n {
                write(&mut v, 0);
            }
            stop(&mut v, Some(Column::RecordRewrite));
        }
        5 => {
            v.push(Step::Open);
            v.push(Step::Fsync);
            v.push(Step::Start);
            for off in stride_offsets(n, record, cfg.stride) {
                read(&mut v, off);
            }
            stop(&mut v, Some(Column::StrideRead));
        }
        _ => {}
    }
    v
}

/// Offsets of the stride read (`read_stride_perf_test`): after each record, skip `stride`
/// records; when the next would pass the end, restart one record further along.
pub fn stride_offsets(n: u64, record: u64, stride: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(n as usize);
    let (mut pos, mut wrap) = (0u64, 0u64);
    for _ in 0..n {
        out.push(pos);
        pos += record;
        if pos + stride * record >= n * record - record {
            wrap += 1;
            pos = if n <= stride { 0 } else { (wrap % n) * record };
        } else {
            pos += stride * record - record;
        }
    }
    out
}

/// glibc's `lrand48` (48-bit linear congruential generator).
#[derive(Clone, Debug)]
pub struct Lrand48(u64);

impl Lrand48 {
    /// `srand48(seed)`.
    pub fn new(seed: u32) -> Self {
        Lrand48(((seed as u64) << 16) | 0x330E)
    }
    /// The next `lrand48()` value, in `0 .. 2^31`.
    pub fn lrand48(&mut self) -> u64 {
        self.0 = (self.0.wrapping_mul(0x5DEECE66D).wrapping_add(0xB)) & ((1 << 48) - 1);
        self.0 >> 17
    }
}

/// iozone's record permutation for the random test: `recnum[i] = i`, then for each `i`
/// swap with `lrand48() % n` after `srand48(0)`.
pub fn permutation(n: u64) -> Vec<u64> {
    let mut r = Lrand48::new(0);
    let mut v: Vec<u64> = (0..n).collect();
    for i in 0..n as usize {
        let j = (r.lrand48() % n) as usize;
        v.swap(i, j);
    }
    v
}

// ---------------------------------------------------------------------------------------
// The run

/// One line of iozone's table: KiB/s per column (None: not run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IozoneRow {
    pub kb: u64,
    pub reclen_kb: u64,
    pub values: [Option<u64>; 9],
}

impl IozoneRow {
    pub fn get(&self, c: Column) -> Option<u64> {
        self.values[c.index()]
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct IozoneReport {
    pub scheduler: String,
    pub seed: u64,
    pub command: String,
    pub mmap: bool,
    pub tests: Vec<u8>,
    /// `-j`: the stride read's stride, in records.
    pub stride: u64,
    pub rows: Vec<IozoneRow>,
    /// The queue-input trace (with `record_trace`).
    #[serde(skip)]
    pub queue_trace: Option<Trace>,
    #[serde(skip)]
    pub ops: Vec<OpRecord>,
}

/// Run iozone once under `spec`.
pub fn run(spec: &SchedSpec, cfg: &IozoneConfig) -> Result<IozoneReport, Error> {
    cfg.validate()?;
    let copy_page = CpuProfile::by_name(&cfg.machine.cpu)?.copy_page;
    let rows: Shared<Vec<IozoneRow>> = Rc::new(RefCell::new(Vec::new()));
    let log: Option<OpLog> = cfg.record_ops.then(|| Rc::new(RefCell::new(Vec::new())));
    let run = RunSpec::new(format!("iozone {spec}"), "iozone", cfg.record_trace);
    let ((), Finished { trace: queue_trace, .. }) = cfg.machine.run(spec, &run, |sim| {
        let root = sim.fs.root();
        let file = sim.fs.create(root, "iozone.tmp");
        let prog = Iozone {
            cfg: cfg.clone(),
            file,
            copy_page,
            combos: cfg.combos().into(),
            current: None,
            tests: VecDeque::new(),
            steps: VecDeque::new(),
            t0: Instant::ZERO,
            rows: rows.clone(),
        };
        spawn_watched(sim, "iozone", Box::new(prog), log.as_ref());
        Ok(())
    })?;
    let rows = rows.take();
    if rows.len() != cfg.combos().len() {
        return Err(format!("iozone did not finish ({} of {} sizes done)", rows.len(), cfg.combos().len()).into());
    }
    Ok(IozoneReport {
        scheduler: spec.to_string(),
        seed: cfg.machine.seed,
        command: cfg.command_line(),
        mmap: cfg.mmap,
        tests: cfg.tests.clone(),
        stride: cfg.stride,
        rows,
        queue_trace,
        ops: log.map(|l| l.take()).unwrap_or_default(),
    })
}

/// The iozone process.
struct Iozone {
    cfg: IozoneConfig,
    file: FileId,
    copy_page: Duration,
    combos: VecDeque<(u64, u64)>,
    /// The size pair being run and its row.
    current: Option<(u64, u64, IozoneRow)>,
    tests: VecDeque<u8>,
    steps: VecDeque<Step>,
    t0: Instant,
    rows: Shared<Vec<IozoneRow>>,
}

impl Program for Iozone {
    fn next(&mut self, ctx: &mut ProgCtx, _done: Option<&Outcome>) -> SysOp {
        loop {
            if let Some(step) = self.steps.pop_front() {
                let file = self.file;
                return match step {
                    Step::Open => SysOp::Open { file },
                    Step::Create | Step::Unlink => SysOp::Truncate { file },
                    Step::Close => SysOp::Close { file },
                    Step::Fsync => SysOp::Fsync { file },
                    Step::Read { offset, len } => SysOp::Read { file, offset, len },
                    Step::Write { offset, len } => SysOp::Write { file, offset, len },
                    Step::MmapRead { offset, len } => SysOp::MmapRead { file, offset, len },
                    Step::MmapWrite { offset, len } => SysOp::MmapWrite { file, offset, len },
                    Step::Copy { len } => SysOp::Think(self.copy_page * len.div_ceil(4096) as u32),
                    Step::Start => {
                        self.t0 = ctx.now;
                        continue;
                    }
                    Step::Stop(col) => {
                        let (file_bytes, record, row) = self.current.as_mut().expect("a size in progress");
                        let bytes = *file_bytes / *record * *record;
                        // iozone's floor: a time under 1 µs counts as its timer resolution.
                        let secs = (ctx.now - self.t0).as_secs_f64().max(1e-6);
                        row.values[col.index()] = Some(((bytes as f64 / secs) as u64) >> 10);
                        continue;
                    }
                };
            }
            if let Some(t) = self.tests.pop_front() {
                let (file, record, _) = self.current.as_ref().expect("a size in progress");
                self.steps = test_steps(&self.cfg, t, *file, *record).into();
                continue;
            }
            if let Some((_, _, row)) = self.current.take() {
                self.rows.borrow_mut().push(row);
                // begin() ends by unlinking the file.
                self.steps.push_back(Step::Unlink);
                continue;
            }
            let Some((file, record)) = self.combos.pop_front() else {
                return SysOp::Exit;
            };
            let row = IozoneRow { kb: file / KIB, reclen_kb: record / KIB, values: [None; 9] };
            self.current = Some((file, record, row));
            self.tests = (0..=5u8).filter(|t| self.cfg.tests.contains(t)).collect();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Output

/// The blank printed for a test not selected (`test_output[]`), for tests 0..=7.
const TEST_BLANK: [&str; 8] = [
    "                  ",
    "                  ",
    "                  ",
    "         ",
    "          ",
    "          ",
    "                  ",
    "                 ",
];

/// The run's output as iozone prints it (after a line naming the simulation): the
/// preamble, the two header lines and one row per (file size, record size).
pub fn render(r: &IozoneReport, m: &Machine) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "iozone 3.487, simulated by iosched: scheduler {}, {}", r.scheduler, m.describe());
    let _ = writeln!(s, "\tIozone: Performance Test of File I/O");
    let _ = writeln!(s, "\t        Version $Revision: 3.487 $");
    let _ = writeln!(s);
    if r.mmap {
        let _ = writeln!(s, "\tUsing mmap files");
    }
    let _ = writeln!(s, "\tCommand line used: {}", r.command);
    let _ = writeln!(s, "\tOutput is in kBytes/sec");
    let _ = writeln!(s, "\tTime Resolution = 0.000001 seconds.");
    let _ = writeln!(s, "\tFile stride size set to {} * record size.", r.stride);
    // CONTROL_STRING3: "%16s%8s%9s%9s%8s%10s%8s %9s%9s %9s %9s%9s%9s%9s%9s\n"
    let header = |f: [&str; 15]| {
        format!(
            "{:>16}{:>8}{:>9}{:>9}{:>8}{:>10}{:>8} {:>9}{:>9} {:>9} {:>9}{:>9}{:>9}{:>9}{:>9}\n",
            f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14]
        )
    };
    let (f1, f2, f3, f4) = if r.mmap { ("", "", "", "") } else { ("fwrite", "frewrite", "fread", "freread") };
    s.push_str(&header(["", "", "", "", "", "", "random", "random", "bkwd", "record", "stride", "", "", "", ""]));
    s.push_str(&header([
        "kB", "reclen", "write", "rewrite", "read", "reread", "read", "write", "read", "rewrite", "read", f1, f2, f3,
        f4,
    ]));
    // Tests run by begin(): 0..=8 without -B (8 is the no-op mix), 0..=6 with it.
    let num_tests = if r.mmap { 7 } else { 9 };
    for row in &r.rows {
        let _ = write!(s, "{:>16}{:>8}", row.kb, row.reclen_kb);
        for t in 0..num_tests {
            if !r.tests.contains(&(t as u8)) {
                s.push_str(TEST_BLANK.get(t).copied().unwrap_or(""));
                continue;
            }
            let v = |c: Column| row.get(c).unwrap_or(0);
            match t {
                0 => write!(s, "{:>9}{:>9}", v(Column::Write), v(Column::Rewrite)),
                1 => write!(s, "{:>9}{:>9}", v(Column::Read), v(Column::Reread)),
                2 => write!(s, "{:>9}{:>9}", v(Column::RandomRead), v(Column::RandomWrite)),
                3 => write!(s, "{:>9}", v(Column::BkwdRead)),
                4 => write!(s, " {:>9}", v(Column::RecordRewrite)),
                _ => write!(s, " {:>9}", v(Column::StrideRead)),
            }
            .expect("writing to a String");
        }
        s.push('\n');
    }
    s.push_str("\niozone test complete.\n");
    s
}

/// iozone in an A/B study: one row per column of its single (file size, record) line.
impl crate::compare::Benchmark for IozoneConfig {
    fn name(&self) -> &'static str {
        "iozone"
    }
    fn command_line(&self) -> String {
        IozoneConfig::command_line(self)
    }
    fn machine(&self) -> &Machine {
        &self.machine
    }
    fn validate(&self) -> Result<(), String> {
        IozoneConfig::validate(self)
    }
    fn measure(&self, spec: &SchedSpec, seed: u64) -> Result<Vec<crate::compare::Measure>, Error> {
        let mut c = self.clone();
        c.machine.seed = seed;
        let r = run(spec, &c)?;
        let row = r.rows.first().ok_or("iozone produced no row")?;
        let prefix = if c.mmap { "mmap " } else { "" };
        Ok(Column::ALL
            .iter()
            .filter_map(|&col| {
                row.get(col).map(|v| crate::compare::Measure {
                    test: format!("{prefix}{}", col.name()),
                    value: v as f64,
                    unit: "KiB/s",
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lrand48_matches_glibc() {
        // glibc: srand48(0); lrand48() × 4.
        let mut r = Lrand48::new(0);
        let v: Vec<u64> = (0..4).map(|_| r.lrand48()).collect();
        assert_eq!(v, [366850414, 1610402240, 206956554, 1869309841]);
    }

    #[test]
    fn permutation_touches_every_record_once() {
        let p = permutation(1000);
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_ne!(p[..10], s[..10]);
        assert_eq!(permutation(1000), p, "srand48(0): the same every run");
    }

    #[test]
    fn stride_covers_the_file() {
        let n = 100;
        let offs = stride_offsets(n, 4096, 17);
        assert_eq!(offs.len(), 100);
        assert_eq!(&offs[..3], &[0, 17 * 4096, 34 * 4096]);
        // Every offset is inside the file and record-aligned.
        assert!(offs.iter().all(|&o| o < n * 4096 && o % 4096 == 0));
    }

    #[test]
    fn auto_grid_follows_auto_test() {
        let m = Machine::new("null", 256 << 20, "piii-1000", 1);
        let c = IozoneConfig::auto(m);
        let g = c.combos();
        assert_eq!(g[0], (64 * KIB, 4 * KIB));
        // 64 KiB file: records 4..64 KiB.
        assert_eq!(g.iter().filter(|x| x.0 == 64 * KIB).count(), 5);
        // Past 16 MiB only records of 64 KiB and more.
        assert!(g.iter().filter(|x| x.0 > 16 << 20).all(|x| x.1 >= 64 * KIB));
        assert_eq!(g.iter().filter(|x| x.0 == 16 << 20).map(|x| x.1).min(), Some(4 * KIB));
        assert_eq!(g.last(), Some(&(512 << 20, 16 << 20)));
    }
}
