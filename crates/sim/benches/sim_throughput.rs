//! Simulated block requests per second of wall time (issue #3's target: ≥ 1 million,
//! single thread, deadline on `ide-2003`).
//!
//! The workload is the simulator's busiest path per request: 8 tasks doing O_DIRECT 4 KiB
//! reads at random offsets of one 1 GiB file, so every system call becomes one block
//! request through the queue, the policy, the disk model and the completion path. Run with
//! `cargo bench -p iosched-sim --bench sim_throughput`; criterion reports elements/s =
//! requests per second.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::{self, Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, HostProfile, Outcome, ProgCtx, Rng};

const TASKS: u64 = 8;
const OPS: u64 = 5_000;

fn setup(sched: &str) -> (Sim, iosched_core::Queue) {
    let profile = iosched_disk::profile::load_profile("ide-2003").unwrap();
    let cfg = SimConfig {
        host: HostProfile::linux_2003(256 << 20),
        cpu: CpuProfile::piii_1000(),
        seed: 1,
        vmstat: false,
        time_limit: Some(Instant::from_secs(100_000)),
        trace: false,
        max_bio_sectors: 256,
    };
    let mut sim = Sim::new(cfg, profile.build_boxed(1));
    let d = sim.fs.mkdir(sim.fs.root(), "d");
    let f = sim.fs.create_with_size(d, "f", 1 << 30);
    for i in 0..TASKS {
        let mut rng = Rng::derive(1, i);
        let mut n = 0;
        let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
            if n == OPS {
                return SysOp::Exit;
            }
            n += 1;
            SysOp::DirectRead { file: f, offset: rng.below((1 << 30) / 4096) * 4096, len: 4096 }
        };
        let t = sim.spawn(format!("r{i}"), Box::new(prog), IoPrio::NONE);
        sim.watch(t);
    }
    let q = SchedSpec::parse(sched).unwrap().queue().unwrap();
    (sim, q)
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
