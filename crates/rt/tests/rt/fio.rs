//! The runtime against fio on the same file, in short: a CI-sized form of
//! `benches/fio_compare.sh` (which is the measurement; see docs/real-runtime.md). 4 KiB
//! random reads with O_DIRECT at queue depth 32, fio and our noop alternating, one second
//! each; our share of fio's IOPS is taken against the mean of the fio runs around each of
//! ours, which cancels the device's drift.

use crate::common::*;
use iosched_rt::workload::{Control, fio_like};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const SIZE: u64 = 64 << 20;

fn fio_iops(file: &Path) -> f64 {
    let out = Command::new("fio")
        .args(["--name=cmp", "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=io_uring", "--iodepth=32"])
        .args(["--runtime=1", "--time_based", "--output-format=json"])
        .arg(format!("--filename={}", file.display()))
        .arg(format!("--size={SIZE}"))
        .output()
        .expect("fio runs");
    assert!(out.status.success(), "fio failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
    v["jobs"][0]["read"]["iops"].as_f64().expect("jobs[0].read.iops in fio's JSON")
}

fn our_iops(file: &Path, rw: fio_like::Rw, runtime: Option<Duration>) -> f64 {
    let mut o = options("noop");
    o.size = Some(SIZE);
    let cfg = fio_like::Config {
        rw,
        bs: if rw == fio_like::Rw::Write { 1 << 20 } else { 4096 },
        iodepth: if rw == fio_like::Rw::Write { 8 } else { 32 },
        size: SIZE - 4096,
        runtime,
        seed: 1,
        rwmixread: 50,
        prios: Vec::new(),
    };
    let (res, ended) = fio_like::run(file, o, &cfg, &Control::default()).unwrap();
    assert!(ended.is_complete(), "{ended:?}");
    assert!(res.report.errors.is_empty(), "{:?}", res.report.first_error);
    res.iops
}

pub fn our_noop_keeps_up_with_fio_on_the_same_file() {
    let dir = TempDir::new("fio");
    let file = dir.path("t");
    // Lay the target out and write it once, so that reads reach the device.
    our_iops(&file, fio_like::Rw::Write, None);
    let mut fio = vec![fio_iops(&file)];
    let mut shares = Vec::new();
    for _ in 0..3 {
        let ours = our_iops(&file, fio_like::Rw::RandRead, Some(Duration::from_secs(1)));
        fio.push(fio_iops(&file));
        let around = (fio[fio.len() - 2] + fio[fio.len() - 1]) / 2.0;
        assert!(around > 0.0, "fio reported 0 IOPS: {fio:?}");
        shares.push(ours / around);
    }
    shares.sort_by(f64::total_cmp);
    let median = shares[1];
    eprintln!("fio IOPS {fio:?}; noop's shares {shares:?}; median {:.0} %", 100.0 * median);
    // The bench's target (release build, ten-second runs) is 95 %. Here the build keeps
    // debug assertions, the runs are one second long and other tests share the two cores
    // (about 75 % comes out), so the test asks for what no working runtime misses: over
    // half of fio's rate. A runtime that serialises requests or loses wake-ups falls far
    // below it.
    assert!(median >= 0.5, "noop reached only {:.0} % of fio's IOPS (fio {fio:?})", 100.0 * median);
}

/// `iosched real fio` issues the job's stream: the requests a job file's job sends to the
/// queue on a real file are, in order, the I/Os of its `JobStream` — the stream the
/// simulated `iosched fio` draws for the same job.
pub fn job_files_issue_the_same_ios_as_the_simulator() {
    use iosched_benchmarks::fio::job::build;
    use iosched_benchmarks::fio::jobfile::parse_args;
    use iosched_benchmarks::fio::stream::{JobStream, Region};
    use iosched_core::Op;
    use iosched_core::trace::Record;
    let args: Vec<String> = [
        "--name=mix",
        "--rw=randrw",
        "--rwmixread=60",
        "--bssplit=4k/50:16k/50",
        "--size=4m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let jobs = build(&parse_args(&args, 1).unwrap()).unwrap();
    let dir = TempDir::new("real-fio");
    let mut o = iosched_rt::Options::new(iosched_policies::SchedSpec::parse("noop").unwrap());
    o.backend = iosched_rt::BackendChoice::Threads;
    o.record = true;
    let iosched_rt::workload::fio::FioRun { report, runtime: rt, ended, .. } =
        iosched_rt::workload::fio::run(&dir.path("t"), o, &jobs, 7, &Control::default()).unwrap();
    assert!(ended.is_complete(), "{ended:?}");
    let moved: u64 = report.jobs[0].dirs.iter().map(|d| d.io_bytes).sum();
    // Until its size is issued: the last I/O may run past it by less than one block.
    assert!((4 << 20..(4 << 20) + 16384).contains(&moved), "moved {moved}");
    let got: Vec<(bool, u64, u64)> = rt
        .trace
        .unwrap()
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Arrival { rq, .. } if matches!(rq.op, Op::Read | Op::Write) => {
                Some((rq.op == Op::Write, rq.sector * 512, rq.len_sectors as u64 * 512))
            }
            _ => None,
        })
        .collect();
    let mut s = JobStream::new(&jobs.jobs[0], vec![Region { start: 0, len: 4 << 20 }], 1, 7);
    let want: Vec<(bool, u64, u64)> =
        (0..got.len()).map(|_| s.next_io()).map(|io| (io.write, io.offset, io.len)).collect();
    assert_eq!(got, want);
    assert!(got.iter().any(|g| g.0) && got.iter().any(|g| !g.0), "both directions");
    assert!(got.iter().any(|g| g.2 == 4096) && got.iter().any(|g| g.2 == 16384), "both sizes");
}

