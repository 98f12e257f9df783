//! Cost per request (insert + dispatch + complete, through the Queue framework) for every
//! policy, with 1, 100 and 10,000 owners and 10,000 requests queued (group `per_request`),
//! and with 100 owners and 100 to 100,000 requests queued (group `queue_length`), to show
//! how the cost grows with each.
//!
//! Each iteration is one request's life in steady state (`common/mod.rs`): a new read
//! arrives, the request in flight completes, the next one is dispatched (timers are fired
//! when due, so AS and CFQ idling is part of the measured work). Run with
//! `cargo bench -p iosched-policies`.

mod common;

use common::State;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

fn per_request(c: &mut Criterion) {
    let mut g = c.benchmark_group("per_request");
    g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for sched in iosched_policies::SCHEDULERS.iter().map(|p| p.name) {
        for owners in [1u64, 100, 10_000] {
            let mut st = State::new(sched, owners, 10_000);
            g.bench_with_input(BenchmarkId::new(sched, owners), &owners, |b, _| {
                b.iter(|| {
                    st.step();
                    black_box(st.in_flight)
                })
            });
        }
    }
    g.finish();
}

fn queue_length(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_length");
    g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for sched in iosched_policies::SCHEDULERS.iter().map(|p| p.name) {
        for queued in [100u64, 1_000, 10_000, 100_000] {
            let mut st = State::new(sched, 100, queued);
            g.bench_with_input(BenchmarkId::new(sched, queued), &queued, |b, _| {
                b.iter(|| {
                    st.step();
                    black_box(st.in_flight)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, per_request, queue_length);
criterion_main!(benches);
