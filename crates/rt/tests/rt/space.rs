//! Space and read-only loads: a run that would not fit its filesystem is refused before
//! anything is written, with both figures; `--offset` gaps take no space; a target grown
//! for nothing goes back; a load that only reads opens its target read-only and writes
//! nothing, to our file or anyone's, forced or not.

use crate::common::*;
use iosched_benchmarks::tiobench::Phase;
use iosched_rt::workload::{Control, fio_like, tiobench};
use std::path::Path;

fn tio(size_mb: u64, offset_mb: u64) -> tiobench::Config {
    tiobench::Config {
        size_mb,
        block: 4096,
        threads: 2,
        random_ops: 50,
        offset_mb,
        phases: vec![Phase::SeqWrite],
        seed: 1,
    }
}

fn allocated(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().blocks() * 512
}

pub fn a_run_that_does_not_fit_is_refused_before_writing() {
    let fs = Tmpfs::new("space", 32);
    let t = fs.0.join("t.img");
    tiobench::run(&t, options("noop"), &tio(4, 0), &Control::default()).unwrap();
    let (len, free) = (std::fs::metadata(&t).unwrap().len(), fs.free());
    // 64 MiB on a 32 MiB filesystem: refused with both figures, nothing written.
    let e = tiobench::run(&t, options("noop"), &tio(64, 0), &Control::default()).unwrap_err().to_string();
    assert!(
        e.contains("needs 60.0 MiB of new space") && e.contains("free") && e.contains("nothing was written"),
        "{e}"
    );
    assert_eq!(std::fs::metadata(&t).unwrap().len(), len, "the refused run changed the target's length");
    assert_eq!(fs.free(), free, "the refused run took space");
    // A new target too large: refused and not left behind.
    let n = fs.0.join("new.img");
    let e = tiobench::run(&n, options("noop"), &tio(64, 0), &Control::default()).unwrap_err().to_string();
    assert!(e.contains("of new space"), "{e}");
    assert!(!n.exists(), "a refused new target was left behind");
    assert_eq!(fs.free(), free);
}

pub fn offset_gaps_take_no_space() {
    let fs = Tmpfs::new("gaps", 32);
    let t = fs.0.join("t.img");
    let free = fs.free();
    // Two 4 MiB regions a terabyte apart: 8 MiB and the marker, not a terabyte.
    let run = tiobench::run(&t, options("noop"), &tio(8, 1 << 20), &Control::default()).unwrap();
    assert!(run.ended.is_complete(), "{:?}", run.ended);
    assert!(std::fs::metadata(&t).unwrap().len() > 1 << 40);
    let used = free - fs.free();
    assert!(used <= (8 << 20) + (1 << 20), "the run took {used} bytes for 8 MiB of regions");
    assert!(allocated(&t) <= (8 << 20) + (1 << 20));
    // A later run into the gap is checked too: it needs space the first did not take.
    let e = tiobench::run(&t, options("noop"), &tio(64, 0), &Control::default()).unwrap_err().to_string();
    assert!(e.contains("of new space"), "{e}");
}

fn read_job() -> fio_like::Config {
    fio_like::Config {
        rw: fio_like::Rw::RandRead,
        bs: 4096,
        iodepth: 8,
        size: 4 << 20,
        runtime: None,
        seed: 1,
        rwmixread: 50,
        prios: Vec::new(),
    }
}

pub fn a_reading_load_writes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("readonly");
    // Someone's file, mode 444: read as it is, forced or not, and left byte for byte.
    let f = dir.path("foreign.bin");
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 11) as u8).collect();
    std::fs::write(&f, &data).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
    for force in [false, true] {
        let mut o = options("deadline");
        o.force = force;
        let (res, ended) = fio_like::run(&f, o, &read_job(), &Control::default()).unwrap();
        assert!(ended.is_complete(), "{ended:?}");
        assert_eq!(res.total_ios, 1024);
        assert_eq!(res.report.bytes_written, 0);
    }
    assert!(std::fs::read(&f).unwrap() == data, "a reading load changed the file");
    // A missing target is not created; one of ours is not grown.
    let e = fio_like::run(&dir.path("none"), options("noop"), &read_job(), &Control::default()).unwrap_err();
    assert!(e.to_string().contains("never creates a target"), "{e}");
    assert!(!dir.path("none").exists());
    let ours = dir.path("ours");
    let mut w = read_job();
    w.rw = fio_like::Rw::Write;
    w.size = 1 << 20;
    fio_like::run(&ours, options("noop"), &w, &Control::default()).unwrap();
    let before = std::fs::read(&ours).unwrap();
    let e = fio_like::run(&ours, options("noop"), &read_job(), &Control::default()).unwrap_err();
    assert!(e.to_string().contains("a load that only reads uses a target as it is"), "{e}");
    let mut r = read_job();
    r.size = 1 << 20;
    fio_like::run(&ours, options("noop"), &r, &Control::default()).unwrap();
    assert!(std::fs::read(&ours).unwrap() == before, "a reading load changed our target");
}
