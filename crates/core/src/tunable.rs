//! Typed tunables, named and scaled like the kernel's sysfs files.
//!
//! Every tunable value is an integer in the unit sysfs uses for that file (milliseconds
//! for times, KiB for sizes, a count, or 0/1 for booleans), so what a user writes here is
//! what they would `echo` into `/sys/block/<dev>/queue/iosched/<name>`. Human units are
//! accepted on input (`6ms`, `1s`, `512k`) and converted; a value that does not convert
//! exactly or lies outside the range is **rejected** with the allowed range — never clamped.

use core::fmt;

use crate::time;

/// What kind of value a tunable holds; determines parsing and display.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A time in whole milliseconds (sysfs convention for the elevators).
    Millis { min: i64, max: i64 },
    /// A time in nanoseconds (Kyber's `*_lat_nsec`).
    Nanos { min: i64, max: i64 },
    /// A time in whole microseconds (BFQ's `slice_idle_us`).
    Micros { min: i64, max: i64 },
    /// A plain count.
    Count { min: i64, max: i64 },
    /// A size in KiB (`max_sectors_kb`, `back_seek_max`).
    Kib { min: i64, max: i64 },
    /// 0 or 1.
    Bool,
    /// One of a fixed set of named modes; the value is the index.
    Choice(&'static [&'static str]),
    /// A count that takes only the listed values (`hz`: 100, 250, 300 or 1000).
    Values(&'static [i64]),
}

impl Kind {
    pub fn unit(&self) -> &'static str {
        match self {
            Kind::Millis { .. } => "ms",
            Kind::Nanos { .. } => "ns",
            Kind::Micros { .. } => "us",
            Kind::Count { .. } => "count",
            Kind::Kib { .. } => "KiB",
            Kind::Bool => "bool",
            Kind::Choice(_) => "mode",
            Kind::Values(_) => "count",
        }
    }
    /// The allowed values, inclusive, in the unit of [`Kind::unit`] (a choice: its indices).
    pub fn range(&self) -> (i64, i64) {
        match *self {
            Kind::Millis { min, max }
            | Kind::Nanos { min, max }
            | Kind::Micros { min, max }
            | Kind::Count { min, max }
            | Kind::Kib { min, max } => (min, max),
            Kind::Bool => (0, 1),
            Kind::Choice(names) => (0, names.len() as i64 - 1),
            Kind::Values(vs) => (vs.iter().copied().min().unwrap_or(0), vs.iter().copied().max().unwrap_or(0)),
        }
    }
    /// Human description of the allowed values, for errors and `iosched schedulers`.
    pub fn describe_range(&self) -> String {
        match *self {
            Kind::Millis { min, max } => format!("{}..={} ms", fmt_min(min), fmt_max(max)),
            Kind::Nanos { min, max } => format!("{}..={} ns", fmt_min(min), fmt_max(max)),
            Kind::Micros { min, max } => format!("{}..={} us", fmt_min(min), fmt_max(max)),
            Kind::Count { min, max } => format!("{}..={}", fmt_min(min), fmt_max(max)),
            Kind::Kib { min, max } => format!("{}..={} KiB", fmt_min(min), fmt_max(max)),
            Kind::Bool => "0 or 1".to_string(),
            Kind::Choice(names) => names.join(" | "),
            Kind::Values(vs) => vs.iter().map(i64::to_string).collect::<Vec<_>>().join(" | "),
        }
    }
    /// Format a stored value for display.
    pub fn format(&self, v: i64) -> String {
        match *self {
            Kind::Millis { .. } => format!("{v}ms"),
            Kind::Nanos { .. } => format!("{v}ns"),
            Kind::Micros { .. } => format!("{v}us"),
            Kind::Kib { .. } => format!("{v}k"),
            Kind::Choice(names) => names.get(v as usize).copied().unwrap_or("?").to_string(),
            _ => v.to_string(),
        }
    }
}

fn fmt_max(max: i64) -> String {
    if max == i32::MAX as i64 { "INT_MAX".to_string() } else { max.to_string() }
}

fn fmt_min(min: i64) -> String {
    if min == i32::MIN as i64 { "INT_MIN".to_string() } else { min.to_string() }
}

