//! The runtime: a dispatcher thread per target that owns the target's [`Queue`] and runs
//! the core's one driver loop ([`iosched_core::run`]) over a real-clock [`Env`].
//!
//! ```text
//!  client threads (one owner each)          dispatcher thread
//!  Handle::read/write/fsync ──Msg──► inbox ─► Env::wait ─► Queue::handle_arrival
//!     (blocked on its loan)                       │          poll_dispatch
//!  Handle::submit(cb)                             ▼               │
//!     (callback runs on the dispatcher)     backend (io_uring │ thread pool) ◄─ Env::issue
//!                                                 │            + disk model (--emulate)
//!                                   completion ◄──┘ (held until the model's time)
//!                                      └─► Queue::handle_completion ─► Event::Completed
//!                                           ─► Env::notify ─► verify, wake the client
//! ```
//!
//! Time: `Env::now` is the time of the last wake-up, fixed until the next one, so every
//! input is followed by `poll_dispatch` at the *same* instant — which is what makes a
//! recording replay exactly.

use crate::emulate;
use crate::error::{Error, IoError, IoResult};
use crate::sys::{self, ALIGN, Backend, Buf, Bufs, Done, IoBuf, IoKind, Issue, Notify};
use crate::target::{self, TargetKind};
use crate::verify::Verifier;
use iosched_core::trace::{Record, Trace};
use iosched_core::{Env, Event, FastMap, Input, Instant, IoPrio, Op, Owner, ReqId, Request, Segments, Status, Wake};
use iosched_disk::{Device, DiskCommand};
use iosched_policies::SchedSpec;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// Which I/O engine to use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// io_uring if it works, else the thread pool (saying so through [`Options::notices`]).
    #[default]
    Auto,
    IoUring,
    Threads,
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(BackendChoice::Auto),
            "io_uring" | "io-uring" | "uring" => Ok(BackendChoice::IoUring),
            "threads" | "pool" => Ok(BackendChoice::Threads),
            o => Err(format!("unknown backend `{o}`: expected auto, io_uring or threads")),
        }
    }
}

/// Device queue depth on a real (not emulated) target when the spec does not set
/// `queue_depth`: like a SATA disk with NCQ.
pub const DEFAULT_REAL_DEPTH: u32 = 32;

/// Where the runtime's messages go: one line each, for what a user should know but that is
/// not an error — the space a new target reserves, the part of it laid out before use, a
/// read of a file's holes, `Auto` falling back to the thread pool. The caller owns the
/// terminal (the CLI prints them on stderr); with none given the runtime says nothing.
#[derive(Clone, Default)]
pub struct Notices(Option<OnNotice>);

/// A caller's handler of one notice.
pub type OnNotice = Arc<dyn Fn(&str) + Send + Sync>;

impl Notices {
    /// Notices handed to `f`.
    pub fn to(f: impl Fn(&str) + Send + Sync + 'static) -> Notices {
        Notices(Some(Arc::new(f)))
    }
    /// Say `msg` (nothing if no handler was given).
    pub fn say(&self, msg: &str) {
        if let Some(f) = &self.0 {
            f(msg)
        }
    }
}

impl std::fmt::Debug for Notices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Notices(to a caller)" } else { "Notices(none)" })
    }
}

/// How to open a target.
#[derive(Clone, Debug)]
pub struct Options {
    /// The scheduler and queue settings.
    pub sched: SchedSpec,
    /// Disk profile to emulate (`--emulate`).
    pub emulate: Option<String>,
    /// Stamp every written block and check every block read (`--verify`).
    pub verify: bool,
    /// Keep a queue-input trace (`--record`); returned in the [`Report`].
    pub record: bool,
    /// Overwrite targets we did not create (`--force`).
    pub force: bool,
    /// Data-area size: required to create a file target; grows one of ours.
    pub size: Option<u64>,
    /// Write, before use, the part of a file's data area this open reserves (see
    /// [`crate::target::open`]): for loads that read what they did not write.
    pub lay_out: bool,
    /// The load writes (default). A load that only reads sets it false: the target is
    /// opened read-only and nothing is written to it, not even the marker; it must exist
    /// (see [`crate::target`]).
    pub writes: bool,
    /// The parts of the data area the load touches, as (offset, length) in bytes; `None`:
    /// all of it. Only these parts of a file are reserved and laid out, so gaps between
    /// them take no space.
    pub used: Option<Vec<(u64, u64)>>,
    pub backend: BackendChoice,
    /// Where the runtime's one-line notices go (default: nowhere).
    pub notices: Notices,
    /// Seed of the emulated disk (its spindle's angle at time zero).
    pub seed: u64,
    /// Testing aid: fail the Nth dispatched request (1-based; flushes are never failed)
    /// with EIO instead of
    /// issuing it (kernels without device-mapper have no `error` target for a real one).
    #[doc(hidden)]
    pub inject_eio: Option<u64>,
}

impl Options {
    pub fn new(sched: SchedSpec) -> Options {
        Options {
            sched,
            emulate: None,
            verify: false,
            record: false,
            force: false,
            size: None,
            lay_out: false,
            writes: true,
            used: None,
            backend: BackendChoice::Auto,
            notices: Notices::default(),
            seed: 1,
            inject_eio: None,
        }
    }
}

/// A latency distribution summary (microseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Lateness {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Lateness {
    fn from_samples(mut v: Vec<u64>) -> Lateness {
        if v.is_empty() {
            return Lateness::default();
        }
        v.sort_unstable();
        Lateness {
            count: v.len() as u64,
            p50_us: quantile_us(&v, 0.50),
            p99_us: quantile_us(&v, 0.99),
            max_us: *v.last().unwrap() as f64 / 1e3,
        }
    }
}

/// The `p` quantile (nearest rank) of sorted, non-empty nanosecond samples, in microseconds.
pub(crate) fn quantile_us<T: Copy + Into<u64>>(sorted: &[T], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].into() as f64 / 1e3
}

