//! Measure how late the runtime acts on the scheduler's idle deadlines. Two readers think
//! 1 ms after three reads out of four and 20 ms after the fourth: their mean think time
//! stays below the idle window, so AS (`antic_expire` 6 ms) and CFQ (`slice_idle` 8 ms)
//! keep idling for them, and every long think lets the window expire — a timer wake-up.
//!
//!     cargo run --release -p iosched-rt --example wakeups -- /tmp/iosched-wakeups.img [reads]

use iosched_policies::SchedSpec;
use iosched_rt::{IoBuf, Options, Target};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "/tmp/iosched-wakeups.img".into());
    let reads: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(300);
    println!("{:<10} {:>8} {:>9} {:>9} {:>9}   (timer lateness, microseconds)", "sched", "timers", "p50", "p99", "max");
    for spec in ["as", "cfq"] {
        let mut opts = Options::new(SchedSpec::parse(spec)?);
        opts.size = Some(16 << 20);
        let target = Target::open(&path, opts)?;
        std::thread::scope(|s| {
            for i in 0..2u64 {
                let h = target.handle();
                s.spawn(move || {
                    let mut b = IoBuf::new(4096);
                    for k in 0..reads {
                        h.read(i * (8 << 20) + k * 4096, &mut b).expect("read");
                        let think = if k % 4 == 3 { 20 } else { 1 };
                        std::thread::sleep(Duration::from_millis(think));
                    }
                });
            }
        });
        let r = target.close()?;
        let l = &r.timer_lateness;
        println!("{:<10} {:>8} {:>9.1} {:>9.1} {:>9.1}", spec, l.count, l.p50_us, l.p99_us, l.max_us);
        let s = &r.sleep_lateness;
        println!(
            "{:<10} {:>8} {:>9.1} {:>9.1} {:>9.1}   (of those, wake-ups from a sleep)",
            "", s.count, s.p50_us, s.p99_us, s.max_us
        );
    }
    Ok(())
}
