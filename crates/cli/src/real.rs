//! `iosched real …`: the workloads on real files and block devices (crate `iosched-rt`).

use crate::record;
use iosched_benchmarks::tiobench::{Phase, TiobenchRecord, cut_identifiers_note, table, table_as_printed};
use iosched_policies::{SchedSpec, parse_list};
use iosched_rt::workload::{Control, Ended, fio_like, readmany, tiobench};
use iosched_rt::{BackendChoice, Options, Report};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Box<Sub>,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// tiobench (tiotest 0.3.3 semantics) with real threads and O_DIRECT I/O; prints the
    /// tiobench.pl table (or --json).
    Tiobench(TiobenchArgs),
    /// Read a generated tree of small files while a streaming writer runs (akpm 2003).
    Readmany(ReadmanyArgs),
    /// A fio-like load at a fixed queue depth (for comparing with fio).
    FioLike(FioArgs),
    /// fio job files on the target (O_DIRECT jobs; the same I/Os as `iosched fio` draws in
    /// the simulator), reported as fio does. Job options may follow `--`.
    Fio(FioJobArgs),
}

#[derive(clap::Args, Debug)]
struct FioJobArgs {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    report: crate::report::ReportArg,
    /// fio job files (fio 3.x syntax).
    jobfiles: Vec<PathBuf>,
    /// normal (fio's text, in outline), json (fio's JSON document, one per scheduler) or
    /// json+ (with each direction's completion-latency histogram, fio's `bins`).
    #[arg(long, default_value = "normal")]
    output_format: String,
    /// fio job options after `--` (`--name=N` starts a job; options before it are global).
    #[arg(last = true)]
    job_options: Vec<String>,
}

/// Options every real workload takes.
#[derive(clap::Args, Debug)]
struct Common {
    /// Scheduler specs, comma separated (e.g. `deadline,as,as:antic_expire=0`); one run each.
    #[arg(long, default_value = "deadline")]
    sched: String,
    /// The file or block device to run on. A missing file is created (with a marker
    /// block) and the space it needs is checked against its filesystem's free space first;
    /// an existing non-empty file we did not create, or a device we did not mark (unless
    /// blank) or with a filesystem/partition/RAID/LVM signature, is refused unless --force;
    /// a mounted or held device is refused even with --force. A fio-like job that only
    /// reads opens the target read-only and writes nothing, forced or not: it needs an
    /// existing target, which may be anyone's file (read from its first byte) or device.
    #[arg(long)]
    target: PathBuf,
    /// Emulate a disk profile (e.g. ide-2003): data goes to the target, but every request
    /// completes no earlier than the disk model says.
    #[arg(long, value_name = "PROFILE")]
    emulate: Option<String>,
    /// Stamp every written 4 KiB block with (offset, generation, owner) and a CRC32C and
    /// check every block read; any mismatch fails the run.
    #[arg(long)]
    verify: bool,
    /// Write the queue's inputs (trace format of `iosched replay`) to FILE; with several
    /// runs, to `FILE.<n>` (n = 1, 2, … in run order).
    /// An existing file is replaced only if it is an iosched trace.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Overwrite a target we did not create (not a mounted or held device). A fio-like job
    /// that only reads writes nothing, forced or not.
    #[arg(long)]
    force: bool,
    /// I/O engine: auto (io_uring, else a thread pool), io_uring or threads.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Seed for random offsets, the generated tree and the emulated disk.
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    seed: u64,
    /// Print one JSON document instead of tables: the settings (workload, target, emulate,
    /// seed, ...) and the runs, each with the runtime's counters (requests, merges, errors,
    /// timer lateness). tiobench puts its rows in `records` (the simulated tiobench's fields,
    /// one per scheduler, phase and thread count) and the counters in `runs`; readmany and
    /// fio-like put one object per run in `results`, its counters under `report`.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct TiobenchArgs {
    #[command(flatten)]
    common: Common,
    /// Thread counts, comma separated (one run per count).
    #[arg(allow_hyphen_values = true, long, default_value = "1,2,4,8")]
    threads: String,
    /// Total size over all threads (each thread gets size/threads, whole MiB).
    #[arg(allow_hyphen_values = true, long, default_value = "64M")]
    size: String,
    /// Request size (a multiple of 4k).
    #[arg(allow_hyphen_values = true, long, default_value = "4k")]
    block: String,
    /// Random operations over all threads: at least one per thread when a random phase
    /// runs, at most 2147483647 (tiotest's C int).
    #[arg(long, allow_negative_numbers = true, default_value_t = 4000)]
    random: u64,
    /// Gap between threads' regions (tiotest -o), e.g. 64M; 0 = back to back.
    #[arg(allow_hyphen_values = true, long, default_value = "0")]
    offset: String,
    /// Phases to run: seq_write, rand_write, seq_read, rand_read (comma separated).
    #[arg(long, default_value = "seq_write,rand_write,seq_read,rand_read")]
    phases: String,
    /// Print exactly what tiobench.pl printed (no column headers under the titles); the
    /// lines naming the run and the runtime's own go to stderr, so stdout is the table alone.
    #[arg(long, conflicts_with = "json")]
    as_printed: bool,
    #[command(flatten)]
    report: crate::report::ReportArg,
}

