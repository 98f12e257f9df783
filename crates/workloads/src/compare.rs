//! `iosched compare`: A/B studies of a scheduler change across benchmark suites.
//!
//! Every test of every listed benchmark runs under spec A and spec B with N seeds each
//! (the same N seeds for both: a paired design). Per test the study reports the mean of A
//! and of B, the change `100 × (B − A) / A`, and the run-to-run variation of each side as
//! the sample standard deviation in percent of the mean (CV). A change is *within
//! variation* when `|change| < 2 × max(CV_A, CV_B)` — the test the 2007 seed report used
//! ("changes within run-to-run variation").
//!
//! **What a seed varies.** Exactly what a real rerun of the same command on the same
//! machine varies, and nothing invented:
//! * the disk's initial rotational position (every benchmark), which shifts every service
//!   time and therefore every later scheduling decision;
//! * random offsets where the tool seeds its generator per run: sysbench (seeded from
//!   the clock by default, `--rand-seed 0`) and tiotest (per-thread `rand_r` seeds from
//!   `gettimeofday`);
//! * where new files go: ext2 (from 2.5.53, so on both hosts) starts a file at a point
//!   of its block group chosen by the writer's pid, and a rerun's pids differ (the
//!   simulator draws them from the seed).
//!
//! Not varied: iozone's random permutation (`srand48(0)`, the same every run) and
//! aio-stress's random offsets (unseeded `rand()`, the same every run) — a rerun repeats
//! them too. None of these tools has think time to jitter.
//!
//! Consequence: a program that waits for each request before issuing the next sees the
//! initial rotational position only in its first request — every later arrival is timed
//! from the previous completion, so its angle is fixed by the geometry. Such tests
//! (iozone's reads, aio-stress's sequential reads, single-thread sequential tiobench
//! reads) come out with a deviation near 0 %,
//! and "within variation" is then a far stricter test than on
//! a real machine, whose reruns also vary with interrupts, timers and daemons that the
//! simulator does not have. Read small changes on rows with a near-zero deviation with
//! that in mind.
//!
//! **The `seed-2007` set** (the third seed report, 2007: one CFQ patch, "defer slice
//! activation to first request being active", across four suites). The report's machine
//! description is not in the project's references, so the machine is a 2007-like
//! built-in combination ([`machine_2007`]): the `sata-2004-ncq` disk (a 7200 rpm SATA
//! drive with NCQ 32 — the NCQ queue is where the patch's "time waiting for the device to
//! start serving the new queue" lives), the `linux-2.6` host (2.6 read-ahead and VM),
//! 1 GiB of memory and the `p4-ht` CPU profile (the newest, two logical CPUs). The
//! configurations are each tool's defaults where the report gives nothing more:
//! * sysbench 1.0.20 `fileio --file-test-mode=rndrw` with its defaults (128 files,
//!   2 GiB, 16 KiB blocks, ratio 1.5, fsync every 100 requests and at the end, 1 thread,
//!   10 s); one row, total MiB/s read + written.
//! * tiobench (tiotest 0.3.3) with 1 thread and with 8 threads (tiobench.pl's default
//!   thread list is 1 2 4 8; its ends), size = 2 × RAM clamped to 200..2000 MB as
//!   tiobench.pl 0.3.3 does, 4 KiB blocks, 4000 random ops; four rows per thread count.
//! * iozone 3.487 `-s <2 × RAM> -r 64k -i 0 -i 1 -i 2 -i 3 -i 4 -i 5` and the same with
//!   `-B` (mmap): nine rows each (write, rewrite, read, reread, random read, random write,
//!   backward read, record rewrite, stride read).
//! * aio-stress 0.21 with its defaults (1024 MiB file, 64 KiB records, depth 64, 8 ios per
//!   iteration, 1 thread), with `-O` (O_DIRECT) and without: four stage rows each.
//!
//! The report's own count was "3 other tiobench, 7 aio-stress and 13 iozone tests" beside
//! the named ones; its exact command lines are not known, so the counts differ.

use crate::aio_stress::AioStressConfig;
use crate::error::Error;
use crate::iozone::IozoneConfig;
use crate::machine::Machine;
use crate::stats::{NO_CHANGE_PCT, change_pct, cv_pct, mean, within_variation};
use crate::sysbench::{SysbenchConfig, TestMode};
use crate::tiobench::{TiobenchConfig, TiobenchRun};
use iosched_policies::SchedSpec;
use serde::Serialize;
use std::fmt::Write as _;

