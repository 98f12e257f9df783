//! tiobench's semantics (tiotest 0.3.3 driven by tiobench.pl; reference `benchmarks.md`
//! §1), shared by the simulated tiobench (`iosched-workloads`) and the real one
//! (`iosched-rt`):
//!
//! - the layout: N threads, each with its own file (or region) of `int(size / N)` MiB
//!   ([`file_mb`]), and `--random` split as `int(random / N)` operations per thread
//!   ([`check_random`]);
//! - each thread's operation stream ([`ThreadOps`]): sequential phases walk the file
//!   block by block; random phases draw `(rand() % (blocks − 1)) × block`, uniform with
//!   replacement, from a generator seeded by ([`thread_rng`]) the run's seed, the phase
//!   and the thread, so one `--seed` draws the same offsets in both worlds;
//! - the measurements ([`PhaseResult`]: tiotest's raw sums, and the derived columns as
//!   tiobench.pl computes them);
//! - the summary table below.
//!
//! The summary table is tiobench.pl's (0.3.3 with Randy Hron's latency and CPU-efficiency
//! columns, tiobench commit 7b59b02, 2002), byte for byte.
//!
//! Layout: the "Unit information" block, then the sections `Sequential Reads`,
//! `Random Reads`, `Sequential Writes`, `Random Writes` in that order, each a blank line,
//! its title, the three header lines and one row per record of that phase (in the order
//! given). Rows use the Perl picture
//!
//! ```text
//! @<<<<<<<<<<<<<<<<<<<<<<<<<<< @||||| @|||| @>>  @##.## @>>>>% @####.### @#######.##  @#.##### @#.##### @####
//! ```
//!
//! rendered as Perl's `format`/`write` does: text fields are cut to their width (`@<`
//! left, `@|` centred with the odd space on the right, `@>` right); numeric fields are
//! `sprintf("%W.Pf")` and are filled with `#` when the number does not fit; the CPU%
//! field is a *text* field, so it shows the first five characters of Perl's default
//! stringification of the number (`%.15g`): 11.0912 → `11.09`, 2.50004 → `2.500`,
//! 2.5 → `  2.5`.
//!
//! One fidelity note: 7b59b02 defines the header as `SEQ_READS_TOP` but never selects it
//! (`$^` stays `STDOUT_TOP`), so the script itself prints no column header; the tables
//! posted to LKML carry one. [`table`] prints the header under every section title (the
//! published form); [`table_as_printed`] prints exactly what the script printed.

use crate::hist::{Bucket, LatHist};
use iosched_core::Rng;
use serde::Serialize;
use std::fmt::Write as _;

/// The largest `--random`: tiotest 0.3.3 keeps its operation count in a C `int`.
pub const RANDOM_MAX: u64 = i32::MAX as u64;

/// `--random` within tiotest's range, and at least one random operation for each thread
/// of every count in `threads` (the thread counts that run a random phase; the simulated
/// and the real tiobench share this). tiobench.pl hands each thread `int(random /
/// threads)`: with fewer operations than threads a random phase does nothing, and its row
/// would divide by a time of nothing (tiobench.pl itself dies on that division).
pub fn check_random(random: u64, threads: &[u32]) -> Result<(), String> {
    if random > RANDOM_MAX {
        return Err(format!(
            "--random {random}: out of range: expected at most {RANDOM_MAX} (tiotest's -r is a C int)"
        ));
    }
    if let Some(&n) = threads.iter().max()
        && random < n as u64
    {
        return Err(format!(
            "--random {random} over {n} threads: each thread does int({random} / {n}) = 0 random operations \
             (tiobench.pl splits --random over the threads); expected at least {n}"
        ));
    }
    Ok(())
}