/// Verification counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct VerifyReport {
    /// Blocks checked against their header and CRC.
    pub checked: u64,
    /// Blocks read that were never written in this run (not checkable).
    pub unverified: u64,
    pub mismatches: u64,
}

/// What a run did, returned by [`Target::close`].
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The spec as the user gave it (its label: see `SchedSpec::text`).
    pub scheduler: String,
    /// The spec the queue actually ran (with implied settings such as `queue_depth`);
    /// the `# sched` line of a recording.
    pub effective_scheduler: String,
    pub backend: &'static str,
    pub emulate: Option<String>,
    pub target: PathBuf,
    /// Submitted units (reads, writes, flushes).
    pub requests: u64,
    /// Requests sent to the device (after merging).
    pub dispatched: u64,
    /// Units merged into another request.
    pub merged: u64,
    /// Submitters that had to wait for a request slot.
    pub slot_waits: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Failed requests by kind (EIO, ENOSPC, short, verify, …).
    pub errors: BTreeMap<String, u64>,
    /// The first error, described with its offset.
    pub first_error: Option<String>,
    pub verify: Option<VerifyReport>,
    /// How late the dispatcher acted on the queue's timers (anticipation, slice idle,
    /// unplug): actual time minus deadline.
    pub timer_lateness: Lateness,
    /// Of those, the wake-ups that slept until the deadline (pure timer precision).
    pub sleep_lateness: Lateness,
    /// With `--emulate`: how late completions were delivered after the model's time.
    pub emulated_lateness: Option<Lateness>,
    /// The queue-input trace (`--record`).
    #[serde(skip)]
    pub trace: Option<Trace>,
}

/// Facts about an opened target.
#[derive(Clone, Debug, Serialize)]
pub struct TargetInfo {
    pub path: PathBuf,
    pub kind: TargetKind,
    /// Usable bytes (offsets given to handles run from 0 to this).
    pub data_len: u64,
    pub created: bool,
    /// The data area from this offset on was reserved by this open and never written
    /// (a filesystem reads it back as zeros without touching the device); `None` when
    /// all of it existed before, or on a block device.
    pub unwritten_from: Option<u64>,
    pub backend: &'static str,
    pub effective_scheduler: String,
    pub queue_depth: u32,
}

// --------------------------------------------------------------------------------------
// Messages

/// What a completion callback receives: the buffer back (if one was given) and the result.
#[derive(Debug)]
pub struct Completion {
    pub buf: Option<IoBuf>,
    pub result: IoResult,
}

type Callback = Box<dyn FnOnce(Completion) + Send>;

enum Reply {
    /// A blocking caller: the result goes back through the loan in `Unit::buf`.
    Loan,
    Callback(Callback),
}

struct Sub {
    rq: Request,
    buf: Option<Buf>,
    reply: Reply,
    unplug: bool,
    /// A store target's unit: where its data goes.
    place: Option<Place>,
}

/// Where a unit of a store target (see [`Target::open_store`]) reads or writes its data:
/// `buf.len()` bytes of `file` from `offset` on (no alignment needed), or, for a flush,
/// the file to `fsync`.
#[derive(Clone, Debug)]
pub struct Place {
    pub file: Arc<std::fs::File>,
    pub offset: u64,
}

enum Msg {
    Submit(Sub),
    Unplug,
    Exit(Owner),
    Close,
}

struct Shared {
    tx: Sender<Msg>,
    notify: Arc<Notify>,
    next_id: AtomicU64,
    next_owner: AtomicU64,
    data_len: u64,
    /// A store target: units name their place (see [`Target::open_store`]).
    store: bool,
}

impl Shared {
    /// Hand a message to the dispatcher; false if it is gone (the message is dropped,
    /// which completes a loan inside it with `Stopped`).
    fn send(&self, m: Msg) -> bool {
        if self.tx.send(m).is_err() {
            return false;
        }
        self.notify.wake();
        true
    }
}

// --------------------------------------------------------------------------------------
// The public API

/// An open target: a file or block device with its own queue and dispatcher thread.
pub struct Target {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<Option<Report>>>,
    info: TargetInfo,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("info", &self.info).finish()
    }
}

/// A submitter: one owner (process / io_context) as AS and CFQ see it. Give each thread
/// its own; dropping it tells the scheduler the owner exited.
pub struct Handle {
    shared: Arc<Shared>,
    owner: Owner,
    prio: IoPrio,
    unplug: bool,
    sync_writes: bool,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle").field("owner", &self.owner).field("prio", &self.prio).finish()
    }
}

