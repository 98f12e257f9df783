//! sysbench fileio: prepare, the global request generator, fsync series, limits, async.

use super::{file, machine, spec, task_ops};
use iosched_core::Duration;
use iosched_workloads::sysbench::{self, Generator, IoMode, SysbenchConfig, TestMode};

const K: u64 = 1024;

fn small(mode: TestMode) -> SysbenchConfig {
    let mut c = SysbenchConfig::new(mode, machine(3));
    c.file_num = 4;
    c.file_total_size = 4 << 20;
    c.file_block_size = 16 * K;
    c.fsync_freq = 10;
    c.time = None;
    c.events = 200;
    c.record_ops = true;
    c
}

#[test]
fn prepare_writes_each_file_in_blocks_then_fsyncs_and_closes() {
    let r = sysbench::run(&spec("cfq"), &small(TestMode::RndRd)).unwrap();
    let p = task_ops(&r.ops, "sysbench-prepare");
    assert_eq!(p.len(), 4 * (1 + 64 + 2));
    for (f, chunk) in p.chunks(67).enumerate() {
        let name = format!("test_file.{f}");
        assert_eq!((chunk[0].kind, file(chunk[0])), ("open", name.as_str()));
        for (i, w) in chunk[1..65].iter().enumerate() {
            assert_eq!((w.kind, file(w), w.offset, w.len), ("write", name.as_str(), i as u64 * 16 * K, 16 * K));
        }
        assert_eq!((chunk[65].kind, chunk[66].kind), ("fsync", "close"));
    }
    // The run opens every file before the worker starts; the clock starts after that.
    let m = task_ops(&r.ops, "sysbench");
    let opens: Vec<&str> = m.iter().filter(|o| o.kind == "open").map(|o| file(o)).collect();
    assert_eq!(opens, ["test_file.0", "test_file.1", "test_file.2", "test_file.3"]);
}

/// Replays sysbench's generator rules over the worker's recorded events: the rndrw
/// direction from completed reads/writes, fsync series of one fsync per file every
/// `freq` requests once dirty, block-aligned uniform offsets inside the files.
#[test]
fn rndrw_stream_follows_the_generator_rules() {
    let cfg = small(TestMode::RndRw);
    let r = sysbench::run(&spec("cfq"), &cfg).unwrap();
    let w = task_ops(&r.ops, "sysbench/0");
    // 200 events, then --file-fsync-end: one fsync per file.
    let (events, tail) = w.split_at(w.len() - 4);
    assert_eq!(events.len(), 200);
    let tail_files: Vec<&str> = tail.iter().map(|o| file(o)).collect();
    assert!(tail.iter().all(|o| o.kind == "fsync"));
    assert_eq!(tail_files, ["test_file.0", "test_file.1", "test_file.2", "test_file.3"]);

    let (mut reads, mut writes, mut reqs, mut dirty) = (0u64, 0u64, 0u64, false);
    let mut i = 0;
    let mut fsync_events = 0;
    while i < events.len() {
        if dirty && reqs % 10 == 0 {
            for f in 0..4 {
                let o = events[i];
                assert_eq!((o.kind, file(o)), ("fsync", format!("test_file.{f}").as_str()), "event {i}");
                i += 1;
                fsync_events += 1;
                if i == events.len() {
                    break;
                }
            }
            dirty = false;
            continue;
        }
        let o = events[i];
        let expect_write = (reads + 1) as f64 / (writes + 1) as f64 >= 1.5;
        assert_eq!(o.kind, if expect_write { "write" } else { "read" }, "event {i}");
        assert_eq!(o.len, 16 * K);
        assert_eq!(o.offset % (16 * K), 0);
        assert!(o.offset < 1 << 20);
        if expect_write {
            writes += 1;
            dirty = true;
        } else {
            reads += 1;
        }
        reqs += 1;
        i += 1;
    }
    // The report counts what the stream shows.
    assert_eq!((r.reads, r.writes), (reads, writes));
    assert_eq!(r.events, 200);
    assert_eq!(r.fsyncs, fsync_events + 4);
    assert_eq!(r.bytes_read, reads * 16 * K);
    assert_eq!(r.bytes_written, writes * 16 * K);
    // Ratio 1.5: 60 % reads among requests.
    assert!((reads as f64 / (reads + writes) as f64 - 0.6).abs() < 0.02);
    // Every event is timed from its issue to its return; the total time runs on through
    // the end fsyncs.
    let lat: f64 = events.iter().map(|o| (o.returned.unwrap() - o.issued).as_secs_f64() * 1000.0).sum();
    assert!(lat <= r.lat_sum_ms + 1e-6 && lat > 0.99 * r.lat_sum_ms, "{lat} vs {}", r.lat_sum_ms);
    let t_end = tail.last().unwrap().returned.unwrap();
    assert!(r.total_time_s >= (t_end - events[0].issued).as_secs_f64());
    assert!((r.lat_avg_ms - r.lat_sum_ms / 200.0).abs() < 1e-9);
    assert!(r.lat_min_ms <= r.lat_avg_ms && r.lat_avg_ms <= r.lat_max_ms);
    assert_eq!(r.events_avg, 200.0);
    assert_eq!(r.events_stddev, 0.0);
    // Rates are over the total time.
    assert!((r.reads_per_s() - reads as f64 / r.total_time_s).abs() < 1e-9);
    assert!((r.total_mib_s() - (r.bytes_read + r.bytes_written) as f64 / 1048576.0 / r.total_time_s).abs() < 1e-9);
}

