//! Parallel sequential readers on the ide-2003 disk: a quick look at a scheduler's
//! dispatch stream. `cargo run --release -p iosched-sim --example two_readers -- as 32`
//! Environment: `SIZE_MB` per file (64), `DISK` profile (ide-2003), `MAXS` largest bio in
//! sectors (256), `DUMP=path` writes the dispatch stream (sector, length, time, owner).
use iosched_core::{Instant, IoPrio};
use iosched_policies::SchedSpec;
use iosched_sim::host::{self, Sim, SimConfig, SysOp};
use iosched_sim::{CpuProfile, HostProfile, Outcome, ProgCtx};

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("deadline".into());
    let nreaders: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(2);
    let size: u64 = std::env::var("SIZE_MB").map(|s| s.parse::<u64>().unwrap()).unwrap_or(64) << 20;
    let profile = iosched_disk::profile::load_profile(&std::env::var("DISK").unwrap_or("ide-2003".into())).unwrap();
    let dev = profile.build_boxed(1);
    let cfg = SimConfig {
        host: HostProfile::linux_2003(256 << 20),
        cpu: CpuProfile::piii_1000(),
        seed: 1,
        vmstat: false,
        time_limit: Some(Instant::from_secs(600)),
        max_sim_time: None,
        interrupt: None,
        clock: None,
        trace: true,
        max_bio_sectors: std::env::var("MAXS").map(|s| s.parse().unwrap()).unwrap_or(256),
    };
    let mut sim = Sim::new(cfg, dev);
    let mut files = vec![];
    let d = sim.fs.mkdir(sim.fs.root(), "d");
    for i in 0..nreaders {
        files.push(sim.fs.create_with_size(d, &format!("f{i}"), size));
    }
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
            SysOp::Read { file: f, offset: o, len: 4096 }
        };
        let t = sim.spawn(format!("reader{i}"), Box::new(prog), IoPrio::NONE);
        sim.watch(t);
    }
    let mut q = SchedSpec::parse(&sched).unwrap().queue().unwrap();
    host::run(&mut sim, &mut q);
    let el = sim.now.as_secs_f64();
    let mb = (size * nreaders) as f64 / 1048576.0;
    let tr = sim.trace.take().unwrap();
    let (mut last_end, mut seq, mut n, mut dist) = (0u64, 0u64, 0u64, 0f64);
    let mut sizes = std::collections::BTreeMap::new();
    if let Ok(path) = std::env::var("DUMP") {
        let mut out = String::new();
        for l in tr.iter().filter(|l| l.split_whitespace().nth(5) == Some("D")) {
            let w: Vec<&str> = l.split_whitespace().collect();
            out.push_str(&format!("{} {} {} {}\n", w[w.len() - 4], w[w.len() - 2], w[3], w[4]));
        }
        std::fs::write(path, out).unwrap();
    }
    for l in tr.iter().filter(|l| l.split_whitespace().nth(5) == Some("D")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let sector: u64 = w[w.len() - 4].parse().unwrap();
        let len: u64 = w[w.len() - 2].parse().unwrap();
        if sector == last_end {
            seq += 1;
        } else {
            dist += (sector as f64 - last_end as f64).abs();
        }
        last_end = sector + len;
        n += 1;
        *sizes.entry(len).or_insert(0u64) += 1;
    }
    println!(
        "device busy {:.2}s for {} requests = {:.2} ms each",
        sim.stats.device_busy.as_secs_f64(),
        sim.stats.requests_completed,
        sim.stats.device_busy.as_secs_f64() * 1000.0 / sim.stats.requests_completed as f64
    );
    println!(
        "{sched}: {nreaders} readers, {mb:.1} MiB in {el:.2} s = {:.2} MiB/s; {n} requests, {:.0}% sequential, mean seek {:.0} sectors; common sizes {:?}",
        mb / el,
        100.0 * seq as f64 / n.max(1) as f64,
        dist / (n - seq).max(1) as f64,
        sizes.iter().filter(|(_, c)| **c > n / 50).collect::<Vec<_>>()
    );
}
