//! One fio job thread as a sans-IO state machine — fio's `thread_main` and `do_io`
//! (`backend.c`) with `io_u.c`'s limits and `stat.c`'s accounting — for either world's
//! executor to run: the simulator's host (`iosched-workloads`) and the real runtime
//! (`iosched-rt`) carry out the same [`ThreadOp`]s, so a job's timing rules exist once.
//!
//! **Call order.** The executor calls [`JobThread::next`] with the time and the outcome of
//! the op it last returned, carries out the op it gets, and calls again, until
//! [`ThreadOp::Exit`]. The caller owns the clock: `now` is its own (simulated, or real
//! time since the run started), and the thread never reads one. When the job's measured
//! part ends ([`ThreadOp`]s after that are its end-of-job syncs and closes),
//! [`JobThread::take_result`] has its [`JobResult`]; a run stopped early takes
//! [`JobThread::stop_result`] instead.
//!
//! What a job does, as in fio:
//!
//! - **Each I/O**: its file, direction, size and offset come from the job's
//!   [`JobStream`] (or its replayed log); this state machine decides when each one goes.
//! - **Engines**: a sync engine's I/O is one blocking call ([`ThreadOp::Io`] with
//!   `queued: false`, its outcome the bytes moved); an async one (`libaio`, `io_uring`,
//!   `posixaio` with `direct=1`) keeps `iodepth` I/Os in flight, each submitted
//!   (`queued: true`) and later reaped ([`ThreadOp::Reap`]), as fio's `io_u_submit` and
//!   `io_u_queued_complete`; latency is measured at the reap, as fio measures it.
//! - **Limits**: `size` (or `io_size`) × `loops` bytes, or `runtime` (with `time_based`,
//!   passes repeat until it), or `number_ios` × `loops` I/Os (`exceeds_number_ios`) if
//!   that comes first; `ramp_time` runs before the measured time; `startdelay`,
//!   `thinktime` (`thinktime_spin` of CPU, the rest asleep, every `thinktime_blocks`),
//!   `rate` / `rate_iops` (linear: each I/O no earlier than its share of the budget;
//!   `rate_process=poisson`: each I/O no earlier than the sum of exponential gaps of mean
//!   one block's time, as fio's `usec_for_io`).
//! - **Syncs**: `fsync=N` / `fdatasync=N` after every N writes, `end_fsync`,
//!   `fsync_on_close`.
//! - **Logs**: with `read_iolog` the log's I/Os replace the job's pattern, timed as fio's
//!   `delay_since_ttime` and `iolog_delay` time them; `write_iolog` records what the job
//!   issued ([`JobThread::take_iolog`]).

use super::iolog::{Action, Iolog, Issued, write_v3};
use super::job::{ExitWhat, Job, JobSet, RateProcess};
use super::report::{DirStats, JobResult, Sample, batch_bucket, depth_bucket};
use super::stream::{JobStream, Region};
use super::verify::{History, Piece};
use iosched_core::{Duration, Instant, IoClass, IoPrio, Rng};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What the thread asks its executor to do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThreadOp {
    /// Sleep this long.
    Sleep(Duration),
    /// Spin on the CPU this long (`thinktime_spin`).
    Spin(Duration),
    /// Open, or close, the job's file with this index.
    Open(usize),
    Close(usize),
    /// Read or write `len` bytes at `offset` of file `file` (the offset in the file, as
    /// the job's regions give it). `queued`: submitted for an async engine, completed by
    /// a later [`ThreadOp::Reap`] naming `token`; otherwise one blocking call.
    Io {
        write: bool,
        file: usize,
        offset: u64,
        len: u64,
        queued: bool,
        token: u64,
        /// The I/O's own priority (`cmdprio_*`: the request carries it instead of the
        /// task's); `None`: the task's.
        prio: Option<IoPrio>,
    },
    /// Wait until at least `min` queued I/Os have completed (0: take what has), and
    /// report them all ([`Outcome::Reaped`]).
    Reap {
        min: u32,
    },
    /// `fsync` (or, `data`, `fdatasync`) the file.
    Fsync {
        file: usize,
        data: bool,
    },
    Exit,
}

/// How the last [`ThreadOp`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to report (the first call; a sleep, open, close, submission or sync).
    None,
    /// A blocking I/O moved this many bytes.
    Moved(u64),
    /// A reap returned these I/Os.
    Reaped(Reaped),
    /// The blocking I/O failed: not counted (the executor reports the error).
    Failed,
}

/// The I/Os a reap returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// By their tokens, in any order.
    These(Vec<u64>),
    /// By their tokens, each with when it was submitted and when it completed: for an
    /// executor whose submitters time each I/O themselves and report later (fio's
    /// `io_submit_mode=offload` workers).
    At(Vec<(u64, Instant, Instant)>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Start,
    Open(usize),
    Run,
    /// `do_verify`: sync file `i` (`fio_io_sync`) while `i` is under the file count, then
    /// read back the history.
    Verify(usize),
    Drain,
    EndFsync(usize),
    Close(usize),
    Done,
}

/// The op awaiting its outcome.
#[derive(Debug, Clone, Copy)]
enum Pending {
    None,
    /// A blocking I/O.
    Data(Queued),
    Fsync {
        at: Instant,
    },
    Reap,
    Other,
}

/// An I/O in flight.
#[derive(Debug, Clone, Copy)]
struct Queued {
    token: u64,
    write: bool,
    bytes: u64,
    offset: u64,
    /// When it was submitted.
    at: Instant,
    /// fio's priority value, for its statistics and logs.
    prio: u16,
}

