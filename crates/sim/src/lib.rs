//! iosched-sim: a deterministic discrete-event simulator of a 2003-era Linux host and
//! its disk, detailed enough that the classic scheduler results come out of its
//! mechanisms rather than being put in.
//!
//! What it is: tasks making system calls ([`host::SysOp`]) on one or more simulated CPUs;
//! the page cache with LRU reclaim, 2.6 read-ahead, dirty accounting, background and
//! periodic writeback and dirty throttling; an ext2-like block allocator, with ext3's
//! journal (kjournald, data=ordered) on top when mounted so; and the
//! glue ([`host::Sim`], an implementation of the core's `Env`) that drives a
//! [`iosched_core::Queue`] with any policy in front of any `iosched_disk::Device`.
//!
//! What it is not: not a kernel. It models the mechanisms the scheduler comparisons
//! depend on (request-slot exhaustion, read-ahead window growth, dirty throttling and
//! writeback, metadata reads for small files, CPU cost) and nothing else. A run is a pure
//! function of its inputs and seed: same inputs, same bytes out.
#![forbid(unsafe_code)]

pub mod cache;
pub mod engine;
pub mod fs;
pub mod host;
pub mod profile;
pub mod readahead;
pub mod rng;

pub use fs::{DirId, FileId, Fs};
pub use host::{Ended, Outcome, ProgCtx, Program, Sim, SimConfig, SysCall, SysOp, TaskId, VmstatLine};
pub use profile::{CpuProfile, DataMode, Ext3, FsKind, HostProfile, JournalAt, Lru, Readahead, Reclaim};
pub use rng::Rng;
