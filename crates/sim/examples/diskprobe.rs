use iosched_core::Op;
use iosched_disk::DiskCommand;
use iosched_disk::info::{SplitMix, closed_loop};
fn main() {
    if let Ok(path) = std::env::var("REPLAY") {
        let p = iosched_disk::profile::load_profile("ide-2003").unwrap();
        let reqs: Vec<(u64, u32)> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| {
                let mut w = l.split_whitespace();
                (w.next().unwrap().parse().unwrap(), w.next().unwrap().parse().unwrap())
            })
            .collect();
        let n = reqs.len();
        let mut dev = p.build(1);
        let (ends, _) = closed_loop(&mut dev, 1, n, |i| DiskCommand {
            id: 0,
            op: Op::Read,
            sector: reqs[i].0,
            len_sectors: reqs[i].1,
        });
        println!("replayed {n} requests: {:.2} ms each", ends[n - 1] as f64 / n as f64 / 1e6);
        return;
    }
    let p = iosched_disk::profile::load_profile(&std::env::var("DISK").unwrap_or("ide-2003".into())).unwrap();
    let region: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(512 << 20) / 512;
    for len in [8u32, 256] {
        // random reads sorted in elevator sweeps of 32, like deadline with 32 readers
        let mut dev = p.build(3);
        let mut rng = SplitMix(7);
        let n = 3200;
        let mut reqs: Vec<u64> = Vec::new();
        for b in 0..n / 32 {
            let mut sweep: Vec<u64> = (0..32).map(|_| rng.below(region / len as u64) * len as u64).collect();
            sweep.sort();
            let _ = b;
            reqs.extend(sweep);
        }
        let (ends, _) = closed_loop(&mut dev, 1, n, |i| DiskCommand {
            id: 0,
            op: Op::Read,
            sector: reqs[i] + 1_000_000,
            len_sectors: len,
        });
        let per = ends[n - 1] as f64 / n as f64 / 1e6;
        println!(
            "len {len} sectors, region {} MiB: {:.2} ms per request, {:.2} MiB/s",
            region / 2048,
            per,
            len as f64 * 512.0 / per / 1e3 / 1.048576
        );
        let mut dev = p.build(3);
        let (ends, _) = closed_loop(&mut dev, 1, n, |_| DiskCommand {
            id: 0,
            op: Op::Read,
            sector: rng.below(region / len as u64) * len as u64 + 1_000_000,
            len_sectors: len,
        });
        let per = ends[n - 1] as f64 / n as f64 / 1e6;
        println!("   unsorted: {:.2} ms per request", per);
    }
    // 32 sequential streams of 128 KiB chunks, one chunk per stream per sorted sweep.
    let streams = 32u64;
    let span = region / streams;
    let mut reqs = Vec::new();
    for k in 0..100u64 {
        for s in 0..streams {
            reqs.push(s * span + k * 256);
        }
    }
    let n = reqs.len();
    let mut dev = p.build(3);
    let (ends, _) = closed_loop(&mut dev, 1, n, |i| DiskCommand {
        id: 0,
        op: Op::Read,
        sector: reqs[i] + 1_000_000,
        len_sectors: 256,
    });
    let per = ends[n - 1] as f64 / n as f64 / 1e6;
    println!(
        "32 interleaved sequential streams: {:.2} ms per 128 KiB, {:.2} MiB/s",
        per,
        128.0 / 1024.0 / (per / 1000.0)
    );
}
// appended: interleaved streams
#[allow(dead_code)]
fn unused() {}