/// One row of a study.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub bench: String,
    pub test: String,
    pub a_mean: f64,
    pub b_mean: f64,
    pub unit: String,
    pub change_pct: f64,
    pub a_cv_pct: f64,
    pub b_cv_pct: f64,
    pub within_variation: bool,
    /// The table's verdict.
    pub verdict: Verdict,
}

/// What the table says of a row (`--json`: the same words, from [`Verdict::as_str`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Equal means, or a change below [`NO_CHANGE_PCT`] (whatever the deviations).
    NoChange,
    /// The change is smaller than twice the larger run-to-run deviation.
    WithinVariation,
    BHigher,
    BLower,
}

impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::NoChange => "no change",
            Verdict::WithinVariation => "within variation",
            Verdict::BHigher => "B higher",
            Verdict::BLower => "B lower",
        }
    }
}

impl Row {
    /// The row for one test from its A and B samples.
    pub fn from_samples(bench: &str, test: &str, unit: &str, a: &[f64], b: &[f64]) -> Row {
        let (a_mean, b_mean) = (mean(a), mean(b));
        let change = change_pct(a_mean, b_mean);
        let (a_cv, b_cv) = (cv_pct(a), cv_pct(b));
        let within = within_variation(change, a_cv, b_cv);
        Row {
            bench: bench.to_string(),
            test: test.to_string(),
            a_mean,
            b_mean,
            unit: unit.to_string(),
            change_pct: change,
            a_cv_pct: a_cv,
            b_cv_pct: b_cv,
            within_variation: within,
            verdict: if a_mean == b_mean || change.abs() < NO_CHANGE_PCT {
                Verdict::NoChange
            } else if within {
                Verdict::WithinVariation
            } else if change > 0.0 {
                Verdict::BHigher
            } else {
                Verdict::BLower
            },
        }
    }

    /// Whether the table counts this row as changed (a difference beyond the variation).
    pub fn changed(&self) -> bool {
        matches!(self.verdict, Verdict::BHigher | Verdict::BLower)
    }
}

/// One `--json` line: a row and the study it belongs to (specs, runs, seeds), so each
/// line stands on its own.
#[derive(Debug, Serialize)]
pub struct JsonRow<'a> {
    #[serde(flatten)]
    pub row: &'a Row,
    pub a: &'a str,
    pub b: &'a str,
    pub runs: u32,
    pub seeds: &'a [u64],
    /// The machine the study ran on, as every benchmark's JSON names it (disk, mem_bytes,
    /// cpu, host, mapped_bytes), less the seed: the study's seeds are in `seeds`.
    pub machine: serde_json::Value,
}

