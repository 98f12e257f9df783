//! fio's report, for either world's runs: what each job did per direction (`stat.c`'s
//! `thread_stat` in the part this model computes), fio's JSON document
//! (`show_thread_status_json`, `add_ddir_status_json`) with the fields computed and none
//! made up, and fio's normal output in outline.

use serde_json::{Value, json};

/// What one direction of a job did, as fio counts it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    /// Completion latency of each I/O, ns (sync engines: the call; async: submission to
    /// the reap that returned it).
    pub clat_ns: Vec<u64>,
    /// Bytes completed in each [`BW_INTERVAL_MS`] of the measured time: fio's bandwidth
    /// log at its default averaging (`bw_avg_time`), for the report's over-time chart and
    /// fio's bandwidth statistics.
    pub bw_log: Vec<u64>,
    /// I/Os completed in each [`BW_INTERVAL_MS`] (fio's `iops_avg_time` is the same
    /// 500 ms by default): fio's IOPS statistics.
    pub iops_log: Vec<u64>,
    /// Counted by priority (fio's `clat_prio`, for a job with `cmdprio_*` or a group of
    /// jobs of different priorities): each I/O's priority value (`ioprio_value`), in the
    /// order of `clat_ns`, and the values in fio's order (the job's own first). Both empty
    /// otherwise: every I/O had the job's [`JobResult::ioprio`].
    pub prios: Vec<u16>,
    pub prio_list: Vec<u16>,
    /// This direction's runtime, µs, where it is not the job's: a `verify` job's read
    /// back (fio's `update_runtime` gives `DDIR_READ` the verify phase's time, and a job
    /// that writes only the do-I/O phase's to `DDIR_WRITE`).
    pub runtime_us: Option<u64>,
}

/// The bandwidth log's interval, ms (fio's `bw_avg_time` default).
pub const BW_INTERVAL_MS: u64 = 500;

/// The most intervals a bandwidth log keeps (a day of 500 ms intervals); later
/// completions count in the last one.
const BW_LOG_MAX: usize = 2 * 86_400;

impl DirStats {
    /// Count one completed I/O of `bytes` whose completion latency was `clat_ns`, done
    /// `at_ns` into the job's measured time.
    pub fn add(&mut self, bytes: u64, clat_ns: u64, at_ns: u64) {
        self.io_bytes += bytes;
        self.total_ios += 1;
        self.clat_ns.push(clat_ns);
        let i = ((at_ns / (BW_INTERVAL_MS * 1_000_000)) as usize).min(BW_LOG_MAX - 1);
        if self.bw_log.len() <= i {
            self.bw_log.resize(i + 1, 0);
            self.iops_log.resize(i + 1, 0);
        }
        self.bw_log[i] += bytes;
        self.iops_log[i] += 1;
    }

    /// The completion latencies by priority (fio's `clat_prio` entries with samples), in
    /// fio's order; empty for a direction not counted by priority. fio shows them when
    /// there are two or more (`get_nr_prios_with_samples`).
    pub fn by_prio(&self) -> Vec<(u16, Vec<u64>)> {
        self.prio_list
            .iter()
            .filter_map(|&p| {
                let v: Vec<u64> = self.clat_ns.iter().zip(&self.prios).filter(|x| *x.1 == p).map(|x| *x.0).collect();
                (!v.is_empty()).then_some((p, v))
            })
            .collect()
    }

    /// fio's `bw_stat` (`is_kb`: KiB/s) or `iops_stat` of this direction: one sample per
    /// whole interval of the `runtime_ms` measured in which something completed — the
    /// rate fio's helper thread computes in `__add_samples` every `bw_avg_time`
    /// (`delta * 1000 / spent`, then `/ 1024` for KiB), skipping intervals without
    /// completions as it does. The last, partial interval is not sampled.
    fn interval_stats(&self, runtime_ms: u64, is_kb: bool) -> Moments {
        let log = if is_kb { &self.bw_log } else { &self.iops_log };
        let whole = (runtime_ms / BW_INTERVAL_MS) as usize;
        let rates: Vec<u64> = log
            .iter()
            .take(whole)
            .filter(|&&d| d > 0)
            .map(|&d| if is_kb { d * 1000 / BW_INTERVAL_MS / 1024 } else { d * 1000 / BW_INTERVAL_MS })
            .collect();
        Moments::of(&rates)
    }
}

/// fio's `io_stat` of a set of values: `calc_lat`'s min, max, mean and sample standard
/// deviation, and how many.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Moments {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub dev: f64,
    pub samples: u64,
}

impl Moments {
    pub fn of(v: &[u64]) -> Moments {
        let Some((&min, &max)) = v.iter().min().zip(v.iter().max()) else { return Moments::default() };
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = if v.len() > 1 { v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        Moments { min, max, mean, dev: var.sqrt(), samples: v.len() as u64 }
    }
}

/// One job's (one clone's) results.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResult {
    pub name: String,
    pub groupid: u32,
    /// The error that ended the job (fio's `error`, an errno; 0 for none), and where
    /// (`td_verror`'s function, e.g. `check_min_rate`).
    pub error: u32,
    pub error_func: &'static str,
    /// Measured time (after `ramp_time`), µs.
    pub runtime_us: u64,
    /// The job's priority value (fio's `td->ioprio`: `prioclass`/`prio`, 0 for neither).
    pub ioprio: u16,
    /// Read, write.
    pub dirs: [DirStats; 2],
    pub fsyncs: u64,
    /// Each measured sync's latency, ns (fio's `sync_stat`: `fsync=`/`fdatasync=` and a
    /// log's syncs).
    pub sync_lat_ns: Vec<u64>,
    /// The job asked for `group_reporting`: the report shows its group as one entry.
    pub group_reporting: bool,
    /// The job's `iodepth` (fio's `latency_depth` without a latency target).
    pub iodepth: u32,
    /// Every measured I/O, when the job writes a per-I/O log ([`super::Job::logs_samples`]).
    pub samples: Vec<Sample>,
    /// The job's number (1-based over the jobs and their clones, as fio numbers them): the
    /// `N` of its log files.
    pub number: u64,
    /// I/Os by the job's depth when each was submitted, the submitted one included
    /// (`io_u_mark_depth` of `cur_depth`): fio's buckets 1, 2–3, 4–7, …, ≥ 64 ([`depth_bucket`]).
    pub depth_map: [u64; 7],
    /// The options its job's own section gives, as written (fio's `job options`).
    pub options: Vec<(String, String)>,
    /// Submissions and reaps by how many I/Os each carried, in fio's buckets 0, 1–4, …,
    /// > 64 (`io_u_submit`, `io_u_complete`).
    pub submit_map: [u64; 7],
    pub complete_map: [u64; 7],
}

