//! Seek-time curves (DiskSim `dm_mech_g1` seek types) and the C¹ √→linear curve fitted
//! from datasheet figures (disk.md §4.1(c)).
//!
//! All curves return nanoseconds for a seek of `d` cylinders; `d = 0` costs nothing (a
//! head switch on the same cylinder is charged by the caller, as DiskSim does).

/// A seek curve.
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
    /// DiskSim `extracted`: a measured table of (distance, ns), ascending, linear
    /// interpolation between points and linear extrapolation past the last one.
    Table(Vec<(u32, u64)>),
    /// DiskSim `hpl` (Ruemmler–Wilkes): `v6` for one cylinder (unless `None`),
    /// `v2 + v3·√d` below `v1` cylinders, `v4 + v5·d` from `v1` on. Times in ns.
    Hpl { v1: u32, v2: f64, v3: f64, v4: f64, v5: f64, v6: Option<f64> },
    /// DiskSim `hplplus10`: the HPL curve with the first ten seek times given explicitly.
    HplPlus10 { first10: [u64; 10], v1: u32, v2: f64, v3: f64, v4: f64, v5: f64 },
    /// `A + B·√d` up to the knee `x0`, `C + D·d` beyond (C¹-continuous; ns).
    SqrtLinear { a: f64, b: f64, c: f64, d: f64, x0: f64 },
    /// A constant seek time for any nonzero distance.
    Constant(u64),
}

impl SeekCurve {
    /// Seek time for a distance in cylinders, in nanoseconds.
    pub fn time_ns(&self, d: u32) -> u64 {
        if d == 0 {
            return 0;
        }
        match self {
            SeekCurve::Table(t) => table_lookup(t, d),
            SeekCurve::Hpl { v1, v2, v3, v4, v5, v6 } => {
                if let (1, Some(one)) = (d, v6) {
                    return one.max(0.0).round() as u64;
                }
                hpl(d, *v1, *v2, *v3, *v4, *v5)
            }
            SeekCurve::HplPlus10 { first10, v1, v2, v3, v4, v5 } => {
                if d <= 10 {
                    first10[(d - 1) as usize]
                } else {
                    hpl(d, *v1, *v2, *v3, *v4, *v5)
                }
            }
            SeekCurve::SqrtLinear { a, b, c, d: dd, x0 } => {
                let x = d as f64;
                let t = if x <= *x0 { a + b * x.sqrt() } else { c + dd * x };
                t.max(0.0).round() as u64
            }
            SeekCurve::Constant(t) => *t,
        }
    }

