//! The framework's invariants as property tests, for any policy.
//!
//! - [`invariants`]: random arrivals, completions, timer firings, owner exits and drains,
//!   at both device depths and small and large request pools, must keep every invariant:
//!   every submitted unit completes exactly once and every request is issued once; the
//!   device never holds more than `queue_depth` requests; after `handle_timeout(now)` the
//!   next timeout is never at or before `now`; a spurious `handle_timeout` changes
//!   nothing; `drain` leaves the policy empty; once arrivals stop, everything completes.
//! - [`steady_load`]: under a steady closed load no request waits longer than the
//!   policy's [`WaitBound`], and everything completes once arrivals stop.
//!
//! Both run proptest's runner; `PROPTEST_RNG_SEED` fixes the cases drawn, and a failure
//! is returned as the shrunk case with its message.

use iosched_core::{Admission, Event, Instant, IoPrio, Op, Owner, Queue, Request, Status};
use iosched_policies::{SchedSpec, WaitBound};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestError, TestRunner};
use std::collections::{HashMap, HashSet};

/// One step of the random input the invariant property draws.
#[derive(Clone, Debug)]
pub enum Step {
    Arrive { owner: u8, read: bool, sync: bool, sector: u16, len: u8, prio: u8 },
    Complete(u8),
    Advance(u8),
    Exit(u8),
    Spurious,
    Drain,
}

/// The strategy for one step: arrivals most often, then completions, time passing, owner
/// exits, spurious timer calls and drains.
pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u8..6, any::<bool>(), any::<bool>(), any::<u16>(), 1u8..32, 0u8..20)
            .prop_map(|(owner, read, sync, sector, len, prio)| Step::Arrive { owner, read, sync, sector, len, prio }),
        4 => any::<u8>().prop_map(Step::Complete),
        3 => (1u8..40).prop_map(Step::Advance),
        1 => (0u8..6).prop_map(Step::Exit),
        1 => Just(Step::Spurious),
        1 => Just(Step::Drain),
    ]
}

/// A queue driven by hand under a policy, checking the framework's invariants after every
/// input: each request issued once, each unit completed once, never more than the depth on
/// the device.
#[derive(Debug)]
pub struct Harness {
    pub q: Queue,
    pub now: Instant,
    pub depth: u32,
    pub next_id: u64,
    /// Owner slot → current owner id (an exited owner is replaced by a fresh one).
    pub owners: [u64; 6],
    pub next_owner: u64,
    pub in_flight: Vec<u64>,
    pub issued: HashSet<u64>,
    pub completed: HashSet<u64>,
    pub submitted: HashMap<u64, Instant>,
    pub dispatched_at: HashMap<u64, Instant>,
}

impl Harness {
    /// A queue under `spec` with this device depth and request pool.
    pub fn new(spec: &SchedSpec, depth: u32, nr: u32) -> Result<Self, String> {
        let spec =
            spec.clone().with_setting("queue_depth", &depth.to_string()).with_setting("nr_requests", &nr.to_string());
        Ok(Harness {
            q: spec.queue().map_err(|e| format!("{spec}: {e}"))?,
            now: Instant::ZERO,
            depth,
            next_id: 1,
            owners: [1, 2, 3, 4, 5, 6],
            next_owner: 7,
            in_flight: Vec::new(),
            issued: HashSet::new(),
            completed: HashSet::new(),
            submitted: HashMap::new(),
            dispatched_at: HashMap::new(),
        })
    }

    pub fn drive(&mut self) -> Result<(), TestCaseError> {
        while let Some(rq) = self.q.poll_dispatch(self.now) {
            prop_assert!(self.issued.insert(rq.id), "request {} issued twice", rq.id);
            self.in_flight.push(rq.id);
            prop_assert!(self.in_flight.len() as u32 <= self.depth, "more than depth in flight");
            prop_assert_eq!(self.q.in_flight() as usize, self.in_flight.len());
            for seg in self.q.segments(rq.id) {
                self.dispatched_at.insert(seg.id, self.now);
            }
        }
        while let Some(ev) = self.q.poll_event() {
            if let Event::Completed { id, .. } = ev {
                prop_assert!(self.completed.insert(id), "unit {} completed twice", id);
                prop_assert!(self.submitted.contains_key(&id), "completion of unknown unit {}", id);
            }
        }
        Ok(())
    }

    pub fn fire_timers_until(&mut self, to: Instant) -> Result<(), TestCaseError> {
        let mut guard = 0;
        while let Some(t) = self.q.poll_timeout() {
            if t > to {
                break;
            }
            self.now = self.now.max(t);
            self.q.handle_timeout(self.now);
            self.drive()?;
            if let Some(next) = self.q.poll_timeout() {
                prop_assert!(next > self.now, "timeout {next} not after now {} after handle_timeout", self.now);
            }
            guard += 1;
            prop_assert!(guard < 10_000, "timer storm");
        }
        self.now = self.now.max(to);
        Ok(())
    }