#[test]
fn seqwr_creates_the_files_and_walks_one_global_cursor() {
    let mut c = small(TestMode::SeqWr);
    c.file_num = 2;
    c.file_total_size = 1 << 20;
    c.file_block_size = 64 * K;
    c.fsync_freq = 0;
    c.events = 40;
    let r = sysbench::run(&spec("deadline"), &c).unwrap();
    assert!(task_ops(&r.ops, "sysbench-prepare").is_empty(), "seqwr has no prepare");
    let m = task_ops(&r.ops, "sysbench");
    assert_eq!(m.iter().filter(|o| o.kind == "truncate").count(), 2, "the run creates the files");
    let w = task_ops(&r.ops, "sysbench/0");
    let writes: Vec<(&str, u64)> = w.iter().filter(|o| o.kind == "write").map(|o| (file(o), o.offset)).collect();
    assert_eq!(writes.len(), 40);
    for (i, &(f, off)) in writes.iter().enumerate() {
        // 8 blocks per file, file 0 then file 1, then wrap to file 0.
        let k = i % 16;
        assert_eq!(f, format!("test_file.{}", k / 8));
        assert_eq!(off, (k % 8) as u64 * 64 * K);
    }
    assert_eq!(w.iter().filter(|o| o.kind == "fsync").count(), 2, "only the end fsyncs");
    assert_eq!(r.writes, 40);
}

#[test]
fn seqrd_has_no_fsyncs_and_the_sequential_generator_wraps() {
    let mut c = small(TestMode::SeqRd);
    c.file_num = 2;
    c.file_total_size = 64 * K;
    c.file_block_size = 24 * K; // 32 KiB files: blocks of 24 KiB and a last one of 8 KiB
    let mut g = Generator::new(&c);
    let mut rng = iosched_sim::Rng::new(1);
    let got: Vec<_> = (0..5).map(|_| g.next(&mut rng, 0, 0)).collect();
    use sysbench::Event::Read;
    assert_eq!(
        got,
        [
            Read { file: 0, pos: 0, size: 24 * K },
            Read { file: 0, pos: 24 * K, size: 8 * K },
            Read { file: 1, pos: 0, size: 24 * K },
            Read { file: 1, pos: 24 * K, size: 8 * K },
            Read { file: 0, pos: 0, size: 24 * K },
        ]
    );
    c.events = 30;
    let r = sysbench::run(&spec("cfq"), &c).unwrap();
    assert_eq!(r.fsyncs, 0);
    assert_eq!(r.reads, 30);
}