impl Target {
    /// Open (or create) `path` and start its dispatcher.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Target, Error> {
        let path = path.as_ref();
        let (model, rotational) = emulation(&opts, target::rotational(path))?;
        // The data area must fit the emulated disk: a --size is checked before a file is
        // created or laid out, an existing target's size once it is open.
        if let Some(size) = opts.size {
            fits(&model, path, size)?;
        }
        let tf = target::open(path, &opts)?;
        fits(&model, path, tf.data_len)?;
        let place = Placement {
            path: tf.path.clone(),
            file: Some(Arc::clone(&tf.file)),
            kind: tf.kind,
            data_offset: tf.data_offset,
            data_len: tf.data_len,
            created: tf.created,
            unwritten_from: tf.unwritten_from,
        };
        drop(tf);
        Target::start(place, opts, model, rotational)
    }

    /// A *store* target: a queue over a virtual disk of `capacity` bytes that has no file
    /// of its own. Every read, write and flush is submitted with [`Handle::submit_placed`],
    /// which names the file and offset its data goes to; the queue (and an emulated disk)
    /// see only its place on the virtual disk. `label` names the store in reports and
    /// recordings. This is how `iosched-mount` puts a directory's files under a scheduler:
    /// the files keep their own content, and a layout gives each one sectors.
    ///
    /// Not with [`Options::verify`] (the runtime's block stamps would change the files'
    /// content); [`Options::size`], `lay_out`, `used` and `force` do not apply.
    pub fn open_store(label: impl AsRef<Path>, capacity: u64, opts: Options) -> Result<Target, Error> {
        let path = label.as_ref();
        if opts.verify {
            return Err(Error(format!("{}: --verify does not apply to a store target", path.display())));
        }
        let (model, rotational) = emulation(&opts, None)?;
        fits(&model, path, capacity)?;
        let place = Placement {
            path: path.to_path_buf(),
            file: None,
            kind: TargetKind::Store,
            data_offset: 0,
            data_len: capacity,
            created: false,
            unwritten_from: None,
        };
        Target::start(place, opts, model, rotational)
    }

    fn start(
        place: Placement,
        opts: Options,
        model: Option<Box<dyn Device + Send>>,
        rotational: Option<bool>,
    ) -> Result<Target, Error> {
        // The queue, with the implied device depth and rotational flag recorded in the
        // effective spec (so a recorded trace replays with them).
        let depth_default = model.as_ref().map(|m| m.queue_depth()).unwrap_or(DEFAULT_REAL_DEPTH);
        let spec = effective_spec(&opts.sched, depth_default, rotational)?;
        let mut queue = spec.queue().map_err(|e| Error(format!("--sched {}: {e}", opts.sched.text)))?;
        let depth = queue.config().depth;
        if let Some(m) = &model
            && depth > m.queue_depth()
        {
            return Err(Error(format!(
                "--sched {}: queue_depth {depth} is more than the emulated disk accepts ({})",
                opts.sched.text,
                m.queue_depth()
            )));
        }
        if opts.record {
            queue.start_recording();
        }
        // The backend is built on the dispatcher thread: an io_uring ring set up with
        // SINGLE_ISSUER belongs to the thread that creates it.
        let (tx, rx) = channel();
        let (btx, brx) = channel::<Result<(&'static str, Arc<Notify>), Error>>();
        let user_spec = opts.sched.text.clone();
        let emu = opts.emulate.clone();
        let tpath = place.path.clone();
        let eff = spec.text.clone();
        let data_offset = place.data_offset;
        let file = place.file.clone();
        let store = file.is_none();
        let (choice, verify, record) = (opts.backend, opts.verify, opts.record);
        let notices = opts.notices.clone();
        let inject_eio = opts.inject_eio;
        let thread = std::thread::Builder::new()
            .name("iosched-dispatch".into())
            .spawn(move || {
                let (backend, notify) = match make_backend(file, choice, depth, &notices) {
                    Ok(b) => {
                        let _ = btx.send(Ok((b.0.name(), Arc::clone(&b.1))));
                        b
                    }
                    Err(e) => {
                        let _ = btx.send(Err(e));
                        return None;
                    }
                };
                sys::tight_timer_slack();
                let mut d = Dispatcher {
                    start: std::time::Instant::now(),
                    now: Instant::ZERO,
                    rx,
                    notify,
                    backend,
                    data_offset,
                    store,
                    part_of: FastMap::default(),
                    ready: VecDeque::new(),
                    spare: VecDeque::new(),
                    units: FastMap::default(),
                    issued: FastMap::default(),
                    model,
                    model_done: FastMap::default(),
                    verifier: verify.then(|| Verifier::new(Verifier::fresh_run())),
                    closing: false,
                    after_completion: false,
                    dones: Vec::new(),
                    injected: Vec::new(),
                    inject_eio,
                    stats: Stats::default(),
                };
                iosched_core::run(&mut queue, &mut d);
                let records = queue.take_record();
                Some(d.report(user_spec, eff, emu, tpath, records, record))
            })
            .map_err(|e| Error(format!("cannot start the dispatcher thread: {e}")))?;
        let (backend_name, notify) = match brx.recv() {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => return Err(Error("the dispatcher thread died while starting".into())),
        };
        let shared = Arc::new(Shared {
            tx,
            notify,
            next_id: AtomicU64::new(1),
            next_owner: AtomicU64::new(1),
            data_len: place.data_len,
            store,
        });
        let info = TargetInfo {
            path: place.path,
            kind: place.kind,
            data_len: place.data_len,
            created: place.created,
            unwritten_from: place.unwritten_from,
            backend: backend_name,
            effective_scheduler: spec.text.clone(),
            queue_depth: depth,
        };
        Ok(Target { shared, thread: Some(thread), info })
    }

    pub fn info(&self) -> &TargetInfo {
        &self.info
    }

    /// The dispatcher still runs (false once it stopped: after `close`, or if its I/O
    /// engine failed, when every submission fails with [`IoError::Stopped`]).
    pub fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// A handle with a fresh owner and the default I/O priority.
    pub fn handle(&self) -> Handle {
        let o = self.shared.next_owner.fetch_add(1, Ordering::Relaxed);
        self.handle_as(Owner(o), IoPrio::NONE)
    }

    /// A handle for a named owner and I/O priority. Several handles may share an owner
    /// (they then count as one process), but the owner's exit is signalled when each of
    /// them is dropped.
    pub fn handle_as(&self, owner: Owner, prio: IoPrio) -> Handle {
        Handle { shared: Arc::clone(&self.shared), owner, prio, unplug: true, sync_writes: true }
    }

    /// Wait for every submitted request to finish, stop the dispatcher and return its
    /// report. Requests submitted after this fail with [`IoError::Stopped`].
    pub fn close(mut self) -> Result<Report, Error> {
        self.stop()
    }

    fn stop(&mut self) -> Result<Report, Error> {
        let _ = self.shared.send(Msg::Close);
        let t = self.thread.take().expect("closed twice");
        match t.join() {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(Error("the dispatcher never started".into())),
            Err(_) => Err(Error("the dispatcher thread panicked".into())),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop();
        }
    }
}

impl Handle {
    pub fn owner(&self) -> Owner {
        self.owner
    }
    /// Usable bytes of the target.
    pub fn data_len(&self) -> u64 {
        self.shared.data_len
    }
    pub fn set_prio(&mut self, prio: IoPrio) {
        self.prio = prio;
    }

