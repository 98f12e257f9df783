//! Simulated runs keep the queue-input trace the real runtime's `--record` writes, and a
//! fresh queue built from its `# sched` line alone makes the same dispatches: the policies
//! decided from their inputs, whichever driver fed them (DESIGN.md, "Proof that both
//! drivers run the same code").

use super::{machine, spec};
use iosched_core::trace::Trace;
use iosched_core::{Dequeue, QueueConfig, RequestAlloc};
use iosched_policies::SchedSpec;
use iosched_workloads::aio_stress::{self, AioStressConfig};
use iosched_workloads::iozone::{self, IozoneConfig};
use iosched_workloads::machine::Machine;
use iosched_workloads::readmany::{self, Background, ReadmanyConfig};
use iosched_workloads::sysbench::{self, SysbenchConfig, TestMode};
use iosched_workloads::tiobench::{self, TiobenchConfig};

/// Replay `t` (through its text form, as `iosched replay` reads a file) with `sched`, or
/// with its own `# sched` line.
fn replay(t: &Trace, sched: Option<&str>) -> Result<usize, String> {
    let t = Trace::parse(&t.to_text()).map_err(|e| e.to_string())?;
    let own = t.meta.iter().find(|(k, _)| k == "sched").map(|(_, v)| v.clone()).expect("# sched line");
    let mut q = SchedSpec::parse(sched.unwrap_or(&own)).unwrap().queue().unwrap();
    iosched_core::replay::replay(&t.records, &mut q).map_err(|e| e.to_string())
}

#[test]
fn simulated_tiobench_runs_replay_through_a_fresh_queue() {
    let m = Machine::new("ide-2003", 64 << 20, "piii-1000", 1);
    let cfg = TiobenchConfig { size: 16 << 20, block: 4096, random: 200, drop_caches: false, machine: m };
    for s in ["deadline", "as:nr_requests=8192", "cfq", "cfq-v1", "bfq", "kyber", "mq-deadline"] {
        let (_, t) = tiobench::run_recorded(&spec(s), 4, &cfg).unwrap();
        let n = replay(&t, None).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(n > 200, "{s}: {n} dispatches");
    }
    // The check can fail: the same inputs under another policy dispatch differently.
    let (_, t) = tiobench::run_recorded(&spec("deadline"), 4, &cfg).unwrap();
    assert!(
        replay(
            &t,
            Some("noop:queue_depth=1,request_alloc=2.5,rotational=1,dequeue=completion,kick_unplug=0,max_sectors=255")
        )
        .is_err()
    );
}

/// The read-many run: timers (AS anticipation, CFQ idling), a full pool with writers
/// waiting, reads promoted past a write stream.
#[test]
fn simulated_readmany_runs_replay_through_a_fresh_queue() {
    for s in ["as", "cfq", "cfq-v1", "deadline"] {
        let mut cfg =
            ReadmanyConfig::new(Machine::new("ide-2003-fast", 256 << 20, "p4-ht", 1), Background::StreamWrite);
        cfg.tree_scale = 0.02;
        cfg.warmup = iosched_core::Duration::from_secs(3);
        cfg.record_trace = true;
        let r = readmany::run(&spec(s), &cfg).unwrap();
        let t = r.queue_trace.expect("recorded");
        let n = replay(&t, None).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(n > 500, "{s}: {n} dispatches");
    }
}

/// The 2007 tools on the NCQ disk (32 commands in flight): sync and async buffered I/O
/// with fsyncs, O_DIRECT and AIO.
#[test]
fn simulated_sysbench_iozone_and_aio_stress_runs_replay() {
    for s in ["cfq", "as", "bfq", "mq-deadline"] {
        let mut c = SysbenchConfig::new(TestMode::RndRw, machine(3));
        (c.file_num, c.file_total_size, c.time, c.events, c.record_trace) = (4, 8 << 20, None, 400, true);
        let t = sysbench::run(&spec(s), &c).unwrap().queue_trace.expect("recorded");
        let n = replay(&t, None).unwrap_or_else(|e| panic!("sysbench {s}: {e}"));
        assert!(n > 200, "sysbench {s}: {n} dispatches");

        let mut c = IozoneConfig::single(4 << 20, 64 << 10, machine(5));
        c.record_trace = true;
        let t = iozone::run(&spec(s), &c).unwrap().queue_trace.expect("recorded");
        let n = replay(&t, None).unwrap_or_else(|e| panic!("iozone {s}: {e}"));
        assert!(n > 50, "iozone {s}: {n} dispatches");

        let mut c = AioStressConfig::new(machine(2));
        (c.file_size, c.depth, c.io_iter, c.direct, c.record_trace) = (4 << 20, 8, 3, true, true);
        let t = aio_stress::run(&spec(s), &c).unwrap().queue_trace.expect("recorded");
        let n = replay(&t, None).unwrap_or_else(|e| panic!("aio-stress {s}: {e}"));
        assert!(n > 50, "aio-stress {s}: {n} dispatches");
    }
}