/// One job thread (one clone of a job).
#[derive(Debug)]
pub struct JobThread {
    name: String,
    groupid: u32,
    job: Job,
    /// How many files the job has (its regions, or its replayed log's files).
    nfiles: usize,
    stream: JobStream,
    step: Step,
    pending: Pending,
    t0: Instant,
    measured_from: Instant,
    issued_bytes: u64,
    target_bytes: u64,
    ios: u64,
    writes_since_sync: u64,
    wrote: bool,
    /// The file of the last I/O (a periodic fsync syncs it).
    last_file: usize,
    inflight: VecDeque<Queued>,
    next_token: u64,
    stats: [DirStats; 2],
    fsyncs: u64,
    /// Each measured periodic or replayed sync's latency, ns (fio's `sync_stat`).
    sync_lat_ns: Vec<u64>,
    think_due: u32,
    /// What is left of a sleep (fio's `usec_sleep` sleeps at most about a second at a
    /// time and stops when the thread is terminated).
    sleep_left: Option<Duration>,
    /// The I/O chosen but held back by the rate limit.
    held: Option<(bool, usize, u64, u64)>,
    /// The queue filled up: reaping down to `iodepth_low` before issuing again.
    draining: bool,
    /// The rate limit's clock and count (fio's `td->start` and `rate_io_issue_bytes`):
    /// bytes issued per direction since `rate_from`, which `ramp_time`'s end resets, as
    /// fio's `reset_all_stats` does.
    rate_from: Instant,
    rate_issued: [u64; 2],
    ramp_over: bool,
    /// `rate_min`: per direction, the bytes and I/Os at the last check and when it was
    /// (fio's `rate_bytes`, `rate_blocks`, `lastrate`); `None` before the first.
    min_rate: [Option<(u64, u64, Instant)>; 2],
    /// The error that ended the job: errno and function (fio's `td_verror`).
    error: Option<(u32, &'static str)>,
    /// `rate_process=poisson`, per direction: the gaps' generator and when the next I/O
    /// may go, since the job started (fio's `poisson_state` and `last_usec`).
    poisson: Option<[(Rng, Duration); 2]>,
    /// `read_iolog`: the log and the next entry to replay.
    replay: Option<(Arc<Iolog>, usize)>,
    /// When the last I/O was issued (a log's delays count from it).
    last_issue: Instant,
    /// When completions were last reaped while waiting for a log's next time.
    reaped_at: Option<Instant>,
    /// `write_iolog`: every I/O issued (µs since the job started, file, action, offset,
    /// length), and the log once written.
    logged: Option<Vec<Issued>>,
    iolog: Option<(String, String)>,
    /// I/Os by the depth at their submission (fio's `io_u_map`).
    depth_map: [u64; 7],
    /// I/Os per submission and per reap (fio's `io_u_submit`, `io_u_complete`).
    submit_map: [u64; 7],
    complete_map: [u64; 7],
    /// Every measured I/O, for the job's per-I/O logs.
    samples: Option<Vec<Sample>>,
    /// `cmdprio_*`'s draws (fio's `prio_state`), and the job's own priority value (fio's
    /// `td->ioprio`: `prioclass`/`prio`, 0 when neither is given).
    prio_rng: Option<Rng>,
    ioprio: u16,
    /// Per direction, fio's `clat_prio` list: the job's own priority value, then those
    /// `cmdprio_*` may give its I/Os; empty for a direction that gets none, whose I/Os
    /// are then not counted by priority.
    prio_list: [Vec<u16>; 2],
    /// `verify`: the writes to read back, the read-back passes done (one per loop), and
    /// whether the last I/O was a read (`td->last_ddir`).
    verify: Option<History>,
    verify_passes: u64,
    last_was_read: bool,
    /// Time spent reading back (fio's verify phases), and when the current one began.
    verify_time: Duration,
    verify_from: Option<Instant>,
    thread_number: u64,
    /// Set by [`JobThread::stop_issuing`]: no more I/O; what is queued is reaped.
    stopping: bool,
    /// Set by another thread's end under `exitall` ([`Terminator`]): as `stopping`.
    terminated: Arc<AtomicBool>,
    /// `flow`: the flow id's shared counts, and this thread's I/Os counted in them.
    flow: Option<Arc<Flow>>,
    flow_counter: u64,
    result: Option<JobResult>,
}

/// A job over its flow share without `flow_sleep` spins in steps of this much CPU time
/// (fio's `do_io` loop spins on `flow_threshold_exceeded`; the step is the simulation's
/// resolution of that spin, not a fio value).
const FLOW_SPIN: Duration = Duration::from_micros(10);

/// While a replayed log's next I/O is not due and I/Os are in flight, completions are
/// reaped at least this often (fio polls them in `iolog_delay`).
const REPLAY_REAP_STEP: Duration = Duration::from_millis(1);

impl JobThread {
    /// Clone `clone` of `job` in reporting group `groupid`, its I/O on `regions` (one per
    /// file, in the file's own offsets; for a replayed log, one per log file), fio's job
    /// number `thread_number` (1-based over the run), `machine_seed` the run's seed.
    pub fn new(
        job: &Job,
        groupid: u32,
        clone: u32,
        regions: Vec<Region>,
        thread_number: u64,
        machine_seed: u64,
    ) -> JobThread {
        let region_bytes: u64 = regions.iter().map(|r| r.len).sum();
        JobThread {
            name: job.thread_name(clone),
            groupid,
            job: job.clone(),
            nfiles: regions.len(),
            stream: JobStream::new(job, regions, thread_number, machine_seed),
            step: Step::Start,
            pending: Pending::None,
            t0: Instant::ZERO,
            measured_from: Instant::ZERO,
            issued_bytes: 0,
            target_bytes: job.bytes_to_issue(region_bytes),
            ios: 0,
            writes_since_sync: 0,
            wrote: false,
            last_file: 0,
            inflight: VecDeque::new(),
            next_token: 0,
            stats: Default::default(),
            fsyncs: 0,
            sync_lat_ns: Vec::new(),
            think_due: 0,
            sleep_left: None,
            held: None,
            draining: false,
            rate_from: Instant::ZERO,
            rate_issued: [0; 2],
            ramp_over: false,
            min_rate: [None; 2],
            error: None,
            poisson: (job.rate_process == RateProcess::Poisson).then(|| {
                let seed = machine_seed ^ thread_number.rotate_left(32);
                [(Rng::derive(seed, 0x9015_0000), Duration::ZERO), (Rng::derive(seed, 0x9015_0001), Duration::ZERO)]
            }),
            replay: job.iolog.clone().map(|l| (l, 0)),
            last_issue: Instant::ZERO,
            reaped_at: None,
            logged: job.write_iolog.is_some().then(Vec::new),
            iolog: None,
            depth_map: [0; 7],
            submit_map: [0; 7],
            complete_map: [0; 7],
            samples: job.logs_samples().then(Vec::new),
            prio_rng: job
                .cmdprio
                .active()
                .then(|| Rng::derive(machine_seed ^ thread_number.rotate_left(32), 0x9015_0002)),
            ioprio: super::job::ioprio_value(job.prioclass, job.prio),
            prio_list: [false, true].map(|w| {
                let enabled = if w { job.rw.writes() } else { job.rw.reads() };
                let values = job.cmdprio.values(w);
                if !enabled || values.is_empty() {
                    return Vec::new();
                }
                let own = super::job::ioprio_value(job.prioclass, job.prio);
                let mut list = vec![own];
                list.extend(values.iter().map(|&(c, l)| super::job::ioprio_value(c, l)).filter(|&v| v != own));
                list
            }),
            verify: (job.verify.is_some() && job.do_verify && job.rw.writes() && job.iolog.is_none()).then(|| {
                History::new(!job.rw.is_random() || job.norandommap, job.verify_backlog, job.verify_backlog_batch)
            }),
            verify_passes: 0,
            last_was_read: false,
            verify_time: Duration::ZERO,
            verify_from: None,
            thread_number,
            stopping: false,
            terminated: Arc::new(AtomicBool::new(false)),
            flow: None,
            flow_counter: 0,
            result: None,
        }
    }

