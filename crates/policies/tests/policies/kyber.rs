//! Kyber's feedback loop, driven through the queue: reads whose device latency misses
//! their 2 ms target mark the device congested, so the write domain — meeting its own
//! (here 1 s) target — is throttled window after window down to one token; with reads
//! on target nothing is throttled.

use iosched_core::{Instant, Owner, Request, Status};
use iosched_policies::SchedSpec;
use std::time::Duration;

fn state(q: &iosched_core::Queue, key: &str) -> u32 {
    let st = q.scheduler().debug_state();
    st.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no {key} in {st:?}")).1.parse().unwrap()
}

/// A closed load for `secs`: 16 readers and 16 writers each keep one request outstanding;
/// the device (depth 32) serves reads in `read_ms` and writes in 1 ms, in parallel.
/// Returns the write depth at the end and the most writes seen on the device at once in
/// the last second.
fn run(read_ms: u64, secs: u64) -> (u32, u32, usize) {
    let spec = SchedSpec::parse("kyber:plugging=0,queue_depth=32,write_lat_nsec=1000000000,nr_requests=1024").unwrap();
    let mut q = spec.queue().unwrap();
    let mut now = Instant::ZERO;
    let mut next_id = 1u64;
    // (completion time, id, owner index)
    let mut device: Vec<(Instant, u64, u64)> = Vec::new();
    let mut owner_of = std::collections::HashMap::new();
    let mut max_writes_late = 0;
    let submit = |q: &mut iosched_core::Queue,
                  now: Instant,
                  id: &mut u64,
                  o: u64,
                  map: &mut std::collections::HashMap<u64, u64>| {
        let sector = (*id * 7919 % 100_000) * 64;
        let rq = if o < 16 {
            Request::read(*id, sector, 8, Owner(o + 1), now)
        } else {
            Request::write(*id, sector, 8, Owner(o + 1), now)
        };
        map.insert(*id, o);
        *id += 1;
        q.handle_arrival(now, rq);
    };
    for o in 0..32 {
        submit(&mut q, now, &mut next_id, o, &mut owner_of);
    }
    let end = Instant::from_secs(secs);
    while now < end {
        while let Some(rq) = q.poll_dispatch(now) {
            let o = owner_of[&rq.id];
            let ms = if o < 16 { read_ms } else { 1 };
            device.push((now + Duration::from_millis(ms), rq.id, o));
        }
        while q.poll_event().is_some() {}
        if now + Duration::from_secs(1) >= end {
            let writes = device.iter().filter(|d| d.2 >= 16).count();
            max_writes_late = max_writes_late.max(writes);
        }
        // Next event: a completion or a timer.
        let next_done = device.iter().map(|d| d.0).min();
        let next_timer = q.poll_timeout();
        let t = match (next_done, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).expect("something pending"),
        };
        now = now.max(t);
        if next_timer.is_some_and(|x| x <= now) {
            q.handle_timeout(now);
        }
        let (done, rest): (Vec<_>, Vec<_>) = device.into_iter().partition(|d| d.0 <= now);
        device = rest;
        for (_, id, o) in done {
            q.handle_completion(now, id, Status::Ok);
            submit(&mut q, now, &mut next_id, o, &mut owner_of);
        }
    }
    (state(&q, "write_depth"), state(&q, "read_depth"), max_writes_late)
}

#[test]
fn congestion_throttles_the_domain_meeting_its_target() {
    let (write_depth, read_depth, writes_on_device) = run(5, 4);
    assert_eq!(read_depth, 256, "reads miss their target: never throttled");
    assert_eq!(write_depth, 1, "writes were not throttled down under congestion");
    assert!(writes_on_device <= 1, "{writes_on_device} writes on the device with one token");
}

#[test]
fn without_congestion_nothing_is_throttled() {
    let (write_depth, read_depth, writes_on_device) = run(1, 4);
    assert_eq!((write_depth, read_depth), (128, 256));
    assert!(writes_on_device >= 8, "only {writes_on_device} writes on the device at once");
}

/// 70 discards at once: DISCARD's 64 tokens go, six requests wait.
fn discards_out_of_tokens() -> String {
    let mut s = String::from("sched kyber:plugging=0,queue_depth=128\nat 0ms\n");
    for i in 1..=70 {
        s += &format!("arrive d{i} discard {}+8 owner=1\n", i * 1000);
    }
    s += "expect dispatch";
    for i in 1..=64 {
        s += &format!(" d{i}");
    }
    s += "\nexpect none\n";
    s
}

/// A domain out of tokens waits on its token bitmap's wait queue, which every
/// `wake_batch`-th freed token wakes (8 at DISCARD's depth of 64): seven completions run
/// nothing, the eighth runs the queue and the waiting requests get the freed tokens.
#[test]
fn a_domain_out_of_tokens_is_woken_by_a_wake_batch_of_frees() {
    let mut s = discards_out_of_tokens();
    s += "at 1ms\n";
    for i in 1..=7 {
        s += &format!("complete d{i}\nexpect none\n");
    }
    s += "complete d8\nexpect dispatch d65 d66 d67 d68 d69 d70\n";
    iosched_policies::scenario::run(&s).unwrap_or_else(|e| panic!("{e}"));
}

/// Before a wake batch is freed, blk-mq's re-run of a queue whose scheduler gave nothing
/// (3 ms after that run) finds the token one completion freed.
#[test]
fn a_domain_out_of_tokens_gets_a_freed_token_at_blk_mqs_rerun() {
    let mut s = discards_out_of_tokens();
    s += "expect timeout 3ms\nat 1ms\ncomplete d1\nexpect none\nat 3ms\ntimeout\nexpect dispatch d65\n";
    iosched_policies::scenario::run(&s).unwrap_or_else(|e| panic!("{e}"));
}
