//! A fio-like load for comparing the runtime with fio: jobs of `iodepth` requests in
//! flight each (fio's io_uring engine with `iodepth=N`; one job, or one per I/O priority
//! with `prios`, as fio's per-job `prioclass`/`prio`), `rw` = read, write, randread,
//! randwrite or randrw (each request a read with probability `rwmixread` %, else a
//! write: the mix where a scheduler's read/write policy shows), `bs` bytes, over the
//! first `size` bytes of the target, for `runtime`
//! (time_based) — or, without a runtime, `size` bytes of I/O per job (fio's default
//! `io_size`: one pass in sequential modes, as many random blocks in random modes).
//!
//! Read modes open the target with [`Options::lay_out`]: the part of the data area the
//! open creates (a new target, or one grown to `size`) is written once first, as fio lays
//! out a new file, because a filesystem reads never-written space back as zeros without
//! touching the device and the run would measure nothing.
//!
//! It uses the callback API: each completion callback (on the dispatcher thread)
//! submits the next request, so no thread hop sits between a completion and the next
//! submission — the same shape as fio's reap-then-submit loop. Random offsets are
//! uniform with replacement (fio's `norandommap`), from an independent stream per job.
//! An error in any job stops them all.

use super::{Control, Ended, Rng};
use crate::error::{Error, IoError};
use crate::runtime::{Completion, Handle, Options, Report, Target, quantile_us};
use crate::sys::{ALIGN, IoBuf};
use iosched_core::{IoPrio, Op};
use serde::Serialize;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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

