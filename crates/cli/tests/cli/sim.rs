//! `iosched repro`, `tiobench`, `readmany`, `disk`.

use super::{TempPath, iosched, stderr, stdout};

/// Our average random-write latency (ms) of the repro row `label` at `n` threads.
fn rand_write_lat(repro: &serde_json::Value, label: &str, n: u64) -> f64 {
    repro["tiobench"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label && r["ours"]["phase"] == "rand_write" && r["ours"]["threads"] == n)
        .unwrap()["ours"]["avg_lat_ms"]
        .as_f64()
        .unwrap()
}

/// Claims 1 and 6 judged again from the report's own data, so that their verdicts are
/// checked against what the seed says whichever way they come out: claim 1's platter half
/// on what the device read (not tiobench's rate, part of which the cache served), claim
/// 6's order under the streaming write (the seed's deadline, 7 m 27 s, before its first
/// CFQ, 9 m 55 s). Returns (claim 1's platter half holds, claim 6's order holds).
fn recheck_claims_1_and_6(v: &serde_json::Value) -> (bool, bool) {
    let claims = v["claims"].as_array().unwrap();
    let claim = |id: u64| claims.iter().find(|c| c["id"] == id).unwrap();
    let mid = v["setup"]["tiobench_threads"][1].as_u64().unwrap();
    let row = v["tiobench"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "Antsched-8192" && r["ours"]["phase"] == "seq_read" && r["ours"]["threads"] == mid)
        .unwrap();
    let o = &row["ours"];
    let device =
        o["device_read_mib"].as_f64().unwrap() * o["rate_mb_s"].as_f64().unwrap() / o["file_size_mb"].as_f64().unwrap();
    let disk = v["disk_sustained_mib_s"].as_f64().unwrap();
    let platter = (device - disk).abs() <= 0.15 * disk;
    let f1 = claim(1)["figures"].as_str().unwrap();
    assert!(f1.contains(&format!("device {device:.1} MiB/s vs disk {disk:.1}")), "{f1}");
    if !platter {
        assert_eq!(claim(1)["pass"], false, "claim 1 passed with the device at {device:.1} of {disk:.1}: {f1}");
    }
    let rm = v["readmany"].as_array().unwrap();
    let loaded = |s: &str| {
        rm.iter().find(|r| r["scheduler"] == s && r["background"] == "stream-write").unwrap()["elapsed_s"]
            .as_f64()
            .unwrap()
    };
    let order = loaded("deadline") < loaded("cfq-v1");
    if !order {
        assert_eq!(claim(6)["pass"], false, "claim 6 passed with deadline after cfq-v1: {}", claim(6)["figures"]);
        assert!(claim(6)["figures"].as_str().unwrap().contains("not before cfq-v1"), "{}", claim(6)["figures"]);
    }
    (platter, order)
}

/// Claim 8 (the full run's 2.4.21-pre4 row) judged again from its two rows: alone within
/// ±35 % of 7.9 s, stopped at 15 minutes beside the write, and reading at a rate that
/// takes the whole tree at least two hours.
fn recheck_claim_8(v: &serde_json::Value) {
    let claim = v["claims"].as_array().unwrap().iter().find(|c| c["id"] == 8).unwrap();
    let rm = v["readmany"].as_array().unwrap();
    let row = |bg: &str| rm.iter().find(|r| r["label"] == "2.4.21-pre4" && r["background"] == bg).unwrap();
    let (alone, loaded) = (row("none"), row("stream-write"));
    let un = alone["elapsed_s"].as_f64().unwrap();
    let el = loaded["elapsed_s"].as_f64().unwrap();
    let per_min = loaded["files_read"].as_f64().unwrap() / (el / 60.0);
    let whole_min = alone["files_read"].as_f64().unwrap() / per_min;
    let holds = (un - 7.9).abs() <= 0.35 * 7.9 && loaded["timed_out"] == true && el == 900.0 && whole_min >= 120.0;
    assert_eq!(
        claim["pass"], holds,
        "claim 8 against its rows (alone {un} s, {whole_min:.0} min): {}",
        claim["figures"]
    );
    let f = claim["figures"].as_str().unwrap();
    assert!(f.contains(&format!("the whole tree in about {whole_min:.0} min")), "{f}");
}