#[derive(clap::Args, Debug)]
struct ReadmanyArgs {
    #[command(flatten)]
    common: Common,
    /// Fraction of the 2.4.19 kernel tree (1 = 11,219 files, ~141.6 MB). Also
    /// `--tree-scale`, as the simulated `iosched readmany` calls it.
    #[arg(long, visible_alias = "tree-scale", allow_negative_numbers = true, default_value_t = 0.25)]
    scale: f64,
    /// Reader threads, 1..=4096 (1 = `find | xargs cat`).
    #[arg(long, allow_negative_numbers = true, default_value_t = 1)]
    readers: u32,
    /// Read request size (the read-ahead window).
    #[arg(allow_hyphen_values = true, long, default_value = "128k")]
    chunk: String,
    /// No streaming writer (the no-contention baseline).
    #[arg(long)]
    no_writer: bool,
    /// Size of the region the writer rewrites in a loop.
    #[arg(allow_hyphen_values = true, long, default_value = "512M", conflicts_with = "no_writer")]
    writer_size: String,
    /// Asynchronous 128 KiB writes the writer keeps in flight (1..=1024).
    #[arg(long, allow_negative_numbers = true, default_value_t = 64, conflicts_with = "no_writer")]
    writer_depth: u32,
    #[command(flatten)]
    report: crate::report::ReportArg,
}

#[derive(clap::Args, Debug)]
struct FioArgs {
    #[command(flatten)]
    common: Common,
    /// read, write, randread, randwrite or randrw (random reads and writes mixed, see
    /// --rwmixread; the table then adds a line for each direction).
    #[arg(long, default_value = "randread")]
    rw: String,
    /// With --rw randrw: the percentage of requests that are reads, 0..=100 (fio's
    /// rwmixread) [default: 50].
    #[arg(long, allow_negative_numbers = true)]
    rwmixread: Option<i64>,
    /// Bytes per request (k, M suffixes; a multiple of 4 KiB for O_DIRECT).
    #[arg(allow_hyphen_values = true, long, default_value = "4k")]
    bs: String,
    /// Requests kept in flight (fio's iodepth).
    #[arg(long, allow_negative_numbers = true, default_value_t = 32)]
    iodepth: u32,
    /// Bytes of the target to use (from its start; a multiple of 4 KiB); also the size to create. Read modes
    /// first write (lay out) whatever part of it this run had to create, untimed, as fio does.
    #[arg(allow_hyphen_values = true, long, default_value = "1G")]
    size: String,
    /// Run time (e.g. 10s, 500ms). Without it: --size bytes of I/O per job (one pass in
    /// sequential modes, as many random blocks in random modes), as fio does.
    #[arg(allow_hyphen_values = true, long)]
    runtime: Option<String>,
    /// One job per listed I/O priority, each its own owner (process) with --iodepth in
    /// flight: e.g. be/0,be/7 (rt/N, be/N, idle; fio's prioclass/prio per job). Default:
    /// one job at the default priority. Each job's IOPS is over its own time, up to its
    /// last completion; the total is over the whole run, up to the last job's (as fio's
    /// group figures are), so a starved job's late completions can put it below the
    /// fastest job's.
    #[arg(long)]
    prio: Option<String>,
}

