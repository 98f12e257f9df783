//! A synthetic 2.4.19 kernel source tree (reference `benchmarks.md` §6.1): the plan of
//! directories and files that both the simulated and the real read-many create.
//!
//! 11,219 files totalling 141.6 MB in 596 directories. File sizes follow the measured
//! percentiles (p1 109 B … p50 4,544 B … max 1.77 MB), interpolated log-linearly and taken
//! at evenly spaced quantiles, so the distribution is exact rather than sampled; the
//! sizes above the median are then scaled by one common factor so the total is
//! 141,602,081 bytes (the interpolation alone overshoots by about 10 %). Files are spread
//! over the measured top-level directories (drivers 3,480 files, include 3,330, arch
//! 2,756, …) and, inside them, over subdirectories of about 19 files each; which file gets
//! which size is a seeded shuffle. Directory and file order is creation order, which is
//! also ext2's readdir order, so `find` visits them as `tar x` created them.

use iosched_core::Rng;

/// Files, bytes and directories of the measured tree.
pub const FILES: usize = 11_219;
pub const BYTES: u64 = 141_602_081;
pub const DIRS_WITH_FILES: usize = 596;

/// (percentile, bytes): the measured size distribution; 0 and 100 are the extremes.
const PERCENTILES: [(f64, f64); 12] = [
    (0.0, 20.0),
    (1.0, 109.0),
    (5.0, 363.0),
    (10.0, 606.0),
    (25.0, 1_584.0),
    (50.0, 4_544.0),
    (75.0, 12_352.0),
    (90.0, 28_509.0),
    (95.0, 47_273.0),
    (99.0, 111_811.0),
    (99.9, 489_587.0),
    (100.0, 1_766_692.0),
];

/// Top-level directories and their file counts (the remaining 128 files are in the small
/// directories: kernel, mm, lib, init, ipc, scripts).
const TOP: [(&str, usize); 12] = [
    ("Documentation", 455),
    ("arch", 2_756),
    ("drivers", 3_480),
    ("fs", 608),
    ("include", 3_330),
    ("init", 8),
    ("ipc", 8),
    ("kernel", 40),
    ("lib", 20),
    ("mm", 40),
    ("net", 462),
    ("scripts", 12),
];

/// The tree as a plan: directories (parent index, name) and files (directory, name,
/// size), both in creation order.
#[derive(Clone, Debug)]
pub struct KernelTree {
    pub dirs: Vec<(Option<usize>, String)>,
    pub files: Vec<(usize, String, u64)>,
}

fn quantile(p: f64) -> f64 {
    for w in PERCENTILES.windows(2) {
        let ((a, x), (b, y)) = (w[0], w[1]);
        if p <= b {
            let t = (p - a) / (b - a);
            return (x.ln() + t * (y.ln() - x.ln())).exp();
        }
    }
    PERCENTILES[PERCENTILES.len() - 1].1
}

/// `n` sizes following the measured distribution, ascending, totalling exactly `total`
/// (the full tree: [`FILES`], [`BYTES`]).
pub fn sizes(n: usize, total: u64) -> Vec<u64> {
    let raw: Vec<f64> = (0..n).map(|i| quantile(100.0 * (i as f64 + 0.5) / n as f64)).collect();
    let half = n / 2;
    let low: f64 = raw[..half].iter().map(|s| s.round()).sum();
    let high: f64 = raw[half..].iter().sum();
    let f = (total as f64 - low) / high;
    let mut out: Vec<u64> = raw[..half].iter().map(|s| s.round().max(1.0) as u64).collect();
    out.extend(raw[half..].iter().map(|s| (s * f).round().max(1.0) as u64));
    // Put the rounding remainder on the largest file.
    let sum: u64 = out.iter().sum();
    let last = out.last_mut().unwrap();
    *last = (*last as i64 + (total as i64 - sum as i64)) as u64;
    out
}

impl KernelTree {
    pub fn synthesize(seed: u64) -> KernelTree {
        Self::scaled(seed, 1.0)
    }