/// The shape points in --quick form (the full run is below). Point 1 (AS ≥ 1.7× deadline
/// for parallel sequential reads, AS-8192's device at platter speed) needs the full run's
/// file sizes: a quarter-size file set gives each of 64 readers 2 MiB, too little for
/// anticipation to pay off in the same proportion. Point 4's 10× margin varies with the
/// seed, more on the quarter-size machine than on the full one (docs/workloads.md); what
/// holds at every seed is that AS-8192's writes are the fastest, checked below. Claims
/// 2–5 and 8 must hold here, at seed 1; claims 1 and 6 are judged again from the data.
#[test]
fn repro_quick_shape_points() {
    let o = iosched(&["repro", "--quick", "--json", "--strict"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["quick"], true);
    assert_eq!(v["seed"], 1);
    let claims = v["claims"].as_array().unwrap();
    let pass = |id: u64| claims.iter().find(|c| c["id"] == id).unwrap()["pass"].as_bool().unwrap();
    for id in [2, 3, 4, 5, 8] {
        let c = claims.iter().find(|c| c["id"] == id).unwrap();
        assert!(pass(id), "claim {id} failed: {}", c["figures"]);
    }
    recheck_claims_1_and_6(&v);
    let failed: Vec<String> = claims.iter().filter(|c| c["pass"] == false).map(|c| c["id"].to_string()).collect();
    assert_eq!(o.status.code(), Some(if failed.is_empty() { 0 } else { 1 }), "{}", stderr(&o));
    if !failed.is_empty() {
        let want = format!("--strict: claim(s) {} failed (seed 1)", failed.join(", "));
        assert!(stderr(&o).contains(&want), "want `{want}` in: {}", stderr(&o));
    }
    let rand_write_lat = |label: &str, n: u64| rand_write_lat(&v, label, n);
    for n in [16, 32, 64] {
        let a8 = rand_write_lat("Antsched-8192", n);
        let (d, a) = (rand_write_lat("Deadline", n), rand_write_lat("Antsched", n));
        assert!(a8 < d && a8 < a, "{n} threads: AS-8192 {a8} ms, deadline {d}, AS {a}");
    }
    // Read-many under the streaming write: AS a small multiple, deadline and cfq-v1 huge.
    let rm = v["readmany"].as_array().unwrap();
    let ratio = |s: &str| {
        rm.iter().find(|r| r["scheduler"] == s && r["background"] == "stream-write").unwrap()["ratio_to_unloaded"]
            .as_f64()
            .unwrap()
    };
    assert!(ratio("as") < 3.0 && ratio("deadline") > 20.0 && ratio("cfq-v1") > 20.0);
    // 3 schedulers × 3 thread counts × 4 phases.
    assert_eq!(v["tiobench"].as_array().unwrap().len(), 36);
}

/// The main job itself, at seed 1. Claims 2–5 and 7 hold (over seeds 1–16 claim 4 fails
/// at some, where AS's 128-slot writers hardly wait at one thread count: see
/// docs/workloads.md); claims 1, 6 and 8 are judged again from the data, and `--strict`
/// exits 1 exactly when a claim failed. Beyond the verdicts, claim 4's mechanism: with
/// 8192 slots no random write waits at all, and with 128 slots deadline's and AS's do.
/// Seconds, with the simulation crates optimised in test builds.
#[test]
fn repro_full_claims() {
    let o = iosched(&["repro", "--json", "--strict"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["quick"], false);
    let claims = v["claims"].as_array().unwrap();
    for id in [2, 3, 4, 5, 7] {
        let c = claims.iter().find(|c| c["id"] == id).unwrap();
        assert_eq!(c["pass"], true, "claim {id} failed: {}", c["figures"]);
    }
    recheck_claims_1_and_6(&v);
    recheck_claim_8(&v);
    let any_failed = claims.iter().any(|c| c["pass"] == false);
    assert_eq!(o.status.code(), Some(any_failed as i32), "{}", stderr(&o));
    let rand_write_lat = |label: &str, n: u64| rand_write_lat(&v, label, n);
    // A write call that never waits costs ~15 µs of CPU on the PIII.
    for n in [32, 64, 128] {
        let a8 = rand_write_lat("Antsched-8192", n);
        assert!(a8 < 0.05, "{n} threads: AS-8192's random writes waited ({a8} ms)");
    }
    for label in ["Deadline", "Antsched"] {
        let waited = [32, 64, 128].map(|n| rand_write_lat(label, n));
        assert!(waited.iter().any(|&l| l > 0.5), "{label}'s 128-slot random writes never waited: {waited:?}");
    }
}

#[test]
fn repro_text_has_tables_and_verdicts() {
    let o = iosched(&["repro", "--quick"]);
    assert!(o.status.success());
    let s = stdout(&o);
    for needle in
        ["Sequential Reads", "Random Writes", "stream-write", "Verdicts", "seed 1", "PASS 5.", " 6. Read-many-files"]
    {
        assert!(s.contains(needle), "missing `{needle}`:\n{s}");
    }
}

#[test]
fn tiobench_json_rows_have_the_documented_fields() {
    let o = iosched(&["tiobench", "--sched", "deadline", "--threads", "2", "--size", "64M", "--mem", "64M", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4);
    for k in [
        "scheduler",
        "phase",
        "threads",
        "rate_mb_s",
        "cpu_pct",
        "avg_lat_ms",
        "max_lat_ms",
        "pct_gt_2s",
        "pct_gt_10s",
        "cpu_eff",
        "seed",
    ] {
        assert!(rows[0].get(k).is_some(), "no `{k}` in {}", rows[0]);
    }
    let phases: Vec<&str> = rows.iter().map(|r| r["phase"].as_str().unwrap()).collect();
    assert_eq!(phases, ["seq_write", "rand_write", "seq_read", "rand_read"]);
    // Each line names the machine it ran on, mapped memory as in effect.
    let m = &rows[0]["machine"];
    assert_eq!(
        (m["disk"].as_str(), m["mem_bytes"].as_u64(), m["cpu"].as_str()),
        (Some("ide-2003"), Some(64 << 20), Some("piii-1000")),
        "{m}"
    );
    assert_eq!(
        (m["host"].as_str(), m["mapped_bytes"].as_u64(), m["seed"].as_u64()),
        (Some("linux-2.5"), Some(8 << 20), Some(1)),
        "{m}"
    );
    let o = iosched(&[
        "sysbench",
        "fileio",
        "--file-test-mode",
        "rndrd",
        "--file-num",
        "4",
        "--file-total-size",
        "16M",
        "--events",
        "100",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(v["machine"]["host"], "linux-2.6", "{v}");
}

#[test]
fn tiobench_table_is_tiobench_pl_layout_and_deterministic() {
    let args = ["tiobench", "--sched", "as", "--threads", "2", "--size", "64M", "--mem", "64M", "--seed", "3"];
    let a = iosched(&args);
    let b = iosched(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout, "same seed, same bytes");
    let s = stdout(&a);
    assert!(s.contains("seed 3"));
    assert!(s.contains("\nUnit information\n================\n"));
    let header =
        "Identifier                    Size  Size  Thr   Rate  (CPU%)  Latency    Latency      >2s      >10s    Eff";
    assert!(s.contains(header));
    // A row: identifier left in 28 columns, then size centred in 6.
    let row = s.lines().find(|l| l.starts_with("as ")).unwrap();
    assert_eq!(&row[..29], "as                           ");
    assert_eq!(&row[29..36], "  64   ");
}

#[test]
fn readmany_reports_ratio_to_unloaded() {
    let o = iosched(&[
        "readmany",
        "--sched",
        "as",
        "--background",
        "stream-write",
        "--tree-scale",
        "0.05",
        "--warmup",
        "5s",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 2, "none is always run");
    assert_eq!(rows[0]["background"], "none");
    assert_eq!(rows[0]["ratio_to_unloaded"], 1.0);
    for k in ["scheduler", "background", "elapsed_s", "ratio_to_unloaded"] {
        assert!(rows[1].get(k).is_some());
    }
    // An unloaded run stopped at --timeout measured only a lower bound: no ratio to it,
    // in the JSON (null) and in the table (-), rather than a "> 1.0" that means nothing.
    let args =
        ["readmany", "--sched", "as", "--background", "stream-write", "--tree-scale", "0.05", "--timeout", "100ms"];
    let o = iosched(&[&args[..], &["--json"]].concat());
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(rows.iter().all(|r| r["timed_out"] == true && r["ratio_to_unloaded"].is_null()), "{rows:?}");
    let t = stdout(&iosched(&args));
    let row = t.lines().find(|l| l.contains("stream-write")).unwrap();
    assert!(row.contains("> 0.1 s") && row.split_whitespace().nth(5) == Some("-"), "{t}");
}

/// The text header names the tree as generated: a tiny scale still keeps a file in each
/// top-level directory, so the header gives the files and bytes, not just the scale.
#[test]
fn readmany_header_names_the_tree_it_read() {
    let o = iosched(&["readmany", "--sched", "as", "--background", "none", "--tree-scale", "0.00001"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let head = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(head.ends_with(", tree 12 files, 0.2 MB (--tree-scale 0.00001)"), "{head}");
    let o = iosched(&["readmany", "--sched", "as", "--background", "none", "--tree-scale", "0.05"]);
    assert!(stdout(&o).lines().next().unwrap_or_default().contains(" files, "), "{}", stdout(&o));
}

#[test]
fn bad_input_gets_a_clear_error() {
    for (args, expect) in [
        (&["tiobench", "--threads", "0"][..], "--threads"),
        (&["tiobench", "--size", "lots"][..], "--size"),
        (&["tiobench", "--sched", "deadlin"][..], "deadlin"),
        (&["tiobench", "--sched", "as:antic_expire=-1"][..], "antic_expire"),
        (&["tiobench", "--disk", "nosuchdisk"][..], "nosuchdisk"),
        (&["tiobench", "--sched", "as:max_sectors=512"][..], "255"),
        (&["readmany", "--background", "stream-sideways"][..], "stream-sideways"),
        (&["readmany", "--timeout", "soon"][..], "--timeout"),
        (&["readmany", "--tree-scale", "2"][..], "--tree-scale"),
        // Simulated hours cost wall minutes: past a day (or an hour of warm-up) is refused.
        (&["readmany", "--timeout", "25h"][..], "--timeout 90000s: out of range: expected up to 24h"),
        (&["readmany", "--warmup", "61m"][..], "--warmup 3660s: out of range: expected 0s..=1h"),
        // A negative size with a unit reaches the option's own check, not clap's
        // "unexpected argument".
        (&["tiobench", "--mem", "-5M"][..], "--mem: bad size `-5M`"),
        // Nothing may follow the unit, and decimal units are not guessed at.
        (&["tiobench", "--size", "8Mxyzm"][..], "--size: bad size `8Mxyzm`"),
        (&["tiobench", "--block", "4kk"][..], "--block: bad size `4kk`"),
        (&["tiobench", "--mem", "1000MB"][..], "write 1000M or 1000MiB"),
        (&["iozone", "-s", "8MiBB"][..], "-s: bad size `8MiBB`"),
        (&["tiobench", "--mem", "2T"][..], "memory (--mem) 2 TiB is out of range: expected 64 MiB..=1 TiB"),
        (&["sysbench", "fileio", "--file-test-mode", "rndrw", "--file-total-size", "-2G"][..], "bad size `-2G`"),
        // Counts past what the benchmark itself holds are refused, not run until memory
        // or time runs out (or, for a seed, wrapped round).
        (&["tiobench", "--random", "2147483648"][..], "--random 2147483648: out of range: expected at most 2147483647"),
        // Fewer random operations than threads: every thread would do none, and the
        // random rows would divide by nothing.
        (
            &["tiobench", "--threads", "4,32", "--random", "16"][..],
            "--random 16 over 32 threads: each thread does int(16 / 32) = 0 random operations",
        ),
        (&["sysbench", "fileio", "--file-test-mode", "rndrd", "--threads", "4097"][..], "expected 1..=4096"),
        (&["sysbench", "fileio", "--file-test-mode", "rndrd", "--time", "2147483648"][..], "--time 2147483648"),
        (
            &["compare", "--a", "cfq", "--b", "noop", "--bench", "aio-stress", "--runs", "1001"][..],
            "--runs 1001: out of range",
        ),
        (
            &[
                "compare",
                "--a",
                "cfq",
                "--b",
                "noop",
                "--bench",
                "aio-stress",
                "--runs",
                "2",
                "--seed",
                "18446744073709551615",
            ][..],
            "would run past",
        ),
        (
            &["iozone", "-s", "1m", "-r", "4k", "-i", "0", "-i", "5", "-j", "4294967296"][..],
            "-j 4294967296: out of range",
        ),
        (&["tiobench", "--disk", "nosuch.toml"][..], "--disk nosuch.toml: cannot read"),
        (&["tiobench", "--disk", "nosuch"][..], "--disk nosuch: not a built-in profile"),
        (&["tiobench", "--disk", ""][..], "--disk: expected a built-in profile name"),
        (
            &["iozone", "-s", "1m", "-r", "4k", "-i", "0", "--sched", "deadline:queue_depth=64"][..],
            "--sched deadline:queue_depth=64: queue_depth 64 exceeds",
        ),
        (&["iozone", "-s", "1m", "-r", "4k", "-i", "0", "-z"][..], "-z only shapes auto mode: add -a, or drop it"),
        (&["iozone", "-n", "2m", "-s", "1m"][..], "-n only shapes auto mode"),
        (&["readmany", "--warmup", "-1s"][..], "--warmup: bad duration `-1s`: a duration cannot be negative"),
        (&["tiobench", "--sched", "deadline:fifo_batch=1,fifo_batch=2"][..], "`fifo_batch` is given twice"),
        // Across --sched and --set, or two --set, the same rule: no silent last-one-wins.
        (
            &["tiobench", "--sched", "as", "--set", "antic_expire=0", "--set", "antic_expire=10"][..],
            "--set antic_expire=10: `antic_expire` is already set by --set antic_expire=0",
        ),
        (
            &["aio-stress", "--sched", "as:antic_expire=0", "--set", "antic_expire=10"][..],
            "`antic_expire` is already set",
        ),
        // The same knob under its other name counts too.
        (
            &["tiobench", "--sched", "deadline:max_sectors=128", "--set", "max_sectors_kb=32"][..],
            "`max_sectors_kb` is already set in `deadline:max_sectors=128`",
        ),
        (&["tiobench", "--sched", "deadline:fifo_batch=-1"][..], "--sched deadline:fifo_batch=-1: value -1"),
        (&["tiobench", "--sched", "deadline:queue_depth=2"][..], "exceeds the ide-2003 disk's queue depth of 1"),
    ] {
        let o = iosched(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let e = stderr(&o);
        assert!(e.contains(expect), "{args:?}: error `{e}` does not mention `{expect}`");
    }
}

#[test]
fn disk_commands() {
    let o = iosched(&["disk", "list"]);
    assert!(stdout(&o).contains("ide-2003"));
    let o = iosched(&["disk", "info", "ide-2003", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = v["seq_read_outer_mib_s"].as_f64().unwrap();
    assert!((24.0..28.0).contains(&r), "ide-2003 sustained {r} MiB/s");
    let o = iosched(&["disk", "validate", "cheetah9LP", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &v[0];
    for k in ["drive", "measured_mean_ms", "sim_mean_ms", "demerit_ms", "demerit_pct", "disksim_demerit_ms"] {
        assert!(d.get(k).is_some(), "no `{k}`");
    }
}

/// `disk replay`: a validation trace scores as `disk validate` does; the measured `.outv`
/// scores it too; a trace of one's own replays with open arrivals; a bad line is named.
#[test]
fn disk_replay_runs_a_users_trace_through_the_model() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/disksim/");
    let (parv, tr, outv) =
        (format!("{data}cheetah9LP.parv"), format!("{data}cheetah9LP.trace"), format!("{data}cheetah9LP.outv"));
    let o = iosched(&["disk", "replay", "--drive", &parv, "--trace", &tr, "--outv", &outv, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let s = &v["summary"];
    let val: serde_json::Value =
        serde_json::from_str(&stdout(&iosched(&["disk", "validate", "cheetah9LP", "--json"]))).unwrap();
    let d = s["vs_trace"]["demerit_ms"].as_f64().unwrap();
    assert!((d - val[0]["demerit_ms"].as_f64().unwrap()).abs() < 1e-9, "{d} vs {}", val[0]["demerit_ms"]);
    assert!((s["service_mean_ms"].as_f64().unwrap() - val[0]["sim_mean_ms"].as_f64().unwrap()).abs() < 1e-9);
    // The .outv's histogram is binned: the same figure within its bins' width.
    let dv = s["vs_outv"]["demerit_ms"].as_f64().unwrap();
    assert!((dv - d).abs() < 0.05, "outv {dv} vs trace {d}");
    assert_eq!(v["requests"].as_array().unwrap().len(), s["requests"].as_u64().unwrap() as usize);

    let own = TempPath::new("own.trace");
    std::fs::write(&own.0, "# arrival_ms devno blkno bcount flags\n0 0 100 8 1\n0.5 0 900000 8 1\n40 0 108 8 0\n")
        .unwrap();
    let o = iosched(&["disk", "replay", "--drive", "ide-2003", "--trace", own.s()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("DiskSim ascii (open arrivals)") && text.contains("3 requests"), "{text}");
    let rows = text.lines().filter(|l| matches!(l.split_whitespace().nth(1), Some("R" | "W"))).count();
    assert_eq!(rows, 3, "{text}");
    std::fs::write(&own.0, "0 0 100 8 1\n1 0 x 8 1\n").unwrap();
    let o = iosched(&["disk", "replay", "--drive", "ide-2003", "--trace", own.s()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("{}:2: field 3 (blkno)", own.s())), "{}", stderr(&o));
}

#[test]
fn mapped_flag_is_checked_and_shown() {
    // Shown in the machine line so a run can be repeated.
    let o = iosched(&["tiobench", "--sched", "deadline", "--threads", "2", "--size", "64M", "--mapped", "2M"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("256 MiB, 2 MiB mapped,"), "{}", stdout(&o));
    let o = iosched(&["tiobench", "--sched", "deadline", "--threads", "2", "--size", "64M", "--mapped", "512k"]);
    assert!(stdout(&o).contains("256 MiB, 512 KiB mapped,"), "{}", stdout(&o));
    // More than half the page cache (226 MiB on 256 MiB) is refused, not clamped; half is
    // the limit.
    let o = iosched(&["tiobench", "--mapped", "200M"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("mapped memory (--mapped) 209715200 bytes is out of range: 0..=118489088 bytes (113 MiB"),
        "{}",
        stderr(&o)
    );
    let o = iosched(&["tiobench", "--sched", "deadline", "--threads", "2", "--size", "64M", "--mapped", "118489088"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = iosched(&["tiobench", "--mapped", "8Q"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--mapped: bad size `8Q`"), "{}", stderr(&o));
}

/// `compare --json`: each line carries the table's verdict, the study's specs and
/// seeds, and the machine. A against itself: every row is "no change", whatever `within_variation` (the
/// seed report's strict rule) says of a zero change with zero deviation.
#[test]
fn compare_json_lines_carry_verdict_and_seeds() {
    let o =
        iosched(&["compare", "--a", "deadline", "--b", "deadline", "--bench", "aio-stress", "--runs", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r["verdict"], "no change", "{r}");
        assert_eq!(r["a"], "deadline");
        assert_eq!(r["b"], "deadline");
        assert_eq!(r["runs"], 2);
        assert_eq!(r["seeds"], serde_json::json!([1, 2]));
        // The machine as every benchmark's JSON names it (the 2007-like one), less the
        // seed, which `seeds` gives.
        assert_eq!(
            r["machine"],
            serde_json::json!({"disk": "sata-2004-ncq", "mem_bytes": 1u64 << 30, "cpu": "p4-ht", "host": "linux-2.6", "mapped_bytes": 0, "fs": "ext3"}),
            "{r}"
        );
    }
}

/// `tiobench --as-printed`: stdout is tiobench.pl's output alone (the line naming the
/// machine and seed goes to stderr); `--json` with it is refused, not ignored.
#[test]
fn tiobench_as_printed_keeps_stdout_tiobench_pl_only() {
    let o =
        iosched(&["tiobench", "--threads", "2", "--size", "8M", "--random", "40", "--sched", "noop", "--as-printed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("\nUnit information\n"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("simulated"), "{}", stdout(&o));
    assert!(stderr(&o).contains("simulated: disk ide-2003") && stderr(&o).contains("seed 1"), "{}", stderr(&o));
    let j = iosched(&["tiobench", "--as-printed", "--json"]);
    assert!(!j.status.success());
    assert!(stderr(&j).contains("cannot be used with"), "{}", stderr(&j));
}

/// `tiobench --record` writes one queue-input trace per run, `FILE.n` in table order,
/// each naming its run; `iosched replay` checks each (the simulated runs' dispatches come
/// back from their inputs alone), also with another `--sched`, which keeps the recorded
/// machine's queue settings. With `--json`, stdout stays JSON.
#[test]
fn tiobench_record_then_replay() {
    let base = TempPath::new("sim.trace");
    let f = |n: u32| TempPath(std::path::PathBuf::from(format!("{}.{n}", base.s())));
    let (one, two) = (f(1), f(2));
    let o = iosched(&[
        "tiobench",
        "--sched",
        "as,deadline",
        "--threads",
        "4",
        "--size",
        "8M",
        "--random",
        "40",
        "--json",
        "--record",
        base.s(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for l in stdout(&o).lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
    let text = std::fs::read_to_string(&one.0).unwrap();
    assert!(
        text.contains("\n# sched as:queue_depth=1,request_alloc=2.5,rotational=1,dequeue=completion,kick_unplug=0,max_sectors=255\n"),
        "{text:.300}"
    );
    assert!(text.contains("\n# run tiobench, 4 threads, as\n"), "{text:.300}");
    assert!(std::fs::read_to_string(&two.0).unwrap().contains("\n# sched deadline:"));
    for t in [&one, &two] {
        let r = iosched(&["replay", t.s()]);
        assert!(r.status.success(), "{}", stderr(&r));
        assert!(stdout(&r).starts_with("replay OK: "), "{}", stdout(&r));
    }
    // deadline's inputs under AS, on the recorded machine's queue: AS decides otherwise.
    let r = iosched(&["replay", two.s(), "--sched", "as", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    assert_eq!(
        v["scheduler"],
        "as:queue_depth=1,request_alloc=2.5,rotational=1,dequeue=completion,kick_unplug=0,max_sectors=255",
        "{v}"
    );
    assert_eq!(v["identical"], false, "{v}");
    assert!(!r.status.success());
    // Recording again replaces our own traces, but never a file that is not one.
    std::fs::write(&two.0, "precious\n").unwrap();
    let args = ["tiobench", "--sched", "as,deadline", "--threads", "4", "--size", "8M", "--random", "40"];
    let o = iosched(&[&args[..], &["--record", base.s()]].concat());
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("--record {}: the file exists and is not an iosched trace", two.s())));
    assert_eq!(std::fs::read_to_string(&two.0).unwrap(), "precious\n");
    std::fs::remove_file(&two.0).unwrap();
    let o = iosched(&[&args[..], &["--record", base.s()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `iosched fio`: a job on the command line gives fio's JSON document; a bad job file is
/// refused naming its file, line and option; `ioscheduler=` picks the scheduler.
#[test]
fn fio_runs_job_files_and_names_bad_lines() {
    let o = iosched(&[
        "fio",
        "--output-format",
        "json",
        "--",
        "--name=r",
        "--rw=randread",
        "--size=16m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=4",
        "--ioscheduler=bfq",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["scheduler"], "bfq");
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 16 << 20);
    let job = TempPath::new("bad.fio");
    std::fs::write(&job.0, "[global]\nbs=4k\n[a]\nrw=randread\nsize=1m\niodepht=4\n").unwrap();
    let o = iosched(&["fio", job.s()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(&format!("{}:6: unknown option `iodepht`; did you mean `iodepth`?", job.s())),
        "{}",
        stderr(&o)
    );
    std::fs::write(&job.0, "[a]\nrw=randtrim\nsize=1m\n").unwrap();
    let o = iosched(&["fio", job.s()]);
    assert!(stderr(&o).contains("trim is not modelled"), "{}", stderr(&o));
}

/// `--fs`: a bad file system or setting is refused with what was expected; the machine
/// line names the file system in effect (the host's, ext3 on linux-2.6, unless set).
#[test]
fn fs_flag_is_checked_and_shown() {
    for (fs, want) in [
        ("ext4", "--fs: unknown file system `ext4`; available: ext2, ext3"),
        ("ext3:commit=0", "commit=0: expected whole seconds, 1..=86400"),
        ("ext3:data=journal", "data=journal is not modelled"),
        ("ext2:atime=0", "ext2 has no settings"),
        ("ext3:atime=2", "atime=2: expected 0 (noatime) or 1"),
        ("ext3:commit=5,commit=6", "`commit` is given twice"),
        ("ext3:journal_mb=2", "journal_mb=2: expected whole MiB, 4..=400"),
    ] {
        let o = iosched(&["sysbench", "fileio", "--file-test-mode", "seqwr", "--time", "1", "--fs", fs]);
        assert!(!o.status.success(), "--fs {fs} was accepted");
        assert!(stderr(&o).contains(want), "--fs {fs}: {}", stderr(&o));
    }
    let args = ["sysbench", "fileio", "--file-test-mode", "seqwr", "--time", "1", "--file-total-size", "64M"];
    let o = iosched(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("linux-2.6, ext3, seed 1"), "{}", stdout(&o));
    let o = iosched(&[&args[..], &["--fs", "ext3:data=writeback,atime=0"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("linux-2.6, ext3 (data=writeback, noatime), seed 1"), "{}", stdout(&o));
}

/// A recorded trace names each owner that did I/O; on ext3 kjournald writes, on ext2 it
/// does not exist.
#[test]
fn a_trace_names_its_owners_and_kjournald_writes_on_ext3() {
    for (fs, kjournald) in [("ext3", true), ("ext2", false)] {
        let path = TempPath::new(&format!("owners-{fs}.trace"));
        let p = path.0.to_str().unwrap();
        let o = iosched(&[
            "sysbench",
            "fileio",
            "--file-test-mode",
            "seqwr",
            "--time",
            "2",
            "--file-total-size",
            "64M",
            "--fs",
            fs,
            "--record",
            p,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = std::fs::read_to_string(&path.0).unwrap();
        let owners: Vec<&str> = text.lines().filter(|l| l.starts_with("# owner ")).collect();
        assert!(owners.iter().any(|l| l.contains(" sysbench")), "{fs}: {owners:?}");
        let kj = owners.iter().find(|l| l.contains(" kjournald: "));
        assert_eq!(kj.is_some(), kjournald, "{fs}: {owners:?}");
        if let Some(l) = kj {
            let written: u64 = l.split(", ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            assert!(written > 0, "{l}");
        }
    }
}