/// A size with binary units (`4k`, `512M`, `1G`), naming the option in errors.
fn parse_size(s: &str, what: &str) -> Result<u64, String> {
    iosched_benchmarks::units::parse_size(s).map_err(|e| format!("{what}: {e}"))
}

/// A positive duration (`10s`, `500ms`, `2m`, plain seconds), naming the option in errors.
fn parse_duration(s: &str, what: &str) -> Result<Duration, String> {
    let d = iosched_benchmarks::units::parse_duration(s).map_err(|e| format!("{what}: {e}"))?;
    if d.is_zero() {
        return Err(format!("{what} `{s}`: expected a positive duration"));
    }
    Ok(d)
}

fn specs(c: &Common) -> Result<Vec<SchedSpec>, String> {
    let v = parse_list(&c.sched).map_err(|e| format!("--sched: {e}"))?;
    // Build each once to reject bad tunables before touching the target.
    for s in &v {
        s.build().map_err(|e| format!("--sched {}: {e}", s.text))?;
    }
    Ok(v)
}

/// What a real run ran on, for the first line of its table (every report names its seed).
fn describe(c: &Common) -> String {
    format!(
        "real: target {}, O_DIRECT, {}{}, seed {}",
        c.target.display(),
        c.emulate.as_deref().map(|p| format!("emulating {p}")).unwrap_or_else(|| "no emulation".into()),
        if c.verify { ", every block verified" } else { "" },
        c.seed
    )
}

/// `--record` for a command of `runs` runs, checked once before the first: a trace with
/// nowhere to go, or one that would overwrite what is not a trace, fails before the target
/// is created or touched. The trace of run n of several goes to `r.n`: neither those nor
/// `r` itself (a slip, even when the traces would go beside it) may be the target.
fn check_record(c: &Common, runs: usize) -> Result<(), String> {
    record::check(c.record.as_deref(), runs)?;
    if let (Some(r), Some(target)) = (&c.record, resolved(&c.target)) {
        for p in std::iter::once(r.clone()).chain((1..=runs).map(|n| record::path(r, n, runs))) {
            if resolved(&p).as_ref() == Some(&target) {
                return Err(format!("--record {}: is the target; give the trace a path of its own", p.display()));
            }
        }
    }
    Ok(())
}

fn options(c: &Common, spec: SchedSpec) -> Result<Options, String> {
    let mut o = Options::new(spec);
    o.emulate = c.emulate.clone();
    o.verify = c.verify;
    o.record = c.record.is_some();
    o.force = c.force;
    o.backend = c.backend.parse::<BackendChoice>().map_err(|e| format!("--backend: {e}"))?;
    o.seed = c.seed;
    // The runtime's notices (space reserved, layout, a backend fallback) are ours to print.
    o.notices = iosched_rt::Notices::to(|m| eprintln!("iosched: {m}"));
    Ok(o)
}

/// Where a path is or would be: resolved whole if it exists, else its directory resolved
/// (symlinks, `..`) and its name appended.
fn resolved(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = std::fs::canonicalize(p) {
        return Some(c);
    }
    let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
}

/// Write a run's trace if asked; print a one-line note unless JSON.
fn save_trace(c: &Common, report: &Report, n: usize, runs: usize) -> Result<(), String> {
    let (Some(base), Some(t)) = (&c.record, &report.trace) else {
        return Ok(());
    };
    record::write(base, t, n, runs, c.json)
}

fn control() -> Result<Control, String> {
    let mut ctl = Control::new();
    ctl.stop = crate::signals::interrupt_flag()?;
    ctl.progress = crate::progress::real();
    Ok(ctl)
}

/// One line per run about the runtime itself.
fn runtime_lines(reports: &[(String, &Report)]) -> String {
    let mut s = String::from(
        "\nRuntime (timer lateness = how late the dispatcher acted on the scheduler's \
         idle/unplug deadlines). CPU% is the whole process's CPU time, every thread's (the \
         dispatcher's and the completions' too), over wall time, as tiotest and fio count theirs: \
         on N CPUs it can reach N × 100 %.\n",
    );
    s.push_str(&format!(
        "{:<28} {:>8} {:>8} {:>9} {:>9} {:>9} {:>7}  {}\n",
        "Run", "backend", "requests", "timers", "p50 us", "p99 us", "max us", "errors / verify"
    ));
    for (label, r) in reports {
        let l = &r.timer_lateness;
        let mut tail = if r.errors.is_empty() {
            "none".to_string()
        } else {
            r.errors.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
        };
        if let Some(v) = &r.verify {
            tail.push_str(&format!(" / {} blocks checked, {} mismatches", v.checked, v.mismatches));
            if v.unverified > 0 {
                // Read blocks without a header (never stamped, or a write of this run not
                // yet completed when the read arrived).
                tail.push_str(&format!(", {} unstamped", v.unverified));
            }
        }
        s.push_str(&format!(
            "{:<28} {:>8} {:>8} {:>9} {:>9.1} {:>9.1} {:>7.0}  {}\n",
            label, r.backend, r.requests, l.count, l.p50_us, l.p99_us, l.max_us, tail
        ));
    }
    s
}

