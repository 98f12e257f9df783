//! The test kit (`iosched-testkit`) on every built-in policy and each of its variants: the
//! framework's invariants under random inputs, the waiting bound each policy declares
//! under a steady load, and, for a policy without a bound, the golden scenario it names.
//! The list is the registry's: a new policy is checked as soon as it is registered.

use std::path::PathBuf;

/// Steady-load seeds that once failed, with the configuration they failed on.
const STEADY_SEEDS: &[(&str, u64)] =
    &[("deadline", 223403), ("anticipatory", 10186601348504939398), ("bfq:low_latency=0", 13714552705712441058)];

#[test]
fn the_kit_passes_on_every_builtin_policy() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let failures: Vec<String> = iosched_policies::SCHEDULERS
        .iter()
        .filter_map(|p| iosched_testkit::check_policy(p, &golden, STEADY_SEEDS).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The kit fails a policy whose declared bound is broken, and one whose unbounded case
/// names a scenario of another policy: its checks can fail.
#[test]
fn the_kit_fails_a_wrong_bound() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut p = iosched_policies::deadline::POLICY;
    p.waiting_bound = |_| iosched_policies::WaitBound::Ms(20);
    let e = iosched_testkit::check_policy(&p, &golden, &[]).unwrap_err();
    assert!(e.contains("> bound 20 ms"), "{e}");
    p.waiting_bound = |_| iosched_policies::WaitBound::None { scenario: "cfq_slice.scn" };
    let e = iosched_testkit::check_policy(&p, &golden, &[]).unwrap_err();
    assert!(e.contains("runs another policy"), "{e}");
}
