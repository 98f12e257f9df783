//! Time as the scheduling core sees it: an [`Instant`] is a plain count of nanoseconds
//! since the start of a run, chosen by the caller. Nothing in the core reads a clock.
//!
//! The kernel's elevators keep time in jiffies (1/HZ s). [`Hz`] converts between our
//! nanosecond instants and jiffies exactly as the kernel does (`msecs_to_jiffies` rounds
//! up, `jiffies_to_msecs` truncates at HZ=1000), so the policies can reproduce the
//! kernel's integer arithmetic and its truncation effects.

use core::fmt;
use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in time: nanoseconds since the start of the run.
///
/// Constructible from a number so that tests and traces can write times down.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The start of a run.
    pub const ZERO: Instant = Instant(0);
    /// The largest representable instant ("never").
    pub const MAX: Instant = Instant(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Instant(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Instant(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Seconds as a float, for reports only (never for decisions).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Milliseconds as a float, for reports only.
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        u64::try_from(d.as_nanos()).ok().and_then(|n| self.0.checked_add(n)).map(Instant)
    }
    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        self.checked_add(d).unwrap_or(Instant::MAX)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.checked_add(d).expect("Instant overflow")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Panics if `rhs` is later than `self`: time going backwards is a bug.
    fn sub(self, rhs: Instant) -> Duration {
        Duration::from_nanos(self.0.checked_sub(rhs.0).expect("time went backwards: subtracting a later Instant"))
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.as_nanos() as u64))
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Instant {
    /// Milliseconds with up to six decimals, trailing zeros dropped: `12ms`, `6.5ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format_nanos(self.0))
    }
}

/// Format nanoseconds as a compact millisecond string (`0ms`, `6ms`, `1.25ms`).
pub fn format_nanos(ns: u64) -> String {
    let ms = ns / 1_000_000;
    let frac = ns % 1_000_000;
    if frac == 0 {
        format!("{ms}ms")
    } else {
        let s = format!("{frac:06}");
        format!("{ms}.{}ms", s.trim_end_matches('0'))
    }
}

/// Format a duration in the most natural human unit (`6ms`, `5s`, `250us`, `0`).
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        "0".into()
    } else if ns.is_multiple_of(1_000_000_000) {
        format!("{}s", ns / 1_000_000_000)
    } else if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// A time such as `6ms`, `1.5s`, `250us` (or `µs`), `500ns`, exactly in nanoseconds.
/// A bare number is `bare` nanoseconds per unit, or rejected when `bare` is `None`.
/// `None` when it is not a non-negative decimal with a known unit or is not a whole number
/// of nanoseconds. Exact (no floating point): `0.1s` is 100,000,000 ns, never 99,999,999.
pub fn parse_time_nanos(t: &str, bare: Option<u128>) -> Option<u128> {
    let t = t.trim();
    let (num, scale) = match split_time_unit(t) {
        Some((n, ns)) => (n, ns as u128),
        None => (t, bare?),
    };
    parse_scaled(num.trim(), scale)
}

/// Split a time's unit off (`ns`, `us` or `µs`, `ms`, `s`): the number's text and the
/// nanoseconds per unit; `None` without one of those units.
pub fn split_time_unit(t: &str) -> Option<(&str, u64)> {
    let t = t.trim();
    if let Some(n) = t.strip_suffix("ns") {
        Some((n, 1))
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        Some((n, 1_000))
    } else if let Some(n) = t.strip_suffix("ms") {
        Some((n, 1_000_000))
    } else {
        t.strip_suffix('s').map(|n| (n, 1_000_000_000))
    }
}

/// Parse a non-negative decimal number and multiply by `scale`, requiring an exact integer.
pub(crate) fn parse_scaled(num: &str, scale: u128) -> Option<u128> {
    if num.is_empty() {
        return None;
    }
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut v = int_v.checked_mul(scale)?;
    if !frac.is_empty() {
        let denom = 10u128.checked_pow(frac.len() as u32)?;
        let f: u128 = frac.parse().ok()?;
        let scaled = f.checked_mul(scale)?;
        if scaled % denom != 0 {
            return None;
        }
        v = v.checked_add(scaled / denom)?;
    }
    Some(v)
}

/// The kernel tick rate. Policies that follow the kernel's jiffy arithmetic carry one.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Hz(u32);

impl Default for Hz {
    fn default() -> Self {
        Hz(1000)
    }
}

