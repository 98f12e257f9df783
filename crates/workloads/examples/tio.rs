use iosched_policies::SchedSpec;
use iosched_workloads::machine::Machine;
use iosched_workloads::tiobench::{TiobenchConfig, run};

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("deadline".into());
    let threads: u32 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(32);
    let cfg = TiobenchConfig {
        size: 512 << 20,
        block: 4096,
        random: 4000,
        drop_caches: std::env::args().any(|a| a == "-F"),
        machine: Machine::new("ide-2003", 256 << 20, "piii-1000", 1),
    };
    let spec = SchedSpec::parse(&sched).unwrap();
    let w = std::time::Instant::now();
    let r = run(&spec, threads, &cfg).unwrap();
    for p in &r {
        println!(
            "{:10} {:4} rate {:6.2} cpu {:5.1}% avg {:9.3} max {:10.2} >2s {:.4} eff {:5.0}  (wall {:.1}s dev r {:.0} w {:.0} MiB)",
            p.phase.unwrap().name(),
            p.threads,
            p.rate_mb_s(),
            p.cpu_pct(),
            p.avg_lat_ms(),
            p.lat_max_ms,
            p.pct_gt_2s(),
            p.cpu_eff(),
            p.wall_s,
            p.device_read_mib,
            p.device_write_mib
        );
    }
    eprintln!("wall {:.2}s", w.elapsed().as_secs_f64());
}
