//! The test kit on SSTF: the framework's invariants, the waiting bound it declares (none
//! for pure SSTF — the golden scenario shows the starvation — and one with fifo_expire),
//! and its golden scenarios.

use std::path::PathBuf;

fn golden() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

// Registration is global to the process: every test here registers once.
fn registered() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| iosched_policies::register(iosched_example_sstf::POLICY).unwrap());
}

#[test]
fn sstf_passes_the_kit() {
    registered();
    iosched_testkit::check_policy(&iosched_example_sstf::POLICY, &golden(), &[]).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn sstf_golden_scenarios() {
    registered();
    iosched_testkit::golden::assert_dir(&golden());
}