    /// The I/O priority its requests carry.
    pub fn prio(&self) -> IoPrio {
        self.prio
    }
    /// Whether each submission unplugs the queue (default true, like the kernel's
    /// O_DIRECT path, which runs the queue right after submitting). Batching callers set
    /// false and call [`Handle::unplug`] after a batch.
    pub fn set_unplug(&mut self, on: bool) {
        self.unplug = on;
    }
    /// Whether writes are synchronous (default true, as O_DIRECT writes); false makes them
    /// asynchronous like page-cache writeback (AS and CFQ treat the two classes apart).
    pub fn set_sync_writes(&mut self, on: bool) {
        self.sync_writes = on;
    }
    /// Run a plugged queue now.
    pub fn unplug(&self) {
        let _ = self.shared.send(Msg::Unplug);
    }

    fn check(&self, offset: u64, len: usize) -> Result<(), IoError> {
        self.not_store()?;
        let a = ALIGN as u64;
        if len == 0 || !len.is_multiple_of(ALIGN) || !offset.is_multiple_of(a) {
            return Err(IoError::Invalid(format!(
                "offset {offset} and length {len} must be positive multiples of {ALIGN} bytes"
            )));
        }
        if offset + len as u64 > self.shared.data_len {
            return Err(IoError::Invalid(format!(
                "{len} bytes at offset {offset} go past the end of the target ({} bytes)",
                self.shared.data_len
            )));
        }
        if len > u32::MAX as usize / 2 {
            return Err(IoError::Invalid(format!("length {len} is too large")));
        }
        Ok(())
    }

    fn request(&self, op: Op, offset: u64, len: usize, meta: bool) -> Request {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        Request {
            id,
            op,
            sector: offset / 512,
            len_sectors: (len / 512) as u32,
            sync: op == Op::Read || (op == Op::Write && self.sync_writes) || op == Op::Flush,
            meta,
            prio: self.prio,
            owner: self.owner,
            arrival: Instant::ZERO,
        }
    }

    fn blocking(&self, rq: Request, buf: &mut IoBuf) -> IoResult {
        let unplug = self.unplug;
        sys::lend(buf, |loan| {
            // On failure the message (and the loan in it) is dropped: Stopped.
            let sub = Sub { rq, buf: Some(Buf::Lent(loan)), reply: Reply::Loan, unplug, place: None };
            let _ = self.shared.send(Msg::Submit(sub));
        })
    }

    /// Read `buf.len()` bytes at `offset` (both multiples of 4096); blocks until done.
    pub fn read(&self, offset: u64, buf: &mut IoBuf) -> IoResult {
        self.check(offset, buf.len())?;
        let rq = self.request(Op::Read, offset, buf.len(), false);
        self.blocking(rq, buf)
    }

    /// A metadata read (CFQ prefers these).
    pub fn read_meta(&self, offset: u64, buf: &mut IoBuf) -> IoResult {
        self.check(offset, buf.len())?;
        let rq = self.request(Op::Read, offset, buf.len(), true);
        self.blocking(rq, buf)
    }

    /// Write `buf` at `offset`; blocks until done. With `--verify` the runtime writes its
    /// header and CRC into every 4 KiB block of `buf` first.
    pub fn write(&self, offset: u64, buf: &mut IoBuf) -> IoResult {
        self.check(offset, buf.len())?;
        let rq = self.request(Op::Write, offset, buf.len(), false);
        self.blocking(rq, buf)
    }

    /// A store target's units need a place: only [`Handle::submit_placed`] has one.
    fn not_store(&self) -> Result<(), IoError> {
        if self.shared.store {
            return Err(IoError::Invalid("a store target takes only submit_placed (each unit names its file)".into()));
        }
        Ok(())
    }

    /// Flush: a barrier through the queue, issued as `fsync`; blocks until done.
    pub fn fsync(&self) -> IoResult {
        self.not_store()?;
        let rq = self.request(Op::Flush, 0, 0, false);
        let mut token = IoBuf::new(0);
        self.blocking(rq, &mut token)
    }

    /// Submit without blocking; `done` runs on the dispatcher thread when the request
    /// completes (keep it short; it may submit more I/O). `op` is read, write or flush
    /// (`buf` is ignored for a flush). Errors in the request itself are returned at once.
    pub fn submit(
        &self,
        op: Op,
        offset: u64,
        buf: IoBuf,
        done: impl FnOnce(Completion) + Send + 'static,
    ) -> Result<(), IoError> {
        self.submit_with_prio(op, offset, buf, self.prio, done)
    }

    /// [`Handle::submit`] of a request that carries `prio` instead of the handle's: an
    /// I/O with a priority of its own (Linux's `IOCB_FLAG_IOPRIO`, io_uring's
    /// `sqe->ioprio`; fio's `cmdprio_*`). The owner stays the handle's.
    pub fn submit_with_prio(
        &self,
        op: Op,
        offset: u64,
        buf: IoBuf,
        prio: IoPrio,
        done: impl FnOnce(Completion) + Send + 'static,
    ) -> Result<(), IoError> {
        let (mut rq, buf) = match op {
            Op::Read | Op::Write => {
                self.check(offset, buf.len())?;
                (self.request(op, offset, buf.len(), false), Some(Buf::Owned(buf)))
            }
            Op::Flush => {
                self.not_store()?;
                (self.request(op, 0, 0, false), Some(Buf::Owned(buf)))
            }
            Op::Discard => {
                return Err(IoError::Invalid("discard is not supported".into()));
            }
        };
        rq.prio = prio;
        let sub = Sub { rq, buf, reply: Reply::Callback(Box::new(done)), unplug: self.unplug, place: None };
        if self.shared.send(Msg::Submit(sub)) { Ok(()) } else { Err(IoError::Stopped) }
    }

