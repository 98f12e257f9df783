//! Profiling aid: the sim_throughput bench's workload, once, large. `perf record` it.
use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::{self, Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, HostProfile, Outcome, ProgCtx, Rng};

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("deadline".into());
    let ops: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(50_000);
    let profile = iosched_disk::profile::load_profile("ide-2003").unwrap();
    let cfg = SimConfig {
        host: HostProfile::linux_2003(256 << 20),
        cpu: CpuProfile::piii_1000(),
        seed: 1,
        vmstat: false,
        time_limit: Some(Instant::from_secs(1_000_000)),
        trace: false,
        max_bio_sectors: 256,
    };
    let mut sim = Sim::new(cfg, profile.build_boxed(1));
    let d = sim.fs.mkdir(sim.fs.root(), "d");
    let f = sim.fs.create_with_size(d, "f", 1 << 30);
    for i in 0..8 {
        let mut rng = Rng::derive(1, i);
        let mut n = 0;
        let prog = move |_: &mut ProgCtx, _: Option<&Outcome>| -> SysOp {
            if n == ops {
                return SysOp::Exit;
            }
            n += 1;
            SysOp::DirectRead { file: f, offset: rng.below((1 << 30) / 4096) * 4096, len: 4096 }
        };
        let t = sim.spawn(format!("r{i}"), Box::new(prog), IoPrio::NONE);
        sim.watch(t);
    }
    let mut q = SchedSpec::parse(&sched).unwrap().queue().unwrap();
    let w = std::time::Instant::now();
    host::run(&mut sim, &mut q);
    let el = w.elapsed().as_secs_f64();
    let n = sim.stats.requests_completed;
    println!("{n} requests in {el:.3} s = {:.0} requests/s", n as f64 / el);
}
