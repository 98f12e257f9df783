//! Everything in `iosched-rt` that needs `unsafe`, in one place.
//!
//! Why `unsafe` is needed at all: O_DIRECT wants buffers aligned to the device's logical
//! block (we use [`ALIGN`] = 4096 bytes), which `Vec<u8>` does not promise; io_uring and
//! `preadv` take raw pointers that the kernel writes into *after* the call that handed
//! them over returned; and a few system calls (`fallocate`, `fstatvfs`, the block-device
//! size ioctl, `getrusage`, `eventfd`, the timer-slack `prctl`) have no safe std wrapper.
//!
//! The invariants that make the rest of the crate safe:
//!
//! - [`IoBuf`] owns an aligned allocation; it is the only way memory reaches the kernel.
//! - A buffer the kernel may touch is always *inside a backend* ([`Uring`] or [`Pool`]):
//!   [`Issue`] moves the buffers in, [`Done`] gives them back after the kernel finished.
//!   Both backends, when dropped (also while unwinding from a panic), first wait for every
//!   operation in flight, so no buffer is freed or returned while the kernel holds it.
//! - A blocking caller lends its buffer with [`lend`]: the [`Loan`] carries a pointer to
//!   the caller's `&mut IoBuf`, and `lend` does not return — even if the closure that sends
//!   the loan panics — until the loan has been dropped, which only happens after the
//!   backend gave it back. So the exclusive borrow outlives every use of the pointer.
#![allow(unsafe_code)]

use crate::error::{IoError, IoResult};
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering, fence};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

/// Alignment of every buffer, offset and length that goes to the target (bytes).
pub const ALIGN: usize = 4096;

// --------------------------------------------------------------------------------------
// Aligned buffers

/// A zero-initialised buffer aligned to [`ALIGN`], usable for O_DIRECT I/O.
pub struct IoBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: IoBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for IoBuf {}
// SAFETY: shared references only read, like &[u8].
unsafe impl Sync for IoBuf {}

impl IoBuf {
    /// A zeroed buffer of `len` bytes (the allocation is rounded up to [`ALIGN`]).
    pub fn new(len: usize) -> IoBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (at least ALIGN).
        let p = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        IoBuf { ptr, len }
    }
    fn layout(len: usize) -> Layout {
        let cap = len.div_ceil(ALIGN).max(1) * ALIGN;
        Layout::from_size_align(cap, ALIGN).expect("buffer too large")
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for IoBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl std::ops::Deref for IoBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `len` initialised (zeroed) bytes owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl std::ops::DerefMut for IoBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for IoBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IoBuf({} bytes)", self.len)
    }
}

// --------------------------------------------------------------------------------------
// Lending a caller's buffer for the duration of a blocking call

struct LoanSlot {
    result: Mutex<Option<IoResult>>,
    cv: Condvar,
}

/// A caller's buffer lent to the runtime for one blocking call (see the module doc).
pub(crate) struct Loan {
    ptr: *mut u8,
    len: usize,
    slot: Arc<LoanSlot>,
    result: Option<IoResult>,
}

// SAFETY: the pointer is used by exactly one thread at a time (the dispatcher or the
// kernel), while the lender is blocked in `lend`.
unsafe impl Send for Loan {}

impl Loan {
    /// Give the loan back with the call's result.
    pub(crate) fn finish(mut self, r: IoResult) {
        self.result = Some(r);
    }
}

impl Drop for Loan {
    fn drop(&mut self) {
        let r = self.result.take().unwrap_or(Err(IoError::Stopped));
        let mut g = self.slot.result.lock().unwrap_or_else(|e| e.into_inner());
        *g = Some(r);
        self.slot.cv.notify_one();
    }
}

