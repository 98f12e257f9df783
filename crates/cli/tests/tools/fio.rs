//! Our fio output through fio's own tools.

use crate::{TempDir, iosched};
use serde_json::Value;
use std::process::Command;

/// `fio_jsonplus_clat2csv` (fio's `tools/`, in the Debian package) converts our json+
/// output and validates its CSV against it; the CSV's counts are our I/Os.
pub fn fios_jsonplus_script_reads_our_json_plus() {
    let t = TempDir::new("jsonplus");
    let out = t.s("out.json");
    let job = ["--name=mixed", "--rw=randrw", "--size=8M", "--direct=1", "--ioengine=libaio", "--iodepth=8"];
    let mut args = vec!["fio", "--output-format", "json+", "--output", &out, "--"];
    args.extend(job);
    args.extend(["--name=seq", "--rw=write", "--size=4M"]);
    iosched(&args);
    let csv = t.s("lat.csv");
    for extra in [None, Some("--validate")] {
        let mut c = Command::new("fio_jsonplus_clat2csv");
        c.args([&out, &csv]).args(extra);
        let o = c.output().expect("run fio_jsonplus_clat2csv");
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "fio_jsonplus_clat2csv {extra:?}: {text}");
        if extra.is_some() {
            assert_eq!(text.matches("validated").count(), 2, "{text}");
        }
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for (n, job) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let text = std::fs::read_to_string(t.join(&format!("lat_job{n}.csv"))).unwrap();
        let head: Vec<String> = text.lines().next().unwrap().split(',').map(|c| c.trim().to_string()).collect();
        for dir in ["read", "write"] {
            let col = head.iter().position(|c| *c == format!("{dir}_clat_ns_count")).unwrap();
            let sum: u64 = text
                .lines()
                .skip(1)
                .filter_map(|l| l.split(',').nth(col).and_then(|c| c.trim().parse::<u64>().ok()))
                .sum();
            assert_eq!(sum, job[dir]["total_ios"].as_u64().unwrap(), "job {n} {dir}");
        }
    }
}

/// Our zipf, pareto and normal block draws against fio's own `fio-genzipf` (fio's `t/`,
/// in the Debian package), the way it reports them: as many draws as blocks, the blocks
/// that were hit sorted by hits, and the share of the draws the top tenth of them took.
pub fn skewed_distributions_match_fio_genzipf() {
    use iosched_benchmarks::fio::stream::{JobStream, Region};
    let n = 4096u64; // 4 GiB in 1 MiB blocks
    for (kind, input, opt) in
        [("zipf", "1.2", "zipf:1.2"), ("pareto", "0.2", "pareto:0.2"), ("normal", "5", "normal:5")]
    {
        let o = Command::new("fio-genzipf")
            .args(["-t", kind, "-i", input, "-b", "1048576", "-g", "4", "-o", "10"])
            .output()
            .expect("run fio-genzipf");
        let text = String::from_utf8_lossy(&o.stdout);
        let line = text.lines().find(|l| l.starts_with("Top  10.00%")).unwrap_or_else(|| panic!("{text}"));
        let fio: f64 = line.split_whitespace().nth(2).unwrap().trim_end_matches('%').parse().unwrap();
        let args: Vec<String> = ["--name=j", "--rw=randread", "--bs=1m", &format!("--random_distribution={opt}")]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let ctx_env = |_: &str| None;
        let read =
            |_: &std::path::Path, _: u64| -> std::io::Result<String> { Err(std::io::ErrorKind::NotFound.into()) };
        let ctx =
            iosched_benchmarks::fio::Context { pagesize: 4096, mb_memory: 1024, ncpus: 1, env: &ctx_env, read: &read };
        let job = iosched_benchmarks::fio::load(&[], &args, &ctx).unwrap().jobs.remove(0);
        let mut s = JobStream::new(&job, vec![Region { start: 0, len: n << 20 }], 1, 1);
        let mut hits = std::collections::HashMap::new();
        for _ in 0..n {
            *hits.entry(s.next_io().offset).or_insert(0u64) += 1;
        }
        let mut v: Vec<u64> = hits.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = v[..(v.len() - 1) / 10 + 1].iter().sum();
        let ours = 100.0 * top as f64 / n as f64;
        eprintln!("{opt}: the top tenth of hit blocks take {ours:.2} % of the draws here, {fio:.2} % in fio-genzipf");
        assert!(
            (ours - fio).abs() < 5.0,
            "{opt}: the top tenth of hit blocks take {ours:.2} % here, {fio:.2} % in fio"
        );
    }
}

