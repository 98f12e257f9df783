//! Integration tests of the benchmark workloads: each tool's operation stream (sequence,
//! sizes, counts, what is timed) read back from the recorded operations, the report
//! arithmetic, the errors for bad options, and the A/B study.

mod aio_stress;
mod compare;
mod iozone;
mod sysbench;
mod tiobench;

use iosched_policies::SchedSpec;
use iosched_workloads::compare::OpRecord;
use iosched_workloads::machine::Machine;

/// A small 2007-like machine: the NCQ SATA disk, the 2.6 host, 64 MiB.
pub fn machine(seed: u64) -> Machine {
    Machine::new("sata-2004-ncq", 64 << 20, "p4-ht", seed).with_host("linux-2.6")
}

pub fn spec(s: &str) -> SchedSpec {
    SchedSpec::parse(s).unwrap()
}

/// The operations of one task, without the barrier waits and the exit.
pub fn task_ops<'a>(ops: &'a [OpRecord], task: &str) -> Vec<&'a OpRecord> {
    ops.iter().filter(|o| o.task == task && o.kind != "wait-counter" && o.kind != "exit").collect()
}

/// The file name of a recorded operation.
pub fn file(o: &OpRecord) -> &str {
    o.file.as_deref().unwrap_or("")
}

/// The host profile picks the queue's request pool; a spec may still override it.
#[test]
fn host_profile_sets_the_request_pool() {
    use iosched_core::RequestAlloc;
    let m25 = Machine::new("ide-2003", 256 << 20, "piii-1000", 1);
    let m26 = m25.clone().with_host("linux-2.6");
    let pool = |m: &Machine, s: &str| m.queue(&spec(s)).unwrap().config().request_alloc;
    assert_eq!(pool(&m25, "deadline"), RequestAlloc::V2_5);
    assert_eq!(pool(&m26, "deadline"), RequestAlloc::V2_6_20);
    assert_eq!(pool(&m25, "cfq:request_alloc=2.6.20"), RequestAlloc::V2_6_20);
    assert_eq!(pool(&m26, "as:request_alloc=2.5"), RequestAlloc::V2_5);
}