struct State {
    handle: Handle,
    rw: Rw,
    rwmixread: u32,
    bs: u64,
    blocks: u64,
    rng: Rng,
    next_seq: u64,
    /// Without a runtime: blocks still to issue.
    left: Option<u64>,
    deadline: Option<Instant>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    inflight: u32,
    ios: u64,
    /// Latencies of completed reads and of completed writes, ns.
    lat_read: Vec<u32>,
    lat_write: Vec<u32>,
    error: Option<IoError>,
    /// Set by any job's error: every job stops submitting.
    failed: Arc<std::sync::atomic::AtomicBool>,
    /// Completions of all jobs (for the progress line).
    done: Arc<std::sync::atomic::AtomicU64>,
    /// When this job's last request completed.
    end: Option<Instant>,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

/// Submit the job's next request, unless it is done. `now` is a fresh clock reading; from
/// a completion callback it is the completion's own, so a request costs one clock read,
/// not three (the clock was 4 % of the runtime's CPU in profiles). The new request's
/// latency then starts a little before its submission: the rest of the callback runs in
/// between (microseconds; once per doubling of the latency log, a copy of it).
fn submit_next(sh: &Shared, st: &mut State, buf: IoBuf, now: Instant) {
    let expired = st.deadline.is_some_and(|d| now >= d);
    let exhausted = st.left == Some(0);
    let stopped = st.stop.load(std::sync::atomic::Ordering::Relaxed);
    // `failed` is set with every job's first error, this one's included.
    if expired || exhausted || stopped || st.failed.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Some(l) = &mut st.left {
        *l -= 1;
    }
    // The direction is drawn before the offset.
    let op = match st.rw {
        Rw::Read | Rw::RandRead => Op::Read,
        Rw::Write | Rw::RandWrite => Op::Write,
        Rw::RandRw => {
            if st.rng.below(100) < st.rwmixread as u64 {
                Op::Read
            } else {
                Op::Write
            }
        }
    };
    let b = match st.rw {
        Rw::RandRead | Rw::RandWrite | Rw::RandRw => st.rng.below(st.blocks),
        Rw::Read | Rw::Write => {
            let b = st.next_seq;
            st.next_seq = (b + 1) % st.blocks;
            b
        }
    };
    let t0 = now;
    let sh2 = Arc::clone(sh);
    let r = st.handle.submit(op, b * st.bs, buf, move |c: Completion| {
        on_done(&sh2, c, t0, op);
    });
    match r {
        Ok(()) => st.inflight += 1,
        Err(e) => {
            st.error = Some(e);
            st.failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

fn on_done(sh: &Shared, c: Completion, t0: Instant, op: Op) {
    let (m, cv) = &**sh;
    let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
    st.inflight -= 1;
    // One clock read per completion: the latency's end and the job's last completion.
    let now = Instant::now();
    st.end = Some(now);
    match c.result {
        Ok(_) => {
            st.ios += 1;
            st.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let ns = now.saturating_duration_since(t0).as_nanos().min(u32::MAX as u128) as u32;
            if op == Op::Read {
                st.lat_read.push(ns);
            } else {
                st.lat_write.push(ns);
            }
            if let Some(buf) = c.buf {
                submit_next(sh, &mut st, buf, now);
            }
        }
        Err(e) => {
            if st.error.is_none() {
                st.error = Some(e);
            }
            st.failed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
    if st.inflight == 0 {
        cv.notify_all();
    }
}

/// Run the load on `path` with the scheduler in `opts`.
pub fn run(path: &Path, mut opts: Options, cfg: &Config, ctl: &Control) -> Result<(Result_, Ended), Error> {
    cfg.validate()?;
    if opts.size.is_none() {
        opts.size = Some(cfg.size);
    }
    opts.lay_out = cfg.rw.reads();
    // A mode that only reads writes nothing to a block device (not even the marker).
    opts.writes = cfg.rw.writes();
    let label = opts.sched.text.clone();
    let target = Target::open(path, opts)?;
    if target.info().data_len < cfg.size {
        return Err(Error(format!(
            "{}: data area is {} bytes, smaller than --size {}",
            path.display(),
            target.info().data_len,
            cfg.size
        )));
    }
    let blocks = cfg.size / cfg.bs as u64;
    let start = Instant::now();
    let prios: Vec<Option<IoPrio>> =
        if cfg.prios.is_empty() { vec![None] } else { cfg.prios.iter().map(|&p| Some(p)).collect() };
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let jobs: Vec<Shared> = prios
        .iter()
        .enumerate()
        .map(|(j, prio)| {
            let mut handle = target.handle();
            if let Some(p) = prio {
                handle.set_prio(*p);
            }
            handle.set_unplug(true);
            Arc::new((
                Mutex::new(State {
                    handle,
                    rw: cfg.rw,
                    rwmixread: cfg.rwmixread,
                    bs: cfg.bs as u64,
                    blocks,
                    // Job 0 draws what a single job draws; the others independent streams
                    // (not the same stream shifted, which would read job 0's blocks again).
                    rng: if j == 0 { Rng::from_state(cfg.seed) } else { Rng::derive(cfg.seed, j as u64) },
                    next_seq: 0,
                    left: if cfg.runtime.is_none() { Some(blocks) } else { None },
                    deadline: cfg.runtime.map(|r| start + r),
                    stop: Arc::clone(&ctl.stop),
                    inflight: 0,
                    ios: 0,
                    lat_read: Vec::with_capacity(if cfg.rw.reads() { 1 << 20 } else { 0 }),
                    lat_write: Vec::with_capacity(if cfg.rw.writes() { 1 << 20 } else { 0 }),
                    error: None,
                    failed: Arc::clone(&failed),
                    done: Arc::clone(&done),
                    end: None,
                }),
                Condvar::new(),
            ))
        })
        .collect();
    let c0 = crate::sys::process_cpu_time();
    for sh in &jobs {
        let mut st = sh.0.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..cfg.iodepth {
            let mut b = IoBuf::new(cfg.bs as usize);
            b.fill(0xa5);
            submit_next(sh, &mut st, b, Instant::now());
        }
    }
    // Wait for every job to drain (each stops at the deadline, its end or an error).
    let mut last = Instant::now();
    for sh in &jobs {
        let (m, cv) = &**sh;
        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
        while st.inflight > 0 {
            st = cv.wait_timeout(st, Duration::from_millis(200)).unwrap_or_else(|e| e.into_inner()).0;
            if let Some(cb) = &ctl.progress
                && last.elapsed() >= Duration::from_millis(200)
            {
                last = Instant::now();
                let n = done.load(std::sync::atomic::Ordering::Relaxed);
                let what = format!("{label} {}", format!("{:?}", cfg.rw).to_lowercase());
                cb(super::Tick { what: &what, done: n, total: cfg.runtime.is_none().then_some(blocks) });
            }
        }
    }
    let wall = start.elapsed();
    let cpu = crate::sys::process_cpu_time().saturating_sub(c0);
    let secs = wall.as_secs_f64().max(1e-9);
    let mut all_lat: Vec<u32> = Vec::new();
    let (mut all_read, mut all_write): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
    let mut total_ios = 0;
    let mut error = None;
    let mut job_results = Vec::new();
    for (sh, prio) in jobs.into_iter().zip(&prios) {
        let st = super::take_when_released(sh);
        let State { handle, ios, lat_read, lat_write, error: e, end, .. } = st;
        drop(handle);
        // A job that finished before the others (no --runtime) is rated over its own time.
        let job_secs = end.map_or(secs, |e| e.saturating_duration_since(start).as_secs_f64().max(1e-9));
        if error.is_none() {
            error = e;
        }
        let mut lat_ns = [lat_read.as_slice(), lat_write.as_slice()].concat();
        lat_ns.sort_unstable();
        let (mean, p50, p99) = lat_stats(&lat_ns);
        all_read.extend_from_slice(&lat_read);
        all_write.extend_from_slice(&lat_write);
        job_results.push(JobResult {
            prio: prio.map_or_else(|| "none".to_string(), |p| p.to_string()),
            total_ios: ios,
            iops: ios as f64 / job_secs,
            clat_mean_us: mean,
            clat_p50_us: p50,
            clat_p99_us: p99,
        });
        total_ios += ios;
        all_lat.extend_from_slice(&lat_ns);
    }
    let report = target.close()?;
    all_lat.sort_unstable();
    let (mean, p50, p99) = lat_stats(&all_lat);
    let ended = match error {
        Some(e) => Ended::Failed(e),
        None if ctl.stopped() => Ended::Interrupted,
        None => Ended::Complete,
    };
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
            cpu_pct: 100.0 * cpu.as_secs_f64() / secs,
            read: dir_result(all_read, secs),
            write: dir_result(all_write, secs),
            jobs: job_results,
            report,
        },
        ended,
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
