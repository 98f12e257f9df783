//! Simulated block requests per second of wall time (issue #3's target: ≥ 1 million,
//! single thread, deadline on `ide-2003`).
//!
//! The workload (`common/mod.rs`) is the simulator's busiest path per request: 8 tasks doing
//! O_DIRECT 4 KiB reads at random offsets of one 1 GiB file, so every system call becomes
//! one block request through the queue, the policy, the disk model and the completion path.
//! Run with
//! `cargo bench -p iosched-sim --bench sim_throughput`; criterion reports elements/s =
//! requests per second.

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iosched_sim::host::{self, Sim};

const TASKS: u64 = 8;
const OPS: u64 = 5_000;

fn setup(sched: &str) -> (Sim, iosched_core::Queue) {
    common::random_direct_readers(sched, TASKS, OPS)
}

fn run((mut sim, mut q): (Sim, iosched_core::Queue)) -> u64 {
    host::run(&mut sim, &mut q);
    sim.stats.requests_completed
}

fn bench(c: &mut Criterion) {
    // A few concurrent reads of adjacent blocks merge: count the requests actually run.
    let n = run(setup("deadline"));
    assert!(n > TASKS * OPS * 99 / 100, "{n} requests");
    let mut g = c.benchmark_group("sim");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    for s in ["deadline", "as", "cfq"] {
        // Only the simulation is timed: building the disk model and laying out the file
        // happen in the untimed setup.
        g.bench_function(format!("direct-4k-random/{s}"), |b| {
            b.iter_batched(|| setup(s), run, criterion::BatchSize::LargeInput)
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