impl JobResult {
    /// Direction `d`'s runtime, µs ([`DirStats::runtime_us`], else the job's).
    pub fn dir_runtime_us(&self, d: usize) -> u64 {
        self.dirs[d].runtime_us.unwrap_or(self.runtime_us)
    }
}

/// One completed I/O as fio's per-I/O logs record it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Completion, ms since the job started.
    pub at_ms: u64,
    pub write: bool,
    pub bytes: u64,
    pub clat_ns: u64,
    /// The I/O's priority value (fio's `ioprio_value`): the log's priority column.
    pub prio: u16,
    /// Its offset in its file (the column `log_offset` adds).
    pub offset: u64,
}

/// fio 3.33's per-I/O log files for one job: (file name, text) for each log the job asks
/// for, as `flush_samples` writes them — `time (ms), value, direction (0 read, 1 write),
/// block size (bytes), [offset (bytes, with `log_offset`),] priority (1 for the RT class;
/// with `log_prio`, the priority value as `0x%04x`)` per line. `clat` and `lat` logs
/// hold the completion latency in ns (no submission latency is modelled, so `slat`'s log
/// is not written); the `bw` log `bytes × 10⁶ / clat_ns` (`add_bw_sample`'s per-I/O
/// rate); the `iops` log 1.
pub fn log_files(j: &JobResult, job: &super::Job) -> Vec<(String, String)> {
    log_names(job, j.number)
        .into_iter()
        .map(|(kind, name)| {
            let value = |s: &Sample| match kind {
                LogKind::Clat | LogKind::Lat => s.clat_ns,
                LogKind::Bw => (s.bytes * 1_000_000).checked_div(s.clat_ns).unwrap_or(0),
                LogKind::Iops => 1,
            };
            let text = j
                .samples
                .iter()
                .map(|s| {
                    let (t, v, d, b) = (s.at_ms, value(s), s.write as u8, s.bytes);
                    let off = if job.log_offset { format!("{}, ", s.offset) } else { String::new() };
                    if job.log_prio {
                        format!("{t}, {v}, {d}, {b}, {off}0x{:04x}\n", s.prio)
                    } else {
                        format!("{t}, {v}, {d}, {b}, {off}{}\n", (s.prio >> 13 == 1) as u8)
                    }
                })
                .collect();
            (name, text)
        })
        .collect()
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LogKind {
    Clat,
    Lat,
    Bw,
    Iops,
}

/// The per-I/O logs job thread `n` of `job` writes, with their file names.
fn log_names(job: &super::Job, n: u64) -> Vec<(LogKind, String)> {
    let mut out = Vec::new();
    if let Some(p) = &job.write_lat_log {
        out.push((LogKind::Clat, format!("{p}_clat.{n}.log")));
        out.push((LogKind::Lat, format!("{p}_lat.{n}.log")));
    }
    if let Some(p) = &job.write_bw_log {
        out.push((LogKind::Bw, format!("{p}_bw.{n}.log")));
    }
    if let Some(p) = &job.write_iops_log {
        out.push((LogKind::Iops, format!("{p}_iops.{n}.log")));
    }
    out
}

/// The log files of a run: [`log_files`] of each job thread of `jobs` that asks for one,
/// found by its number.
pub fn run_log_files(r: &Report, jobs: &super::JobSet) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for j in &r.jobs {
        if let Some(job) = job_of(jobs, j.number) {
            out.extend(log_files(j, job));
        }
    }
    out
}

/// The log files a run of `jobs` would write, by name (for checking before the run).
pub fn log_file_names(jobs: &super::JobSet) -> Vec<String> {
    let mut out = Vec::new();
    let mut n = 0u64;
    for job in &jobs.jobs {
        for _ in 0..job.numjobs {
            n += 1;
            out.extend(log_names(job, n).into_iter().map(|(_, name)| name));
        }
    }
    out
}

/// The job of thread number `n` (1-based over the jobs and their clones, in order).
fn job_of(jobs: &super::JobSet, n: u64) -> Option<&super::Job> {
    let mut first = 1u64;
    for job in &jobs.jobs {
        if n < first + job.numjobs as u64 {
            return (n >= first).then_some(job);
        }
        first += job.numjobs as u64;
    }
    None
}

/// The bucket of `depth` in [`JobResult::depth_map`].
pub fn depth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's bucket for `nr` I/Os in one submission or reap (`__io_u_mark_map`): 0, 1–4,
/// 5–8, 9–16, 17–32, 33–64, more.
pub fn batch_bucket(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// One entry of the report: a job, or the jobs of a group with `group_reporting`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub job: JobResult,
    /// How many job threads it holds (fio's `members`, the `jobs=` of its first line).
    pub members: u32,
}

/// The report's entries: each job, except that the jobs of a group with
/// `group_reporting` are one entry (fio's rule: named after the group's first job, their
/// I/Os and latencies together, the longest runtime).
pub fn entries(r: &Report) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    for j in &r.jobs {
        match out.last_mut() {
            Some(Entry { job: e, members }) if j.group_reporting && e.group_reporting && e.groupid == j.groupid => {
                *members += 1;
                for (a, b) in e.dirs.iter_mut().zip(&j.dirs) {
                    // `init_per_prio_stats`: a group counts by priority when a member
                    // does, or when its members' priorities differ (`sum_clat_prio_stats`).
                    if !a.prio_list.is_empty() || !b.prio_list.is_empty() || e.ioprio != j.ioprio {
                        if a.prio_list.is_empty() {
                            a.prio_list = vec![e.ioprio];
                            a.prios = vec![e.ioprio; a.clat_ns.len()];
                        }
                        let (list, prios) = if b.prio_list.is_empty() {
                            (vec![j.ioprio], vec![j.ioprio; b.clat_ns.len()])
                        } else {
                            (b.prio_list.clone(), b.prios.clone())
                        };
                        for p in list {
                            if !a.prio_list.contains(&p) {
                                a.prio_list.push(p);
                            }
                        }
                        a.prios.extend(prios);
                    }
                    a.io_bytes += b.io_bytes;
                    a.total_ios += b.total_ios;
                    a.clat_ns.extend_from_slice(&b.clat_ns);
                    for (x, y) in [(&mut a.bw_log, &b.bw_log), (&mut a.iops_log, &b.iops_log)] {
                        if x.len() < y.len() {
                            x.resize(y.len(), 0);
                        }
                        for (x, y) in x.iter_mut().zip(y) {
                            *x += y;
                        }
                    }
                }
                for d in 0..2 {
                    if e.dirs[d].runtime_us.is_some() || j.dirs[d].runtime_us.is_some() {
                        e.dirs[d].runtime_us = Some(e.dir_runtime_us(d).max(j.dir_runtime_us(d)));
                    }
                }
                e.runtime_us = e.runtime_us.max(j.runtime_us);
                e.fsyncs += j.fsyncs;
                e.sync_lat_ns.extend_from_slice(&j.sync_lat_ns);
                for (a, b) in e.depth_map.iter_mut().zip(&j.depth_map) {
                    *a += b;
                }
                for (a, b) in e.submit_map.iter_mut().zip(&j.submit_map) {
                    *a += b;
                }
                for (a, b) in e.complete_map.iter_mut().zip(&j.complete_map) {
                    *a += b;
                }
                e.samples.extend_from_slice(&j.samples);
            }
            _ => out.push(Entry { job: j.clone(), members: 1 }),
        }
    }
    out
}