    /// Submit a unit of a store target without blocking: the queue sees a request for
    /// `len_sectors` sectors at `sector` of the virtual disk; its data is `buf.len()` bytes
    /// at `place` (for a flush, `buf` is ignored and `place.file` is synced). `done` runs on
    /// the dispatcher thread with the bytes moved: a read that meets the end of its file
    /// completes with fewer bytes, not an error.
    pub fn submit_placed(
        &self,
        op: Op,
        sector: u64,
        len_sectors: u32,
        place: Place,
        buf: IoBuf,
        done: impl FnOnce(Completion) + Send + 'static,
    ) -> Result<(), IoError> {
        if !self.shared.store {
            return Err(IoError::Invalid("submit_placed is for store targets (Target::open_store)".into()));
        }
        let rq = match op {
            Op::Read | Op::Write => {
                let capacity = self.shared.data_len / 512;
                if len_sectors == 0 || len_sectors > u32::MAX / 1024 || sector + len_sectors as u64 > capacity {
                    return Err(IoError::Invalid(format!(
                        "{len_sectors} sectors at sector {sector} do not fit the store ({capacity} sectors)"
                    )));
                }
                if buf.len() > len_sectors as usize * 512 {
                    return Err(IoError::Invalid(format!("{} bytes do not fit in {len_sectors} sectors", buf.len())));
                }
                let mut rq = self.request(op, sector * 512, 512, false);
                rq.len_sectors = len_sectors;
                rq
            }
            Op::Flush => self.request(op, 0, 0, false),
            Op::Discard => return Err(IoError::Invalid("discard is not supported".into())),
        };
        let sub = Sub {
            rq,
            buf: Some(Buf::Owned(buf)),
            reply: Reply::Callback(Box::new(done)),
            unplug: self.unplug,
            place: Some(place),
        };
        if self.shared.send(Msg::Submit(sub)) { Ok(()) } else { Err(IoError::Stopped) }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.shared.send(Msg::Exit(self.owner));
    }
}

/// The spec with what the driver knows in front of the user's settings, unless the user
/// set it: the device depth, and whether the device rotates (if known).
fn effective_spec(spec: &SchedSpec, depth: u32, rotational: Option<bool>) -> Result<SchedSpec, Error> {
    let mut driver = vec![("queue_depth", depth.to_string())];
    driver.extend(rotational.map(|r| ("rotational", (r as u8).to_string())));
    spec.with_driver_settings(&driver).map_err(|e| Error(format!("--sched {}: {e}", spec.text)))
}

/// What a target's dispatcher is started with (see [`Target::start`]).
struct Placement {
    path: PathBuf,
    /// The target's file; `None` for a store target.
    file: Option<Arc<std::fs::File>>,
    kind: TargetKind,
    data_offset: u64,
    data_len: u64,
    created: bool,
    unwritten_from: Option<u64>,
}

/// The emulated disk of `--emulate` (seeded) and whether it rotates; without one, the
/// rotational flag the caller found for the real target.
#[allow(clippy::type_complexity)]
fn emulation(
    opts: &Options,
    real_rotational: Option<bool>,
) -> Result<(Option<Box<dyn Device + Send>>, Option<bool>), Error> {
    Ok(match &opts.emulate {
        Some(p) => {
            let (m, rot) = emulate::load(p, opts.seed)?;
            (Some(m), Some(rot))
        }
        None => (None, real_rotational),
    })
}

/// A data area of `bytes` must fit the emulated disk.
fn fits(model: &Option<Box<dyn Device + Send>>, path: &Path, bytes: u64) -> Result<(), Error> {
    match model {
        Some(m) if bytes.div_ceil(512) > m.capacity_sectors() => Err(Error(format!(
            "{}: data area ({bytes} bytes) is larger than the emulated disk ({} bytes)",
            path.display(),
            m.capacity_sectors() * 512
        ))),
        _ => Ok(()),
    }
}

fn make_backend(
    file: Option<Arc<std::fs::File>>,
    choice: BackendChoice,
    depth: u32,
    notices: &Notices,
) -> Result<(Box<dyn Backend>, Arc<Notify>), Error> {
    let entries = (depth * 2).max(64).next_power_of_two();
    let pool = || -> Result<(Box<dyn Backend>, Arc<Notify>), Error> {
        let n = Arc::new(Notify::new(false).map_err(|e| Error(format!("notifier: {e}")))?);
        let p = sys::Pool::new(file.clone(), Arc::clone(&n), depth.clamp(1, 64) as usize)
            .map_err(|e| Error(format!("cannot start I/O threads: {e}")))?;
        Ok((Box::new(p), n))
    };
    let uring = || -> std::io::Result<(Box<dyn Backend>, Arc<Notify>)> {
        let n = Arc::new(Notify::new(true)?);
        let u = sys::Uring::new(file.clone(), Arc::clone(&n), entries)?;
        Ok((Box::new(u), n))
    };
    match choice {
        BackendChoice::Threads => pool(),
        BackendChoice::IoUring => uring().map_err(|e| Error(format!("io_uring is not available: {e}"))),
        BackendChoice::Auto => match uring() {
            Ok(b) => Ok(b),
            Err(e) => {
                notices.say(&format!("io_uring unavailable ({e}); using the blocking thread-pool backend"));
                pool()
            }
        },
    }
}

// --------------------------------------------------------------------------------------
// The dispatcher: the runtime's Env

struct Unit {
    rq: Request,
    buf: Option<Buf>,
    reply: Reply,
    /// A store target's unit: where its data goes, the bytes its operation moved, and its
    /// own status (units merged into one request may belong to different files, and one's
    /// failure is not the others').
    place: Option<Place>,
    moved: Option<u32>,
    status: Option<Status>,
    /// `--verify`: per block, the lowest generation a read may see.
    floor: Vec<Option<u32>>,
}

struct Issued {
    /// The units merged into this request (nearly always one: held inline).
    units: smallvec::SmallVec<[ReqId; 1]>,
    bytes: u64,
    /// Real completion status, once the backend reported it.
    real: Option<Status>,
    /// Waiting for the model's completion.
    model_pending: bool,
    /// A store target's request: its units' operations still running (each unit is one
    /// operation on its own file).
    parts: u32,
}

#[derive(Default)]
struct Stats {
    requests: u64,
    dispatched: u64,
    merged: u64,
    slot_waits: u64,
    bytes_read: u64,
    bytes_written: u64,
    errors: BTreeMap<String, u64>,
    first_error: Option<String>,
    timer_late: Vec<u64>,
    sleep_late: Vec<u64>,
    emu_late: Vec<u64>,
}

