//! fio job files in the simulator: the seed's tiobench result from a job file, I/O
//! priorities, and fio's report fields.

use super::spec;
use iosched_benchmarks::fio::report::json;
use iosched_benchmarks::fio::{self, Context, JobSet};
use iosched_workloads::fio::{FioConfig, run};
use iosched_workloads::machine::Machine;
use std::path::{Path, PathBuf};

fn load(files: &[PathBuf], args: &[&str], env: &[(&str, &str)], m: &Machine) -> JobSet {
    let env = |v: &str| env.iter().find(|e| e.0 == v).map(|e| e.1.to_string());
    let read = |p: &std::path::Path, limit: u64| iosched_disk::input::read_text(p, limit);
    let ctx = Context { pagesize: 4096, mb_memory: m.mem_bytes >> 20, ncpus: 1, env: &env, read: &read };
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    fio::load(files, &args, &ctx).unwrap()
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fio").join(name)
}

/// tiobench's sequential-read phase as a fio job file, on the 2003 report's machine: AS
/// reads at least 1.7× what deadline does, as in the seed's tiobench.
#[test]
fn the_seed_as_a_job_file_shows_anticipation() {
    let m = Machine::new("ide-2003", 256 << 20, "piii-1000", 1);
    let jobs = load(&[example("tiobench-seq-read.fio")], &[], &[("NJOBS", "32"), ("SIZE", "16m")], &m);
    assert_eq!(jobs.jobs[0].numjobs, 32);
    let cfg = FioConfig { jobs, machine: m, record_trace: false };
    let bw = |s: &str| {
        let r = run(&spec(s), &cfg).unwrap().report;
        assert_eq!(r.jobs.len(), 32);
        let bytes: u64 = r.jobs.iter().map(|j| j.dirs[0].io_bytes).sum();
        assert_eq!(bytes, 512 << 20, "{s}: every job reads its 16 MiB");
        let ms = r.jobs.iter().map(|j| j.runtime_us).max().unwrap() as f64 / 1e3;
        bytes as f64 / ms
    };
    let (dl, as_) = (bw("deadline"), bw("as"));
    assert!(as_ >= 1.7 * dl, "AS {as_:.0} B/ms vs deadline {dl:.0}");
}

/// An RT job beside BE jobs on a disk that takes one command at a time (so requests wait in
/// the scheduler, not in the drive's queue): its reads wait less under the schedulers with
/// I/O priorities (CFQ, BFQ, mq-deadline) and not under noop.
#[test]
fn an_rt_job_is_served_first_where_priorities_count() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    let args = [
        "--rw=randread",
        "--bs=4k",
        "--size=256m",
        "--direct=1",
        "--runtime=3",
        "--time_based",
        "--name=rt",
        "--prioclass=1",
        "--prio=0",
        "--name=be",
        "--prioclass=2",
        "--prio=4",
        "--numjobs=3",
    ];
    let jobs = load(&[], &args, &[], &m);
    let cfg = FioConfig { jobs, machine: m, record_trace: false };
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    let ratio = |s: &str| {
        let r = run(&spec(s), &cfg).unwrap().report;
        let rt = mean(&r.jobs[0].dirs[0].clat_ns);
        let be: Vec<u64> = r.jobs[1..].iter().flat_map(|j| j.dirs[0].clat_ns.iter().copied()).collect();
        mean(&be) / rt
    };
    for s in ["cfq", "bfq", "mq-deadline"] {
        let x = ratio(s);
        eprintln!("{s}: BE / RT {x:.2}");
        assert!(x > 1.5, "{s}: BE latency / RT latency {x:.2}");
    }
    let x = ratio("noop");
    eprintln!("noop: BE / RT {x:.2}");
    assert!((0.7..1.4).contains(&x), "noop: BE / RT {x:.2}");
}