/// One phase's raw measurements (summed over threads, as tiotest's terse line).
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseResult {
    pub phase: Option<Phase>,
    pub threads: u32,
    /// MiB moved.
    pub mib: f64,
    /// Wall time from release to the last thread's exit.
    pub wall_s: f64,
    /// Σ user+system CPU seconds of the threads.
    pub cpu_s: f64,
    pub calls: u64,
    pub lat_sum_ms: f64,
    pub lat_max_ms: f64,
    pub over_2s: u64,
    pub over_10s: u64,
    /// MiB the device read / wrote during the phase (diagnostics: cache effects), where
    /// the world counts them (the simulator does; a real run does not).
    pub device_read_mib: Option<f64>,
    pub device_write_mib: Option<f64>,
    /// Every call's latency, bucketed: the distribution behind the average and maximum.
    #[serde(skip)]
    pub lat_hist: LatHist,
}

impl PhaseResult {
    pub fn rate_mb_s(&self) -> f64 {
        if self.wall_s > 0.0 { self.mib / self.wall_s } else { 0.0 }
    }
    pub fn cpu_pct(&self) -> f64 {
        if self.wall_s > 0.0 { 100.0 * self.cpu_s / self.wall_s } else { 0.0 }
    }
    pub fn avg_lat_ms(&self) -> f64 {
        if self.calls > 0 { self.lat_sum_ms / self.calls as f64 } else { 0.0 }
    }
    pub fn pct_gt_2s(&self) -> f64 {
        if self.calls > 0 { 100.0 * self.over_2s as f64 / self.calls as f64 } else { 0.0 }
    }
    pub fn pct_gt_10s(&self) -> f64 {
        if self.calls > 0 { 100.0 * self.over_10s as f64 / self.calls as f64 } else { 0.0 }
    }
    /// tiobench.pl: `rate / (cpu / 100)`.
    pub fn cpu_eff(&self) -> f64 {
        let cpu = self.cpu_pct();
        if cpu > 0.0 { self.rate_mb_s() / (cpu / 100.0) } else { 0.0 }
    }

    /// Account one timed `read`/`write` call that took `lat_ms` and moved `bytes`.
    pub fn add_call(&mut self, lat_ms: f64, bytes: u64) {
        self.calls += 1;
        self.lat_sum_ms += lat_ms;
        self.lat_max_ms = self.lat_max_ms.max(lat_ms);
        self.lat_hist.add_ms(lat_ms);
        // tiotest compares with strict `>`.
        if lat_ms > 2000.0 {
            self.over_2s += 1;
        }
        if lat_ms > 10_000.0 {
            self.over_10s += 1;
        }
        self.mib += bytes as f64 / (1 << 20) as f64;
    }

    /// Add another thread's sums (calls, bytes, latencies, CPU time).
    pub fn merge(&mut self, o: &PhaseResult) {
        self.calls += o.calls;
        self.lat_sum_ms += o.lat_sum_ms;
        self.lat_max_ms = self.lat_max_ms.max(o.lat_max_ms);
        self.lat_hist.merge(&o.lat_hist);
        self.over_2s += o.over_2s;
        self.over_10s += o.over_10s;
        self.mib += o.mib;
        self.cpu_s += o.cpu_s;
    }

    /// The table / JSON row for this phase of a run of `file_size_mb` (tiobench.pl's
    /// `--size`) in `block`-byte calls.
    pub fn record(&self, scheduler: &str, file_size_mb: u64, block: u32) -> TiobenchRecord {
        TiobenchRecord {
            scheduler: scheduler.to_string(),
            phase: self.phase.expect("a finished phase"),
            threads: self.threads,
            file_size_mb,
            block,
            rate_mb_s: self.rate_mb_s(),
            cpu_pct: self.cpu_pct(),
            avg_lat_ms: self.avg_lat_ms(),
            max_lat_ms: self.lat_max_ms,
            pct_gt_2s: self.pct_gt_2s(),
            pct_gt_10s: self.pct_gt_10s(),
            cpu_eff: self.cpu_eff(),
            device_read_mib: self.device_read_mib,
            device_write_mib: self.device_write_mib,
            lat_hist_us: self.lat_hist.buckets(),
        }
    }
}

