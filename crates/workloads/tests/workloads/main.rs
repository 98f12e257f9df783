//! Integration tests of the benchmark workloads: each tool's operation stream (sequence,
//! sizes, counts, what is timed) read back from the recorded operations, the report
//! arithmetic, the errors for bad options, and the A/B study.

mod aio_stress;
mod both_worlds;
mod compare;
mod fio;
mod iozone;
mod record;
mod sysbench;
mod tiobench;

use iosched_policies::SchedSpec;
use iosched_workloads::machine::Machine;
use iosched_workloads::oplog::OpRecord;

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

/// A disk too small for the simulated ext2 (one 128 MiB block group) is refused with its
/// size and the minimum, before any run; the smallest disk that holds a group is taken.
#[test]
fn a_disk_smaller_than_one_block_group_is_refused() {
    let dir = std::env::temp_dir().join(format!("iosched-small-disk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = iosched_disk::profile::builtin_source("null").unwrap();
    let write = |name: &str, capacity: &str| {
        let path = dir.join(name);
        std::fs::write(&path, src.replace("capacity = \"1TiB\"", &format!("capacity = \"{capacity}\""))).unwrap();
        path.to_str().unwrap().to_string()
    };
    let small = write("small.toml", "64MiB");
    let e = Machine::new(&small, 256 << 20, "piii-1000", 1).validate().unwrap_err();
    assert!(e.contains(&format!("disk {small}: 131072 sectors (64 MiB) is too small")), "{e}");
    assert!(e.contains("at least 262207 sectors"), "{e}");
    let e = Machine::new(&small, 256 << 20, "piii-1000", 1).check_fits(1 << 20, "1 MiB").unwrap_err();
    assert!(e.contains("too small for the simulated ext2"), "{e}");
    let just = write("just.toml", &format!("{}B", iosched_sim::fs::MIN_DEVICE_SECTORS * 512));
    Machine::new(&just, 256 << 20, "piii-1000", 1).validate().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}