/// One direction of a reporting group (fio's `group_run_stats`, filled in
/// `show_run_stats` from the group's entries that moved data in that direction): bytes,
/// the entries' lowest and highest bandwidth and runtime, and the group's aggregate
/// bandwidth over its longest runtime. Bandwidths in bytes/s, runtimes in ms.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GroupDir {
    pub bytes: u64,
    pub agg: u64,
    pub min_bw: u64,
    pub max_bw: u64,
    pub min_run: u64,
    pub max_run: u64,
}

/// Each reporting group's [`GroupDir`] per direction (read, write), by group id.
pub fn groups(entries: &[Entry]) -> std::collections::BTreeMap<u32, [Option<GroupDir>; 2]> {
    let mut out = std::collections::BTreeMap::new();
    for g in entries.iter().map(|e| e.job.groupid) {
        let dirs = [0, 1].map(|d| {
            let js: Vec<&JobResult> = entries
                .iter()
                .map(|e| &e.job)
                .filter(|j| j.groupid == g && j.dirs[d].total_ios > 0 && j.dir_runtime_us(d) >= 1000)
                .collect();
            let runs = js.iter().map(|j| j.dir_runtime_us(d) / 1000);
            let bws = js.iter().map(|j| j.dirs[d].io_bytes * 1000 / (j.dir_runtime_us(d) / 1000));
            let bytes: u64 = js.iter().map(|j| j.dirs[d].io_bytes).sum();
            let max_run = runs.clone().max()?;
            Some(GroupDir {
                bytes,
                agg: bytes * 1000 / max_run,
                min_bw: bws.clone().min()?,
                max_bw: bws.max()?,
                min_run: runs.min()?,
                max_run,
            })
        });
        out.insert(g, dirs);
    }
    out
}

/// A run's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Which world ran it: `simulated`, or `real` with the target.
    pub world: String,
    /// The `[global]` sections' options, as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    pub scheduler: String,
    pub seed: u64,
    pub jobs: Vec<JobResult>,
    pub warnings: Vec<String>,
    /// The disk's statistics over the run, where the world keeps them.
    pub disk: Option<DiskUtil>,
}

/// fio's disk statistics (`disk_util` in the JSON, the `Disk stats (read/write)` lines):
/// the queue's `/proc/diskstats` counters over the run (`iosched_core::diskstats`), with
/// `util` the share of the run that had a request in flight (fio's `io_ticks / msec`,
/// `diskutil.c`).
#[derive(Clone, Debug, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub stats: iosched_core::DiskStats,
    /// The time the counters cover, ms.
    pub msec: u64,
}

impl DiskUtil {
    /// Percent of the time with I/O in flight, at most 100 (fio caps it too).
    pub fn util(&self) -> f64 {
        if self.msec == 0 {
            return 0.0;
        }
        (100.0 * self.stats.io_ticks.as_secs_f64() * 1e3 / self.msec as f64).min(100.0)
    }

    fn json(&self) -> Value {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let s = &self.stats;
        json!({
            "name": self.name,
            "read_ios": s.ios[0], "write_ios": s.ios[1],
            "read_merges": s.merges[0], "write_merges": s.merges[1],
            "read_ticks": ms(s.ticks[0]), "write_ticks": ms(s.ticks[1]),
            "in_queue": ms(s.time_in_queue),
            "util": (self.util() * 100.0).round() / 100.0,
        })
    }
}

/// The labels of fio's I/O depth buckets (`io_u_map`).
const DEPTHS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
/// The labels of fio's submission and reap buckets (`io_u_submit`, `io_u_complete`).
const BATCHES: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

/// The labels of fio's nanosecond and microsecond latency buckets, and of its millisecond ones.
const LAT_NU: [&str; 10] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
const LAT_M: [&str; 12] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];

/// fio's default completion-latency percentiles (`percentile_list`).
pub const PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// `calc_clat_percentiles`: for each percentile of `list` (ascending), the value fio
/// prints — the middle of the first histogram bucket ([`plat`]) at which the running count
/// reaches that share of the samples. Empty without samples.
pub fn percentiles(clat_ns: &[u64], list: &[f64]) -> Vec<u64> {
    let nr = clat_ns.len() as f64;
    let mut out = Vec::with_capacity(list.len());
    if clat_ns.is_empty() {
        return out;
    }
    let mut sum = 0u64;
    for (i, c) in histogram(clat_ns).into_iter().enumerate() {
        sum += c;
        while out.len() < list.len() && sum as f64 >= list[out.len()] / 100.0 * nr {
            out.push(plat::idx_to_val(i));
        }
        if out.len() == list.len() {
            break;
        }
    }
    out
}

/// Latencies counted in fio's histogram buckets ([`plat`]).
fn histogram(clat_ns: &[u64]) -> Vec<u64> {
    let mut counts = vec![0u64; plat::NR];
    for &v in clat_ns {
        counts[plat::val_to_idx(v)] += 1;
    }
    counts
}

/// fio's latency histogram (`stat.h`, `stat.c`): 64 buckets per power of two above 128 ns
/// (each within 1/128 of its value), 29 groups, the last bucket holding everything beyond.
pub mod plat {
    pub const BITS: u32 = 6;
    pub const VAL: u64 = 1 << BITS;
    pub const GROUP_NR: u64 = 29;
    pub const NR: usize = (GROUP_NR * VAL) as usize;