/// The description of one tunable.
#[derive(Copy, Clone, Debug)]
pub struct Spec {
    /// The kernel's sysfs name (`antic_expire`, `slice_idle`, `nr_requests`, …).
    pub name: &'static str,
    pub kind: Kind,
    /// One line: what it does.
    pub help: &'static str,
}

impl Spec {
    pub const fn millis(name: &'static str, min: i64, max: i64, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Millis { min, max }, help }
    }
    pub const fn nanos(name: &'static str, min: i64, max: i64, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Nanos { min, max }, help }
    }
    pub const fn micros(name: &'static str, min: i64, max: i64, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Micros { min, max }, help }
    }
    pub const fn count(name: &'static str, min: i64, max: i64, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Count { min, max }, help }
    }
    pub const fn kib(name: &'static str, min: i64, max: i64, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Kib { min, max }, help }
    }
    pub const fn boolean(name: &'static str, help: &'static str) -> Spec {
        Spec { name, kind: Kind::Bool, help }
    }
    pub const fn choice(name: &'static str, names: &'static [&'static str], help: &'static str) -> Spec {
        Spec { name, kind: Kind::Choice(names), help }
    }
    pub const fn values(name: &'static str, values: &'static [i64], help: &'static str) -> Spec {
        Spec { name, kind: Kind::Values(values), help }
    }

    /// Parse a user-written value and check its range.
    pub fn parse(&self, text: &str) -> Result<i64, TunableError> {
        let t = text.trim();
        let bad = |expected: String| TunableError::BadValue {
            name: self.name.to_string(),
            value: text.to_string(),
            expected,
        };
        let v = match self.kind {
            Kind::Bool => match t.to_ascii_lowercase().as_str() {
                "0" | "false" | "off" | "no" => 0,
                "1" | "true" | "on" | "yes" => 1,
                _ => return Err(bad("0 or 1 (also true/false, on/off)".into())),
            },
            Kind::Choice(names) => match names.iter().position(|n| n.eq_ignore_ascii_case(t)) {
                Some(i) => i as i64,
                None => return Err(bad(format!("one of: {}", names.join(", ")))),
            },
            Kind::Millis { .. } => parse_millis(t).map_err(|e| self.too_big_or(t, e))?,
            Kind::Nanos { .. } => parse_nanos(t).map_err(|e| self.too_big_or(t, e))?,
            Kind::Micros { .. } => parse_micros(t).map_err(|e| self.too_big_or(t, e))?,
            Kind::Kib { .. } => parse_kib(t).map_err(|e| self.too_big_or(t, e))?,
            Kind::Count { .. } | Kind::Values(_) => parse_count(t).map_err(|e| self.too_big_or(t, e))?,
        };
        self.check(v)?;
        Ok(v)
    }

    /// The error for `text` that did not parse: out of range when it is a well-formed
    /// number too large for 64 bits (`99999999999999999999`), else `expected`.
    fn too_big_or(&self, text: &str, expected: String) -> TunableError {
        let lower = text.to_ascii_lowercase();
        let num = ["kib", "mib", "gib", "ns", "us", "µs", "ms", "k", "m", "g", "s"]
            .iter()
            .find_map(|u| lower.strip_suffix(u))
            .unwrap_or(&lower)
            .replace('_', "");
        let num = num.trim().strip_prefix('-').unwrap_or(num.trim());
        let numeric = !num.is_empty()
            && num.chars().all(|c| c.is_ascii_digit() || c == '.')
            && num.matches('.').count() <= 1
            && num.chars().filter(char::is_ascii_digit).count() >= 19;
        if numeric {
            TunableError::OutOfRange {
                name: self.name.to_string(),
                value: text.trim().to_string(),
                allowed: self.kind.describe_range(),
            }
        } else {
            TunableError::BadValue { name: self.name.to_string(), value: text.to_string(), expected }
        }
    }

    /// Check a value against the range.
    pub fn check(&self, v: i64) -> Result<(), TunableError> {
        let (min, max) = self.kind.range();
        let listed = match self.kind {
            Kind::Values(vs) => vs.contains(&v),
            _ => true,
        };
        if v < min || v > max || !listed {
            return Err(TunableError::OutOfRange {
                name: self.name.to_string(),
                value: self.kind.format(v),
                allowed: self.kind.describe_range(),
            });
        }
        Ok(())
    }
}

/// Declare a policy's tunables once: each one's [`Spec`], how to show its value and how to
/// store a new one, in one line — as the kernel declares a sysfs file once with its
/// `SHOW_FUNCTION` / `STORE_FUNCTION` macros and one `elv_fs_entry` table. Used inside an
/// `impl Scheduler for …` block, it writes the trait's `tunables`, `get_tunable` and
/// `set_tunable`:
///
/// ```
/// # use iosched_core::{Ctx, Decision, Instant, Request, Scheduler, Spec};
/// #[derive(Debug)]
/// struct Fifo { batch: i64, front_merges: bool }
/// impl Scheduler for Fifo {
///     fn name(&self) -> &'static str { "fifo" }
///     iosched_core::tunables! {
///         Spec::count("fifo_batch", 1, 64, "requests per batch")
///             => get |s| s.batch, set |s, v| s.batch = v;
///         Spec::boolean("front_merges", "look for front merges")
///             => get |s| s.front_merges as i64, set |s, v| s.front_merges = v != 0;
///     }
/// #   fn insert(&mut self, _: Instant, _: &Request, _: &mut Ctx) {}
/// #   fn dispatch(&mut self, _: Instant, _: &mut Ctx) -> Decision { Decision::Empty }
/// #   fn drain(&mut self, _: Instant, _: &mut Ctx) {}
/// #   fn poll_timeout(&self) -> Option<Instant> { None }
/// #   fn handle_timeout(&mut self, _: Instant, _: &mut Ctx) {}
/// #   fn is_empty(&self) -> bool { true }
/// #   fn queued(&self) -> usize { 0 }
/// }
/// let mut f = Fifo { batch: 16, front_merges: true };
/// assert_eq!(f.tunables().len(), 2);
/// f.set_tunable("fifo_batch", 4);
/// assert_eq!(f.get_tunable("fifo_batch"), Some(4));
/// assert_eq!(f.get_tunable("read_expire"), None);
/// ```
///
/// `get` returns the value in the tunable's sysfs unit; `set` receives a value already
/// parsed and range-checked against the spec. With no entries the policy has no tunables.
#[macro_export]
macro_rules! tunables {
    ($($spec:expr => get |$g:ident| $get:expr, set |$s:ident, $v:ident| $set:expr;)*) => {
        fn tunables(&self) -> &'static [$crate::Spec] {
            const TABLE: &[$crate::Spec] = &[$($spec),*];
            TABLE
        }
        fn get_tunable(&self, name: &str) -> Option<i64> {
            $({
                const SPEC: $crate::Spec = $spec;
                if name == SPEC.name {
                    let $g = self;
                    return Some($get);
                }
            })*
            let _ = name;
            None
        }
        #[allow(unused_variables)]
        fn set_tunable(&mut self, name: &str, value: i64) {
            $({
                const SPEC: $crate::Spec = $spec;
                if name == SPEC.name {
                    let ($s, $v) = (self, value);
                    $set;
                    return;
                }
            })*
            unreachable!("{} has no tunable {name}", self.name())
        }
    };
}

