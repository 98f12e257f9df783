//! Profiling aid for the per_request bench: the same steady state (10,000 queued), with the
//! time of each phase (arrival, completion, dispatch including timers) measured separately.
//! `cargo run --release -p iosched-policies --example prbreak -- [SCHED] [OWNERS] [STEPS]`
#[path = "../benches/common/mod.rs"]
mod common;

use std::time::{Duration, Instant as WallClock};

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("cfq".into());
    let owners: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(10000);
    let n: u32 = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(300_000);
    let mut s = common::State::new(&sched, owners, 10_000);
    s.timeouts = 0;
    let (mut ta, mut tc, mut tp) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        s.advance();
        let w = WallClock::now();
        s.arrive();
        let w2 = WallClock::now();
        s.complete();
        let w3 = WallClock::now();
        s.pump();
        let w4 = WallClock::now();
        ta += w2 - w;
        tc += w3 - w2;
        tp += w4 - w3;
    }
    let per = |d: Duration| d.as_nanos() as f64 / n as f64;
    println!(
        "{sched}/{owners}: arrive {:.0} ns, complete {:.0} ns, dispatch {:.0} ns; timeouts per request {:.2}",
        per(ta),
        per(tc),
        per(tp),
        s.timeouts as f64 / n as f64
    );
}