    /// `plat_val_to_idx`: the bucket of a latency of `v` ns.
    pub fn val_to_idx(v: u64) -> usize {
        let msb = if v == 0 { 0 } else { 63 - v.leading_zeros() };
        // Up to 2^(BITS+1) the value is its own index: no bit is rounded off.
        if msb <= BITS {
            return v as usize;
        }
        let error_bits = msb - BITS;
        let base = ((error_bits + 1) as u64) << BITS;
        let offset = (VAL - 1) & (v >> error_bits);
        ((base + offset) as usize).min(NR - 1)
    }

    /// `plat_idx_to_val`: the value fio prints for bucket `i`, the middle of its range.
    pub fn idx_to_val(i: usize) -> u64 {
        let i = i as u64;
        if i < (VAL << 1) {
            return i;
        }
        let error_bits = (i >> BITS) - 1;
        let base = 1u64 << (error_bits + BITS as u64);
        let k = i % VAL;
        // fio computes `base + (k + 0.5) * 2^error_bits` in double and truncates; with
        // error_bits ≥ 1 the half is whole, so this integer form is the same number.
        base + (2 * k + 1) * (1 << error_bits) / 2
    }
}

/// fio's json+ `bins`: each non-empty histogram bucket's value (ns, as a string key) and
/// its count.
fn bins(clat_ns: &[u64]) -> serde_json::Map<String, Value> {
    histogram(clat_ns)
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| (plat::idx_to_val(i).to_string(), json!(c)))
        .collect()
}

/// A latency object (`add_ddir_lat_json`) of `ns`: min, max, mean, stddev and `n` (the
/// direction's I/O count), with fio's default percentiles where there are samples.
fn lat_json(ns: &[u64], n: u64) -> Value {
    let m = Moments::of(ns);
    let mut v = json!({ "min": m.min, "max": m.max, "mean": m.mean, "stddev": m.dev, "N": n });
    if !ns.is_empty() {
        let pct: serde_json::Map<String, Value> =
            PERCENTILES.iter().zip(percentiles(ns, &PERCENTILES)).map(|(p, v)| (format!("{p:.6}"), json!(v))).collect();
        v["percentile"] = Value::Object(pct);
    }
    v
}

/// `convert_agg_kbytes_percent`: a direction's mean bandwidth sample (KiB/s) as a share
/// of its reporting group's aggregate, at most 100; 100 where the aggregate is under
/// 1 KiB/s.
fn share_of_group(mean_kib: f64, group: Option<GroupDir>) -> f64 {
    match group {
        Some(g) if g.agg > 1024 => (mean_kib * 100.0 / (g.agg as f64 / 1024.0)).min(100.0),
        _ => 100.0,
    }
}

/// One direction's object (`add_ddir_status_json`); `group` is its reporting group's
/// figures in that direction, for `bw_agg`.
fn dir_json(d: &DirStats, runtime_ms: u64, group: Option<GroupDir>, plus: bool) -> Value {
    let bw_bytes = (d.io_bytes * 1000).checked_div(runtime_ms).unwrap_or(0);
    let iops = if runtime_ms > 0 { d.total_ios as f64 * 1000.0 / runtime_ms as f64 } else { 0.0 };
    let mut clat = lat_json(&d.clat_ns, d.total_ios);
    // `lat_ns` is `clat_ns` (no submission latency), without percentiles, as fio's
    // default `lat_percentiles=0` gives it.
    let mut lat = clat.clone();
    if let Some(o) = lat.as_object_mut() {
        o.remove("percentile");
    }
    // As fio: the histogram where there are percentiles (samples).
    if plus && !d.clat_ns.is_empty() {
        clat["bins"] = Value::Object(bins(&d.clat_ns));
    }
    let bw = d.interval_stats(runtime_ms, true);
    let io = d.interval_stats(runtime_ms, false);
    // 0 without samples, as fio leaves it.
    let agg = if bw.samples == 0 { 0.0 } else { share_of_group(bw.mean, group) };
    // fio's `prios` array, after `lat_ns`, when two or more priorities have samples.
    let by_prio = d.by_prio();
    let prios = (by_prio.len() >= 2).then(|| {
        let list: Vec<Value> = by_prio
            .iter()
            .map(|(p, v)| {
                let mut clat = lat_json(v, v.len() as u64);
                if plus {
                    clat["bins"] = Value::Object(bins(v));
                }
                json!({ "prioclass": p >> 13, "prio": p & 7, "clat_ns": clat })
            })
            .collect();
        Value::Array(list)
    });
    let mut v = json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes >> 10,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": iops,
        "runtime": if d.total_ios > 0 { runtime_ms } else { 0 },
        "total_ios": d.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "clat_ns": clat,
        "lat_ns": lat,
        "bw_min": bw.min,
        "bw_max": bw.max,
        "bw_agg": agg,
        "bw_mean": bw.mean,
        "bw_dev": bw.dev,
        "bw_samples": bw.samples,
        "iops_min": io.min,
        "iops_max": io.max,
        "iops_mean": io.mean,
        "iops_stddev": io.dev,
        "iops_samples": io.samples,
    });
    if let (Some(p), Some(o)) = (prios, v.as_object_mut()) {
        let rest: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
        for (k, x) in rest {
            let after = k == "lat_ns";
            o.insert(k, x);
            if after {
                o.insert("prios".into(), p.clone());
            }
        }
    }
    v
}

/// The `sync` object (`add_ddir_status_json` for `DDIR_SYNC`): the syncs and their
/// latency, with its percentiles where there were any.
fn sync_json(j: &JobResult) -> Value {
    json!({ "total_ios": j.fsyncs, "lat_ns": lat_json(&j.sync_lat_ns, j.sync_lat_ns.len() as u64) })
}

/// fio's `--output-format=json` document for a run, with the fields this model computes
/// (`docs/fio.md` lists those it leaves out). Deterministic: times are the simulation's.
pub fn json(r: &Report) -> Value {
    json_with(r, false)
}

/// fio's `--output-format=json+`: [`json()`] with each direction's completion-latency
/// histogram (`clat_ns.bins`, fio's buckets).
pub fn json_plus(r: &Report) -> Value {
    json_with(r, true)
}

/// A distribution as fio prints one (`stat_calc_dist` / `stat_calc_lat`): each count's
/// percentage of `total`, at least `floor` where the count is not zero.
fn shares(keys: &[&str], counts: &[u64], total: u64, floor: f64) -> Value {
    let mut m = serde_json::Map::new();
    for (k, &c) in keys.iter().zip(counts) {
        let mut pct = if total > 0 { 100.0 * c as f64 / total as f64 } else { 0.0 };
        if c > 0 && pct < floor {
            pct = floor;
        }
        m.insert(k.to_string(), json!(pct));
    }
    Value::Object(m)
}

