//! The runtime on a plain temp file, through io_uring (and through the thread pool
//! explicitly): reads see what writes wrote, under every scheduler, with
//! many owners, merges and reordering.

use crate::common::*;
use iosched_core::Op;
use iosched_rt::{BackendChoice, IoBuf, IoError, Options, Target};
use std::sync::{Arc, Mutex};

fn opts(sched: &str, backend: BackendChoice) -> Options {
    let mut o = options(sched);
    o.size = Some(8 << 20);
    o.verify = true;
    o.backend = backend;
    o
}

/// Threads write their own region in 4 KiB blocks (sequential: merges), read it back in
/// 16 KiB pieces and compare bytes.
fn mixed(sched: &str, backend: BackendChoice) {
    let dir = TempDir::new(&format!("mixed-{sched}-{backend:?}"));
    let t = Target::open(dir.path("t"), opts(sched, backend)).unwrap();
    let region = (1u64 << 20) as usize;
    std::thread::scope(|s| {
        for i in 0..4u64 {
            let h = t.handle();
            s.spawn(move || {
                let base = i * region as u64;
                let mut b = IoBuf::new(4096);
                for k in 0..(region / 4096) as u64 {
                    b[100..108].copy_from_slice(&(base + k * 4096).to_le_bytes());
                    h.write(base + k * 4096, &mut b).unwrap();
                }
                let mut r = IoBuf::new(16384);
                for k in 0..(region / 16384) as u64 {
                    h.read(base + k * 16384, &mut r).unwrap();
                    for j in 0..4u64 {
                        let off = base + k * 16384 + j * 4096;
                        let got = u64::from_le_bytes(
                            r[(j * 4096) as usize + 100..(j * 4096) as usize + 108].try_into().unwrap(),
                        );
                        assert_eq!(got, off, "payload at {off}");
                    }
                }
                h.fsync().unwrap();
            });
        }
    });
    let rep = t.close().unwrap();
    assert!(rep.errors.is_empty(), "{:?} {:?}", rep.errors, rep.first_error);
    let v = rep.verify.unwrap();
    assert_eq!(v.mismatches, 0);
    assert_eq!(v.checked, 4 * 256);
    assert_eq!(rep.bytes_written, 4 << 20);
    assert_eq!(rep.bytes_read, 4 << 20);
    assert!(rep.dispatched <= rep.requests);
}

pub fn every_scheduler_reads_back_what_it_wrote() {
    for s in schedulers() {
        mixed(s, BackendChoice::IoUring);
    }
}

pub fn thread_pool_backend_works_too() {
    mixed("deadline", BackendChoice::Threads);
    mixed("as", BackendChoice::Threads);
}

pub fn callbacks_complete_and_return_buffers() {
    let dir = TempDir::new("callbacks");
    let mut o = opts("noop", BackendChoice::IoUring);
    o.verify = false;
    let t = Target::open(dir.path("t"), o).unwrap();
    let h = t.handle();
    let done = Arc::new(Mutex::new(Vec::new()));
    for k in 0..64u64 {
        let mut b = IoBuf::new(4096);
        b[0] = k as u8;
        let d = Arc::clone(&done);
        h.submit(Op::Write, k * 4096, b, move |c| {
            d.lock().unwrap().push((k, c.result.clone(), c.buf.map(|b| b[0])));
        })
        .unwrap();
    }
    let e = h.submit(Op::Read, 3, IoBuf::new(4096), |_| {}).unwrap_err();
    assert!(matches!(e, IoError::Invalid(_)), "{e}");
    let e = h.submit(Op::Read, 8 << 20, IoBuf::new(4096), |_| {}).unwrap_err();
    assert!(e.to_string().contains("past the end"), "{e}");
    drop(h);
    let rep = t.close().unwrap();
    let d = done.lock().unwrap();
    assert_eq!(d.len(), 64);
    for (k, r, b0) in d.iter() {
        assert_eq!(*r, Ok(4096));
        assert_eq!(*b0, Some(*k as u8));
    }
    assert_eq!(rep.requests, 64);
}

