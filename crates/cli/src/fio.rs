//! `iosched fio`: fio job files run in the simulator (`iosched_workloads::fio`), one run per
//! scheduler, reported as fio reports.

use crate::record;
use crate::sim::{MachineArgs, Progress, specs, specs_fit};
use iosched_benchmarks::fio::report::{Format, json, normal};
use iosched_benchmarks::fio::{self, Context};
use iosched_workloads::fio::{FioConfig, run_or_stop};
use iosched_workloads::machine::Machine;
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
#[command(after_help = "Job options may follow `--` as on fio's command line: \
    iosched fio -- --name=r --rw=randread --bs=4k --size=64m --direct=1 --ioengine=libaio --iodepth=32")]
pub struct Args {
    /// fio job files (fio 3.x syntax: sections, [global], include, ${VAR}).
    pub jobfiles: Vec<PathBuf>,
    /// Schedulers, comma-separated specs (one run each). Without it, the jobs' own
    /// `ioscheduler=` (the same in every job), else deadline.
    #[arg(long)]
    pub sched: Option<String>,
    /// A setting for every scheduler (key=value; repeatable, each key once).
    #[arg(long)]
    pub set: Vec<String>,
    /// normal (fio's text, in outline), json (fio's JSON document, one per scheduler) or
    /// json+ (the JSON with each direction's completion-latency histogram, fio's `bins`).
    #[arg(long, default_value = "normal")]
    pub output_format: String,
    /// Write the report to FILE instead of standard output (a file we did not create is
    /// replaced only if it is empty).
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write each scheduler's queue inputs and dispatches (the trace format of `iosched
    /// replay`) to FILE; with several schedulers, to `FILE.<n>`.
    #[arg(long = "record", value_name = "FILE")]
    pub record_trace: Option<PathBuf>,
    #[command(flatten)]
    pub report: crate::report::ReportArg,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// fio job options after `--` (`--name=N` starts a job; options before it are global).
    #[arg(last = true)]
    pub job_options: Vec<String>,
}

/// fio's per-I/O log files of a run, checked before anything runs and written after it:
/// `PREFIX_clat.N.log` & co., with `.<k>` after the name for run `k` of several schedulers
/// (`record::path`). Only a new or empty file, or an earlier fio log, is written.
pub struct Logs {
    runs: usize,
}

/// A fio log's line: five or more integer columns.
fn is_fio_log_line(l: &str) -> bool {
    let fields: Vec<&str> = l.split(", ").map(str::trim).collect();
    let Some((last, rest)) = fields.split_last() else { return false };
    // The priority column is a number, or with `log_prio` a `0x%04x` value.
    let prio = last.parse::<i64>().is_ok()
        || last.strip_prefix("0x").is_some_and(|h| h.len() == 4 && u16::from_str_radix(h, 16).is_ok());
    fields.len() >= 5 && prio && rest.iter().all(|f| f.parse::<i64>().is_ok())
}

/// `write_iolog` replaces only a fio iolog.
pub fn may_write_iolog(p: &std::path::Path) -> Result<(), String> {
    record::may_replace("write_iolog", p, true, |l| l.starts_with("fio version"), "a fio iolog")
}

impl Logs {
    /// Check, before anything runs, every file the runs' jobs would write: the per-I/O
    /// logs and each `write_iolog` (`PATH.<n>` per run with several schedulers) must be
    /// new, empty, or an earlier file of the same kind.
    pub fn check(jobs: &iosched_benchmarks::fio::JobSet, runs: usize) -> Result<Logs, String> {
        let l = Logs { runs };
        for name in iosched_benchmarks::fio::report::log_file_names(jobs) {
            for k in 0..runs {
                l.may_write(&l.path(&name, k))?;
            }
        }
        for j in &jobs.jobs {
            if let Some(path) = &j.write_iolog {
                if j.numjobs > 1 {
                    return Err(format!(
                        "{}: job `{}`: write_iolog={path} with numjobs={}: the clones would write one file (fio \
                         intersperses them); give each job its own",
                        j.origin, j.section, j.numjobs
                    ));
                }
                for k in 0..runs {
                    may_write_iolog(&l.path(path, k))?;
                }
            }
        }
        Ok(l)
    }

    fn path(&self, name: &str, k: usize) -> PathBuf {
        record::path(std::path::Path::new(name), k + 1, self.runs)
    }

    fn may_write(&self, p: &std::path::Path) -> Result<(), String> {
        record::may_replace("fio log", p, true, is_fio_log_line, "a fio log")
    }