#[test]
fn async_direct_keeps_the_backlog_and_reaps_at_the_end() {
    let mut c = small(TestMode::RndRd);
    c.io_mode = IoMode::Async;
    c.direct = true;
    c.async_backlog = 4;
    c.events = 50;
    let r = sysbench::run(&spec("cfq"), &c).unwrap();
    let w = task_ops(&r.ops, "sysbench/0");
    let mut in_flight = 0u64;
    let mut submits = 0;
    for o in &w {
        match o.kind {
            "aio-submit" => {
                in_flight += 1;
                submits += 1;
                assert_eq!(o.arg, 0, "reads");
                assert!(in_flight <= 4);
            }
            "aio-wait" => {
                assert!(o.result >= 1.min(in_flight));
                in_flight -= o.result;
            }
            k => panic!("unexpected {k}"),
        }
    }
    assert_eq!(submits, 50);
    assert_eq!(in_flight, 0, "every request reaped at the end");
    assert_eq!(w.last().unwrap().kind, "aio-wait");
    assert_eq!(r.reads, 50);
    assert_eq!(r.events, 50);
}

#[test]
fn time_limit_stops_taking_events() {
    let mut c = small(TestMode::RndRd);
    c.events = 0;
    c.time = Some(Duration::from_millis(500));
    let r = sysbench::run(&spec("cfq"), &c).unwrap();
    let w = task_ops(&r.ops, "sysbench/0");
    let first = w[0].issued;
    // Every event started before the limit; the last one may end after it.
    assert!(w.iter().all(|o| (o.issued - first).as_secs_f64() < 0.5));
    assert!(r.total_time_s >= 0.5, "{}", r.total_time_s);
    assert_eq!(r.events as usize, w.len());
}

#[test]
fn same_seed_same_bytes_other_seed_other_offsets() {
    let mut c = small(TestMode::RndWr);
    c.record_ops = false;
    let a = sysbench::run(&spec("cfq"), &c).unwrap();
    let b = sysbench::run(&spec("cfq"), &c).unwrap();
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    let text = sysbench::render(&a, &c.machine);
    assert!(text.contains("File operations:\n    reads/s:"), "{text}");
    assert!(text.contains("    total number of events:              200\n"), "{text}");
    assert!(text.contains("         95th percentile:"), "{text}");
    c.record_ops = true;
    let x = sysbench::run(&spec("cfq"), &c).unwrap();
    c.machine.seed = 4;
    let y = sysbench::run(&spec("cfq"), &c).unwrap();
    let offs = |r: &sysbench::SysbenchReport| -> Vec<u64> {
        task_ops(&r.ops, "sysbench/0").iter().filter(|o| o.kind == "write").map(|o| o.offset).collect()
    };
    assert_ne!(offs(&x), offs(&y));
}

#[test]
fn bad_options_are_refused_with_the_option_named() {
    let m = machine(1);
    let base = SysbenchConfig::new(TestMode::RndRw, m);
    let err = |f: &dyn Fn(&mut SysbenchConfig)| {
        let mut c = base.clone();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert!(err(&|c| c.file_num = 0).contains("--file-num"));
    assert!(err(&|c| c.file_total_size = 0).contains("--file-total-size"));
    assert!(err(&|c| c.file_block_size = 0).contains("--file-block-size"));
    let e = err(&|c| c.file_block_size = 32 << 20);
    assert!(e.contains("--file-block-size") && e.contains("larger than each file"), "{e}");
    assert!(err(&|c| c.file_total_size = (2 << 30) + 1).contains("multiple of --file-num"));
    assert!(
        err(&|c| {
            c.direct = true;
            c.file_block_size = 6000;
        })
        .contains("direct")
    );
    assert!(
        err(&|c| {
            c.time = None;
            c.events = 0;
        })
        .contains("--time")
    );
    assert!(err(&|c| c.threads = 0).contains("--threads"));
    let e = TestMode::parse("rndmix").unwrap_err();
    assert!(e.contains("rndmix") && e.contains("rndrw"), "{e}");
    assert!(IoMode::parse("mmap").unwrap_err().contains("not simulated"));
}