/// The dispatcher sleeps whenever it has nothing to do; a client's message must always
/// wake it. Many threads, tiny requests, irregular pauses — under a watchdog, so a lost
/// wake-up fails the test instead of hanging it.
pub fn wakeups_are_never_lost() {
    // Three rounds per backend: a lost wake-up is a race, caught by repetition.
    let rounds = [BackendChoice::IoUring, BackendChoice::IoUring, BackendChoice::IoUring, BackendChoice::Threads];
    for (round, backend) in rounds.into_iter().enumerate() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let dir = TempDir::new(&format!("wakeups-{round}"));
            let mut o = opts("noop", backend);
            o.verify = false;
            let t = Target::open(dir.path("t"), o).unwrap();
            std::thread::scope(|s| {
                for i in 0..6u64 {
                    let h = t.handle();
                    s.spawn(move || {
                        let mut b = IoBuf::new(4096);
                        for k in 0..1500u64 {
                            h.read(((i * 1500 + k) % 2048) * 4096, &mut b).unwrap();
                            if k % 7 == i {
                                std::thread::sleep(std::time::Duration::from_micros(50 + 10 * i));
                            }
                        }
                    });
                }
            });
            let rep = t.close().unwrap();
            // Remove the directory before reporting: after the last round the test (and
            // the process) may end before this thread would drop it.
            drop(dir);
            tx.send(rep.requests).unwrap();
        });
        let n = match rx.recv_timeout(std::time::Duration::from_secs(60)) {
            Ok(n) => n,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("{backend:?}: the dispatcher missed a wake-up (no progress in 60 s)")
            }
            Err(e) => panic!("{backend:?}: the workload failed ({e})"),
        };
        assert_eq!(n, 6 * 1500);
    }
}