/// Turn how a run ended into the command's result.
fn verdict(ended: &[Ended]) -> Result<(), String> {
    for e in ended {
        match e {
            Ended::Failed(err) => {
                return Err(format!("I/O error, run stopped: {err}"));
            }
            Ended::Interrupted => return Err("interrupted; the report above is partial".into()),
            Ended::Complete => {}
        }
    }
    Ok(())
}

/// Run a workload once per scheduler spec, saving each run's trace; stops after a run
/// that did not complete.
fn run_each<R>(
    c: &Common,
    specs: &[SchedSpec],
    mut run: impl FnMut(Options, &Control) -> Result<(R, Ended), iosched_rt::Error>,
    report: impl Fn(&R) -> &Report,
) -> Result<(Vec<R>, Vec<Ended>), String> {
    let ctl = control()?;
    let mut results = Vec::new();
    let mut ended = Vec::new();
    check_record(c, specs.len())?;
    for spec in specs {
        let (r, e) = run(options(c, spec.clone())?, &ctl).map_err(|e| e.to_string())?;
        save_trace(c, report(&r), results.len() + 1, specs.len())?;
        results.push(r);
        let stop = !e.is_complete();
        ended.push(e);
        if stop {
            break;
        }
    }
    Ok((results, ended))
}

pub fn run(a: Args) -> Result<(), String> {
    match *a.cmd {
        Sub::Tiobench(t) => run_tiobench(t),
        Sub::Readmany(r) => run_readmany(r),
        Sub::FioLike(f) => run_fio(f),
        Sub::Fio(f) => run_fio_jobs(f),
    }
}

fn run_fio_jobs(a: FioJobArgs) -> Result<(), String> {
    use iosched_benchmarks::fio::{self, Context};
    let format = iosched_benchmarks::fio::report::Format::parse(&a.output_format)?;
    let json_out = format != iosched_benchmarks::fio::report::Format::Normal;
    let c = &a.common;
    let env = |v: &str| std::env::var(v).ok();
    let read = |p: &std::path::Path, limit: u64| iosched_disk::input::read_text(p, limit);
    // The keywords are this machine's: the jobs run here.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let ctx = Context { pagesize: 4096, mb_memory: 0, ncpus: cpus, env: &env, read: &read };
    let jobs = fio::load(&a.jobfiles, &a.job_options, &ctx).map_err(|e| e.to_string())?;
    for w in &jobs.warnings {
        eprintln!("iosched: note: {w}");
    }
    let specs = specs(c)?;
    a.report.check()?;
    let logs = crate::fio::Logs::check(&jobs, specs.len())?;
    let (results, ended) = run_each(
        c,
        &specs,
        |o, ctl| {
            iosched_rt::workload::fio::run(&c.target, o, &jobs, c.seed, ctl)
                .map(|r| ((r.report, r.runtime, r.iologs), r.ended))
        },
        |r: &(iosched_benchmarks::fio::Report, Report, Vec<(String, String)>)| &r.1,
    )?;
    let mut docs = Vec::new();
    for (k, (r, _, iologs)) in results.iter().enumerate() {
        logs.write(r, &jobs, iologs, k)?;
        let mut v = format.json(r).unwrap_or_else(|| iosched_benchmarks::fio::report::json(r));
        v["target"] = serde_json::json!(c.target);
        v["emulate"] = serde_json::json!(c.emulate);
        if json_out {
            println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?);
        } else {
            print!("{}", iosched_benchmarks::fio::report::normal(r));
        }
        docs.push(v);
    }
    a.report.write(&docs)?;
    match ended.last() {
        Some(Ended::Interrupted) => Err("interrupted; the report above is partial".into()),
        Some(Ended::Failed(e)) => Err(format!("a request failed: {e}")),
        _ => Ok(()),
    }
}

