//! Store targets (`Target::open_store`): the queue sees places on a virtual disk, each
//! unit's data goes to its own file. What `iosched-mount` stands on.

use crate::common::*;
use iosched_core::Op;
use iosched_rt::{BackendChoice, Completion, IoBuf, IoError, Place, Target};
use std::fs::{File, OpenOptions};
use std::sync::Arc;
use std::sync::mpsc::channel;

fn rw(path: &std::path::Path) -> Arc<File> {
    Arc::new(OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).unwrap())
}

fn store_units(backend: BackendChoice) {
    let dir = TempDir::new(&format!("store-{backend:?}"));
    let (a, b) = (rw(&dir.path("a")), rw(&dir.path("b")));
    std::fs::write(dir.path("c"), [7u8; 100]).unwrap();
    let c = Arc::new(File::open(dir.path("c")).unwrap());
    let mut o = options("noop");
    o.backend = backend;
    o.record = true;
    let t = Target::open_store(dir.path("store"), 1 << 20, o).unwrap();
    let mut h = t.handle();
    let (tx, rx) = channel::<(&'static str, Completion)>();
    let done = |what: &'static str| {
        let tx = tx.clone();
        move |c: Completion| tx.send((what, c)).unwrap()
    };
    // Two units adjacent on the virtual disk (sectors 0..8 and 8..16) but in two files,
    // one unaligned: one request to the device, each unit's bytes to its own place.
    h.set_unplug(false);
    let mut ba = IoBuf::new(4096);
    ba.fill(b'A');
    let mut bb = IoBuf::new(3000);
    bb.fill(b'B');
    h.submit_placed(Op::Write, 0, 8, Place { file: Arc::clone(&a), offset: 0 }, ba, done("a")).unwrap();
    h.submit_placed(Op::Write, 8, 8, Place { file: Arc::clone(&b), offset: 10 }, bb, done("b")).unwrap();
    h.unplug();
    for _ in 0..2 {
        let (what, c) = rx.recv().unwrap();
        assert_eq!(c.result, Ok(if what == "a" { 4096 } else { 3000 }), "{what}");
    }
    // A read that meets the end of its file moves what there is, without an error.
    h.set_unplug(true);
    h.submit_placed(Op::Read, 16, 8, Place { file: Arc::clone(&c), offset: 0 }, IoBuf::new(4096), done("c")).unwrap();
    let (_, got) = rx.recv().unwrap();
    assert_eq!(got.result, Ok(100));
    assert!(got.buf.unwrap()[..100].iter().all(|&x| x == 7));
    h.submit_placed(Op::Flush, 0, 0, Place { file: Arc::clone(&b), offset: 0 }, IoBuf::new(0), done("f")).unwrap();
    assert_eq!(rx.recv().unwrap().1.result, Ok(0));
    // Out of the store, or data larger than its sectors: refused at once.
    let e = h.submit_placed(
        Op::Read,
        (1 << 20) / 512,
        1,
        Place { file: Arc::clone(&c), offset: 0 },
        IoBuf::new(512),
        done("x"),
    );
    assert!(matches!(e, Err(IoError::Invalid(_))), "{e:?}");
    let e = h.submit_placed(Op::Read, 0, 1, Place { file: Arc::clone(&c), offset: 0 }, IoBuf::new(513), done("x"));
    assert!(matches!(e, Err(IoError::Invalid(_))), "{e:?}");
    drop(h);
    let rep = t.close().unwrap();
    assert_eq!(std::fs::read(dir.path("a")).unwrap(), vec![b'A'; 4096]);
    let mut want_b = vec![0u8; 10];
    want_b.extend(vec![b'B'; 3000]);
    assert_eq!(std::fs::read(dir.path("b")).unwrap(), want_b);
    assert_eq!((rep.requests, rep.merged), (4, 1), "the two writes merged into one request");
    assert_eq!(rep.dispatched, 3);
    assert!(rep.errors.is_empty(), "{:?}", rep.errors);
    let trace = rep.trace.unwrap().to_text();
    assert!(trace.contains(" A 1 write 0+8 "), "{trace}");
    assert!(trace.contains(" A 2 write 8+8 "), "{trace}");
}

pub fn a_store_target_puts_each_unit_at_its_place() {
    store_units(BackendChoice::IoUring);
}

pub fn a_store_target_works_on_the_thread_pool_too() {
    store_units(BackendChoice::Threads);
}

pub fn a_store_target_refuses_verify_and_plain_submissions() {
    let dir = TempDir::new("store-refusals");
    let mut o = options("noop");
    o.verify = true;
    assert!(Target::open_store(dir.path("s"), 1 << 20, o).unwrap_err().to_string().contains("--verify"));
    let t = Target::open_store(dir.path("s"), 1 << 20, options("noop")).unwrap();
    let h = t.handle();
    // A plain submission has no place to go: the store has no file of its own.
    for op in [Op::Read, Op::Write, Op::Flush] {
        let e = h.submit(op, 0, IoBuf::new(4096), |_| {});
        assert!(matches!(&e, Err(IoError::Invalid(m)) if m.contains("submit_placed")), "{op:?}: {e:?}");
    }
    assert!(h.fsync().is_err());
    assert!(h.read(0, &mut IoBuf::new(4096)).is_err());
    drop(h);
    t.close().unwrap();
}
