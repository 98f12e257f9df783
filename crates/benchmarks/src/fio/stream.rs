//! A job's I/O stream, sans-IO: which file, direction, size and offset each I/O of a
//! [`Job`] has, by fio's rules (`io_u.c` `get_next_offset`, `get_next_buflen`,
//! `get_rw_ddir`; `file_service_type=roundrobin`, fio's default). Both worlds' executors
//! take their I/Os from it; they decide only when each one goes.
//!
//! - **Direction**: from `rw`; mixed patterns draw each I/O's with `rwmixread`.
//! - **Size**: `bssplit` (a weighted draw), else `bsrange` (a multiple of its low end up to
//!   its high end), else `bs`, per direction.
//! - **File**: round robin over the job's files.
//! - **Offset**: sequential patterns walk each file's region from its start, adding
//!   `rw=…:N`'s skip (negative: backwards) and wrapping at its end; random ones pick an
//!   aligned block (`blockalign`, default the I/O's size) — every block once per pass, in a
//!   seeded order (fio's random map), or with `norandommap` uniformly with replacement —
//!   and `rw=rand…:N` continues N I/Os sequentially from each.
//! - **Distributions** (`random_distribution`, `lib/zipf.c`, `lib/gauss.c`): `zipf:θ` and
//!   `pareto:h` draw a rank from the distribution over the file's blocks (counted in the
//!   job's smallest block size, as `__init_rand_distribution` does; zipf's ζ(n) summed over
//!   at most 10⁷ terms, fio's `ZIPF_MAX_GEN`), `normal:dev` the mean of 12 uniform draws
//!   with a deviation of `dev` % of the range; then, as in fio, the rank is scrambled by
//!   multiplying with the 64-bit golden ratio (`__hash_u64`) and shifted by a random offset,
//!   modulo the number of blocks — so hot blocks are scattered over the file. The uniform
//!   draws come from this stream's generator, not fio's Tausworthe, so the blocks differ
//!   from fio's while the distribution is its.
//! - **Zones** (`random_distribution=zoned:` / `zoned_abs:`, `zone-dist.c`, `io_u.c`
//!   `__get_next_rand_offset_zoned`): a draw of 1 to 100 picks the zone that owns that
//!   access percentile, then a uniform block inside the zone, whose bounds are a percentage
//!   of the file's blocks (or bytes from its start, in units of the alignment).
//! - **Seeds**: fio's `randrepeat=1` (its default) draws the same stream on every run, so
//!   the stream's seed is then fixed; `randrepeat=0` takes the run's seed, `randseed=N` N;
//!   each job thread (clone) has its own stream.

use super::job::{Distribution, Job, Pattern, Strided};
use iosched_core::Rng;

/// fio's `ZIPF_MAX_GEN`: ζ(n) is summed over at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// `GOLDEN_RATIO_64` of fio's `hash.h` (`__hash_u64`).
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// `GAUSS_ITERS`.
const GAUSS_ITERS: u64 = 12;

/// A file's non-uniform block generator (`struct zipf_state`, `struct gauss_state`).
#[derive(Clone, Debug)]
struct Skewed {
    nranges: u64,
    rand_off: u64,
    kind: SkewKind,
}

#[derive(Clone, Debug)]
enum SkewKind {
    Zipf { theta: f64, zeta2: f64, zetan: f64 },
    Pareto { pow: f64 },
    Gauss { stddev: u64 },
}

/// A uniform draw in [0, 1] (`__rand() / FRAND32_MAX`).
fn uniform(rng: &mut Rng) -> f64 {
    rng.below(1 << 32) as f64 / u32::MAX as f64
}

impl Skewed {
    /// `zipf_init`, `pareto_init`, `gauss_init` (no `random_center`: a random offset).
    fn new(d: Distribution, nranges: u64, rng: &mut Rng) -> Option<Skewed> {
        let nranges = nranges.max(1);
        let rand_off = rng.below(1 << 32);
        let kind = match d {
            Distribution::Random | Distribution::Zoned { .. } => return None,
            Distribution::Zipf { theta } => {
                let zetan = (0..nranges.min(ZIPF_MAX_GEN)).map(|i| (1.0 / (i + 1) as f64).powf(theta)).sum();
                SkewKind::Zipf { theta, zeta2: 1.0 + 0.5f64.powf(theta), zetan }
            }
            Distribution::Pareto { h } => SkewKind::Pareto { pow: h.ln() / (1.0 - h).ln() },
            Distribution::Normal { dev } => {
                let sd = if dev != 0.0 { ((nranges as f64 * dev) / 100.0).ceil() as u64 } else { 0 };
                SkewKind::Gauss { stddev: sd.min(nranges / 2) }
            }
        };
        Some(Skewed { nranges, rand_off, kind })
    }

