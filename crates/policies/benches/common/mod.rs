//! The steady state the `per_request` bench measures, shared with the `prbreak` example
//! (`#[path]`-included there), which times its phases separately.
//!
//! One step is one request's life: a new read arrives, the request in flight completes, the
//! next one is dispatched (timers are fired when due, so AS and CFQ idling is part of the
//! work). Random 4 KiB-aligned reads over 64 GiB, so nothing merges; the owner of request
//! `id` is `id mod owners`; `nr_requests` = 1 048 576, no plugging, depth 1.

// The bench uses `step`, the example the phases; neither uses all of it.
#![allow(dead_code)]

use iosched_core::{Instant, Owner, Queue, Request, Status};
use iosched_policies::SchedSpec;

pub struct State {
    pub q: Queue,
    pub now: Instant,
    next_id: u64,
    owners: u64,
    rng: u64,
    pub in_flight: Option<u64>,
    /// Policy timers fired so far.
    pub timeouts: u64,
}

impl State {
    /// `queued` requests queued and the first one dispatched.
    pub fn new(sched: &str, owners: u64, queued: u64) -> Self {
        let spec =
            SchedSpec::parse(sched).unwrap().with_setting("nr_requests", "1048576").with_setting("plugging", "0");
        let mut s = State {
            q: spec.queue().unwrap(),
            now: Instant::ZERO,
            next_id: 1,
            owners,
            rng: 0x9e3779b97f4a7c15,
            in_flight: None,
            timeouts: 0,
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

    pub fn arrive(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let owner = Owner(id % self.owners);
        let sector = (self.rand() % (1 << 24)) * 8;
        self.q.handle_arrival(self.now, Request::read(id, sector, 8, owner, self.now));
    }

    pub fn complete(&mut self) {
        if let Some(id) = self.in_flight.take() {
            self.q.handle_completion(self.now, id, Status::Ok);
        }
    }

    /// Dispatch the next request, firing policy timers while the policy holds back.
    pub fn pump(&mut self) {
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

    /// 100 µs later, one request's life.
    pub fn advance(&mut self) {
        self.now += iosched_core::Duration::from_micros(100);
    }

    pub fn step(&mut self) {
        self.advance();
        self.arrive();
        self.complete();
        self.pump();
    }
}
