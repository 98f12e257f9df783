//! fio job files on a real target: the jobs of an `iosched_benchmarks::fio::JobSet` through
//! our queue and runtime, each I/O taken from the job's `JobStream` (the simulated `iosched
//! fio`'s stream: the same job, the same I/Os), reported as fio reports
//! (`iosched_benchmarks::fio::report`).
//!
//! - **The target holds the jobs' files back to back**, in job order (a name used twice is
//!   one file), each file its `size / nrfiles` bytes from `offset`: a file or device of
//!   their total size. Jobs that read lay it out first, as fio lays out a new file.
//! - **Groups**: the jobs between two `stonewall`s run one phase after another (`new_group`
//!   alone starts a reporting group, not a wait, as in fio); the jobs of a phase,
//!   numjobs clones included, run together, each its own owner (a process to the
//!   scheduler) at its `prioclass`/`prio`.
//! - **Engines**: `libaio`, `io_uring` and `posixaio` keep `iodepth` I/Os in flight per
//!   job; the sync engines one. Each completion submits the next I/O (fio's reap-then-
//!   submit loop) until `size` (or `io_size`) × `loops` bytes, or `runtime` (`time_based`:
//!   passes repeat until it).
//!
//! Refused, with the job named: buffered jobs (`direct=0`: the runtime bypasses the page
//! cache, so a buffered job's I/O would not be what the kernel sends; run it with `iosched
//! fio` in the simulator), and what this executor does not carry out yet: `mmap`, trim,
//! `thinktime`, `rate`/`rate_iops`, `startdelay`, `ramp_time`,
//! `fsync`/`fdatasync`/`end_fsync`/`fsync_on_close`, `filesize` and percentages. Block
//! sizes and regions must be whole 4 KiB blocks (O_DIRECT).

use super::{Control, Ended};
use crate::error::{Error, IoError};
use crate::runtime::{Completion, Handle, Options, Report as RtReport, Target};
use crate::sys::{ALIGN, IoBuf};
use iosched_benchmarks::fio::job::{Engine, Job, JobSet, Pattern};
use iosched_benchmarks::fio::report::{DirStats, JobResult, Report, Sample};
use iosched_benchmarks::fio::stream::{JobStream, Region};
use iosched_benchmarks::fio::value::SizeOrPercent;
use iosched_core::Op;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// What this executor refuses, by the job.
fn check(j: &Job) -> Result<(), Error> {
    let bad = |m: &str| Err(Error(format!("{}: job `{}`: {m}", j.origin, j.section)));
    if !j.direct {
        return bad(
            "direct=0 (buffered): the real runtime bypasses the page cache (O_DIRECT), so a buffered job's I/O \
             would not be what the kernel sends; run it in the simulator (`iosched fio`)",
        );
    }
    let unsupported = [
        (j.ioengine == Engine::Mmap, "ioengine=mmap"),
        (matches!(j.rw, Pattern::Trim | Pattern::RandTrim | Pattern::TrimWrite | Pattern::RandTrimWrite), "trim"),
        (j.thinktime_us > 0, "thinktime"),
        (j.rate != [0; 3] || j.rate_iops != [0; 3], "rate limits"),
        (j.startdelay_us > 0, "startdelay"),
        (j.wait_for.is_some(), "wait_for"),
        (j.number_ios > 0, "number_ios"),
        (j.ramp_time_us > 0, "ramp_time"),
        (j.fsync > 0 || j.fdatasync > 0 || j.end_fsync || j.fsync_on_close, "fsync options"),
        (j.filesize.is_some(), "filesize"),
        (j.cmdprio_percentage != [0, 0], "cmdprio_percentage"),
        (j.read_iolog.is_some(), "read_iolog"),
        (j.write_iolog.is_some(), "write_iolog"),
    ];
    if let Some((_, what)) = unsupported.iter().find(|u| u.0) {
        return bad(&format!("{what}: not carried out on real targets yet (the simulator's `iosched fio` runs it)"));
    }
    let bytes = |v: SizeOrPercent, what: &str| match v {
        SizeOrPercent::Bytes(b) => Ok(b),
        SizeOrPercent::Percent(_) => {
            Err(Error(format!("{}: job `{}`: {what} as a percentage: give bytes", j.origin, j.section)))
        }
    };
    bytes(j.offset, "offset")?;
    bytes(j.offset_increment, "offset_increment")?;
    if let Some(s) = j.size {
        bytes(s, "size")?;
    } else {
        return bad("no size: give size=");
    }
    let sizes: Vec<u64> =
        j.bs.iter()
            .copied()
            .chain(j.bsrange.iter().flatten().flat_map(|r| [r.0, r.1]))
            .chain(j.bssplit.iter().flatten().flatten().map(|e| e.0))
            .collect();
    if let Some(b) = sizes.iter().find(|&&b| !b.is_multiple_of(ALIGN as u64)) {
        return bad(&format!("block size {b}: O_DIRECT needs whole multiples of {ALIGN} bytes"));
    }
    Ok(())
}