/// Lend `buf` to `send` (which hands the loan to the dispatcher) and block until the loan
/// is given back; returns its result.
pub(crate) fn lend(buf: &mut IoBuf, send: impl FnOnce(Loan)) -> IoResult {
    let slot = Arc::new(LoanSlot { result: Mutex::new(None), cv: Condvar::new() });
    let loan = Loan { ptr: buf.ptr.as_ptr(), len: buf.len, slot: Arc::clone(&slot), result: None };
    // Even if `send` panics after storing the loan somewhere, wait for it to come back
    // before the borrow of `buf` ends.
    let sent = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| send(loan)));
    let mut g = slot.result.lock().unwrap_or_else(|e| e.into_inner());
    while g.is_none() {
        g = slot.cv.wait(g).unwrap_or_else(|e| e.into_inner());
    }
    let r = g.take().expect("loan result");
    drop(g);
    if let Err(p) = sent {
        std::panic::resume_unwind(p);
    }
    r
}

/// A buffer on its way to the kernel: owned (callback API) or lent (blocking API).
pub(crate) enum Buf {
    Owned(IoBuf),
    Lent(Loan),
}

impl Buf {
    fn raw(&self) -> (*mut u8, usize) {
        match self {
            Buf::Owned(b) => (b.ptr.as_ptr(), b.len),
            Buf::Lent(l) => (l.ptr, l.len),
        }
    }
    pub(crate) fn as_slice(&self) -> &[u8] {
        let (p, n) = self.raw();
        // SAFETY: an owned buffer is ours; a lent one is exclusively ours while the lender
        // is blocked in `lend`, and a `Buf` outside a backend is not in the kernel's hands.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        let (p, n) = self.raw();
        // SAFETY: as in `as_slice`; `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(p, n) }
    }
}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Buf::Owned(b) => write!(f, "Owned({} bytes)", b.len),
            Buf::Lent(l) => write!(f, "Lent({} bytes)", l.len),
        }
    }
}

// --------------------------------------------------------------------------------------
// Operations for the backends

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum IoKind {
    Read,
    Write,
    Fsync,
}

/// The buffers of one operation. Nearly every request has one segment, so one is held
/// inline: no allocation for them per request (malloc and free were about 8 % of the
/// runtime's CPU in profiles, mostly for these).
pub(crate) type Bufs = smallvec::SmallVec<[Buf; 1]>;

/// The iovec array of an operation's buffers (pointing into their heap memory).
fn iovecs(bufs: &Bufs) -> Vec<libc::iovec> {
    bufs.iter()
        .map(|b| {
            let (p, n) = b.raw();
            libc::iovec { iov_base: p.cast(), iov_len: n }
        })
        .collect()
}

/// One operation handed to a backend: the buffers are contiguous in the file from
/// `offset` on, in order. The file is the target's own unless `file` names another (a
/// store target's units each name the file their data lives in); the backend holds that
/// `Arc` until the operation is done, so the descriptor stays open while the kernel uses it.
#[derive(Debug)]
pub(crate) struct Issue {
    pub tag: u64,
    pub kind: IoKind,
    pub offset: u64,
    pub bufs: Bufs,
    pub file: Option<Arc<File>>,
}

/// A finished operation: `res` is the byte count or a negative errno.
#[derive(Debug)]
pub(crate) struct Done {
    pub tag: u64,
    pub res: i64,
    pub bufs: Bufs,
}

/// Wakes the dispatcher when a client sends a message or a pool worker finishes.
pub(crate) struct Notify {
    sleeping: AtomicBool,
    efd: Option<OwnedFd>,
    flag: Mutex<bool>,
    cv: Condvar,
}

impl std::fmt::Debug for Notify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notify").field("eventfd", &self.efd.is_some()).finish()
    }
}

