//! tiobench: what tiotest 0.3.3 counts and times.

use super::{machine, spec};
use iosched_workloads::tiobench::{self, Phase, TiobenchConfig};

/// Every phase counts exactly its read/write calls: `size / block` for the sequential
/// phases, `random` for the random ones — not the open that precedes the first call,
/// whose time (the thread waiting for the CPU after the barrier) would otherwise count as
/// one more, slow, data call.
#[test]
fn each_phase_counts_only_its_data_calls() {
    let cfg = TiobenchConfig { size: 8 << 20, block: 4096, random: 40, drop_caches: false, machine: machine(1) };
    let phases = tiobench::run(&spec("deadline"), 4, &cfg).unwrap();
    let calls = |p: Phase| phases.iter().find(|r| r.phase == Some(p)).unwrap().calls;
    assert_eq!(calls(Phase::SeqWrite), 2048);
    assert_eq!(calls(Phase::SeqRead), 2048);
    assert_eq!(calls(Phase::RandWrite), 40);
    assert_eq!(calls(Phase::RandRead), 40);
}

/// The 2.5 request pool keeps AS's lead when the readers want more requests than there
/// are slots (32 readers, 32 slots, two requests per 255-sector-limited window); 2.6.20's
/// pool hands each freed slot to a sleeping reader, so the one AS anticipates sleeps too
/// and the lead is gone (issue #4, claim 1 at 128 threads).
#[test]
fn as_keeps_its_sequential_lead_with_a_crowded_pool_only_under_2_5() {
    let m = iosched_workloads::machine::Machine::new("ide-2003", 64 << 20, "piii-1000", 1);
    let cfg = TiobenchConfig { size: 128 << 20, block: 4096, random: 64, drop_caches: true, machine: m };
    let seq_read = |s: &str| {
        let phases = tiobench::run(&spec(s), 32, &cfg).unwrap();
        phases.iter().find(|r| r.phase == Some(Phase::SeqRead)).unwrap().rate_mb_s()
    };
    let lead = |pool: &str| {
        seq_read(&format!("as:nr_requests=32,request_alloc={pool}"))
            / seq_read(&format!("deadline:nr_requests=32,request_alloc={pool}"))
    };
    let (v25, v2620) = (lead("2.5"), lead("2.6.20"));
    assert!(v25 >= 1.5, "AS / deadline under the 2.5 pool: {v25:.2}");
    assert!(v2620 < 1.2, "AS / deadline under the 2.6.20 pool: {v2620:.2}");
}

/// A file set larger than the simulated disk's filesystem is refused up front, with the
/// sizes named — not a panic half-way through the write phase.
#[test]
fn a_file_set_larger_than_the_disk_is_an_error() {
    let m = iosched_workloads::machine::Machine::new("ide-2003", 256 << 20, "piii-1000", 1);
    let cfg = TiobenchConfig { size: 40 << 30, block: 4096, random: 10, drop_caches: false, machine: m };
    let e = tiobench::run_matrix(&[spec("deadline")], &[1], &cfg, &|_, _| {}).unwrap_err().to_string();
    assert!(e.contains("--size 40960 MiB does not fit on disk ide-2003"), "{e}");
}

/// On a uniprocessor the threads' CPU time cannot add up to more than the wall clock,
/// even with hundreds of threads switching on a disk that never makes them wait long
/// (a context switch once counted as CPU time without occupying the CPU: 160 % here).
#[test]
fn cpu_time_never_exceeds_the_wall_clock_on_a_uniprocessor() {
    let m = iosched_workloads::machine::Machine::new("null", 256 << 20, "piii-1000", 1);
    let cfg = TiobenchConfig { size: 300 << 20, block: 4096, random: 300, drop_caches: false, machine: m };
    for r in tiobench::run(&spec("noop"), 300, &cfg).unwrap() {
        assert!(r.cpu_pct() <= 100.0 + 1e-9, "{:?}: CPU {:.1} %", r.phase, r.cpu_pct());
        assert!(r.cpu_pct() > 50.0, "{:?}: CPU {:.1} %: the null disk should leave the CPU busy", r.phase, r.cpu_pct());
    }
}

/// Issue #4, claim 4, and the two mechanisms behind it, on a quarter-size 2003 machine
/// (32 threads, 128 MiB of files, 64 MiB): random `write()` calls wait — hundreds of
/// milliseconds at worst — only with 128 request slots (kswapd and the writers themselves write back the dirty
/// pages reclaim meets and sleep for a slot behind the other threads' fsyncs), and with
/// 8192 slots never, as long as the indirect blocks are still cached, which the pages
/// programs keep using see to; with none in use, AS-8192's writes read them back.
#[test]
fn random_writes_wait_for_request_slots_only_with_128_and_need_the_indirect_blocks_cached() {
    let rand_write = |s: &str, mapped: Option<u64>| {
        let m = iosched_workloads::machine::Machine::new("ide-2003", 64 << 20, "piii-1000", 1).with_mapped(mapped);
        let cfg = TiobenchConfig { size: 128 << 20, block: 4096, random: 4000, drop_caches: false, machine: m };
        let phases = tiobench::run(&spec(s), 32, &cfg).unwrap();
        let r = phases.into_iter().find(|r| r.phase == Some(Phase::RandWrite)).unwrap();
        (r.avg_lat_ms(), r.lat_max_ms)
    };
    let (a8, a8_max) = rand_write("as:nr_requests=8192", None);
    let (dl, dl_max) = rand_write("deadline", None);
    let (as_, as_max) = rand_write("as", None);
    assert!(a8_max < 1.0, "AS-8192: a write() waited {a8_max} ms");
    assert!(dl > 10.0 * a8 && as_ > 10.0 * a8, "average ms: AS-8192 {a8}, deadline {dl}, AS {as_}");
    assert!(dl_max > 100.0 && as_max > 100.0, "longest ms: deadline {dl_max}, AS {as_max}");
    let (a8_none, a8_none_max) = rand_write("as:nr_requests=8192", Some(0));
    assert!(a8_none > 10.0 * a8 && a8_none_max > 10.0, "AS-8192, nothing in use: {a8_none} ms, at most {a8_none_max}");
}

/// A run a limit stops is a typed error a caller can match: the simulated-time limit and
/// the interrupt flag each name themselves, and a bad configuration is `Invalid`.
#[test]
fn stopped_runs_say_why_in_their_error() {
    use iosched_sim::Ended;
    use iosched_workloads::error::Error;
    use iosched_workloads::machine::Limits;
    let limited = |limits: Limits| TiobenchConfig {
        size: 64 << 20,
        block: 4096,
        random: 100,
        drop_caches: false,
        machine: machine(1).with_limits(limits),
    };
    let short = Limits { max_sim_time: Some(std::time::Duration::from_millis(500)), ..Limits::default() };
    match tiobench::run(&spec("deadline"), 2, &limited(short)) {
        Err(Error::Stopped { why: Ended::SimTimeLimit, message }) => {
            assert!(message.contains("--max-sim-time"), "{message}")
        }
        other => panic!("expected a stop at the time limit, got {other:?}"),
    }
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let e = tiobench::run(&spec("deadline"), 2, &limited(Limits { interrupt: Some(flag), ..Limits::default() }))
        .unwrap_err();
    assert!(e.is_interrupted(), "{e:?}");
    let e = tiobench::run(&spec("deadline:nope=1"), 2, &limited(Limits::default())).unwrap_err();
    assert!(matches!(e, Error::Invalid(ref m) if m.contains("nope")), "{e:?}");
}
