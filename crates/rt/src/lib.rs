//! iosched-rt: the real runtime — the same [`iosched_core::Queue`] and policies that the
//! simulator drives, in front of real files and block devices.
//!
//! What it is: a second implementation of the core's [`iosched_core::Env`]. A dispatcher
//! thread per target owns the target's queue and runs the core's one driver loop with a
//! real clock; client threads submit reads, writes and flushes through [`Handle`]s (each
//! handle is one owner, so AS and CFQ keep per-process statistics); dispatched requests go
//! to the target with O_DIRECT through io_uring, or through a small thread pool doing
//! `preadv`/`pwritev` when io_uring is unavailable. On top: emulated rotating-disk timing
//! ([`emulate`]), per-block data verification ([`verify`]), queue-input recording for
//! replay, safety rules for targets ([`target`]) and the real-I/O workloads
//! ([`workload`]: tiobench, readmany, fio job files and a fio-like load of a few flags).
//!
//! What it is not: a scheduler (the policies live in `iosched-policies`) or a page cache;
//! it never buffers data — every request reaches the target with O_DIRECT.
//!
//! ```no_run
//! use iosched_rt::{IoBuf, Options, Target};
//! use iosched_policies::SchedSpec;
//!
//! let mut opts = Options::new(SchedSpec::parse("as").unwrap());
//! opts.size = Some(64 << 20); // create a 64 MiB target if it does not exist
//! let target = Target::open("/tmp/iosched-demo.img", opts).unwrap();
//! let h = target.handle();
//! let mut buf = IoBuf::new(4096);
//! buf[..5].copy_from_slice(b"hello");
//! h.write(0, &mut buf).unwrap();
//! h.read(0, &mut buf).unwrap();
//! drop(h);
//! let report = target.close().unwrap();
//! println!("{} requests, timer lateness p99 {} us", report.requests, report.timer_lateness.p99_us);
//! ```
//!
//! All `unsafe` code is in the private `sys` module, with the invariants that make the
//! rest safe written at its top.

pub mod emulate;
pub mod error;
mod runtime;
mod sys;
pub mod target;
pub mod verify;
pub mod workload;

pub use error::{Error, IoError, IoResult, Mismatch};
pub use runtime::{
    BackendChoice, Completion, DEFAULT_REAL_DEPTH, Handle, Lateness, Notices, Options, Place, Report, Target,
    TargetInfo, VerifyReport,
};
pub use sys::{ALIGN, IoBuf, default_sigpipe, fs_space, process_cpu_time, raise_fd_limit};
