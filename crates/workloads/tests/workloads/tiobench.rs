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
