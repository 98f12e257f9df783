//! Fuzzing every parser: each gets mutations of real inputs of its kind (the built-in
//! profiles, DiskSim's files, the golden scenarios, a recorded trace) and text drawn from
//! the pieces its grammar is made of, and must return `Ok` or `Err` — never panic, never
//! hang (each input within [`BOUND`]).
//!
//! The engine is proptest (already the workspace's property-test library): it runs on the
//! stable toolchain, which cargo-fuzz/libFuzzer does not, and it shrinks a failing input
//! to a small one. It is not coverage-guided; the corpus and the token list stand in for
//! that (see docs/fuzzing.md). `.ci/run` runs the default number of cases with a fixed
//! seed; `IOSCHED_FUZZ_CASES=100000 cargo test --release -p iosched-fuzz` is the longer
//! run. A failure is saved in `tests/proptest-regressions/` and replayed first after that.

use proptest::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest one parse may take (a debug build on a busy machine).
const BOUND: Duration = Duration::from_secs(5);

fn cases() -> u32 {
    match std::env::var("IOSCHED_FUZZ_CASES") {
        Err(_) => 300,
        Ok(v) => v.parse().ok().filter(|&n| n > 0).unwrap_or_else(|| {
            panic!("IOSCHED_FUZZ_CASES={v}: expected a positive number of cases per target, e.g. 100000")
        }),
    }
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: cases(), max_shrink_iters: 2000, ..ProptestConfig::default() }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Pieces the grammars are made of, and values at the edges of their ranges.
const TOKENS: &[&str] = &[
    "0",
    "1",
    "-1",
    "4096",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "99999999999999999999",
    "1e308",
    "-1e308",
    "NaN",
    "inf",
    "0.0000001",
    "1.5",
    "",
    " ",
    "=",
    ",",
    ":",
    ";",
    "\n",
    "\r\n",
    "\t",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "#",
    "+",
    "ms",
    "us",
    "ns",
    "s",
    "KiB",
    "MiB",
    "GiB",
    "k",
    "M",
    "T",
    "B",
    "source ",
    "source a.model",
    "at ",
    "arrive ",
    "complete ",
    "expect ",
    "sched ",
    "read ",
    "write ",
    "flush ",
    "owner=",
    "prio=",
    "rt/0",
    "idle",
    "be/7",
    "err=",
    "ok",
    "A ",
    "C ",
    "D ",
    "U ",
    "T ",
    "# sched ",
    "[disk]",
    "[cache]",
    "[controller]",
    "rpm = ",
    "\u{0}",
    "\u{1b}[2J",
    "é",
    "\u{feff}",
];

#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the byte at (position % len) with this one.
    Byte(usize, u8),
    /// Insert a token at a position.
    Insert(usize, usize),
    /// Delete up to n bytes at a position.
    Delete(usize, usize),
    /// Repeat the line at a position.
    DupLine(usize),
    /// Replace the number starting at or after a position with a token.
    Number(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Byte(p, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Mutation::Delete(p, n)),
        any::<usize>().prop_map(Mutation::DupLine),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Number(p, t)),
    ]
}