#[derive(Serialize)]
struct TiobenchJson<'a> {
    workload: &'static str,
    target: &'a Path,
    emulate: Option<&'a str>,
    size_mb: u64,
    block: u32,
    random_ops: u64,
    seed: u64,
    records: &'a [TiobenchRecord],
    runs: Vec<RunJson<'a>>,
}

#[derive(Serialize)]
struct RunJson<'a> {
    scheduler: &'a str,
    threads: Option<u32>,
    ended: String,
    runtime: &'a Report,
}

fn ended_str(e: &Ended) -> String {
    match e {
        Ended::Complete => "complete".into(),
        Ended::Interrupted => "interrupted".into(),
        Ended::Failed(err) => format!("failed: {err}"),
    }
}

fn run_tiobench(a: TiobenchArgs) -> Result<(), String> {
    let c = &a.common;
    let specs = specs(c)?;
    let threads: Vec<u32> = a
        .threads
        .split(',')
        .map(|t| {
            t.trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| (1..=4096).contains(&n))
                .ok_or_else(|| format!("--threads `{t}`: expected thread counts 1..=4096, comma separated"))
        })
        .collect::<Result<_, _>>()?;
    let threads = crate::sim::each_once("--threads", threads, |n| *n)?;
    let size = parse_size(&a.size, "--size")?;
    if size % (1 << 20) != 0 || size == 0 {
        return Err(format!("--size {}: expected a positive whole number of MiB", a.size));
    }
    let block = parse_size(&a.block, "--block")?;
    let block = u32::try_from(block).map_err(|_| format!("--block {}: too large", a.block))?;
    let phases: Vec<Phase> = a
        .phases
        .split(',')
        .map(|p| {
            Phase::parse(p.trim())
                .ok_or_else(|| format!("--phases `{p}`: expected seq_write, rand_write, seq_read or rand_read"))
        })
        .collect::<Result<_, _>>()?;
    let phases = crate::sim::each_once("--phases", phases, |p| p.name())?;
    let offset = parse_size(&a.offset, "--offset")?;
    if offset % (1 << 20) != 0 {
        return Err(format!("--offset {}: expected a whole number of MiB", a.offset));
    }
    let offset_mb = offset >> 20;
    let ctl = control()?;
    let runs = specs.len() * threads.len();
    check_record(c, runs)?;
    a.report.check()?;
    let mut records = Vec::new();
    let mut reports = Vec::new();
    let mut ended = Vec::new();
    let mut labels = Vec::new();
    let mut partial: Option<String> = None;
    'outer: for spec in &specs {
        for &n in &threads {
            let cfg = tiobench::Config {
                size_mb: size >> 20,
                block,
                threads: n,
                random_ops: a.random,
                offset_mb,
                phases: phases.clone(),
                seed: c.seed,
            };
            cfg.validate().map_err(|e| e.to_string())?;
            let run = tiobench::run(&c.target, options(c, spec.clone())?, &cfg, &ctl).map_err(|e| e.to_string())?;
            save_trace(c, &run.report, reports.len() + 1, runs)?;
            // The phase a stop cut short is the run's last record.
            if run.ended == Ended::Interrupted
                && let Some(last) = run.records.last()
            {
                partial = Some(format!(
                    "\nInterrupted: the {} row of {} with {n} threads covers only what ran before the stop.\n",
                    last.phase.title().trim(),
                    spec.text
                ));
            }
            records.extend(run.records);
            labels.push((spec.text.clone(), n));
            reports.push(run.report);
            let stop = !run.ended.is_complete();
            ended.push(run.ended);
            if stop {
                break 'outer;
            }
        }
    }
    let j = TiobenchJson {
        workload: "tiobench",
        target: &c.target,
        emulate: c.emulate.as_deref(),
        size_mb: size >> 20,
        block,
        random_ops: a.random,
        seed: c.seed,
        records: &records,
        runs: reports
            .iter()
            .zip(&labels)
            .zip(&ended)
            .map(|((r, (s, n)), e)| RunJson { scheduler: s, threads: Some(*n), ended: ended_str(e), runtime: r })
            .collect(),
    };
    a.report.write(&[serde_json::to_value(&j).map_err(|e| e.to_string())?])?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?);
    } else {
        let table = if a.as_printed { table_as_printed(&records) } else { table(&records) };
        // With --as-printed stdout is tiobench.pl's table alone; the rest goes to stderr.
        let head = format!("tiobench (tiotest 0.3.3 semantics), {}\n", describe(c));
        let note = cut_identifiers_note(&records).unwrap_or_default();
        let rl: Vec<(String, &Report)> =
            labels.iter().zip(&reports).map(|((s, n), r)| (format!("{s} ({n} thr)"), r)).collect();
        let tail = format!("{}{note}{}", partial.unwrap_or_default(), runtime_lines(&rl));
        if a.as_printed {
            eprint!("{head}");
            print!("{table}");
            eprint!("{tail}");
        } else {
            print!("{head}{table}{tail}");
        }
    }
    verdict(&ended)
}

