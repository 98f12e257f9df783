//! `iosched sysbench fileio`, `iosched iozone`, `iosched aio-stress` and `iosched compare`:
//! the simulated benchmark tools with their own option names and output, and A/B studies.

use crate::record;
use crate::sim::{MachineArgs, Progress, specs, specs_fit};
use iosched_benchmarks::units::parse_size;
use iosched_core::Duration;
use iosched_core::trace::Trace;
use iosched_policies::SchedSpec;
use iosched_workloads::aio_stress::{self, AioStressConfig, Stage};
use iosched_workloads::compare::{self, CompareConfig};
use iosched_workloads::iozone::{self, IozoneConfig, Sizes};
use iosched_workloads::machine::Machine;
use iosched_workloads::sysbench::{self, IoMode, SysbenchConfig, TestMode};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The 2007-era machine these benchmarks default to (`compare::machine_2007`).
fn machine(m: &MachineArgs) -> Result<Machine, String> {
    let d = compare::machine_2007(m.seed);
    m.machine_on(&d.disk, &format!("{}M", d.mem_bytes >> 20), &d.cpu, &d.host)
}

fn print_json<T: serde::Serialize>(v: &T) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, v).map_err(|e| e.to_string())?;
    writeln!(out).map_err(|e| e.to_string())
}

