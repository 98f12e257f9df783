//! The `iosched` binary, driven as a user would. One module per command group.

mod real;
mod sim;

use std::process::{Command, Output};

pub fn iosched(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_iosched")).args(args).output().expect("run iosched")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A fresh path under the system's temporary directory, removed when dropped.
#[derive(Debug)]
pub struct TempPath(pub std::path::PathBuf);

impl TempPath {
    pub fn new(name: &str) -> TempPath {
        let p = std::env::temp_dir().join(format!("iosched-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        TempPath(p)
    }
    pub fn s(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `iosched schedulers | head -1`: the closed pipe ends the process quietly (SIGPIPE, as
/// for C tools), with no panic message. The pipe's read end is closed before the program
/// starts, so its first write meets a closed pipe.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .arg("schedulers")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("run iosched");
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    assert_eq!(o.status.signal(), Some(SIGPIPE), "{:?}", o.status);
}

const SIGPIPE: i32 = 13; // on Linux

/// `schedulers NAME` lists one scheduler; a spec with settings is refused (the listing
/// shows defaults, and the settings would be silently dropped). `--json` carries each
/// tunable's default and range as numbers in its unit too.
#[test]
fn schedulers_lists_defaults_as_text_and_numbers() {
    let o = iosched(&["schedulers", "as:foo=1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("give a scheduler name only"), "{}", stderr(&o));
    let o = iosched(&["schedulers", "bfq", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = v["schedulers"][0]["tunables"].as_array().unwrap();
    let us = t.iter().find(|x| x["name"] == "slice_idle_us").unwrap();
    assert_eq!((us["unit"].as_str(), us["default"].as_str()), (Some("us"), Some("8000us")), "{us}");
    assert_eq!((us["default_value"].as_i64(), us["min"].as_i64()), (Some(8000), Some(0)), "{us}");
    let q = v["queue_tunables"].as_array().unwrap();
    let hz = q.iter().find(|x| x["name"] == "hz").unwrap();
    assert_eq!(hz["allowed"], serde_json::json!([100, 250, 300, 1000]), "{hz}");
    assert!(only_hz_lists_allowed_values(q), "only hz lists its values");
    let nr = q.iter().find(|x| x["name"] == "nr_requests").unwrap();
    assert_eq!(
        (nr["default_value"].as_i64(), nr["min"].as_i64(), nr["max"].as_i64()),
        (Some(128), Some(4), Some(1 << 20))
    );
}

fn only_hz_lists_allowed_values(q: &[serde_json::Value]) -> bool {
    q.iter().filter(|x| x["name"] != "hz").all(|x| x["allowed"].is_null())
}

/// `iosched scenario`: the transcript on success; on a failure, the transcript up to the
/// failing line, then the file:line error and exit status 1. `--json` carries the same.
#[test]
fn scenario_prints_its_transcript_or_json() {
    let script = TempPath::new("s.scn");
    std::fs::write(&script.0, "sched noop:plugging=0\narrive r1 read 0+8 owner=1\nexpect dispatch r1\n").unwrap();
    let o = iosched(&["scenario", script.s()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("  -> dispatch r1 @0ms"), "{}", stdout(&o));
    let o = iosched(&["scenario", script.s(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((v["pass"].as_bool(), v["error"].is_null()), (Some(true), true), "{v}");
    assert_eq!(v["transcript"][0], "sched noop:plugging=0", "{v}");
    std::fs::write(&script.0, "sched noop:plugging=0\narrive r1 read 0+8 owner=1\nexpect none\n").unwrap();
    let o = iosched(&["scenario", script.s(), "--json"]);
    assert!(!o.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!((v["pass"].as_bool(), v["error"]["line"].as_u64()), (Some(false), Some(3)), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("expected no dispatch"), "{v}");
    assert!(stderr(&o).contains(&format!("{}:3: expected no dispatch", script.s())), "{}", stderr(&o));
}

/// Inputs that never end (`/dev/zero`, `/dev/urandom`), a FIFO nobody writes to and a
/// directory are refused at once with what they are, wherever a file is read: every
/// command exits non-zero within a second (it used to spin at 100 % CPU and grow to
/// gigabytes, or hang on the FIFO).
#[test]
fn endless_and_special_inputs_are_refused_at_once() {
    let fifo = TempPath::new("never.fifo");
    assert!(Command::new("mkfifo").arg(&fifo.0).status().unwrap().success());
    let cases: Vec<Vec<&str>> = vec![
        vec!["scenario", "/dev/zero"],
        vec!["scenario", "/dev/urandom"],
        vec!["replay", "/dev/zero"],
        vec!["disk", "info", "/dev/zero"],
        vec!["tiobench", "--disk", "/dev/zero"],
        vec!["readmany", "--disk", "/dev/urandom"],
        vec!["scenario", fifo.s()],
        vec!["replay", fifo.s()],
        vec!["disk", "info", fifo.s()],
        vec!["disk", "info", "/tmp"],
    ];
    for args in cases {
        let start = std::time::Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_iosched"))
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > std::time::Duration::from_secs(1) {
                let _ = child.kill();
                panic!("iosched {args:?} still running after a second");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(!status.success(), "iosched {args:?} succeeded");
        assert!(err.contains("not a regular file ("), "iosched {args:?}: {err}");
    }
}

/// `iosched ARGS`, sent `signal` (by `kill`) after `after`; returns the output and how long
/// the process took to end after the signal.
fn signalled(args: &[&str], signal: &str, after: std::time::Duration) -> (Output, std::time::Duration) {
    let child = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let sent = std::time::Instant::now();
    assert!(Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().unwrap().success());
    let o = child.wait_with_output().unwrap();
    (o, sent.elapsed())
}

/// SIGTERM stops a real run as SIGINT does: the partial report is printed (it was lost,
/// exit 143 with nothing printed, so `timeout 10 iosched real …` kept nothing).
#[test]
fn sigterm_leaves_a_partial_real_report() {
    let t = TempPath::new("sigterm.img");
    let w = iosched(&["real", "fio-like", "--target", t.s(), "--rw", "write", "--bs", "1M", "--size", "8M"]);
    assert!(w.status.success(), "{}", stderr(&w));
    let args = ["real", "fio-like", "--target", t.s(), "--rw", "randread", "--size", "8M", "--runtime", "60s"];
    for signal in ["TERM", "INT"] {
        let (o, took) = signalled(&args, signal, std::time::Duration::from_millis(1500));
        assert!(took < std::time::Duration::from_secs(2), "SIG{signal}: {took:?} to stop");
        assert_eq!(o.status.code(), Some(1), "SIG{signal}: {:?} {}", o.status, stderr(&o));
        assert!(stderr(&o).contains("stopping"), "SIG{signal}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.contains("fio-like job, real") && out.contains("IOPS") && out.contains("deadline"),
            "SIG{signal}: {out}"
        );
    }
}

/// A simulated run that would take for ever answers SIGINT and SIGTERM at once, saying
/// where it was; a legal setting that stalls simulated time meets --max-sim-time and
/// names what its programs wait for.
#[test]
fn simulated_runs_stop_on_signals_and_at_max_sim_time() {
    let args = ["sysbench", "fileio", "--file-test-mode", "rndrd", "--time", "2147483647"];
    for signal in ["INT", "TERM"] {
        let (o, took) = signalled(&args, signal, std::time::Duration::from_millis(700));
        assert!(took < std::time::Duration::from_secs(1), "SIG{signal}: {took:?} to stop");
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("interrupted at simulated time"), "SIG{signal}: {}", stderr(&o));
    }
    let o = iosched(&[
        "tiobench",
        "--sched",
        "bfq:slice_idle=2147483647",
        "--threads",
        "2",
        "--size",
        "64M",
        "--mem",
        "64M",
    ]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("stopped at --max-sim-time (14400 s") && e.contains("for a request slot"), "{e}");
    let o = iosched(&["tiobench", "--threads", "2", "--size", "64M", "--mem", "64M", "--max-sim-time", "1s"]);
    assert!(stderr(&o).contains("stopped at --max-sim-time (1 s"), "{}", stderr(&o));
    let o = iosched(&["tiobench", "--max-sim-time", "0"]);
    assert!(stderr(&o).contains("--max-sim-time 0: expected a positive time"), "{}", stderr(&o));
}

/// A simulated fio run stopped by --max-sim-time or by SIGINT prints fio's report of what
/// its jobs did until then, says it is partial, and exits 1; a job that never started
/// reports no I/O.
#[test]
fn a_stopped_fio_run_reports_what_its_jobs_did() {
    let job = [
        "--name=r",
        "--rw=randread",
        "--size=1g",
        "--direct=1",
        "--name=later",
        "--stonewall",
        "--rw=read",
        "--size=1m",
    ];
    let mut args = vec!["fio", "--output-format", "json", "--max-sim-time", "2s", "--"];
    args.extend(job);
    let o = iosched(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("stopped at --max-sim-time (2 s") && stderr(&o).ends_with("partial\n"),
        "{}",
        stderr(&o)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &doc["jobs"][0]["read"];
    let ms = r["runtime"].as_u64().unwrap();
    assert!((1900..=2000).contains(&ms) && r["total_ios"].as_u64().unwrap() > 50, "{r}");
    assert_eq!(doc["jobs"][1]["read"]["total_ios"], 0, "the stonewalled job never ran");
    let args = ["fio", "--output-format", "json", "--", "--name=r", "--rw=randread", "--size=16g", "--direct=1"];
    let (o, _) = signalled(&args, "INT", std::time::Duration::from_millis(700));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted at simulated time"), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0, "{doc}");
}

/// The audit's list of small lies and unclear errors, each with what it prints now.
#[test]
fn audit_cases_get_clear_errors() {
    let err = |args: &[&str]| {
        let o = iosched(args);
        assert!(!o.status.success(), "iosched {args:?} succeeded");
        stderr(&o)
    };
    let has = |e: String, want: &str| assert!(e.contains(want), "want `{want}` in: {e}");
    has(err(&["tiobench", "--sched", "as;antic_expire=0"]), "with commas between settings, e.g. as:antic_expire=0");
    has(
        err(&["tiobench", "--sched", "as:antic_expire=99999999999999999999"]),
        "is out of range: allowed 0..=INT_MAX ms",
    );
    has(err(&["sysbench", "fileio", "--percentile", "-1"]), "-1 is not in 0..=100");
    // An array left open on line 17 is reported there, with its field.
    let bad = TempPath::new("open-array.toml");
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/ide-2003.toml")).unwrap();
    let line = src.lines().position(|l| l.starts_with("surfaces")).unwrap() + 1;
    std::fs::write(&bad.0, src.replace("surfaces = 4", "surfaces = [4")).unwrap();
    has(err(&["disk", "info", bad.s()]), &format!("{}:{line}: field `surfaces`", bad.s()));
    // A DiskSim file that sources itself names the cycle.
    let parv = TempPath::new("self.parv");
    std::fs::write(&parv.0, format!("source {}\n", parv.0.file_name().unwrap().to_str().unwrap())).unwrap();
    has(err(&["disk", "info", parv.s()]), "makes a cycle");
    // A profile name with control characters.
    let ctl = TempPath::new("ctl.toml");
    std::fs::write(&ctl.0, src.replace("name = \"ide-2003\"", "name = \"ide\\u001b[2J\"")).unwrap();
    has(err(&["disk", "info", ctl.s()]), "field `name`: expected a name without control characters");
    // Scenario arrivals larger than the queue takes, and a flush with data.
    let scn = TempPath::new("big.scn");
    std::fs::write(&scn.0, "sched noop\nat 0ms\narrive a1 read 0+4294967295 owner=1\n").unwrap();
    has(err(&["scenario", scn.s()]), "is more than the queue's max_sectors");
    std::fs::write(&scn.0, "sched noop\nat 0ms\narrive a1 flush 0+8 owner=1\n").unwrap();
    has(err(&["scenario", scn.s()]), "a flush carries no data");
    // One rule for repeated list items: refused.
    has(err(&["tiobench", "--sched", "deadline,deadline"]), "`deadline` is listed twice");
    has(err(&["tiobench", "--threads", "2,2"]), "`2` is listed twice");
    has(err(&["readmany", "--background", "stream-write,stream-write"]), "`stream-write` is listed twice");
    has(err(&["tiobench", "--mem", "100000001"]), "expected a whole number of MiB");
    // Sizes and offsets that would wrap a file offset are refused before a target exists.
    let t = TempPath::new("wrap.img");
    has(
        err(&["real", "tiobench", "--target", t.s(), "--threads", "4", "--size", "4M", "--offset", "17592186044415M"]),
        "the regions would end past the largest file offset",
    );
    has(
        err(&["real", "fio-like", "--target", t.s(), "--rw", "randwrite", "--size", "18446744073709547520"]),
        "more than the largest file offset allows",
    );
    assert!(!t.0.exists(), "a refused target was created");
    has(err(&["tiobench", "--cpu", "piii-1000:timeslice=0ns"]), "expected at least 1ms");
    // Built-in profile names, like scheduler names, are matched without regard to case.
    let o = iosched(&["disk", "info", "IDE-2003", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Reads of files no stage wrote are said to measure the CPU.
    let o = iosched(&["aio-stress", "-O", "-o", "3", "-s", "64", "--sched", "noop"]);
    assert!(o.status.success(), "{}", stderr(&o));
    has(stderr(&o), "the reads find holes");
}

/// `replay` of an edited trace names the file and line where the order diverged.
#[test]
fn replay_names_the_line_where_the_order_diverged() {
    let t = TempPath::new("edited.trace");
    let o =
        iosched(&["tiobench", "--sched", "as", "--threads", "2", "--size", "16M", "--mem", "64M", "--record", t.s()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&t.0).unwrap();
    // Swap the first two dispatches.
    let lines: Vec<&str> = text.lines().collect();
    let d: Vec<usize> =
        lines.iter().enumerate().filter(|(_, l)| l.split(' ').nth(1) == Some("D")).map(|(i, _)| i).take(2).collect();
    let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let id = |l: &str| l.split(' ').nth(2).unwrap().to_string();
    let (a, b) = (id(lines[d[0]]), id(lines[d[1]]));
    edited[d[0]] = lines[d[0]].replacen(&format!(" D {a}"), &format!(" D {b}"), 1);
    edited[d[1]] = lines[d[1]].replacen(&format!(" D {b}"), &format!(" D {a}"), 1);
    std::fs::write(&t.0, edited.join("\n") + "\n").unwrap();
    let o = iosched(&["replay", t.s()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("replay FAILED at {}:{}", t.s(), d[0] + 1)), "{}", stderr(&o));
}

/// Progress is drawn on a terminal (stderr), and nowhere else: under `script` (a pseudo
/// terminal) a simulated sysbench shows its bar with the simulated clock; with stderr a
/// pipe, nothing but the report is written.
#[test]
fn progress_shows_on_a_terminal_only() {
    let args = "sysbench fileio --file-test-mode rndrd --time 900";
    let cmd = format!("{} {args} > /dev/null", env!("CARGO_BIN_EXE_iosched"));
    let o = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().expect("script (util-linux) runs");
    assert!(o.status.success(), "{}", stderr(&o));
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(tty.contains("runs:") && tty.contains("simulated"), "no progress on the terminal: {tty:?}");
    let o = iosched(&args.split(' ').collect::<Vec<_>>());
    assert!(o.status.success());
    assert!(stderr(&o).is_empty(), "progress written to a pipe: {}", stderr(&o));
}
