//! The statistics of an A/B study (`compare`): means, sample deviations, the change in
//! percent and the seed report's "within run-to-run variation" rule.

/// Arithmetic mean (0 for no samples).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() { 0.0 } else { xs.iter().sum::<f64>() / xs.len() as f64 }
}

/// Sample standard deviation (n − 1 in the denominator; 0 for fewer than two samples).
pub fn sample_sd(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

/// Coefficient of variation: sample standard deviation in percent of the mean (0 when the
/// mean is 0).
pub fn cv_pct(xs: &[f64]) -> f64 {
    let m = mean(xs);
    if m == 0.0 { 0.0 } else { 100.0 * sample_sd(xs) / m.abs() }
}

/// Change from A to B in percent of A (0 when both are 0; infinite when only A is 0).
pub fn change_pct(a_mean: f64, b_mean: f64) -> f64 {
    if a_mean == 0.0 {
        if b_mean == 0.0 { 0.0 } else { f64::INFINITY.copysign(b_mean) }
    } else {
        100.0 * (b_mean - a_mean) / a_mean.abs()
    }
}

/// A change smaller than this (in %: one part in a million) is "no change": in a
/// deterministic simulator that is a nanosecond moved in a run of seconds, not an effect
/// of B (the seed-2007 figures print fewer significant digits than that).
pub const NO_CHANGE_PCT: f64 = 1e-4;

/// The seed report's test: a change is within run-to-run variation when it is smaller
/// than twice the larger of the two deviations.
pub fn within_variation(change_pct: f64, a_cv_pct: f64, b_cv_pct: f64) -> bool {
    change_pct.abs() < 2.0 * a_cv_pct.max(b_cv_pct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_deviation() {
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&xs), 5.0);
        // Σ(x−5)² = 32; sample variance 32/7.
        assert!((sample_sd(&xs) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert!((cv_pct(&xs) - 100.0 * (32.0f64 / 7.0).sqrt() / 5.0).abs() < 1e-9);
        assert_eq!(sample_sd(&[3.0]), 0.0);
        assert_eq!(mean(&[]), 0.0);
        assert_eq!(cv_pct(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn change_in_percent_of_a() {
        assert_eq!(change_pct(100.0, 90.0), -10.0);
        assert_eq!(change_pct(50.0, 75.0), 50.0);
        assert_eq!(change_pct(0.0, 0.0), 0.0);
        assert!(change_pct(0.0, 1.0).is_infinite());
    }

    #[test]
    fn within_variation_is_twice_the_larger_cv() {
        assert!(within_variation(-3.9, 2.0, 1.0));
        assert!(!within_variation(-4.0, 2.0, 1.0)); // strict: |change| < 2 × max
        assert!(within_variation(5.0, 0.5, 3.0));
        assert!(!within_variation(0.1, 0.0, 0.0));
    }
}
