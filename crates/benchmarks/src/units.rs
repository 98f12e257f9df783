//! Sizes and durations as the command line writes them, and byte counts as reports print
//! them: one parser and one formatter for every command and both worlds.

/// `256 MiB`, `70000 KiB` or `12345 bytes`: the largest binary unit that divides `b`.
pub fn fmt_bytes(b: u64) -> String {
    if b > 0 && b.is_multiple_of(1 << 40) {
        format!("{} TiB", b >> 40)
    } else if b > 0 && b.is_multiple_of(1 << 30) {
        format!("{} GiB", b >> 30)
    } else if b > 0 && b.is_multiple_of(1 << 20) {
        format!("{} MiB", b >> 20)
    } else if b > 0 && b.is_multiple_of(1 << 10) {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} bytes")
    }
}

/// A byte count for a reader, rounded to one decimal in the largest binary unit it
/// reaches (`67.9 GiB`); [`fmt_bytes`] is exact.
pub fn fmt_bytes_approx(b: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 { format!("{b} bytes") } else { format!("{v:.1} {}", UNITS[u]) }
}

/// Parse a size with binary units: a whole number, then optionally `k`, `M`, `G` or `T`
/// (any case, also written `KiB`, `MiB`, …) or `B`: `512M`, `4k`, `4KiB`, `1G`, `4096`.
/// Anything else after the number is an error, and so are `kB`, `MB`, … : the command
/// line's units are binary (as tiobench's MB and sysbench's M are), and `MB` is 10⁶ bytes
/// in profile files, so the two-letter forms are refused rather than guessed.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "bad size `{t}`: expected a whole number with an optional binary unit (k, M, G, T, \
             or KiB, MiB, GiB, TiB), e.g. 512M"
        )
    };
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let unit = unit.trim_start();
    if num.is_empty() {
        return Err(bad());
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1 << 10,
        "m" | "mib" => 1 << 20,
        "g" | "gib" => 1 << 30,
        "t" | "tib" => 1 << 40,
        "kb" | "mb" | "gb" | "tb" => {
            let bin = unit[..1].to_ascii_uppercase();
            return Err(format!(
                "bad size `{t}`: `{unit}` is ambiguous here; the command line's units are binary: write \
                 {num}{bin} or {num}{bin}iB"
            ));
        }
        _ => return Err(bad()),
    };
    let n: u64 = num.parse().map_err(|_| format!("size `{t}` is too large"))?;
    n.checked_mul(mult).ok_or_else(|| format!("size `{t}` is too large"))
}

/// Parse a duration: `30m`, `20s`, `500ms`, `1h`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<iosched_core::Duration, String> {
    let t = s.trim();
    let bad = || {
        format!(
            "bad duration `{t}`: expected seconds or a number with a unit (ms, s, m, h), e.g. 30m, at most 10000000 s"
        )
    };
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    if x < 0.0 {
        return Err(format!("bad duration `{t}`: a duration cannot be negative"));
    }
    if !x.is_finite() || x * mult > 1e7 {
        return Err(bad());
    }
    Ok(iosched_core::Duration::from_secs_f64(x * mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_units() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("8 MiB").unwrap(), 8 << 20);
        assert_eq!(parse_size("4096B").unwrap(), 4096);
        assert!(parse_size("lots").is_err());
        // Nothing after the unit, no fractions, no signs, no decimal units.
        for bad in ["8Mxyzm", "256M-oops-m", "4kk", "8MM", "8MiBB", "1.5M", "-4k", "+4k", "M", "", "4 k b"] {
            assert!(parse_size(bad).is_err(), "{bad} accepted");
        }
        let e = parse_size("1000MB").unwrap_err();
        assert!(e.contains("1000M or 1000MiB"), "{e}");
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
        assert!(parse_size("99999999999999999999").unwrap_err().contains("too large"));
    }

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration("30m").unwrap().as_secs_f64(), 1800.0);
        assert_eq!(parse_duration("500ms").unwrap().as_secs_f64(), 0.5);
        assert_eq!(parse_duration("20").unwrap().as_secs_f64(), 20.0);
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("soon").is_err());
    }
}