/// How a tiotest call reaches the disk: the one way the two worlds' tiobench differ. The
/// simulated tiotest reads and writes through the page cache, as the original does; the
/// real runtime has no page cache in front of its scheduler and uses O_DIRECT, whose calls
/// must be whole blocks of the target's alignment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Io {
    Buffered,
    Direct { align: u64 },
}

/// `--block` for this path: buffered, a multiple of 512 bytes up to 1 MiB; direct, a
/// positive multiple of the alignment.
pub fn check_block(block: u64, io: Io) -> Result<(), String> {
    match io {
        Io::Buffered if block == 0 || !block.is_multiple_of(512) || block > (1 << 20) => {
            Err(format!("--block {block}: expected a multiple of 512 bytes, at most 1M"))
        }
        Io::Direct { align } if block == 0 || !block.is_multiple_of(align) => {
            Err(format!("--block {block}: expected a positive multiple of {align} bytes (O_DIRECT)"))
        }
        _ => Ok(()),
    }
}

/// Every thread count in `threads` (none zero) leaves each thread a file of at least
/// 1 MiB of the `size_mb` ([`file_mb`]).
pub fn check_split(size_mb: u64, threads: &[u32]) -> Result<(), String> {
    if threads.is_empty() || threads.contains(&0) {
        return Err("--threads: expected a list of positive thread counts".into());
    }
    match threads.iter().find(|&&n| file_mb(size_mb, n) == 0) {
        Some(n) => Err(format!("--size {size_mb} MiB split over {n} threads leaves less than 1 MiB per file")),
        None => Ok(()),
    }
}

/// Each thread's file, MiB: tiobench.pl's `int(size / threads)` (the callers refuse a
/// size that leaves less than 1 MiB).
pub fn file_mb(size_mb: u64, threads: u32) -> u64 {
    size_mb / threads as u64
}

/// The generator of thread `thread`'s random offsets in `phase` of a run seeded `seed`:
/// one per (phase, thread), so that the threads' streams do not depend on how their
/// calls interleave.
pub fn thread_rng(seed: u64, phase: Phase, thread: u32) -> Rng {
    let index = Phase::RUN_ORDER.iter().position(|&p| p == phase).expect("a phase") as u64;
    Rng::derive(seed, index * 100_000 + thread as u64)
}

/// One thread's calls in one phase, as byte offsets into its file: the `blocks` blocks in
/// order in a sequential phase; `ops` draws of `(rand() % (blocks − 1)) × block` in a
/// random phase (0.3.3: the last block is never chosen; a one-block file draws block 0).
#[derive(Clone, Debug)]
pub struct ThreadOps {
    random: bool,
    block: u64,
    blocks: u64,
    total: u64,
    done: u64,
    rng: Rng,
}

impl ThreadOps {
    /// Thread `thread`'s stream in `phase`: a file of `file_bytes` in `block`-byte calls,
    /// `random_ops` calls in a random phase.
    pub fn new(seed: u64, phase: Phase, thread: u32, file_bytes: u64, block: u64, random_ops: u64) -> ThreadOps {
        let blocks = file_bytes / block;
        let total = if phase.is_random() { random_ops } else { blocks };
        ThreadOps { random: phase.is_random(), block, blocks, total, done: 0, rng: thread_rng(seed, phase, thread) }
    }

    /// Calls in the stream.
    pub fn len(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

impl Iterator for ThreadOps {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.done >= self.total {
            return None;
        }
        let b = if self.random { self.rng.below(self.blocks.saturating_sub(1).max(1)) } else { self.done };
        self.done += 1;
        Some(b * self.block)
    }
}

/// A tiobench phase. Execution order is seq_write, rand_write, seq_read, rand_read; the
/// table prints reads first.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    SeqRead,
    RandRead,
    SeqWrite,
    RandWrite,
}

