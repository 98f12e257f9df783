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
    /// log at its default averaging (`bw_avg_time`), for the report's over-time chart.
    pub bw_log: Vec<u64>,
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
        }
        self.bw_log[i] += bytes;
    }
}

/// One job's (one clone's) results.
#[derive(Clone, Debug, PartialEq)]
pub struct JobResult {
    pub name: String,
    pub groupid: u32,
    /// Measured time (after `ramp_time`), µs.
    pub runtime_us: u64,
    /// Read, write.
    pub dirs: [DirStats; 2],
    pub fsyncs: u64,
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
}

/// One completed I/O as fio's per-I/O logs record it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Completion, ms since the job started.
    pub at_ms: u64,
    pub write: bool,
    pub bytes: u64,
    pub clat_ns: u64,
    /// Of the real-time I/O priority class (the log's priority column).
    pub rt: bool,
}

/// fio 3.33's per-I/O log files for one job: (file name, text) for each log the job asks
/// for, as `flush_samples` writes them — `time (ms), value, direction (0 read, 1 write),
/// block size (bytes), priority (1 for the RT class)` per line. `clat` and `lat` logs
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
                .map(|s| format!("{}, {}, {}, {}, {}\n", s.at_ms, value(s), s.write as u8, s.bytes, s.rt as u8))
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

/// The report's entries: each job, except that the jobs of a group with
/// `group_reporting` are one entry (fio's rule: named after the group's first job, their
/// I/Os and latencies together, the longest runtime).
pub fn entries(r: &Report) -> Vec<JobResult> {
    let mut out: Vec<JobResult> = Vec::new();
    for j in &r.jobs {
        match out.last_mut() {
            Some(e) if j.group_reporting && e.group_reporting && e.groupid == j.groupid => {
                for (a, b) in e.dirs.iter_mut().zip(&j.dirs) {
                    a.io_bytes += b.io_bytes;
                    a.total_ios += b.total_ios;
                    a.clat_ns.extend_from_slice(&b.clat_ns);
                    if a.bw_log.len() < b.bw_log.len() {
                        a.bw_log.resize(b.bw_log.len(), 0);
                    }
                    for (x, y) in a.bw_log.iter_mut().zip(&b.bw_log) {
                        *x += y;
                    }
                }
                e.runtime_us = e.runtime_us.max(j.runtime_us);
                e.fsyncs += j.fsyncs;
                for (a, b) in e.depth_map.iter_mut().zip(&j.depth_map) {
                    *a += b;
                }
                e.samples.extend_from_slice(&j.samples);
            }
            _ => out.push(j.clone()),
        }
    }
    out
}

/// A run's report.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Which world ran it: `simulated`, or `real` with the target.
    pub world: String,
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

/// The labels of fio's nanosecond and microsecond latency buckets, and of its millisecond ones.
const LAT_NU: [&str; 10] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
const LAT_M: [&str; 12] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];

/// fio's default completion-latency percentiles (`percentile_list`).
pub const PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// Summary statistics of latencies in ns: (min, max, mean, sample stddev).
fn summary(v: &[u64]) -> (u64, u64, f64, f64) {
    if v.is_empty() {
        return (0, 0, 0.0, 0.0);
    }
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (*v.iter().min().expect("non-empty"), *v.iter().max().expect("non-empty"), mean, var.sqrt())
}

/// The value at percentile `p` of sorted latencies (fio reports the upper bound of the
/// bucket holding it; this is the sample itself).
fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let k = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[k.clamp(1, sorted.len()) - 1]
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
    let mut counts = vec![0u64; plat::NR];
    for &v in clat_ns {
        counts[plat::val_to_idx(v)] += 1;
    }
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(i, c)| (plat::idx_to_val(i).to_string(), json!(c)))
        .collect()
}

