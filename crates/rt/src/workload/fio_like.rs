//! A fio-like load for comparing the runtime with fio, given by a few flags instead of a
//! job file: jobs of `iodepth` requests in flight each (fio's io_uring engine with
//! `iodepth=N`; one job, or one per I/O priority with `prios`, as fio's per-job
//! `prioclass`/`prio`), `rw` = read, write, randread, randwrite or randrw (each request a
//! read with probability `rwmixread` %, else a write), `bs` bytes, over the first `size`
//! bytes of the target, for `runtime` (time_based) — or, without a runtime, `size` bytes
//! of I/O per job (fio's default `io_size`: one pass in sequential modes, as many random
//! blocks in random modes). Random offsets are uniform with replacement (fio's
//! `norandommap`).
//!
//! It is a job set for [`super::fio`]: the flags become fio job options (the jobs share
//! one file, the target's first `size` bytes), the fio executor runs them, and its report
//! is summed up here. Read modes lay the target out first, as fio lays out a new file.

use super::{Control, Ended};
use crate::error::Error;
use crate::runtime::{Options, Report, quantile_us};
use crate::sys::ALIGN;
use iosched_core::IoPrio;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// fio's `rw`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// Random reads and writes mixed (fio's `randrw` with `rwmixread`).
    RandRw,
}

impl Rw {
    /// The mode issues reads.
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw)
    }
    /// The mode issues writes.
    pub fn writes(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw)
    }
}

impl std::str::FromStr for Rw {
    type Err = String;
    fn from_str(s: &str) -> Result<Rw, String> {
        Ok(match s {
            "read" => Rw::Read,
            "write" => Rw::Write,
            "randread" => Rw::RandRead,
            "randwrite" => Rw::RandWrite,
            "randrw" => Rw::RandRw,
            o => {
                return Err(format!("unknown rw `{o}`: expected read, write, randread, randwrite or randrw"));
            }
        })
    }
}

/// Parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub rw: Rw,
    pub bs: u32,
    pub iodepth: u32,
    /// Bytes of the target to use (from offset 0).
    pub size: u64,
    /// Run for this long (sequential modes wrap around); without it, `size` bytes of I/O.
    pub runtime: Option<Duration>,
    pub seed: u64,
    /// With [`Rw::RandRw`]: the percentage of requests that are reads (fio's `rwmixread`,
    /// 0..=100; fio's default is 50). Ignored by the other modes.
    pub rwmixread: u32,
    /// One job per priority, each its own owner with `iodepth` requests in flight (fio's
    /// `prioclass`/`prio` per job); empty: one job at the owner's default priority.
    pub prios: Vec<IoPrio>,
}

/// What the run measured (names follow fio's JSON where they overlap).
#[derive(Clone, Debug, Serialize)]
pub struct Result_ {
    pub scheduler: String,
    pub rw: Rw,
    pub bs: u32,
    pub iodepth: u32,
    pub total_ios: u64,
    pub runtime_ms: f64,
    pub iops: f64,
    pub bw_kib_s: f64,
    /// Submission-to-completion latency, microseconds.
    pub clat_mean_us: f64,
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
    pub clat_max_us: f64,
    /// Process CPU time over wall time, percent.
    pub cpu_pct: f64,
    /// The reads and the writes apart (one of them empty except with `randrw`); each
    /// direction's IOPS is over the whole run.
    pub read: DirResult,
    pub write: DirResult,
    /// Each job's share (one entry per job, in `prios` order).
    pub jobs: Vec<JobResult>,
    pub report: Report,
}

/// One direction of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirResult {
    pub total_ios: u64,
    pub iops: f64,
    pub clat_mean_us: f64,
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
}

/// One job of a run.
#[derive(Clone, Debug, Serialize)]
pub struct JobResult {
    /// `be/0`, `idle`, … or `none` (the default).
    pub prio: String,
    pub total_ios: u64,
    pub iops: f64,
    pub clat_mean_us: f64,
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
}

impl Config {
    pub fn validate(&self) -> Result<(), Error> {
        if self.bs == 0 || !(self.bs as usize).is_multiple_of(ALIGN) {
            return Err(Error(format!("--bs {}: expected a positive multiple of {ALIGN} bytes", self.bs)));
        }
        if self.iodepth == 0 || self.iodepth > 1024 {
            return Err(Error(format!("--iodepth {}: expected 1..=1024", self.iodepth)));
        }
        if self.size < self.bs as u64 {
            return Err(Error(format!("--size {}: expected at least one block of {} bytes", self.size, self.bs)));
        }
        // The data area is whole 4 KiB blocks (as fio's, the run itself does whole --bs
        // blocks, rounding down): a size between two would be rounded up without a word.
        if !self.size.is_multiple_of(ALIGN as u64) {
            return Err(Error(format!("--size {}: expected a multiple of {ALIGN} bytes", self.size)));
        }
        if self.rwmixread > 100 {
            return Err(Error(format!("--rwmixread {}: expected a percentage, 0..=100", self.rwmixread)));
        }
        Ok(())
    }
}