/// fio's latency distribution of a job's I/Os (`io_u_mark_latency`, of each I/O's total
/// latency — here its completion latency): counts per nanosecond, microsecond and
/// millisecond bucket, each bucket holding the values below its label and at or above the
/// one before.
fn latency_buckets(j: &JobResult) -> [Vec<u64>; 3] {
    const EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];
    let mut out = [vec![0u64; 10], vec![0u64; 10], vec![0u64; 12]];
    let idx = |v: u64, edges: &[u64]| edges.iter().position(|&e| v < e).unwrap_or(edges.len());
    for &ns in j.dirs.iter().flat_map(|d| d.clat_ns.iter()) {
        if ns < 1000 {
            out[0][idx(ns, &EDGES)] += 1;
        } else if ns < 1_000_000 {
            out[1][idx(ns / 1000, &EDGES)] += 1;
        } else {
            out[2][idx(ns / 1_000_000, &[2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000])] += 1;
        }
    }
    out
}

fn json_with(r: &Report, plus: bool) -> Value {
    let entries = entries(r);
    let groups = groups(&entries);
    let jobs: Vec<Value> = entries
        .iter()
        .map(|Entry { job: j, .. }| {
            let ms = j.runtime_us / 1000;
            let g = groups.get(&j.groupid).copied().unwrap_or([None, None]);
            let lat = latency_buckets(j);
            // fio's shares are of the issued I/Os (`ddir_rw_sum(total_io_u)`).
            let ios: u64 = j.dirs.iter().map(|d| d.total_ios).sum();
            let options: serde_json::Map<String, Value> =
                j.options.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
            json!({
                "jobname": j.name,
                "groupid": j.groupid,
                "job options": options,
                "error": j.error,
                "read": dir_json(&j.dirs[0], j.dir_runtime_us(0) / 1000, g[0], plus),
                "write": dir_json(&j.dirs[1], j.dir_runtime_us(1) / 1000, g[1], plus),
                // No trim is modelled (a job that asks for one is refused): none was issued.
                "trim": dir_json(&DirStats::default(), ms, None, plus),
                "sync": sync_json(j),
                "job_runtime": ms,
                "iodepth_level": shares(&DEPTHS, &j.depth_map, ios, 0.1),
                "iodepth_submit": shares(&BATCHES, &j.submit_map, j.submit_map.iter().sum(), 0.1),
                "iodepth_complete": shares(&BATCHES, &j.complete_map, j.complete_map.iter().sum(), 0.1),
                "latency_ns": shares(&LAT_NU, &lat[0], ios, 0.01),
                // fio adds the nanosecond share to the first microsecond bucket in its normal
                // output only (`stat_calc_lat_nu`); the JSON keeps them apart.
                "latency_us": shares(&LAT_NU, &lat[1], ios, 0.01),
                "latency_ms": shares(&LAT_M, &lat[2], ios, 0.01),
                "latency_depth": j.iodepth,
                "latency_target": 0,
                "latency_percentile": 100.0,
                "latency_window": 0,
            })
        })
        .collect();
    let mut doc = json!({
        "fio version": concat!("iosched-", env!("CARGO_PKG_VERSION")),
        "world": r.world,
        "scheduler": r.scheduler,
        "seed": r.seed,
        "jobs": jobs,
        // Not fio's: the bandwidth logs behind the report's over-time charts, one per
        // entry of `jobs` (fio writes them to files with write_bw_log instead).
        "iosched": {
            "bw_interval_ms": BW_INTERVAL_MS,
            "bw_log": entries.iter().map(|Entry { job: j, .. }| json!({
                "jobname": j.name, "read_bytes": j.dirs[0].bw_log, "write_bytes": j.dirs[1].bw_log,
            })).collect::<Vec<_>>(),
        },
    });
    // As fio: only where there are global options, after the version.
    if !r.global_options.is_empty() {
        let g: serde_json::Map<String, Value> = r.global_options.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        if let Some(o) = doc.as_object_mut() {
            let mut m = serde_json::Map::new();
            for (k, v) in std::mem::take(o) {
                let first = k == "fio version";
                m.insert(k, v);
                if first {
                    m.insert("global options".into(), Value::Object(g.clone()));
                }
            }
            *o = m;
        }
    }
    // Only where the world keeps the disk's statistics (fio too leaves it out where it
    // has none).
    if let Some(d) = &r.disk {
        doc["disk_util"] = json!([d.json()]);
    }
    doc
}

/// The report formats of `--output-format`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Normal,
    Json,
    JsonPlus,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "normal" => Ok(Format::Normal),
            "json" => Ok(Format::Json),
            "json+" => Ok(Format::JsonPlus),
            other => Err(format!("--output-format {other}: expected normal, json or json+")),
        }
    }

    /// The document for `--output-format json` or `json+`; `None` for normal.
    pub fn json(self, r: &Report) -> Option<Value> {
        match self {
            Format::Normal => None,
            Format::Json => Some(json(r)),
            Format::JsonPlus => Some(json_plus(r)),
        }
    }
}

/// fio's `sig_figs` default: the digits `num2str` keeps.
const SIG_FIGS: usize = 4;

/// fio's `num2str` (`lib/num2str.c`), its rounding quirks included: `num` is divided by
/// 1024 (`pow2`) or 1000 until it has at most `maxlen` digits, then shown with as many
/// decimals of the last remainder as fit, and the unit prefix.
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, units: &str) -> String {
    let prefixes = if pow2 { ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] } else { ["", "k", "M", "G", "T", "P", "E"] };
    let thousand = if pow2 { 1024 } else { 1000 };
    let digits = |n: u64| n.to_string().len();
    let (mut post, mut modulo, mut carry) = (0, None, false);
    while post < prefixes.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let Some(m) = modulo else { return format!("{num}{}{units}", prefixes[post]) };
    if maxlen as i64 - digits(num) as i64 <= 1 {
        return format!("{}{}{units}", num + carry as u64, prefixes[post]);
    }
    let tmp = format!("{:.*}", maxlen - digits(num) - 1, m as f64 / thousand as f64);
    if tmp.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{units}", &tmp[2..], prefixes[post])
}