/// A device deeper than 1024 commands (a profile may declare up to 65,535): its machine
/// still builds the queue, and the recording replays.
#[test]
fn a_deep_device_queue_is_a_valid_setting() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/nvme-ssd.toml")).unwrap();
    let deep = text.replace("queue_depth = 1024", "queue_depth = 4096");
    assert_ne!(deep, text, "the profile's queue_depth line");
    let path = std::env::temp_dir().join(format!("iosched-deep-{}.toml", std::process::id()));
    std::fs::write(&path, deep).unwrap();
    let m = Machine::new(path.to_str().unwrap(), 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    assert_eq!(m.queue(&spec("noop")).unwrap().config().depth, 4096);
    let mut c = AioStressConfig::new(m);
    (c.file_size, c.depth, c.io_iter, c.direct, c.record_trace) = (4 << 20, 64, 3, true, true);
    let t = aio_stress::run(&spec("noop"), &c).unwrap().queue_trace.expect("recorded");
    std::fs::remove_file(&path).unwrap();
    replay(&t, None).unwrap();
}

/// The effective spec carries what the machine's driver sets, and the spec's own
/// settings win over it, as sysfs writes do after the driver.
#[test]
fn the_effective_spec_is_the_runs_queue() {
    let ide = Machine::new("ide-2003", 256 << 20, "piii-1000", 1);
    let ncq = ide.clone().with_host("linux-2.6");
    let ncq = Machine { disk: "sata-2004-ncq".into(), ..ncq };
    let nvme = Machine { disk: "nvme-ssd".into(), ..ncq.clone() };
    let cfg = |m: &Machine, s: &str| -> QueueConfig {
        let eff = m.effective_spec(&spec(s)).unwrap();
        let c = eff.queue().unwrap().config().clone();
        assert_eq!(&c, m.queue(&spec(s)).unwrap().config(), "{s}: the run's queue is the effective spec's");
        c
    };
    let c = cfg(&ide, "as");
    assert_eq!((c.depth, c.request_alloc, c.rotational, c.max_sectors), (1, RequestAlloc::V2_5, true, 255));
    // The IDE disk's driver dequeues at completion; 2.5.64's kicks leave a plug alone.
    assert_eq!((c.dequeue, c.kick_unplug), (Dequeue::Completion, false));
    assert_eq!(
        ide.effective_spec(&spec("as")).unwrap().text,
        "as:queue_depth=1,request_alloc=2.5,rotational=1,dequeue=completion,kick_unplug=0,max_sectors=255"
    );
    assert_eq!(cfg(&ide, "deadline:max_sectors_kb=64").max_sectors, 128);
    assert_eq!(cfg(&ide, "deadline:request_alloc=2.6.20").request_alloc, RequestAlloc::V2_6_20);
    let c = cfg(&ncq, "cfq");
    assert_eq!((c.depth, c.request_alloc, c.rotational), (32, RequestAlloc::V2_6_20, true));
    // libata SATA on 2.6.20: dequeued at issue, blk_start_queueing unplugs.
    assert_eq!((c.dequeue, c.kick_unplug), (Dequeue::Issue, true));
    assert_eq!(cfg(&ncq, "cfq:queue_depth=1").depth, 1);
    assert!(!cfg(&nvme, "bfq").rotational);
    assert!(cfg(&nvme, "bfq:rotational=1").rotational);
    // The 2.4 host's IDE driver builds requests of at most 128 sectors (ide-probe.c's
    // default), below the disk's 255, and a spec cannot go past it.
    let v24 = ide.clone().with_host("linux-2.4");
    let c = cfg(&v24, "linus");
    assert_eq!((c.max_sectors, c.nr_requests, c.request_alloc), (128, 64, RequestAlloc::V2_4));
    assert_eq!(cfg(&v24, "linus:max_sectors=64").max_sectors, 64);
    let Err(e) = v24.queue(&spec("linus:max_sectors=255")) else {
        panic!("max_sectors=255 over the driver's limit was taken")
    };
    assert!(e.contains("exceeds the linux-2.4 host's IDE driver limit of 128 sectors"), "{e}");
}