impl Phase {
    /// All phases in the order tiotest runs them.
    pub const RUN_ORDER: [Phase; 4] = [Phase::SeqWrite, Phase::RandWrite, Phase::SeqRead, Phase::RandRead];
    /// All phases in the order tiobench.pl prints them.
    pub const PRINT_ORDER: [Phase; 4] = [Phase::SeqRead, Phase::RandRead, Phase::SeqWrite, Phase::RandWrite];
    /// The section title.
    pub fn title(self) -> &'static str {
        match self {
            Phase::SeqRead => "Sequential Reads",
            Phase::RandRead => "Random Reads",
            Phase::SeqWrite => "Sequential Writes",
            Phase::RandWrite => "Random Writes",
        }
    }
    /// The serde / CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::SeqRead => "seq_read",
            Phase::RandRead => "rand_read",
            Phase::SeqWrite => "seq_write",
            Phase::RandWrite => "rand_write",
        }
    }
    /// Parse a serde name (`seq_read`, …).
    pub fn parse(s: &str) -> Option<Phase> {
        Phase::RUN_ORDER.into_iter().find(|p| p.name() == s)
    }
    pub fn is_write(self) -> bool {
        matches!(self, Phase::SeqWrite | Phase::RandWrite)
    }
    pub fn is_random(self) -> bool {
        matches!(self, Phase::RandRead | Phase::RandWrite)
    }
}

/// One row: one phase of one run (scheduler × size × block × threads). JSON field names
/// are exactly the struct's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TiobenchRecord {
    /// The Identifier column (we put the scheduler spec there).
    pub scheduler: String,
    pub phase: Phase,
    pub threads: u32,
    /// Total file size over all threads, MiB (tiobench.pl's `--size`).
    pub file_size_mb: u64,
    /// Block size, bytes.
    pub block: u32,
    /// MiB per second of phase wall time.
    pub rate_mb_s: f64,
    /// Process CPU time (user + system) over phase wall time, percent.
    pub cpu_pct: f64,
    pub avg_lat_ms: f64,
    pub max_lat_ms: f64,
    /// Percent of requests slower than 2 s / 10 s.
    pub pct_gt_2s: f64,
    pub pct_gt_10s: f64,
    /// Rate divided by CPU% / 100.
    pub cpu_eff: f64,
    /// MiB the device read / wrote during the phase: what the page cache did not absorb
    /// (simulator only; not a tiobench column).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_read_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_write_mib: Option<f64>,
    /// The calls' latency distribution (not a tiobench column): `[upper_us, count]` for
    /// each non-empty bucket of [`LatHist`], in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lat_hist_us: Vec<Bucket>,
}

/// The "Unit information" block as tiobench.pl prints it (leading newline included).
pub const UNIT_INFORMATION: &str = "
Unit information
================
File size = megabytes
Blk Size  = bytes
Rate      = megabytes per second
CPU%      = percentage of CPU used during the test
Latency   = milliseconds
Lat%      = percent of requests that took longer than X seconds
CPU Eff   = Rate divided by CPU% - throughput per cpu load
";

/// The column header (`SEQ_READS_TOP`).
pub const HEADER: &str =
    "                              File  Blk   Num                   Avg      Maximum      Lat%     Lat%    CPU
Identifier                    Size  Size  Thr   Rate  (CPU%)  Latency    Latency      >2s      >10s    Eff
---------------------------- ------ ----- ---  ------ ------ --------- -----------  -------- -------- -----
";

/// The whole report with a column header under each section title.
pub fn table(records: &[TiobenchRecord]) -> String {
    render(records, true)
}

/// Exactly what tiobench.pl 7b59b02 prints: no column headers.
pub fn table_as_printed(records: &[TiobenchRecord]) -> String {
    render(records, false)
}