/// fio's normal output (`show_run_stats`): per job its first line, per direction the
/// IOPS and bandwidth line, the latency lines, the completion-latency percentiles and the
/// bandwidth and IOPS sample lines (`show_ddir_status`), the latency buckets, the I/O
/// depths and issued counts (`show_thread_status_normal`), then each group's totals
/// (`show_group_stats`) and the disk's statistics. What the model does not compute is
/// left out (docs/fio.md, "The report").
pub fn normal(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "iosched fio ({}), scheduler {}, seed {}", r.world, r.scheduler, r.seed);
    for w in &r.warnings {
        let _ = writeln!(s, "note: {w}");
    }
    let all = entries(r);
    let groups = groups(&all);
    for Entry { job: j, members } in &all {
        let ios: u64 = j.dirs.iter().map(|d| d.total_ios).sum();
        if ios == 0 && j.dirs.iter().all(|d| d.io_bytes == 0) {
            continue; // fio shows no job that did nothing
        }
        match j.error {
            0 => {
                let _ = writeln!(s, "{}: (groupid={}, jobs={members}): err= 0", j.name, j.groupid);
            }
            e => {
                let what = if e == 5 { "Input/output error" } else { "error" };
                let _ = writeln!(
                    s,
                    "{}: (groupid={}, jobs={members}): err={e:2} (func={}, error={what})",
                    j.name, j.groupid, j.error_func
                );
            }
        }
        for (d, (st, name)) in j.dirs.iter().zip(["read", "write"]).enumerate() {
            let ms = j.dir_runtime_us(d) / 1000;
            if st.io_bytes == 0 || ms == 0 {
                continue;
            }
            // Integer rates per second of the runtime, fio's 4 figures.
            let (bw, iops) = (1000 * st.io_bytes / ms, 1000 * st.total_ios / ms);
            let _ = writeln!(
                s,
                "  {name}: IOPS={}, BW={} ({})({}/{ms}msec){}",
                num2str(iops, SIG_FIGS, false, ""),
                num2str(bw, SIG_FIGS, true, "B/s"),
                num2str(bw, SIG_FIGS, false, "B/s"),
                num2str(st.io_bytes, SIG_FIGS, true, "B"),
                // fio 3.33 prints the zone resets of every write (none: no zoned device).
                if d == 1 { "; 0 zone resets" } else { "" },
            );
            // No submission latency is modelled: no `slat` line; `lat` is `clat`.
            display_lat(&mut s, "clat", &st.clat_ns);
            display_lat(&mut s, " lat", &st.clat_ns);
            let by_prio = st.by_prio();
            let by_prio = if by_prio.len() >= 2 { by_prio } else { Vec::new() };
            for (p, v) in &by_prio {
                display_lat(&mut s, &format!("clat prio {}/{}", p >> 13, p & 7), v);
            }
            show_percentiles(&mut s, "clat", &st.clat_ns, &PERCENTILES);
            for (p, v) in &by_prio {
                let share = 100.0 * v.len() as f64 / st.clat_ns.len() as f64;
                let name = format!("clat prio {}/{} ({share:.2}% of IOs)", p >> 13, p & 7);
                show_percentiles(&mut s, &name, v, &PERCENTILES);
            }
            let bw = st.interval_stats(ms, true);
            if bw.samples > 0 {
                let per = share_of_group(bw.mean, groups.get(&j.groupid).and_then(|g| g[d]));
                let (mut b, mut unit) = (bw, "KiB");
                if b.mean > 1024.0 * 1024.0 {
                    (b.min, b.max, b.mean, b.dev, unit) =
                        (b.min / 1024, b.max / 1024, b.mean / 1024.0, b.dev / 1024.0, "MiB");
                }
                let _ = writeln!(
                    s,
                    "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
                    b.min, b.max, b.mean, b.dev, b.samples
                );
            }
            let io = st.interval_stats(ms, false);
            if io.samples > 0 {
                let _ = writeln!(
                    s,
                    "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
                    io.min, io.max, io.mean, io.dev, io.samples
                );
            }
        }
        let lat = latency_buckets(j);
        let show_sync = |s: &mut String| {
            if !j.sync_lat_ns.is_empty() {
                // fio 3.33's heading (later versions add `syncfs`).
                s.push_str("  fsync/fdatasync/sync_file_range:\n");
                display_lat(s, "sync", &j.sync_lat_ns);
                show_percentiles(s, "sync", &j.sync_lat_ns, &PERCENTILES);
            }
        };
        for (counts, (unit, labels)) in
            lat.iter().zip([("nsec", &LAT_NU[..]), ("usec", &LAT_NU[..]), ("msec", &LAT_M[..])])
        {
            show_lat(&mut s, unit, labels, counts, ios);
        }
        show_sync(&mut s);
        let _ = writeln!(s, "  IO depths    : {}", dist_line(&DEPTHS, &j.depth_map, ios));
        for (name, map) in [("submit  ", &j.submit_map), ("complete", &j.complete_map)] {
            let total: u64 = map.iter().sum();
            let _ = writeln!(s, "     {name}  : {}", dist_line(&BATCHES, map, total));
        }
        let _ = writeln!(
            s,
            "     issued rwts: total={},{},0,{} short=0,0,0,0 dropped=0,0,0,0",
            j.dirs[0].total_ios, j.dirs[1].total_ios, j.fsyncs
        );
        let _ = writeln!(s, "     latency   : target=0, window=0, percentile=100.00%, depth={}", j.iodepth);
    }
    // `show_group_stats`, over the entries (`group_reporting` makes one of a group).
    for (g, dirs) in &groups {
        let _ = writeln!(s, "\nRun status group {g} (all jobs):");
        for (name, d) in ["READ", "WRITE"].iter().zip(dirs) {
            let Some(d) = d else { continue };
            let n = |v: u64, pow2: bool, unit: &str| num2str(v, SIG_FIGS, pow2, unit);
            let _ = writeln!(
                s,
                "  {name:>5}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                n(d.agg, true, "B/s"),
                n(d.agg, false, "B/s"),
                n(d.min_bw, true, "B/s"),
                n(d.max_bw, true, "B/s"),
                n(d.min_bw, false, "B/s"),
                n(d.max_bw, false, "B/s"),
                n(d.bytes, true, "B"),
                n(d.bytes, false, "B"),
                d.min_run,
                d.max_run,
            );
        }
    }
    if let Some(d) = &r.disk {
        let ms = |d: std::time::Duration| d.as_millis();
        let st = &d.stats;
        let _ = writeln!(
            s,
            "\nDisk stats (read/write):\n  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
            d.name,
            st.ios[0],
            st.ios[1],
            st.merges[0],
            st.merges[1],
            ms(st.ticks[0]),
            ms(st.ticks[1]),
            ms(st.time_in_queue),
            d.util()
        );
    }
    s
}