    pub fn apply(&mut self, s: &Step) -> Result<(), TestCaseError> {
        match *s {
            Step::Arrive { owner, read, sync, sector, len, prio } => {
                let id = self.next_id;
                self.next_id += 1;
                let o = Owner(self.owners[owner as usize]);
                // Sectors in a small range so merges, aliases and close requests happen.
                let sector = (sector as u64 % 512) * 8;
                let mut rq = if read {
                    Request::read(id, sector, len as u32, o, self.now)
                } else {
                    Request::write(id, sector, len as u32, o, self.now).with_sync(sync)
                };
                rq.prio = match prio {
                    0 => IoPrio::rt(2),
                    1 => IoPrio::idle(),
                    2..=5 => IoPrio::be(prio - 2),
                    _ => IoPrio::NONE,
                };
                if prio == 19 {
                    rq.op = Op::Flush;
                    rq.len_sectors = 0;
                }
                self.submitted.insert(id, self.now);
                let _adm: Admission = self.q.handle_arrival(self.now, rq);
                self.drive()?;
            }
            Step::Complete(i) => {
                if !self.in_flight.is_empty() {
                    let id = self.in_flight.remove(i as usize % self.in_flight.len());
                    self.q.handle_completion(self.now, id, Status::Ok);
                    self.drive()?;
                }
            }
            Step::Advance(ms) => {
                let to = self.now + std::time::Duration::from_millis(ms as u64);
                self.fire_timers_until(to)?;
            }
            Step::Exit(slot) => {
                let o = self.owners[slot as usize];
                self.q.handle_owner_exit(self.now, Owner(o));
                self.owners[slot as usize] = self.next_owner;
                self.next_owner += 1;
                self.drive()?;
            }
            Step::Spurious => {
                let due = self.q.poll_timeout().is_some_and(|t| t <= self.now);
                if !due {
                    let before = self.q.scheduler().debug_state();
                    self.q.handle_timeout(self.now);
                    let after = self.q.scheduler().debug_state();
                    prop_assert_eq!(before, after, "spurious handle_timeout changed state");
                    self.drive()?;
                }
            }
            Step::Drain => {
                self.q.drain(self.now);
                prop_assert!(self.q.scheduler().is_empty());
                prop_assert_eq!(self.q.scheduler().queued(), 0);
                self.drive()?;
            }
        }
        Ok(())
    }

