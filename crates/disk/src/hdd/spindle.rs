//! The spindle: rotational position as an exact function of simulated integer time
//! (disk.md §4.2).
//!
//! Angles are integers in units of 1/`REV` of a revolution with `REV` = 60·10⁹, so that a
//! spindle turning at `rpm` advances exactly `rpm` units per nanosecond:
//! `angle(t) = (phase + t·rpm) mod REV`. No floating point, no drift: the same time always
//! gives the same angle. Sector `k` of a track with `spt` sectors and rotational offset
//! `off` starts at angle `((k + off) mod spt)·REV/spt` (rounded down, < 1 unit error).

/// Angle units per revolution.
pub const REV: u64 = 60_000_000_000;

/// `a·b / c` rounded down, exactly. The product fits 64 bits in every realistic case
/// (sector counts times `REV`); 128-bit division is the fallback, as it costs several
/// times more and these run for every sector boundary the model computes.
#[inline]
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p / c,
        None => (a as u128 * b as u128 / c as u128) as u64,
    }
}

/// `a·b / c` rounded up, exactly.
#[inline]
pub fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p.div_ceil(c),
        None => (a as u128 * b as u128).div_ceil(c as u128) as u64,
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Spindle {
    rpm: u64,
    /// Angle at time 0 (the model's seed chooses it).
    phase: u64,
}

impl Spindle {
    pub fn new(rpm: u32, phase: u64) -> Spindle {
        assert!(rpm > 0);
        Spindle { rpm: rpm as u64, phase: phase % REV }
    }

    pub fn rpm(&self) -> u64 {
        self.rpm
    }

    /// One revolution, in ns (rounded to nearest).
    pub fn period_ns(&self) -> u64 {
        (REV + self.rpm / 2) / self.rpm
    }

    /// Angle at time `t` (ns).
    #[inline]
    pub fn angle(&self, t: u64) -> u64 {
        match t.checked_mul(self.rpm).and_then(|x| x.checked_add(self.phase)) {
            Some(x) => x % REV,
            None => ((t as u128 * self.rpm as u128 + self.phase as u128) % REV as u128) as u64,
        }
    }

    /// Time to turn forward by `d` angle units, rounded up.
    #[inline]
    pub fn time_for(&self, d: u64) -> u64 {
        d.div_ceil(self.rpm)
    }

    /// Angle of sector boundary `k` (in rotational order, already offset) on a track with
    /// `spt` sectors.
    #[inline]
    pub fn boundary(k: u64, spt: u32) -> u64 {
        mul_div(k % spt as u64, REV, spt as u64)
    }

    /// The first instant ≥ `t` at which the head is at angle `a`. An angle passed less
    /// than a nanosecond ago counts as reached: instants are whole nanoseconds, so a
    /// sector boundary computed from an earlier one may land a fraction of a nanosecond
    /// late, and that must not cost a revolution.
    #[inline]
    pub fn reach(&self, t: u64, a: u64) -> u64 {
        let cur = self.angle(t);
        let d = (a + REV - cur) % REV;
        if REV - d <= self.rpm {
            return t;
        }
        t + self.time_for(d)
    }

    /// Duration of `k` sectors on a track with `spt` sectors.
    #[inline]
    pub fn sectors_ns(&self, k: u64, spt: u32) -> u64 {
        match (spt as u64).checked_mul(self.rpm) {
            Some(d) => mul_div(k, REV, d),
            None => (k as u128 * REV as u128 / (spt as u128 * self.rpm as u128)) as u64,
        }
    }

    /// Rotational index (0..spt) of the first sector boundary at or after time `t`, and the
    /// instant the head reaches it.
    #[inline]
    pub fn next_boundary(&self, t: u64, spt: u32) -> (u32, u64) {
        // Same sub-nanosecond tolerance as `reach`.
        let cur = (self.angle(t) + REV - self.rpm) % REV;
        // ceil(cur·spt / REV)
        let k = mul_div_ceil(cur, spt as u64, REV);
        let k = k % spt as u64;
        let a = Spindle::boundary(k, spt);
        (k as u32, self.reach(t, a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_revolution_returns_to_the_same_angle() {
        let s = Spindle::new(7200, 12345);
        // 7200 rpm: 120 revolutions per second exactly.
        let a0 = s.angle(1_000);
        assert_eq!(s.angle(1_000 + 1_000_000_000), a0);
        assert_eq!(s.period_ns(), 8_333_333);
    }

    #[test]
    fn reach_and_boundaries() {
        let s = Spindle::new(10_000, 0);
        // 10k rpm: 6 ms per revolution; a quarter turn takes 1.5 ms.
        assert_eq!(s.reach(0, REV / 4), 1_500_000);
        let (k, t) = s.next_boundary(5, 100);
        assert_eq!(k, 1);
        assert_eq!(t, 60_000);
        // Within a nanosecond past a boundary counts as on it.
        assert_eq!(s.next_boundary(1, 100), (0, 1));
        let (k, t) = s.next_boundary(5_999_999, 100);
        assert_eq!((k, t), (0, 6_000_000));
        assert_eq!(s.sectors_ns(100, 100), 6_000_000);
    }
}
