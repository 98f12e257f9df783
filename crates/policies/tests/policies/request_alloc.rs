//! The queue's request allocations (`request_alloc`): who gets a slot that frees up
//! while submitters sleep for one.

use iosched_core::{Admission, Dir, Event, Instant, Owner, Queue, QueueConfig, RequestAlloc, Status};
use iosched_policies::SchedSpec;

/// A noop queue with 16 read slots (2.5's batch_requests = 16/8 = 2) on a depth-1 device.
fn queue(spec: &str) -> Queue {
    let base = QueueConfig { nr_requests: 16, plugging: false, ..QueueConfig::default() };
    SchedSpec::parse(spec).unwrap().queue_on(base).unwrap()
}

/// Fill the read pool with one owner's requests far apart (no merging), then queue
/// `sleepers` more from other owners, which must wait.
fn fill(q: &mut Queue, sleepers: u64) -> u64 {
    let t = Instant::ZERO;
    let mut id = 0;
    for _ in 0..16 {
        id += 1;
        let rq = iosched_core::Request::read(id, id * 10_000, 8, Owner(1), t);
        assert_eq!(q.handle_arrival(t, rq), Admission::Queued);
    }
    for i in 0..sleepers {
        id += 1;
        let rq = iosched_core::Request::read(id, id * 10_000, 8, Owner(100 + i), t);
        assert_eq!(q.handle_arrival(t, rq), Admission::Wait);
    }
    assert_eq!(q.allocated(Dir::Read), 16);
    id
}

/// Complete the request on the device and report how many sleepers were admitted.
fn complete_one(q: &mut Queue, now: Instant) -> usize {
    let rq = q.poll_dispatch(now).expect("a request to dispatch");
    q.handle_completion(now, rq.id, Status::Ok);
    std::iter::from_fn(|| q.poll_event()).filter(|e| matches!(e, Event::Admitted { .. })).count()
}

#[test]
fn v2_5_leaves_a_freed_slot_to_a_running_task_until_batch_requests_are_free() {
    let mut q = queue("noop:request_alloc=2.5");
    assert_eq!(q.config().request_alloc, RequestAlloc::V2_5);
    let mut id = fill(&mut q, 3);
    let now = Instant::from_nanos(1_000_000);
    // One slot free (< batch_requests = 2): nobody is woken, so the slot is still free...
    assert_eq!(complete_one(&mut q, now), 0);
    assert_eq!(q.allocated(Dir::Read), 15);
    assert_eq!(q.waiting(Dir::Read), 3);
    // ...for a task that asks now, ahead of the three sleepers.
    id += 1;
    let rq = iosched_core::Request::read(id, id * 10_000, 8, Owner(50), now);
    assert_eq!(q.handle_arrival(now, rq), Admission::Queued);
    // Two completions in a row: the second leaves two slots free and wakes one sleeper.
    assert_eq!(complete_one(&mut q, now), 0);
    assert_eq!(complete_one(&mut q, now), 1);
    assert_eq!(q.waiting(Dir::Read), 2);
    assert_eq!(q.allocated(Dir::Read), 15);
}

#[test]
fn v2_6_20_hands_each_freed_slot_to_the_first_sleeper() {
    let mut q = queue("noop");
    assert_eq!(q.config().request_alloc, RequestAlloc::V2_6_20);
    let mut id = fill(&mut q, 3);
    let now = Instant::from_nanos(1_000_000);
    assert_eq!(complete_one(&mut q, now), 1);
    assert_eq!(q.allocated(Dir::Read), 16);
    assert_eq!(q.waiting(Dir::Read), 2);
    // A task that asks now (not the one that filled the pool and so became a batcher)
    // finds the pool full again and waits behind them.
    id += 1;
    let rq = iosched_core::Request::read(id, id * 10_000, 8, Owner(50), now);
    assert_eq!(q.handle_arrival(now, rq), Admission::Wait);
}

#[test]
fn request_alloc_names_its_choices() {
    let err = SchedSpec::parse("noop:request_alloc=2.3").unwrap().queue_on(QueueConfig::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("request_alloc") && ["2.6.20", "2.5", "2.4"].iter().all(|n| text.contains(n)), "{text}");
}