/// `job`'s options run on `target` through our noop (thread-pool backend, seed 1).
fn run_with_noop(target: &Path, job: &[&str]) -> iosched_benchmarks::fio::Report {
    use iosched_benchmarks::fio::job::build;
    use iosched_benchmarks::fio::jobfile::parse_args;
    let args: Vec<String> = job.iter().map(|s| s.to_string()).collect();
    let jobs = build(&parse_args(&args, 1).unwrap()).unwrap();
    let mut o = iosched_rt::Options::new(iosched_policies::SchedSpec::parse("noop").unwrap());
    o.backend = iosched_rt::BackendChoice::Threads;
    iosched_rt::workload::fio::run(target, o, &jobs, 1, &Control::default()).unwrap().report
}

/// Our fio JSON uses fio's names: every key we print where fio has the same object is one
/// fio 3.x prints, and the keys of fio's we leave out are exactly the documented ones
/// (docs/fio.md, "The report"); our own additions are named here.
pub fn our_fio_json_keys_are_fios() {
    use serde_json::Value;
    use std::collections::BTreeSet;
    let dir = TempDir::new("fio-keys");
    let file = dir.path("f");
    let job = ["--name=k", "--rw=randrw", "--bs=4k", "--size=4m", "--direct=1"];
    let out = Command::new("fio")
        .args(job)
        .arg(format!("--filename={}", file.display()))
        .arg("--output-format=json")
        .output()
        .unwrap();
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let fio: Value = serde_json::from_slice(&out.stdout).unwrap();
    let report = run_with_noop(&dir.path("t"), &job);
    let ours = iosched_benchmarks::fio::report::json(&report);
    let keys =
        |v: &Value| -> BTreeSet<String> { v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default() };
    // (path, ours, fio's, our additions, fio's keys we leave out)
    type Check<'a> = (&'a str, Value, Value, &'a [&'a str], &'a [&'a str]);
    let checks: Vec<Check> = vec![
        (
            "top",
            ours.clone(),
            fio.clone(),
            &["world", "scheduler", "seed", "iosched"],
            &["timestamp", "timestamp_ms", "time", "disk_util"],
        ),
        (
            "job",
            ours["jobs"][0].clone(),
            fio["jobs"][0].clone(),
            &[],
            &["eta", "elapsed", "usr_cpu", "sys_cpu", "ctx", "majf", "minf"],
        ),
        ("read", ours["jobs"][0]["read"].clone(), fio["jobs"][0]["read"].clone(), &[], &["slat_ns"]),
        (
            "job options",
            ours["jobs"][0]["job options"].clone(),
            fio["jobs"][0]["job options"].clone(),
            &[],
            // fio lists its --filename= too; ours is the target's, given apart.
            &["filename"],
        ),
        ("clat_ns", ours["jobs"][0]["read"]["clat_ns"].clone(), fio["jobs"][0]["read"]["clat_ns"].clone(), &[], &[]),
        ("lat_ns", ours["jobs"][0]["read"]["lat_ns"].clone(), fio["jobs"][0]["read"]["lat_ns"].clone(), &[], &[]),
        ("sync", ours["jobs"][0]["sync"].clone(), fio["jobs"][0]["sync"].clone(), &[], &[]),
        ("sync.lat_ns", ours["jobs"][0]["sync"]["lat_ns"].clone(), fio["jobs"][0]["sync"]["lat_ns"].clone(), &[], &[]),
    ];
    for (path, a, f, added, missing) in checks {
        let (a, f) = (keys(&a), keys(&f));
        let extra: BTreeSet<String> = a.difference(&f).cloned().collect();
        let lacking: BTreeSet<String> = f.difference(&a).cloned().collect();
        assert_eq!(extra, added.iter().map(|s| s.to_string()).collect(), "{path}: keys fio does not print");
        assert_eq!(lacking, missing.iter().map(|s| s.to_string()).collect(), "{path}: fio's keys we leave out");
    }
}