fn run_readmany(a: ReadmanyArgs) -> Result<(), String> {
    let c = &a.common;
    let specs = specs(c)?;
    let chunk = parse_size(&a.chunk, "--chunk")?;
    let chunk = u32::try_from(chunk).map_err(|_| format!("--chunk {}: too large", a.chunk))?;
    let wsize = parse_size(&a.writer_size, "--writer-size")?;
    if wsize % (1 << 20) != 0 {
        return Err(format!("--writer-size {}: expected a whole number of MiB", a.writer_size));
    }
    let cfg = readmany::Config {
        scale: a.scale,
        readers: a.readers,
        chunk,
        writer: !a.no_writer,
        writer_mb: wsize >> 20,
        writer_depth: a.writer_depth,
        seed: c.seed,
    };
    cfg.validate().map_err(|e| e.to_string())?;
    a.report.check()?;
    let (results, ended) =
        run_each(c, &specs, |o, ctl| readmany::run(&c.target, o, &cfg, ctl), |r: &readmany::Result_| &r.report)?;
    #[derive(Serialize)]
    struct J<'a> {
        workload: &'static str,
        target: &'a Path,
        emulate: Option<&'a str>,
        scale: f64,
        seed: u64,
        results: &'a [readmany::Result_],
        ended: Vec<String>,
    }
    let j = J {
        workload: "readmany",
        target: &c.target,
        emulate: c.emulate.as_deref(),
        scale: a.scale,
        seed: c.seed,
        results: &results,
        ended: ended.iter().map(ended_str).collect(),
    };
    a.report.write(&[serde_json::to_value(&j).map_err(|e| e.to_string())?])?;
    if c.json {
        println!("{}", serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?);
    } else {
        println!(
            "Read many files{} (scale {}, {} reader(s), {} chunks), {}",
            if cfg.writer { " during a streaming write" } else { ", no writer" },
            a.scale,
            a.readers,
            a.chunk,
            describe(c)
        );
        println!(
            "{:<28} {:>6} {:>8} {:>10} {:>10} {:>11}",
            "Scheduler", "Files", "MB", "Elapsed s", "Read MB/s", "Write MB/s"
        );
        for r in &results {
            println!(
                "{:<28} {:>6} {:>8.1} {:>10.2} {:>10.2} {:>11}",
                r.scheduler,
                r.files,
                r.tree_mb,
                r.elapsed_s,
                r.read_mb_s,
                if r.writer { format!("{:.2}", r.writer_mb_s) } else { "-".into() }
            );
        }
        let rl: Vec<(String, &Report)> = results.iter().map(|r| (r.scheduler.clone(), &r.report)).collect();
        print!("{}", runtime_lines(&rl));
    }
    verdict(&ended)
}