impl Hz {
    /// The tick rates Linux 2.6 could be built with.
    pub const ALLOWED: [u32; 4] = [100, 250, 300, 1000];

    /// Panics on a rate outside [`Hz::ALLOWED`]; validation happens in the tunable layer.
    pub fn new(hz: u32) -> Self {
        assert!(Self::ALLOWED.contains(&hz), "HZ must be one of {:?}", Self::ALLOWED);
        Hz(hz)
    }
    pub fn get(self) -> u32 {
        self.0
    }
    /// Nanoseconds per jiffy, rounded down (HZ=300 is not exact; the kernel has the same
    /// issue and we only use this for converting instants).
    fn nanos_per_jiffy(self) -> u64 {
        1_000_000_000 / self.0 as u64
    }
    /// The jiffies counter at `now` (jiffies start at 0 at the start of the run).
    #[inline]
    pub fn jiffies(self, now: Instant) -> u64 {
        // One arm per allowed rate, so each division is by a constant (a multiply), not
        // a hardware divide: policies convert the time on every call.
        let ns = now.as_nanos();
        match self.0 {
            1000 => ns / 1_000_000,
            250 => ns / 4_000_000,
            100 => ns / 10_000_000,
            300 => ns / (1_000_000_000 / 300),
            _ => ns / self.nanos_per_jiffy(),
        }
    }
    /// The instant at which the jiffies counter reaches `j` (when a timer set for `j` fires).
    pub fn instant(self, j: u64) -> Instant {
        Instant::from_nanos(j.saturating_mul(self.nanos_per_jiffy()))
    }
    /// `msecs_to_jiffies`: rounds up, as the kernel does.
    pub fn msecs_to_jiffies(self, ms: u64) -> u64 {
        (ms * self.0 as u64).div_ceil(1000)
    }
    /// `jiffies_to_msecs`: what sysfs shows.
    pub fn jiffies_to_msecs(self, j: u64) -> u64 {
        (j * 1000).div_ceil(self.0 as u64)
    }
    /// A duration given by the user (sysfs writes are in ms) converted to jiffies, rounding up.
    pub fn duration_to_jiffies(self, d: Duration) -> u64 {
        let ns = d.as_nanos() as u64;
        let per = self.nanos_per_jiffy();
        ns.div_ceil(per)
    }
    pub fn jiffies_to_duration(self, j: u64) -> Duration {
        Duration::from_millis(self.jiffies_to_msecs(j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_compact_milliseconds() {
        assert_eq!(Instant::from_millis(12).to_string(), "12ms");
        assert_eq!(Instant::from_micros(6500).to_string(), "6.5ms");
        assert_eq!(Instant::from_nanos(1).to_string(), "0.000001ms");
    }

    #[test]
    fn jiffies_follow_kernel_rounding() {
        let hz = Hz::new(250);
        assert_eq!(hz.msecs_to_jiffies(6), 2); // rounds up
        assert_eq!(hz.jiffies(Instant::from_millis(7)), 1);
        assert_eq!(hz.instant(2), Instant::from_millis(8));
        let hz = Hz::default();
        assert_eq!(hz.msecs_to_jiffies(125), 125);
        assert_eq!(hz.jiffies_to_msecs(125), 125);
    }

    #[test]
    fn times_parse_exactly_or_not_at_all() {
        assert_eq!(parse_time_nanos("0.1s", None), Some(100_000_000));
        assert_eq!(parse_time_nanos("1.5ms", None), Some(1_500_000));
        assert_eq!(parse_time_nanos("250us", None), Some(250_000));
        assert_eq!(parse_time_nanos("250µs", None), Some(250_000));
        assert_eq!(parse_time_nanos(" 7ns ", None), Some(7));
        assert_eq!(parse_time_nanos("18446744073.709551615s", None), Some(u64::MAX as u128));
        assert_eq!(parse_time_nanos("6", Some(1_000_000)), Some(6_000_000));
        for bad in ["6", "1.5ns", "-1ms", "1e3ms", "ms", ".s", "1..2s", "5m"] {
            assert_eq!(parse_time_nanos(bad, None), None, "{bad}");
        }
    }

    #[test]
    #[should_panic(expected = "time went backwards")]
    fn subtracting_later_instant_panics() {
        let _ = Instant::from_millis(1) - Instant::from_millis(2);
    }
}