    /// Fit the recommended C¹ √→linear curve to a datasheet's track-to-track, average and
    /// full-stroke seek times (ns) for a disk with `cylinders` cylinders, where "average"
    /// is the datasheet's weighted average over all start/end pairs:
    /// Σ_{d=1}^{N−1} (N−d)·t(d) / Σ (N−d). Returns `None` when no knee satisfies the
    /// average (the figures are inconsistent).
    ///
    /// The fit costs tens of milliseconds (each bisection step averages over every seek
    /// distance), and a simulated machine loads its profile several times (to check, to
    /// describe and to build it), so results are kept for the process: `iosched repro`
    /// builds some twenty machines of two profiles. Threads that miss at once each compute
    /// the (same) fit; that wastes a little work, never changes a result.
    pub fn fit_sqrt_linear(t1: f64, tavg: f64, tmax: f64, cylinders: u32) -> Option<SeekCurve> {
        type Key = (u64, u64, u64, u32);
        static FITS: std::sync::Mutex<Vec<(Key, Option<SeekCurve>)>> = std::sync::Mutex::new(Vec::new());
        let key = (t1.to_bits(), tavg.to_bits(), tmax.to_bits(), cylinders);
        let kept =
            FITS.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key).map(|(_, c)| c.clone());
        if let Some(c) = kept {
            return c;
        }
        let fit = Self::fit_sqrt_linear_uncached(t1, tavg, tmax, cylinders);
        FITS.lock().unwrap_or_else(|e| e.into_inner()).push((key, fit.clone()));
        fit
    }

    fn fit_sqrt_linear_uncached(t1: f64, tavg: f64, tmax: f64, cylinders: u32) -> Option<SeekCurve> {
        let n = cylinders.max(3) as f64 - 1.0; // maximum seek distance
        if !(t1 > 0.0 && tavg > t1 && tmax > tavg) {
            return None;
        }
        let curve = |x0: f64| {
            // B = (tmax − t1) / (√x0/2 + N/(2√x0) − 1)
            let s = x0.sqrt();
            let b = (tmax - t1) / (s / 2.0 + n / (2.0 * s) - 1.0);
            let a = t1 - b;
            let d = b / (2.0 * s);
            let c = a + b * s / 2.0;
            SeekCurve::SqrtLinear { a, b, c, d, x0 }
        };
        let avg = |c: &SeekCurve| weighted_average_ns(c, n as u32 + 1);
        // The average grows as the knee moves right (more of the stroke on the concave
        // √ part); bisect on x0 in [2, N−1].
        let (mut lo, mut hi) = (2.0f64, n - 1.0);
        let (alo, ahi) = (avg(&curve(lo)), avg(&curve(hi)));
        let (inc, target) = (ahi > alo, tavg);
        if (target - alo) * (target - ahi) > 0.0 {
            return None;
        }
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if mid == lo || mid == hi {
                break; // converged: further steps would change neither bound
            }
            let a = avg(&curve(mid));
            if (a < target) == inc {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(curve(0.5 * (lo + hi)))
    }
}

fn hpl(d: u32, v1: u32, v2: f64, v3: f64, v4: f64, v5: f64) -> u64 {
    let x = d as f64;
    let t = if d < v1 { v2 + v3 * x.sqrt() } else { v4 + v5 * x };
    t.max(0.0).round() as u64
}

/// The longest seek a table may give, as the datasheet path's `full_stroke_seek` limit.
pub const MAX_TABLE_SEEK_NS: u64 = 200_000_000;

/// Check a measured table over the distances a disk of `cylinders` cylinders can seek
/// (1 ..= cylinders − 1): every point, and the straight-line extrapolation past either end
/// that [`SeekCurve::time_ns`] uses, must lie in 0 < t ≤ 200 ms. A table whose last two
/// points fall steeply would otherwise extrapolate below zero, and be clamped to free
/// seeks without a word.
pub fn check_table(t: &[(u32, u64)], cylinders: u32) -> Result<(), String> {
    let show = |ns: f64| format!("{:.3} ms", ns / 1e6);
    let ok = |ns: i64| ns > 0 && ns <= MAX_TABLE_SEEK_NS as i64;
    for &(d, ns) in t {
        if ns == 0 || ns > MAX_TABLE_SEEK_NS {
            return Err(format!(
                "the seek at distance {d} is {}: expected more than 0 and at most 200 ms",
                show(ns as f64)
            ));
        }
    }
    let last = cylinders.saturating_sub(1).max(1);
    for d in [1, last] {
        let inside = t.first().is_some_and(|f| f.0 <= d) && t.last().is_some_and(|l| l.0 >= d);
        if !inside && !ok(table_line(t, d)) {
            return Err(format!(
                "extrapolated to distance {d} (the disk has {cylinders} cylinders) the table gives {}: \
                 expected more than 0 and at most 200 ms; extend the table to cover 1..={last}",
                show(table_line(t, d) as f64)
            ));
        }
    }
    Ok(())
}

fn table_lookup(t: &[(u32, u64)], d: u32) -> u64 {
    table_line(t, d).max(0) as u64
}

/// A table's seek time at `d` before clamping at zero. DiskSim dm_mech_g1_seek_extracted:
/// exact match, else interpolate between the neighbours (extrapolating from the last two
/// points past either end).
fn table_line(t: &[(u32, u64)], d: u32) -> i64 {
    let i = t.partition_point(|&(x, _)| x < d);
    if i < t.len() && t[i].0 == d {
        return t[i].1 as i64;
    }
    let i = i.clamp(1, t.len() - 1);
    let (d1, t1) = (t[i - 1].0 as i64, t[i - 1].1 as i64);
    let (d2, t2) = (t[i].0 as i64, t[i].1 as i64);
    t1 + (d as i64 - d1) * (t2 - t1) / (d2 - d1)
}