/// Run `f` for every scheduler spec, printing each result as text or one JSON line (with
/// the machine it ran on under `machine`); with `record`, write the queue-input trace
/// `trace` takes from each result to `record` (`record.<n>` with several specs).
fn for_each_spec<R: serde::Serialize>(
    specs: &[SchedSpec],
    json: bool,
    m: &Machine,
    record: Option<&Path>,
    f: impl Fn(&SchedSpec) -> Result<R, String>,
    trace: impl Fn(&mut R) -> Option<Trace>,
    text: impl Fn(&R) -> String,
) -> Result<(), String> {
    // Each scheduler's report is printed as its run ends: a run stopped by a signal
    // leaves the finished ones printed.
    let p = Progress::new("runs");
    for (i, s) in specs.iter().enumerate() {
        p.tick(i, specs.len(), &s.text);
        let mut r = f(s)?;
        if let (Some(base), Some(t)) = (record, trace(&mut r)) {
            record::write(base, &t, i + 1, specs.len(), json)?;
        }
        p.suspend(|| -> Result<(), String> {
            if json {
                let mut v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
                v["machine"] = m.json();
                print_json(&v)?;
            } else {
                if i > 0 {
                    println!();
                }
                print!("{}", text(&r));
            }
            Ok(())
        })?;
    }
    p.finish();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// sysbench

#[derive(clap::Args, Debug)]
pub struct SysbenchArgs {
    #[command(subcommand)]
    pub test: SysbenchTest,
}

#[derive(clap::Subcommand, Debug)]
pub enum SysbenchTest {
    /// File I/O: prepare the files, then run the mode (sysbench 1.0.20 semantics). Default
    /// machine: --disk sata-2004-ncq --mem 1024M --cpu p4-ht --host linux-2.6 (2007-like).
    Fileio(FileioArgs),
}

#[derive(clap::Args, Debug)]
pub struct FileioArgs {
    /// Schedulers, comma-separated specs (one run each).
    #[arg(long, default_value = "cfq")]
    pub sched: String,
    /// A setting for every scheduler (key=value; repeatable, each key once, and not one a --sched spec sets).
    #[arg(long)]
    pub set: Vec<String>,
    /// seqwr, seqrewr, seqrd, rndrd, rndwr or rndrw.
    #[arg(long)]
    pub file_test_mode: String,
    /// Number of files, at least 1.
    #[arg(long, allow_negative_numbers = true, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub file_num: u32,
    /// Total size of all files.
    #[arg(allow_hyphen_values = true, long, default_value = "2G")]
    pub file_total_size: String,
    /// Bytes per request.
    #[arg(allow_hyphen_values = true, long, default_value = "16K")]
    pub file_block_size: String,
    /// sync or async (libaio).
    #[arg(long, default_value = "sync")]
    pub file_io_mode: String,
    /// Asynchronous requests in flight per thread.
    #[arg(long, allow_negative_numbers = true, default_value_t = 128)]
    pub file_async_backlog: u32,
    /// Extra open flags: `direct` (O_DIRECT) or empty.
    #[arg(long, default_value = "")]
    pub file_extra_flags: String,
    /// fsync every N requests (0 = off).
    #[arg(long, allow_negative_numbers = true, default_value_t = 100)]
    pub file_fsync_freq: u32,
    /// fsync after every write (on/off).
    #[arg(long, default_value = "off")]
    pub file_fsync_all: String,
    /// fsync all files at the end of the test (on/off).
    #[arg(long, default_value = "on")]
    pub file_fsync_end: String,
    /// Reads per write in rndrw.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1.5)]
    pub file_rw_ratio: f64,
    /// Worker threads (1..=4096).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    pub threads: u32,
    /// Time limit in seconds, 0..=2147483647 (0 = none).
    #[arg(long, allow_negative_numbers = true, default_value_t = 10)]
    pub time: u64,
    /// Event limit (0 = none).
    #[arg(long, allow_negative_numbers = true, default_value_t = 0)]
    pub events: u64,
    /// Latency percentile to report, 0..=100 (0 = off).
    #[arg(long, allow_negative_numbers = true, default_value_t = 95, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub percentile: u32,
    /// Drop the page cache between prepare and run.
    #[arg(long)]
    pub drop_caches: bool,
    /// One JSON object per scheduler instead of sysbench's report.
    #[arg(long)]
    pub json: bool,
    /// Write each scheduler's queue inputs and dispatches (the trace format of `iosched
    /// replay`) to FILE; with several schedulers, to `FILE.<n>` (n = 1, 2, … in --sched
    /// order).
    /// An existing file is replaced only if it is an iosched trace.
    #[arg(long = "record", value_name = "FILE")]
    pub record_trace: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

fn on_off(opt: &str, v: &str) -> Result<bool, String> {
    match v {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(format!("--{opt} `{v}`: expected on or off")),
    }
}

pub fn sysbench(a: SysbenchArgs) -> Result<(), String> {
    let SysbenchTest::Fileio(a) = a.test;
    let specs = specs(&a.sched, &a.set)?;
    let m = machine(&a.machine)?;
    specs_fit(&m, &specs)?;
    let mut cfg = SysbenchConfig::new(TestMode::parse(&a.file_test_mode)?, m.clone());
    cfg.file_num = a.file_num;
    cfg.file_total_size = parse_size(&a.file_total_size).map_err(|e| format!("--file-total-size: {e}"))?;
    cfg.file_block_size = parse_size(&a.file_block_size).map_err(|e| format!("--file-block-size: {e}"))?;
    cfg.io_mode = IoMode::parse(&a.file_io_mode)?;
    cfg.async_backlog = a.file_async_backlog;
    cfg.direct = match a.file_extra_flags.as_str() {
        "" => false,
        "direct" => true,
        f => {
            return Err(format!(
                "--file-extra-flags `{f}`: expected `direct` or nothing (sync and dsync are not simulated)"
            ));
        }
    };
    cfg.fsync_freq = a.file_fsync_freq;
    cfg.fsync_all = on_off("file-fsync-all", &a.file_fsync_all)?;
    cfg.fsync_end = on_off("file-fsync-end", &a.file_fsync_end)?;
    cfg.rw_ratio = a.file_rw_ratio;
    cfg.threads = a.threads;
    cfg.time = (a.time > 0).then(|| Duration::from_secs(a.time));
    cfg.events = a.events;
    cfg.percentile = a.percentile;
    cfg.drop_caches = a.drop_caches;
    cfg.record_trace = record::check(a.record_trace.as_deref(), specs.len())?;
    cfg.validate()?;
    let trace = |r: &mut sysbench::SysbenchReport| r.queue_trace.take();
    for_each_spec(
        &specs,
        a.json,
        &m,
        a.record_trace.as_deref(),
        |s| Ok(sysbench::run(s, &cfg)?),
        trace,
        |r| sysbench::render(r, &m),
    )
}

// ---------------------------------------------------------------------------------------
// iozone

#[derive(clap::Args, Debug)]
pub struct IozoneArgs {
    /// Schedulers, comma-separated specs (one run each).
    #[arg(long, default_value = "cfq")]
    pub sched: String,
    /// A setting for every scheduler (key=value; repeatable, each key once, and not one a --sched spec sets).
    #[arg(long)]
    pub set: Vec<String>,
    /// Auto mode: file sizes 64 KiB .. 512 MiB, records 4 KiB .. 16 MiB.
    #[arg(short = 'a')]
    pub auto: bool,
    /// File size (KiB unless a unit is given: 512m, 1g). Default 512 KiB, as iozone.
    #[arg(allow_hyphen_values = true, short = 's')]
    pub size: Option<String>,
    /// Record size (KiB unless a unit is given). Default 4 KiB.
    #[arg(allow_hyphen_values = true, short = 'r')]
    pub record: Option<String>,
    /// Tests (repeatable): 0 write/rewrite, 1 read/reread, 2 random read/write,
    /// 3 backward read, 4 record rewrite, 5 stride read. Default: all six.
    #[arg(short = 'i')]
    pub tests: Vec<u8>,
    /// mmap files.
    #[arg(short = 'B')]
    pub mmap: bool,
    /// Include fsync in the timing.
    #[arg(short = 'e')]
    pub include_flush: bool,
    /// Stride of the stride read, in records.
    #[arg(short = 'j', allow_negative_numbers = true, default_value_t = 17)]
    pub stride: u64,
    /// Auto mode: smallest file size (default 64 KiB).
    #[arg(allow_hyphen_values = true, short = 'n')]
    pub min_file: Option<String>,
    /// Auto mode: largest file size (default 512 MiB).
    #[arg(allow_hyphen_values = true, short = 'g')]
    pub max_file: Option<String>,
    /// Auto mode: smallest record size (default 4 KiB; without -y/-q/-z, files over 16 MiB start at 64 KiB).
    #[arg(allow_hyphen_values = true, short = 'y')]
    pub min_record: Option<String>,
    /// Auto mode: largest record size (default 16 MiB).
    #[arg(allow_hyphen_values = true, short = 'q')]
    pub max_record: Option<String>,
    /// Auto mode: keep small records for files over 16 MiB.
    #[arg(short = 'z')]
    pub all_records: bool,
    /// One JSON object per scheduler instead of iozone's table.
    #[arg(long)]
    pub json: bool,
    /// Write each scheduler's queue inputs and dispatches (the trace format of `iosched
    /// replay`) to FILE; with several schedulers, to `FILE.<n>` (n = 1, 2, … in --sched
    /// order).
    /// An existing file is replaced only if it is an iosched trace.
    #[arg(long = "record", value_name = "FILE")]
    pub record_trace: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

pub fn iozone(a: IozoneArgs) -> Result<(), String> {
    let specs = specs(&a.sched, &a.set)?;
    let m = machine(&a.machine)?;
    specs_fit(&m, &specs)?;
    let opt = |o: &str, v: &Option<String>| v.as_deref().map(|v| bare_unit_size(o, v, "k")).transpose();
    let mut cfg = if a.auto {
        if a.size.is_some() || a.record.is_some() {
            return Err("-a with -s or -r: auto mode chooses the sizes; use -n/-g and -y/-q to bound them".into());
        }
        let mut c = IozoneConfig::auto(m.clone());
        c.sizes = Sizes::Auto {
            min_file: opt("n", &a.min_file)?.unwrap_or(iozone::AUTO_MIN_FILE),
            max_file: opt("g", &a.max_file)?.unwrap_or(iozone::AUTO_MAX_FILE),
            min_record: opt("y", &a.min_record)?,
            max_record: opt("q", &a.max_record)?,
            all_records: a.all_records,
        };
        c
    } else {
        let given: Vec<&str> = [
            ("-n", a.min_file.is_some()),
            ("-g", a.max_file.is_some()),
            ("-y", a.min_record.is_some()),
            ("-q", a.max_record.is_some()),
            ("-z", a.all_records),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(f, _)| *f)
        .collect();
        if !given.is_empty() {
            return Err(format!(
                "{} only shape{} auto mode: add -a, or drop {} and set the single run's sizes with -s and -r",
                given.join(", "),
                if given.len() == 1 { "s" } else { "" },
                if given.len() == 1 { "it" } else { "them" }
            ));
        }
        let file = opt("s", &a.size)?.unwrap_or(512 << 10);
        let record = opt("r", &a.record)?.unwrap_or(4 << 10);
        IozoneConfig::single(file, record, m.clone())
    };
    if !a.tests.is_empty() {
        cfg.tests = a.tests.clone();
    }
    cfg.mmap = a.mmap;
    cfg.include_flush = a.include_flush;
    cfg.stride = a.stride;
    cfg.record_trace = record::check(a.record_trace.as_deref(), specs.len())?;
    cfg.validate()?;
    let trace = |r: &mut iozone::IozoneReport| r.queue_trace.take();
    for_each_spec(
        &specs,
        a.json,
        &m,
        a.record_trace.as_deref(),
        |s| Ok(iozone::run(s, &cfg)?),
        trace,
        |r| iozone::render(r, &m),
    )
}

// ---------------------------------------------------------------------------------------
// aio-stress

#[derive(clap::Args, Debug)]
pub struct AioStressArgs {
    /// Schedulers, comma-separated specs (one run each).
    #[arg(long, default_value = "cfq")]
    pub sched: String,
    /// A setting for every scheduler (key=value; repeatable, each key once, and not one a --sched spec sets).
    #[arg(long)]
    pub set: Vec<String>,
    /// File size (MiB unless a unit is given).
    #[arg(allow_hyphen_values = true, short = 's', default_value = "1024")]
    pub size: String,
    /// Record size (KiB unless a unit is given).
    #[arg(allow_hyphen_values = true, short = 'r', default_value = "64")]
    pub record: String,
    /// Pending requests per file.
    #[arg(short = 'd', allow_negative_numbers = true, default_value_t = 64)]
    pub depth: u32,
    /// I/Os per file per iteration.
    #[arg(short = 'i', allow_negative_numbers = true, default_value_t = 8)]
    pub io_iter: u32,
    /// Threads (one file each).
    #[arg(short = 't', allow_negative_numbers = true, default_value_t = 1)]
    pub threads: u32,
    /// O_DIRECT.
    #[arg(short = 'O')]
    pub direct: bool,
    /// Stages (repeatable): 0 write, 1 read, 2 random write, 3 random read. Default: all.
    #[arg(short = 'o')]
    pub stages: Vec<u32>,
    /// No fsync between stages.
    #[arg(short = 'n')]
    pub no_fsync: bool,
    /// No stonewalling between threads.
    #[arg(short = 'x')]
    pub no_stonewall: bool,
    /// One JSON object per scheduler instead of aio-stress's lines.
    #[arg(long)]
    pub json: bool,
    /// Write each scheduler's queue inputs and dispatches (the trace format of `iosched
    /// replay`) to FILE; with several schedulers, to `FILE.<n>` (n = 1, 2, … in --sched
    /// order).
    /// An existing file is replaced only if it is an iosched trace.
    #[arg(long = "record", value_name = "FILE")]
    pub record_trace: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
}

/// A size option of a tool whose bare numbers are in `unit` (`k` or `m`): iozone's (KiB),
/// aio-stress's `parse_size` (MiB for -s, KiB for -r). Errors quote what was typed, not the
/// unit added to it.
fn bare_unit_size(opt: &str, v: &str, unit: &str) -> Result<u64, String> {
    let t = v.trim();
    let r = if t.chars().all(|c| c.is_ascii_digit()) { format!("{t}{unit}") } else { t.to_string() };
    parse_size(&r).map_err(|e| {
        let bare = if unit == "m" { "MiB" } else { "KiB" };
        format!("-{opt}: {} (a bare number is {bare})", e.replace(&format!("`{r}`"), &format!("`{t}`")))
    })
}

pub fn aio_stress(a: AioStressArgs) -> Result<(), String> {
    let specs = specs(&a.sched, &a.set)?;
    let m = machine(&a.machine)?;
    specs_fit(&m, &specs)?;
    let mut cfg = AioStressConfig::new(m.clone());
    cfg.file_size = bare_unit_size("s", &a.size, "m")?;
    cfg.record = bare_unit_size("r", &a.record, "k")?;
    cfg.depth = a.depth;
    cfg.io_iter = a.io_iter;
    cfg.threads = a.threads;
    cfg.direct = a.direct;
    cfg.stages = a.stages.iter().map(|&n| Stage::from_number(n)).collect::<Result<_, _>>()?;
    cfg.fsync_stages = !a.no_fsync;
    cfg.stonewall = !a.no_stonewall;
    cfg.record_trace = record::check(a.record_trace.as_deref(), specs.len())?;
    cfg.validate()?;
    // Reads of a file no stage wrote read holes: Linux returns zeros without touching the
    // disk, so the rate is the CPU's. Said, not hidden (aio-stress itself says nothing).
    let stages = if cfg.stages.is_empty() { Stage::ALL.to_vec() } else { cfg.stages.clone() };
    if let Some(first_read) = stages.iter().position(|s| matches!(s, Stage::Read | Stage::RandomRead))
        && !stages[..first_read].iter().any(|s| matches!(s, Stage::Write | Stage::RandomWrite))
    {
        eprintln!(
            "iosched: note: no stage writes the files before the first read stage, so the reads find holes, which \
             Linux reads as zeros without touching the disk: the read rates measure the CPU, not the scheduler \
             (add -o 0 before the read stages)"
        );
    }
    let trace = |r: &mut aio_stress::AioStressReport| r.queue_trace.take();
    for_each_spec(
        &specs,
        a.json,
        &m,
        a.record_trace.as_deref(),
        |s| Ok(aio_stress::run(s, &cfg)?),
        trace,
        |r| aio_stress::render(r, &m),
    )
}

// ---------------------------------------------------------------------------------------
// compare

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Scheduler spec A (the baseline), e.g. cfq.
    #[arg(long = "a")]
    pub a: String,
    /// Scheduler spec B (the change), e.g. cfq:defer_slice_start=1.
    #[arg(long = "b")]
    pub b: String,
    /// Benchmarks, comma-separated: seed-2007 (all four suites), sysbench, tiobench,
    /// iozone, aio-stress.
    #[arg(long, default_value = "seed-2007")]
    pub bench: String,
    /// Seeds per side, 1..=1000 (seeds --seed .. --seed + runs − 1).
    #[arg(long, allow_negative_numbers = true, default_value_t = 5)]
    pub runs: u32,
    /// One JSON object per row: bench, test, a_mean, b_mean, unit, change_pct, a_cv_pct,
    /// b_cv_pct, within_variation (the seed report's rule), verdict (the table's: no change
    /// — equal means or a change below 0.0001 % —, within variation, B higher, B lower),
    /// then a, b, runs, seeds and machine (disk, mem_bytes, cpu, host, mapped_bytes).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub report: crate::report::ReportArg,
    #[command(flatten)]
    pub machine: MachineArgs,
}

fn one_spec(opt: &str, s: &str) -> Result<SchedSpec, String> {
    let v = iosched_policies::parse_list(s).map_err(|e| format!("--{opt}: {e}"))?;
    match v.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(format!("--{opt} `{s}`: expected one scheduler spec, e.g. cfq:slice_idle=0")),
    }
}

pub fn compare(a: CompareArgs) -> Result<(), String> {
    let spec_a = one_spec("a", &a.a)?;
    let spec_b = one_spec("b", &a.b)?;
    let m = machine(&a.machine)?;
    spec_a.build().map_err(|e| format!("--a: {e}"))?;
    m.queue(&spec_a).map_err(|e| format!("--a: {e}"))?;
    m.queue(&spec_b).map_err(|e| format!("--b: {e}"))?;
    let cfg = CompareConfig {
        a: spec_a,
        b: spec_b,
        items: compare::items(&a.bench, &m)?,
        runs: a.runs,
        first_seed: a.machine.seed,
    };
    a.report.check()?;
    let p = Progress::new("compare");
    let report = compare::run(&cfg, &|d, t, what| p.tick(d, t, what))?;
    p.finish();
    let docs = report
        .json_rows()
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    a.report.write(&docs)?;
    if a.json {
        for r in report.json_rows() {
            print_json(&r)?;
        }
    } else {
        print!("{}", compare::render(&report));
    }
    Ok(())
}