    /// A tree with `scale` × the files and bytes in each top-level directory (the same
    /// shape; `--quick` runs use a quarter tree).
    pub fn scaled(seed: u64, scale: f64) -> KernelTree {
        assert!(scale > 0.0 && scale <= 1.0, "scale {scale} outside (0, 1]");
        let counts: Vec<(&str, usize)> =
            TOP.iter().map(|&(n, c)| (n, ((c as f64 * scale).round() as usize).max(1))).collect();
        let nfiles: usize = counts.iter().map(|c| c.1).sum();
        let total = (BYTES as f64 * nfiles as f64 / FILES as f64).round() as u64;
        let mut rng = Rng::derive(seed, 0x7ee);
        let mut sizes = sizes(nfiles, total);
        // Seeded Fisher–Yates shuffle: which file gets which size.
        for i in (1..sizes.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            sizes.swap(i, j);
        }
        let mut dirs: Vec<(Option<usize>, String)> = vec![(None, "kernel-tree".to_string())];
        let mut files = Vec::with_capacity(nfiles);
        let mut next_size = sizes.into_iter();
        // Small top-level directories hold their files directly; the others spread them
        // over subdirectories so that 596 directories hold files in all.
        let per_sub = FILES as f64 / DIRS_WITH_FILES as f64;
        for (top, count) in counts {
            let t = dirs.len();
            dirs.push((Some(0), top.to_string()));
            let subs = if count < 60 { 0 } else { ((count as f64 / per_sub).round() as usize).max(1) };
            let mut place = |dir: usize, k: usize, files: &mut Vec<(usize, String, u64)>| {
                for _ in 0..k {
                    let ext = if files.len().is_multiple_of(2) { "c" } else { "h" };
                    let name = format!("f{:05}.{ext}", files.len());
                    files.push((dir, name, next_size.next().expect("sizes for every file")));
                }
            };
            if subs == 0 {
                place(t, count, &mut files);
                continue;
            }
            // Uneven subdirectory sizes (real ones range from 1 to a few hundred files):
            // split `count` by seeded weights.
            let weights: Vec<u64> = (0..subs).map(|_| 1 + rng.below(37)).collect();
            let wsum: u64 = weights.iter().sum();
            let mut left = count;
            for (k, w) in weights.iter().enumerate() {
                let n = if k + 1 == subs { left } else { ((count as u64 * w / wsum) as usize).min(left) };
                left -= n;
                let d = dirs.len();
                dirs.push((Some(t), format!("s{k:03}")));
                place(d, n, &mut files);
            }
        }
        debug_assert_eq!(files.len(), nfiles);
        KernelTree { dirs, files }
    }

    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.2).sum()
    }

    /// Directories that hold files.
    pub fn dirs_with_files(&self) -> usize {
        let mut seen = vec![false; self.dirs.len()];
        for f in &self.files {
            seen[f.0] = true;
        }
        seen.iter().filter(|&&s| s).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_measured_tree() {
        let t = KernelTree::synthesize(1);
        assert_eq!(t.files.len(), FILES);
        assert_eq!(t.total_bytes(), BYTES);
        let d = t.dirs_with_files();
        assert!((560..=640).contains(&d), "{d} directories with files");
        let mut s: Vec<u64> = t.files.iter().map(|f| f.2).collect();
        s.sort();
        let median = s[s.len() / 2];
        assert!((4_000..=5_000).contains(&median), "median {median}");
        let under_4k = s.iter().filter(|&&x| x < 4096).count() as f64 / s.len() as f64;
        assert!((0.42..0.52).contains(&under_4k), "{under_4k} under 4 KiB (measured 47 %)");
        let big: u64 = s.iter().filter(|&&x| x > 16 << 10).sum();
        let frac = big as f64 / BYTES as f64;
        assert!((0.62..0.78).contains(&frac), "{frac} of bytes in files over 16 KiB (measured 70 %)");
    }

    #[test]
    fn same_seed_same_tree() {
        let a = KernelTree::synthesize(7);
        let b = KernelTree::synthesize(7);
        assert_eq!(a.files, b.files);
        let c = KernelTree::synthesize(8);
        assert_ne!(a.files, c.files);
    }
}