    /// `zipf_next`, `pareto_next`, `gauss_next`: a block index.
    fn next(&self, rng: &mut Rng) -> u64 {
        let n = self.nranges;
        let rank = match self.kind {
            SkewKind::Zipf { theta, zeta2, zetan } => {
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u = uniform(rng);
                let z = u * zetan;
                let val = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                val - 1
            }
            SkewKind::Pareto { pow } => ((n - 1) as f64 * uniform(rng).powf(pow)) as u64,
            SkewKind::Gauss { stddev } => {
                let sum: u64 = (0..GAUSS_ITERS).map(|_| rng.below(1 << 32) % (n + 1)).sum();
                let mut sum = sum.div_ceil(GAUSS_ITERS);
                if stddev > 0 {
                    // `gauss_dev`: a deviation in [-stddev/2, stddev/2), halved until it fits.
                    let mut dev = (stddev as f64 * (rng.below(1 << 32) as f64 / (u32::MAX as f64 + 1.0))) as i64
                        - (stddev / 2) as i64;
                    while dev + sum as i64 >= n as i64 {
                        dev /= 2;
                    }
                    sum = (sum as i64 + dev).max(0) as u64;
                }
                sum
            }
        };
        rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(self.rand_off) % n
    }
}

/// Where a job does I/O in one of its files: `len` bytes from `start`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

/// One I/O: its direction, the index of its file among the job's, and its place.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Io {
    pub write: bool,
    pub file: usize,
    pub offset: u64,
    pub len: u64,
}

#[derive(Clone, Debug)]
struct Cursor {
    seq: i64,
    map: Vec<u64>,
    map_pos: usize,
    run_left: u64,
    run_at: u64,
}

/// The I/O stream of one job thread.
#[derive(Clone, Debug)]
pub struct JobStream {
    job: Job,
    regions: Vec<Region>,
    cursors: Vec<Cursor>,
    next_file: usize,
    rng: Rng,
    /// Each file's generator under a non-uniform `random_distribution`.
    skewed: Vec<Option<Skewed>>,
    /// `random_distribution=zoned…`, per direction: for each of the 100 access percentiles,
    /// its zone's [start, end), in percent of the file or in bytes (`zone_state_index`).
    zoned: Option<(bool, [ZoneIndex; 2])>,
    /// `zonemode=strided`: the current zone's start in the (one) file's region, and the
    /// bytes done in it (fio's `file_offset` as it moves, and `td->zone_bytes`).
    strided: Option<(Strided, u64, u64)>,
}

/// One direction's zone per access percentile: [start, end).
type ZoneIndex = Vec<(u64, u64)>;

/// `__td_zone_gen_index`: the zone of each access percentile, as [start, end).
fn zone_index(zones: &[(u8, u64)]) -> ZoneIndex {
    let mut idx = Vec::with_capacity(100);
    let mut start = 0;
    for &(access, size) in zones {
        idx.extend(std::iter::repeat_n((start, start + size), access as usize));
        start += size;
    }
    idx
}

/// The seed of a job's streams: fixed with `randrepeat=1` (fio's default), the run's with
/// `randrepeat=0`, or `randseed`.
pub fn seed(job: &Job, run_seed: u64) -> u64 {
    match (job.randseed, job.randrepeat) {
        (Some(s), _) => s,
        (None, true) => 0x89,
        (None, false) => run_seed,
    }
}

impl JobStream {
    /// Job thread `thread_number` (1-based over all jobs and clones, as fio numbers them)
    /// of `job`, over `regions`, in a run seeded `run_seed`.
    pub fn new(job: &Job, regions: Vec<Region>, thread_number: u64, run_seed: u64) -> JobStream {
        assert!(!regions.is_empty(), "a job has at least one file");
        let cursor = Cursor { seq: 0, map: Vec::new(), map_pos: 0, run_left: 0, run_at: 0 };
        let mut rng = Rng::derive(seed(job, run_seed), thread_number);
        // `__init_rand_distribution`: ranges of the job's smallest block size.
        let range = job.bs[0].min(job.bs[1]).max(1);
        let skewed =
            regions.iter().map(|r| Skewed::new(job.random_distribution, r.len.div_ceil(range), &mut rng)).collect();
        let zoned = match job.random_distribution {
            Distribution::Zoned { absolute } => {
                Some((absolute, [zone_index(&job.zones[0]), zone_index(&job.zones[1])]))
            }
            _ => None,
        };
        let strided = job.strided.filter(|_| regions.len() == 1).map(|z| (z, 0, 0));
        JobStream {
            job: job.clone(),
            cursors: vec![cursor; regions.len()],
            regions,
            next_file: 0,
            rng,
            skewed,
            zoned,
            strided,
        }
    }

