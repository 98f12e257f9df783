//! The library API in one page: open a target with a scheduler spec, one handle per
//! thread (each is an owner for AS/CFQ), blocking reads/writes/fsync, a non-blocking
//! submission with a completion callback, close and read the report.
//!
//!     cargo run --release -p iosched-rt --example basic -- /tmp/iosched-example.img as

use iosched_core::Op;
use iosched_policies::SchedSpec;
use iosched_rt::{IoBuf, Options, Target};
use std::sync::mpsc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "/tmp/iosched-example.img".into());
    let spec = args.next().unwrap_or_else(|| "as".into());

    let mut opts = Options::new(SchedSpec::parse(&spec)?);
    opts.size = Some(16 << 20); // create a 16 MiB target if the file does not exist
    opts.verify = true; // stamp and check every 4 KiB block
    let target = Target::open(&path, opts)?;
    println!("{:?}", target.info());

    // Two threads, two owners: each writes then reads back its own MiB.
    std::thread::scope(|s| {
        for i in 0..2u64 {
            let h = target.handle();
            s.spawn(move || {
                let mut buf = IoBuf::new(64 << 10);
                for k in 0..16u64 {
                    buf[100] = k as u8; // payload; the first 32 bytes of each block hold the header
                    h.write(i * (1 << 20) + k * buf.len() as u64, &mut buf).expect("write");
                }
                h.fsync().expect("fsync");
                for k in 0..16u64 {
                    h.read(i * (1 << 20) + k * buf.len() as u64, &mut buf).expect("read");
                    assert_eq!(buf[100], k as u8);
                }
            });
        }
    });

    // Non-blocking: the callback runs on the dispatcher thread when the read completes.
    let h = target.handle();
    let (tx, rx) = mpsc::channel();
    h.submit(Op::Read, 0, IoBuf::new(4096), move |c| {
        let _ = tx.send(c.result);
    })?;
    println!("callback read: {:?}", rx.recv()?);
    drop(h);

    let report = target.close()?;
    println!(
        "{} requests ({} dispatched after merging), verify {:?}, timer lateness p99 {:.1} us",
        report.requests, report.dispatched, report.verify, report.timer_lateness.p99_us
    );
    Ok(())
}
