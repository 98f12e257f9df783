//! tiobench on a real target, with tiotest 0.3.3 semantics (reference §1):
//!
//! - N threads, each with its own region of the target (tiotest's raw-device mode `-R`:
//!   thread i starts at i × (offset + per-thread size) MiB, `offset` being tiotest's
//!   `-o`), per-thread size `int(size_mb / N)` MiB (at least 1);
//! - phases in tiotest's order: sequential write, random write, sequential read, random
//!   read; each starts when all threads are parked at a barrier and ends when the last
//!   one is joined; write phases end with `fsync` inside the phase time but outside the
//!   per-I/O latency; threads are created anew per phase (a new owner per phase, as the
//!   kernel saw new tasks);
//! - one synchronous request of `block` bytes at a time per thread — but O_DIRECT, so
//!   the page cache does not hide the scheduler (no read-ahead, no write-back);
//! - random phases: `int(random_ops / N)` operations per thread at
//!   `(rand % (blocks − 1)) × block` (0.3.3: the last block is never chosen), uniform
//!   with replacement, from a seeded generator (reproducible, unlike tiotest): the
//!   operation streams are `iosched_benchmarks::tiobench::ThreadOps`, the simulated
//!   tiobench's, so one seed draws the same offsets in both worlds;
//! - per-I/O latency around the blocking call; Rate = MiB / phase wall time; CPU% =
//!   process CPU time (user + system, `getrusage`) over wall time; CPU Eff = Rate /
//!   (CPU% / 100); Lat% columns count latencies strictly above 2 s and 10 s.
//!
//! If the phases include reads but no sequential write, the regions are first written,
//! untimed, so the reads touch the device (fresh files read as holes otherwise).
//!
//! A stop (Ctrl-C) ends the run after the current request of every thread; the phase
//! that was running is reported with what it did until then. A failed request ends the
//! run too; the failed phase is not reported.

use super::{Control, Ended, Progress, ended, first_error, join_timed, wait_with_progress};
use crate::error::{Error, IoError};
use crate::runtime::{Options, Report, Target};
use crate::sys::{ALIGN, IoBuf, process_cpu_time};
use iosched_benchmarks::tiobench::{
    Io, Phase, PhaseResult, ThreadOps, TiobenchRecord, check_block, check_random, check_split, file_mb,
};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// A tiobench run's parameters (tiobench.pl's options).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Total size over all threads, MiB (`--size`).
    pub size_mb: u64,
    /// Request size, bytes (`--block`), a multiple of 4096.
    pub block: u32,
    pub threads: u32,
    /// Random operations over all threads (`--random`, default 4000).
    pub random_ops: u64,
    /// Gap between threads' regions, MiB (tiotest's `-o`; 0 = back to back).
    pub offset_mb: u64,
    /// Phases to run (they run in tiotest's order whatever the order here).
    pub phases: Vec<Phase>,
    pub seed: u64,
}

impl Config {
    pub fn validate(&self) -> Result<(), Error> {
        // The simulated tiobench's checks, with O_DIRECT's block rule.
        check_block(self.block as u64, Io::Direct { align: ALIGN as u64 }).map_err(Error)?;
        if self.size_mb == 0 {
            return Err(Error("--size: expected at least 1 MiB".into()));
        }
        check_split(self.size_mb, &[self.threads]).map_err(Error)?;
        let random_phase = self.phases.iter().any(|p| p.is_random());
        let threads: &[u32] = if random_phase { std::slice::from_ref(&self.threads) } else { &[] };
        check_random(self.random_ops, threads).map_err(Error)?;
        if self.per_thread_mb() << 20 < self.block as u64 {
            return Err(Error(format!(
                "--block {} is larger than a thread's file ({} MiB)",
                self.block,
                self.per_thread_mb()
            )));
        }
        if self.phases.is_empty() {
            return Err(Error("--phases: expected at least one phase".into()));
        }
        // The regions and gaps must fit a file offset (i64): a larger --offset would wrap
        // and lay every thread's region over the first.
        let fits = (self.per_thread_mb().checked_add(self.offset_mb))
            .and_then(|r| r.checked_mul(self.threads as u64))
            .and_then(|r| r.checked_sub(self.offset_mb))
            .filter(|&mb| mb < (i64::MAX as u64 >> 20));
        if fits.is_none() {
            return Err(Error(format!(
                "--offset {} MiB with {} threads of {} MiB: the regions would end past the largest file offset \
                 (8 EiB)",
                self.offset_mb,
                self.threads,
                self.per_thread_mb()
            )));
        }
        Ok(())
    }
    /// tiobench.pl: `int(size / threads)` ([`validate`](Config::validate) refuses less
    /// than 1 MiB).
    pub fn per_thread_mb(&self) -> u64 {
        file_mb(self.size_mb, self.threads)
    }
    /// Bytes of the target the run uses.
    pub fn bytes_needed(&self) -> u64 {
        ((self.per_thread_mb() + self.offset_mb) * self.threads as u64 - self.offset_mb) << 20
    }
}

/// What one scheduler's run produced.
#[derive(Debug)]
pub struct Run {
    pub records: Vec<TiobenchRecord>,
    pub report: Report,
    pub ended: Ended,
}

