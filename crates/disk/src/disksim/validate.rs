//! Replaying DiskSim's validation traces and scoring the result with its demerit figure.
//!
//! Trace format (`iotrace_validate_get_ioreq_event` in DiskSim): one request per line,
//! `R|W <label> <blkno> <bcount> <measured service µs> <inter-arrival µs>`. DiskSim
//! issues the next request `inter-arrival` after the *completion* of the previous one
//! (the request stream is closed: `new->time = simtime + nextinter` at completion), so
//! the drive never has more than one request. We replay it the same way.
//!
//! Demerit (DiskSim `rms.c`, disk.md §2.2): the RMS horizontal distance between the
//! measured and simulated service-time CDFs, sampled at p = 0.0001, 0.0002, … 1.0 with
//! linear interpolation. We build both CDFs from the per-request values; on DiskSim's own
//! simulated times this reproduces the demerits DiskSim reports to within 0.02 ms.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::load_parv;
use super::parse::SpecError;
use crate::device::{Device, DiskCommand};
use crate::hdd::{Hdd, HddParams};
use iosched_core::{Instant, Op};

/// The ten validation drives and DiskSim's own demerit on each (ms, from the README).
#[allow(clippy::approx_constant)] // 0.318 ms is a measurement, not 1/π
const DRIVES: [(&str, f64); 10] = [
    ("atlas10k", 0.268),
    ("atlas_III", 0.378),
    ("barracuda", 0.349),
    ("cheetah4LP", 0.318),
    ("cheetah9LP", 0.107),
    ("ibm18es", 0.135),
    ("hp_c2247a", 0.090),
    ("hp_c3323a", 0.306),
    ("hp_c2490a", 0.254),
    ("dec_rz26", 0.340),
];

/// Names of the validation drives.
pub fn validation_drives() -> &'static [&'static str] {
    const NAMES: [&str; 10] = [
        DRIVES[0].0,
        DRIVES[1].0,
        DRIVES[2].0,
        DRIVES[3].0,
        DRIVES[4].0,
        DRIVES[5].0,
        DRIVES[6].0,
        DRIVES[7].0,
        DRIVES[8].0,
        DRIVES[9].0,
    ];
    &NAMES
}

/// Where the validation data is read from by default: the copy embedded in the binary
/// ([`super::data`]), so the validation runs wherever the binary is. [`validate_in`] reads
/// another directory (`iosched disk validate --data DIR`).
pub fn validation_dir() -> PathBuf {
    PathBuf::from(super::data::DIR)
}

/// How our model did on one drive.
#[derive(Clone, Debug, Serialize)]
pub struct ValidationResult {
    pub drive: String,
    pub requests: usize,
    pub measured_mean_ms: f64,
    pub sim_mean_ms: f64,
    /// Our demerit (RMS horizontal distance between the CDFs), ms.
    pub demerit_ms: f64,
    /// `demerit_ms` as a percentage of the measured mean.
    pub demerit_pct: f64,
    /// DiskSim's own demerit on the same trace.
    pub disksim_demerit_ms: f64,
}

impl ValidationResult {
    /// The acceptance bound: within 1.5× DiskSim's demerit and under 10 % of the mean.
    pub fn passes(&self) -> bool {
        self.demerit_ms <= 1.5 * self.disksim_demerit_ms && self.demerit_pct <= 10.0
    }
}

/// Errors of the validation harness.
#[derive(Debug)]
pub enum ValidationError {
    UnknownDrive(String),
    Spec(SpecError),
    Trace { file: PathBuf, line: usize, msg: String },
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValidationError::UnknownDrive(d) => {
                write!(f, "unknown validation drive `{d}` (expected one of: {})", validation_drives().join(", "))
            }
            ValidationError::Spec(e) => e.fmt(f),
            ValidationError::Trace { file, line, msg } => {
                write!(f, "{}:{line}: {msg}", file.display())
            }
        }
    }
}

impl std::error::Error for ValidationError {}

impl From<SpecError> for ValidationError {
    fn from(e: SpecError) -> Self {
        ValidationError::Spec(e)
    }
}

/// One request of a validation trace.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TraceRequest {
    pub write: bool,
    pub blkno: u64,
    pub bcount: u32,
    /// Measured service time, ms.
    pub service_ms: f64,
    /// Gap to the next request after this one completes, ms.
    pub next_gap_ms: f64,
}

/// Read a validation trace.
pub fn read_trace(path: &Path) -> Result<Vec<TraceRequest>, ValidationError> {
    let embedded = super::data::lookup(path).map(str::to_string);
    let text = embedded
        .map_or_else(|| crate::input::read_text(path, crate::input::MAX_DISKSIM_BYTES), Ok)
        .map_err(|e| ValidationError::Trace { file: path.into(), line: 0, msg: format!("cannot read: {e}") })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |msg: String| ValidationError::Trace { file: path.into(), line: i + 1, msg };
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 6 {
            return Err(bad(format!("expected `R|W label blkno bcount service_us interarrival_us`, got `{line}`")));
        }
        let write = match f[0] {
            "R" => false,
            "W" => true,
            o => return Err(bad(format!("field 1: expected R or W, got `{o}`"))),
        };
        let num = |k: usize, what: &str| {
            f[k].parse::<f64>().map_err(|_| bad(format!("field {} ({what}): expected a number, got `{}`", k + 1, f[k])))
        };
        let blkno = f[2]
            .parse::<u64>()
            .map_err(|_| bad(format!("field 3 (blkno): expected a block number, got `{}`", f[2])))?;
        let bcount = f[3]
            .parse::<u32>()
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| bad(format!("field 4 (bcount): expected a positive count, got `{}`", f[3])))?;
        out.push(TraceRequest {
            write,
            blkno,
            bcount,
            service_ms: num(4, "service time")? / 1000.0,
            next_gap_ms: num(5, "inter-arrival")? / 1000.0,
        });
    }
    Ok(out)
}