fn render(records: &[TiobenchRecord], headers: bool) -> String {
    let mut s = String::from(UNIT_INFORMATION);
    // tiobench.pl prints all four sections whatever tiotest ran, so the as-printed table
    // keeps a section without rows (the real runtime's --phases); the default one, which
    // already adds column headers, leaves it out.
    for phase in Phase::PRINT_ORDER {
        if headers && !records.iter().any(|r| r.phase == phase) {
            continue;
        }
        let _ = writeln!(s, "\n{}", phase.title());
        if headers {
            s.push_str(HEADER);
        }
        for r in records.iter().filter(|r| r.phase == phase) {
            s.push_str(&row(r));
            s.push('\n');
        }
    }
    s
}

/// tiobench.pl's picture line cuts the Identifier at 28 columns, so two specs that agree
/// on their first 28 characters print alike. When any identifier is cut, this returns a
/// note (after the table, so the table stays byte for byte the script's) giving each cut
/// identifier in full; otherwise `None`.
pub fn cut_identifiers_note(records: &[TiobenchRecord]) -> Option<String> {
    let mut cut: Vec<&str> = Vec::new();
    for r in records {
        if r.scheduler.chars().count() > 28 && !cut.contains(&r.scheduler.as_str()) {
            cut.push(&r.scheduler);
        }
    }
    if cut.is_empty() {
        return None;
    }
    let mut s =
        String::from("\nIdentifiers cut at 28 columns (as tiobench.pl does), in full, in the order of the rows:\n");
    for c in cut {
        s.push_str(&format!("  {} = {c}\n", c.chars().take(28).collect::<String>()));
    }
    Some(s)
}

/// One table row (no newline).
pub fn row(r: &TiobenchRecord) -> String {
    let mut s = String::with_capacity(110);
    s.push_str(&left(&r.scheduler, 28));
    s.push(' ');
    s.push_str(&centre(&r.file_size_mb.to_string(), 6));
    s.push(' ');
    s.push_str(&centre(&r.block.to_string(), 5));
    s.push(' ');
    s.push_str(&right(&r.threads.to_string(), 3));
    s.push_str("  ");
    s.push_str(&num(r.rate_mb_s, 6, 2));
    s.push(' ');
    s.push_str(&right(&perl_str(r.cpu_pct), 5));
    s.push_str("% ");
    s.push_str(&num(r.avg_lat_ms, 9, 3));
    s.push(' ');
    s.push_str(&num(r.max_lat_ms, 11, 2));
    s.push_str("  ");
    s.push_str(&num(r.pct_gt_2s, 8, 5));
    s.push(' ');
    s.push_str(&num(r.pct_gt_10s, 8, 5));
    s.push(' ');
    s.push_str(&num(r.cpu_eff, 5, 0));
    s
}

fn cut(s: &str, w: usize) -> String {
    s.chars().take(w).collect()
}

/// `@<<<`: left-justified, cut to width.
fn left(s: &str, w: usize) -> String {
    format!("{:<w$}", cut(s, w))
}

/// `@>>>`: right-justified, cut to width (the leftmost characters are kept).
fn right(s: &str, w: usize) -> String {
    format!("{:>w$}", cut(s, w))
}

/// `@|||`: centred, the odd space on the right.
fn centre(s: &str, w: usize) -> String {
    let c = cut(s, w);
    let n = c.chars().count();
    let l = (w - n) / 2;
    format!("{}{c}{}", " ".repeat(l), " ".repeat(w - n - l))
}

/// `@##.##`: `%W.Pf`, or `#` × W when it does not fit.
fn num(v: f64, w: usize, p: usize) -> String {
    let s = format!("{v:w$.p$}");
    if s.len() > w { "#".repeat(w) } else { s }
}