/// Run tiobench on `path` with the scheduler in `opts`.
pub fn run(path: &Path, mut opts: Options, cfg: &Config, ctl: &Control) -> Result<Run, Error> {
    cfg.validate()?;
    if opts.size.is_none() {
        opts.size = Some(cfg.bytes_needed());
    }
    // Only the threads' regions take space: the --offset gaps between them stay holes.
    opts.used = Some((0..cfg.threads).map(|i| region(cfg, i)).collect());
    let label = opts.sched.text.clone();
    let target = Target::open(path, opts)?;
    if target.info().data_len < cfg.bytes_needed() {
        return Err(Error(format!(
            "{}: data area is {} bytes; this run needs {} (give a larger --size)",
            path.display(),
            target.info().data_len,
            cfg.bytes_needed()
        )));
    }
    let mut records = Vec::new();
    let mut ended = Ended::Complete;
    let has_read = cfg.phases.iter().any(|p| !p.is_write());
    if has_read
        && !cfg.phases.contains(&Phase::SeqWrite)
        && let Err(e) = prefill(&target, cfg, ctl)
    {
        ended = Ended::Failed(e);
    }
    for phase in Phase::RUN_ORDER {
        if !ended.is_complete() {
            break;
        }
        if !cfg.phases.contains(&phase) {
            continue;
        }
        if ctl.stopped() {
            ended = Ended::Interrupted;
            break;
        }
        let (rec, e) = run_phase(&target, cfg, phase, &label, ctl);
        match e {
            Some(e) => ended = Ended::Failed(e),
            None if ctl.stopped() => {
                // Interrupted: the phase's numbers cover what ran before the stop.
                records.push(rec);
                ended = Ended::Interrupted;
            }
            None => records.push(rec),
        }
    }
    let report = target.close()?;
    Ok(Run { records, report, ended })
}

fn region(cfg: &Config, i: u32) -> (u64, u64) {
    let len = cfg.per_thread_mb() << 20;
    (i as u64 * (len + (cfg.offset_mb << 20)), len)
}

fn prefill(target: &Target, cfg: &Config, ctl: &Control) -> Result<(), IoError> {
    let chunk = (cfg.block as u64).max(128 << 10);
    let errs: Vec<Option<IoError>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..cfg.threads)
            .map(|i| {
                let h = target.handle();
                s.spawn(move || {
                    let (base, len) = region(cfg, i);
                    let mut off = 0;
                    while off < len && !ctl.stopped() {
                        let n = chunk.min(len - off);
                        let mut b = IoBuf::new(n as usize);
                        if let Err(e) = h.write(base + off, &mut b) {
                            return Some(e);
                        }
                        off += n;
                    }
                    None
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("prefill thread")).collect()
    });
    first_error(errs).map_or(Ok(()), Err)
}

fn run_phase(
    target: &Target,
    cfg: &Config,
    phase: Phase,
    label: &str,
    ctl: &Control,
) -> (TiobenchRecord, Option<IoError>) {
    let n = cfg.threads;
    let block = cfg.block as u64;
    let file_bytes = cfg.per_thread_mb() << 20;
    let random_ops = cfg.random_ops / n as u64;
    let ops_per_thread = ThreadOps::new(cfg.seed, phase, 0, file_bytes, block, random_ops).len();
    let barrier = Barrier::new(n as usize + 1);
    let done = AtomicU64::new(0);
    let failed = Arc::new(AtomicBool::new(false));
    let mut progress = Progress::new(ctl, format!("{label} {n} thr {}", phase.name()), ops_per_thread * n as u64);
    let (wall, cpu, results) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                let h = target.handle();
                let (barrier, done, failed) = (&barrier, &done, &failed);
                s.spawn(move || {
                    ended(|| {
                        let (base, _) = region(cfg, i);
                        let ops = ThreadOps::new(cfg.seed, phase, i, file_bytes, block, random_ops);
                        let mut buf = IoBuf::new(block as usize);
                        buf.fill(0x5a);
                        let mut calls = PhaseResult::default();
                        barrier.wait();
                        for off in ops {
                            if ctl.stopped() || failed.load(Ordering::Relaxed) {
                                return (calls, None);
                            }
                            let off = base + off;
                            let t0 = Instant::now();
                            let r = if phase.is_write() { h.write(off, &mut buf) } else { h.read(off, &mut buf) };
                            // A failed call moved nothing, but its time counts, as tiotest's.
                            let moved = if r.is_ok() { block } else { 0 };
                            calls.add_call(t0.elapsed().as_secs_f64() * 1000.0, moved);
                            if let Err(e) = r {
                                failed.store(true, Ordering::Relaxed);
                                return (calls, Some(e));
                            }
                            done.fetch_add(1, Ordering::Relaxed);
                        }
                        if phase.is_write()
                            && let Err(e) = h.fsync()
                        {
                            failed.store(true, Ordering::Relaxed);
                            return (calls, Some(e));
                        }
                        (calls, None)
                    })
                })
            })
            .collect();
        barrier.wait();
        let t0 = Instant::now();
        let c0 = process_cpu_time();
        wait_with_progress(&hs, &mut progress, &done);
        let cpu = process_cpu_time().saturating_sub(c0);
        let (results, wall): (Vec<(PhaseResult, Option<IoError>)>, _) = join_timed(hs, t0);
        (wall, cpu, results)
    });
    // The derived columns (rate, CPU%, averages, CPU Eff) as the simulated tiobench
    // computes them from tiotest's raw sums.
    let mut raw = PhaseResult { phase: Some(phase), threads: n, ..PhaseResult::default() };
    for (c, _) in &results {
        raw.merge(c);
    }
    raw.wall_s = wall.as_secs_f64();
    raw.cpu_s = cpu.as_secs_f64();
    let err = first_error(results.into_iter().map(|(_, e)| e));
    (raw.record(label, cfg.size_mb, cfg.block), err)
}