/// Submit trace request `r` to an idle drive at `t` (ns) and run the drive until it
/// completes; returns the completion instant (ns).
fn serve_one(d: &mut Hdd, t: u64, id: u64, r: &TraceRequest) -> u64 {
    let op = if r.write { Op::Write } else { Op::Read };
    d.submit(Instant::from_nanos(t), DiskCommand { id, op, sector: r.blkno, len_sectors: r.bcount });
    loop {
        let when = d.poll_timeout().expect("a submitted command completes");
        if let Some(c) = d.poll_completion(when) {
            return c.at.as_nanos();
        }
    }
}

/// Replay a trace through a drive, DiskSim style (next request a gap after the previous
/// completes), spindle at angle 0 at time 0 as in DiskSim. Returns the simulated service
/// time of each request, ms.
pub fn replay(params: Arc<HddParams>, trace: &[TraceRequest]) -> Vec<f64> {
    let mut d = Hdd::with_phase(params, 0);
    let mut t = 0u64;
    let mut out = Vec::with_capacity(trace.len());
    for (i, r) in trace.iter().enumerate() {
        let done = serve_one(&mut d, t, i as u64, r);
        out.push((done - t) as f64 / 1e6);
        t = done + (r.next_gap_ms * 1e6).round() as u64;
    }
    out
}

/// Replay with open arrivals instead: request `i+1` arrives `gap_i` after request `i`
/// *arrived* (not after it completed) and is issued when the drive is free. Service times
/// are measured from issue, as DiskSim measures physical access time. Not DiskSim's
/// semantics; kept to show the difference (docs/disk-models.md).
pub fn replay_open(params: Arc<HddParams>, trace: &[TraceRequest]) -> Vec<f64> {
    let mut d = Hdd::with_phase(params, 0);
    let mut arrival = 0u64;
    let mut free = 0u64;
    let mut out = Vec::with_capacity(trace.len());
    for (i, r) in trace.iter().enumerate() {
        let t = arrival.max(free);
        let done = serve_one(&mut d, t, i as u64, r);
        out.push((done - t) as f64 / 1e6);
        free = done;
        arrival += (r.next_gap_ms * 1e6).round() as u64;
    }
    out
}

/// DiskSim's demerit between two samples of service times (ms).
pub fn demerit(a: &[f64], b: &[f64]) -> f64 {
    let qa = Quantiles::new(a);
    let qb = Quantiles::new(b);
    let mut s = 0.0;
    for k in 1..=10_000 {
        let p = k as f64 / 10_000.0;
        let d = qa.at(p) - qb.at(p);
        s += d * d;
    }
    (s / 10_000.0).sqrt()
}

struct Quantiles(Vec<f64>);

impl Quantiles {
    fn new(x: &[f64]) -> Quantiles {
        let mut v = x.to_vec();
        v.sort_by(f64::total_cmp);
        Quantiles(v)
    }
    /// The x at which the empirical CDF reaches p, interpolating linearly between order
    /// statistics.
    fn at(&self, p: f64) -> f64 {
        let v = &self.0;
        let n = v.len();
        let pos = p * n as f64;
        if pos <= 1.0 {
            return v[0];
        }
        let i = pos.floor() as usize;
        if i >= n {
            return v[n - 1];
        }
        let f = pos - i as f64;
        v[i - 1] + (v[i] - v[i - 1]) * f
    }
}

/// Validate one drive against the data in the default directory.
pub fn validate(drive: &str) -> Result<ValidationResult, ValidationError> {
    validate_in(&validation_dir(), drive)
}

/// Validate one drive against the data in `dir`.
pub fn validate_in(dir: &Path, drive: &str) -> Result<ValidationResult, ValidationError> {
    let &(name, ds) =
        DRIVES.iter().find(|(n, _)| *n == drive).ok_or_else(|| ValidationError::UnknownDrive(drive.into()))?;
    let params = Arc::new(load_parv(&dir.join(format!("{name}.parv")))?);
    let trace = read_trace(&dir.join(format!("{name}.trace")))?;
    let sim = replay(params, &trace);
    let meas: Vec<f64> = trace.iter().map(|r| r.service_ms).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let d = demerit(&meas, &sim);
    let mm = mean(&meas);
    Ok(ValidationResult {
        drive: name.into(),
        requests: trace.len(),
        measured_mean_ms: mm,
        sim_mean_ms: mean(&sim),
        demerit_ms: d,
        demerit_pct: 100.0 * d / mm,
        disksim_demerit_ms: ds,
    })
}
