//! Development probe: `cargo run --release -p iosched-workloads --example readmany -- SCHED BACKGROUND`.
use iosched_policies::SchedSpec;
use iosched_workloads::machine::Machine;
use iosched_workloads::readmany::{Background, ReadmanyConfig, run};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sched = args.get(1).cloned().unwrap_or("deadline".into());
    let bg = Background::parse(args.get(2).map(|s| s.as_str()).unwrap_or("none")).unwrap();
    let disk = args.get(3).cloned().unwrap_or("ide-2003-fast".into());
    let mut cfg = ReadmanyConfig::new(Machine::new(&disk, 256 << 20, "p4-ht", 1), bg);
    cfg.vmstat = true;
    let w = std::time::Instant::now();
    let r = run(&SchedSpec::parse(&sched).unwrap(), &cfg).unwrap();
    for l in r.vmstat.iter().take(12) {
        println!("{l:?}");
    }
    println!(
        "{sched} {}: {:.1} s{} files {} MiB {:.1} bg MiB {:.0}  (wall {:.2}s)",
        bg.name(),
        r.elapsed_s,
        if r.timed_out { " (timeout)" } else { "" },
        r.files_read,
        r.bytes_read as f64 / 1048576.0,
        r.background_bytes as f64 / 1048576.0,
        w.elapsed().as_secs_f64()
    );
}