fn apply(seed: &str, muts: &[Mutation]) -> String {
    let mut b = seed.as_bytes().to_vec();
    for m in muts {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
        match *m {
            Mutation::Byte(p, x) if !b.is_empty() => {
                let i = p % b.len();
                b[i] = x;
            }
            Mutation::Byte(..) => {}
            Mutation::Insert(p, t) => {
                let i = at(p, b.len());
                b.splice(i..i, TOKENS[t].bytes());
            }
            Mutation::Delete(p, n) => {
                let i = at(p, b.len());
                let j = (i + n).min(b.len());
                b.drain(i..j);
            }
            Mutation::DupLine(p) => {
                let i = at(p, b.len());
                let start = b[..i].iter().rposition(|&c| c == b'\n').map_or(0, |x| x + 1);
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |x| i + x + 1);
                let line = b[start..end].to_vec();
                b.splice(end..end, line);
            }
            Mutation::Number(p, t) => {
                let i = at(p, b.len());
                if let Some(s) = b[i..].iter().position(u8::is_ascii_digit).map(|x| i + x) {
                    let e = b[s..].iter().position(|c| !c.is_ascii_digit() && *c != b'.').map_or(b.len(), |x| s + x);
                    b.splice(s..e, TOKENS[t].bytes());
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Text made of grammar pieces alone.
fn tokens() -> impl Strategy<Value = String> {
    prop::collection::vec(0..TOKENS.len(), 0..40).prop_map(|v| v.into_iter().map(|i| TOKENS[i]).collect())
}

/// `f(input)` must return without a panic, within [`BOUND`].
fn survives<T>(what: &str, input: &str, f: impl FnOnce(&str) -> T) -> Result<(), TestCaseError> {
    let start = Instant::now();
    let r = catch_unwind(AssertUnwindSafe(|| {
        f(input);
    }));
    prop_assert!(r.is_ok(), "{what} panicked on {input:?}");
    prop_assert!(start.elapsed() < BOUND, "{what} took {:?} on {input:?}", start.elapsed());
    Ok(())
}

fn files(dir: &str, ext: &str) -> Vec<String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

fn input(corpus: Vec<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..corpus.len(), prop::collection::vec(mutation(), 0..10))
            .prop_map(move |(i, m)| apply(&corpus[i], &m)),
        1 => tokens(),
    ]
}

/// A temporary directory holding one DiskSim drive's files (atlas10k), one of them
/// replaced by the fuzzed text.
fn disksim_dir(which: usize, text: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("iosched-fuzz-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    for (i, ext) in DISKSIM_PARTS.iter().enumerate() {
        let name = format!("atlas10k.{ext}");
        let body = if i == which { text.to_string() } else { disksim_part(i) };
        std::fs::write(d.join(name), body).unwrap();
    }
    d
}

const DISKSIM_PARTS: [&str; 5] = ["parv", "diskspecs", "model", "seek", "trace"];

fn disksim_part(i: usize) -> String {
    std::fs::read_to_string(root().join(format!("data/disksim/atlas10k.{}", DISKSIM_PARTS[i]))).unwrap()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn disk_profiles(text in input(files("profiles", "toml"))) {
        survives("parse_profile", &text, |t| {
            if let Ok(p) = iosched_disk::profile::parse_profile(t, "fuzz.toml") {
                let _ = p.build(1);
            }
        })?;
    }

    #[test]
    fn disksim_files(which in 0usize..4, muts in prop::collection::vec(mutation(), 0..10)) {
        let text = apply(&disksim_part(which), &muts);
        let dir = disksim_dir(which, &text);
        let r = survives("load_parv", &text, |_| iosched_disk::disksim::load_parv(&dir.join("atlas10k.parv")));
        let _ = std::fs::remove_dir_all(&dir);
        r?;
    }

    #[test]
    fn disksim_validation_traces(muts in prop::collection::vec(mutation(), 0..10)) {
        // The first 200 lines: enough grammar, and quick to write.
        let head: String = disksim_part(4).lines().take(200).map(|l| format!("{l}\n")).collect();
        let text = apply(&head, &muts);
        let dir = disksim_dir(4, &text);
        let r = survives("read_trace", &text, |_| iosched_disk::disksim::validate::read_trace(&dir.join("atlas10k.trace")));
        let _ = std::fs::remove_dir_all(&dir);
        r?;
    }

    #[test]
    fn scenario_scripts(text in input(files("crates/policies/tests/golden", "scn"))) {
        survives("scenario::run", &text, iosched_policies::scenario::run)?;
    }

    #[test]
    fn queue_traces(text in input(files("crates/fuzz/corpus", "trace"))) {
        survives("Trace::parse", &text, |t| {
            if let Ok(tr) = iosched_core::trace::Trace::parse(t)
                && let Some(spec) = tr.meta("sched")
                && let Ok(s) = iosched_policies::SchedSpec::parse(spec)
                && let Ok(mut q) = s.queue()
            {
                let _ = iosched_core::replay::replay(&tr.records, &mut q);
            }
        })?;
    }

    #[test]
    fn scheduler_specs(text in input(vec![
        "as:antic_expire=0,read_expire=250ms".into(),
        "cfq:defer_slice_start=1,quantum=4".into(),
        "deadline:nr_requests=8192,plugging=0".into(),
        "bfq:slice_idle_us=8000,low_latency=0,max_budget=0".into(),
        "kyber:read_lat_nsec=2000000,queue_depth=1,rotational=1,hz=250".into(),
        "noop,deadline,as,cfq,cfq-v1,mq-deadline,kyber,bfq".into(),
    ])) {
        survives("SchedSpec", &text, |t| {
            if let Ok(s) = iosched_policies::SchedSpec::parse(t) {
                let _ = s.queue();
            }
            let _ = iosched_policies::parse_list(t);
        })?;
    }

    #[test]
    fn sizes_durations_and_small_specs(text in input(vec![
        "4k".into(), "512MiB".into(), "1G".into(), "8.2GB".into(), "30m".into(), "1.5s".into(), "250us".into(),
        "rt/4".into(), "be/7".into(), "idle".into(), "err=5".into(),
        "piii-1000:block_alloc=11us,copy_page=16us".into(), "linux-2.5:reserve=30M,pdflush_threads=4".into(),
    ])) {
        survives("sizes and durations", &text, |t| {
            let _ = iosched_benchmarks::units::parse_size(t);
            let _ = iosched_benchmarks::units::parse_duration(t);
            let _ = iosched_core::time::parse_time_nanos(t, Some(1_000_000));
            let _ = iosched_disk::profile::parse_size(t);
            let _ = iosched_disk::profile::parse_duration_ns(t);
            let _ = iosched_core::IoPrio::parse(t);
            let _ = iosched_core::Status::parse_err(t);
            let _ = iosched_sim::CpuProfile::by_name(t);
            let _ = iosched_sim::HostProfile::by_name(t, 256 << 20);
        })?;
    }
}