/// One job thread's state, shared with its completion callbacks.
struct State {
    handle: Handle,
    stream: JobStream,
    depth: u32,
    left: Option<u64>,
    deadline: Option<Instant>,
    stop: Arc<AtomicBool>,
    failed: Arc<AtomicBool>,
    inflight: u32,
    stats: [DirStats; 2],
    error: Option<IoError>,
    /// When the job's group started: the bandwidth log's zero.
    start: Instant,
    /// I/Os by the depth at their submission (fio's `io_u_map`).
    depth_map: [u64; 7],
    /// Every I/O, for the job's per-I/O logs (`Some` when it writes one), and whether the
    /// job's priority is of the RT class (the logs' priority column).
    samples: Option<Vec<Sample>>,
    rt: bool,
    end: Option<Instant>,
}

type Shared = Arc<(Mutex<State>, Condvar)>;

fn submit_next(sh: &Shared, st: &mut State, now: Instant) {
    if st.deadline.is_some_and(|d| now >= d)
        || st.left == Some(0)
        || st.stop.load(Ordering::Relaxed)
        || st.failed.load(Ordering::Relaxed)
    {
        return;
    }
    let io = st.stream.next_io();
    if let Some(l) = &mut st.left {
        *l = l.saturating_sub(io.len);
    }
    let op = if io.write { Op::Write } else { Op::Read };
    let mut buf = IoBuf::new(io.len as usize);
    buf.fill(0xa5);
    let sh2 = Arc::clone(sh);
    let t0 = now;
    match st.handle.submit(op, io.offset, buf, move |c: Completion| on_done(&sh2, c, t0, io.write, io.len)) {
        Ok(()) => {
            st.inflight += 1;
            st.depth_map[iosched_benchmarks::fio::report::depth_bucket(st.inflight)] += 1;
        }
        Err(e) => {
            st.error = Some(e);
            st.failed.store(true, Ordering::Relaxed);
        }
    }
}

fn on_done(sh: &Shared, c: Completion, t0: Instant, write: bool, len: u64) {
    let (m, cv) = &**sh;
    let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
    st.inflight -= 1;
    let now = Instant::now();
    st.end = Some(now);
    match c.result {
        Ok(_) => {
            let (clat, at) = (now.saturating_duration_since(t0), now.saturating_duration_since(st.start));
            st.stats[write as usize].add(len, clat.as_nanos() as u64, at.as_nanos() as u64);
            let rt = st.rt;
            if let Some(v) = &mut st.samples {
                v.push(Sample { at_ms: at.as_millis() as u64, write, bytes: len, clat_ns: clat.as_nanos() as u64, rt });
            }
            submit_next(sh, &mut st, now);
        }
        Err(e) => {
            st.error.get_or_insert(e);
            st.failed.store(true, Ordering::Relaxed);
        }
    }
    if st.inflight == 0 {
        cv.notify_all();
    }
}

/// A job thread to run: its job, clone number, thread number and regions on the target.
struct Thread<'a> {
    job: &'a Job,
    clone: u32,
    number: u64,
    regions: Vec<Region>,
    group: u32,
    phase: u32,
}