    /// The job's regions.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The next I/O.
    pub fn next_io(&mut self) -> Io {
        let write = match self.job.rw {
            Pattern::Read | Pattern::RandRead | Pattern::Trim | Pattern::RandTrim => false,
            Pattern::Write | Pattern::RandWrite => true,
            _ => self.rng.below(100) >= self.job.rwmixread as u64,
        };
        let d = write as usize;
        let len = self.block_size(d);
        let fi = self.next_file;
        self.next_file = (self.next_file + 1) % self.regions.len();
        let f = self.regions[fi];
        let align = self.job.blockalign.map_or(len, |a| a[d]).max(1);
        let postfix = self.job.rw_postfix;
        let c = &mut self.cursors[fi];
        // `setup_strided_zone_mode`: after `zonesize` bytes, the next zone starts
        // `zonerange + zoneskip` further on, wrapping to the start past the file's end; a
        // sequential position past the zone's range goes back to its start, and every
        // `zonerange` bytes the position and the random map start over (`fio_file_reset`).
        let (base, span) = match &mut self.strided {
            Some((z, off, done)) => {
                if *done >= z.size {
                    *done = 0;
                    *off += z.range + z.skip;
                    if *off >= f.len {
                        *off = 0;
                    }
                    c.seq = *off as i64;
                }
                if c.seq as u64 >= *off + z.range {
                    c.seq = *off as i64;
                }
                if (*done).is_multiple_of(z.range) {
                    c.seq = *off as i64;
                    c.map.clear();
                    c.map_pos = 0;
                }
                *done += len;
                (*off, z.range.min(f.len - *off))
            }
            None => (0, f.len),
        };
        let blocks = (span / align).max(1);
        let rel = if self.job.rw.is_random() {
            if c.run_left > 0 {
                c.run_left -= 1;
                c.run_at += len;
                c.run_at
            } else {
                let zone = self.zoned.as_ref().and_then(|(abs, idx)| {
                    // `__get_next_rand_offset_zoned{,_abs}`: a percentile picks the zone, then
                    // a uniform block inside it (fio turns the random map off here).
                    let v = self.rng.below(100) as usize;
                    idx[d].get(v).map(|&(lo, hi)| {
                        if *abs {
                            (lo / align, hi / align)
                        } else {
                            let start = lo * blocks / 100;
                            (start, start + blocks * (hi - lo) / 100)
                        }
                    })
                });
                let b = if let Some((lo, hi)) = zone {
                    (lo + self.rng.below((hi - lo).max(1))).min(blocks - 1)
                } else if let Some(g) = &self.skewed[fi] {
                    // A block of the job's smallest size, placed at this I/O's alignment.
                    let range = self.job.bs[0].min(self.job.bs[1]).max(1);
                    (g.next(&mut self.rng) * range / align).min(blocks - 1)
                } else if self.job.norandommap {
                    self.rng.below(blocks)
                } else {
                    if c.map_pos >= c.map.len() {
                        // A new pass: every aligned block once, in a seeded order.
                        c.map = (0..blocks).collect();
                        for i in (1..c.map.len()).rev() {
                            let j = self.rng.below(i as u64 + 1) as usize;
                            c.map.swap(i, j);
                        }
                        c.map_pos = 0;
                    }
                    c.map_pos += 1;
                    c.map[c.map_pos - 1]
                };
                c.run_left = postfix.map_or(0, |n| n.max(1) as u64 - 1);
                c.run_at = base + b * align;
                c.run_at
            }
        } else {
            let at = c.seq.rem_euclid(f.len.max(1) as i64) as u64;
            c.seq += len as i64 + postfix.unwrap_or(0);
            at
        };
        // Keep the I/O inside the region (fio wraps to the start).
        let rel = if rel + len > f.len { 0 } else { rel };
        Io { write, file: fi, offset: f.start + rel, len }
    }

