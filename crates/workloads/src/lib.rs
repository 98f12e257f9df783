//! iosched-workloads: the benchmarks of the classic reports, run in the simulator.
//!
//! What it is: tiobench (tiotest 0.3.3 semantics), the read-many-files experiment, the
//! `repro` job that sets our results next to the seed reports, and the machinery they
//! share ([`machine::Machine`]). Each workload builds tasks for `iosched-sim` and computes
//! its numbers exactly as the original tool does.
//!
//! What it is not: no formatting beyond each tool's own output layout (the CLI prints);
//! no real I/O (that is `iosched-rt`).

pub mod aio_stress;
pub mod compare;
pub mod iozone;
pub mod machine;
pub mod oplog;
pub mod readmany;
pub mod repro;
pub mod stats;
pub mod sysbench;
pub mod tiobench;
