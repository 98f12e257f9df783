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
