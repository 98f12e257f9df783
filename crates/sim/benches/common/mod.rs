//! The simulator's throughput workload, shared by the `sim_throughput` bench and the
//! `simprof` profiling example (`#[path]`-included there): `tasks` tasks doing `ops`
//! O_DIRECT 4 KiB reads each at random offsets of one 1 GiB file on `ide-2003`, so every
//! system call becomes one block request through the queue, the policy, the disk model and
//! the completion path.

use iosched_core::{Instant, IoPrio, Queue};
use iosched_policies::SchedSpec;
use iosched_sim::host::{Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, HostProfile, Outcome, ProgCtx, Rng};

/// The simulator with the readers spawned, and the queue for `sched`: everything but the
/// run itself.
pub fn random_direct_readers(sched: &str, tasks: u64, ops: u64) -> (Sim, Queue) {
    let profile = iosched_disk::profile::load_profile("ide-2003").unwrap();
    let cfg = SimConfig {
        host: HostProfile::linux_2003(256 << 20),
        cpu: CpuProfile::piii_1000(),
        seed: 1,
        vmstat: false,
        time_limit: Some(Instant::from_secs(1_000_000)),
        max_sim_time: None,
        interrupt: None,
        clock: None,
        trace: false,
        max_bio_sectors: 256,
    };
    let mut sim = Sim::new(cfg, profile.build_boxed(1));
    let d = sim.fs.mkdir(sim.fs.root(), "d");
    let f = sim.fs.create_with_size(d, "f", 1 << 30);
    for i in 0..tasks {
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
    (sim, SchedSpec::parse(sched).unwrap().queue().unwrap())
}