    /// Write run `k`'s logs: the per-I/O logs of its report, and its `iologs` (each
    /// `write_iolog`'s path as the job gives it, and its text).
    pub fn write(
        &self,
        r: &iosched_benchmarks::fio::Report,
        jobs: &iosched_benchmarks::fio::JobSet,
        iologs: &[(String, String)],
        k: usize,
    ) -> Result<(), String> {
        for (path, text) in iologs {
            let p = self.path(path, k);
            may_write_iolog(&p)?;
            std::fs::write(&p, text).map_err(|e| format!("write_iolog {}: {e}", p.display()))?;
        }
        for (name, text) in iosched_benchmarks::fio::report::run_log_files(r, jobs) {
            let p = self.path(&name, k);
            // Checked again: the run may have created the file since.
            self.may_write(&p)?;
            std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        Ok(())
    }
}

pub fn main(a: Args) -> Result<(), String> {
    let format = Format::parse(&a.output_format)?;
    let json_out = format != Format::Normal;
    let d = iosched_workloads::compare::machine_2007(a.machine.seed);
    let m: Machine = a.machine.machine_on(&d.disk, &format!("{}M", d.mem_bytes >> 20), &d.cpu, &d.host)?;
    let env = |v: &str| std::env::var(v).ok();
    let read = |p: &std::path::Path, limit: u64| iosched_disk::input::read_text(p, limit);
    let cpus = iosched_sim::CpuProfile::by_name(&m.cpu)?.cpus as u64;
    let ctx = Context { pagesize: 4096, mb_memory: m.mem_bytes >> 20, ncpus: cpus, env: &env, read: &read };
    let jobs = fio::load(&a.jobfiles, &a.job_options, &ctx).map_err(|e| e.to_string())?;
    let sched = match &a.sched {
        Some(s) => s.clone(),
        None => {
            let named: std::collections::BTreeSet<&str> =
                jobs.jobs.iter().filter_map(|j| j.ioscheduler.as_deref()).collect();
            match named.len() {
                0 => "deadline".to_string(),
                1 if jobs.jobs.iter().all(|j| j.ioscheduler.is_some()) => {
                    named.into_iter().next().expect("one").to_string()
                }
                _ => {
                    return Err(format!(
                        "the jobs name different ioscheduler= ({}), or not all name one: one queue has one \
                         scheduler; give --sched",
                        named.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    };
    let specs = specs(&sched, &a.set)?;
    specs_fit(&m, &specs)?;
    for w in &jobs.warnings {
        eprintln!("iosched: note: {w}");
    }
    let cfg = FioConfig { jobs, machine: m, record_trace: record::check(a.record_trace.as_deref(), specs.len())? };
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => {
            if p.exists() && std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(true) {
                return Err(format!("--output {}: exists and is not empty; not replaced", p.display()));
            }
            Box::new(std::fs::File::create(p).map_err(|e| format!("--output {}: {e}", p.display()))?)
        }
        None => Box::new(std::io::stdout().lock()),
    };
    a.report.check()?;
    let logs = Logs::check(&cfg.jobs, specs.len())?;
    let p = Progress::new("runs");
    let mut docs = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        p.tick(i, specs.len(), &s.text);
        // A run a limit stopped still reports what its jobs did (fio's report on Ctrl-C);
        // the runs after it are not made.
        let (mut r, stopped) = run_or_stop(s, &cfg).map_err(String::from)?;
        if let (Some(base), Some(t)) = (a.record_trace.as_deref(), r.trace.take()) {
            record::write(base, &t, i + 1, specs.len(), json_out)?;
        }
        logs.write(&r.report, &cfg.jobs, &r.iologs, i)?;
        let mut v = format.json(&r.report).unwrap_or_else(|| json(&r.report));
        v["machine"] = cfg.machine.json();
        p.suspend(|| -> Result<(), String> {
            let text = if json_out {
                serde_json::to_string_pretty(&v).map_err(|e| e.to_string())? + "\n"
            } else {
                normal(&r.report)
            };
            out.write_all(text.as_bytes()).map_err(|e| e.to_string())
        })?;
        docs.push(v);
        if let Some(e) = stopped {
            p.finish();
            a.report.write(&docs)?;
            let where_ = if a.output.is_some() { "the report written" } else { "the report above" };
            return Err(format!("{e}; {where_} is partial"));
        }
    }
    p.finish();
    a.report.write(&docs)
}
