//! Golden scenario tests: every `tests/golden/*.scn` script must pass its own `expect`
//! lines, and its transcript must equal the stored `*.out` file; a script without one
//! fails. Write or regenerate the stored transcripts with `IOSCHED_BLESS=1 cargo test -p
//! iosched-policies` after checking that a change in behaviour is intended.

use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

#[test]
fn golden_scenarios() {
    let bless = std::env::var_os("IOSCHED_BLESS").is_some();
    let (checked, failures) = check_dir(&golden_dir(), bless);
    assert!(checked >= 10, "golden scenarios missing");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

use iosched_testkit::golden::check_dir;

/// A script without its stored transcript fails and nothing is written; blessing writes it.
#[test]
fn a_missing_transcript_fails_unless_blessed() {
    let dir = std::env::temp_dir().join(format!("iosched-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scn = std::fs::read_to_string(golden_dir().join("as_no_antic.scn")).unwrap();
    std::fs::write(dir.join("a.scn"), scn).unwrap();
    let (n, failures) = check_dir(&dir, false);
    assert_eq!(n, 1);
    assert!(failures.len() == 1 && failures[0].contains("no stored transcript"), "{failures:?}");
    assert!(!dir.join("a.out").exists(), "an unblessed run wrote a transcript");
    let (_, failures) = check_dir(&dir, true);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(check_dir(&dir, false).1, Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Completing a request that is not on the device is a script error with its line, not a
/// panic in the core.
#[test]
fn completing_a_request_not_on_the_device_is_an_error() {
    let script =
        "sched deadline:plugging=0\nat 0ms\narrive a read 100+8 owner=1\narrive b read 5000+8 owner=2\ncomplete b\n";
    let e = iosched_policies::scenario::run(script).unwrap_err().to_string();
    assert!(e.contains("line 5") && e.contains("not on the device"), "{e}");
}

/// Malformed scripts fail at the line at fault, without a panic.
#[test]
fn script_errors_name_their_line() {
    let err = |script: &str| iosched_policies::scenario::run(script).unwrap_err();
    let e = err("sched kyber:nope=1\n");
    assert_eq!(e.line, 1, "{e}");
    assert!(e.to_string().contains("no tunable `nope`"), "{e}");
    let e = err("sched deadline\nsched kyber\n");
    assert!(e.line == 2 && e.to_string().contains("second `sched`"), "{e}");
    let e = err("# nothing\n\n");
    assert!(e.to_string().contains("no `sched` line"), "{e}");
    // (script, line of the error, message).
    for (script, line, msg) in [
        ("sched kyber:plugging=0\nat 0ms\narrive r1 read 1000+0 owner=1\n", 3, "at least 1 sector"),
        ("sched deadline\narrive r1 read 18446744073709551615+8 owner=1\n", 2, "largest sector"),
        // A time past u64 nanoseconds is refused, not clamped to the largest instant.
        ("sched noop\nat 99999999999999999999s\n", 2, "at most about 584 years"),
        ("sched noop\nat 1.5\n", 2, "with a unit"),
        ("sched noop\nat 1ms later\n", 2, "unexpected `later` after `at 1ms`"),
        ("sched noop\nunplug now\n", 2, "unexpected `now` after `unplug`"),
        ("sched noop\narrive r1 read 0+8 owner=1 owner=2\n", 2, "owner= given twice"),
        ("sched noop\narrive r1 read 0+8 owner=-1\n", 2, "owner=`-1`: expected an owner number"),
        ("sched noop\narrive r1 read 0+4294967296 owner=1\n", 2, "LEN in 0..=4294967295"),
        // Each setting once, across the spec and `set` lines.
        ("sched deadline:read_expire=5\nset read_expire=125\n", 2, "`read_expire` is already set (read_expire=5)"),
        ("sched deadline\nset fifo_batch=2 fifo_batch=3\n", 2, "`fifo_batch` is already set (fifo_batch=2)"),
        // A level on a class that has none would vanish from the trace.
        ("sched noop\narrive r1 read 0+8 owner=1 prio=idle/3\n", 2, "the idle class has no level; write idle"),
        // Words too many, or an expectation of nothing, are refused.
        ("sched noop\nexpect none extra\n", 2, "`expect none` takes 0 word(s) after it; unexpected `extra`"),
        ("sched noop\nexpect state\n", 2, "expected `expect state KEY=VALUE …` (at least one)"),
        ("sched noop\nexpect dispatch\n", 2, "expected `expect dispatch NAME[@TIME] …`"),
        ("sched noop\nexpect inflight 0 1\n", 2, "unexpected `1`"),
        (
            "sched noop:plugging=0\narrive r1 read 0+8 owner=1\ncomplete r1 err=-5\n",
            3,
            "expected err=N with an errno N in 1..=4095, got `err=-5`",
        ),
    ] {
        let e = err(script);
        assert!(e.line == line && e.to_string().contains(msg), "{e}");
    }
    // A flush is the one request that may be empty.
    iosched_policies::scenario::run("sched deadline:plugging=0\narrive f flush 0+0 owner=1\nexpect dispatch f\n")
        .unwrap();
}
