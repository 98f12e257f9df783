use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::{self, Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, FileId, HostProfile, Outcome, ProgCtx};

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("deadline".into());
    let nreaders: u64 = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(2);
    let profile = iosched_disk::profile::load_profile("ide-2003").unwrap();
    let dev = profile.build_boxed(1);
    let cfg = SimConfig {
        host: HostProfile::linux_2003(256 << 20),
        cpu: CpuProfile::piii_1000(),
        seed: 1,
        vmstat: false,
        time_limit: Some(Instant::from_secs(600)),
        trace: false,
    };
    let mut sim = Sim::new(cfg, dev);
    let size: u64 = 64 << 20;
    let mut files = vec![];
    for i in 0..nreaders {
        let d = sim.fs.mkdir(sim.fs.root(), &format!("d{i}"));
        files.push(sim.fs.create_with_size(d, "f", size));
    }
    let mut tasks = vec![];
    for (i, f) in files.iter().copied().enumerate() {
        let mut off = 0u64;
        let mut opened = false;
        let prog = move |_ctx: &mut ProgCtx, _d: Option<&Outcome>| -> SysOp {
            if !opened {
                opened = true;
                return SysOp::Open { file: f };
            }
            if off >= size {
                return SysOp::Exit;
            }
            let o = off;
            off += 4096;
            SysOp::Read {
                file: f,
                offset: o,
                len: 4096,
            }
        };
        let t = sim.spawn(format!("reader{i}"), Box::new(prog), IoPrio::NONE);
        sim.watch(t);
        tasks.push(t);
    }
    let _ = FileId(0);
    let mut q = SchedSpec::parse(&sched).unwrap().queue().unwrap();
    let wall = std::time::Instant::now();
    host::run(&mut sim, &mut q);
    let el = sim.now.as_secs_f64();
    let mb = (size * nreaders) as f64 / 1048576.0;
    println!(
        "{sched}: {nreaders} readers, {:.1} MiB in {:.2} s = {:.2} MiB/s; read {} MiB; {} requests; wall {:.2}s",
        mb,
        el,
        mb / el,
        sim.stats.bytes_read >> 20,
        sim.stats.requests_completed,
        wall.elapsed().as_secs_f64()
    );
}