/// The datasheet-weighted average seek over a disk with `cylinders` cylinders (ns, as f64).
pub fn weighted_average_ns(c: &SeekCurve, cylinders: u32) -> f64 {
    let n = cylinders as u64;
    if n < 2 {
        return 0.0;
    }
    let (mut num, mut den) = (0.0f64, 0.0f64);
    // Sample distances on a grid for big disks: the weight is smooth.
    let step = ((n - 1) / 20_000).max(1);
    let mut d = 1u64;
    while d < n {
        let w = (n - d) as f64 * step as f64;
        num += w * c.time_ns(d as u32) as f64;
        den += w;
        d += step;
    }
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_interpolates_and_extrapolates() {
        let t = SeekCurve::Table(vec![(1, 1000), (3, 3000), (10, 5000)]);
        assert_eq!(t.time_ns(0), 0);
        assert_eq!(t.time_ns(1), 1000);
        assert_eq!(t.time_ns(2), 2000);
        assert_eq!(t.time_ns(6), 3000 + 3 * 2000 / 7);
        assert_eq!(t.time_ns(17), 7000);
    }

    #[test]
    fn fit_matches_disk_md_drive_a() {
        // disk.md §4.1(c) Drive A: (2.0, 8.9, 21.0) ms, N = 29,800: x0 ≈ 1513.
        let c = SeekCurve::fit_sqrt_linear(2.0e6, 8.9e6, 21.0e6, 29_800).unwrap();
        let SeekCurve::SqrtLinear { x0, .. } = c else { unreachable!() };
        assert!((x0 - 1513.0).abs() < 40.0, "knee {x0}");
        assert!((c.time_ns(1) as f64 - 2.0e6).abs() < 1e3);
        assert!((c.time_ns(29_799) as f64 - 21.0e6).abs() < 2e4);
        let avg = weighted_average_ns(&c, 29_800);
        assert!((avg - 8.9e6).abs() < 2e4, "avg {avg}");
    }

    /// The kept fit is the fit: the same curve for the same figures, a different one for
    /// different figures, and inconsistent figures stay refused.
    #[test]
    fn kept_fits_are_the_fits() {
        let a = SeekCurve::fit_sqrt_linear(2.0e6, 8.9e6, 21.0e6, 29_800);
        assert_eq!(a, SeekCurve::fit_sqrt_linear_uncached(2.0e6, 8.9e6, 21.0e6, 29_800));
        assert_eq!(a, SeekCurve::fit_sqrt_linear(2.0e6, 8.9e6, 21.0e6, 29_800));
        let b = SeekCurve::fit_sqrt_linear(2.0e6, 9.5e6, 21.0e6, 29_800);
        assert!(b.is_some() && b != a);
        assert_eq!(SeekCurve::fit_sqrt_linear(2.0e6, 1.5e6, 21.0e6, 29_800), None);
        assert_eq!(SeekCurve::fit_sqrt_linear(2.0e6, 1.5e6, 21.0e6, 29_800), None);
    }

    #[test]
    fn hpl_plus_10() {
        let mut f = [0u64; 10];
        for (i, v) in f.iter_mut().enumerate() {
            *v = (i as u64 + 1) * 100;
        }
        let c = SeekCurve::HplPlus10 { first10: f, v1: 300, v2: 3.81e6, v3: 0.33e6, v4: 7.75e6, v5: 0.0059e6 };
        assert_eq!(c.time_ns(10), 1000);
        assert_eq!(c.time_ns(100), (3.81e6 + 0.33e6 * 10.0) as u64);
        assert_eq!(c.time_ns(1000), (7.75e6 + 5.9e6) as u64);
    }
}