/// Longest single sleep of the dispatcher (see `Dispatcher::wait`).
const MAX_SLEEP: Duration = Duration::from_millis(10);

struct Dispatcher {
    start: std::time::Instant,
    now: Instant,
    rx: Receiver<Msg>,
    notify: Arc<Notify>,
    backend: Box<dyn Backend>,
    data_offset: u64,
    /// A store target (see [`Target::open_store`]): each unit is issued on its own, at its
    /// place, tagged with its id; `part_of` maps such a tag to its request.
    store: bool,
    part_of: FastMap<ReqId, ReqId>,
    ready: VecDeque<Input>,
    /// An empty deque kept for [`Dispatcher::take_messages_first`] to swap with `ready`
    /// (so that it allocates nothing).
    spare: VecDeque<Input>,
    units: FastMap<ReqId, Unit>,
    issued: FastMap<ReqId, Issued>,
    model: Option<Box<dyn Device + Send>>,
    /// Model completion times of requests whose real I/O is still running.
    model_done: FastMap<ReqId, Instant>,
    verifier: Option<Verifier>,
    closing: bool,
    /// The last input handed to the queue was a completion: the client messages waiting
    /// now (its callback's next request) go ahead of the completions still waiting.
    after_completion: bool,
    dones: Vec<Done>,
    /// Injected failures (see `Options::inject_eio`), completed at the next gather.
    injected: Vec<Done>,
    inject_eio: Option<u64>,
    stats: Stats,
}