/// `stat_calc_dist` as the normal output prints it: each bucket's share of `total`, at
/// least 0.1 % where it is not empty.
fn dist_line(labels: &[&str], counts: &[u64], total: u64) -> String {
    let parts: Vec<String> = labels
        .iter()
        .zip(counts)
        .map(|(k, &c)| {
            let mut pct = if total > 0 { 100.0 * c as f64 / total as f64 } else { 0.0 };
            if c > 0 && pct < 0.1 {
                pct = 0.1;
            }
            format!("{k}={pct:3.1}%")
        })
        .collect();
    parts.join(", ")
}

/// `display_lat`: a latency line in ns, µs or ms as the figures need (`nsec_to_msec`,
/// `nsec_to_usec`), min and max through `num2str`. Nothing without samples.
fn display_lat(s: &mut String, name: &str, ns: &[u64]) {
    use std::fmt::Write as _;
    if ns.is_empty() {
        return;
    }
    let m = Moments::of(ns);
    let (div, base) = if m.min > 2_000_000 && m.max > 99_999_999 && m.dev > 1e6 {
        (1_000_000, "msec")
    } else if m.min > 2000 && m.max > 99_999 && m.dev > 1000.0 {
        (1000, "usec")
    } else {
        (1, "nsec")
    };
    let _ = writeln!(
        s,
        "    {name} ({base}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        num2str(m.min / div, 6, false, ""),
        num2str(m.max / div, 6, false, ""),
        m.mean / div as f64,
        m.dev / div as f64
    );
}

/// `show_clat_percentiles` at fio's default precision (2): the percentiles of `list`, in
/// ns, µs or ms as their range needs, as many to a line as fit 80 columns.
fn show_percentiles(s: &mut String, pre: &str, ns: &[u64], list: &[f64]) {
    use std::fmt::Write as _;
    const PRECISION: usize = 2;
    let mut vals = percentiles(ns, list);
    let (Some(&minv), Some(&maxv)) = (vals.iter().min(), vals.iter().max()) else { return };
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    for v in &mut vals {
        for _ in 0..scale_down {
            *v = v.div_ceil(1000);
        }
    }
    let _ = write!(s, "    {pre} percentiles ({unit}):\n     |");
    let width = (maxv / divisor).max(1).ilog10() as usize + 1;
    let time_width = width.max(5);
    let per_line = (80 - 7) / (PRECISION + 10 + time_width);
    for (j, (p, v)) in list.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            s.push_str("     |");
        }
        let last = j == vals.len() - 1;
        let _ = write!(s, " {p:w$.PRECISION$}th=[{v:time_width$}]{}", if last { '\n' } else { ',' }, w = PRECISION + 3);
        if !last && j % per_line == per_line - 1 {
            s.push('\n');
        }
    }
}

