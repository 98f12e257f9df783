//! iozone: each test's sequence, what is timed, the KiB/s arithmetic, mmap, auto mode.

use super::{machine, spec, task_ops};
use iosched_workloads::iozone::{self, Column, IozoneConfig, Sizes, Step, permutation, stride_offsets, test_steps};
use iosched_workloads::oplog::OpRecord;

const K: u64 = 1024;

fn cfg(file: u64, record: u64) -> IozoneConfig {
    let mut c = IozoneConfig::single(file, record, machine(5));
    c.record_ops = true;
    c
}

#[test]
fn write_test_sequence() {
    let c = cfg(256 * K, 64 * K);
    let s = test_steps(&c, 0, 256 * K, 64 * K);
    let w = |i: u64| Step::Write { offset: i * 64 * K, len: 64 * K };
    let mut want = vec![Step::Create, Step::Close, Step::Unlink, Step::Create, Step::Close, Step::Open, Step::Fsync];
    want.push(Step::Start);
    want.extend((0..4).map(w));
    want.extend([Step::Stop(Column::Write), Step::Fsync, Step::Close, Step::Open, Step::Fsync, Step::Start]);
    want.extend((0..4).map(w));
    want.extend([Step::Stop(Column::Rewrite), Step::Fsync, Step::Close]);
    assert_eq!(s, want);
    // -e puts the fsync inside the timing.
    let mut e = c.clone();
    e.include_flush = true;
    let s = test_steps(&e, 0, 256 * K, 64 * K);
    let stop = s.iter().position(|x| *x == Step::Stop(Column::Write)).unwrap();
    assert_eq!(s[stop - 1], Step::Fsync);
}

#[test]
fn read_random_backward_rewrite_stride_sequences() {
    let c = cfg(1024 * K, 64 * K);
    let n: u64 = 16;
    let offsets = |s: &[Step], want_kind: fn(&Step) -> Option<u64>| s.iter().filter_map(want_kind).collect::<Vec<_>>();
    let reads = |x: &Step| if let Step::Read { offset, .. } = x { Some(*offset) } else { None };
    let writes = |x: &Step| if let Step::Write { offset, .. } = x { Some(*offset) } else { None };

    // Read: per pass open, fsync, an untimed priming read of record 0, then all records.
    let s = test_steps(&c, 1, 1024 * K, 64 * K);
    assert_eq!(&s[..4], &[Step::Open, Step::Fsync, Step::Read { offset: 0, len: 64 * K }, Step::Start]);
    let r = offsets(&s, reads);
    assert_eq!(r.len() as u64, 2 * (1 + n));
    assert_eq!(&r[1..17], &(0..n).map(|i| i * 64 * K).collect::<Vec<_>>()[..]);

    // Random: the same permutation read, then written; every record once per pass.
    let s = test_steps(&c, 2, 1024 * K, 64 * K);
    let p: Vec<u64> = permutation(n).iter().map(|r| r * 64 * K).collect();
    assert_eq!(offsets(&s, reads), p);
    assert_eq!(offsets(&s, writes), p);
    assert_eq!(s[0], Step::Open);
    assert_eq!(s[1], Step::Start, "no fsync before the random read loop");

    // Backward: last record first, two passes, only the first reported.
    let s = test_steps(&c, 3, 1024 * K, 64 * K);
    let b = offsets(&s, reads);
    assert_eq!(&b[..16], &(0..n).rev().map(|i| i * 64 * K).collect::<Vec<_>>()[..]);
    assert_eq!(b.len(), 32);
    assert_eq!(s.iter().filter(|x| matches!(x, Step::Stop(_))).count(), 1);

    // Record rewrite: numrecs writes of record 0.
    let s = test_steps(&c, 4, 1024 * K, 64 * K);
    assert_eq!(offsets(&s, writes), vec![0; 16]);

    // Stride: 17-record stride with wrap.
    let s = test_steps(&c, 5, 1024 * K, 64 * K);
    assert_eq!(offsets(&s, reads), stride_offsets(n, 64 * K, 17));
}

#[test]
fn mmap_variants_fault_pages_and_copy_in_user_space() {
    let mut c = cfg(256 * K, 64 * K);
    c.mmap = true;
    let s = test_steps(&c, 0, 256 * K, 64 * K);
    // initfile extends the file by writing its last record, before the untimed fsync.
    let open = s.iter().position(|x| *x == Step::Open).unwrap();
    assert_eq!(s[open + 1], Step::Write { offset: 192 * K, len: 64 * K });
    assert_eq!(s[open + 2], Step::Fsync);
    assert_eq!(s.iter().filter(|x| matches!(x, Step::MmapWrite { .. })).count(), 8);
    assert_eq!(s.iter().filter(|x| matches!(x, Step::Copy { len } if *len == 64 * K)).count(), 8);
    let s = test_steps(&c, 2, 256 * K, 64 * K);
    assert_eq!(s.iter().filter(|x| matches!(x, Step::MmapRead { .. })).count(), 4);
    assert_eq!(s.iter().filter(|x| matches!(x, Step::MmapWrite { .. })).count(), 4);
}

/// The KiB/s value of a column from the recorded stream: the timed ops run from the
/// first op after the untimed preamble to the op that follows the loop (the untimed
/// fsync), `(bytes / seconds) >> 10`.
fn rate(ops: &[&OpRecord], first: usize, after: usize, bytes: u64) -> u64 {
    let secs = (ops[after].issued - ops[first].issued).as_secs_f64();
    ((bytes as f64 / secs) as u64) >> 10
}