    fn block_size(&mut self, d: usize) -> u64 {
        if let Some(split) = &self.job.bssplit {
            let r = self.rng.below(100) as u32;
            let mut acc = 0u32;
            for &(bs, p) in &split[d] {
                acc += p as u32;
                if r < acc {
                    return bs;
                }
            }
            return split[d].last().map_or(self.job.bs[d], |e| e.0);
        }
        if let Some(range) = &self.job.bsrange {
            let (lo, hi) = range[d];
            let steps = (hi - lo) / lo + 1;
            return (lo + self.rng.below(steps) * lo).min(hi);
        }
        self.job.bs[d]
    }
}

#[cfg(test)]
mod tests {
    use super::super::job::build;
    use super::super::jobfile::parse_args;
    use super::*;

    fn job(args: &[&str]) -> Job {
        let a: Vec<String> = std::iter::once("--name=j").chain(args.iter().copied()).map(String::from).collect();
        build(&parse_args(&a, 1).unwrap()).unwrap().jobs.remove(0)
    }

    /// `zonemode=strided`: `zonesize` bytes from each zone, the next zone `zonerange +
    /// zoneskip` on, wrapping at the file's end; random offsets stay in the zone's range.
    #[test]
    fn strided_zones_take_zonesize_then_skip() {
        let k = 1024;
        let j = job(&["--rw=read", "--bs=64k", "--zonesize=128k", "--zoneskip=256k"]);
        let mut s = JobStream::new(&j, vec![Region { start: 0, len: 1024 * k }], 1, 1);
        let got: Vec<u64> = (0..8).map(|_| s.next_io().offset / k).collect();
        assert_eq!(got, [0, 64, 384, 448, 768, 832, 0, 64], "zones at 0, 384k, 768k, then the start again");
        let j = job(&["--rw=randread", "--bs=4k", "--zonemode=strided", "--zonesize=64k", "--zonerange=32k"]);
        let mut s = JobStream::new(&j, vec![Region { start: 0, len: 1024 * k }], 1, 1);
        let first: Vec<u64> = (0..16).map(|_| s.next_io().offset).collect();
        assert!(first.iter().all(|&o| o < 32 * k), "the first zone's 64 KiB are drawn from its 32 KiB range");
        let next = s.next_io().offset;
        assert!((32 * k..64 * k).contains(&next), "then the next zone: {next}");
    }

    #[test]
    fn the_random_map_touches_every_block_once_per_pass() {
        let j = job(&["--rw=randread", "--bs=4k"]);
        let mut s = JobStream::new(&j, vec![Region { start: 8192, len: 64 * 4096 }], 1, 1);
        let mut seen: Vec<u64> = (0..64).map(|_| s.next_io().offset).collect();
        seen.sort();
        assert_eq!(seen, (0..64).map(|b| 8192 + b * 4096).collect::<Vec<_>>());
        // norandommap: with replacement, so some block repeats in 64 draws.
        let j = job(&["--rw=randread", "--bs=4k", "--norandommap"]);
        let mut s = JobStream::new(&j, vec![Region { start: 0, len: 64 * 4096 }], 1, 1);
        let mut v: Vec<u64> = (0..64).map(|_| s.next_io().offset).collect();
        v.sort();
        v.dedup();
        assert!(v.len() < 64);
    }

    #[test]
    fn sequential_skips_wraps_and_walks_files_round_robin() {
        let j = job(&["--rw=read:4k", "--bs=4k"]);
        let r = Region { start: 0, len: 32 << 10 };
        let mut s = JobStream::new(&j, vec![r, r], 1, 1);
        let v: Vec<(usize, u64)> = (0..6).map(|_| s.next_io()).map(|io| (io.file, io.offset)).collect();
        assert_eq!(v, [(0, 0), (1, 0), (0, 8192), (1, 8192), (0, 16384), (1, 16384)]);
        let j = job(&["--rw=read:-8k", "--bs=4k"]);
        let mut s = JobStream::new(&j, vec![Region { start: 0, len: 16 << 10 }], 1, 1);
        let v: Vec<u64> = (0..3).map(|_| s.next_io().offset).collect();
        assert_eq!(v, [0, 12288, 8192], "backwards by 4k each step, wrapping");
    }

