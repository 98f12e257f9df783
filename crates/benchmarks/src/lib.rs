//! iosched-benchmarks: what a benchmark *is*, once, for both worlds.
//!
//! What it is: each tool's semantics as the original defines them — its layout, its
//! operation streams (tiotest's offsets, the read-many tree plan), its statistics and its
//! report rendering — and the command line's units. The simulated executors
//! (`iosched-workloads`, over `iosched-sim`) and the real ones (`iosched-rt`, threads and
//! O_DIRECT handles) both call into it, so one `--seed` gives the same operations in both
//! worlds and a report is rendered by one piece of code.
//!
//! What it is not: an executor. Nothing here simulates, does I/O, spawns a thread or reads
//! a clock; where the two worlds differ (the page cache in front of the simulated
//! programs, O_DIRECT in the real ones), the executor says so.

pub mod fio;
pub mod hist;
pub mod kernel_tree;
pub mod tiobench;
pub mod units;