    /// Stop arrivals; complete everything the device holds, firing timers as needed.
    pub fn finish(&mut self) -> Result<(), TestCaseError> {
        let mut rounds = 0;
        while self.completed.len() < self.submitted.len() {
            rounds += 1;
            prop_assert!(
                rounds < 100_000,
                "requests never completed: {} of {}",
                self.completed.len(),
                self.submitted.len()
            );
            if let Some(id) = self.in_flight.first().copied() {
                self.in_flight.remove(0);
                self.now += std::time::Duration::from_millis(1);
                self.q.handle_completion(self.now, id, Status::Ok);
                self.drive()?;
            } else if let Some(t) = self.q.poll_timeout() {
                self.fire_timers_until(t)?;
            } else {
                prop_assert!(
                    false,
                    "stuck: nothing in flight, no timer, {} units unfinished",
                    self.submitted.len() - self.completed.len()
                );
            }
        }
        prop_assert!(self.q.is_idle());
        Ok(())
    }
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

fn report<T: std::fmt::Debug>(spec: &SchedSpec, what: &str, r: Result<(), TestError<T>>) -> Result<(), String> {
    r.map_err(|e| match e {
        TestError::Fail(why, case) => format!("{spec}: {what}: {why}; minimal failing input: {case:?}"),
        TestError::Abort(why) => format!("{spec}: {what}: aborted: {why}"),
    })
}

/// Run `cases` random input sequences (1–250 steps) through a queue under `spec` at
/// device depths 1 and 4 and pools of 4 and 128 requests, checking every invariant.
pub fn invariants(spec: &SchedSpec, cases: u32) -> Result<(), String> {
    Harness::new(spec, 1, 4)?; // the spec builds
    let strategy = (
        prop_oneof![Just(1u32), Just(4u32)],
        prop_oneof![Just(4u32), Just(128u32)],
        prop::collection::vec(step(), 1..250),
    );
    let r = runner(cases).run(&strategy, |(depth, nr, steps)| {
        let mut h = Harness::new(spec, depth, nr).map_err(TestCaseError::fail)?;
        for s in &steps {
            h.apply(s)?;
        }
        h.finish()
    });
    report(spec, "invariants", r)
}

/// A steady closed load: six processes keep up to four requests each outstanding (4 KiB
/// at random sectors, two reads to one write); the device completes the oldest request
/// 2–10 ms after it started. For 20 simulated seconds no request may wait longer than
/// `bound` (a [`WaitBound::None`] runs the load with only the harness's checks), then
/// arrivals stop and everything must complete. `seeds` are load seeds run first (cases
/// that once failed), then `cases` random ones.
pub fn steady_load(spec: &SchedSpec, bound: WaitBound, seeds: &[u64], cases: u32) -> Result<(), String> {
    for &seed in seeds {
        report(
            spec,
            &format!("steady load, seed {seed}"),
            steady_case(spec, bound, seed).map_err(|e| TestError::Fail(e.to_string().into(), seed)),
        )?;
    }
    let r = runner(cases).run(&any::<u64>(), |seed| steady_case(spec, bound, seed));
    report(spec, "steady load", r)
}

fn steady_case(spec: &SchedSpec, bound: WaitBound, seed: u64) -> Result<(), TestCaseError> {
    let name = &spec.text;
    let (bound, head_based) = match bound {
        WaitBound::Ms(ms) => (Some(ms), false),
        WaitBound::HeadMs(ms) => (Some(ms), true),
        WaitBound::None { .. } => (None, false),
    };
    let mut h = Harness::new(spec, 1, 128).map_err(TestCaseError::fail)?;
    let mut rng = seed | 1;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut outstanding: HashMap<u64, u64> = HashMap::new(); // id → owner slot
    let mut per_owner = [0u32; 6];
    // A bound at the head of the FIFO (AS's): a request's wait is counted from when it
    // became the oldest waiting request of its direction (reads are sync, writes async
    // here), i.e. from its arrival or the dispatch of the previous oldest, whichever is
    // later.
    let mut is_read: HashMap<u64, bool> = HashMap::new();
    let mut head: [Option<(u64, Instant)>; 2] = [None, None];
    let end = Instant::from_secs(20);
    while h.now < end {
        for slot in 0..6u8 {
            while per_owner[slot as usize] < 4 {
                let read = next() % 3 != 0;
                let id = h.next_id;
                is_read.insert(id, read);
                h.apply(&Step::Arrive {
                    owner: slot,
                    read,
                    sync: false,
                    sector: (next() % 65536) as u16,
                    len: 8,
                    prio: 6,
                })?;
                outstanding.insert(id, slot as u64);
                per_owner[slot as usize] += 1;
            }
        }
        // Service: the oldest in-flight request completes after 2..10 ms.
        let service = 2 + next() % 9;
        let to = h.now + std::time::Duration::from_millis(service);
        h.fire_timers_until(to)?;
        if !h.in_flight.is_empty() {
            h.apply(&Step::Complete(0))?;
        }
        let done: Vec<u64> = outstanding.keys().copied().filter(|id| h.completed.contains(id)).collect();
        for id in done {
            let slot = outstanding.remove(&id).unwrap();
            per_owner[slot as usize] -= 1;
        }
        let Some(bound) = bound else { continue };
        if head_based {
            for (d, read) in [(0, true), (1, false)] {
                let oldest = h
                    .submitted
                    .keys()
                    .copied()
                    .filter(|id| is_read[id] == read && !h.dispatched_at.contains_key(id))
                    .min();
                let Some(id) = oldest else {
                    head[d] = None;
                    continue;
                };
                if head[d].map(|(hid, _)| hid) != Some(id) {
                    let prev_out = head[d].and_then(|(hid, _)| h.dispatched_at.get(&hid).copied());
                    let since = prev_out.map_or(h.submitted[&id], |t| t.max(h.submitted[&id]));
                    head[d] = Some((id, since));
                }
                let (id, since) = head[d].unwrap();
                let waited = h.now.saturating_duration_since(since).as_millis() as u64;
                prop_assert!(
                    waited <= bound,
                    "{}: request {} waited {} ms at the head > bound {} ms",
                    name,
                    id,
                    waited,
                    bound
                );
            }
        } else {
            for (&id, &t) in &h.submitted {
                if !h.dispatched_at.contains_key(&id) {
                    let waited = h.now.saturating_duration_since(t).as_millis() as u64;
                    prop_assert!(waited <= bound, "{}: request {} waited {} ms > bound {} ms", name, id, waited, bound);
                }
            }
        }
    }
    // Arrivals stop: everything completes, with or without a bound.
    h.finish()?;
    Ok(())
}
