//! BFQ through the queue: closed-loop readers on a toy rotating disk (a request costs
//! 0.5 ms per 64 KiB, plus 8 ms when it does not start where the last one ended), one
//! request outstanding per reader, no think time.

use iosched_core::{Instant, IoPrio, Owner, Request, Status};
use iosched_policies::SchedSpec;
use std::time::Duration;

struct Reader {
    owner: Owner,
    prio: IoPrio,
    /// When it issues its first request.
    start: Instant,
    /// Sectors done inside the window of `run_from`.
    sectors_in_window: u64,
    /// Next sector of its sequential stream.
    pos: u64,
    sectors_done: u64,
    requests_done: u64,
}

/// Run `readers` (one I/O priority each) for `secs` simulated seconds under `spec`;
/// returns the readers and how often the device switched from one reader to another.
fn run(spec: &str, prios: &[IoPrio], secs: u64) -> (Vec<Reader>, u64) {
    let starts: Vec<(IoPrio, u64)> = prios.iter().map(|&p| (p, 0)).collect();
    run_from(spec, &starts, secs, (0, 0))
}

/// The same with a start time (s) per reader, counting the sectors completed inside
/// `window` (ms from, ms to) separately.
fn run_from(spec: &str, readers: &[(IoPrio, u64)], secs: u64, window: (u64, u64)) -> (Vec<Reader>, u64) {
    run_changing(spec, readers, secs, window, None, None)
}

/// The same, and reader `change.0` takes I/O priority `change.2` for its requests from
/// `change.1` ms on (its process called `ioprio_set`).
fn run_changing(
    spec: &str,
    readers: &[(IoPrio, u64)],
    secs: u64,
    window: (u64, u64),
    change: Option<(usize, u64, IoPrio)>,
    final_state: Option<&mut Vec<(String, String)>>,
) -> (Vec<Reader>, u64) {
    let mut q = SchedSpec::parse(spec).unwrap().queue().unwrap();
    let mut readers: Vec<Reader> = readers
        .iter()
        .enumerate()
        .map(|(i, &(prio, start))| Reader {
            owner: Owner(i as u64 + 1),
            prio,
            start: Instant::from_secs(start),
            sectors_in_window: 0,
            pos: i as u64 * 50_000_000,
            sectors_done: 0,
            requests_done: 0,
        })
        .collect();
    let window = (Instant::from_millis(window.0), Instant::from_millis(window.1));
    let len = 128u32; // 64 KiB
    let mut next_id = 1u64;
    let mut owner_of = std::collections::HashMap::new();
    let mut now = Instant::ZERO;
    let submit = |q: &mut iosched_core::Queue,
                  r: &mut Reader,
                  id: &mut u64,
                  now: Instant,
                  map: &mut std::collections::HashMap<u64, usize>,
                  i: usize| {
        let mut rq = Request::read(*id, r.pos, len, r.owner, now);
        rq.prio = r.prio;
        r.pos += len as u64;
        map.insert(*id, i);
        *id += 1;
        q.handle_arrival(now, rq);
    };
    let mut started = vec![false; readers.len()];
    let mut head = u64::MAX;
    let mut busy: Option<(Instant, u64, usize)> = None;
    let mut last_reader = usize::MAX;
    let mut switches = 0;
    let end = Instant::from_secs(secs);
    while now < end {
        if let Some((i, at, prio)) = change
            && now >= Instant::from_millis(at)
        {
            readers[i].prio = prio;
        }
        for (i, r) in readers.iter_mut().enumerate() {
            if !started[i] && r.start <= now {
                started[i] = true;
                submit(&mut q, r, &mut next_id, now, &mut owner_of, i);
            }
        }
        if busy.is_none()
            && let Some(rq) = q.poll_dispatch(now)
        {
            let i = owner_of[&rq.id];
            if i != last_reader {
                switches += 1;
                last_reader = i;
            }
            let mut t = Duration::from_micros(500 * rq.len_sectors as u64 / 128);
            if rq.sector != head {
                t += Duration::from_millis(8);
            }
            head = rq.end();
            busy = Some((now + t, rq.id, i));
        }
        while q.poll_event().is_some() {}
        let next_start = readers.iter().zip(&started).filter(|(_, s)| !**s).map(|(r, _)| r.start).min();
        let next = [busy.map(|b| b.0), q.poll_timeout(), next_start]
            .into_iter()
            .flatten()
            .min()
            .expect("a completion, a timer or a start is pending");
        now = now.max(next);
        if q.poll_timeout().is_some_and(|t| t <= now) {
            q.handle_timeout(now);
        }
        if let Some((t, id, i)) = busy
            && t <= now
        {
            busy = None;
            q.handle_completion(now, id, Status::Ok);
            let r = &mut readers[i];
            r.sectors_done += len as u64;
            if now >= window.0 && now < window.1 {
                r.sectors_in_window += len as u64;
            }
            r.requests_done += 1;
            submit(&mut q, r, &mut next_id, now, &mut owner_of, i);
        }
    }
    if let Some(out) = final_state {
        *out = q.scheduler().debug_state();
    }
    (readers, switches)
}

/// Backlogged sequential readers share the disk in proportion to their weights,
/// `(8 − level) × 10`: be/0, be/4 and be/7 get 80 : 40 : 10.
#[test]
fn service_follows_the_ioprio_weights() {
    // Without weight raising: the be/4 reader (the default weight) would be raised for
    // its first seconds as a new, interactive-looking queue.
    let (r, _) = run("bfq:low_latency=0", &[IoPrio::be(0), IoPrio::be(4), IoPrio::be(7)], 30);
    let total: u64 = r.iter().map(|r| r.sectors_done).sum();
    for (reader, weight) in r.iter().zip([80.0, 40.0, 10.0]) {
        let share = reader.sectors_done as f64 / total as f64;
        let want = weight / 130.0;
        assert!((share - want).abs() < 0.1 * want, "{}: share {share:.3}, want {want:.3}", reader.prio);
    }
}

