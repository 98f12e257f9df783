//! One benchmark, two worlds: the simulated tiobench and the real one
//! (`iosched_rt::workload::tiobench`) draw the same offsets for the same seed, because both
//! take their threads' operation streams from `iosched_benchmarks::tiobench::ThreadOps`.

use super::{machine, spec};
use iosched_benchmarks::tiobench::{Phase, ThreadOps};
use iosched_core::Op;
use iosched_core::trace::Record;
use iosched_workloads::tiobench::{self, TiobenchConfig};

const THREADS: u32 = 2;
const MIB: u64 = 2; // per thread
const BLOCK: u64 = 4096;
const RANDOM: u64 = 64; // over all threads

/// Each thread's offsets in the order it made its calls, per phase in tiotest's order.
type Streams = Vec<[Vec<u64>; 4]>;

fn simulated(seed: u64) -> Streams {
    let cfg = TiobenchConfig {
        size: (THREADS as u64 * MIB) << 20,
        block: BLOCK,
        random: RANDOM,
        drop_caches: false,
        machine: machine(seed),
    };
    let (_, calls) = tiobench::run_logged(&spec("deadline"), THREADS, &cfg).unwrap();
    (0..THREADS)
        .map(|i| {
            let name = format!("tiotest/{i}");
            let of = |kind: &str| -> Vec<u64> {
                calls.iter().filter(|c| c.task == name && c.kind == kind).map(|c| c.offset).collect()
            };
            split(&of("write"), &of("read"))
        })
        .collect()
}

fn real(seed: u64) -> Streams {
    use iosched_rt::workload::{Control, Ended, tiobench};
    let dir = std::env::temp_dir().join(format!("iosched-both-worlds-{}-{seed}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = tiobench::Config {
        size_mb: THREADS as u64 * MIB,
        block: BLOCK as u32,
        threads: THREADS,
        random_ops: RANDOM,
        offset_mb: 0,
        phases: Phase::RUN_ORDER.to_vec(),
        seed,
    };
    let mut o = iosched_rt::Options::new(spec("deadline"));
    o.record = true;
    // The thread pool: this test needs no io_uring.
    o.backend = iosched_rt::BackendChoice::Threads;
    let run = tiobench::run(&dir.join("target"), o, &cfg, &Control::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(run.ended, Ended::Complete);
    let trace = run.report.trace.expect("recorded");
    let region = MIB << 20;
    (0..THREADS as u64)
        .map(|i| {
            let of = |op: Op| -> Vec<u64> {
                trace
                    .records
                    .iter()
                    .filter_map(|r| match r {
                        Record::Arrival { rq, .. } if rq.op == op => Some(rq.sector * 512),
                        _ => None,
                    })
                    .filter(|&b| b / region == i)
                    .map(|b| b - i * region)
                    .collect()
            };
            split(&of(Op::Write), &of(Op::Read))
        })
        .collect()
}

/// A thread's writes are its sequential then its random write phase; its reads, the
/// sequential then the random read phase.
fn split(writes: &[u64], reads: &[u64]) -> [Vec<u64>; 4] {
    let blocks = ((MIB << 20) / BLOCK) as usize;
    assert_eq!(writes.len(), blocks + (RANDOM / THREADS as u64) as usize, "write calls");
    assert_eq!(reads.len(), blocks + (RANDOM / THREADS as u64) as usize, "read calls");
    [writes[..blocks].to_vec(), writes[blocks..].to_vec(), reads[..blocks].to_vec(), reads[blocks..].to_vec()]
}

#[test]
fn real_and_simulated_tiobench_draw_the_same_offsets() {
    for seed in [1, 7] {
        let (sim, real) = (simulated(seed), real(seed));
        assert_eq!(sim, real, "seed {seed}");
        for (i, phases) in sim.iter().enumerate() {
            for (p, phase) in Phase::RUN_ORDER.iter().enumerate() {
                let want: Vec<u64> =
                    ThreadOps::new(seed, *phase, i as u32, MIB << 20, BLOCK, RANDOM / THREADS as u64).collect();
                assert_eq!(phases[p], want, "seed {seed}, thread {i}, {phase:?}");
            }
            // The random phases are random: distinct offsets, not one block over and over.
            let distinct: std::collections::BTreeSet<u64> = phases[3].iter().copied().collect();
            assert!(distinct.len() > 16, "seed {seed}, thread {i}: {} distinct random reads", distinct.len());
        }
        // And the seed matters.
        if seed == 7 {
            assert_ne!(simulated(1)[0][3], sim[0][3]);
        }
    }
}
