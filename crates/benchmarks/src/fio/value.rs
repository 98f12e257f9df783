//! fio's value syntax (`parse.c`: `str_to_decimal`, `__get_mult_bytes`, `get_mult_time`,
//! `check_int`, the comma rule of `handle_option`).
//!
//! - **Sizes**: a whole number, then an optional suffix matched by prefix, case-blind:
//!   `pib tib gib mib kib` are powers of the base that is *not* `kb_base`, then `p t g m k`
//!   (so `kb`, `KB`, `ki` too) powers of `kb_base`. With the default `kb_base=1024`, `4k =
//!   4KB = 4096` and `4KiB = 4000`; with `kb_base=1000` the other way round. fio reads `1.5k`
//!   as 1 and an unknown suffix as ×1; this reader refuses both, naming the value.
//! - **Percentages**: `N%` with N in 0..=100, where the option takes one (`size`, `offset`,
//!   `offset_increment`, `io_size`).
//! - **Times**: microseconds inside; a bare number is in the option's unit (seconds for
//!   `runtime`, `startdelay`, `ramp_time`; microseconds for `thinktime`). Suffixes `us`/`usec`,
//!   `ms`/`msec`, `s`, `m`, `h`, `d`. fio reads any other suffix as microseconds (`10sec` is
//!   10 µs); this reader refuses it.
//! - **Booleans**: `0` or `1` (fio refuses `true` too).
//! - **Per direction**: `a,b,c` sets read, write and trim; `a,b` sets read and write, and trim
//!   takes write's; one value sets all three; an empty item keeps that direction's default.

/// A value error's text (the caller adds the option and where).
pub type Result<T> = std::result::Result<T, String>;

/// `kb_base`: what `k` means.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum KbBase {
    K1024,
    K1000,
}

impl KbBase {
    pub fn parse(v: &str) -> Result<KbBase> {
        match v {
            "1024" => Ok(KbBase::K1024),
            "1000" => Ok(KbBase::K1000),
            _ => Err(format!("`{v}`: expected 1024 or 1000")),
        }
    }
    fn base(self) -> u64 {
        match self {
            KbBase::K1024 => 1024,
            KbBase::K1000 => 1000,
        }
    }
    fn other(self) -> u64 {
        match self {
            KbBase::K1024 => 1000,
            KbBase::K1000 => 1024,
        }
    }
}

/// A size, or a percentage where the option allows one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SizeOrPercent {
    Bytes(u64),
    Percent(u8),
}

/// Split `v` into its digits and the rest.
fn number(v: &str) -> Result<(u64, &str)> {
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    if digits == 0 {
        return Err(format!("`{v}`: expected a whole number"));
    }
    let n = v[..digits].parse::<u64>().map_err(|_| format!("`{v}`: too large"))?;
    Ok((n, &v[digits..]))
}

/// A size in bytes with fio's suffixes.
pub fn size(v: &str, kb: KbBase) -> Result<u64> {
    let (n, suffix) = number(v)?;
    let lower = suffix.to_ascii_lowercase();
    let mult = if lower.is_empty() {
        1
    } else if let Some(p) = ["kib", "mib", "gib", "tib", "pib"].iter().position(|s| lower == *s) {
        kb.other().pow(p as u32 + 1)
    } else if let Some(p) = ["k", "m", "g", "t", "p"]
        .iter()
        .position(|s| lower == *s || lower == format!("{s}b") || lower == format!("{s}i"))
    {
        kb.base().pow(p as u32 + 1)
    } else if lower == "b" {
        1
    } else {
        return Err(format!("`{v}`: expected a whole number with an optional unit (k, m, g, t, p; KiB, MiB, …)"));
    };
    n.checked_mul(mult).ok_or_else(|| format!("`{v}`: too large"))
}

/// A size, or `N%` (0..=100).
pub fn size_or_percent(v: &str, kb: KbBase) -> Result<SizeOrPercent> {
    match v.strip_suffix('%') {
        Some(p) => match p.parse::<u8>() {
            Ok(p) if p <= 100 => Ok(SizeOrPercent::Percent(p)),
            _ => Err(format!("`{v}`: expected a percentage 0..=100")),
        },
        None => size(v, kb).map(SizeOrPercent::Bytes),
    }
}