/// mq-deadline's strict priority through the real runtime, on an emulated 2003 IDE disk
/// (one request at a time, milliseconds each): while four real-time readers keep requests
/// queued, a best-effort reader gets nothing; under deadline it takes its share.
/// Returns how many of the best-effort reader's 20 reads finished before the last of the
/// real-time readers' 4 × 20.
fn best_effort_reads_before_rt_done(sched: &str) -> usize {
    use iosched_core::{IoPrio, Owner};
    use std::time::Instant;
    let dir = TempDir::new(&format!("prio-{sched}"));
    let mut o = options(&format!("{sched}:plugging=0"));
    o.size = Some(64 << 20);
    o.emulate = Some("ide-2003".into());
    let t = Target::open(dir.path("t"), o).unwrap();
    let span = t.info().data_len / 4096;
    let start = Instant::now();
    let done: Vec<(bool, Vec<f64>)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..5u64)
            .map(|i| {
                let rt = i < 4;
                let prio = if rt { IoPrio::rt(0) } else { IoPrio::be(4) };
                let h = t.handle_as(Owner(100 + i), prio);
                s.spawn(move || {
                    let mut b = IoBuf::new(4096);
                    let mut times = Vec::new();
                    for k in 0..20u64 {
                        // Scattered offsets: every read is a seek.
                        let block = (i * 7919 + k * 104_729) % span;
                        h.read(block * 4096, &mut b).unwrap();
                        times.push(start.elapsed().as_secs_f64());
                    }
                    (rt, times)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let rep = t.close().unwrap();
    assert!(rep.errors.is_empty(), "{:?}", rep.first_error);
    let rt_end = done.iter().filter(|d| d.0).flat_map(|d| d.1.iter().copied()).fold(0.0, f64::max);
    done.iter().filter(|d| !d.0).flat_map(|d| d.1.iter()).filter(|&&t| t < rt_end).count()
}

pub fn mq_deadline_serves_real_time_readers_first_on_real_io() {
    let mq = best_effort_reads_before_rt_done("mq-deadline");
    let dl = best_effort_reads_before_rt_done("deadline");
    eprintln!("best-effort reads done while real-time readers ran: mq-deadline {mq} of 20, deadline {dl} of 20");
    assert!(mq <= 2, "mq-deadline let {mq} best-effort reads through");
    assert!(dl >= 8, "deadline served only {dl} best-effort reads: the load is not what the test assumes");
}

/// A completion callback that submits the next request (fio's reap-and-resubmit loop, as
/// the fio-like job does) has it taken in before the next completion already collected:
/// in the recorded queue inputs every completion is followed by its replacement's
/// arrival, up to the final drain, when nothing is resubmitted. Handling a whole
/// batch of completions first kept those requests from the device (noop reached 93 % of
/// fio's IOPS that way, 98 % with this order).
pub fn a_callbacks_next_request_goes_ahead_of_waiting_completions() {
    use iosched_core::trace::Record;
    use iosched_rt::workload::{Control, fio_like};
    let dir = TempDir::new("resubmit");
    let mut o = options("noop");
    o.record = true;
    let iodepth = 16;
    let cfg = fio_like::Config {
        rw: fio_like::Rw::RandRead,
        bs: 4096,
        iodepth,
        size: 4 << 20,
        runtime: None,
        seed: 1,
        rwmixread: 50,
        prios: Vec::new(),
    };
    // A load that only reads needs an existing target: write it first.
    let fill = fio_like::Config { rw: fio_like::Rw::Write, ..cfg.clone() };
    fio_like::run(&dir.path("t"), options("noop"), &fill, &Control::default()).unwrap();
    let (res, _) = fio_like::run(&dir.path("t"), o, &cfg, &Control::default()).unwrap();
    assert_eq!(res.total_ios, 1024);
    let trace = res.report.trace.expect("recording");
    let inputs: Vec<&Record> = trace.records.iter().filter(|r| r.input().is_some()).collect();
    let completions = inputs.iter().filter(|r| matches!(r, Record::Completion { .. })).count();
    assert!(completions >= 1024, "{completions} completions recorded");
    // Up to the last arrival every completion's callback submitted a replacement.
    let last_arrival = inputs.iter().rposition(|r| matches!(r, Record::Arrival { .. })).unwrap();
    let back_to_back = inputs[..=last_arrival]
        .windows(2)
        .filter(|w| matches!(w[0], Record::Completion { .. }) && matches!(w[1], Record::Completion { .. }))
        .count();
    assert_eq!(back_to_back, 0, "completions followed by another completion instead of the next request's arrival");
    let drain = inputs[last_arrival..].iter().filter(|r| matches!(r, Record::Completion { .. })).count();
    assert!(drain <= iodepth as usize, "{drain} completions after the last arrival");
}

/// `randrw`: reads and writes mixed in the proportion asked, each direction counted and
/// timed apart and adding up to the whole; under `--verify` every read of a block written
/// in the run sees the last write, whatever the scheduler reorders.
pub fn randrw_mixes_reads_and_writes_as_asked() {
    use iosched_rt::workload::{Control, Ended, fio_like};
    for sched in ["deadline", "as", "cfq"] {
        let dir = TempDir::new("randrw");
        let mut o = options(sched);
        o.verify = true;
        let cfg = fio_like::Config {
            rw: fio_like::Rw::RandRw,
            bs: 4096,
            iodepth: 8,
            size: 4 << 20,
            runtime: None,
            seed: 1,
            rwmixread: 70,
            prios: Vec::new(),
        };
        let (res, ended) = fio_like::run(&dir.path("t"), o, &cfg, &Control::default()).unwrap();
        assert_eq!(ended, Ended::Complete, "{sched}");
        assert_eq!(res.total_ios, 1024, "{sched}");
        assert_eq!(res.read.total_ios + res.write.total_ios, 1024, "{sched}");
        // 1024 draws at 70 %: 717 expected, a standard deviation of 15.
        let reads = res.read.total_ios;
        assert!((650..=785).contains(&reads), "{sched}: {reads} reads of 1024");
        assert!(res.read.clat_p50_us > 0.0 && res.write.clat_p50_us > 0.0, "{sched}");
        assert_eq!(res.report.bytes_read, reads * 4096, "{sched}");
        assert_eq!(res.report.bytes_written, (1024 - reads) * 4096, "{sched}");
        let v = res.report.verify.expect("verify report");
        assert_eq!(v.mismatches, 0, "{sched}");
        assert!(v.checked > 0, "{sched}: no read saw a block written in the run");
    }
    // All reads and all writes are the plain random modes' mixes.
    let dir = TempDir::new("randrw-all");
    let mut cfg = fio_like::Config {
        rw: fio_like::Rw::RandRw,
        bs: 4096,
        iodepth: 4,
        size: 1 << 20,
        runtime: None,
        seed: 2,
        rwmixread: 100,
        prios: Vec::new(),
    };
    let o = || options("noop");
    let (res, _) = fio_like::run(&dir.path("a"), o(), &cfg, &Control::default()).unwrap();
    assert_eq!((res.read.total_ios, res.write.total_ios), (256, 0));
    cfg.rwmixread = 0;
    let (res, _) = fio_like::run(&dir.path("b"), o(), &cfg, &Control::default()).unwrap();
    assert_eq!((res.read.total_ios, res.write.total_ios), (0, 256));
    cfg.rwmixread = 101;
    let e = fio_like::run(&dir.path("c"), o(), &cfg, &Control::default()).unwrap_err();
    assert!(e.to_string().contains("--rwmixread 101: expected a percentage, 0..=100"), "{e}");
}
