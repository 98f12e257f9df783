//! Cost of the device models per request (simulated requests per wall-clock second):
//! a closed loop that keeps the queue full, as the simulator does.
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use iosched_core::Op;
use iosched_disk::info::{SplitMix, closed_loop};
use iosched_disk::{DiskCommand, Profile, load_profile};
use std::hint::black_box;

const N: usize = 20_000;

fn stream(p: &Profile, qd: u32, op: Op, sequential: bool, len: u32) -> u64 {
    let mut d = p.build(1);
    let cap = p.capacity_sectors() / len as u64;
    let mut rng = SplitMix::from_state(7);
    let (ends, _) = closed_loop(&mut d, qd, N, |i| {
        let sector = if sequential { (i as u64 % cap) * len as u64 } else { rng.below(cap) * len as u64 };
        DiskCommand { id: 0, op, sector, len_sectors: len }
    });
    ends[N - 1]
}

fn bench(c: &mut Criterion) {
    let cases: [(&str, &str, u32, Op, bool, u32); 7] = [
        ("ide-2003", "random_4k_read_qd1", 1, Op::Read, false, 8),
        ("ide-2003", "sequential_128k_read_qd1", 1, Op::Read, true, 256),
        ("ide-2003", "sequential_4k_read_qd1", 1, Op::Read, true, 8),
        ("ide-2003", "random_4k_write_qd1", 1, Op::Write, false, 8),
        ("sata-2004-ncq", "random_4k_read_qd32", 32, Op::Read, false, 8),
        ("nvme-ssd", "random_4k_read_qd32", 32, Op::Read, false, 8),
        ("null", "random_4k_read_qd32", 32, Op::Read, false, 8),
    ];
    for (prof, name, qd, op, seq, len) in cases {
        let p = load_profile(prof).unwrap();
        let mut g = c.benchmark_group(prof);
        g.throughput(Throughput::Elements(N as u64));
        g.sample_size(20);
        g.bench_function(name, |b| b.iter(|| black_box(stream(&p, qd, op, seq, len))));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
