//! A latency histogram: every timed call counted in a log-linear bucket, so that a run's
//! latency distribution (its CDF, its percentiles) can be shown without keeping each
//! sample. Both worlds' benchmarks fill it the same way.
//!
//! Buckets are in microseconds: one per value below 8 µs, then 8 per power of two (each
//! bucket spans 1/8 of its octave, so a value is known within 12.5 %), up to 2^40 µs
//! (12 days); anything longer counts in the last bucket.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two.
const SUB: u32 = 8;
const SUB_BITS: u32 = 3;
/// Octaves above the linear part: 2^3 .. 2^40 µs.
const OCTAVES: u32 = 38;
pub const BUCKETS: usize = (SUB + OCTAVES * SUB) as usize;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatHist {
    counts: Vec<u64>,
}

impl Default for LatHist {
    fn default() -> Self {
        LatHist { counts: vec![0; BUCKETS] }
    }
}

/// The bucket of a latency of `us` microseconds.
fn index(us: u64) -> usize {
    if us < SUB as u64 {
        return us as usize;
    }
    let e = 63 - us.leading_zeros(); // ≥ SUB_BITS
    let sub = ((us >> (e - SUB_BITS)) as u32) & (SUB - 1);
    (((e - SUB_BITS + 1) * SUB + sub) as usize).min(BUCKETS - 1)
}

/// The largest latency (µs) bucket `i` holds.
pub fn upper_us(i: usize) -> u64 {
    let i = i as u32;
    if i < SUB {
        return i as u64;
    }
    let e = i / SUB - 1 + SUB_BITS;
    let sub = (i % SUB) as u64;
    ((SUB as u64 + sub + 1) << (e - SUB_BITS)) - 1
}

impl LatHist {
    /// Count one call of `ms` milliseconds.
    pub fn add_ms(&mut self, ms: f64) {
        let us = (ms * 1000.0).round().max(0.0) as u64;
        self.counts[index(us)] += 1;
    }

    pub fn merge(&mut self, o: &LatHist) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The non-empty buckets, in order: (largest latency the bucket holds in µs, count).
    pub fn buckets(&self) -> Vec<Bucket> {
        self.counts.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| Bucket(upper_us(i), *c)).collect()
    }
}

/// One non-empty bucket as the JSON shows it: `[upper_us, count]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket(pub u64, pub u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_that_holds_it() {
        for us in [0u64, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 123_456, 10_000_000, 1 << 39] {
            let i = index(us);
            assert!(us <= upper_us(i), "{us} in {i} (upper {})", upper_us(i));
            assert!(i == 0 || us > upper_us(i - 1), "{us} belongs lower than {i}");
        }
    }

    #[test]
    fn a_bucket_spans_at_most_an_eighth_of_its_value() {
        for i in 9..BUCKETS {
            let (lo, hi) = (upper_us(i - 1) + 1, upper_us(i));
            assert!((hi - lo) as f64 <= lo as f64 / 8.0 + 1.0, "bucket {i}: {lo}..={hi}");
        }
    }

    #[test]
    fn counts_and_merges() {
        let mut a = LatHist::default();
        a.add_ms(0.004);
        a.add_ms(2.5);
        let mut b = LatHist::default();
        b.add_ms(2.5);
        a.merge(&b);
        assert_eq!(a.total(), 3);
        let v = a.buckets();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], Bucket(4, 1));
        assert_eq!(v[1].1, 2);
        assert!(v[1].0 >= 2500);
    }
}