#[test]
fn columns_are_computed_from_the_timed_loops() {
    let c = cfg(1024 * K, 64 * K);
    let r = iozone::run(&spec("cfq"), &c).unwrap();
    assert_eq!(r.rows.len(), 1);
    let row = &r.rows[0];
    assert_eq!((row.kb, row.reclen_kb), (1024, 64));
    let ops = task_ops(&r.ops, "iozone");
    // Locate each test's loop: runs of 16 data ops of the same kind.
    let mut loops = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        let k = ops[i].kind;
        if k == "read" || k == "write" {
            let mut j = i;
            while j < ops.len() && ops[j].kind == k {
                j += 1;
            }
            // A read loop follows the priming read of record 0.
            match j - i {
                16 => loops.push((i, j)),
                17 => loops.push((i + 1, j)),
                _ => {}
            }
            i = j;
        } else {
            i += 1;
        }
    }
    // write, rewrite, read, reread, random read, random write, bkwd ×2, record rewrite, stride.
    assert_eq!(loops.len(), 10, "{loops:?}");
    let cols = [
        Some(Column::Write),
        Some(Column::Rewrite),
        Some(Column::Read),
        Some(Column::Reread),
        Some(Column::RandomRead),
        Some(Column::RandomWrite),
        Some(Column::BkwdRead),
        None,
        Some(Column::RecordRewrite),
        Some(Column::StrideRead),
    ];
    for (&(a, b), col) in loops.iter().zip(cols) {
        // The op after each loop is the untimed fsync.
        assert_eq!(ops[b].kind, "fsync");
        assert_eq!(ops[b + 1].kind, "close");
        if let Some(col) = col {
            assert_eq!(row.get(col), Some(rate(&ops, a, b, 1024 * K)), "{col:?}");
        }
    }
    // Before the write and read loops: the untimed fsync (and the priming read for read).
    assert_eq!(ops[loops[0].0 - 1].kind, "fsync");
    assert_eq!((ops[loops[2].0 - 1].kind, ops[loops[2].0 - 1].offset), ("read", 0));
    assert_eq!(ops[loops[2].0 - 2].kind, "fsync");
    // The file is unlinked at the end.
    assert_eq!(ops.last().unwrap().kind, "truncate");
    let text = iozone::render(&r, &c.machine);
    assert!(text.contains("              kB  reclen    write  rewrite    read    reread"), "{text}");
    let line = text.lines().find(|l| l.trim_start().starts_with("1024")).unwrap();
    assert!(line.starts_with("            1024      64"), "{line}");
}

#[test]
fn selected_tests_only_and_blank_columns() {
    let mut c = cfg(256 * K, 64 * K);
    c.tests = vec![0, 2];
    let r = iozone::run(&spec("noop"), &c).unwrap();
    let row = &r.rows[0];
    assert!(row.get(Column::Write).is_some() && row.get(Column::RandomWrite).is_some());
    assert!(row.get(Column::Read).is_none() && row.get(Column::StrideRead).is_none());
    let ops = task_ops(&r.ops, "iozone");
    assert_eq!(ops.iter().filter(|o| o.kind == "read").count(), 4, "only the random read pass reads");
}

/// The header states the stride the run used (`-j`), as iozone prints it.
#[test]
fn the_header_names_the_stride() {
    let mut c = cfg(256 * K, 64 * K);
    c.tests = vec![0, 5];
    c.stride = 3;
    let r = iozone::run(&spec("noop"), &c).unwrap();
    let text = iozone::render(&r, &c.machine);
    assert!(text.contains("\tFile stride size set to 3 * record size.\n"), "{text}");
    assert!(r.command.contains(" -j 3"), "{}", r.command);
}

#[test]
fn auto_mode_runs_the_grid() {
    let mut c = IozoneConfig::auto(machine(1));
    c.sizes =
        Sizes::Auto { min_file: 64 * K, max_file: 256 * K, min_record: None, max_record: None, all_records: false };
    c.tests = vec![0, 1];
    let r = iozone::run(&spec("cfq"), &c).unwrap();
    let got: Vec<(u64, u64)> = r.rows.iter().map(|x| (x.kb, x.reclen_kb)).collect();
    assert_eq!(
        got,
        [
            (64, 4),
            (64, 8),
            (64, 16),
            (64, 32),
            (64, 64),
            (128, 4),
            (128, 8),
            (128, 16),
            (128, 32),
            (128, 64),
            (128, 128),
            (256, 4),
            (256, 8),
            (256, 16),
            (256, 32),
            (256, 64),
            (256, 128),
            (256, 256)
        ]
    );
}

#[test]
fn bad_options_are_refused() {
    let m = machine(1);
    let e = IozoneConfig::single(64 * K, 128 * K, m.clone()).validate().unwrap_err();
    assert!(e.contains("-r") && e.contains("larger than the file"), "{e}");
    assert!(IozoneConfig::single(0, 4 * K, m.clone()).validate().unwrap_err().contains("-s 0"));
    assert!(IozoneConfig::single(64 * K, 0, m.clone()).validate().unwrap_err().contains("-r 0"));
    assert!(IozoneConfig::single(64 * K, 1000, m.clone()).validate().unwrap_err().contains("KiB"));
    let mut c = IozoneConfig::single(64 * K, 4 * K, m.clone());
    c.tests = vec![0, 7];
    assert!(c.validate().unwrap_err().contains("-i 7"));
    c.tests = vec![1];
    assert!(c.validate().unwrap_err().contains("-i 0 is required"));
    let mut a = IozoneConfig::auto(m);
    a.sizes = Sizes::Auto {
        min_file: 4 * K,
        max_file: 64 * K,
        min_record: Some(8 * K),
        max_record: None,
        all_records: false,
    };
    assert!(a.validate().unwrap_err().contains("greater than the smallest file"));
}