/// Our per-I/O log files beside fio 3.33's for the same job: the same files (less fio's
/// `slat` log: no submission latency is modelled), one line per I/O in both, each line
/// fio's five integer columns with the direction and block size of the job.
pub fn log_files_have_fios_names_and_lines() {
    let t = TempDir::new("logs");
    let job = ["--name=t", "--rw=randread", "--size=1M", "--bs=4k", "--direct=1", "--ioengine=psync"];
    let logs =
        |p: &str| [format!("--write_lat_log={p}l"), format!("--write_bw_log={p}b"), format!("--write_iops_log={p}i")];
    let fio = Command::new("fio")
        .current_dir(&t.0)
        .args(job)
        .arg(format!("--filename={}", t.s("data")))
        .args(logs("f"))
        .arg("--output-format=json")
        .output()
        .expect("run fio");
    assert!(fio.status.success(), "{}", String::from_utf8_lossy(&fio.stderr));
    let ours = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .current_dir(&t.0)
        .arg("fio")
        .arg("--")
        .args(job)
        .args(logs("o"))
        .output()
        .unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    let lines = |name: &str| -> Vec<Vec<i64>> {
        let text = std::fs::read_to_string(t.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        text.lines()
            .map(|l| l.split(", ").map(|f| f.parse::<i64>().unwrap_or_else(|_| panic!("{name}: `{l}`"))).collect())
            .collect()
    };
    assert!(t.join("fl_slat.1.log").exists(), "fio writes a slat log");
    assert!(!t.join("ol_slat.1.log").exists(), "we do not: no submission latency is modelled");
    for kind in ["l_clat", "l_lat", "b_bw", "i_iops"] {
        let (f, o) = (lines(&format!("f{kind}.1.log")), lines(&format!("o{kind}.1.log")));
        assert_eq!(f.len(), 256, "fio's {kind}: an entry per I/O");
        assert_eq!(o.len(), f.len(), "{kind}: as many entries as fio's");
        for l in f.iter().chain(&o) {
            assert_eq!(l.len(), 5, "{kind}: {l:?}");
            assert_eq!((l[2], l[3], l[4]), (0, 4096, 0), "{kind}: read, 4096 bytes, not RT: {l:?}");
        }
        if kind == "i_iops" {
            assert!(o.iter().all(|l| l[1] == 1));
        }
    }
}

/// The simulated time each of fio's examples may run here: longer than every example's own
/// `runtime` (15 minutes at most), so that only a job of hours (`fsx.fio`: 32 million I/Os)
/// meets it, and then reports what its jobs did by then.
const EXAMPLE_BOUND: &str = "20m";

fn jobs(n: usize) -> String {
    format!("{n} job{}", if n == 1 { "" } else { "s" })
}

/// What `iosched fio` made of one of fio's example job files.
fn example_outcome(t: &TempDir, path: &std::path::Path) -> Result<String, String> {
    let name = path.file_name().unwrap().to_str().unwrap();
    let dir = t.join(name.trim_end_matches(".fio"));
    std::fs::create_dir_all(&dir).unwrap();
    // In a directory of its own: a job's logs (write_lat_log & co.) are written where it runs.
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(["fio", "--output-format", "json", "--max-sim-time", EXAMPLE_BOUND])
        .arg(path)
        .current_dir(&dir)
        .output()
        .expect("run iosched");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("iosched: note: ")).collect();
    let report = || -> Result<usize, String> {
        let doc: Value = serde_json::from_slice(&o.stdout).map_err(|e| format!("{name}: no JSON report: {e}"))?;
        let jobs = doc["jobs"].as_array().map_or(0, Vec::len);
        if jobs == 0 {
            return Err(format!("{name}: a report without jobs"));
        }
        Ok(jobs)
    };
    if o.status.success() {
        if !lines.is_empty() {
            return Err(format!("{name}: succeeded with messages: {stderr}"));
        }
        return Ok(format!("runs: {}", jobs(report()?)));
    }
    match lines.as_slice() {
        [l] if l.contains("stopped at --max-sim-time") && l.ends_with("the report above is partial") => {
            Ok(format!("runs, stopped at the {EXAMPLE_BOUND} bound: a partial report of {}", jobs(report()?)))
        }
        [l] => {
            // A refusal: `iosched: FILE:LINE: why`, one line.
            let prefix = format!("iosched: {}:", path.display());
            let rest = l.strip_prefix(&prefix).ok_or_else(|| format!("{name}: refusal without its file: {l}"))?;
            let (line, why) = rest.split_once(": ").ok_or_else(|| format!("{name}: refusal without a line: {l}"))?;
            line.parse::<u32>().map_err(|_| format!("{name}: refusal without a line number: {l}"))?;
            if !o.stdout.is_empty() {
                return Err(format!("{name}: refused, yet wrote a report"));
            }
            Ok(format!("refused at line {line}: {}", why.replace('|', "\\|")))
        }
        _ => Err(format!("{name}: not one line of refusal: {stderr}")),
    }
}

