//! Profiling aid: the sim_throughput bench's workload, once, large. `perf record` it.
//! `cargo run --release -p iosched-sim --example simprof -- [SCHED] [OPS_PER_TASK]`
#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("deadline".into());
    let ops: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(50_000);
    let (mut sim, mut q) = common::random_direct_readers(&sched, 8, ops);
    let w = std::time::Instant::now();
    iosched_sim::host::run(&mut sim, &mut q);
    let el = w.elapsed().as_secs_f64();
    let n = sim.stats.requests_completed;
    println!("{n} requests in {el:.3} s = {:.0} requests/s", n as f64 / el);
}