impl Dispatcher {
    fn clock(&self) -> Instant {
        // Never behind what we already handed out.
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64).max(self.now)
    }

    /// Take client messages and finished I/O; with `block`, and if no message came, sleep
    /// in the backend until an I/O completes, a client rings, or `timeout`. True if
    /// anything came. Only called with `ready` empty, so that `ready` always holds the
    /// client inputs of one take first and completions after them (see
    /// [`Dispatcher::take_messages_first`]).
    fn gather(&mut self, block: bool, timeout: Option<Duration>) -> bool {
        debug_assert!(self.ready.is_empty(), "gather with inputs still waiting");
        let got = self.take_messages();
        got | self.collect_done(block && !got, timeout)
    }

    /// Hand queued operations to the backend and take the finished ones (sleeping as
    /// [`Dispatcher::gather`] says, with `block`). True if any finished.
    fn collect_done(&mut self, block: bool, timeout: Option<Duration>) -> bool {
        let got = !self.injected.is_empty();
        let block = block && !got;
        let mut dones = std::mem::take(&mut self.dones);
        dones.append(&mut self.injected);
        if let Err(e) = self.backend.wait(block, timeout, &mut dones) {
            // The engine itself failed (not one request): nothing can complete any more.
            panic!("I/O backend {} failed: {e}", self.backend.name());
        }
        let got = got || !dones.is_empty();
        for d in dones.drain(..) {
            self.on_done(d);
        }
        self.dones = dones;
        got
    }

    /// Take the client messages waiting in the channel, in order, into `ready`. True if
    /// any came.
    fn take_messages(&mut self) -> bool {
        let mut got = false;
        loop {
            match self.rx.try_recv() {
                Ok(m) => {
                    got = true;
                    self.on_msg(m);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.closing = true;
                    break;
                }
            }
        }
        got
    }

    /// Called right after a completion was handed over: the client messages waiting now
    /// go ahead of the completions still waiting in `ready`. A completion callback that
    /// submits the next request (the fio-like job, any library caller using callbacks)
    /// thus has it dispatched, and submitted to the device, before the next completion of
    /// the same batch is handled — fio's reap-and-resubmit loop — instead of after the
    /// whole batch: the device's queue stays full. Only after a completion: a client that
    /// submits faster than the dispatcher hands inputs over would otherwise keep every
    /// waiting completion behind its stream.
    ///
    /// Client inputs keep their order: `ready` takes messages only here and in
    /// [`Dispatcher::gather`] (when it is empty), and completions only behind them, so once
    /// a completion has been handed over nothing but completions is left to jump. The
    /// queue sees one consistent stream: every input is stamped with the time it is handed
    /// over, and a completion handed over later is simply one the dispatcher learnt of
    /// later.
    fn take_messages_first(&mut self) {
        debug_assert!(self.spare.is_empty());
        std::mem::swap(&mut self.ready, &mut self.spare);
        debug_assert!(
            self.spare.iter().all(|i| matches!(i, Input::Completion { .. })),
            "client inputs waiting behind a completion would be overtaken"
        );
        self.take_messages();
        self.ready.append(&mut self.spare);
    }

    fn on_msg(&mut self, m: Msg) {
        match m {
            Msg::Submit(mut s) => {
                self.stats.requests += 1;
                let offset = s.rq.sector * 512;
                let mut floor = Vec::new();
                if let Some(v) = &mut self.verifier {
                    match s.rq.op {
                        Op::Write => {
                            let b = s.buf.as_mut().expect("write without buffer");
                            v.stamp_write(offset, b.as_mut_slice(), s.rq.owner.0);
                        }
                        Op::Read => floor = v.read_floor(offset, s.rq.len_sectors as usize * 512),
                        _ => {}
                    }
                }
                self.ready.push_back(Input::Arrival(s.rq));
                if s.unplug {
                    self.ready.push_back(Input::Unplug);
                }
                let unit =
                    Unit { rq: s.rq, buf: s.buf, reply: s.reply, floor, place: s.place, moved: None, status: None };
                self.units.insert(s.rq.id, unit);
            }
            Msg::Unplug => self.ready.push_back(Input::Unplug),
            Msg::Exit(o) => self.ready.push_back(Input::OwnerExit(o)),
            Msg::Close => self.closing = true,
        }
    }

    fn on_done(&mut self, d: Done) {
        if self.store {
            return self.on_part_done(d);
        }
        let is = self.issued.get_mut(&d.tag).expect("completion of a request not issued");
        let status = if d.res < 0 {
            Status::Error((-d.res) as i32)
        } else if (d.res as u64) < is.bytes {
            Status::Short(d.res as u32)
        } else {
            Status::Ok
        };
        is.real = Some(status);
        // The kernel is done with the buffers: back to their units.
        let mut bufs = d.bufs.into_iter();
        if is.bytes > 0 {
            for id in &is.units {
                let u = self.units.get_mut(id).expect("unit of an issued request");
                u.buf = bufs.next();
            }
        }
        let model_pending = is.model_pending && !self.model_done.contains_key(&d.tag);
        if !model_pending {
            self.finish_issued(d.tag);
        }
    }

    /// A store target's request: each unit is one operation at its own place, tagged with
    /// the unit's id (the request completes when all have; see `on_part_done`). The disk
    /// model saw the request whole: merging shapes the timing, not the data path.
    fn issue_parts(&mut self, rq: &Request, kind: IoKind, segments: Segments<'_>, model_pending: bool) {
        let mut units = smallvec::SmallVec::new();
        for seg in segments {
            units.push(seg.id);
        }
        let parts = units.len() as u32;
        self.issued.insert(rq.id, Issued { units: units.clone(), bytes: rq.bytes(), real: None, model_pending, parts });
        for id in units {
            let u = self.units.get_mut(&id).expect("unit of a dispatched request");
            let place = u.place.clone().expect("a store unit without its place");
            let mut bufs = Bufs::new();
            if kind != IoKind::Fsync {
                bufs.push(u.buf.take().expect("unit buffer"));
            }
            self.part_of.insert(id, rq.id);
            self.backend.submit(Issue { tag: id, kind, offset: place.offset, bufs, file: Some(place.file) });
        }
    }

    /// A store target's unit finished its operation: the request is done when all are.
    /// A short read is the end of its file (the unit moved fewer bytes); a short write, or
    /// any error, fails the request.
    fn on_part_done(&mut self, d: Done) {
        let id = self.part_of.remove(&d.tag).expect("completion of a unit not issued");
        let u = self.units.get_mut(&d.tag).expect("unit of an issued request");
        u.buf = d.bufs.into_iter().next();
        let want = u.buf.as_ref().map_or(0, |b| b.as_slice().len()) as i64;
        let status = if d.res < 0 {
            Status::Error((-d.res) as i32)
        } else if d.res < want && u.rq.op == Op::Write {
            Status::Short(d.res as u32)
        } else {
            Status::Ok
        };
        u.moved = Some(d.res.max(0) as u32);
        u.status = Some(status);
        let is = self.issued.get_mut(&id).expect("request of an issued unit");
        is.parts -= 1;
        if is.real.is_none_or(|s| s == Status::Ok) {
            is.real = Some(status);
        }
        if is.parts > 0 {
            return;
        }
        let model_pending = is.model_pending && !self.model_done.contains_key(&id);
        if !model_pending {
            self.finish_issued(id);
        }
    }

    /// Both the real I/O and the model are done: the completion goes to the queue.
    fn finish_issued(&mut self, id: ReqId) {
        let is = self.issued.remove(&id).expect("issued");
        if let Some(at) = self.model_done.remove(&id) {
            let t = self.clock();
            self.stats.emu_late.push(t.saturating_duration_since(at).as_nanos() as u64);
        }
        let status = is.real.expect("real completion");
        self.ready.push_back(Input::Completion { id, status });
    }

    fn poll_model(&mut self, t: Instant) {
        let Some(m) = &mut self.model else { return };
        let mut fin = Vec::new();
        while let Some(c) = m.poll_completion(t) {
            let is = self.issued.get_mut(&c.id).expect("model completed an unknown request");
            is.model_pending = false;
            self.model_done.insert(c.id, c.at);
            if is.real.is_some() {
                fin.push(c.id);
            }
        }
        for id in fin {
            self.finish_issued(id);
        }
    }

    fn deliver(&mut self, id: ReqId, request: ReqId, status: Status) {
        let Some(mut u) = self.units.remove(&id) else { panic!("completion of unknown unit {id} (request {request})") };
        let offset = u.rq.sector * 512;
        // A store unit moved what its operation moved, with its own status; any other, its
        // whole length, with its request's.
        let status = u.status.unwrap_or(status);
        let len = u.moved.unwrap_or(u.rq.len_sectors * 512);
        let mut result: IoResult = match status {
            Status::Ok => Ok(len),
            Status::Error(errno) => Err(IoError::Os { offset, len, errno }),
            Status::Short(done) => Err(IoError::Short { offset, len, done }),
        };
        if result.is_ok() {
            match u.rq.op {
                Op::Read => self.stats.bytes_read += len as u64,
                Op::Write => self.stats.bytes_written += len as u64,
                _ => {}
            }
            if let (Some(v), Some(b)) = (&mut self.verifier, &u.buf) {
                match u.rq.op {
                    Op::Write => v.write_done(offset, b.as_slice()),
                    Op::Read => {
                        if let Err(m) = v.check_read(offset, b.as_slice(), &u.floor) {
                            result = Err(IoError::Verify(m));
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Err(e) = &result {
            *self.stats.errors.entry(e.kind()).or_default() += 1;
            if self.stats.first_error.is_none() {
                self.stats.first_error = Some(format!("{} request: {e}", u.rq.op.name()));
            }
        }
        match u.reply {
            Reply::Loan => match u.buf.take() {
                Some(Buf::Lent(l)) => l.finish(result),
                _ => unreachable!("blocking request without its loan"),
            },
            Reply::Callback(cb) => {
                let buf = match u.buf.take() {
                    Some(Buf::Owned(b)) => Some(b),
                    _ => None,
                };
                cb(Completion { buf, result });
            }
        }
    }

    fn report(
        self,
        scheduler: String,
        effective: String,
        emulate: Option<String>,
        target: PathBuf,
        records: Vec<Record>,
        record: bool,
    ) -> Report {
        let s = self.stats;
        let trace = record.then(|| Trace {
            meta: vec![
                ("sched".into(), effective.clone()),
                ("target".into(), target.display().to_string()),
                ("backend".into(), self.backend.name().into()),
            ],
            records,
            lines: Vec::new(),
        });
        Report {
            scheduler,
            effective_scheduler: effective,
            backend: self.backend.name(),
            emulate: emulate.clone(),
            target,
            requests: s.requests,
            dispatched: s.dispatched,
            merged: s.merged,
            slot_waits: s.slot_waits,
            bytes_read: s.bytes_read,
            bytes_written: s.bytes_written,
            errors: s.errors,
            first_error: s.first_error,
            verify: self.verifier.map(|v| VerifyReport {
                checked: v.checked,
                unverified: v.unverified,
                mismatches: v.mismatches,
            }),
            timer_lateness: Lateness::from_samples(s.timer_late),
            sleep_lateness: Lateness::from_samples(s.sleep_late),
            emulated_lateness: emulate.map(|_| Lateness::from_samples(s.emu_late)),
            trace,
        }
    }
}

impl Env for Dispatcher {
    fn now(&mut self) -> Instant {
        self.now
    }

    fn issue(&mut self, now: Instant, rq: &Request, segments: Segments<'_>) {
        self.stats.dispatched += 1;
        let kind = match rq.op {
            Op::Read => IoKind::Read,
            Op::Write => IoKind::Write,
            Op::Flush => IoKind::Fsync,
            Op::Discard => unreachable!("discard is never submitted"),
        };
        let mut model_pending = false;
        if let Some(m) = &mut self.model {
            m.submit(now, DiskCommand { id: rq.id, op: rq.op, sector: rq.sector, len_sectors: rq.len_sectors });
            model_pending = true;
        }
        if self.store {
            return self.issue_parts(rq, kind, segments, model_pending);
        }
        let mut units = smallvec::SmallVec::new();
        let mut bufs = Bufs::new();
        let mut next = rq.sector;
        for seg in segments {
            units.push(seg.id);
            if kind != IoKind::Fsync {
                debug_assert_eq!(seg.sector, next, "segments of request {} not contiguous", rq.id);
                next = seg.sector + seg.len_sectors as u64;
                let u = self.units.get_mut(&seg.id).expect("unit of a dispatched request");
                bufs.push(u.buf.take().expect("unit buffer"));
            }
        }
        let bytes = rq.bytes();
        let offset = self.data_offset + rq.sector * 512;
        self.issued.insert(rq.id, Issued { units, bytes, real: None, model_pending, parts: 0 });
        if kind != IoKind::Fsync && self.inject_eio == Some(self.stats.dispatched) {
            self.injected.push(Done { tag: rq.id, res: -(libc::EIO as i64), bufs });
            return;
        }
        self.backend.submit(Issue { tag: rq.id, kind, offset, bufs, file: None });
    }

    fn notify(&mut self, _now: Instant, event: &Event) {
        match *event {
            Event::Completed { id, request, status } => self.deliver(id, request, status),
            Event::Merged { .. } | Event::Coalesced { .. } => self.stats.merged += 1,
            Event::Sleep { .. } => self.stats.slot_waits += 1,
            _ => {}
        }
    }

    fn wait(&mut self, deadline: Option<Instant>) -> Wake {
        loop {
            let t = self.clock();
            if let Some(d) = deadline
                && t >= d
            {
                self.now = t;
                self.stats.timer_late.push((t - d).as_nanos() as u64);
                return Wake::Timeout;
            }
            self.poll_model(t);
            if self.after_completion {
                self.after_completion = false;
                self.take_messages_first();
            }
            // Requests the last inputs dispatched go to the device now, and whatever has
            // finished meanwhile is collected (behind the inputs already waiting; client
            // messages wait in the channel, to keep their order).
            if self.backend.pending_submissions() {
                self.collect_done(false, None);
            }
            if let Some(mut input) = self.ready.pop_front() {
                self.now = t;
                self.after_completion = matches!(input, Input::Completion { .. });
                if let Input::Arrival(rq) = &mut input {
                    rq.arrival = t;
                }
                return Wake::Input(input);
            }
            if self.closing && self.units.is_empty() && self.issued.is_empty() {
                return Wake::Stop;
            }
            if self.gather(false, None) {
                continue;
            }
            // Nothing to do: sleep until the queue's deadline or the model's next
            // completion, or until a message or an I/O completion arrives.
            let model_next = self.model.as_ref().and_then(|m| m.poll_timeout());
            let until = match (deadline, model_next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.notify.prepare_sleep();
            // Never sleep longer than MAX_SLEEP: with DEFER_TASKRUN the kernel posts
            // completions only when we enter the ring, and on Linux 6.18 we saw (rarely,
            // with several rings busy in one process) a wait that no completion or
            // eventfd write ended. A periodic re-entry bounds the cost of such a miss.
            let timeout = Some(until.map_or(MAX_SLEEP, |u| u.saturating_duration_since(self.clock()).min(MAX_SLEEP)));
            if timeout != Some(Duration::ZERO) {
                self.gather(true, timeout);
            }
            self.notify.done_sleeping();
            if let Some(d) = deadline {
                let t = self.clock();
                if t >= d && self.ready.is_empty() && until == Some(d) {
                    self.stats.sleep_late.push((t - d).as_nanos() as u64);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver's depth and rotational flag are added unless the user set them.
    #[test]
    fn effective_spec_adds_what_the_driver_knows() {
        let p = |t: &str| SchedSpec::parse(t).unwrap();
        assert_eq!(effective_spec(&p("bfq"), 32, Some(false)).unwrap().text, "bfq:queue_depth=32,rotational=0");
        assert_eq!(effective_spec(&p("bfq"), 1, None).unwrap().text, "bfq:queue_depth=1");
        let user = effective_spec(&p("bfq:rotational=1,queue_depth=4"), 32, Some(false)).unwrap();
        assert_eq!(user.text, "bfq:rotational=1,queue_depth=4");
    }
}