#[test]
fn v2_5_congestion_follows_free_slots() {
    // 128 slots: congested once fewer than 128/8 − 1 = 15 are free (114 allocated), clear
    // again at 128/8 + 1 = 17 free (111 allocated).
    let base = QueueConfig { plugging: false, ..QueueConfig::default() };
    let mut q = SchedSpec::parse("noop:request_alloc=2.5").unwrap().queue_on(base).unwrap();
    let t = Instant::ZERO;
    for id in 1..=114u64 {
        let rq = iosched_core::Request::write(id, id * 10_000, 8, Owner(1), t);
        assert_eq!(q.handle_arrival(t, rq), Admission::Queued);
        assert_eq!(q.is_congested(Dir::Write), id >= 114, "after {id} allocations");
    }
    let mut allocated = 114;
    while allocated > 110 {
        complete_one(&mut q, t);
        allocated -= 1;
        assert_eq!(q.allocated(Dir::Write), allocated);
        assert_eq!(q.is_congested(Dir::Write), allocated > 111, "at {allocated} allocated");
    }
}

#[test]
fn v2_5_lets_may_queue_refuse_with_slots_free() {
    // The 2003 CFQ refuses an owner holding more than its share ((16 − 8) / 1 busy queue)
    // although slots are free: under 2.5 the hook is consulted on every allocation.
    let mut q = queue("cfq-v1:request_alloc=2.5");
    let t = Instant::ZERO;
    let mut refused_at = None;
    for id in 1..=15u64 {
        let rq = iosched_core::Request::read(id, id * 10_000, 8, Owner(1), t);
        if q.handle_arrival(t, rq) == Admission::Wait {
            refused_at = Some(q.allocated(Dir::Read));
            break;
        }
    }
    let allocated = refused_at.expect("cfq-v1 refused none of 15 requests from one owner");
    assert!(allocated < 16, "refused only when the pool was full ({allocated} allocated)");
}

#[test]
fn every_release_below_the_threshold_reports_not_congested() {
    // blk_congestion_wait sleepers wake at the next request returned, congested or not:
    // both pools report "not congested" on each release below the release threshold.
    for spec in ["noop", "noop:request_alloc=2.5"] {
        let mut q = queue(spec);
        let t = Instant::ZERO;
        for id in 1..=3u64 {
            let rq = iosched_core::Request::write(id, id * 10_000, 8, Owner(1), t);
            assert_eq!(q.handle_arrival(t, rq), Admission::Queued);
        }
        while q.poll_event().is_some() {}
        assert!(!q.is_congested(Dir::Write));
        for _ in 0..3 {
            let rq = q.poll_dispatch(t).expect("a request to dispatch");
            q.handle_completion(t, rq.id, Status::Ok);
            let events: Vec<Event> = std::iter::from_fn(|| q.poll_event()).collect();
            assert!(
                events.iter().any(|e| matches!(e, Event::Congestion { dir: Dir::Write, congested: false })),
                "{spec}: no release report in {events:?}"
            );
        }
    }
}

#[test]
fn v2_4_wakes_a_sleeper_only_when_a_quarter_of_the_pool_is_free_and_reports_no_congestion() {
    let mut q = queue("noop:request_alloc=2.4");
    assert_eq!(q.config().request_alloc, RequestAlloc::V2_4);
    fill(&mut q, 3);
    let now = Instant::from_nanos(1_000_000);
    // 2.4's batch_requests: a quarter of both directions' 2 × 16 slots = 8 free.
    for _ in 0..7 {
        assert_eq!(complete_one(&mut q, now), 0);
    }
    assert_eq!(q.waiting(Dir::Read), 3);
    assert_eq!(q.allocated(Dir::Read), 9);
    assert_eq!(complete_one(&mut q, now), 1, "the eighth free slot wakes one sleeper");
    assert_eq!(q.waiting(Dir::Read), 2);
    // The pool ran full and drained without a congestion report: 2.4 has none.
    let mut q = queue("noop:request_alloc=2.4");
    fill(&mut q, 1);
    assert!(std::iter::from_fn(|| q.poll_event()).all(|e| !matches!(e, Event::Congestion { .. })));
}
