//! The `iosched-sstf` binary: SSTF is a scheduler like a built-in one in every command.

use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_iosched-sstf")).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "iosched-sstf {args:?}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn schedulers_lists_sstf_with_its_tunable() {
    let s = run(&["schedulers", "sstf"]);
    assert!(s.contains("sstf") && s.contains("fifo_expire"), "{s}");
}

#[test]
fn scenario_runs_sstf() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/sstf_starves.scn");
    assert!(run(&["scenario", f]).contains("-> dispatch far @40ms"));
}

#[test]
fn tiobench_runs_sstf_beside_deadline() {
    let s =
        run(&["tiobench", "--sched", "sstf,deadline", "--threads", "2", "--size", "16M", "--random", "200", "--json"]);
    let rows: Vec<serde_json::Value> = s.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for sched in ["sstf", "deadline"] {
        let n = rows.iter().filter(|r| r["scheduler"] == sched && r["rate_mb_s"].as_f64().unwrap() > 0.0).count();
        assert_eq!(n, 4, "{sched}: four phases with a rate: {s}");
    }
}

#[test]
fn compare_runs_sstf_against_deadline() {
    let s = run(&["compare", "--a", "deadline", "--b", "sstf", "--bench", "tiobench", "--runs", "2", "--json"]);
    assert!(s.lines().count() > 0 && s.contains("\"bench\""), "{s}");
}

#[test]
fn real_runs_sstf_on_a_file() {
    let dir = std::env::temp_dir().join(format!("iosched-sstf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("target");
    let t = target.to_str().unwrap();
    // The thread-pool engine, so that the test runs where io_uring is disabled too.
    let s = run(&[
        "real",
        "fio-like",
        "--sched",
        "sstf",
        "--target",
        t,
        "--size",
        "4M",
        "--rw",
        "randwrite",
        "--runtime",
        "300ms",
        "--backend",
        "threads",
        "--json",
    ]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(s.contains("\"sstf\""), "{s}");
}