impl CompareReport {
    pub fn json_rows(&self) -> Vec<JsonRow<'_>> {
        self.rows
            .iter()
            .map(|row| JsonRow {
                row,
                a: &self.a,
                b: &self.b,
                runs: self.runs,
                seeds: &self.seeds,
                machine: self.machine.clone(),
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// Benchmark items

/// One number a benchmark run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Measure {
    pub test: String,
    pub value: f64,
    pub unit: &'static str,
}

/// A benchmark as a study runs it: one configured run of a tool, which yields several
/// tests. Each tool implements it beside its own configuration (`sysbench.rs`,
/// `tiobench.rs`, `iozone.rs`, `aio_stress.rs`); [`SUITES`] lists them.
pub trait Benchmark: std::fmt::Debug + Send + Sync {
    /// The suite's name, as `--bench` and the report's rows write it.
    fn name(&self) -> &'static str;
    /// The command line this run stands for (for the report).
    fn command_line(&self) -> String;
    /// The machine it runs on (its seed is replaced by each run's).
    fn machine(&self) -> &Machine;
    /// Check the configuration.
    fn validate(&self) -> Result<(), String>;
    /// Run once under `spec` with `seed`; the tests and their values.
    fn measure(&self, spec: &SchedSpec, seed: u64) -> Result<Vec<Measure>, Error>;
}

/// One configured benchmark of a study.
pub type Item = Box<dyn Benchmark>;

/// Every suite a study can run, each with the runs it makes on a machine: its part of
/// the `seed-2007` set (see the module documentation). `--bench` takes these names and
/// `seed-2007`, which is all of them.
pub const SUITES: &[Suite] = &[
    Suite { name: "sysbench", runs: |m| vec![Box::new(SysbenchConfig::new(TestMode::RndRw, m.clone()))] },
    Suite {
        name: "tiobench",
        runs: |m| {
            // tiobench.pl 0.3.3's default size: 2 × RAM clamped to 200..2000 MB.
            let size = ((2 * (m.mem_bytes >> 20)).clamp(200, 2000)) << 20;
            let cfg = TiobenchConfig { size, block: 4096, random: 4000, drop_caches: false, machine: m.clone() };
            [1, 8].into_iter().map(|threads| Box::new(TiobenchRun { threads, cfg: cfg.clone() }) as Item).collect()
        },
    },
    Suite {
        name: "iozone",
        runs: |m| {
            [false, true]
                .into_iter()
                .map(|mmap| {
                    let mut c = IozoneConfig::single(2 * m.mem_bytes, 64 << 10, m.clone());
                    c.mmap = mmap;
                    Box::new(c) as Item
                })
                .collect()
        },
    },
    Suite {
        name: "aio-stress",
        runs: |m| {
            [true, false]
                .into_iter()
                .map(|direct| {
                    let mut c = AioStressConfig::new(m.clone());
                    c.direct = direct;
                    Box::new(c) as Item
                })
                .collect()
        },
    },
];

/// A suite of [`SUITES`]: its `--bench` name and the runs it makes on a machine.
#[derive(Debug)]
pub struct Suite {
    pub name: &'static str,
    pub runs: fn(&Machine) -> Vec<Item>,
}

/// The name for all of [`SUITES`].
pub const SEED_2007: &str = "seed-2007";

/// Names `--bench` accepts: `seed-2007`, then each suite's.
pub fn bench_names() -> Vec<&'static str> {
    std::iter::once(SEED_2007).chain(SUITES.iter().map(|s| s.name)).collect()
}

/// The 2007-like machine of the `seed-2007` study (see the module documentation).
pub fn machine_2007(seed: u64) -> Machine {
    Machine::new("sata-2004-ncq", 1 << 30, "p4-ht", seed).with_host("linux-2.6")
}

/// The items of a comma-separated benchmark list on `machine`: `seed-2007` (all four
/// suites) or any of `sysbench`, `tiobench`, `iozone`, `aio-stress` (that suite's part of
/// the set), each suite once, in the order of [`SUITES`] as named. Sizes follow the
/// machine's memory where the tools' rules do.
pub fn items(list: &str, machine: &Machine) -> Result<Vec<Item>, String> {
    let mut names: Vec<&str> = Vec::new();
    for n in list.split(',').map(str::trim) {
        let expanded: Vec<&str> = if n == SEED_2007 {
            SUITES.iter().map(|s| s.name).collect()
        } else if let Some(s) = SUITES.iter().find(|s| s.name == n) {
            vec![s.name]
        } else {
            return Err(format!("--bench: unknown benchmark `{n}`; expected a list of {}", bench_names().join(", ")));
        };
        for e in expanded {
            if !names.contains(&e) {
                names.push(e);
            }
        }
    }
    let mut out = Vec::new();
    for n in names {
        let suite = SUITES.iter().find(|s| s.name == n).expect("a suite named above");
        out.extend((suite.runs)(machine));
    }
    for i in &out {
        i.validate()?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// The study

#[derive(Debug)]
pub struct CompareConfig {
    pub a: SchedSpec,
    pub b: SchedSpec,
    pub items: Vec<Item>,
    /// Seeds per side.
    pub runs: u32,
    /// Seeds `first_seed .. first_seed + runs`.
    pub first_seed: u64,
}

/// A finished study.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    pub a: String,
    pub b: String,
    pub runs: u32,
    pub seeds: Vec<u64>,
    pub disk: String,
    pub mem_bytes: u64,
    pub cpu: String,
    pub host: String,
    /// The file system in effect (`ext3`, `ext2`, …).
    pub fs: String,
    /// The machine as every benchmark's JSON names it ([`Machine::json`]), less the seed
    /// (the study's are in `seeds`).
    pub machine: serde_json::Value,
    /// The command line of each benchmark run.
    pub commands: Vec<String>,
    pub rows: Vec<Row>,
}

/// The most `--runs` per side.
pub const RUNS_MAX: u32 = 1000;

/// Run the study: every item under A and B with every seed, in parallel over the
/// machine's cores. `progress(done, total, what)` is called as runs finish. Each run is
/// deterministic, so the report does not depend on the number of worker threads.
pub fn run(cfg: &CompareConfig, progress: &(dyn Fn(usize, usize, &str) + Sync)) -> Result<CompareReport, Error> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !(1..=RUNS_MAX).contains(&cfg.runs) {
        return Err(format!(
            "--runs {}: out of range: expected 1..={RUNS_MAX} runs per side (2 or more to measure variation)",
            cfg.runs
        )
        .into());
    }
    if cfg.first_seed.checked_add(cfg.runs as u64 - 1).is_none() {
        return Err(format!(
            "--seed {} with --runs {}: the seeds would run past {}",
            cfg.first_seed,
            cfg.runs,
            u64::MAX
        )
        .into());
    }
    if cfg.items.is_empty() {
        return Err("--bench: no benchmark selected".into());
    }
    for i in &cfg.items {
        i.validate()?;
    }
    let seeds: Vec<u64> = (0..cfg.runs as u64).map(|k| cfg.first_seed + k).collect();
    // One job per (item, side, seed); rayon balances them over the cores.
    let mut jobs: Vec<(usize, bool, u64)> = Vec::new();
    for (i, _) in cfg.items.iter().enumerate() {
        for &s in &seeds {
            for side in [false, true] {
                jobs.push((i, side, s));
            }
        }
    }
    let done = AtomicUsize::new(0);
    let results: Vec<Result<Vec<Measure>, Error>> = jobs
        .par_iter()
        .map(|&(i, side, seed)| {
            let spec = if side { &cfg.b } else { &cfg.a };
            let r = cfg.items[i].measure(spec, seed);
            let what = format!("({} {} seed {seed})", cfg.items[i].name(), if side { "B" } else { "A" });
            progress(done.fetch_add(1, Ordering::SeqCst) + 1, jobs.len(), &what);
            r
        })
        .collect();
    // Gather samples per (item, test) in the order tests first appear.
    let mut rows = Vec::new();
    for (i, item) in cfg.items.iter().enumerate() {
        let mut tests: Vec<(String, &'static str, Vec<f64>, Vec<f64>)> = Vec::new();
        for (r, &(ji, side, _)) in results.iter().zip(&jobs) {
            if ji != i {
                continue;
            }
            for m in
                r.as_ref().map_err(|e| format!("{} under {}: {e}", item.name(), if side { &cfg.b } else { &cfg.a }))?
            {
                let pos = match tests.iter().position(|t| t.0 == m.test) {
                    Some(p) => p,
                    None => {
                        tests.push((m.test.clone(), m.unit, Vec::new(), Vec::new()));
                        tests.len() - 1
                    }
                };
                if side { tests[pos].3.push(m.value) } else { tests[pos].2.push(m.value) }
            }
        }
        for (test, unit, a, b) in tests {
            rows.push(Row::from_samples(item.name(), &test, unit, &a, &b));
        }
    }
    let m = cfg.items[0].machine();
    Ok(CompareReport {
        a: cfg.a.to_string(),
        b: cfg.b.to_string(),
        runs: cfg.runs,
        seeds,
        disk: m.disk.clone(),
        mem_bytes: m.mem_bytes,
        cpu: m.cpu.clone(),
        host: m.host.clone(),
        fs: m.host_profile().map(|h| h.fs.describe()).unwrap_or_default(),
        machine: {
            let mut j = m.json();
            if let Some(o) = j.as_object_mut() {
                o.remove("seed");
            }
            j
        },
        commands: cfg.items.iter().map(|i| i.command_line()).collect(),
        rows,
    })
}

/// Format a value with about four significant digits.
fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The study as a table.
/// A change in %: one decimal, or enough decimals to show a change that one decimal
/// would print as 0.0 % (so "B lower" never sits next to "-0.0%").
fn fmt_change(pct: f64) -> String {
    let a = pct.abs();
    if a == 0.0 || a >= 0.05 {
        format!("{pct:.1}%")
    } else if a >= 0.0005 {
        format!("{pct:.3}%")
    } else {
        format!("{pct:.1e}%")
    }
}

pub fn render(r: &CompareReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "A/B study, simulated: A = {}, B = {}; {} run(s) each, seeds {}..{}",
        r.a,
        r.b,
        r.runs,
        r.seeds.first().copied().unwrap_or(0),
        r.seeds.last().copied().unwrap_or(0)
    );
    let _ = writeln!(s, "machine: disk {}, {} MiB, {}, {}, {}", r.disk, r.mem_bytes >> 20, r.cpu, r.host, r.fs);
    for c in &r.commands {
        let _ = writeln!(s, "  {c}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<11} {:<22} {:>10} {:>10} {:<6} {:>9} {:>7} {:>7}  verdict",
        "bench", "test", "A mean", "B mean", "unit", "change", "A cv", "B cv"
    );
    for row in &r.rows {
        let verdict = row.verdict.as_str();
        // One run per side has no deviation: show n/a rather than a 0 % that is not measured.
        // Printed like the change, so a small cv next to a small change shows its digits.
        let cv = |x: f64| if r.runs < 2 { "n/a".to_string() } else { fmt_change(x) };
        let _ = writeln!(
            s,
            "{:<11} {:<22} {:>10} {:>10} {:<6} {:>9} {:>7} {:>7}  {verdict}",
            row.bench,
            row.test,
            fmt_value(row.a_mean),
            fmt_value(row.b_mean),
            row.unit,
            fmt_change(row.change_pct),
            cv(row.a_cv_pct),
            cv(row.b_cv_pct)
        );
    }
    let outside = r.rows.iter().filter(|x| x.changed()).count();
    if r.runs < 2 {
        let _ = writeln!(
            s,
            "\n{outside} of {} tests differ between A and B. With one run per side there is no run-to-run deviation to judge them against: use --runs 2 or more.",
            r.rows.len()
        );
    } else {
        let _ = writeln!(
            s,
            "\n{outside} of {} tests changed by more than twice the larger run-to-run deviation (cv: sample standard deviation in % of the mean).",
            r.rows.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_from_samples() {
        let a = [10.0, 12.0, 11.0];
        let b = [9.0, 9.5, 8.5];
        let r = Row::from_samples("x", "t", "MB/s", &a, &b);
        assert_eq!(r.a_mean, 11.0);
        assert_eq!(r.b_mean, 9.0);
        assert!((r.change_pct - (-200.0 / 11.0)).abs() < 1e-12);
        assert!((r.a_cv_pct - 100.0 / 11.0).abs() < 1e-12);
        assert!((r.b_cv_pct - 0.5 / 9.0 * 100.0).abs() < 1e-12);
        // |−18.2| < 2 × 9.09 = 18.18? No: outside.
        assert!(!r.within_variation);
        let json = serde_json::to_string(&r).unwrap();
        let fields = [
            "bench",
            "test",
            "a_mean",
            "b_mean",
            "unit",
            "change_pct",
            "a_cv_pct",
            "b_cv_pct",
            "within_variation",
            "verdict",
        ];
        let at: Vec<usize> = fields.iter().map(|f| json.find(&format!("\"{f}\":")).expect(f)).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{json}");
        assert_eq!(json.matches("\":").count(), fields.len(), "{json}");
    }

    /// The JSON verdict is the table's, in its words, for each kind of row.
    #[test]
    fn verdicts() {
        let v = |a: &[f64], b: &[f64]| Row::from_samples("x", "t", "MB/s", a, b).verdict;
        assert_eq!(v(&[10.0, 10.0], &[10.0, 10.0]), Verdict::NoChange);
        assert_eq!(v(&[10.0, 12.0], &[11.5, 11.0]), Verdict::WithinVariation);
        assert_eq!(v(&[10.0, 10.1], &[12.0, 12.1]), Verdict::BHigher);
        assert_eq!(v(&[10.0, 10.1], &[8.0, 8.1]), Verdict::BLower);
        let r = Row::from_samples("x", "t", "MB/s", &[10.0, 10.1], &[8.0, 8.1]);
        assert!(r.changed());
        assert!(serde_json::to_string(&r).unwrap().contains("\"verdict\":\"B lower\""));
        assert!(!Row::from_samples("x", "t", "MB/s", &[1.0, 1.0], &[1.0, 1.0]).changed());
        // One part in a million is no change, even with no deviation to judge it by; two
        // parts in a million with none is a change.
        assert_eq!(v(&[100.0], &[100.0 * (1.0 - 0.9e-6)]), Verdict::NoChange);
        assert_eq!(v(&[100.0], &[100.0 * (1.0 - 2e-6)]), Verdict::BLower);
    }

    #[test]
    fn bench_lists() {
        let m = machine_2007(1);
        let all = items("seed-2007", &m).unwrap();
        let names: Vec<&str> = all.iter().map(|i| i.name()).collect();
        assert_eq!(names, ["sysbench", "tiobench", "tiobench", "iozone", "iozone", "aio-stress", "aio-stress"]);
        assert_eq!(items("iozone,seed-2007", &m).unwrap().len(), 7);
        let e = items("sysbench,bonnie", &m).unwrap_err();
        assert!(e.contains("bonnie") && e.contains("seed-2007"), "{e}");
    }
}
