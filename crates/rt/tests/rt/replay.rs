//! Record the real runtime's queue inputs and replay them through a fresh queue: the
//! dispatch order must be identical — for every scheduler. Also through the text format
//! and the `iosched replay` parser path (`Trace::parse`).

use crate::common::*;
use iosched_core::replay::replay;
use iosched_core::trace::Trace;
use iosched_policies::SchedSpec;
use iosched_rt::{IoBuf, Target};

fn record(sched: &str) -> Trace {
    let dir = TempDir::new(&format!("replay-{sched}"));
    let mut o = options(sched);
    o.size = Some(16 << 20);
    o.record = true;
    // A real, slow-ish device makes the scheduler's choices (anticipation, slices) matter.
    o.emulate = Some("ide-2003".into());
    let t = Target::open(dir.path("t"), o).unwrap();
    std::thread::scope(|s| {
        // Two sequential readers, one random reader, one writer: merges, anticipation,
        // idling, batches and owner exits all happen.
        for i in 0..2u64 {
            let h = t.handle();
            s.spawn(move || {
                let mut b = IoBuf::new(4096);
                for k in 0..60u64 {
                    h.read(i * (4 << 20) + k * 4096, &mut b).unwrap();
                }
            });
        }
        let h = t.handle();
        s.spawn(move || {
            let mut b = IoBuf::new(4096);
            let mut x = 12345u64;
            for _ in 0..30 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                h.read((x >> 33) % 4096 * 4096, &mut b).unwrap();
            }
        });
        let mut h = t.handle();
        h.set_sync_writes(false);
        s.spawn(move || {
            let mut b = IoBuf::new(65536);
            for k in 0..20u64 {
                h.write((12 << 20) + k * 65536, &mut b).unwrap();
            }
            h.fsync().unwrap();
        });
    });
    let rep = t.close().unwrap();
    assert!(rep.errors.is_empty(), "{:?}", rep.first_error);
    rep.trace.expect("recording")
}

pub fn recordings_replay_identically_for_every_scheduler() {
    for sched in schedulers() {
        let trace = record(sched);
        let text = trace.to_text();
        let parsed = Trace::parse(&text).unwrap();
        assert_eq!((&parsed.meta, &parsed.records), (&trace.meta, &trace.records));
        let spec_text = parsed.meta("sched").unwrap();
        assert!(spec_text.contains("queue_depth=1"), "{spec_text}");
        let mut q = SchedSpec::parse(spec_text).unwrap().queue().unwrap();
        let n = replay(&parsed.records, &mut q).unwrap_or_else(|m| panic!("{sched}: {m}"));
        assert!(n >= 60, "{sched}: only {n} dispatches");
        // A replay with another scheduler must notice (the check can fail).
        if sched == "anticipatory" {
            let mut other = SchedSpec::parse("noop:queue_depth=1").unwrap().queue().unwrap();
            assert!(replay(&parsed.records, &mut other).is_err(), "noop replayed AS's order");
        }
    }
}

/// The acceptance point in miniature: with an emulated 2003 IDE disk, parallel
/// sequential readers get far more from AS (anticipation) than from deadline.
pub fn emulated_ide_disk_shows_anticipation_winning_on_parallel_sequential_reads() {
    use iosched_benchmarks::tiobench::Phase;
    use iosched_rt::workload::{Control, Ended, tiobench};
    let dir = TempDir::new("as-vs-deadline");
    let cfg = tiobench::Config {
        size_mb: 4,
        block: 4096,
        threads: 4,
        random_ops: 0,
        // Streams 64 MiB apart, as files of a filesystem would be (1 MiB each is read).
        offset_mb: 63,
        phases: vec![Phase::SeqRead],
        seed: 1,
    };
    let mut rate = Vec::new();
    for sched in ["deadline", "as"] {
        let mut o = options(sched);
        o.emulate = Some("ide-2003".into());
        let run = tiobench::run(&dir.path("t"), o, &cfg, &Control::default()).unwrap();
        assert_eq!(run.ended, Ended::Complete);
        assert_eq!(run.records.len(), 1);
        rate.push(run.records[0].rate_mb_s);
    }
    eprintln!("emulated ide-2003, 4 sequential readers: deadline {:.2} MB/s, AS {:.2} MB/s", rate[0], rate[1]);
    assert!(rate[1] >= 1.5 * rate[0], "AS {:.2} MB/s vs deadline {:.2} MB/s", rate[1], rate[0]);
}