/// Our normal output has fio's lines: after each job's first line, every line's label and
/// field names (`clat (usec): min=…, max=…` gives `clat` and `min max avg stdev`) are fio
/// 3.33's for the same job, in fio's order, except the documented ones we leave out
/// (docs/fio.md, "The report"): `slat`, `cpu`, and on real targets the disk statistics. The job runs 2 s, so the bandwidth and IOPS sample lines
/// are there, and syncs every 64 writes, so the sync lines are.
pub fn our_normal_output_has_fios_lines() {
    let dir = TempDir::new("fio-lines");
    let job = [
        "--name=k",
        "--rw=randrw",
        "--bs=4k",
        "--size=16m",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=4",
        "--runtime=2",
        "--time_based",
        "--fsync=64",
    ];
    let out = Command::new("fio").args(job).arg(format!("--filename={}", dir.path("f").display())).output().unwrap();
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let fio = String::from_utf8(out.stdout).unwrap();
    let report = run_with_noop(&dir.path("t"), &job);
    let ours = iosched_benchmarks::fio::report::normal(&report);
    let left_out = ["slat", "cpu", "Disk stats", "vda", "sda", "nvme0n1"];
    let shape = |text: &str| -> Vec<String> {
        let mut v = Vec::new();
        for line in text.lines().skip_while(|l| !l.contains("(groupid=")).skip(1) {
            // Drop the units in brackets, then split the label from the fields.
            let mut plain = String::new();
            let mut depth = 0;
            for c in line.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ if depth == 0 => plain.push(c),
                    _ => {}
                }
            }
            let (label, rest) = plain.split_once(':').unwrap_or((plain.as_str(), ""));
            let label = label.trim().to_string();
            if label.is_empty() || label.starts_with('|') || left_out.iter().any(|l| label.starts_with(l)) {
                continue;
            }
            // Bucket labels (`lat`'s `250=`, `IO depths`' `4=`) are data; fields are names.
            let fields: Vec<&str> = rest
                .split([',', ' '])
                .filter_map(|t| t.split_once('=').map(|f| f.0))
                .filter(|f| !f.is_empty() && !f.starts_with(|c: char| c.is_ascii_digit() || c == '>'))
                .collect();
            let line = format!("{label}: {}", fields.join(" "));
            // One `lat` line per unit and range: the buckets' spread is data too.
            if !(label == "lat" && v.last() == Some(&line)) {
                v.push(line);
            }
        }
        v
    };
    let want = shape(&fio);
    for line in [
        "bw: min max per avg stdev samples",
        "iops: min max avg stdev samples",
        "READ: bw io run",
        "sync: min max avg stdev",
    ] {
        assert!(want.iter().any(|l| l == line), "fio's {line:?} in {want:?}");
    }
    assert_eq!(shape(&ours), want, "ours:\n{ours}\nfio's:\n{fio}");
}