/// Every job file of fio 3.33's `examples/` (Debian's fio-examples) either runs in the
/// simulator, to its end or to the bound with a partial report, or is refused with one
/// line naming its file, line and reason; the outcomes are docs/fio-examples.md's, which
/// `IOSCHED_BLESS=1` writes.
pub fn fios_examples_run_or_are_refused_in_one_line() {
    let t = TempDir::new("examples");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(crate::need::FIO_EXAMPLES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension() == Some("fio".as_ref()))
        .collect();
    files.sort();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let (mut ran, mut bounded, mut refused_engine, mut refused_option) = (0, 0, 0, 0);
    for f in &files {
        match example_outcome(&t, f) {
            Ok(o) => {
                if o.starts_with("runs: ") {
                    ran += 1;
                } else if o.starts_with("runs, ") {
                    bounded += 1;
                } else if o.contains("not a modelled engine") {
                    refused_engine += 1;
                } else {
                    refused_option += 1;
                }
                rows.push(format!("| `{}` | {o} |", f.file_name().unwrap().to_str().unwrap()));
            }
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let page = format!(
        "# fio's examples in the simulator\n\n\
         Generated by `IOSCHED_BLESS=1 cargo test --release -p iosched --test tools -- \
         fio::fios_examples_run_or_are_refused_in_one_line` from the job files of fio 3.33's `examples/` \
         (Debian package fio-examples, `{dir}`), each run as `iosched fio FILE --output-format json \
         --max-sim-time {EXAMPLE_BOUND}` on the default machine; the test fails when an outcome differs \
         from this page. A refusal is the whole of the command's message after `iosched: FILE:`.\n\n\
         **{total} job files: {ran} run to their end, {bounded} run until the {EXAMPLE_BOUND} bound of simulated time and \
         report what they did by then, {refused} are refused** ({refused_engine} for an engine that is not \
         modelled, {refused_option} for an option or value that is not).\n\n\
         | file | outcome |\n|---|---|\n{rows}\n",
        dir = crate::need::FIO_EXAMPLES,
        total = files.len(),
        refused = refused_engine + refused_option,
        rows = rows.join("\n"),
    );
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fio-examples.md");
    if std::env::var_os("IOSCHED_BLESS").is_some() {
        std::fs::write(&docs, &page).unwrap();
    }
    let have = std::fs::read_to_string(&docs).unwrap_or_default();
    assert!(
        have == page,
        "docs/fio-examples.md differs from the outcomes (IOSCHED_BLESS=1 rewrites it):\n{}",
        page.lines().filter(|l| !have.lines().any(|h| h == *l)).collect::<Vec<_>>().join("\n")
    );
}