/// `cmdprio_percentage`: a fifth of one job's I/Os carry the RT class in their requests.
/// fio counts them apart (`prios`); mq-deadline, which reads the request's priority,
/// serves them first, and noop, which reads none, does not.
#[test]
fn cmdprio_gives_a_share_of_ios_their_own_priority() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    let args = [
        "--name=mixed",
        "--rw=randread",
        "--bs=4k",
        "--size=256m",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=8",
        "--runtime=3",
        "--time_based",
        "--prioclass=2",
        "--prio=4",
        "--cmdprio_percentage=20",
    ];
    let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m, record_trace: false };
    let by_prio = |s: &str| {
        let doc = json(&run(&spec(s), &cfg).unwrap().report);
        let prios = doc["jobs"][0]["read"]["prios"].as_array().expect("two priorities: a `prios` array").clone();
        let one = |class: u64, level: u64| {
            let p = prios.iter().find(|p| p["prioclass"] == class && p["prio"] == level).expect("priority listed");
            (p["clat_ns"]["N"].as_u64().unwrap(), p["clat_ns"]["mean"].as_f64().unwrap())
        };
        let (be, rt) = (one(2, 4), one(1, 0));
        assert_eq!(prios.len(), 2, "{s}: the job's own and the command priority");
        assert_eq!(prios[0]["prioclass"], 2, "{s}: the job's own priority first, as fio lists it");
        let share = rt.0 as f64 / (rt.0 + be.0) as f64;
        assert!((0.15..0.25).contains(&share), "{s}: {share:.3} of the I/Os have the RT class");
        be.1 / rt.1
    };
    let x = by_prio("mq-deadline");
    assert!(x > 2.0, "mq-deadline: BE / RT latency {x:.2}");
    let x = by_prio("noop");
    assert!((0.8..1.25).contains(&x), "noop: BE / RT latency {x:.2}");
}

/// A job on a block device (`filename=/dev/…`) does its I/O on the simulated disk's
/// partition, sized by it as fio sizes a device: `size=1%` is a hundredth of it, and an
/// offset past its end is refused, naming the job.
#[test]
fn a_job_on_a_device_is_sized_by_the_device() {
    let m = Machine::new("nvme-ssd", 1 << 30, "p4-ht", 1).with_host("linux-2.6");
    let device = m.device_bytes().unwrap();
    let args = ["--name=dev", "--filename=/dev/nvme0n1", "--rw=read", "--bs=1m", "--direct=1", "--size=1%"];
    let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
    let r = run(&spec("none"), &cfg).unwrap().report;
    assert_eq!(r.jobs[0].dirs[0].io_bytes, device / 100 / (1 << 20) * (1 << 20));
    let args = ["--name=far", "--filename=/dev/nvme0n1", "--rw=read", "--offset=900g", "--size=1g"];
    let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m, record_trace: false };
    let e = run(&spec("none"), &cfg).unwrap_err().to_string();
    assert!(e.contains("job `far`") && e.contains("past the end"), "{e}");
}