/// On a real target a job keeps the simulator's rules, from the same state machine:
/// `rate_iops`, `number_ios`, `thinktime`, `ramp_time`, `fsync`, and a `write_iolog` read
/// back by `read_iolog` issues the same I/Os in the same order.
pub fn real_jobs_keep_the_simulators_rules() {
    use iosched_core::Op;
    use iosched_core::trace::Record;
    let dir = TempDir::new("real-fio-rules");
    let run = |extra: &[&str], record: bool| {
        let mut args: Vec<String> =
            ["--name=j", "--bs=4k", "--size=4m", "--direct=1"].iter().map(|s| s.to_string()).collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let env = |_: &str| None;
        let read = |p: &Path, _: u64| std::fs::read_to_string(p);
        let ctx = iosched_benchmarks::fio::Context { pagesize: 4096, mb_memory: 0, ncpus: 1, env: &env, read: &read };
        let jobs = iosched_benchmarks::fio::load(&[], &args, &ctx).unwrap();
        let mut o = iosched_rt::Options::new(iosched_policies::SchedSpec::parse("noop").unwrap());
        o.backend = iosched_rt::BackendChoice::Threads;
        o.record = record;
        let r = iosched_rt::workload::fio::run(&dir.path("t"), o, &jobs, 3, &Control::default()).unwrap();
        assert!(r.ended.is_complete(), "{extra:?}: {:?}", r.ended);
        r
    };
    let ios = |r: &iosched_rt::workload::fio::FioRun| r.report.jobs[0].dirs.iter().map(|d| d.total_ios).sum::<u64>();
    // Lay the file out and write it (the reads below then reach the device).
    run(&["--rw=write", "--bs=64k"], false);
    let r = run(&["--rw=randread", "--rate_iops=200", "--ramp_time=200ms", "--runtime=1", "--time_based"], false);
    assert!((195..=205).contains(&ios(&r)), "rate_iops=200 for 1 s after a ramp: {} I/Os", ios(&r));
    let r = run(&["--rw=randread", "--ioengine=libaio", "--iodepth=8", "--number_ios=50"], false);
    assert_eq!(ios(&r), 50);
    let r = run(&["--rw=randread", "--thinktime=20000", "--runtime=1", "--time_based"], false);
    assert!((30..=51).contains(&ios(&r)), "20 ms of think time per I/O for 1 s: {} I/Os", ios(&r));
    let r = run(&["--rw=randread", "--ramp_time=300ms", "--runtime=500ms", "--time_based"], false);
    let us = r.report.jobs[0].runtime_us;
    assert!((480_000..650_000).contains(&us), "runtime after the ramp: {us} µs");
    let r = run(&["--rw=write", "--size=64k", "--fsync=4"], true);
    assert_eq!(r.report.jobs[0].fsyncs, 4);
    // Every request the queue took in, in order: (op, sector, sectors).
    let arrivals = |r: &iosched_rt::workload::fio::FioRun| -> Vec<(Op, u64, u32)> {
        let records = &r.runtime.trace.as_ref().unwrap().records;
        records
            .iter()
            .filter_map(|x| match x {
                Record::Arrival { rq, .. } => Some((rq.op, rq.sector, rq.len_sectors)),
                _ => None,
            })
            .collect()
    };
    let flushes = |r: &iosched_rt::workload::fio::FioRun| arrivals(r).iter().filter(|a| a.0 == Op::Flush).count();
    assert_eq!(flushes(&r), 4, "each fsync a flush through the queue");
    // A log written on the target, replayed there: the same I/Os in the same order.
    let log = dir.path("j.iolog");
    let ops = |r: &iosched_rt::workload::fio::FioRun| -> Vec<(Op, u64, u32)> {
        arrivals(r).into_iter().filter(|a| a.0 != Op::Flush).collect()
    };
    let w =
        run(&["--rw=randrw", "--ioengine=libaio", "--iodepth=4", &format!("--write_iolog={}", log.display())], true);
    let (path, text) = w.iologs.first().cloned().expect("the job's iolog");
    assert_eq!(path, log.display().to_string());
    std::fs::write(&log, text).unwrap();
    let r = run(&["--ioengine=libaio", "--iodepth=4", &format!("--read_iolog={}", log.display())], true);
    // The replay's own run lays the target out first (its log reads); its I/Os follow.
    let (replayed, written) = (ops(&r), ops(&w));
    let same = replayed.ends_with(&written);
    assert!(same, "the replay's last {} I/Os are not the log's ({} in all)", written.len(), replayed.len());
    assert!(ops(&w).len() >= 1024, "a whole pass: {}", ops(&w).len());
}