/// The unit of a bare number in a time option.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Seconds,
    Micros,
}

/// A time in microseconds.
pub fn time_us(v: &str, bare: TimeUnit) -> Result<u64> {
    let (n, suffix) = number(v)?;
    let lower = suffix.to_ascii_lowercase();
    let mult: u64 = match lower.as_str() {
        "" => match bare {
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Micros => 1,
        },
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(format!("`{v}`: expected a time with an optional unit (us, ms, s, m, h, d)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("`{v}`: too large"))
}

/// A 0/1 flag; a bare flag (no value) is 1 where fio allows it.
pub fn boolean(v: &str) -> Result<bool> {
    match v {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(format!("`{v}`: expected 0 or 1")),
    }
}

/// A whole number in `min..=max`.
pub fn int_in(v: &str, min: u64, max: u64) -> Result<u64> {
    let n: u64 = v.parse().map_err(|_| format!("`{v}`: expected a whole number {min}..={max}"))?;
    if !(min..=max).contains(&n) {
        return Err(format!("{n}: out of range: expected {min}..={max}"));
    }
    Ok(n)
}

/// `read[,write[,trim]]` by fio's rule, each item parsed by `one`; `default` for the
/// directions an empty item leaves out.
pub fn per_direction<T: Copy>(v: &str, default: [T; 3], one: impl Fn(&str) -> Result<T>) -> Result<[T; 3]> {
    let items: Vec<&str> = v.split(',').collect();
    if items.len() > 3 {
        return Err(format!("`{v}`: expected at most three values: read,write,trim"));
    }
    let mut out = default;
    for (i, item) in items.iter().enumerate() {
        if !item.is_empty() {
            out[i] = one(item)?;
        }
    }
    // One value sets all three; two set read and write, and trim follows write.
    if items.len() == 1 && !items[0].is_empty() {
        out = [out[0]; 3];
    } else if items.len() == 2 && !items[1].is_empty() {
        out[2] = out[1];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_kb_base_as_fio_does() {
        let k = KbBase::K1024;
        assert_eq!(size("4k", k), Ok(4096));
        assert_eq!(size("4KB", k), Ok(4096));
        assert_eq!(size("4ki", k), Ok(4096));
        assert_eq!(size("4KiB", k), Ok(4000));
        assert_eq!(size("1m", k), Ok(1 << 20));
        assert_eq!(size("512", k), Ok(512));
        assert_eq!(size("4k", KbBase::K1000), Ok(4000));
        assert_eq!(size("4KiB", KbBase::K1000), Ok(4096));
        for bad in ["1.5k", "4q", "", "k", "-4k", "99999999999999999999"] {
            assert!(size(bad, k).is_err(), "{bad} accepted");
        }
        assert_eq!(size_or_percent("50%", k), Ok(SizeOrPercent::Percent(50)));
        assert!(size_or_percent("150%", k).is_err());
    }

    #[test]
    fn times_have_the_options_unit() {
        assert_eq!(time_us("10", TimeUnit::Seconds), Ok(10_000_000));
        assert_eq!(time_us("10", TimeUnit::Micros), Ok(10));
        assert_eq!(time_us("500ms", TimeUnit::Seconds), Ok(500_000));
        assert_eq!(time_us("2m", TimeUnit::Seconds), Ok(120_000_000));
        assert!(time_us("10sec", TimeUnit::Seconds).is_err(), "fio reads 10sec as 10 us: refused");
    }

    #[test]
    fn per_direction_values() {
        let one = |s: &str| size(s, KbBase::K1024);
        let d = [4096; 3];
        assert_eq!(per_direction("8k", d, one), Ok([8192; 3]));
        assert_eq!(per_direction("8k,32k", d, one), Ok([8192, 32768, 32768]));
        assert_eq!(per_direction("8k,32k,", d, one), Ok([8192, 32768, 4096]));
        assert_eq!(per_direction(",8k", d, one), Ok([4096, 8192, 8192]));
        assert!(per_direction("1,2,3,4", d, one).is_err());
        assert_eq!(boolean("1"), Ok(true));
        assert!(boolean("true").is_err());
    }
}