/// The JSON document has fio's keys, and the same seed gives the same bytes.
#[test]
fn json_has_fios_keys_and_is_deterministic() {
    let m = Machine::new("sata-2004-ncq", 1 << 30, "p4-ht", 3).with_host("linux-2.6");
    let args = [
        "--name=mix",
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=8k",
        "--size=32m",
        "--ioengine=libaio",
        "--direct=1",
        "--iodepth=16",
    ];
    let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m, record_trace: false };
    let a = json(&run(&spec("deadline"), &cfg).unwrap().report);
    let b = json(&run(&spec("deadline"), &cfg).unwrap().report);
    assert_eq!(a.to_string(), b.to_string());
    let job = &a["jobs"][0];
    for d in ["read", "write"] {
        for k in ["io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios", "clat_ns", "lat_ns"] {
            assert!(job[d].get(k).is_some(), "{d}.{k} missing");
        }
        assert!(job[d]["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    }
    let (r, w) = (job["read"]["total_ios"].as_u64().unwrap(), job["write"]["total_ios"].as_u64().unwrap());
    assert_eq!((r + w) * 8192, 32 << 20, "the job moves its size");
    let share = r as f64 / (r + w) as f64;
    assert!((0.65..0.75).contains(&share), "rwmixread=70: {share:.2} reads");
    // fio's disk_util: the queue's counters. Direct random I/O does not merge, so the disk
    // completed each I/O of the job as one request, and a few of the file system's own
    // (indirect blocks read to map the file, ext3's journal); 16 in flight keep it busy.
    let d = &a["disk_util"][0];
    let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
    let want = [
        "name",
        "read_ios",
        "write_ios",
        "read_merges",
        "write_merges",
        "read_ticks",
        "write_ticks",
        "in_queue",
        "util",
    ];
    assert_eq!(keys, want, "fio's keys, in fio's order");
    let ios = [d["read_ios"].as_u64().unwrap(), d["write_ios"].as_u64().unwrap()];
    assert!(ios[0] >= r && ios[1] >= w && ios[0] + ios[1] - r - w <= 16, "{d}: the job did {r}/{w}");
    assert_eq!(d["read_merges"], 0);
    assert!(d["util"].as_f64().unwrap() > 99.0, "{d}");
    let ticks = d["read_ticks"].as_u64().unwrap() + d["write_ticks"].as_u64().unwrap();
    let runtime = job["job_runtime"].as_u64().unwrap();
    assert!(ticks.abs_diff(16 * runtime) < 16 * runtime / 20, "ticks {ticks} ms: 16 in flight for {runtime} ms");
}

/// A log file of the test's own, on disk for `read_iolog=` to read.
struct LogFile(PathBuf);

impl LogFile {
    fn new(name: &str, text: &str) -> LogFile {
        let p = std::env::temp_dir().join(format!("iosched-iolog-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        LogFile(p)
    }
    fn arg(&self, opt: &str) -> String {
        format!("--{opt}={}", self.0.display())
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The I/O lines of a v3 log: (µs, the rest of the line).
fn io_lines(log: &str) -> Vec<(u64, String)> {
    log.lines()
        .skip(1)
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, rest)| !rest.ends_with(" add") && !rest.ends_with(" open") && !rest.ends_with(" close"))
        .map(|(t, rest)| (t.parse().unwrap(), rest.to_string()))
        .collect()
}

fn machine() -> Machine {
    let d = iosched_workloads::compare::machine_2007(1);
    Machine::new(&d.disk, d.mem_bytes, &d.cpu, 1).with_host(&d.host)
}

/// `write_iolog` of a run, read back by `read_iolog`, issues the same operations in the
/// same order, each no earlier after the first than the log says.
#[test]
fn a_written_iolog_replays_the_same_operations() {
    let m = machine();
    let mk = |args: &[&str]| FioConfig { jobs: load(&[], args, &[], &m), machine: m.clone(), record_trace: false };
    let first = mk(&[
        "--name=a",
        "--rw=randrw",
        "--size=4M",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=4",
        "--write_iolog=x",
    ]);
    let r1 = run(&spec("deadline"), &first).unwrap();
    assert_eq!(r1.iologs.len(), 1);
    assert_eq!(r1.iologs[0].0, "x");
    let log = LogFile::new("written", &r1.iologs[0].1);
    let arg = log.arg("read_iolog");
    let again = mk(&["--name=a", &arg, "--direct=1", "--ioengine=libaio", "--iodepth=4", "--write_iolog=y"]);
    let r2 = run(&spec("deadline"), &again).unwrap();
    let (a, b) = (io_lines(&r1.iologs[0].1), io_lines(&r2.iologs[0].1));
    assert_eq!(a.len(), 1024, "4 MiB in 4 KiB I/Os");
    assert_eq!(a.iter().map(|x| &x.1).collect::<Vec<_>>(), b.iter().map(|x| &x.1).collect::<Vec<_>>());
    for (x, y) in a.iter().zip(&b) {
        assert!(y.0 + 1 >= x.0, "replayed at {} µs, logged at {} µs: {}", y.0, x.0, x.1);
    }
    let bytes = |r: &iosched_workloads::fio::FioRun| r.report.jobs[0].dirs.iter().map(|d| d.io_bytes).sum::<u64>();
    assert_eq!(bytes(&r1), bytes(&r2));
}

/// An MSR Cambridge and a blkparse trace made for the test replay, their gaps honoured
/// to the microsecond (the I/Os are far apart, so none waits for another), and scaled by
/// replay_time_scale; replay_no_stall drops the gaps.
#[test]
fn msr_and_blkparse_traces_replay_on_their_timestamps() {
    let m = machine();
    // Filetime is in 100 ns: 0, 100 ms, 600 ms.
    let msr = LogFile::new(
        "msr.csv",
        "128166372000000000,hm,1,Read,1048576,4096,900\n128166372001000000,hm,1,Write,8192,8192,700\n\
         128166372006000000,hm,1,Read,33554432,65536,800\n",
    );
    let blk = LogFile::new(
        "blk.txt",
        "  8,0    0        1     0.000000000   697  Q   R 2048 + 8 [cat]\n  8,0    0        2     0.000001000   697  D   R 2048 + 8 [cat]\n\
           8,0    0        3     0.100000000   698  Q  WS 65536 + 16 [dd]\n  8,0    0        4     0.600000000   697  Q   R 4096 + 128 [cat]\n\
         CPU0 (sda):\n Reads Queued:           2,       68KiB\n",
    );
    for (log, name) in [(&msr, "hm-1"), (&blk, "dev-8-0")] {
        let times = |extra: &[&str]| {
            let arg = log.arg("read_iolog");
            let mut args = vec!["--name=r", arg.as_str(), "--direct=1", "--write_iolog=out"];
            args.extend(extra);
            let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
            let r = run(&spec("deadline"), &cfg).unwrap();
            let lines = io_lines(&r.iologs[0].1);
            assert_eq!(lines.len(), 3, "{:?}", lines);
            assert!(lines.iter().all(|l| l.1.starts_with(name)), "{lines:?}");
            let t0 = lines[0].0;
            lines.iter().map(|l| l.0 - t0).collect::<Vec<_>>()
        };
        assert_eq!(times(&[]), [0, 100_000, 600_000], "{name}");
        assert_eq!(times(&["--replay_time_scale=200"]), [0, 50_000, 300_000], "{name}");
        let fast = times(&["--replay_no_stall=1"]);
        assert!(fast[2] < 100_000, "{name}: no stall, yet {fast:?}");
    }
}

/// `rate_process=poisson`: the I/Os go at the asked mean rate with exponential gaps (their
/// coefficient of variation near 1), where the default linear process spaces them evenly;
/// the same seed gives the same times; a rate under one block per second is refused.
#[test]
fn poisson_rate_draws_exponential_gaps_at_the_mean_rate() {
    let m = machine();
    let gaps = |process: &str| {
        let args = [
            "--name=p",
            "--rw=read",
            "--bs=4k",
            "--size=4M",
            "--direct=1",
            "--rate_iops=200",
            &format!("--rate_process={process}"),
            "--write_iolog=x",
        ];
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
        let r = run(&spec("noop"), &cfg).unwrap();
        let t: Vec<u64> = io_lines(&r.iologs[0].1).iter().map(|x| x.0).collect();
        assert_eq!(t.len(), 1024);
        let g: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        let sd = (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / g.len() as f64).sqrt();
        (t, mean, sd / mean)
    };
    let (t1, mean, cv) = gaps("poisson");
    assert!((mean - 5000.0).abs() < 500.0, "mean gap {mean} µs at 200 IOPS");
    assert!((0.8..1.2).contains(&cv), "poisson gaps' coefficient of variation {cv}");
    assert_eq!(gaps("poisson").0, t1, "the same seed, the same times");
    let (_, lmean, lcv) = gaps("linear");
    assert!((lmean - 5000.0).abs() < 500.0 && lcv < 0.2, "linear: mean {lmean} µs, cv {lcv}");
    let read = |p: &std::path::Path, limit: u64| iosched_disk::input::read_text(p, limit);
    let env = |_: &str| None;
    let ctx = Context { pagesize: 4096, mb_memory: 1024, ncpus: 1, env: &env, read: &read };
    let args: Vec<String> = ["--name=p", "--rw=read", "--size=1M", "--rate=100", "--rate_process=poisson"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let jobs = fio::load(&[], &args, &ctx).unwrap();
    let cfg = FioConfig { jobs, machine: m.clone(), record_trace: false };
    let e = run(&spec("noop"), &cfg).unwrap_err().to_string();
    assert!(e.contains("under one block per second"), "{e}");
}

/// `new_group` starts a reporting group and nothing else: its job runs beside the one
/// before, so two 2 s jobs end within 3 s of simulated time; after a `stonewall`, or with
/// `wait_for=a`, the second waits for the first, and the bound stops it with the first
/// job's report intact.
#[test]
fn new_group_reports_apart_and_stonewall_and_wait_for_wait() {
    let limits = iosched_workloads::machine::Limits {
        max_sim_time: Some(std::time::Duration::from_secs(3)),
        ..Default::default()
    };
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6").with_limits(limits);
    let job = |sep: &str| {
        let args =
            ["--rw=randread", "--size=64m", "--direct=1", "--runtime=2", "--time_based", "--name=a", "--name=b", sep];
        FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false }
    };
    let r = run(&spec("deadline"), &job("--new_group")).unwrap().report;
    assert_eq!(r.jobs.iter().map(|j| j.groupid).collect::<Vec<_>>(), [0, 1]);
    // A job ends with the I/O in flight at its runtime, as in fio.
    let two_s = |us: u64| (2_000_000..2_100_000).contains(&us);
    assert!(r.jobs.iter().all(|j| two_s(j.runtime_us) && j.dirs[0].total_ios > 0), "{:?}", r.jobs);
    for sep in ["--stonewall", "--wait_for=a"] {
        let (r, stopped) = iosched_workloads::fio::run_or_stop(&spec("deadline"), &job(sep)).unwrap();
        assert!(stopped.is_some(), "{sep}: the second job runs after the first, past the 3 s bound");
        assert!(two_s(r.report.jobs[0].runtime_us), "{}", r.report.jobs[0].runtime_us);
        assert!(r.report.jobs[1].runtime_us < 1_100_000, "{sep}: {}", r.report.jobs[1].runtime_us);
    }
}

/// `number_ios` ends a job after that many I/Os per loop when its size would go on, and
/// not when its size ends it first.
#[test]
fn number_ios_ends_a_job_early() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    let ios = |extra: &[&str]| {
        let mut args = vec!["--name=r", "--rw=randread", "--size=1m", "--direct=1"];
        args.extend(extra);
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
        run(&spec("noop"), &cfg).unwrap().report.jobs[0].dirs[0].total_ios
    };
    assert_eq!(ios(&["--number_ios=100"]), 100);
    assert_eq!(ios(&["--number_ios=100", "--loops=2"]), 200);
    assert_eq!(ios(&["--number_ios=1000"]), 256, "1 MiB of 4 KiB blocks comes first");
}

/// `exitall`: a job's end terminates what its `exit_what` names — its reporting group's
/// jobs (`group`, the default), every job running then (`stonewall`), or every job, later
/// phases too (`all`); without `exitall` nothing is terminated.
#[test]
fn exitall_terminates_what_exit_what_names() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    // A 1 s job and a 10 s job in its group, a 10 s job in the next group, and a 1 s job
    // behind a stonewall: the runtimes in ms.
    let runtimes = |global: &[&str], what: &str| -> Vec<u64> {
        let mut args: Vec<&str> = global.to_vec();
        args.extend(["--rw=randread", "--size=64m", "--direct=1", "--time_based"]);
        let what = format!("--exit_what={what}");
        args.extend(["--name=short", "--runtime=1", what.as_str(), "--name=long", "--runtime=10"]);
        args.extend(["--name=other", "--new_group", "--runtime=10", "--name=later", "--stonewall", "--runtime=1"]);
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
        run(&spec("deadline"), &cfg).unwrap().report.jobs.iter().map(|j| j.runtime_us / 1000).collect()
    };
    let about = |ms: u64, want: u64| ms.abs_diff(want) < 100;
    let r = runtimes(&[], "all");
    assert!(about(r[1], 10_000) && about(r[2], 10_000) && about(r[3], 1000), "without exitall: {r:?}");
    let r = runtimes(&["--exitall"], "group");
    assert!(about(r[1], 1000) && about(r[2], 10_000), "group: {r:?}");
    let r = runtimes(&["--exitall"], "stonewall");
    assert!(about(r[1], 1000) && about(r[2], 1000) && about(r[3], 1000), "stonewall: {r:?}");
    let r = runtimes(&["--exitall"], "all");
    assert!(about(r[1], 1000) && about(r[2], 1000) && r[3] == 0, "all: the later phase never runs: {r:?}");
}

/// `flow`: the jobs of one flow id keep their I/Os in the ratio of their weights
/// (`flow_threshold_exceeded`), with `flow_sleep` or spinning without it; without a
/// weight they run as they can.
#[test]
fn flow_keeps_jobs_in_the_ratio_of_their_weights() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    let ratio = |a: &[&str], b: &[&str]| {
        let mut args = vec!["--rw=randread", "--size=64m", "--direct=1", "--runtime=2", "--time_based"];
        args.push("--name=a");
        args.extend(a);
        args.push("--name=b");
        args.extend(b);
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
        let r = run(&spec("noop"), &cfg).unwrap().report;
        r.jobs[1].dirs[0].total_ios as f64 / r.jobs[0].dirs[0].total_ios as f64
    };
    let free = ratio(&[], &[]);
    assert!((0.8..1.25).contains(&free), "no flow: {free}");
    let spun = ratio(&["--flow=1"], &["--flow=3"]);
    assert!((2.7..3.3).contains(&spun), "1:3, spinning: {spun}");
    let slept = ratio(&["--flow=1", "--flow_sleep=1000"], &["--flow=3", "--flow_sleep=1000"]);
    assert!((2.7..3.3).contains(&slept), "1:3, sleeping: {slept}");
}

/// `verify`: a writing job reads back every block it wrote — in write order for random
/// writes from the random map, by offset for sequential ones (fio's `io_hist_list` and
/// `io_hist_tree`), and with `verify_backlog=4` four reads after every four writes. The
/// read back's time is the reads' runtime, as fio reports it.
#[test]
fn verify_reads_back_what_was_written_in_fios_order() {
    let m = machine();
    let run_log = |extra: &[&str]| {
        let mut args = vec!["--name=v", "--size=1M", "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=4"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--verify=crc32c", "--write_iolog=v.log"]);
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: false };
        let r = run(&spec("deadline"), &cfg).unwrap();
        let ops: Vec<(String, u64)> = io_lines(&r.iologs[0].1)
            .iter()
            .map(|(_, l)| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[1].to_string(), f[2].parse().unwrap())
            })
            .collect();
        (r.report, ops)
    };
    let (rep, ops) = run_log(&["--rw=randwrite"]);
    let writes: Vec<u64> = ops.iter().filter(|o| o.0 == "write").map(|o| o.1).collect();
    let reads: Vec<u64> = ops.iter().filter(|o| o.0 == "read").map(|o| o.1).collect();
    assert_eq!(writes.len(), 256, "1 MiB of 4 KiB writes");
    assert_eq!(reads, writes, "random writes are read back in the order written");
    assert!(ops[..256].iter().all(|o| o.0 == "write"), "the read back follows the writes");
    let j = &rep.jobs[0];
    assert_eq!((j.dirs[0].total_ios, j.dirs[1].total_ios), (256, 256));
    let (rt, wt) = (j.dir_runtime_us(0), j.dir_runtime_us(1));
    assert!(
        rt > 0 && wt > 0 && rt + wt <= j.runtime_us + 1,
        "read {rt} + write {wt} µs within the job's {}",
        j.runtime_us
    );

    let (_, ops) = run_log(&["--rw=randwrite", "--norandommap", "--randrepeat=0"]);
    let reads: Vec<u64> = ops.iter().filter(|o| o.0 == "read").map(|o| o.1).collect();
    let mut sorted = reads.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(reads, sorted, "without a random map, by offset, each block once");

    let (_, ops) = run_log(&["--rw=write", "--verify_backlog=4"]);
    let kinds: String = ops.iter().take(16).map(|o| if o.0 == "write" { 'w' } else { 'r' }).collect();
    assert_eq!(kinds, "wwwwrrrrwwwwrrrr", "four writes, then the four read back");
    assert_eq!(ops.iter().filter(|o| o.0 == "read").count(), 256, "every block read back once");
}

