//! Allocation in the steady state (docs/design.md, "Performance"), measured:
//! `allocation_counter` (a counting global allocator, per thread) counts the allocations
//! made while the bench's steady state (`benches/common`: a read arrives, the one in
//! flight completes, the next is dispatched, timers fired when due) runs through the
//! Queue and each policy.
//!
//! What remains is the standard B-tree's node splits and merges as requests enter and
//! leave the sort and merge trees — about one leaf per ten insertions, 0.10–0.24 per
//! request here. A per-request allocation anywhere on the path would add at least 1.

#[path = "../../benches/common/mod.rs"]
mod common;

/// Allocations per request during `steps` steady-state steps of `sched`, with `owners`
/// processes and `queued` requests waiting, after as many steps of warm-up (the queue's
/// and the policy's storage grows to its working size, and owners' structures exist).
fn allocations_per_request(sched: &str, owners: u64, queued: u64, steps: u64) -> f64 {
    let mut st = common::State::new(sched, owners, queued);
    for _ in 0..steps {
        st.step();
    }
    let n = allocation_counter::measure(|| {
        for _ in 0..steps {
            st.step();
        }
    })
    .count_total;
    n as f64 / steps as f64
}

#[test]
fn no_policy_allocates_per_request_in_steady_state() {
    let mut failures = Vec::new();
    for sched in iosched_policies::SCHEDULERS.iter().map(|p| p.name) {
        for (owners, queued) in [(1, 64), (100, 1000)] {
            let per = allocations_per_request(sched, owners, queued, 20_000);
            // noop keeps its requests in a ring buffer only: nothing at all.
            let limit = if sched == "noop" { 0.0 } else { 0.3 };
            if per > limit {
                failures.push(format!(
                    "{sched}, {owners} owners, {queued} queued: {per:.3} allocations per request > {limit}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