/// Run `jobs` on `path` with the scheduler in `opts`; `seed` is the run's (fio's
/// `randrepeat=0` streams follow it).
pub fn run(
    path: &Path,
    mut opts: Options,
    jobs: &JobSet,
    seed: u64,
    ctl: &Control,
) -> Result<(Report, RtReport, Ended), Error> {
    for j in &jobs.jobs {
        check(j)?;
    }
    // The files back to back on the target, in the order the jobs first name them.
    let mut placed: BTreeMap<String, u64> = BTreeMap::new();
    let mut end = 0u64;
    for (name, size) in jobs.files().expect("checked") {
        placed.insert(name, end);
        end += size;
    }
    let mut threads = Vec::new();
    let mut number = 0;
    for (ji, job) in jobs.jobs.iter().enumerate() {
        for clone in 0..job.numjobs {
            number += 1;
            let (start, per_file) = job.file_region(clone).expect("checked");
            if !(start + per_file).is_multiple_of(ALIGN as u64) || !start.is_multiple_of(ALIGN as u64) {
                return Err(Error(format!(
                    "{}: job `{}`: offset {start} and {per_file} bytes per file: O_DIRECT needs whole {ALIGN}-byte blocks",
                    job.origin, job.section
                )));
            }
            let regions =
                job.file_names(clone).iter().map(|n| Region { start: placed[n] + start, len: per_file }).collect();
            threads.push(Thread { job, clone, number, regions, group: jobs.groups[ji], phase: jobs.phases[ji] });
        }
    }
    if opts.size.is_none() {
        opts.size = Some(end);
    }
    let reads = jobs.jobs.iter().any(|j| j.rw.reads());
    opts.lay_out = reads;
    opts.writes = jobs.jobs.iter().any(|j| j.rw.writes());
    let label = opts.sched.text.clone();
    let target = Target::open(path, opts)?;
    if target.info().data_len < end {
        return Err(Error(format!(
            "{}: data area is {} bytes; the jobs' files need {end}",
            path.display(),
            target.info().data_len
        )));
    }
    let report = |jobs_done: Vec<JobResult>| Report {
        world: format!("real, {}", path.display()),
        scheduler: label.clone(),
        seed,
        jobs: jobs_done,
        warnings: jobs.warnings.clone(),
        // The target's counters span its layout as well as the jobs: not fio's window.
        disk: None,
    };
    let failed = Arc::new(AtomicBool::new(false));
    let mut results: Vec<JobResult> = Vec::new();
    let phases: std::collections::BTreeSet<u32> = threads.iter().map(|t| t.phase).collect();
    for phase in phases {
        let start = Instant::now();
        let mut running = Vec::new();
        for t in threads.iter().filter(|t| t.phase == phase) {
            let mut handle = target.handle();
            if let Some(p) = t.job.ioprio() {
                handle.set_prio(p);
            }
            handle.set_unplug(true);
            let region_bytes: u64 = t.regions.iter().map(|r| r.len).sum();
            let depth = if t.job.ioengine.is_async() { t.job.iodepth } else { 1 };
            let st = State {
                handle,
                stream: JobStream::new(t.job, t.regions.clone(), t.number, seed),
                depth,
                left: (!t.job.time_based).then(|| t.job.bytes_to_issue(region_bytes)),
                deadline: (t.job.runtime_us > 0).then(|| start + Duration::from_micros(t.job.runtime_us)),
                stop: Arc::clone(&ctl.stop),
                failed: Arc::clone(&failed),
                inflight: 0,
                stats: Default::default(),
                error: None,
                start,
                depth_map: [0; 7],
                samples: t.job.logs_samples().then(Vec::new),
                rt: t.job.prioclass == 1,
                end: None,
            };
            let name = t.job.thread_name(t.clone);
            running.push((
                (name, t.group),
                t.job.group_reporting,
                (t.job.iodepth, t.number),
                Arc::new((Mutex::new(st), Condvar::new())),
            ));
        }
        for (_, _, _, sh) in &running {
            let mut st = sh.0.lock().unwrap_or_else(|e| e.into_inner());
            for _ in 0..st.depth {
                submit_next(sh, &mut st, Instant::now());
            }
        }
        for ((name, g), group_reporting, (job_depth, job_number), sh) in running {
            {
                let (m, cv) = &*sh;
                let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
                while st.inflight > 0 {
                    st = cv.wait_timeout(st, Duration::from_millis(200)).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
            let st = super::take_when_released(sh);
            let State { handle, stats, error, end, depth_map, samples, .. } = st;
            drop(handle);
            if let Some(e) = error {
                return Ok((report(results), target.close()?, Ended::Failed(e)));
            }
            results.push(JobResult {
                name,
                groupid: g,
                runtime_us: end.map_or(0, |e| e.saturating_duration_since(start).as_micros() as u64),
                dirs: stats,
                fsyncs: 0,
                group_reporting,
                iodepth: job_depth,
                depth_map,
                samples: samples.unwrap_or_default(),
                number: job_number,
            });
        }
        if ctl.stopped() {
            break;
        }
    }
    let ended = if ctl.stopped() { Ended::Interrupted } else { Ended::Complete };
    Ok((report(results), target.close()?, ended))
}