/// `io_submit_mode=offload`: the job thread paces its I/Os and `iodepth` submitter
/// threads issue them, so the scheduler sees their requests from that many owners, none
/// the job's own; `rate_iops` holds as inline.
#[test]
fn offload_issues_from_iodepth_submitters_at_the_rate() {
    let m = Machine::new("ide-2003", 256 << 20, "p4-ht", 1).with_host("linux-2.6");
    let owners = |mode: &str| {
        let args = [
            "--name=o",
            "--rw=randread",
            "--bs=4k",
            "--size=64m",
            "--ioengine=libaio",
            "--direct=1",
            "--iodepth=4",
            "--rate_iops=40",
            "--runtime=2",
            "--time_based",
            &format!("--io_submit_mode={mode}"),
        ];
        let cfg = FioConfig { jobs: load(&[], &args, &[], &m), machine: m.clone(), record_trace: true };
        let r = run(&spec("cfq"), &cfg).unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for rec in &r.trace.unwrap().records {
            // The job's data, not the file system's blocks its open reads.
            if let iosched_core::trace::Record::Arrival { rq, .. } = rec
                && rq.len_sectors == 8
                && !rq.meta
            {
                seen.insert(rq.owner);
            }
        }
        (seen.len(), r.report.jobs[0].dirs[0].total_ios)
    };
    let (inline, ios) = owners("inline");
    assert_eq!(inline, 1, "inline: the job thread's own requests");
    assert!((76..=84).contains(&ios), "inline: 40 IOPS for 2 s, {ios}");
    let (offload, ios) = owners("offload");
    assert!((2..=4).contains(&offload), "offload: {offload} submitters' requests");
    assert!((76..=84).contains(&ios), "offload: 40 IOPS for 2 s, {ios}");
}