/// A duration in whole milliseconds: `6`, `6ms`, `1s`, `1.5s`, `2000us`.
fn parse_millis(t: &str) -> Result<i64, String> {
    parse_whole(t, 1_000_000, "milliseconds", "6, 6ms, 1s")
}

/// A duration in nanoseconds: `2000000`, `2ms`, `1.5ms`, `250us`, `1s`, `500ns`.
fn parse_nanos(t: &str) -> Result<i64, String> {
    parse_whole(t, 1, "nanoseconds", "2000000, 2ms, 250us")
}

/// A duration in whole microseconds: `8000`, `8ms`, `8000us`.
fn parse_micros(t: &str) -> Result<i64, String> {
    parse_whole(t, 1_000, "microseconds", "8000, 8000us, 8ms")
}

/// A duration in whole units of `unit_ns` (a bare number is in that unit).
fn parse_whole(t: &str, unit_ns: u128, unit: &str, examples: &str) -> Result<i64, String> {
    let expected = || {
        if unit_ns == 1 {
            format!("a time in {unit}, e.g. {examples}")
        } else {
            format!("a time in whole {unit}, e.g. {examples}")
        }
    };
    let ns = time::parse_time_nanos(t, Some(unit_ns)).ok_or_else(expected)?;
    if ns % unit_ns != 0 {
        return Err(format!("a whole number of {unit} (sysfs has no finer unit), got {t}"));
    }
    i64::try_from(ns / unit_ns).map_err(|_| expected())
}