fn dir_json(d: &DirStats, runtime_ms: u64, plus: bool) -> Value {
    let (min, max, mean, sd) = summary(&d.clat_ns);
    let mut sorted = d.clat_ns.clone();
    sorted.sort_unstable();
    let mut pct = serde_json::Map::new();
    if !sorted.is_empty() {
        for p in PERCENTILES {
            pct.insert(format!("{p:.6}"), json!(percentile(&sorted, p)));
        }
    }
    let bw_bytes = (d.io_bytes * 1000).checked_div(runtime_ms).unwrap_or(0);
    let iops = if runtime_ms > 0 { d.total_ios as f64 * 1000.0 / runtime_ms as f64 } else { 0.0 };
    let lat = json!({ "min": min, "max": max, "mean": mean, "stddev": sd, "N": d.total_ios });
    let mut clat = lat.clone();
    if !pct.is_empty() {
        clat["percentile"] = Value::Object(pct);
        // As fio: the histogram where there are percentiles (samples).
        if plus {
            clat["bins"] = Value::Object(bins(&d.clat_ns));
        }
    }
    json!({
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
    })
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
    let jobs: Vec<Value> = entries
        .iter()
        .map(|j| {
            let ms = j.runtime_us / 1000;
            let lat = latency_buckets(j);
            let ios: u64 = j.dirs.iter().map(|d| d.clat_ns.len() as u64).sum();
            json!({
                "jobname": j.name,
                "groupid": j.groupid,
                "error": 0,
                "read": dir_json(&j.dirs[0], ms, plus),
                "write": dir_json(&j.dirs[1], ms, plus),
                // No trim is modelled (a job that asks for one is refused): none was issued.
                "trim": dir_json(&DirStats::default(), ms, plus),
                "sync": { "total_ios": j.fsyncs },
                "job_runtime": ms,
                "iodepth_level": shares(&["1", "2", "4", "8", "16", "32", ">=64"], &j.depth_map, j.depth_map.iter().sum(), 0.1),
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
            "bw_log": entries.iter().map(|j| json!({
                "jobname": j.name, "read_bytes": j.dirs[0].bw_log, "write_bytes": j.dirs[1].bw_log,
            })).collect::<Vec<_>>(),
        },
    });
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

/// fio's normal output, in outline: per job its IOPS, bandwidth, completion latency and
/// percentiles per direction, then each group's totals.
pub fn normal(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "iosched fio ({}), scheduler {}, seed {}", r.world, r.scheduler, r.seed);
    for w in &r.warnings {
        let _ = writeln!(s, "note: {w}");
    }
    for j in &entries(r) {
        let _ = writeln!(s, "{}: (groupid={}): err= 0", j.name, j.groupid);
        let ms = j.runtime_us / 1000;
        for (d, name) in j.dirs.iter().zip(["read", "write"]) {
            if d.total_ios == 0 {
                continue;
            }
            // `show_ddir_status`: integer rates per second of the runtime, fio's 4 figures.
            let (bw, iops) = match ms {
                0 => (0, 0),
                ms => (1000 * d.io_bytes / ms, 1000 * d.total_ios / ms),
            };
            let _ = writeln!(
                s,
                "  {name}: IOPS={}, BW={} ({})({}/{ms}msec)",
                num2str(iops, SIG_FIGS, false, ""),
                num2str(bw, SIG_FIGS, true, "B/s"),
                num2str(bw, SIG_FIGS, false, "B/s"),
                num2str(d.io_bytes, SIG_FIGS, true, "B"),
            );
            let (min, max, mean, sd) = summary(&d.clat_ns);
            let _ = writeln!(
                s,
                "    clat (usec): min={:.0}, max={:.0}, avg={:.2}, stdev={:.2}",
                min as f64 / 1e3,
                max as f64 / 1e3,
                mean / 1e3,
                sd / 1e3
            );
            let mut sorted = d.clat_ns.clone();
            sorted.sort_unstable();
            let line: Vec<String> = [50.0, 90.0, 99.0, 99.9]
                .iter()
                .map(|&p| format!("{p:.2}th=[{:.0}]", percentile(&sorted, p) as f64 / 1e3))
                .collect();
            let _ = writeln!(s, "    clat percentiles (usec): {}", line.join(", "));
        }
    }
    // `show_group_stats`, over the entries (`group_reporting` makes one of a group): the
    // group's bandwidth over its longest runtime, the entries' lowest and highest.
    let all = entries(r);
    let groups: std::collections::BTreeSet<u32> = all.iter().map(|j| j.groupid).collect();
    for g in groups {
        let _ = writeln!(s, "\nRun status group {g} (all jobs):");
        for (d, name) in ["READ", "WRITE"].iter().enumerate() {
            let js: Vec<&JobResult> =
                all.iter().filter(|j| j.groupid == g && j.dirs[d].total_ios > 0 && j.runtime_us >= 1000).collect();
            if js.is_empty() {
                continue;
            }
            let runs: Vec<u64> = js.iter().map(|j| j.runtime_us / 1000).collect();
            let bws: Vec<u64> = js.iter().map(|j| j.dirs[d].io_bytes * 1000 / (j.runtime_us / 1000)).collect();
            let bytes: u64 = js.iter().map(|j| j.dirs[d].io_bytes).sum();
            let (min_run, max_run) = (*runs.iter().min().expect("one"), *runs.iter().max().expect("one"));
            let (min, max) = (*bws.iter().min().expect("one"), *bws.iter().max().expect("one"));
            let agg = bytes * 1000 / max_run;
            let n = |v: u64, pow2: bool, unit: &str| num2str(v, SIG_FIGS, pow2, unit);
            let _ = writeln!(
                s,
                "  {name:>5}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={min_run}-{max_run}msec",
                n(agg, true, "B/s"),
                n(agg, false, "B/s"),
                n(min, true, "B/s"),
                n(max, true, "B/s"),
                n(min, false, "B/s"),
                n(max, false, "B/s"),
                n(bytes, true, "B"),
                n(bytes, false, "B"),
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
        Report { world: "simulated".into(), scheduler: "noop".into(), seed: 1, jobs, warnings: vec![], disk: None }
    }

    fn job(name: &str, group: u32, gr: bool, bytes: u64, us: u64) -> JobResult {
        let d = DirStats { io_bytes: bytes, total_ios: 1, clat_ns: vec![us * 1000], bw_log: vec![bytes] };
        JobResult {
            name: name.into(),
            groupid: group,
            runtime_us: us,
            dirs: [d, DirStats::default()],
            fsyncs: 0,
            group_reporting: gr,
            iodepth: 1,
            depth_map: [1, 0, 0, 0, 0, 0, 0],
            samples: Vec::new(),
            number: 1,
        }
    }

    /// fio's latency buckets hold the values below their label; the depth map's shares
    /// are of all submitted I/Os.
    #[test]
    fn latency_and_depth_distributions_are_fios() {
        let mut j = job("a", 0, false, 4096, 1);
        j.dirs[0].clat_ns = vec![1, 3, 1_500, 2_500_000, 3_000_000_000];
        j.depth_map = [1, 0, 3, 0, 0, 0, 0];
        let r = report(vec![j]);
        let v = json(&r);
        let job = &v["jobs"][0];
        assert_eq!(job["latency_ns"]["2"], 20.0);
        assert_eq!(job["latency_ns"]["4"], 20.0);
        assert_eq!(job["latency_us"]["2"], 20.0);
        assert_eq!(job["latency_ms"]["4"], 20.0);
        assert_eq!(job["latency_ms"][">=2000"], 20.0);
        assert_eq!(job["latency_ms"]["2"], 0.0);
        assert_eq!(job["iodepth_level"]["1"], 25.0);
        assert_eq!(job["iodepth_level"]["4"], 75.0);
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
            Sample { at_ms: 0, write: false, bytes: 4096, clat_ns: 259_045, rt: false },
            Sample { at_ms: 3, write: true, bytes: 4096, clat_ns: 0, rt: true },
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

    #[test]
    fn group_reporting_makes_one_entry_per_group() {
        let r = report(vec![
            job("a", 0, true, 10, 5),
            job("a.1", 0, true, 20, 7),
            job("b", 1, false, 1, 1),
            job("c", 1, false, 1, 1),
        ]);
        let e = entries(&r);
        assert_eq!(e.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!((e[0].dirs[0].io_bytes, e[0].dirs[0].total_ios, e[0].runtime_us), (30, 2, 7));
        assert_eq!(json(&r)["jobs"].as_array().unwrap().len(), 3);
    }
}