    pub fn job(&self) -> &Job {
        &self.job
    }

    /// The thread's name (`job` or `job.N` for clone N).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether its I/Os are queued (an async engine with `direct=1`: without it, Linux
    /// performs a buffered AIO inside the submission, a blocking call, as fio sees on 2.6).
    pub fn is_async(&self) -> bool {
        self.job.offload || (self.job.ioengine.is_async() && self.job.direct)
    }

    /// How many I/Os the thread will issue, if that is known before it runs: its bytes
    /// over its smallest block (its log's entries, for a replay); `None` for a job that
    /// runs for a time or whose block sizes vary.
    pub fn planned_ios(&self) -> Option<u64> {
        if let Some((log, _)) = &self.replay {
            return Some(log.entries.len() as u64);
        }
        let j = &self.job;
        let fixed = j.bsrange.is_none() && j.bssplit.is_none() && j.bs[0] == j.bs[1];
        if j.time_based || j.runtime_us > 0 || !fixed {
            return None;
        }
        let ios = self.target_bytes.div_ceil(j.bs[0].max(1));
        Some(if j.number_ios > 0 { ios.min(j.number_ios.saturating_mul(j.loops as u64)) } else { ios })
    }

    /// How many queued I/Os have not been reaped.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Issue no more I/O (a run being stopped): the next steps reap what is queued and
    /// end the job as if its limit was reached.
    pub fn stop_issuing(&mut self) {
        self.stopping = true;
    }