fn run_fio(a: FioArgs) -> Result<(), String> {
    let c = &a.common;
    let specs = specs(c)?;
    let bs = parse_size(&a.bs, "--bs")?;
    let rw: fio_like::Rw = a.rw.parse().map_err(|e| format!("--rw: {e}"))?;
    let rwmixread = match a.rwmixread {
        None => 50,
        Some(_) if rw != fio_like::Rw::RandRw => {
            return Err(format!("--rwmixread: only with --rw randrw (got --rw {})", a.rw));
        }
        // Above 100 is refused by the config's own check, with the same words.
        Some(p) => u32::try_from(p).map_err(|_| format!("--rwmixread {p}: expected a percentage, 0..=100"))?,
    };
    let cfg = fio_like::Config {
        rw,
        rwmixread,
        bs: u32::try_from(bs).map_err(|_| format!("--bs {}: too large", a.bs))?,
        iodepth: a.iodepth,
        size: parse_size(&a.size, "--size")?,
        runtime: a.runtime.as_deref().map(|r| parse_duration(r, "--runtime")).transpose()?,
        seed: c.seed,
        prios: match &a.prio {
            None => Vec::new(),
            Some(l) => l
                .split(',')
                .map(|p| iosched_core::IoPrio::parse(p).map_err(|e| format!("--prio: {e}")))
                .collect::<Result<_, _>>()?,
        },
    };
    cfg.validate().map_err(|e| e.to_string())?;
    let (results, ended) =
        run_each(c, &specs, |o, ctl| fio_like::run(&c.target, o, &cfg, ctl), |r: &fio_like::Result_| &r.report)?;
    if c.json {
        #[derive(Serialize)]
        struct J<'a> {
            workload: &'static str,
            target: &'a Path,
            emulate: Option<&'a str>,
            seed: u64,
            results: &'a [fio_like::Result_],
            ended: Vec<String>,
        }
        let j = J {
            workload: "fio-like",
            target: &c.target,
            emulate: c.emulate.as_deref(),
            seed: c.seed,
            results: &results,
            ended: ended.iter().map(ended_str).collect(),
        };
        println!("{}", serde_json::to_string_pretty(&j).map_err(|e| e.to_string())?);
    } else {
        println!("fio-like job, {}", describe(c));
        println!(
            "{:<28} {:>9} {:>6} {:>5} {:>10} {:>11} {:>9} {:>9} {:>9} {:>6}",
            "Scheduler", "rw", "bs", "depth", "IOPS", "BW KiB/s", "clat avg", "p50 us", "p99 us", "CPU%"
        );
        for r in &results {
            println!(
                "{:<28} {:>9} {:>6} {:>5} {:>10.0} {:>11.0} {:>9.1} {:>9.1} {:>9.1} {:>6.1}",
                r.scheduler,
                format!("{:?}", r.rw).to_lowercase(),
                r.bs,
                r.iodepth,
                r.iops,
                r.bw_kib_s,
                r.clat_mean_us,
                r.clat_p50_us,
                r.clat_p99_us,
                r.cpu_pct
            );
            // A part of the run (one direction, one job): rate and latency only.
            let part = |name: &str, depth: &str, iops: f64, mean: f64, p50: f64, p99: f64| {
                println!(
                    "{:<28} {:>9} {:>6} {:>5} {:>10.0} {:>11.0} {:>9.1} {:>9.1} {:>9.1}",
                    name,
                    "",
                    "",
                    depth,
                    iops,
                    iops * r.bs as f64 / 1024.0,
                    mean,
                    p50,
                    p99
                )
            };
            if r.rw == fio_like::Rw::RandRw {
                for (name, d) in [("  reads", &r.read), ("  writes", &r.write)] {
                    part(name, "", d.iops, d.clat_mean_us, d.clat_p50_us, d.clat_p99_us);
                }
            }
            if r.jobs.len() > 1 {
                let depth = r.iodepth.to_string();
                for j in &r.jobs {
                    part(&format!("  job {}", j.prio), &depth, j.iops, j.clat_mean_us, j.clat_p50_us, j.clat_p99_us);
                }
            }
        }
        let rl: Vec<(String, &Report)> = results.iter().map(|r| (r.scheduler.clone(), &r.report)).collect();
        print!("{}", runtime_lines(&rl));
    }
    verdict(&ended)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_name_the_option() {
        assert_eq!(parse_size("4k", "x"), Ok(4096));
        assert_eq!(parse_size("512M", "x"), Ok(512 << 20));
        let e = parse_size("4q", "--bs").unwrap_err();
        assert!(e.starts_with("--bs: ") && e.contains("4q"), "{e}");
        assert_eq!(parse_duration("10s", "x"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms", "x"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("0s", "--runtime").unwrap_err().contains("positive"));
        assert!(parse_duration("5x", "--runtime").unwrap_err().starts_with("--runtime: "));
    }
}