impl Notify {
    /// With an eventfd (for the io_uring backend) or a condition variable (thread pool).
    pub(crate) fn new(eventfd: bool) -> io::Result<Notify> {
        let efd = if eventfd {
            // SAFETY: plain system call; the result is checked.
            let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` is a fresh descriptor we own.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        } else {
            None
        };
        Ok(Notify { sleeping: AtomicBool::new(false), efd, flag: Mutex::new(false), cv: Condvar::new() })
    }

    /// Called by a producer after making its message visible.
    pub(crate) fn wake(&self) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) && self.sleeping.swap(false, Ordering::SeqCst) {
            self.ring();
        }
    }

    fn ring(&self) {
        if let Some(fd) = &self.efd {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a valid u64 to an eventfd we own. A full counter
            // (EAGAIN) means a wake-up is pending anyway.
            unsafe { libc::write(fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
        } else {
            let mut g = self.flag.lock().unwrap_or_else(|e| e.into_inner());
            *g = true;
            self.cv.notify_one();
        }
    }

    /// The dispatcher is about to check its sources and then sleep.
    pub(crate) fn prepare_sleep(&self) {
        self.sleeping.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
    }
    pub(crate) fn done_sleeping(&self) {
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Condition-variable sleep (thread-pool backend): until rung or `timeout`.
    fn sleep_cv(&self, timeout: Option<Duration>) {
        let mut g = self.flag.lock().unwrap_or_else(|e| e.into_inner());
        let start = std::time::Instant::now();
        while !*g {
            match timeout {
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let el = start.elapsed();
                    if el >= t {
                        break;
                    }
                    g = self.cv.wait_timeout(g, t - el).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        *g = false;
    }
}

/// What the dispatcher needs from an I/O engine.
pub(crate) trait Backend: Send {
    fn name(&self) -> &'static str;
    /// Queue an operation (it reaches the kernel at the next `wait` at the latest).
    fn submit(&mut self, io: Issue);
    /// Submit what is queued; then, if `block`, sleep until a completion, a
    /// [`Notify::wake`] or `timeout`; move finished operations to `out`.
    fn wait(&mut self, block: bool, timeout: Option<Duration>, out: &mut Vec<Done>) -> io::Result<()>;
    /// Whether finished operations are waiting to be collected without sleeping.
    fn has_done(&self) -> bool;
    /// Whether operations given to [`Backend::submit`] still wait to be handed to the
    /// kernel (the next [`Backend::wait`] hands them over).
    fn pending_submissions(&mut self) -> bool;
}

// --------------------------------------------------------------------------------------
// io_uring

const EFD_TAG: u64 = u64::MAX;
/// How long a wait for several completions holds on after the first one arrived.
const MIN_WAIT_US: u32 = 50;
/// `IORING_ENTER_GETEVENTS`.
const IORING_ENTER_GETEVENTS: u32 = 1;

struct InFlight {
    bufs: Bufs,
    /// The iovec array of a vectored operation (stable heap storage while in flight).
    _iov: Vec<libc::iovec>,
    /// The operation's own file, if not the registered target: open while in flight.
    _file: Option<Arc<File>>,
}

// SAFETY: the iovecs point into the memory of the buffers in `bufs` (heap memory, which
// stays put when `bufs` itself moves, inline or not), and the buffers are Send; the array
// is only read by the kernel while in flight.
unsafe impl Send for InFlight {}

/// The io_uring backend.
pub(crate) struct Uring {
    ring: io_uring::IoUring,
    /// The target (registered with the ring as fixed file 0), if it has one; kept open
    /// while we live.
    _file: Option<Arc<File>>,
    notify: Arc<Notify>,
    inflight: iosched_core::FastMap<u64, InFlight>,
    efd_buf: Box<u64>,
    efd_armed: bool,
    /// Operations the kernel refused at submission, completed with their error.
    failed: Vec<Done>,
    /// The kernel supports batched waits (`IORING_FEAT_MIN_TIMEOUT`, Linux 6.12).
    min_wait: bool,
}

impl std::fmt::Debug for Uring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uring").field("inflight", &self.inflight.len()).finish()
    }
}

impl Uring {
    /// Set up a ring for `file` (none: every operation names its own); fails if io_uring
    /// is unavailable or lacks what we need.
    pub(crate) fn new(file: Option<Arc<File>>, notify: Arc<Notify>, entries: u32) -> io::Result<Uring> {
        if notify.efd.is_none() {
            return Err(io::Error::other("io_uring backend needs an eventfd notifier"));
        }
        // As fio does: completions are processed only when we ask (no IPIs, no task work
        // interrupting the dispatcher); the ring belongs to the calling thread. Older
        // kernels without these flags get a plain ring.
        let ring = io_uring::IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .build(entries)
            .or_else(|_| io_uring::IoUring::builder().build(entries))?;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::other("io_uring lacks IORING_FEAT_EXT_ARG (timed waits; Linux 5.11+)"));
        }
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        use io_uring::opcode::*;
        for (code, name) in [
            (Read::CODE, "READ"),
            (Write::CODE, "WRITE"),
            (Readv::CODE, "READV"),
            (Writev::CODE, "WRITEV"),
            (Fsync::CODE, "FSYNC"),
        ] {
            if !probe.is_supported(code) {
                return Err(io::Error::other(format!("io_uring does not support IORING_OP_{name}")));
            }
        }
        if let Some(f) = &file {
            ring.submitter().register_files(&[f.as_raw_fd()])?;
        }
        Ok(Uring {
            ring,
            _file: file,
            notify,
            inflight: Default::default(),
            efd_buf: Box::new(0),
            efd_armed: false,
            failed: Vec::new(),
            min_wait: false,
        })
        .map(|mut u| {
            u.min_wait = u.ring.params().is_feature_min_timeout();
            u
        })
    }

    fn push(&mut self, e: io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every pointer in `e` refers to memory kept alive in `self.inflight`
            // (or `self.efd_buf`) until its completion is reaped.
            if unsafe { self.ring.submission().push(&e) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    /// One `io_uring_enter` that submits everything queued and, with `GETEVENTS` and no
    /// minimum, posts what has finished without sleeping (with DEFER_TASKRUN, finished
    /// I/O is only posted by such an enter).
    fn submit_and_collect(&mut self) -> io::Result<usize> {
        let sq = self.ring.submission().len() as u32;
        // SAFETY: no argument pointer is passed.
        unsafe { self.ring.submitter().enter::<libc::sigset_t>(sq, 0, IORING_ENTER_GETEVENTS, None) }
    }

    fn reap(&mut self, out: &mut Vec<Done>) {
        for cqe in self.ring.completion() {
            let tag = cqe.user_data();
            if tag == EFD_TAG {
                self.efd_armed = false;
                continue;
            }
            let f = self.inflight.remove(&tag).expect("completion for an operation not in flight");
            out.push(Done { tag, res: cqe.result() as i64, bufs: f.bufs });
        }
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn submit(&mut self, io: Issue) {
        use io_uring::{opcode, types};
        let mut iov: Vec<libc::iovec> = Vec::new();
        // One entry for either kind of descriptor (their types differ).
        macro_rules! entry {
            ($fd:expr) => {{
                let fd = $fd;
                match (io.kind, io.bufs.len()) {
                    (IoKind::Fsync, _) => opcode::Fsync::new(fd).build(),
                    (IoKind::Read, 1) => {
                        let (p, n) = io.bufs[0].raw();
                        opcode::Read::new(fd, p, n as u32).offset(io.offset).build()
                    }
                    (IoKind::Write, 1) => {
                        let (p, n) = io.bufs[0].raw();
                        opcode::Write::new(fd, p, n as u32).offset(io.offset).build()
                    }
                    (kind, _) => {
                        iov = iovecs(&io.bufs);
                        if kind == IoKind::Read {
                            opcode::Readv::new(fd, iov.as_ptr(), iov.len() as u32).offset(io.offset).build()
                        } else {
                            opcode::Writev::new(fd, iov.as_ptr(), iov.len() as u32).offset(io.offset).build()
                        }
                    }
                }
            }};
        }
        let e = match &io.file {
            // The target is registered with the ring (index 0): no file lookup per request.
            None => entry!(types::Fixed(0)),
            Some(f) => entry!(types::Fd(f.as_raw_fd())),
        }
        .user_data(io.tag);
        let prev = self.inflight.insert(io.tag, InFlight { bufs: io.bufs, _iov: iov, _file: io.file });
        assert!(prev.is_none(), "tag {} issued twice", io.tag);
        if let Err(err) = self.push(e) {
            // The kernel refused the submission itself: complete it with the error.
            let f = self.inflight.remove(&io.tag).expect("just inserted");
            panic_free_fail(err, io.tag, f.bufs, &mut self.failed);
        }
    }

    fn wait(&mut self, block: bool, timeout: Option<Duration>, out: &mut Vec<Done>) -> io::Result<()> {
        out.append(&mut self.failed);
        let r = if block && out.is_empty() {
            // First submit and collect what already finished without sleeping (with
            // DEFER_TASKRUN, finished I/O is only posted by an enter with GETEVENTS).
            let r = self.submit_and_collect();
            if let Err(e) = r
                && !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::EBUSY))
            {
                return Err(e);
            }
            self.reap(out);
            if !out.is_empty() {
                return Ok(());
            }
            // Sleeping: a read must be posted on the eventfd so that a client's wake-up
            // ends the wait (the collection above may just have consumed the last one).
            // A wake-up rung before this read is posted is not lost: the counter stays
            // non-zero and the read completes at once.
            if !self.efd_armed {
                let fd = self.notify.efd.as_ref().expect("eventfd").as_raw_fd();
                let p: *mut u64 = &mut *self.efd_buf;
                let e = io_uring::opcode::Read::new(io_uring::types::Fd(fd), p.cast(), 8).build().user_data(EFD_TAG);
                self.push(e)?;
                self.efd_armed = true;
            }
            // Nothing yet. With many requests in flight, wait for a few completions (but
            // at most MIN_WAIT_US after the first): bigger batches mean fewer wake-ups.
            // The deadline still bounds the wait.
            let want = if self.min_wait { (self.inflight.len() / 4).clamp(1, 8) } else { 1 };
            let ts = timeout.map(|t| io_uring::types::Timespec::new().sec(t.as_secs()).nsec(t.subsec_nanos()));
            let mut args = io_uring::types::SubmitArgs::new();
            if want > 1 {
                args = args.min_wait_usec(MIN_WAIT_US);
            }
            match &ts {
                None if want == 1 => self.ring.submit_and_wait(1),
                None => self.ring.submitter().submit_with_args(want, &args),
                Some(ts) => {
                    let args = args.timespec(ts);
                    self.ring.submitter().submit_with_args(want, &args)
                }
            }
        } else if !self.ring.submission().is_empty() {
            // Hand new requests to the kernel at once, one system call per dispatch round
            // (fio's submit-per-request): a request held back for a batch leaves a device
            // slot idle, and on this machine's virtio disk that cost more (~8 % of fio's
            // IOPS) than the system calls saved. GETEVENTS also posts the completions the
            // deferred task work holds, so they are collected on the way.
            self.submit_and_collect()
        } else {
            Ok(0)
        };
        match r {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        self.reap(out);
        Ok(())
    }

    fn has_done(&self) -> bool {
        !self.failed.is_empty()
    }

    fn pending_submissions(&mut self) -> bool {
        !self.ring.submission().is_empty()
    }
}

/// Turn a submission failure into a completion with the error (never a panic).
fn panic_free_fail(err: io::Error, tag: u64, bufs: Bufs, failed: &mut Vec<Done>) {
    let errno = err.raw_os_error().unwrap_or(libc::EIO);
    failed.push(Done { tag, res: -(errno as i64), bufs });
}

impl Drop for Uring {
    fn drop(&mut self) {
        // Complete the eventfd read ourselves, then wait for everything in flight: no
        // buffer may be freed (or a loan returned) while the kernel still holds it.
        if self.efd_armed {
            self.notify.ring();
        }
        let mut sink = Vec::new();
        while !self.inflight.is_empty() || self.efd_armed {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(_) => {
                    // The ring is unusable: we cannot know when the kernel lets go of the
                    // buffers, so leak them rather than free memory under its feet.
                    std::mem::forget(std::mem::take(&mut self.inflight));
                    std::mem::forget(std::mem::replace(&mut self.efd_buf, Box::new(0)));
                    return;
                }
            }
            self.reap(&mut sink);
        }
        // Release the registered target now: ring teardown is asynchronous in the kernel,
        // and a block device opened with O_EXCL must be reopenable as soon as we return.
        if self._file.is_some() {
            let _ = self.ring.submitter().unregister_files();
        }
    }
}

// --------------------------------------------------------------------------------------
// The blocking fallback: a small thread pool doing preadv / pwritev / fsync

/// The thread-pool backend (used when io_uring is unavailable).
pub(crate) struct Pool {
    tx: Option<mpsc::Sender<Issue>>,
    workers: Vec<JoinHandle<()>>,
    done: Arc<Mutex<Vec<Done>>>,
    notify: Arc<Notify>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("workers", &self.workers.len()).finish()
    }
}

impl Pool {
    /// Workers for `file` (none: every operation names its own).
    pub(crate) fn new(file: Option<Arc<File>>, notify: Arc<Notify>, threads: usize) -> io::Result<Pool> {
        let (tx, rx) = mpsc::channel::<Issue>();
        let rx = Arc::new(Mutex::new(rx));
        let done = Arc::new(Mutex::new(Vec::new()));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let rx = Arc::clone(&rx);
            let done = Arc::clone(&done);
            let notify = Arc::clone(&notify);
            let file = file.clone();
            workers.push(std::thread::Builder::new().name(format!("iosched-io{i}")).spawn(move || {
                loop {
                    let job = {
                        let g = rx.lock().unwrap_or_else(|e| e.into_inner());
                        g.recv()
                    };
                    let Ok(mut io) = job else { return };
                    let fd = match (&io.file, &file) {
                        (Some(f), _) | (None, Some(f)) => f.as_raw_fd(),
                        (None, None) => unreachable!("an operation without a file on a store target"),
                    };
                    let res = blocking_io(fd, &mut io);
                    done.lock().unwrap_or_else(|e| e.into_inner()).push(Done { tag: io.tag, res, bufs: io.bufs });
                    notify.wake();
                }
            })?);
        }
        Ok(Pool { tx: Some(tx), workers, done, notify })
    }
}

/// One blocking operation; returns bytes or a negative errno.
fn blocking_io(fd: RawFd, io: &mut Issue) -> i64 {
    let iov = iovecs(&io.bufs);
    loop {
        // SAFETY: the iovecs point into buffers this job owns (or that are lent to it)
        // for the duration of the call.
        let r = unsafe {
            match io.kind {
                IoKind::Read => libc::preadv(fd, iov.as_ptr(), iov.len() as i32, io.offset as i64),
                IoKind::Write => libc::pwritev(fd, iov.as_ptr(), iov.len() as i32, io.offset as i64),
                IoKind::Fsync => libc::fsync(fd) as isize,
            }
        };
        if r >= 0 {
            return r as i64;
        }
        let e = io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return -(e as i64);
        }
    }
}

impl Backend for Pool {
    fn name(&self) -> &'static str {
        "threads"
    }
    fn submit(&mut self, io: Issue) {
        if let Some(tx) = &self.tx
            && let Err(mpsc::SendError(io)) = tx.send(io)
        {
            // Workers gone (cannot happen while `self` lives); fail the operation.
            self.done.lock().unwrap_or_else(|e| e.into_inner()).push(Done {
                tag: io.tag,
                res: -(libc::EIO as i64),
                bufs: io.bufs,
            });
        }
    }
    fn wait(&mut self, block: bool, timeout: Option<Duration>, out: &mut Vec<Done>) -> io::Result<()> {
        if block && !self.has_done() {
            self.notify.sleep_cv(timeout);
        }
        out.append(&mut self.done.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(())
    }
    fn has_done(&self) -> bool {
        !self.done.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    fn pending_submissions(&mut self) -> bool {
        // Workers take each operation as it is submitted.
        false
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Close the job channel and join: every started operation finishes first.
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

// --------------------------------------------------------------------------------------
// Small system calls

/// `fallocate(fd, 0, offset, len)`: reserve space (ENOSPC shows here, not mid-run).
pub(crate) fn fallocate(file: &File, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor we own.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset as i64, len as i64) };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Bytes an unprivileged user may still allocate on the filesystem holding `file`, and the
/// filesystem's size (`fstatvfs`: `f_bavail * f_frsize`, `f_blocks * f_frsize`).
pub fn fs_space(file: &File) -> io::Result<(u64, u64)> {
    // SAFETY: fstatvfs fills the zeroed struct we pass; we read it only on success.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatvfs(file.as_raw_fd(), &mut st) };
    if r == 0 {
        let f = st.f_frsize as u64;
        Ok(((st.f_bavail as u64).saturating_mul(f), (st.f_blocks as u64).saturating_mul(f)))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Bytes of `[off, off + len)` of `file` that no block backs yet — holes, and whatever lies
/// past the end of the file — found with `lseek(SEEK_DATA/SEEK_HOLE)`. Where the
/// filesystem cannot tell (EINVAL), everything before the end of the file counts as backed.
pub(crate) fn unbacked(file: &File, off: u64, len: u64) -> io::Result<u64> {
    let fd = file.as_raw_fd();
    let end = off.saturating_add(len);
    let file_len = file.metadata()?.len();
    let mut pos = off;
    let mut holes = 0;
    while pos < end {
        // SAFETY: lseek on a descriptor we own; the file position it moves is never used
        // (every transfer is positioned).
        let data = unsafe { libc::lseek(fd, pos as i64, libc::SEEK_DATA) };
        if data < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                // No data at or after `pos`: the rest is a hole or past the end.
                Some(libc::ENXIO) => Ok(holes + (end - pos)),
                Some(libc::EINVAL) => Ok(holes + end.saturating_sub(file_len.max(pos))),
                _ => Err(e),
            };
        }
        let data = (data as u64).min(end);
        holes += data - pos;
        if data >= end {
            break;
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, data as i64, libc::SEEK_HOLE) };
        if hole < 0 {
            return Err(io::Error::last_os_error());
        }
        pos = (hole as u64).max(data + 1);
    }
    Ok(holes)
}

/// Size of a block device in bytes (`BLKGETSIZE64`).
pub(crate) fn blkdev_size(file: &File) -> io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 to the pointer.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if r == 0 { Ok(size) } else { Err(io::Error::last_os_error()) }
}

/// Logical block size of a block device (`BLKSSZGET`).
pub(crate) fn blkdev_logical_block(file: &File) -> io::Result<u32> {
    let mut sz: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int to the pointer.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKSSZGET, &mut sz as *mut libc::c_int) };
    if r == 0 { Ok(sz as u32) } else { Err(io::Error::last_os_error()) }
}

// _IOR(0x12, 114, size_t) and _IO(0x12, 104).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;

/// Process CPU time (user + system) so far.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage fills the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Raise this process's soft limit of open files to its hard limit and return the new
/// limit: a server that holds descriptors for its clients' open files (`iosched mount`,
/// two per open file) would otherwise meet the usual soft limit of 1024.
pub fn raise_fd_limit() -> io::Result<u64> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit read and fill the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &r) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(r.rlim_cur)
}

/// Let a closed output pipe end the process quietly, as it ends C tools (`iosched … | head`).
/// Rust programs start with SIGPIPE ignored, which turns every later write to the pipe
/// into an error or, from `println!`, a panic.
pub fn default_sigpipe() {
    // SAFETY: installs the default disposition; no handler code runs in our process.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Ask for 1 µs timer slack on the calling thread (default 50 µs): the scheduler's idle
/// windows are a few milliseconds and we measure how late we wake.
pub(crate) fn tight_timer_slack() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iobuf_is_aligned_and_zeroed() {
        for len in [1, 512, 4096, 4097, 1 << 20] {
            let b = IoBuf::new(len);
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn lend_returns_the_result_and_survives_a_dropped_loan() {
        let mut b = IoBuf::new(4096);
        let r = lend(&mut b, |loan| loan.finish(Ok(7)));
        assert_eq!(r, Ok(7));
        let r = lend(&mut b, drop);
        assert_eq!(r, Err(IoError::Stopped));
        // From another thread.
        let r = lend(&mut b, |mut loan| {
            std::thread::spawn(move || {
                let mut buf = Buf::Lent(loan);
                buf.as_mut_slice()[0] = 9;
                let Buf::Lent(l) = buf else { unreachable!() };
                loan = l;
                loan.finish(Ok(1));
            });
        });
        assert_eq!(r, Ok(1));
        assert_eq!(b[0], 9);
    }
}