/// A process that changes its I/O priority (`ioprio_set`) moves its sync queue to the
/// new weight, and to the new class, at the queue's next (re)queueing
/// (`bfq_check_ioprio_change`): two be/4 readers share evenly until one becomes be/7
/// (then 40 : 10), or idle (then it is served only once per `BFQ_CL_IDLE_TIMEOUT`, 200 ms,
/// while the best-effort reader is backlogged).
#[test]
fn a_priority_change_reaches_the_sync_queue() {
    let two = [(IoPrio::be(4), 0), (IoPrio::be(4), 0)];
    let share = |r: &[Reader]| r[0].sectors_in_window as f64 / (r[0].sectors_in_window + r[1].sectors_in_window) as f64;
    let (before, _) =
        run_changing("bfq:low_latency=0", &two, 10, (2_000, 10_000), Some((1, 10_000, IoPrio::be(7))), None);
    assert!((share(&before) - 0.5).abs() < 0.05, "before: {:.3}", share(&before));
    let (after, _) =
        run_changing("bfq:low_latency=0", &two, 20, (12_000, 20_000), Some((1, 10_000, IoPrio::be(7))), None);
    assert!((share(&after) - 0.8).abs() < 0.05, "after be/7: {:.3}", share(&after));
    let mut st = Vec::new();
    let (idle, _) =
        run_changing("bfq:low_latency=0", &two, 20, (12_000, 20_000), Some((1, 10_000, IoPrio::idle())), Some(&mut st));
    assert!(share(&idle) > 0.95, "after idle: {:.3}", share(&idle));
    // The moved queue is counted busy in the IDLE class, and the BE tree's weight sum
    // holds the other reader's 40 alone.
    let get = |k: &str| st.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(get("busy_queues"), "[0, 1, 1]");
    assert_eq!(get("wsum_be"), "40");
}

/// Idling keeps a sequential reader on the disk for its whole budget, so the device
/// switches readers once per slot; noop alternates at almost every request, and with
/// `slice_idle=0` BFQ does not wait for an emptied queue either.
#[test]
fn idling_keeps_sequential_readers_on_the_disk() {
    // Without weight raising: two new readers are both raised, and raised queues give up
    // throughput idling (see the next test).
    let two = [IoPrio::NONE, IoPrio::NONE];
    let (bfq, bfq_sw) = run("bfq:low_latency=0", &two, 10);
    let (noop, noop_sw) = run("noop", &two, 10);
    let (off, off_sw) = run("bfq:low_latency=0,slice_idle=0", &two, 10);
    let reqs = |r: &[Reader]| r.iter().map(|r| r.requests_done).sum::<u64>();
    assert!(bfq_sw * 20 < reqs(&bfq), "bfq switched {bfq_sw} times in {} requests", reqs(&bfq));
    assert!(noop_sw * 2 > reqs(&noop), "noop switched {noop_sw} times in {} requests", reqs(&noop));
    assert!(reqs(&bfq) > 3 * reqs(&noop), "bfq {} vs noop {} requests", reqs(&bfq), reqs(&noop));
    assert!(off_sw * 2 > reqs(&off), "slice_idle=0 switched {off_sw} times in {} requests", reqs(&off));
    // Equal weights: an equal share either way.
    for r in [&bfq, &off] {
        let (a, b) = (r[0].sectors_done as f64, r[1].sectors_done as f64);
        assert!((a / b - 1.0).abs() < 0.1, "shares {a} vs {b}");
    }
}

/// The IDLE class is served only when nothing else is busy — except that it gets one
/// request every 200 ms (`BFQ_CL_IDLE_TIMEOUT`), so it cannot starve.
#[test]
fn idle_class_gets_one_request_per_200_ms() {
    let (r, _) = run("bfq", &[IoPrio::be(4), IoPrio::idle()], 10);
    let idle = r[1].requests_done;
    assert!((40..=55).contains(&idle), "idle class served {idle} requests in 10 s");
    assert!(r[0].requests_done > 20 * idle);
}

/// Weight raising: a reader that starts while another has been streaming for 15 s is a
/// new queue, hence interactive, and is raised to 30 times the weight: it gets nearly all
/// of the disk at first, where without raising the two share it equally. Interactive
/// raising ends after 120 000 sectors (~59 MiB, 0.5 s on this fast toy disk), and the
/// shares are even again. The long-running reader's own raising ended long before.
#[test]
fn a_new_reader_is_raised_until_120000_sectors() {
    let readers = [(IoPrio::NONE, 0), (IoPrio::NONE, 15)];
    let share = |spec: &str, window: (u64, u64)| {
        let (r, _) = run_from(spec, &readers, 20, window);
        r[1].sectors_in_window as f64 / (r[0].sectors_in_window + r[1].sectors_in_window) as f64
    };
    let first = share("bfq", (15_000, 15_300));
    assert!(first > 0.85, "raised: the new reader got {first:.3} of its first 300 ms");
    let later = share("bfq", (17_000, 20_000));
    assert!((0.4..0.6).contains(&later), "raising over: the new reader got {later:.3} of 17-20 s");
    let plain = share("bfq:low_latency=0", (15_000, 15_300));
    assert!((0.3..0.7).contains(&plain), "no raising: the new reader got {plain:.3} of its first 300 ms");
}
