//! Profiling aid for the per_request bench: the same steady state, with the time of each
//! phase (arrival, completion, dispatch including timers) measured separately.
//! `cargo run --release -p iosched-policies --example prbreak -- cfq 10000`
use iosched_core::{Instant, Owner, Queue, Request, Status};
use iosched_policies::SchedSpec;
use std::time::{Duration, Instant as WallClock};

struct St {
    q: Queue,
    now: Instant,
    next_id: u64,
    owners: u64,
    rng: u64,
    in_flight: Option<u64>,
    timeouts: u64,
}

impl St {
    fn arrive(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let sector = (self.rng % (1 << 24)) * 8;
        self.q.handle_arrival(self.now, Request::read(id, sector, 8, Owner(id % self.owners), self.now));
    }
    fn pump(&mut self) {
        while self.in_flight.is_none() {
            if let Some(rq) = self.q.poll_dispatch(self.now) {
                self.in_flight = Some(rq.id);
                break;
            }
            match self.q.poll_timeout() {
                Some(t) => {
                    self.now = self.now.max(t);
                    self.timeouts += 1;
                    self.q.handle_timeout(self.now);
                }
                None => break,
            }
        }
        while self.q.poll_event().is_some() {}
    }
}

fn main() {
    let sched = std::env::args().nth(1).unwrap_or("cfq".into());
    let owners: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(10000);
    let spec = SchedSpec::parse(&sched).unwrap().with_setting("nr_requests", "1048576").with_setting("plugging", "0");
    let mut s = St {
        q: spec.queue().unwrap(),
        now: Instant::ZERO,
        next_id: 1,
        owners,
        rng: 0x9e3779b97f4a7c15,
        in_flight: None,
        timeouts: 0,
    };
    for _ in 0..10_000 {
        s.arrive();
    }
    s.pump();
    let n: u32 = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(300_000);
    s.timeouts = 0;
    let (mut ta, mut tc, mut tp) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for _ in 0..n {
        s.now += iosched_core::Duration::from_micros(100);
        let w = WallClock::now();
        s.arrive();
        let w2 = WallClock::now();
        if let Some(id) = s.in_flight.take() {
            s.q.handle_completion(s.now, id, Status::Ok);
        }
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