    /// Block hit counts under each distribution: zipf and pareto concentrate the I/Os on few
    /// blocks (scattered by the hash), normal on the middle of its rank range, uniform on none.
    #[test]
    fn skewed_distributions_concentrate_the_io() {
        let top_share = |args: &[&str]| {
            let j = job(args);
            let mut s = JobStream::new(&j, vec![Region { start: 0, len: 1000 * 4096 }], 1, 1);
            let mut hits = vec![0u64; 1000];
            for _ in 0..100_000 {
                let io = s.next_io();
                assert!(io.offset + io.len <= 1000 * 4096);
                hits[(io.offset / 4096) as usize] += 1;
            }
            hits.sort_unstable_by(|a, b| b.cmp(a));
            hits[..100].iter().sum::<u64>() as f64 / 100_000.0
        };
        let uniform = top_share(&["--rw=randread", "--norandommap"]);
        let zipf = top_share(&["--rw=randread", "--random_distribution=zipf:1.2"]);
        let pareto = top_share(&["--rw=randread", "--random_distribution=pareto:0.2"]);
        let normal = top_share(&["--rw=randread", "--random_distribution=normal:5"]);
        assert!(uniform < 0.13, "uniform: the top 10 % of blocks take {uniform}");
        assert!(zipf > 0.6, "zipf:1.2: {zipf}");
        assert!(pareto > 0.6, "pareto:0.2 (80/20 or steeper): {pareto}");
        assert!(normal > 0.3, "normal:5: {normal}");
    }

    /// `zoned:50/5:30/15:20/` (fio's rand-zones.fio): half the I/Os in the first 5 % of the
    /// file, 30 % in the next 15 %, the rest in the remaining 80 % (the size left over);
    /// `zoned_abs` the same in bytes; per direction after a comma.
    #[test]
    fn zoned_distributions_put_each_share_in_its_zone() {
        let shares = |args: &[&str], write: bool| {
            let j = job(args);
            let mut s = JobStream::new(&j, vec![Region { start: 0, len: 1000 * 4096 }], 1, 1);
            let mut n = [0u64; 3];
            let mut total = 0;
            while total < 100_000 {
                let io = s.next_io();
                if io.write != write {
                    continue;
                }
                total += 1;
                let b = io.offset / 4096;
                n[if b < 50 {
                    0
                } else if b < 200 {
                    1
                } else {
                    2
                }] += 1;
            }
            n.map(|c| (c as f64 / 1000.0).round() as u64)
        };
        let z = shares(&["--rw=randread", "--random_distribution=zoned:50/5:30/15:20/"], false);
        assert!(z.iter().zip([50, 30, 20]).all(|(&a, b)| a.abs_diff(b) <= 1), "{z:?}");
        let z = shares(&["--rw=randread", "--random_distribution=zoned_abs:50/200k:30/600k:20/3200k"], false);
        assert!(z.iter().zip([50, 30, 20]).all(|(&a, b)| a.abs_diff(b) <= 1), "{z:?}");
        let mixed = ["--rw=randrw", "--random_distribution=zoned:100/5:0/95,20/5:80/95"];
        assert_eq!(shares(&mixed, false), [100, 0, 0]);
        let w = shares(&mixed, true);
        assert!(w[0].abs_diff(20) <= 1, "{w:?}");
        let bad = |v: &str| {
            let a = vec!["--name=j".to_string(), "--rw=randread".into(), format!("--random_distribution={v}")];
            build(&parse_args(&a, 1).unwrap()).unwrap_err().to_string()
        };
        assert!(bad("zoned:50/5:30/15").contains("add up to 80, expected 100"), "{}", bad("zoned:50/5:30/15"));
        assert!(bad("zoned:50/5:50/150").contains("size percentage"));
        assert!(bad("zoned:100/").contains("a single zone needs its size"));
        assert!(bad("zoned_abs:50/1m:50").contains("a size in bytes"));
    }

    #[test]
    fn seeds_follow_randrepeat() {
        let fixed = job(&["--rw=randread"]);
        let a = |seed| {
            (0..8)
                .map({
                    let mut s = JobStream::new(&fixed, vec![Region { start: 0, len: 1 << 20 }], 1, seed);
                    move |_| s.next_io().offset
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(a(1), a(2), "randrepeat=1: the same stream at every run seed");
        let free = job(&["--rw=randread", "--randrepeat=0"]);
        let b = |seed| {
            (0..8)
                .map({
                    let mut s = JobStream::new(&free, vec![Region { start: 0, len: 1 << 20 }], 1, seed);
                    move |_| s.next_io().offset
                })
                .collect::<Vec<_>>()
        };
        assert_ne!(b(1), b(2));
    }
}
