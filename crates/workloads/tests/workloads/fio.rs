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
    let read = |p: &std::path::Path| iosched_disk::input::read_text(p, fio::MAX_JOB_FILE);
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
}
