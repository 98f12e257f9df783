//! iosched-workloads: the benchmarks of the classic reports, run in the simulator.
//!
//! What it is: the simulated executors of tiobench (tiotest 0.3.3 semantics), the
//! read-many-files experiment, sysbench fileio, iozone and aio-stress — each a set of
//! programs for `iosched-sim` that computes its numbers exactly as the original tool does,
//! run through one skeleton ([`machine::Machine::run`]) on a [`machine::Machine`]; the
//! `repro` job that sets our results next to the seed reports; and the A/B studies
//! ([`compare`], over the [`compare::Benchmark`] each tool implements, with [`stats`]).
//! What a tool *is* — its layout, operation streams and report — lives in
//! `iosched-benchmarks` when the real runtime runs it too.
//!
//! What it is not: no formatting beyond each tool's own output layout (the CLI prints);
//! no real I/O (that is `iosched-rt`).

pub mod aio_stress;
pub mod compare;
pub mod error;
pub mod fio;
pub mod iozone;
pub mod machine;
pub mod oplog;
pub mod readmany;
pub mod repro;
pub mod stats;
pub mod sysbench;
pub mod tiobench;