    /// The flag that terminates this thread (fio's `td->terminate`), for a [`Terminator`].
    pub fn terminate_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.terminated)
    }

    /// Stopped, by the executor or by another job's end.
    fn stopped(&self) -> bool {
        self.stopping || self.terminated.load(Ordering::Relaxed)
    }

    /// A queued I/O that failed: no longer in flight, and not counted (the executor
    /// reports the error).
    pub fn forget(&mut self, token: u64) {
        self.inflight.retain(|q| q.token != token);
    }

    /// The job's result, once its measured part has ended (taken once).
    pub fn take_result(&mut self) -> Option<JobResult> {
        self.result.take()
    }

    /// `write_iolog`: the log's path, as the job gives it, and its text (fio iolog v3),
    /// once the job has ended (taken once).
    pub fn take_iolog(&mut self) -> Option<(String, String)> {
        self.iolog.take()
    }

    /// The result of a job that a run's limit stopped at `at` before it ended: what it
    /// did by then (a job that had not started: nothing, over no time), as fio reports a
    /// stopped job. `None` if its result was already made.
    pub fn stop_result(&mut self, at: Instant) -> Option<JobResult> {
        if self.step == Step::Done || matches!(self.step, Step::EndFsync(_) | Step::Close(_)) {
            return self.result.take();
        }
        if matches!(self.step, Step::Start | Step::Open(_)) {
            self.measured_from = at;
        }
        self.finish(at);
        self.result.take()
    }

    fn timed(&self) -> bool {
        self.job.runtime_us > 0
    }

    fn out_of_time(&self, now: Instant) -> bool {
        self.timed() && now.saturating_duration_since(self.measured_from) >= Duration::from_micros(self.job.runtime_us)
    }

    fn more_to_issue(&self, now: Instant) -> bool {
        if self.stopped() || self.out_of_time(now) {
            return false;
        }
        if let Some((log, next)) = &self.replay {
            return *next < log.entries.len();
        }
        if self.job.number_ios > 0 && self.ios >= self.job.number_ios.saturating_mul(self.job.loops as u64) {
            return false;
        }
        self.job.time_based || self.issued_bytes < self.target_bytes
    }

    /// Count a submitted I/O at the job's depth (the I/Os in flight, itself included), as
    /// fio's `io_u_mark_depth` does; not during `ramp_time`, whose counts fio resets.
    fn mark_depth(&mut self, now: Instant) {
        if now >= self.measured_from {
            let depth = if self.is_async() { self.inflight.len() as u32 } else { 1 };
            self.depth_map[depth_bucket(depth)] += 1;
            // Each I/O is its own submission here (`io_u_mark_submit(td, 1)`).
            self.submit_map[batch_bucket(1)] += 1;
        }
    }

    /// Note an issued I/O for `write_iolog`.
    fn log_issue(&mut self, now: Instant, file: usize, action: Action, offset: u64, len: u64) {
        let t = now.saturating_duration_since(self.t0).as_micros() as u64;
        if let Some(v) = &mut self.logged {
            v.push((t, file, action, offset, len));
        }
    }

    /// The next step of a replayed log (`read_iolog_get`, `iolog_delay`), or `None` when
    /// the log is done.
    fn replay_step(&mut self, now: Instant) -> Option<ThreadOp> {
        let (log, next) = self.replay.clone()?;
        let e = *log.entries.get(next)?;
        if let Action::Wait(us) = e.action {
            self.replay = Some((log, next + 1));
            if us == 0 {
                return self.replay_step(now);
            }
            return Some(self.sleep(Duration::from_micros(us)));
        }
        let due = self.last_issue
            + Duration::from_micros(log.delay_us(next, self.job.replay_time_scale, self.job.replay_no_stall));
        if now < due {
            self.pending = Pending::Other;
            if !self.inflight.is_empty() {
                if self.reaped_at != Some(now) {
                    self.reaped_at = Some(now);
                    self.pending = Pending::Reap;
                    return Some(ThreadOp::Reap { min: 0 });
                }
                return Some(self.sleep((due - now).min(REPLAY_REAP_STEP)));
            }
            return Some(self.sleep(due - now));
        }
        match e.action {
            Action::Sync | Action::Datasync => {
                if !self.inflight.is_empty() {
                    self.pending = Pending::Reap;
                    return Some(ThreadOp::Reap { min: 1 });
                }
                self.replay = Some((log, next + 1));
                self.last_issue = now;
                self.log_issue(now, e.file, e.action, 0, 0);
                self.pending = Pending::Fsync { at: now };
                Some(ThreadOp::Fsync { file: e.file, data: e.action == Action::Datasync })
            }
            Action::Read | Action::Write => {
                if self.is_async() && self.inflight.len() >= self.job.iodepth as usize {
                    self.pending = Pending::Reap;
                    return Some(ThreadOp::Reap { min: 1 });
                }
                let write = e.action == Action::Write;
                self.replay = Some((log, next + 1));
                self.last_issue = now;
                Some(self.issue(now, write, e.file, e.offset, e.len))
            }
            Action::Wait(_) => unreachable!("handled above"),
        }
    }

    /// Issue a read or write of file `fi` (`io_u_submit`): counted, logged for
    /// `write_iolog`, queued for an async engine or awaited for a sync one.
    fn issue(&mut self, now: Instant, write: bool, fi: usize, offset: u64, len: u64) -> ThreadOp {
        self.issued_bytes += len;
        self.ios += 1;
        self.last_was_read = !write;
        let queued = self.is_async();
        if write && let Some(h) = &mut self.verify {
            h.log(Piece { file: fi, offset, len }, self.next_token, queued);
        }
        if write {
            self.wrote = true;
        }
        self.log_issue(now, fi, if write { Action::Write } else { Action::Read }, offset, len);
        let token = self.next_token;
        self.next_token += 1;
        // `fio_cmdprio_set_ioprio`: a draw only where the share is not 0.
        let cmd = match &mut self.prio_rng {
            Some(rng) if self.job.cmdprio.share(write, len) > 0 => {
                self.job.cmdprio.pick(write, len, rng.below(100) as u32)
            }
            _ => None,
        };
        let value = cmd.map_or(self.ioprio, |(c, l)| super::job::ioprio_value(c, l));
        let io = Queued { token, write, bytes: len, offset, at: now, prio: value };
        if queued {
            self.inflight.push_back(io);
            self.pending = Pending::Other;
        } else {
            self.pending = Pending::Data(io);
        }
        self.mark_depth(now);
        let prio = cmd.map(|(c, l)| match c {
            1 => IoPrio::rt(l),
            3 => IoPrio::new(IoClass::Idle, l),
            _ => IoPrio::be(l),
        });
        ThreadOp::Io { write, file: fi, offset, len, queued, token, prio }
    }

    /// Read back a written block: an I/O like the others, except that it does not count
    /// toward the job's bytes or I/Os (fio's `do_verify` and `check_get_verify` reads are
    /// not the pass's `bytes_issued`).
    fn issue_verify(&mut self, now: Instant, p: Piece) -> ThreadOp {
        let op = self.issue(now, false, p.file, p.offset, p.len);
        self.issued_bytes -= p.len;
        self.ios -= 1;
        op
    }

    /// A loop's writes are done and there is a history to read back (fio runs
    /// `do_verify` after each pass of `loops`).
    fn verify_due(&self) -> bool {
        let Some(h) = &self.verify else { return false };
        if h.is_empty() || self.job.time_based || self.job.loops <= 1 || self.verify_passes + 1 >= self.job.loops as u64
        {
            return false;
        }
        let pass_end = self.target_bytes / self.job.loops as u64 * (self.verify_passes + 1);
        self.issued_bytes >= pass_end
    }

    /// Count a completed I/O of priority value `prio` (fio's `add_clat_sample`).
    fn account(&mut self, io: &Queued, bytes: u64, now: Instant) {
        if now < self.measured_from {
            return; // ramp_time: not measured
        }
        let (write, lat) = (io.write, (now - io.at).as_nanos() as u64);
        let at = now.saturating_duration_since(self.measured_from);
        let d = &mut self.stats[write as usize];
        d.add(bytes, lat, at.as_nanos() as u64);
        if !self.prio_list[write as usize].is_empty() {
            d.prios.push(io.prio);
        }
        if let Some(v) = &mut self.samples {
            v.push(Sample {
                at_ms: at.as_millis() as u64,
                write,
                bytes,
                clat_ns: lat,
                prio: io.prio,
                offset: io.offset,
            });
        }
    }

    /// When the rate limit lets the next I/O go (`usec_for_io`): linear, once the bytes
    /// issued since the rate's clock started take that long at `rate` bytes/s
    /// (`rate_iops` is `rate_iops × min_bs` bytes/s, as fio's `setup_rate` makes it);
    /// Poisson, the sum of the gaps drawn so far.
    fn rate_wait(&self, now: Instant, write: bool) -> Option<Duration> {
        let d = write as usize;
        let elapsed = now.saturating_duration_since(self.rate_from);
        let bps = rate_bps(&self.job, d);
        if bps == 0 {
            return None;
        }
        let allowed = match &self.poisson {
            Some(p) => p[d].1,
            None => {
                let b = self.rate_issued[d];
                Duration::from_micros((b % bps) * 1_000_000 / bps + (b / bps) * 1_000_000)
            }
        };
        (allowed > elapsed).then(|| allowed - elapsed)
    }

    /// fio's `__check_min_rate` for direction `d` at a completion at `now`: after a 2 s
    /// settling time from the rate's clock, every `rate_cycle` the bytes (or I/Os, with
    /// `rate_iops_min`) completed since the last check, per second, must reach the
    /// minimum. True when they do not: the job is stopped with EIO, as `do_io` stops it.
    fn min_rate_missed(&mut self, now: Instant, d: usize) -> bool {
        let (min_b, min_io) = (self.job.rate_min[d], self.job.rate_iops_min[d]);
        if (min_b == 0 && min_io == 0) || now.saturating_duration_since(self.rate_from) < Duration::from_secs(2) {
            return false;
        }
        let (bytes, ios) = (self.stats[d].io_bytes, self.stats[d].total_ios);
        if let Some((b0, io0, last)) = self.min_rate[d] {
            let spent = now.saturating_duration_since(last).as_millis() as u64;
            if spent < self.job.rate_cycle_ms {
                return false;
            }
            // fio checks bytes when `rate` or `rate_min` is set, else I/Os.
            let (done, before, min) =
                if self.job.rate[d] > 0 || min_b > 0 { (bytes, b0, min_b) } else { (ios, io0, min_io) };
            let rate = (done.saturating_sub(before) * 1000).checked_div(spent).unwrap_or(0);
            if done < before || rate < min {
                return true;
            }
        }
        self.min_rate[d] = Some((bytes, ios, now));
        false
    }

    /// After completions at `now`: `rate_min`'s check (not during `ramp_time`).
    fn check_min_rate(&mut self, now: Instant) {
        if self.error.is_some() || now < self.measured_from {
            return;
        }
        // Only a direction that has moved data (`bytes_done`) is checked.
        for d in 0..2 {
            if self.stats[d].io_bytes > 0 && self.min_rate_missed(now, d) {
                self.error = Some((5, "check_min_rate"));
                self.stopping = true;
                return;
            }
        }
    }

    /// At `ramp_time`'s end, fio's `reset_all_stats` restarts the rate's clock and count
    /// (and a Poisson process's sum of gaps).
    fn end_ramp(&mut self, now: Instant) {
        if self.ramp_over || now < self.measured_from {
            return;
        }
        self.ramp_over = true;
        if self.job.ramp_time_us > 0 {
            self.rate_from = now;
            self.rate_issued = [0; 2];
            self.min_rate = [None; 2];
            if let Some(p) = &mut self.poisson {
                p[0].1 = Duration::ZERO;
                p[1].1 = Duration::ZERO;
            }
        }
    }

    /// `rate_process=poisson`: the next I/O of this direction may go one exponential gap
    /// later, of mean one I/O's time — fio's `usec_for_io`: whole microseconds per I/O
    /// (`1000000 / iops`, an integer) times `-ln(U)`, truncated to microseconds.
    fn draw_poisson_gap(&mut self, write: bool) {
        let d = write as usize;
        if self.poisson.is_none() || (self.job.rate[d] == 0 && self.job.rate_iops[d] == 0) {
            return;
        }
        // Not zero: `check` refuses a Poisson rate under one block per second.
        let per_io_us = 1_000_000 / poisson_iops(&self.job, d);
        let Some(p) = &mut self.poisson else { return };
        // U in (0, 1]: -ln(U) is finite.
        let u = 1.0 - p[d].0.unit();
        let gap_us = (per_io_us as f64 * -u.ln()) as u64;
        p[d].1 += Duration::from_micros(gap_us);
    }

    /// `flow_threshold_exceeded`: whether this thread is ahead of its weight's share of
    /// its flow id's I/Os; if not, one more I/O is counted for it.
    fn flow_ahead(&mut self) -> bool {
        let Some(f) = &self.flow else { return false };
        let counter = f.counter.load(Ordering::Relaxed).max(1) as f64;
        let weight = f.weight.load(Ordering::Relaxed).max(1) as f64;
        if self.flow_counter as f64 / counter > self.job.flow as f64 / weight {
            return true;
        }
        f.counter.fetch_add(1, Ordering::Relaxed);
        self.flow_counter += 1;
        false
    }

    /// The measured part is over at `now`: the result, and the `write_iolog` text.
    fn finish(&mut self, now: Instant) {
        // `flow_exit_job`: the flow forgets this thread's I/Os and weight.
        if let Some(f) = self.flow.take() {
            f.counter.fetch_sub(self.flow_counter, Ordering::Relaxed);
            f.weight.fetch_sub(self.job.flow as u64, Ordering::Relaxed);
        }
        let runtime = now.saturating_duration_since(self.measured_from);
        if let (Some(v), Some(path)) = (self.logged.take(), self.job.write_iolog.clone()) {
            let names: Vec<String> = self.job.file_names(0);
            let end = now.saturating_duration_since(self.t0).as_micros() as u64;
            self.iolog = Some((path, write_v3(&names, &v, end)));
        }
        let (error, error_func) = self.error.unwrap_or((0, ""));
        self.result = Some(JobResult {
            name: self.name.clone(),
            groupid: self.groupid,
            error,
            error_func,
            runtime_us: runtime.as_micros() as u64,
            dirs: {
                let mut dirs = std::mem::take(&mut self.stats);
                for (d, l) in dirs.iter_mut().zip(&self.prio_list) {
                    d.prio_list = l.clone();
                }
                if self.verify.is_some() {
                    // fio's `update_runtime`: the do-I/O phase to the directions the job
                    // does, the verify phases to reads.
                    let total = runtime.as_micros() as u64;
                    let verify = (self.verify_time.as_micros() as u64).min(total);
                    let io = total - verify;
                    dirs[0].runtime_us = Some(if self.job.rw.reads() { io } else { 0 } + verify);
                    dirs[1].runtime_us = Some(io);
                }
                dirs
            },
            ioprio: self.ioprio,
            fsyncs: self.fsyncs,
            sync_lat_ns: std::mem::take(&mut self.sync_lat_ns),
            group_reporting: self.job.group_reporting,
            iodepth: self.job.iodepth,
            depth_map: self.depth_map,
            options: self.job.options.clone(),
            submit_map: self.submit_map,
            complete_map: self.complete_map,
            samples: self.samples.take().unwrap_or_default(),
            number: self.thread_number,
        });
    }

    /// Sleep `d`, as fio's `usec_sleep` does: a second and the part of `d` under a
    /// second at most at a time, the rest after it unless the thread is stopped by then.
    fn sleep(&mut self, d: Duration) -> ThreadOp {
        const SECOND: Duration = Duration::from_secs(1);
        let now = if d < SECOND { d } else { SECOND + Duration::from_nanos((d.as_nanos() % 1_000_000_000) as u64) };
        self.sleep_left = (d > now).then(|| d - now);
        self.pending = Pending::Other;
        ThreadOp::Sleep(now)
    }

    /// The next op, given the time and how the last one ended (see the module's call
    /// order).
    pub fn next(&mut self, now: Instant, done: Outcome) -> ThreadOp {
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::Data(io) => {
                let moved = match done {
                    Outcome::Moved(b) => Some(b),
                    Outcome::Failed => None,
                    _ => Some(io.bytes),
                };
                if let Some(moved) = moved {
                    self.account(&io, moved, now);
                }
                if now >= self.measured_from {
                    self.complete_map[batch_bucket(1)] += 1;
                }
                self.check_min_rate(now);
            }
            Pending::Reap => {
                // Each reaped I/O, and when it completed.
                let mut take = |t: u64| {
                    let i = self.inflight.iter().position(|q| q.token == t)?;
                    self.inflight.remove(i)
                };
                let reaped: Vec<(Queued, Instant)> = match done {
                    Outcome::Reaped(Reaped::These(tokens)) => {
                        tokens.into_iter().filter_map(take).map(|q| (q, now)).collect()
                    }
                    Outcome::Reaped(Reaped::At(v)) => v
                        .into_iter()
                        .filter_map(|(t, submitted, completed)| {
                            take(t).map(|q| (Queued { at: submitted, ..q }, completed))
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                if now >= self.measured_from {
                    self.complete_map[batch_bucket(reaped.len() as u32)] += 1;
                }
                for (io, completed) in reaped {
                    if let Some(h) = &mut self.verify {
                        h.completed(io.token);
                    }
                    self.account(&io, io.bytes, completed);
                }
                self.check_min_rate(now);
            }
            Pending::Fsync { at } => {
                self.fsyncs += 1;
                if at >= self.measured_from {
                    self.sync_lat_ns.push((now - at).as_nanos() as u64);
                }
            }
            Pending::None | Pending::Other => {}
        }
        loop {
            if let Some(d) = self.sleep_left.take()
                && !self.stopped()
            {
                return self.sleep(d);
            }
            match self.step {
                Step::Start => {
                    self.step = Step::Open(0);
                    if self.job.startdelay_us > 0 && !self.stopped() {
                        return self.sleep(Duration::from_micros(self.job.startdelay_us));
                    }
                }
                Step::Open(i) => {
                    if i < self.nfiles {
                        self.step = Step::Open(i + 1);
                        self.pending = Pending::Other;
                        return ThreadOp::Open(i);
                    }
                    self.t0 = now;
                    self.rate_from = now;
                    self.measured_from = now + Duration::from_micros(self.job.ramp_time_us);
                    self.step = Step::Run;
                }
                Step::Run => {
                    self.end_ramp(now);
                    if self.job.thinktime_us > 0 && self.think_due >= self.job.thinktime_blocks && !self.stopped() {
                        self.think_due = 0;
                        let spin = Duration::from_micros(self.job.thinktime_spin_us);
                        let rest = Duration::from_micros(self.job.thinktime_us - self.job.thinktime_spin_us);
                        self.pending = Pending::Other;
                        if spin > Duration::ZERO {
                            self.sleep_left = (rest > Duration::ZERO).then_some(rest);
                            return ThreadOp::Spin(spin);
                        }
                        return self.sleep(rest);
                    }
                    if self.replay.is_some() {
                        if self.out_of_time(now) || self.stopped() {
                            self.replay = None;
                        } else if let Some(op) = self.replay_step(now) {
                            return op;
                        }
                        if !self.inflight.is_empty() {
                            self.pending = Pending::Reap;
                            return ThreadOp::Reap { min: 1 };
                        }
                        self.step = Step::Drain;
                        continue;
                    }
                    let sync_every = if self.job.fsync > 0 { self.job.fsync } else { self.job.fdatasync };
                    if sync_every > 0 && self.writes_since_sync >= sync_every as u64 && !self.stopped() {
                        // `io_u_quiesce` first: what is in flight completes before the sync.
                        if !self.inflight.is_empty() {
                            self.pending = Pending::Reap;
                            return ThreadOp::Reap { min: 1 };
                        }
                        self.writes_since_sync = 0;
                        self.pending = Pending::Fsync { at: now };
                        let data = self.job.fsync == 0;
                        self.log_issue(now, self.last_file, if data { Action::Datasync } else { Action::Sync }, 0, 0);
                        return ThreadOp::Fsync { file: self.last_file, data };
                    }
                    // `wait_for_completions`: once the queue is full, reap until no more
                    // than `iodepth_low` are in flight (by default `iodepth`: one reap).
                    if self.is_async() {
                        let depth = self.inflight.len();
                        if depth >= self.job.iodepth as usize {
                            self.draining = true;
                        }
                        if self.draining && depth > self.job.iodepth_low as usize && depth > 0 {
                            self.pending = Pending::Reap;
                            return ThreadOp::Reap { min: 1 };
                        }
                        self.draining = false;
                    }
                    if self.verify_due() {
                        if !self.inflight.is_empty() {
                            self.pending = Pending::Reap;
                            return ThreadOp::Reap { min: 1 };
                        }
                        self.step = Step::Verify(0);
                        continue;
                    }
                    let can_issue = self.more_to_issue(now)
                        && (!self.is_async() || self.inflight.len() < self.job.iodepth as usize);
                    if can_issue
                        && self.held.is_none()
                        && let Some(p) = self.verify.as_mut().and_then(|h| h.backlog_next(self.last_was_read))
                    {
                        return self.issue_verify(now, p);
                    }
                    if can_issue && self.flow.is_some() && self.held.is_none() && self.flow_ahead() {
                        // Over its share: with `flow_sleep`, quiesce and sleep; without,
                        // fio's loop spins until the others catch up.
                        if self.job.flow_sleep_us == 0 {
                            self.pending = Pending::Other;
                            return ThreadOp::Spin(FLOW_SPIN);
                        }
                        if !self.inflight.is_empty() {
                            self.pending = Pending::Reap;
                            return ThreadOp::Reap { min: 1 };
                        }
                        return self.sleep(Duration::from_micros(self.job.flow_sleep_us));
                    }
                    if can_issue {
                        let (write, fi, offset, len) = match self.held.take() {
                            Some(io) => io,
                            None => {
                                let io = self.stream.next_io();
                                (io.write, io.file, io.offset, io.len)
                            }
                        };
                        self.last_file = fi;
                        if let Some(w) = self.rate_wait(now, write) {
                            // Not yet: the same I/O goes when the rate allows it.
                            self.held = Some((write, fi, offset, len));
                            return self.sleep(w);
                        }
                        self.think_due += 1;
                        if write {
                            self.writes_since_sync += 1;
                        }
                        self.rate_issued[write as usize] += len;
                        self.draw_poisson_gap(write);
                        return self.issue(now, write, fi, offset, len);
                    }
                    if !self.inflight.is_empty() {
                        self.pending = Pending::Reap;
                        return ThreadOp::Reap { min: 1 };
                    }
                    if self.verify.as_ref().is_some_and(|h| !h.is_empty()) && !self.stopped() && !self.out_of_time(now)
                    {
                        self.step = Step::Verify(0);
                        continue;
                    }
                    self.step = Step::Drain;
                }
                Step::Verify(i) => {
                    // `do_verify`: each file synced first, then the history read back at the
                    // job's depth, until it is empty or the job's time is up.
                    if i == 0 && self.verify_from.is_none() {
                        self.verify_from = Some(now);
                    }
                    if i < self.nfiles {
                        self.step = Step::Verify(i + 1);
                        self.pending = Pending::Fsync { at: now };
                        return ThreadOp::Fsync { file: i, data: false };
                    }
                    if (self.stopped() || self.out_of_time(now))
                        && let Some(h) = &mut self.verify
                    {
                        h.clear();
                    }
                    if (!self.is_async() || self.inflight.len() < self.job.iodepth as usize)
                        && let Some(p) = self.verify.as_mut().and_then(History::take)
                    {
                        return self.issue_verify(now, p);
                    }
                    if !self.inflight.is_empty() {
                        self.pending = Pending::Reap;
                        return ThreadOp::Reap { min: 1 };
                    }
                    if let Some(h) = &mut self.verify {
                        // Anything left was never completed (a failed write): nothing to read.
                        h.clear();
                    }
                    self.verify_passes += 1;
                    if let Some(from) = self.verify_from.take() {
                        self.verify_time += now.saturating_duration_since(from.max(self.measured_from));
                    }
                    self.step = Step::Run;
                }
                Step::Drain => {
                    self.finish(now);
                    self.step = Step::EndFsync(0);
                }
                Step::EndFsync(i) => {
                    if self.wrote && (self.job.end_fsync || self.job.fsync_on_close) && i < self.nfiles {
                        self.step = Step::EndFsync(i + 1);
                        self.pending = Pending::Other;
                        return ThreadOp::Fsync { file: i, data: false };
                    }
                    self.step = Step::Close(0);
                }
                Step::Close(i) => {
                    if i < self.nfiles {
                        self.step = Step::Close(i + 1);
                        self.pending = Pending::Other;
                        return ThreadOp::Close(i);
                    }
                    self.step = Step::Done;
                }
                Step::Done => return ThreadOp::Exit,
            }
        }
    }
}

/// One flow id's shared counts (fio's `struct fio_flow`): I/Os counted (from 1, as
/// `flow_get` starts it) and the weights of its threads.
#[derive(Debug)]
pub struct Flow {
    counter: AtomicU64,
    weight: AtomicU64,
}

/// The run's flows, by id (`flow_init_job` for each thread with a `flow` weight).
#[derive(Debug, Default)]
pub struct Flows {
    by_id: Vec<(u32, Arc<Flow>)>,
}

impl Flows {
    /// Put thread `t` in its job's flow, if the job has a weight.
    pub fn join(&mut self, t: &mut JobThread) {
        let (w, id) = (t.job.flow, t.job.flow_id);
        if w == 0 {
            return;
        }
        let f = match self.by_id.iter().find(|f| f.0 == id) {
            Some(f) => Arc::clone(&f.1),
            None => {
                let f = Arc::new(Flow { counter: AtomicU64::new(1), weight: AtomicU64::new(0) });
                self.by_id.push((id, Arc::clone(&f)));
                f
            }
        };
        f.weight.fetch_add(w as u64, Ordering::Relaxed);
        t.flow = Some(f);
    }
}

/// `exitall`: which job threads a thread's end terminates (fio's `fio_terminate_threads`,
/// called at the end of `thread_main`), for either executor to consult as its threads
/// start and end. Threads are numbered in job order, clones included, as [`JobSet`]'s
/// jobs expand.
#[derive(Debug)]
pub struct Terminator {
    exitall: bool,
    threads: Vec<Tracked>,
}

#[derive(Debug)]
struct Tracked {
    groupid: u32,
    exit_what: ExitWhat,
    flag: Arc<AtomicBool>,
    running: bool,
    ended: bool,
}

impl Terminator {
    /// For `jobs`; nothing is terminated unless a job sets `exitall`.
    pub fn new(jobs: &JobSet) -> Terminator {
        Terminator { exitall: jobs.exitall(), threads: Vec::new() }
    }

    /// Track thread `t` (the next number).
    pub fn add(&mut self, t: &JobThread) {
        let j = t.job();
        self.threads.push(Tracked {
            groupid: t.groupid,
            exit_what: j.exit_what,
            flag: t.terminate_flag(),
            running: false,
            ended: false,
        });
    }

    /// Thread `i` has started.
    pub fn started(&mut self, i: usize) {
        self.threads[i].running = true;
    }

    /// Thread `i` has ended: under `exitall`, terminate what its `exit_what` names — its
    /// reporting group's threads, every thread running now, or every thread.
    pub fn ended(&mut self, i: usize) {
        let me = &mut self.threads[i];
        me.running = false;
        me.ended = true;
        if !self.exitall {
            return;
        }
        let (group, what) = (me.groupid, me.exit_what);
        for t in &self.threads {
            let hit = match what {
                ExitWhat::Group => t.groupid == group,
                ExitWhat::Stonewall => t.running,
                ExitWhat::All => true,
            };
            if hit && !t.ended {
                t.flag.store(true, Ordering::Relaxed);
            }
        }
    }
}

/// The smallest block of direction `d` (0 read, 1 write): fio's `min_bs[ddir]`.
fn min_bs_of(j: &Job, d: usize) -> u64 {
    let mut m = j.bs[d];
    if let Some(r) = &j.bsrange {
        m = m.min(r[d].0);
    }
    if let Some(s) = &j.bssplit {
        m = m.min(s[d].iter().map(|x| x.0).min().unwrap_or(m));
    }
    m.max(1)
}

/// Direction `d`'s rate limit in bytes/s (fio's `rate_bps`): `rate`, else `rate_iops`
/// minimal blocks per second (`setup_rate`); 0 without a limit.
fn rate_bps(j: &Job, d: usize) -> u64 {
    if j.rate[d] > 0 { j.rate[d] } else { j.rate_iops[d] * min_bs_of(j, d) }
}

/// `rate_process=poisson`'s mean I/Os per second in direction `d`: fio's `rate_bps / min_bs`;
/// 0 without a rate.
pub fn poisson_iops(j: &Job, d: usize) -> u64 {
    rate_bps(j, d) / min_bs_of(j, d)
}

/// Why a job cannot run as a [`JobThread`], if it cannot: a Poisson rate under one block
/// per second (fio divides by zero there).
pub fn check(j: &Job) -> Result<(), String> {
    if j.rate_process == RateProcess::Poisson {
        for d in 0..2 {
            if (j.rate[d] > 0 || j.rate_iops[d] > 0) && poisson_iops(j, d) == 0 {
                return Err("rate_process=poisson with a rate under one block per second (fio divides by zero)".into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run `args`' first job to its end with an executor whose every I/O takes `io`:
    /// blocking ones at once, queued ones reaped `io` after submission.
    fn run(args: &[&str], io: Duration) -> JobResult {
        let a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let set = super::super::job::build(&super::super::jobfile::parse_args(&a, 1).unwrap()).unwrap();
        let job = &set.jobs[0];
        let (start, len) = job.file_region(0).unwrap();
        let mut t = JobThread::new(job, 0, 0, vec![Region { start, len }], 1, 1);
        let (mut now, mut outcome) = (Instant::ZERO, Outcome::None);
        let mut queued: VecDeque<(u64, Instant)> = VecDeque::new();
        for _ in 0..10_000_000 {
            match t.next(now, std::mem::replace(&mut outcome, Outcome::None)) {
                ThreadOp::Sleep(d) | ThreadOp::Spin(d) => now += d,
                ThreadOp::Io { queued: false, len, .. } => {
                    now += io;
                    outcome = Outcome::Moved(len);
                }
                // Queued I/Os take `io` and a quarter more for every fourth token, so that
                // they complete one by one.
                ThreadOp::Io { token, .. } => {
                    queued.push_back((token, now + io + io / 4 * (token % 4) as u32));
                    queued.make_contiguous().sort_by_key(|q| q.1);
                }
                ThreadOp::Reap { min } => {
                    if let Some(&(_, at)) = queued.get((min as usize).max(1) - 1) {
                        now = now.max(at);
                    }
                    let n = queued.iter().take_while(|q| q.1 <= now).count();
                    outcome = Outcome::Reaped(Reaped::These(queued.drain(..n).map(|q| q.0).collect()));
                }
                ThreadOp::Open(_) | ThreadOp::Close(_) | ThreadOp::Fsync { .. } => {}
                ThreadOp::Exit => return t.take_result().or_else(|| t.stop_result(now)).expect("a result"),
            }
            if let Some(r) = t.take_result() {
                return r;
            }
        }
        panic!("the job did not end");
    }

    fn ios(r: &JobResult) -> u64 {
        r.dirs.iter().map(|d| d.total_ios).sum()
    }

    /// fio's `usec_for_io`: the limit counts bytes issued, in minimal blocks for
    /// `rate_iops`, so queued I/Os count before they complete, and `ramp_time`'s end
    /// restarts its clock and count (`reset_all_stats`): the measured part runs at the rate.
    #[test]
    fn the_rate_counts_issued_bytes_and_restarts_after_the_ramp() {
        let base = ["--name=j", "--rw=randread", "--size=64m", "--runtime=2", "--time_based"];
        fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
            [base, extra].concat()
        }
        // 100 per second for 2 s, however deep the queue and however fast the device.
        let r = run(
            &with(&base, &["--bs=4k", "--rate_iops=100", "--ioengine=libaio", "--direct=1", "--iodepth=16"]),
            Duration::from_millis(1),
        );
        assert!((199..=201).contains(&ios(&r)), "{}", ios(&r));
        // A ramp of 1 s first: still 100 per second in the measured 2 s, none banked.
        let r = run(&with(&base, &["--bs=4k", "--rate_iops=100", "--ramp_time=1"]), Duration::from_millis(1));
        assert!((199..=201).contains(&ios(&r)), "{}", ios(&r));
        assert_eq!(r.runtime_us / 1000, 2000);
        // With 16 KiB blocks beside 4 KiB ones, rate_iops counts 4 KiB blocks: 100 a second
        // of them is 400 KiB/s, fewer I/Os.
        let r = run(&with(&base, &["--bsrange=4k-16k", "--rate_iops=100"]), Duration::from_millis(1));
        let bytes: u64 = r.dirs.iter().map(|d| d.io_bytes).sum();
        assert!((790_000..=830_000).contains(&bytes), "{bytes} bytes in 2 s");
        assert!(ios(&r) < 150, "{}", ios(&r));
    }

    /// `rate_min`: after 2 s, each `rate_cycle` must reach the minimum, or the job stops
    /// with EIO from `check_min_rate`; a job above it runs its time.
    #[test]
    fn a_job_under_rate_min_stops_with_an_error() {
        let job = |min: &str| {
            let rate_min = format!("--rate_min={min}");
            let args = [
                "--name=j",
                "--rw=read",
                "--bs=4k",
                "--size=64m",
                "--rate=100k",
                rate_min.as_str(),
                "--runtime=10",
                "--time_based",
            ];
            run(&args, Duration::from_millis(1))
        };
        let r = job("50k");
        assert_eq!((r.error, r.runtime_us / 1000), (0, 10_000));
        let r = job("200k");
        assert_eq!((r.error, r.error_func), (5, "check_min_rate"));
        // The first check at 2 s only starts the cycle; the second, a second later, fails.
        assert!((3000..3100).contains(&(r.runtime_us / 1000)), "{}", r.runtime_us);
    }

    /// `iodepth_low`: once the queue is full, the job reaps down to it before it queues
    /// again (`wait_for_completions`), so it refills from the low mark; by default it
    /// keeps the queue full.
    #[test]
    fn iodepth_low_lets_the_queue_drain_before_refilling() {
        let low_depth_share = |extra: &[&str]| {
            let mut args =
                vec!["--name=j", "--rw=randread", "--bs=4k", "--size=64m", "--ioengine=libaio", "--direct=1"];
            args.extend(["--iodepth=8", "--number_ios=2000"]);
            args.extend(extra);
            let r = run(&args, Duration::from_millis(1));
            assert_eq!(ios(&r), 2000);
            // Submissions at depth 1 to 3, of all.
            (r.depth_map[0] + r.depth_map[1]) as f64 / r.depth_map.iter().sum::<u64>() as f64
        };
        let full = low_depth_share(&[]);
        let low = low_depth_share(&["--iodepth_low=2"]);
        assert!(full < 0.01, "kept full: {full}");
        // Refilling from 2 to 8, one submission in six goes at depth 3.
        assert!(low > 0.15, "refilled from 2: {low}");
    }

    /// Think time, `number_ios` and the periodic fsync, as the executor sees them.
    #[test]
    fn thinktime_number_ios_and_fsync_are_ops() {
        let r = run(&["--name=j", "--rw=read", "--bs=4k", "--size=1m", "--number_ios=10"], Duration::from_millis(1));
        assert_eq!(ios(&r), 10);
        let r = run(
            &["--name=j", "--rw=read", "--bs=4k", "--size=1m", "--thinktime=9000", "--runtime=1", "--time_based"],
            Duration::from_millis(1),
        );
        assert!((99..=101).contains(&ios(&r)), "10 ms per I/O for 1 s: {}", ios(&r));
        let r = run(&["--name=j", "--rw=write", "--bs=4k", "--size=64k", "--fsync=4"], Duration::from_millis(1));
        assert_eq!(r.fsyncs, 4);
        assert_eq!(r.sync_lat_ns.len(), 4);
        // An async job quiesces first (`io_u_quiesce`): its syncs are not put off while
        // I/Os stay in flight.
        let r = run(
            &[
                "--name=j",
                "--rw=write",
                "--bs=4k",
                "--size=64k",
                "--fsync=4",
                "--ioengine=libaio",
                "--direct=1",
                "--iodepth=8",
            ],
            Duration::from_millis(1),
        );
        assert_eq!(r.fsyncs, 4);
    }
}
