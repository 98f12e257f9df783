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
