//! Cost per request (insert + dispatch + complete, through the Queue framework) for every
//! policy, with 1, 100 and 10,000 owners and 10,000 requests queued (group `per_request`),
//! and with 100 owners and 100 to 100,000 requests queued (group `queue_length`), to show
//! how the cost grows with each.
//!
//! Each iteration is one request's life in steady state: a new read arrives, the request
//! in flight completes, the next one is dispatched (timers are fired when due, so AS and
//! CFQ idling is part of the measured work). Run with `cargo bench -p iosched-policies`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use iosched_core::{Instant, Owner, Queue, Request, Status};
use iosched_policies::SchedSpec;
use std::hint::black_box;
use std::time::Duration;

struct State {
    q: Queue,
    now: Instant,
    next_id: u64,
    owners: u64,
    rng: u64,
    in_flight: Option<u64>,
}

impl State {
    fn new(sched: &str, owners: u64, queued: u64) -> Self {
        let spec =
            SchedSpec::parse(sched).unwrap().with_setting("nr_requests", "1048576").with_setting("plugging", "0");
        let mut s = State {
            q: spec.queue().unwrap(),
            now: Instant::ZERO,
            next_id: 1,
            owners,
            rng: 0x9e3779b97f4a7c15,
            in_flight: None,
        };
        for _ in 0..queued {
            s.arrive();
        }
        s.pump();
        s
    }

    fn rand(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn arrive(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let owner = Owner(id % self.owners);
        // Random 4 KiB-aligned reads over 64 GiB: no merges.
        let sector = (self.rand() % (1 << 24)) * 8;
        self.q.handle_arrival(self.now, Request::read(id, sector, 8, owner, self.now));
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
                    self.q.handle_timeout(self.now);
                }
                None => break,
            }
        }
        while self.q.poll_event().is_some() {}
    }

    fn step(&mut self) {
        self.now += Duration::from_micros(100);
        self.arrive();
        if let Some(id) = self.in_flight.take() {
            self.q.handle_completion(self.now, id, Status::Ok);
        }
        self.pump();
    }
}

const SCHEDULERS: [&str; 5] = ["noop", "deadline", "as", "cfq", "cfq-v1"];

fn per_request(c: &mut Criterion) {
    let mut g = c.benchmark_group("per_request");
    g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for sched in SCHEDULERS {
        for owners in [1u64, 100, 10_000] {
            let mut st = State::new(sched, owners, 10_000);
            g.bench_with_input(BenchmarkId::new(sched, owners), &owners, |b, _| {
                b.iter(|| {
                    st.step();
                    black_box(st.in_flight)
                })
            });
        }
    }
    g.finish();
}

fn queue_length(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue_length");
    g.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2)).sample_size(20);
    for sched in SCHEDULERS {
        for queued in [100u64, 1_000, 10_000, 100_000] {
            let mut st = State::new(sched, 100, queued);
            g.bench_with_input(BenchmarkId::new(sched, queued), &queued, |b, _| {
                b.iter(|| {
                    st.step();
                    black_box(st.in_flight)
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, per_request, queue_length);
criterion_main!(benches);
