//! iosched-policies: the I/O scheduling policies, one module per scheduler, written to be
//! read beside the kernel's `block/*-iosched.c` — the kernel's names for states, reasons
//! and tunables, and its integer (jiffy, fixed-point) arithmetic.
//!
//! What it is: `noop`, `deadline`, `anticipatory` (AS) and `cfq` as in Linux 2.6.20, the
//! original 2003 CFQ as `cfq-v1`, today's `mq-deadline`, `kyber` and `bfq` (without
//! cgroups), and the [`registry`] that parses specification strings such as
//! `as:antic_expire=0,read_expire=250ms` into configured instances.
//!
//! What it is not: policies only *choose*. They implement [`iosched_core::Scheduler`]
//! and rely on the framework in `iosched-core` for the request pool, merging, plugging and
//! the dispatch list. They never read a clock or do I/O.
#![forbid(unsafe_code)]

pub mod common;
pub mod registry;
pub mod scenario;

/// The built-in policies, in the order `iosched schedulers` lists them: each name is a
/// module that declares its [`Policy`] as `POLICY`, and [`SCHEDULERS`] lists those. A new
/// in-tree policy is its file plus its name here.
macro_rules! builtin {
    ($($module:ident),* $(,)?) => {
        $(pub mod $module;)*
        /// Every built-in policy (the registry's list; [`registry::policies`] adds the
        /// ones registered at run time).
        pub const SCHEDULERS: &[Policy] = &[$($module::POLICY),*];
    };
}

builtin!(noop, deadline, anticipatory, cfq, cfq_v1, mq_deadline, kyber, bfq, linus);

pub use anticipatory::Anticipatory;
pub use bfq::Bfq;
pub use cfq::Cfq;
pub use cfq_v1::CfqV1;
pub use deadline::Deadline;
pub use kyber::Kyber;
pub use linus::Linus;
pub use mq_deadline::MqDeadline;
pub use noop::Noop;
pub use registry::{Policy, SchedSpec, WaitBound, new_scheduler, parse_list, policies, register};
