//! iosched-core: the sans-IO scheduling core of iosched.
//!
//! What it is: our own time ([`Instant`], jiffy arithmetic in [`Hz`]), the request model
//! ([`Request`]), the policy interface ([`Scheduler`], the analog of the kernel's
//! `elevator_ops`), the block-layer framework that owns mechanism ([`Queue`]: request pool,
//! merging, plugging, dispatch list, device depth), typed tunables named like sysfs, the
//! one driver loop over an [`Env`], and the queue-input trace with replay.
//!
//! What it is not: it contains no policy (see `iosched-policies`), never reads a clock,
//! sleeps, spawns threads, does I/O or uses global randomness. Every input carries `now`;
//! every wish to act later is returned as a deadline (`poll_timeout`).
#![forbid(unsafe_code)]

pub mod config;
pub mod diskstats;
pub mod dispatch;
pub mod driver;
pub mod fastmap;
pub mod queue;
pub mod replay;
pub mod request;
pub mod rng;
pub mod scheduler;
pub mod time;
pub mod trace;
pub mod tunable;

pub use config::{DRIVER_TUNABLES, Dequeue, QUEUE_TUNABLES, QueueConfig, RequestAlloc, Unplug};
pub use diskstats::DiskStats;
pub use dispatch::DispatchList;
pub use driver::{Env, Wake, run};
pub use fastmap::{FastMap, FastSet, IdMap, Slab};
pub use queue::{Admission, Event, Input, Queue, Segment, Segments};
pub use request::{Dir, IoClass, IoPrio, Op, Owner, ReqId, Request, Status};
pub use rng::Rng;
pub use scheduler::{Ctx, Decision, MayQueue, MergeChoice, MergeKind, Scheduler};
pub use time::{Duration, Hz, Instant};
pub use tunable::{Kind, Spec, TunableError};
