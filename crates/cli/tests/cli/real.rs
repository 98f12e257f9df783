//! `iosched real …` and `iosched replay`, on a plain temporary file (the runtime picks
//! whichever backend works; the library's own tests cover io_uring, root and losetup).

use super::{TempPath, iosched, stderr, stdout};

const SMALL: [&str; 8] = ["--threads", "2", "--size", "4M", "--random", "40", "--sched", "noop,deadline"];

/// `iosched real tiobench --target TARGET EXTRA… SMALL…`.
/// A target of ours with `size` of data written, for the jobs that only read (which never
/// create one).
fn written_target(name: &str, size: &str) -> TempPath {
    let t = TempPath::new(name);
    let o = iosched(&["real", "fio-like", "--target", t.s(), "--rw", "write", "--bs", "1M", "--size", size]);
    assert!(o.status.success(), "{}", stderr(&o));
    t
}

fn small_tiobench(target: &TempPath, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["real", "tiobench", "--target", target.s()];
    args.extend(extra);
    args.extend(SMALL);
    iosched(&args)
}

/// The table names what the run was on and its seed, as the simulated one does, and ends
/// with one runtime line per run.
#[test]
fn real_tiobench_table_names_target_and_seed() {
    let t = TempPath::new("table.img");
    let o = small_tiobench(&t, &["--seed", "7"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    let first = s.lines().next().unwrap();
    assert!(first.starts_with("tiobench (tiotest 0.3.3 semantics), real: target "), "{first}");
    assert!(first.contains(t.s()) && first.contains("no emulation") && first.ends_with("seed 7"), "{first}");
    for needle in ["\nSequential Reads\n", "\nRandom Writes\n", "\nRuntime (timer lateness"] {
        assert!(s.contains(needle), "missing {needle:?}:\n{s}");
    }
    assert!(s.lines().any(|l| l.starts_with("deadline (2 thr)")), "{s}");
}

/// `--json` records carry the simulated tiobench's fields, and the document names the seed.
#[test]
fn real_tiobench_json_records_match_the_simulated_fields() {
    let t = TempPath::new("json.img");
    let o = small_tiobench(&t, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["seed"], 1);
    let real = v["records"].as_array().unwrap();
    assert_eq!(real.len(), 2 * 4, "2 schedulers × 4 phases");
    let sim = iosched(&["tiobench", "--sched", "noop", "--threads", "2", "--size", "64M", "--mem", "64M", "--json"]);
    let sim: serde_json::Value = serde_json::from_str(stdout(&sim).lines().next().unwrap()).unwrap();
    for k in sim.as_object().unwrap().keys() {
        // The simulator also counts device traffic and prints the seed per line.
        if k.starts_with("device_") || k == "seed" || k == "machine" {
            continue;
        }
        assert!(real[0].get(k).is_some(), "real record lacks `{k}`: {}", real[0]);
    }
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    assert_eq!(v["runs"][0]["ended"], "complete");
    // The runtime's counters, as --help promises.
    let rt = &v["runs"][0]["runtime"];
    for k in ["requests", "merged", "errors", "timer_lateness"] {
        assert!(rt.get(k).is_some(), "runs[0].runtime lacks `{k}`: {rt}");
    }
    assert!(rt["requests"].as_u64().unwrap() > 0, "{rt}");
}

/// A file we did not create is refused, names --force, and is left byte for byte as it was.
#[test]
fn real_refuses_a_file_it_did_not_create() {
    let t = TempPath::new("theirs.img");
    let data: Vec<u8> = (0..1 << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&t.0, &data).unwrap();
    let o = small_tiobench(&t, &[]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("--force") && e.contains(t.s()), "{e}");
    assert_eq!(std::fs::read(&t.0).unwrap(), data, "the file was changed");
}

/// `--record` writes the queue's inputs; `iosched replay` feeds them to a fresh queue and
/// finds the same dispatch order. A trace whose first two dispatches are swapped fails.
#[test]
fn real_record_then_replay() {
    let t = written_target("rec.img", "4M");
    let trace = TempPath::new("rec.trace");
    let o = iosched(&[
        "real",
        "fio-like",
        "--target",
        t.s(),
        "--sched",
        "as",
        "--rw",
        "read",
        "--size",
        "4M",
        "--iodepth",
        "8",
        "--record",
        trace.s(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("fio-like job, real: target "), "{}", stdout(&o));
    let r = iosched(&["replay", trace.s()]);
    assert!(r.status.success(), "{}", stderr(&r));
    // The 1024 reads alone: the new target's layout is written before the queue starts.
    let ok = stdout(&r);
    assert!(ok.starts_with("replay OK: 1024 dispatches identical"), "{ok}");
    let n = 1024;
    // Another --sched keeps the device's recorded depth (the recording's queue held 8).
    let r = iosched(&["replay", trace.s(), "--sched", "as"]);
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stdout(&r).contains("scheduler as:queue_depth="), "{}", stdout(&r));
    let depth_in = |t: &str| -> String {
        t.split("queue_depth=").nth(1).and_then(|t| t.split([',', ')', '\n']).next()).unwrap_or_default().to_string()
    };
    let recorded = std::fs::read_to_string(&trace.0).unwrap();
    let recorded = recorded.lines().find(|l| l.starts_with("# sched ")).unwrap();
    assert!(!depth_in(recorded).is_empty(), "{recorded}");
    assert_eq!(depth_in(&stdout(&r)), depth_in(recorded), "{}", stdout(&r));
    // A depth the --sched sets is its own: the recorded one is not added after it.
    let r = iosched(&["replay", trace.s(), "--sched", "as:queue_depth=1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&r)).unwrap();
    let label = v["scheduler"].as_str().unwrap();
    assert!(label.starts_with("as:queue_depth=1,rotational=") && label.matches("queue_depth").count() == 1, "{v}");

    let text = std::fs::read_to_string(&trace.0).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let d: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.contains(" D ")).map(|(i, _)| i).take(2).collect();
    let id = |l: &str| l.rsplit(' ').next().unwrap().to_string();
    let (a, b) = (id(&lines[d[0]]), id(&lines[d[1]]));
    assert_ne!(a, b);
    lines[d[0]] = lines[d[0]].replace(&format!(" D {a}"), &format!(" D {b}"));
    lines[d[1]] = lines[d[1]].replace(&format!(" D {b}"), &format!(" D {a}"));
    let bad = TempPath::new("bad.trace");
    std::fs::write(&bad.0, lines.join("\n") + "\n").unwrap();
    let f = iosched(&["replay", bad.s()]);
    assert!(!f.status.success(), "{}", stdout(&f));
    assert!(stderr(&f).contains("replay FAILED"), "{}", stderr(&f));
    // --json: the same verdicts as one object each.
    let jo = iosched(&["replay", trace.s(), "--json"]);
    assert!(jo.status.success(), "{}", stderr(&jo));
    let v: serde_json::Value = serde_json::from_str(&stdout(&jo)).unwrap();
    assert_eq!(v["identical"], true);
    assert_eq!(v["dispatches"].as_u64(), Some(n as u64));
    let jf = iosched(&["replay", bad.s(), "--json"]);
    assert!(!jf.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&jf)).unwrap();
    assert_eq!(v["identical"], false);
    assert!(v["mismatch"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

/// A job that only reads never creates a target. A mixed job on a target this run creates
/// first writes its data area (as fio lays out a new file): reading reserved space would
/// return zeros without touching the device. Without `--runtime`, a random job does
/// `--size` bytes of I/O. A second run finds the area written and lays nothing out.
#[test]
fn real_fio_like_lays_out_a_new_target_before_reading() {
    let t = TempPath::new("layout.img");
    let o = iosched(&["real", "fio-like", "--target", t.s(), "--rw", "randread", "--size", "2M"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("a load that only reads never creates a target"), "{}", stderr(&o));
    assert!(!t.0.exists(), "a reading job created its target");
    let args =
        ["real", "fio-like", "--target", t.s(), "--rw", "randrw", "--rwmixread", "100", "--size", "2M", "--json"];
    let o = iosched(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("laying out 2 MiB"), "{}", stderr(&o));
    // What the reservation takes from the filesystem is said before it is taken.
    assert!(stderr(&o).contains(&format!("{}: reserving 2.0 MiB of ", t.s())), "{}", stderr(&o));
    assert!(stderr(&o).contains(" free on its filesystem"), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(j["results"][0]["total_ios"], 512, "{j}");
    assert!(j["results"][0]["report"]["requests"].as_u64().is_some_and(|n| n >= 512), "{j}");
    let data = std::fs::read(&t.0).unwrap();
    assert_eq!(data.len(), 4096 + (2 << 20));
    assert!(data[4096..].iter().all(|&b| b == 0x5a), "the data area was not written");
    let again = iosched(&args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!stderr(&again).contains("laying out"), "{}", stderr(&again));
    assert!(!stderr(&again).contains("reserving"), "{}", stderr(&again));
}

/// A `--record` path that cannot be written is refused before the target is created.
#[test]
fn real_record_into_a_missing_directory_fails_before_creating_the_target() {
    let t = TempPath::new("norec.img");
    let o = small_tiobench(&t, &["--record", "/nonexistent-iosched-dir/rec"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--record /nonexistent-iosched-dir/rec: directory"), "{}", stderr(&o));
    assert!(!t.0.exists(), "the target was created");
}

/// `--record` never replaces what is not a trace of ours: a user's file, or the run's own
/// target. Both are refused before anything runs and left as they were.
#[test]
fn real_record_refuses_to_overwrite_data() {
    let t = TempPath::new("recdata.img");
    let base = TempPath::new("recdata.txt");
    // Two runs (noop, deadline): the traces would go to recdata.txt.1 and .2.
    let theirs = TempPath(std::path::PathBuf::from(format!("{}.2", base.s())));
    std::fs::write(&theirs.0, "precious\n").unwrap();
    let o = small_tiobench(&t, &["--record", base.s()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("{}: the file exists and is not an iosched trace", theirs.s())));
    assert_eq!(std::fs::read_to_string(&theirs.0).unwrap(), "precious\n");
    assert!(!t.0.exists(), "the target was created");
    let o = small_tiobench(&t, &["--record", t.s()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("--record {}: is the target", t.s())), "{}", stderr(&o));
    assert!(!t.0.exists(), "the target was created");
}

/// `fio-like --prio`: one job per priority, each its own owner. noop ignores priorities
/// (the two jobs share the device about evenly); mq-deadline serves the real-time job
/// first and the best-effort one only at its 10 s aging, so in a 1 s run it gets almost
/// nothing.
#[test]
fn real_fio_like_jobs_per_priority() {
    let t = written_target("prio.img", "16M");
    let run = |sched: &str| {
        let o = iosched(&[
            "real",
            "fio-like",
            "--target",
            t.s(),
            "--size",
            "16M",
            "--runtime",
            "1s",
            "--iodepth",
            "8",
            "--prio",
            "rt/4,be/4",
            "--sched",
            sched,
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        let jobs = v["results"][0]["jobs"].as_array().unwrap().clone();
        assert_eq!(jobs.len(), 2);
        assert_eq!((jobs[0]["prio"].as_str(), jobs[1]["prio"].as_str()), (Some("rt/4"), Some("be/4")));
        let ios = |j: &serde_json::Value| j["total_ios"].as_u64().unwrap();
        assert_eq!(ios(&jobs[0]) + ios(&jobs[1]), v["results"][0]["total_ios"].as_u64().unwrap());
        (ios(&jobs[0]) as f64, ios(&jobs[1]) as f64)
    };
    let (rt, be) = run("noop");
    assert!(rt > 0.5 * be && be > 0.5 * rt, "noop: rt {rt} be {be}");
    let (rt, be) = run("mq-deadline");
    assert!(rt > 20.0 * be.max(1.0), "mq-deadline: rt {rt} be {be}");
}

/// Thread and in-flight counts are bounded (each reader is a thread, each write in flight
/// a 128 KiB buffer): a huge one is refused before the target is touched.
#[test]
fn real_readmany_bounds_its_readers_and_writer_depth() {
    let t = TempPath::new("bounds.img");
    for (flag, value, expect) in [
        ("--readers", "4097", "--readers 4097: out of range: expected 1..=4096"),
        ("--writer-depth", "1025", "--writer-depth 1025: out of range: expected 1..=1024"),
        ("--writer-depth", "0", "--writer-depth 0: out of range: expected 1..=1024"),
        ("--writer-size", "0", "--writer-size 0: expected at least 1 MiB"),
    ] {
        let o = iosched(&["real", "readmany", "--target", t.s(), "--scale", "0.001", flag, value]);
        assert!(!o.status.success(), "{flag} {value} ran");
        assert!(stderr(&o).contains(expect), "{}", stderr(&o));
        assert!(!t.0.exists(), "{flag} {value}: the target was created");
    }
    // The writer's settings with no writer: a mistake, not something to ignore.
    let o = iosched(&["real", "readmany", "--target", t.s(), "--no-writer", "--writer-depth", "4"]);
    assert!(stderr(&o).contains("'--no-writer' cannot be used with '--writer-depth"), "{}", stderr(&o));
    assert!(!t.0.exists(), "--no-writer: the target was created");
    let o = iosched(&["real", "tiobench", "--target", t.s(), "--size", "4M", "--random", "2147483648"]);
    assert!(stderr(&o).contains("--random 2147483648: out of range: expected at most 2147483647"), "{}", stderr(&o));
    assert!(!t.0.exists(), "--random: the target was created");
    // A random phase needs an operation per thread; without one, `--random 0` is fine.
    let o = iosched(&["real", "tiobench", "--target", t.s(), "--size", "4M", "--threads", "4", "--random", "3"]);
    assert!(stderr(&o).contains("--random 3 over 4 threads: each thread does int(3 / 4) = 0"), "{}", stderr(&o));
    assert!(!t.0.exists(), "--random 3: the target was created");
    let o = iosched(&[
        "real",
        "tiobench",
        "--target",
        t.s(),
        "--size",
        "4M",
        "--threads",
        "4",
        "--random",
        "0",
        "--phases",
        "seq_write,seq_read",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The table shows only the phases that ran; --as-printed keeps tiobench.pl's four.
    let base = ["real", "tiobench", "--target", t.s(), "--size", "4M", "--threads", "1", "--phases", "seq_write"];
    let table = stdout(&iosched(&base));
    assert!(table.contains("\nSequential Writes\n") && !table.contains("Random Reads"), "{table}");
    let printed = stdout(&iosched(&[&base[..], &["--as-printed"]].concat()));
    assert!(printed.contains("\nRandom Reads\n"), "{printed}");
}

/// A --size the emulated disk cannot hold is refused before the target is created.
#[test]
fn real_refuses_a_size_larger_than_the_emulated_disk_before_creating_the_target() {
    let t = TempPath::new("too-big.img");
    let profile = TempPath::new("tiny-null.toml");
    std::fs::write(&profile.0, "name = \"tiny\"\nkind = \"null\"\n[null]\ncapacity = \"2MiB\"\n").unwrap();
    let o = iosched(&[
        "real",
        "fio-like",
        "--sched",
        "noop",
        "--target",
        t.s(),
        "--emulate",
        profile.s(),
        "--size",
        "4M",
        "--rw",
        "randread",
        "--runtime",
        "1s",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("data area (4194304 bytes) is larger than the emulated disk (2097152 bytes)"),
        "{}",
        stderr(&o)
    );
    assert!(!t.0.exists(), "the target was created");
    // An unknown profile is named once, after the option.
    let o = iosched(&["real", "fio-like", "--target", t.s(), "--emulate", "nosuch", "--size", "4M"]);
    assert!(stderr(&o).contains("--emulate nosuch: not a built-in profile"), "{}", stderr(&o));
    assert!(!t.0.exists(), "the target was created");
    // Part of a block is refused, not rounded up to a whole one.
    let o = iosched(&["real", "fio-like", "--target", t.s(), "--size", "4097", "--runtime", "100ms"]);
    assert!(stderr(&o).contains("--size 4097: expected a multiple of 4096 bytes"), "{}", stderr(&o));
    assert!(!t.0.exists(), "the target was created");
}

/// A bad scheduler spec in a trace's header names the file and the line it stands on; one
/// from --sched names the option.
#[test]
fn replay_names_where_a_bad_spec_came_from() {
    let trace = TempPath::new("badsched.trace");
    std::fs::write(&trace.0, "# iosched trace v1\n# sched deadline:fifo_batch=-1\n100 U\n").unwrap();
    let o = iosched(&["replay", trace.s()]);
    assert!(!o.status.success());
    let want = format!("{}:2: `# sched`: value -1 for `fifo_batch` is out of range", trace.s());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    let o = iosched(&["replay", trace.s(), "--sched", "nosuch"]);
    assert!(stderr(&o).contains("--sched: unknown scheduler `nosuch`"), "{}", stderr(&o));
}

/// What is not a trace, or a trace of nothing, is not "replay OK".
#[test]
fn replay_refuses_a_file_that_proves_nothing() {
    let trace = TempPath::new("empty.trace");
    for (text, want) in [
        ("", ":1: field `header`: the file is empty"),
        ("100 U\n", ":1: field `header`: expected the first line to be `# iosched trace v1`"),
        ("\n# iosched trace v1\n# sched noop\n", ": the trace has no records: nothing to replay"),
    ] {
        std::fs::write(&trace.0, text).unwrap();
        let o = iosched(&["replay", trace.s()]);
        assert!(!o.status.success(), "{text:?}");
        assert!(stderr(&o).contains(&format!("{}{want}", trace.s())), "{text:?}: {}", stderr(&o));
    }
}

/// `fio-like --rw randrw`: the table adds a line for the reads and one for the writes, and
/// the JSON has both; `--rwmixread` is refused out of range or without randrw.
#[test]
fn fio_like_randrw_reports_each_direction() {
    let t = TempPath::new("randrw.img");
    let base = ["real", "fio-like", "--sched", "deadline", "--target", t.s(), "--size", "2M", "--iodepth", "4"];
    let o = iosched(&[&base[..], &["--rw", "randrw", "--rwmixread", "80"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.lines().any(|l| l.starts_with("  reads ")), "{out}");
    assert!(out.lines().any(|l| l.starts_with("  writes ")), "{out}");
    let o = iosched(&[&base[..], &["--rw", "randrw", "--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["rw"], "randrw");
    let (reads, writes) = (r["read"]["total_ios"].as_u64().unwrap(), r["write"]["total_ios"].as_u64().unwrap());
    assert_eq!(reads + writes, r["total_ios"].as_u64().unwrap());
    assert!(reads > 0 && writes > 0, "{r}");
    let o = iosched(&[&base[..], &["--rw", "randrw", "--rwmixread", "101"]].concat());
    assert!(stderr(&o).contains("--rwmixread 101: expected a percentage, 0..=100"), "{}", stderr(&o));
    let o = iosched(&[&base[..], &["--rw", "randrw", "--rwmixread", "-1"]].concat());
    assert!(stderr(&o).contains("--rwmixread -1: expected a percentage, 0..=100"), "{}", stderr(&o));
    let o = iosched(&[&base[..], &["--rw", "randread", "--rwmixread", "50"]].concat());
    assert!(stderr(&o).contains("--rwmixread: only with --rw randrw (got --rw randread)"), "{}", stderr(&o));
}

/// `iosched real fio`: a direct job runs and reports fio's JSON; a buffered one is refused,
/// saying why and where it can run.
#[test]
fn real_fio_runs_direct_jobs_and_refuses_buffered_ones() {
    let t = TempPath::new("real-fio");
    let o = iosched(&[
        "real",
        "fio",
        "--target",
        t.s(),
        "--backend",
        "threads",
        "--output-format",
        "json",
        "--",
        "--name=w",
        "--rw=randwrite",
        "--size=1m",
        "--direct=1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1 << 20);
    let o = iosched(&["real", "fio", "--target", t.s(), "--", "--name=b", "--rw=read", "--size=1m"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("direct=0 (buffered)") && stderr(&o).contains("iosched fio"), "{}", stderr(&o));
    // fio's buffer contents are not what the runtime writes: refused, with where it runs.
    let job = ["--name=c", "--rw=write", "--size=1m", "--direct=1", "--buffer_compress_percentage=50"];
    let o = iosched(&[&["real", "fio", "--target", t.s(), "--"][..], &job[..]].concat());
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("buffer_compress_percentage: fio's buffer contents are not written here"), "{e}");
    let o = iosched(&[&["fio", "--"][..], &job[..]].concat());
    assert!(o.status.success() && stderr(&o).contains("no effect in the simulator"), "{}", stderr(&o));
    // A replayed log's I/Os must be whole 4 KiB blocks: the first that is not is named.
    let log = TempPath::new("real-fio-log");
    std::fs::write(log.s(), "fio version 2 iolog\nf add\nf open\nf read 0 4096\nf read 512 4096\nf close\n").unwrap();
    let replay = format!("--read_iolog={}", log.s());
    let o = iosched(&["real", "fio", "--target", t.s(), "--", "--name=r", "--direct=1", replay.as_str()]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("an I/O of 4096 bytes at offset 512: O_DIRECT needs whole 4096-byte blocks"), "{e}");
}