/// `show_lat`: the non-empty buckets of one latency unit, five to a line, each as its
/// share of the job's `ios` issued I/Os (at least 0.01 % where any fell in it).
fn show_lat(s: &mut String, unit: &str, labels: &[&str], counts: &[u64], ios: u64) {
    use std::fmt::Write as _;
    let shown: Vec<String> = labels
        .iter()
        .zip(counts)
        .filter(|(_, c)| **c > 0 && ios > 0)
        .map(|(l, &c)| format!("{l}={:3.2}%", (100.0 * c as f64 / ios as f64).max(0.01)))
        .collect();
    for line in shown.chunks(5) {
        let _ = writeln!(s, "  lat ({unit})   : {}", line.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plat_buckets_hold_their_values_within_fios_error() {
        // Up to 2^34 ns (17 s), fio's accurate range; beyond, the last bucket.
        for v in [0u64, 1, 127, 128, 129, 1000, 4095, 4096, 123_456, 10_000_000, 1 << 33] {
            let i = plat::val_to_idx(v);
            let back = plat::idx_to_val(i);
            assert!(back.abs_diff(v) as f64 <= v as f64 / 64.0 + 1.0, "{v} -> {i} -> {back}");
        }
        // The same examples as fio's own reasoning: 0..128 exact; 129 shares 128's bucket.
        assert_eq!(plat::idx_to_val(plat::val_to_idx(100)), 100);
        assert_eq!(plat::val_to_idx(128), plat::val_to_idx(129));
        assert_eq!(plat::val_to_idx(u64::MAX), plat::NR - 1);
    }

    /// A simulated report of `jobs` (noop, seed 1, no disk statistics).
    fn report(jobs: Vec<JobResult>) -> Report {
        Report {
            world: "simulated".into(),
            global_options: vec![],
            scheduler: "noop".into(),
            seed: 1,
            jobs,
            warnings: vec![],
            disk: None,
        }
    }

    fn job(name: &str, group: u32, gr: bool, bytes: u64, us: u64) -> JobResult {
        let d = DirStats {
            io_bytes: bytes,
            total_ios: 1,
            clat_ns: vec![us * 1000],
            bw_log: vec![bytes],
            iops_log: vec![1],
            ..Default::default()
        };
        JobResult {
            name: name.into(),
            groupid: group,
            error: 0,
            error_func: "",
            runtime_us: us,
            ioprio: 0,
            dirs: [d, DirStats::default()],
            fsyncs: 0,
            sync_lat_ns: Vec::new(),
            group_reporting: gr,
            iodepth: 1,
            depth_map: [1, 0, 0, 0, 0, 0, 0],
            options: Vec::new(),
            submit_map: [0, 1, 0, 0, 0, 0, 0],
            complete_map: [0, 1, 0, 0, 0, 0, 0],
            samples: Vec::new(),
            number: 1,
        }
    }

    /// fio's latency buckets hold the values below their label; both distributions'
    /// shares are of the issued I/Os.
    #[test]
    fn latency_and_depth_distributions_are_fios() {
        let mut j = job("a", 0, false, 4096, 1);
        j.dirs[0].clat_ns = vec![1, 3, 1_500, 2_500_000, 3_000_000_000];
        j.dirs[0].total_ios = 5;
        j.depth_map = [2, 0, 3, 0, 0, 0, 0];
        let r = report(vec![j]);
        let v = json(&r);
        let job = &v["jobs"][0];
        assert_eq!(job["latency_ns"]["2"], 20.0);
        assert_eq!(job["latency_ns"]["4"], 20.0);
        assert_eq!(job["latency_us"]["2"], 20.0);
        assert_eq!(job["latency_ms"]["4"], 20.0);
        assert_eq!(job["latency_ms"][">=2000"], 20.0);
        assert_eq!(job["latency_ms"]["2"], 0.0);
        assert_eq!(job["iodepth_level"]["1"], 40.0);
        assert_eq!(job["iodepth_level"]["4"], 60.0);
        assert_eq!(job["latency_depth"], 1);
        assert_eq!((0..70).map(depth_bucket).max(), Some(6));
        assert_eq!([1, 2, 3, 4, 63, 64].map(depth_bucket), [0, 1, 1, 2, 5, 6]);
    }

    /// fio 3.33's per-I/O log lines, one file per log type and job.
    #[test]
    fn log_files_are_fios_format() {
        let a: Vec<String> =
            ["--name=j", "--rw=read", "--size=8k", "--write_lat_log=l", "--write_bw_log=b", "--write_iops_log=i"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let set = super::super::job::build(&super::super::jobfile::parse_args(&a, 1).unwrap()).unwrap();
        let mut j = job("j", 0, false, 8192, 1);
        j.samples = vec![
            Sample { at_ms: 0, write: false, bytes: 4096, clat_ns: 259_045, prio: 0, offset: 0 },
            Sample { at_ms: 3, write: true, bytes: 4096, clat_ns: 0, prio: 1 << 13, offset: 8192 },
        ];
        let r = report(vec![j]);
        let files = run_log_files(&r, &set);
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(names, ["l_clat.1.log", "l_lat.1.log", "b_bw.1.log", "i_iops.1.log"]);
        assert_eq!(log_file_names(&set), names);
        assert_eq!(files[0].1, "0, 259045, 0, 4096, 0\n3, 0, 1, 4096, 1\n");
        // fio's per-I/O rate: 4096 × 10⁶ / 259045 ns, as fio 3.33 logged it for such an I/O.
        assert_eq!(files[2].1.lines().next(), Some("0, 15811, 0, 4096, 0"));
        assert_eq!(files[3].1.lines().nth(1), Some("3, 1, 1, 4096, 1"));
        // `log_offset` adds the offset; `log_prio` writes the priority value (`flush_samples`).
        let mut set = set;
        set.jobs[0].log_offset = true;
        set.jobs[0].log_prio = true;
        let files = run_log_files(&r, &set);
        assert_eq!(files[0].1, "0, 259045, 0, 4096, 0, 0x0000\n3, 0, 1, 4096, 8192, 0x2000\n");
    }

    /// fio 3.33's own lines for a 8 MiB job in 172 ms: `bw=46.5MiB/s (48.8MB/s)`,
    /// `io=8192KiB (8389kB)`, and its IOPS and sizes elsewhere.
    #[test]
    fn num2str_prints_as_fio_does() {
        let bw = 8_388_608 * 1000 / 172;
        assert_eq!(num2str(bw, 4, true, "B/s"), "46.5MiB/s");
        assert_eq!(num2str(bw, 4, false, "B/s"), "48.8MB/s");
        assert_eq!(num2str(8_388_608, 4, true, "B"), "8192KiB");
        assert_eq!(num2str(8_388_608, 4, false, "B"), "8389kB");
        assert_eq!(num2str(200, 4, false, ""), "200");
        assert_eq!(num2str(302_707, 4, false, ""), "303k");
        assert_eq!(num2str(0, 4, true, "B/s"), "0B/s");
    }

    /// fio's bandwidth and IOPS samples: one per whole 500 ms with completions, as
    /// `__add_samples` computes them; the partial last interval and empty ones are not
    /// samples. The normal output prints them in fio's lines.
    #[test]
    fn bandwidth_and_iops_samples_are_fios() {
        let mut d = DirStats::default();
        for at_ms in [10, 20, 1100, 1700] {
            d.add(4096, 50_000, at_ms * 1_000_000);
        }
        // 1.7 s: intervals 0 (2 I/Os), 1 (none) and 2 (1 I/O) are whole; 3 is partial.
        let bw = d.interval_stats(1750, true);
        assert_eq!((bw.min, bw.max, bw.mean, bw.samples), (8, 16, 12.0, 2));
        let io = d.interval_stats(1750, false);
        assert_eq!((io.min, io.max, io.mean, io.samples), (2, 4, 3.0, 2));
        let mut j = job("a", 0, false, 0, 1_750_000);
        j.dirs[0] = d;
        let r = report(vec![j]);
        let read = &json(&r)["jobs"][0]["read"];
        assert_eq!((read["bw_min"].as_u64(), read["bw_samples"].as_u64()), (Some(8), Some(2)));
        assert_eq!((read["iops_max"].as_u64(), read["iops_mean"].as_f64()), (Some(4), Some(3.0)));
        // 16 KiB in 1750 ms is 9362 B/s, 9.14 KiB/s: the mean sample, 12, is over 100 %.
        assert_eq!(read["bw_agg"].as_f64(), Some(100.0));
        let text = normal(&r);
        assert!(
            text.contains("   bw (  KiB/s): min=    8, max=   16, per=100.00%, avg=12.00, stdev= 5.66, samples=2\n"),
            "{text}"
        );
        assert!(text.contains("   iops        : min=    2, max=    4, avg= 3.00, stdev= 1.41, samples=2\n"), "{text}");
        // All four at 50 µs: fio's bucket for it is the one of 49664–50175 ns, printed as its
        // middle, 49920; the range is below fio's µs threshold (≤ 99999 ns), so in ns.
        assert!(text.contains("    clat (nsec): min=50000, max=50000, avg=50000.00, stdev= 0.00\n"), "{text}");
        assert!(text.contains("    clat percentiles (nsec):\n     |  1.00th=[49920],  5.00th=[49920], 10.00th=[49920], 20.00th=[49920],\n"), "{text}");
        assert!(text.contains("     | 99.99th=[49920]\n   bw ("), "{text}");
        assert!(text.contains("\n  lat (usec)   : 100=100.00%\n  IO depths"), "{text}");
        assert!(text.contains("  IO depths    : 1=25.0%, 2=0.0%,"), "{text}");
    }

    #[test]
    fn group_reporting_makes_one_entry_per_group() {
        let r = report(vec![
            job("a", 0, true, 10, 5),
            job("a.1", 0, true, 20, 7),
            job("b", 1, false, 1, 1),
            job("c", 1, false, 1, 1),
        ]);
        let e = entries(&r);
        assert_eq!(e.iter().map(|e| e.job.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(e.iter().map(|e| e.members).collect::<Vec<_>>(), [2, 1, 1]);
        let a = &e[0].job;
        assert_eq!((a.dirs[0].io_bytes, a.dirs[0].total_ios, a.runtime_us), (30, 2, 7));
        assert_eq!(json(&r)["jobs"].as_array().unwrap().len(), 3);
    }
}