/// Perl's default number-to-string conversion (`%.15g`).
pub fn perl_str(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // %.15g: 15 significant digits; scientific if the exponent is < -4 or >= 15.
    let sci = format!("{v:.14e}");
    let (mant, exp) = sci.split_once('e').expect("scientific format");
    let exp: i32 = exp.parse().expect("exponent");
    if !(-4..15).contains(&exp) {
        let mant = strip_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    let decimals = (14 - exp).max(0) as usize;
    strip_zeros(&format!("{v:.decimals$}"))
}

fn strip_zeros(s: &str) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(phase: Phase, threads: u32, rate: f64, cpu: f64, avg: f64, max: f64, eff: f64) -> TiobenchRecord {
        TiobenchRecord {
            scheduler: "2.5.65-mm4-dl".into(),
            phase,
            threads,
            file_size_mb: 1024,
            block: 4096,
            rate_mb_s: rate,
            cpu_pct: cpu,
            avg_lat_ms: avg,
            max_lat_ms: max,
            pct_gt_2s: 0.0,
            pct_gt_10s: 0.0,
            cpu_eff: eff,
            device_read_mib: None,
            device_write_mib: None,
            lat_hist_us: Vec::new(),
        }
    }

    #[test]
    fn sample_rows_of_the_reference_byte_for_byte() {
        let a = rec(Phase::SeqRead, 1, 48.21, 11.0912, 0.080, 36.49, 435.0);
        assert_eq!(
            row(&a),
            "2.5.65-mm4-dl                 1024  4096    1   48.21 11.09%     0.080       36.49   0.00000  0.00000   435"
        );
        let b = rec(Phase::SeqRead, 4, 11.47, 2.50004, 1.358, 86.84, 459.0);
        assert_eq!(
            row(&b),
            "2.5.65-mm4-dl                 1024  4096    4   11.47 2.500%     1.358       86.84   0.00000  0.00000   459"
        );
    }

    #[test]
    fn cut_identifiers_are_given_in_full_after_the_table() {
        let short = rec(Phase::SeqRead, 1, 48.21, 11.0912, 0.080, 36.49, 435.0);
        assert_eq!(cut_identifiers_note(std::slice::from_ref(&short)), None);
        let mut a = short.clone();
        a.scheduler = "as:nr_requests=8192,antic_expire=10".into();
        let mut b = a.clone();
        b.scheduler = "as:nr_requests=8192,antic_expire=1".into();
        // Same printed identifier, so the note must tell them apart, each once, in row order.
        assert_eq!(row(&a)[..28], row(&b)[..28]);
        let note = cut_identifiers_note(&[short, a.clone(), b.clone(), a]).unwrap();
        assert_eq!(
            note,
            "\nIdentifiers cut at 28 columns (as tiobench.pl does), in full, in the order of the rows:\n  \
             as:nr_requests=8192,antic_ex = as:nr_requests=8192,antic_expire=10\n  \
             as:nr_requests=8192,antic_ex = as:nr_requests=8192,antic_expire=1\n"
        );
    }

    /// Expected strings produced by running the Perl picture of 7b59b02 (perl 5.36).
    #[test]
    fn perl_format_edge_cases() {
        let mut r = TiobenchRecord {
            scheduler: "a-very-long-identifier-that-exceeds-28-chars".into(),
            phase: Phase::SeqRead,
            threads: 1000,
            file_size_mb: 10000,
            block: 65536,
            rate_mb_s: 1234.5,
            cpu_pct: 283.4,
            avg_lat_ms: 123456.7,
            max_lat_ms: 123456789.5,
            pct_gt_2s: 12.5,
            pct_gt_10s: 0.000004,
            cpu_eff: 123456.0,
            device_read_mib: None,
            device_write_mib: None,
            lat_hist_us: Vec::new(),
        };
        assert_eq!(
            row(&r),
            "a-very-long-identifier-that- 10000  65536 100  ###### 283.4% ######### ###########  12.50000  0.00000 #####"
        );
        r = TiobenchRecord {
            scheduler: "x".into(),
            threads: 32,
            file_size_mb: 5,
            block: 512,
            rate_mb_s: 0.004,
            cpu_pct: 0.0499999,
            avg_lat_ms: 0.0005,
            max_lat_ms: 0.005,
            pct_gt_2s: 0.000005,
            pct_gt_10s: 1.0,
            cpu_eff: 0.5,
            device_read_mib: None,
            device_write_mib: None,
            ..r
        };
        assert_eq!(
            row(&r),
            "x                              5     512   32    0.00 0.049%     0.001        0.01   0.00001  1.00000     0"
        );
        r = TiobenchRecord {
            scheduler: "z".into(),
            threads: 16,
            file_size_mb: 64,
            block: 4096,
            rate_mb_s: -1.5,
            cpu_pct: 1e-7,
            avg_lat_ms: 99999.9995,
            max_lat_ms: 2.5,
            pct_gt_2s: 10.0,
            pct_gt_10s: 0.25,
            cpu_eff: 99999.6,
            device_read_mib: None,
            device_write_mib: None,
            ..r
        };
        assert_eq!(
            row(&r),
            "z                              64   4096   16   -1.50 1e-07% #########        2.50  10.00000  0.25000 #####"
        );
        // An exact 2.5 stringifies as "2.5" in Perl.
        assert_eq!(right(&perl_str(2.5), 5), "  2.5");
    }

    #[test]
    fn perl_stringification() {
        for (v, s) in [
            (11.0912, "11.0912"),
            (2.5, "2.5"),
            (100.0, "100"),
            (0.1 + 0.2, "0.3"),
            (1e-7, "1e-07"),
            (0.0001, "0.0001"),
            (1e15, "1e+15"),
            (123456789012345.0, "123456789012345"),
            (-3.25, "-3.25"),
        ] {
            assert_eq!(perl_str(v), s, "{v}");
        }
    }

    #[test]
    fn whole_table_layout() {
        let recs = vec![
            rec(Phase::SeqWrite, 1, 20.0, 10.0, 1.0, 2.0, 200.0),
            rec(Phase::SeqRead, 1, 48.21, 11.0912, 0.080, 36.49, 435.0),
        ];
        let t = table(&recs);
        // Our table: headers, and only the phases that ran.
        let expected = format!(
            "{UNIT_INFORMATION}\nSequential Reads\n{HEADER}{}\n\nSequential Writes\n{HEADER}{}\n",
            row(&recs[1]),
            row(&recs[0])
        );
        assert_eq!(t, expected);
        assert!(t.starts_with("\nUnit information\n================\nFile size = megabytes\n"));
        // What the script printed: no headers, and all four sections whatever ran.
        let printed = format!(
            "{UNIT_INFORMATION}\nSequential Reads\n{}\n\nRandom Reads\n\nSequential Writes\n{}\n\nRandom Writes\n",
            row(&recs[1]),
            row(&recs[0])
        );
        assert_eq!(table_as_printed(&recs), printed);
        // The header's dash line lines up with the row's fields.
        let dashes = HEADER.lines().nth(2).unwrap();
        assert_eq!(dashes.len(), row(&recs[0]).len());
    }

    #[test]
    fn json_field_names() {
        let v = serde_json::to_value(rec(Phase::RandWrite, 4, 1.0, 1.0, 1.0, 1.0, 1.0)).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "avg_lat_ms",
                "block",
                "cpu_eff",
                "cpu_pct",
                "file_size_mb",
                "max_lat_ms",
                "pct_gt_10s",
                "pct_gt_2s",
                "phase",
                "rate_mb_s",
                "scheduler",
                "threads"
            ]
        );
        assert_eq!(v["phase"], "rand_write");
        for p in Phase::RUN_ORDER {
            assert_eq!(Phase::parse(p.name()), Some(p));
        }
    }
}