/// A size in KiB: `128`, `128k`, `1m`, `512K`, `1M`.
fn parse_kib(t: &str) -> Result<i64, String> {
    let expected = || "a size in KiB, e.g. 128, 128k, 1m".to_string();
    let lower = t.to_ascii_lowercase();
    let (num, mult): (&str, u128) = if let Some(n) = lower.strip_suffix("kib").or(lower.strip_suffix('k')) {
        (n, 1)
    } else if let Some(n) = lower.strip_suffix("mib").or(lower.strip_suffix('m')) {
        (n, 1024)
    } else if let Some(n) = lower.strip_suffix("gib").or(lower.strip_suffix('g')) {
        (n, 1024 * 1024)
    } else {
        (lower.as_str(), 1)
    };
    let v = time::parse_scaled(num.trim(), mult).ok_or_else(expected)?;
    i64::try_from(v).map_err(|_| expected())
}

fn parse_count(t: &str) -> Result<i64, String> {
    t.replace('_', "").parse::<i64>().map_err(|_| "an integer".to_string())
}

/// Why a tunable or scheduler specification was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TunableError {
    UnknownScheduler { name: String, allowed: Vec<String> },
    UnknownTunable { scheduler: String, name: String, allowed: Vec<String> },
    BadValue { name: String, value: String, expected: String },
    OutOfRange { name: String, value: String, allowed: String },
    Syntax { spec: String, expected: String },
}

impl fmt::Display for TunableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TunableError::UnknownScheduler { name, allowed } => {
                write!(f, "unknown scheduler `{name}`; available: {}", allowed.join(", "))
            }
            TunableError::UnknownTunable { scheduler, name, allowed } => {
                write!(f, "scheduler `{scheduler}` has no tunable `{name}`; its tunables are: {}", allowed.join(", "))
            }
            TunableError::BadValue { name, value, expected } => {
                write!(f, "bad value `{value}` for `{name}`: expected {expected}")
            }
            TunableError::OutOfRange { name, value, allowed } => {
                write!(f, "value {value} for `{name}` is out of range: allowed {allowed}")
            }
            TunableError::Syntax { spec, expected } => {
                write!(f, "bad scheduler spec `{spec}`: {expected}")
            }
        }
    }
}

impl std::error::Error for TunableError {}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Spec = Spec::millis("antic_expire", 0, i32::MAX as i64, "");
    const KB: Spec = Spec::kib("max_sectors_kb", 4, 32767, "");

    #[test]
    fn millis_accept_human_units() {
        assert_eq!(MS.parse("6").unwrap(), 6);
        assert_eq!(MS.parse("6ms").unwrap(), 6);
        assert_eq!(MS.parse("1s").unwrap(), 1000);
        assert_eq!(MS.parse("1.5s").unwrap(), 1500);
        assert_eq!(MS.parse("2000us").unwrap(), 2);
    }

    #[test]
    fn millis_reject_fractions_and_garbage() {
        assert!(matches!(MS.parse("1500us"), Err(TunableError::BadValue { .. })));
        assert!(matches!(MS.parse("fast"), Err(TunableError::BadValue { .. })));
        assert!(matches!(MS.parse("-1"), Err(TunableError::BadValue { .. })));
    }

    #[test]
    fn out_of_range_is_rejected_with_range() {
        let e = KB.parse("2").unwrap_err();
        assert_eq!(e.to_string(), "value 2k for `max_sectors_kb` is out of range: allowed 4..=32767 KiB");
        assert_eq!(KB.parse("1m").unwrap(), 1024);
    }
}
