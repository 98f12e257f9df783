//! Data integrity and error reporting: a corrupted block is detected with its offset;
//! short transfers, ENOSPC and EIO are reported per request, counted, and stop a
//! workload with a clear message — never a panic.

use crate::common::*;
use iosched_benchmarks::tiobench::Phase;
use iosched_rt::workload::{Control, Ended, tiobench};
use iosched_rt::{IoBuf, IoError, Options, Target};
use std::os::unix::fs::FileExt;
use std::process::Command;

fn opts(sched: &str, size: u64) -> Options {
    let mut o = options(sched);
    o.size = Some(size);
    o.verify = true;
    o
}

pub fn a_corrupted_block_is_detected_with_its_offset() {
    for sched in schedulers() {
        let dir = TempDir::new(&format!("corrupt-{sched}"));
        let path = dir.path("t");
        let t = Target::open(&path, opts(sched, 1 << 20)).unwrap();
        let h = t.handle();
        let mut b = IoBuf::new(8 * 4096);
        b.fill(7);
        h.write(0, &mut b).unwrap();
        // Flip one payload byte of the third block behind the runtime's back (the data
        // area starts after the 4 KiB marker block).
        let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        f.write_all_at(&[0xff], 4096 + 2 * 4096 + 1000).unwrap();
        f.sync_all().unwrap();
        let mut r = IoBuf::new(8 * 4096);
        let e = h.read(0, &mut r).unwrap_err();
        let IoError::Verify(m) = &e else { panic!("{sched}: expected a verify error, got {e}") };
        assert_eq!(m.offset, 2 * 4096, "{sched}");
        assert!(m.reason.contains("CRC32C"), "{sched}: {}", m.reason);
        // A block written to the wrong place is caught too (misdirected write).
        let mut good = [0u8; 4096];
        f.read_exact_at(&mut good, 4096).unwrap();
        f.write_all_at(&good, 4096 + 5 * 4096).unwrap();
        f.sync_all().unwrap();
        let mut one = IoBuf::new(4096);
        let e = h.read(5 * 4096, &mut one).unwrap_err();
        assert!(e.to_string().contains("misdirected"), "{sched}: {e}");
        drop(h);
        let rep = t.close().unwrap();
        let v = rep.verify.unwrap();
        assert_eq!(v.mismatches, 2, "{sched}");
        assert_eq!(rep.errors.get("verify"), Some(&2), "{sched}");
        assert!(rep.first_error.unwrap().contains("offset 8192"));
    }
}

pub fn mixed_read_write_under_every_scheduler_has_no_mismatch() {
    for sched in schedulers() {
        let dir = TempDir::new(&format!("tb-{sched}"));
        let cfg = tiobench::Config {
            size_mb: 8,
            block: 4096,
            threads: 4,
            random_ops: 800,
            offset_mb: 0,
            phases: Phase::RUN_ORDER.to_vec(),
            seed: 3,
        };
        let run = tiobench::run(&dir.path("t"), opts(sched, 8 << 20), &cfg, &Control::default()).unwrap();
        assert_eq!(run.ended, Ended::Complete, "{sched}");
        assert_eq!(run.records.len(), 4);
        let v = run.report.verify.unwrap();
        assert_eq!(v.mismatches, 0, "{sched}");
        // Sequential read checks every block; random reads hit written blocks only.
        assert!(v.checked >= 2048 + 800, "{sched}: {v:?}");
        assert_eq!(v.unverified, 0, "{sched}");
    }
}

pub fn a_short_transfer_is_reported_and_counted() {
    let dir = TempDir::new("short");
    let path = dir.path("t");
    let t = Target::open(&path, opts("deadline", 8 << 20)).unwrap();
    // Someone truncates the file under us: reads past the new end come back short.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096 + (4 << 20)).unwrap();
    let h = t.handle();
    let mut b = IoBuf::new(8192);
    let e = h.read((4 << 20) - 4096, &mut b).unwrap_err();
    assert_eq!(e, IoError::Short { offset: (4 << 20) - 4096, len: 8192, done: 4096 });
    assert!(e.to_string().contains("short transfer: 4096 of 8192 bytes"), "{e}");
    drop(h);
    let rep = t.close().unwrap();
    assert_eq!(rep.errors.get("short"), Some(&1));
}

pub fn an_eio_stops_the_workload_with_its_offset() {
    let dir = TempDir::new("eio");
    let mut o = opts("as", 4 << 20);
    o.inject_eio = Some(50);
    let cfg = tiobench::Config {
        size_mb: 4,
        block: 4096,
        threads: 2,
        random_ops: 100,
        offset_mb: 0,
        phases: Phase::RUN_ORDER.to_vec(),
        seed: 1,
    };
    let run = tiobench::run(&dir.path("t"), o, &cfg, &Control::default()).unwrap();
    let Ended::Failed(e) = &run.ended else { panic!("expected a failure, got {:?}", run.ended) };
    assert!(matches!(e, IoError::Os { errno, .. } if *errno == libc_eio()), "{e}");
    assert!(e.to_string().starts_with("EIO ("), "{e}");
    assert!(run.records.is_empty(), "the failed phase must not be reported as complete");
    assert_eq!(run.report.errors.get("EIO"), Some(&1));
}

fn libc_eio() -> i32 {
    5
}

/// ENOSPC for real: a tiny filesystem, a hole punched in our target behind the runtime's
/// back, the rest of the space taken, then a write into the hole.
pub fn enospc_is_reported_per_request_and_at_creation() {
    // Unmounted on drop, a failed assertion included.
    let fs = Tmpfs::new("enospc", 4);
    let mnt = fs.0.clone();
    // Creating a target larger than the filesystem is refused before anything is written
    // (space.rs has the rest of that) and leaves nothing.
    let big = mnt.join("big");
    let e = Target::open(&big, opts("noop", 64 << 20)).unwrap_err();
    assert!(e.0.contains("needs 64.0 MiB of new space") && e.0.contains("has 4.0 MiB free"), "{e}");
    assert!(!big.exists(), "a failed creation must not leave a file");
    let path = mnt.join("t");
    let t = Target::open(&path, opts("noop", 1 << 20)).unwrap();
    let punched =
        Command::new("fallocate").args(["-p", "-o", "4096", "-l", "1048576"]).arg(&path).status().unwrap().success();
    assert!(punched);
    // Take all the space that is left.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=64k", "status=none"])
        .arg(format!("of={}", mnt.join("fill").display()))
        .stderr(std::process::Stdio::null())
        .status();
    let h = t.handle();
    let mut b = IoBuf::new(65536);
    let r = h.write(0, &mut b);
    drop(h);
    let rep = t.close().unwrap();
    drop(fs);
    let e = r.unwrap_err();
    assert!(matches!(e, IoError::Os { errno: 28, offset: 0, len: 65536 }), "{e}");
    assert!(e.to_string().starts_with("ENOSPC"), "{e}");
    assert_eq!(rep.errors.get("ENOSPC"), Some(&1));
}
