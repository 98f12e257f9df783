//! Print the DiskSim validation table; `validate DRIVE OUT` also writes the per-request
//! simulated service times (ms) of DRIVE to OUT, one per line.
use std::sync::Arc;

use iosched_disk::disksim::{
    self,
    validate::{read_trace, replay},
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 2 && args[1] == "--open" {
        open_arrivals();
        return;
    }
    if args.len() >= 3 {
        let dir = disksim::validation_dir();
        let p = Arc::new(disksim::load_parv(&dir.join(format!("{}.parv", args[1]))).unwrap());
        let tpath =
            if args.len() > 3 { std::path::PathBuf::from(&args[3]) } else { dir.join(format!("{}.trace", args[1])) };
        let tr = read_trace(&tpath).unwrap();
        let sim = replay(p, &tr);
        let s: String = sim.iter().map(|v| format!("{v:.6}\n")).collect();
        std::fs::write(&args[2], s).unwrap();
        return;
    }
    println!(
        "{:<12} {:>9} {:>9} {:>8} {:>7} {:>8} {:>5}",
        "drive", "meas ms", "sim ms", "dem ms", "dem %", "DiskSim", "ok"
    );
    for d in disksim::validation_drives() {
        match disksim::validate(d) {
            Ok(r) => println!(
                "{:<12} {:>9.3} {:>9.3} {:>8.3} {:>7.2} {:>8.3} {:>5}",
                r.drive,
                r.measured_mean_ms,
                r.sim_mean_ms,
                r.demerit_ms,
                r.demerit_pct,
                r.disksim_demerit_ms,
                if r.passes() { "yes" } else { "NO" }
            ),
            Err(e) => println!("{d:<12} error: {e}"),
        }
    }
}

#[allow(dead_code)]
fn open_arrivals() {
    use iosched_disk::disksim::validate::{demerit, replay_open};
    let dir = disksim::validation_dir();
    for d in disksim::validation_drives() {
        let p = Arc::new(disksim::load_parv(&dir.join(format!("{d}.parv"))).unwrap());
        let tr = read_trace(&dir.join(format!("{d}.trace"))).unwrap();
        let sim = replay_open(p, &tr);
        let meas: Vec<f64> = tr.iter().map(|r| r.service_ms).collect();
        let mean = meas.iter().sum::<f64>() / meas.len() as f64;
        let dm = demerit(&meas, &sim);
        println!("{d:<12} open arrivals: demerit {dm:.3} ms ({:.2} %)", 100.0 * dm / mean);
    }
}