impl Config {
    /// The fio job options of this load (`--name=…` first), seeded by `seed`.
    pub fn job_options(&self) -> Vec<String> {
        let rw = format!("{:?}", self.rw).to_lowercase();
        let prios: Vec<Option<IoPrio>> =
            if self.prios.is_empty() { vec![None] } else { self.prios.iter().map(|&p| Some(p)).collect() };
        let mut out = Vec::new();
        for (j, prio) in prios.iter().enumerate() {
            out.push(format!("--name=job{j}"));
            out.extend([
                "--filename=fio-like".to_string(),
                format!("--rw={rw}"),
                format!("--bs={}", self.bs),
                format!("--size={}", self.size),
                "--direct=1".into(),
                "--ioengine=io_uring".into(),
                format!("--iodepth={}", self.iodepth),
                "--norandommap".into(),
                // Each job its own stream, from the run's seed.
                "--randrepeat=0".into(),
                format!("--randseed={}", self.seed.wrapping_add(j as u64)),
            ]);
            if self.rw == Rw::RandRw {
                out.push(format!("--rwmixread={}", self.rwmixread));
            }
            if let Some(r) = self.runtime {
                out.push(format!("--runtime={}us", r.as_micros().max(1)));
                out.push("--time_based".into());
            }
            if let Some(p) = prio {
                let class = match p.class {
                    iosched_core::IoClass::RealTime => 1,
                    iosched_core::IoClass::Idle => 3,
                    _ => 2,
                };
                out.push(format!("--prioclass={class}"));
                out.push(format!("--prio={}", p.level));
            }
        }
        out
    }
}

/// Run the load on `path` with the scheduler in `opts`.
pub fn run(path: &Path, mut opts: Options, cfg: &Config, ctl: &Control) -> Result<(Result_, Ended), Error> {
    use iosched_benchmarks::fio::{job, jobfile};
    cfg.validate()?;
    if opts.size.is_none() {
        opts.size = Some(cfg.size);
    }
    let label = opts.sched.text.clone();
    let parsed = jobfile::parse_args(&cfg.job_options(), 1).map_err(|e| Error(e.to_string()))?;
    let jobs = job::build(&parsed).map_err(|e| Error(e.to_string()))?;
    let run = super::fio::run(path, opts, &jobs, cfg.seed, ctl)?;
    let rows = &run.report.jobs;
    // The run's time: the longest job's (fio's group runtime).
    let secs = rows.iter().map(|j| j.runtime_us).max().unwrap_or(0) as f64 / 1e6;
    let secs = secs.max(1e-9);
    let lat = |j: &iosched_benchmarks::fio::report::JobResult, d: usize| -> Vec<u32> {
        j.dirs[d].clat_ns.iter().map(|&n| n.min(u32::MAX as u64) as u32).collect()
    };
    let (mut all_read, mut all_write, mut all_lat) = (Vec::new(), Vec::new(), Vec::new());
    let mut job_results = Vec::new();
    for (j, prio) in rows.iter().zip(cfg.prios.iter().map(Some).chain(std::iter::repeat(None))) {
        let (r, w) = (lat(j, 0), lat(j, 1));
        let mut both = [r.as_slice(), w.as_slice()].concat();
        both.sort_unstable();
        let (mean, p50, p99) = lat_stats(&both);
        let ios = both.len() as u64;
        job_results.push(JobResult {
            prio: prio.map_or_else(|| "none".to_string(), |p| p.to_string()),
            total_ios: ios,
            // A job that finished before the others (no --runtime) is rated over its own time.
            iops: ios as f64 / (j.runtime_us as f64 / 1e6).max(1e-9),
            clat_mean_us: mean,
            clat_p50_us: p50,
            clat_p99_us: p99,
        });
        all_read.extend_from_slice(&r);
        all_write.extend_from_slice(&w);
        all_lat.extend_from_slice(&both);
    }
    all_lat.sort_unstable();
    let (mean, p50, p99) = lat_stats(&all_lat);
    let total_ios = all_lat.len() as u64;
    Ok((
        Result_ {
            scheduler: label,
            rw: cfg.rw,
            bs: cfg.bs,
            iodepth: cfg.iodepth,
            total_ios,
            runtime_ms: secs * 1e3,
            iops: total_ios as f64 / secs,
            bw_kib_s: total_ios as f64 * cfg.bs as f64 / 1024.0 / secs,
            clat_mean_us: mean,
            clat_p50_us: p50,
            clat_p99_us: p99,
            clat_max_us: all_lat.last().map(|&x| x as f64 / 1e3).unwrap_or(0.0),
            cpu_pct: 100.0 * run.cpu.as_secs_f64() / run.wall.as_secs_f64().max(1e-9),
            read: dir_result(all_read, secs),
            write: dir_result(all_write, secs),
            jobs: job_results,
            report: run.runtime,
        },
        run.ended,
    ))
}

/// One direction's figures from its latencies (ns), over `secs`.
fn dir_result(mut lat: Vec<u32>, secs: f64) -> DirResult {
    lat.sort_unstable();
    let (mean, p50, p99) = lat_stats(&lat);
    DirResult {
        total_ios: lat.len() as u64,
        iops: lat.len() as f64 / secs,
        clat_mean_us: mean,
        clat_p50_us: p50,
        clat_p99_us: p99,
    }
}

/// Mean, median and 99th percentile of sorted latencies (ns), in microseconds.
fn lat_stats(sorted: &[u32]) -> (f64, f64, f64) {
    if sorted.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = sorted.iter().map(|&x| x as f64).sum::<f64>() / sorted.len() as f64 / 1e3;
    (mean, quantile_us(sorted, 0.5), quantile_us(sorted, 0.99))
}
