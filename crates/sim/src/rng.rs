//! The workloads' random numbers: the core's SplitMix64 generator.

pub use iosched_core::Rng;
