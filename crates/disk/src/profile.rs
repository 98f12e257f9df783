//! Disk profiles as data: a TOML format (documented in `docs/disk-profiles.md`), the
//! built-in profiles embedded from `profiles/`, DiskSim `.parv` files, and the device
//! each one builds.
//!
//! Errors name the file, the line and the field, and say what was expected:
//! `profiles/foo.toml:12: field `rpm`: expected a positive integer, got -5`. Values out
//! of range are rejected, never clamped.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use toml::{Spanned, Value};

use crate::device::{Device, DiskCommand, DiskCompletion};
use crate::hdd::layout::{Layout, Mapping, Sparing, Zone};
use crate::hdd::seek::SeekCurve;
use crate::hdd::{Bus, Cache, FastWrite, Hdd, HddParams, Overheads, Prefetch, QueuePolicy};
use crate::null::{NullDevice, NullParams};
use crate::ssd::{Ssd, SsdParams};
use iosched_core::{Duration, Instant};

/// A profile error: where, which field, what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileError {
    pub file: String,
    /// 1-based; 0 when the error concerns the whole file.
    pub line: u32,
    pub field: Option<String>,
    pub msg: String,
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            // Not about a file (an empty profile name).
        } else if self.line > 0 {
            write!(f, "{}:{}: ", self.file, self.line)?;
        } else {
            write!(f, "{}: ", self.file)?;
        }
        if let Some(k) = &self.field {
            write!(f, "field `{k}`: ")?;
        }
        f.write_str(&self.msg)
    }
}

impl std::error::Error for ProfileError {}

/// What a profile builds.
#[derive(Clone, Debug)]
pub enum ProfileKind {
    Hdd(Arc<HddParams>),
    Ssd(SsdParams),
    Null(NullParams),
}

/// A loaded profile.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// Where it came from: `builtin:NAME` or a path.
    pub origin: String,
    pub kind: ProfileKind,
    /// The largest request the driver accepts (`max_hw_sectors`), if the profile says:
    /// 2.5-era IDE took 255 sectors. `None` leaves the block layer's default.
    pub max_request_sectors: Option<u32>,
    /// The interface the drive sits on, which decides its driver's rule for taking
    /// requests off the queue (`interface`; default `scsi`).
    pub interface: Interface,
}

/// A drive's interface, and so its Linux driver: what the request queue sees of it is
/// when the driver takes a request off the queue's list.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Interface {
    /// ATA through the IDE driver (`drivers/ide/ide-io.c`): the request being served
    /// stays on the queue's list until it completes.
    Ide,
    /// SCSI, and SATA through libata (the SCSI midlayer, `scsi_request_fn`): a request
    /// leaves the list when it is issued.
    #[default]
    Scsi,
    /// NVMe (blk-mq): a request leaves the scheduler when it is issued.
    Nvme,
}

/// `interface` values, in [`Interface`] order.
pub const INTERFACE_NAMES: &[&str] = &["ide", "scsi", "nvme"];

impl Interface {
    pub fn name(self) -> &'static str {
        INTERFACE_NAMES[self as usize]
    }
    /// The interface an `interface` value names.
    pub fn from_name(name: &str) -> Option<Self> {
        [Interface::Ide, Interface::Scsi, Interface::Nvme].into_iter().find(|i| i.name() == name)
    }
}

impl Profile {
    /// Build the device, deterministic in `seed` (for a rotating drive, the spindle's
    /// angle at time zero).
    pub fn build(&self, seed: u64) -> DeviceModel {
        match &self.kind {
            ProfileKind::Hdd(p) => DeviceModel::Hdd(Box::new(Hdd::new(p.clone(), seed))),
            ProfileKind::Ssd(p) => DeviceModel::Ssd(Box::new(Ssd::new(p.clone()))),
            ProfileKind::Null(p) => DeviceModel::Null(NullDevice::new(p.clone())),
        }
    }

    /// The same, boxed behind the trait.
    pub fn build_boxed(&self, seed: u64) -> Box<dyn Device + Send> {
        Box::new(self.build(seed))
    }

    pub fn capacity_sectors(&self) -> u64 {
        match &self.kind {
            ProfileKind::Hdd(p) => p.capacity_sectors(),
            ProfileKind::Ssd(p) => p.capacity_sectors,
            ProfileKind::Null(p) => p.capacity_sectors,
        }
    }

    pub fn queue_depth(&self) -> u32 {
        match &self.kind {
            ProfileKind::Hdd(p) => p.queue_depth,
            ProfileKind::Ssd(p) => p.queue_depth,
            ProfileKind::Null(p) => p.queue_depth,
        }
    }
}

/// Any device model; dispatch is a `match`, not a virtual call.
#[derive(Clone, Debug)]
pub enum DeviceModel {
    Hdd(Box<Hdd>),
    Ssd(Box<Ssd>),
    Null(NullDevice),
}

impl Device for DeviceModel {
    fn queue_depth(&self) -> u32 {
        match self {
            DeviceModel::Hdd(d) => d.queue_depth(),
            DeviceModel::Ssd(d) => d.queue_depth(),
            DeviceModel::Null(d) => d.queue_depth(),
        }
    }
    fn capacity_sectors(&self) -> u64 {
        match self {
            DeviceModel::Hdd(d) => d.capacity_sectors(),
            DeviceModel::Ssd(d) => d.capacity_sectors(),
            DeviceModel::Null(d) => d.capacity_sectors(),
        }
    }
    #[inline]
    fn submit(&mut self, now: Instant, cmd: DiskCommand) {
        match self {
            DeviceModel::Hdd(d) => d.submit(now, cmd),
            DeviceModel::Ssd(d) => d.submit(now, cmd),
            DeviceModel::Null(d) => d.submit(now, cmd),
        }
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            DeviceModel::Hdd(d) => d.poll_timeout(),
            DeviceModel::Ssd(d) => d.poll_timeout(),
            DeviceModel::Null(d) => d.poll_timeout(),
        }
    }
    #[inline]
    fn poll_completion(&mut self, now: Instant) -> Option<DiskCompletion> {
        match self {
            DeviceModel::Hdd(d) => d.poll_completion(now),
            DeviceModel::Ssd(d) => d.poll_completion(now),
            DeviceModel::Null(d) => d.poll_completion(now),
        }
    }
}

// ---- built-ins ---------------------------------------------------------------------------

const BUILTINS: [(&str, &str); 7] = [
    ("ide-2003", include_str!("../../../profiles/ide-2003.toml")),
    ("ide-2003-fast", include_str!("../../../profiles/ide-2003-fast.toml")),
    ("sata-2004-ncq", include_str!("../../../profiles/sata-2004-ncq.toml")),
    ("scsi-15k", include_str!("../../../profiles/scsi-15k.toml")),
    ("sata-ssd", include_str!("../../../profiles/sata-ssd.toml")),
    ("nvme-ssd", include_str!("../../../profiles/nvme-ssd.toml")),
    ("null", include_str!("../../../profiles/null.toml")),
];

/// The built-in profiles: name and one-line description.
pub fn builtin_profiles() -> Vec<(&'static str, String)> {
    BUILTINS
        .iter()
        .map(|(n, src)| {
            let d = parse_profile(src, &format!("profiles/{n}.toml")).map(|p| p.description).unwrap_or_default();
            (*n, d)
        })
        .collect()
}

/// A built-in profile's TOML source.
pub fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Load a built-in profile by name, a TOML profile file by path, or a DiskSim `.parv`
/// file by path.
pub fn load_profile(name_or_path: &str) -> Result<Profile, ProfileError> {
    if name_or_path.trim().is_empty() {
        return Err(ProfileError {
            file: String::new(),
            line: 0,
            field: None,
            msg: format!(
                "an empty profile name: expected a built-in profile ({}) or a profile file",
                BUILTINS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    // Built-in names are matched without regard to case, as scheduler names are
    // (`IDE-2003` as `--sched AS`), unless a file of that name is there.
    let builtin = BUILTINS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name_or_path.trim()));
    if let Some(&(name, src)) = builtin.filter(|(n, _)| *n == name_or_path || !Path::new(name_or_path).exists()) {
        let mut p = parse_profile(src, &format!("profiles/{name}.toml"))?;
        p.origin = format!("builtin:{name}");
        return Ok(p);
    }
    let path = Path::new(name_or_path);
    if path.extension().is_some_and(|e| e == "parv") {
        let params = crate::disksim::load_parv(path).map_err(|e| ProfileError {
            file: e.file.display().to_string(),
            line: e.line,
            field: e.field,
            msg: e.msg,
        })?;
        if params.capacity_sectors() < MIN_CAPACITY_SECTORS {
            return Err(ProfileError {
                file: name_or_path.to_owned(),
                line: 0,
                field: Some("capacity".into()),
                msg: too_small("the model holds", params.capacity_sectors()),
            });
        }
        return Ok(Profile {
            name: params.name.clone(),
            description: format!("DiskSim model {}", path.display()),
            origin: name_or_path.to_owned(),
            kind: ProfileKind::Hdd(Arc::new(params)),
            max_request_sectors: None,
            // DiskSim's validated drives are SCSI disks.
            interface: Interface::Scsi,
        });
    }
    let src = crate::input::read_text(path, crate::input::MAX_PROFILE_BYTES).map_err(|e| ProfileError {
        file: name_or_path.to_owned(),
        line: 0,
        field: None,
        msg: if path.exists() || name_or_path.contains(['/', '.']) {
            format!("cannot read: {e}")
        } else {
            format!(
                "not a built-in profile ({}) and not a readable file: {e}",
                BUILTINS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )
        },
    })?;
    let mut p = parse_profile(&src, name_or_path).map_err(|mut e| {
        // Any name but .parv is read as TOML: when a DiskSim part (.model, .diskspecs) or
        // another file does not even parse, say how it was read.
        if e.field.is_none() && path.extension().is_none_or(|x| x != "toml") {
            e.msg.push_str(" (read as a TOML profile: a profile is a .toml file or a DiskSim .parv)");
        }
        e
    })?;
    p.origin = name_or_path.to_owned();
    Ok(p)
}

// ---- the raw document --------------------------------------------------------------------

type F = Option<Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    name: F,
    description: F,
    kind: F,
    max_request_sectors: F,
    interface: F,
    disk: Option<Spanned<DiskRaw>>,
    controller: Option<Spanned<ControllerRaw>>,
    cache: Option<Spanned<CacheRaw>>,
    ssd: Option<Spanned<SsdRaw>>,
    null: Option<Spanned<NullRaw>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DiskRaw {
    rpm: F,
    surfaces: F,
    cylinders: F,
    zones: F,
    outer_sectors_per_track: F,
    inner_sectors_per_track: F,
    zone: Option<Vec<Spanned<ZoneRaw>>>,
    track_skew: F,
    cylinder_skew: F,
    head_switch: F,
    mapping: F,
    capacity_sectors: F,
    track_to_track_seek: F,
    average_seek: F,
    full_stroke_seek: F,
    seek_table: F,
    write_settle: F,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ZoneRaw {
    first_cylinder: F,
    last_cylinder: F,
    sectors_per_track: F,
    track_skew: F,
    cylinder_skew: F,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ControllerRaw {
    read_miss_overhead: F,
    read_hit_overhead: F,
    write_miss_overhead: F,
    write_hit_overhead: F,
    completion_overhead: F,
    interface_rate: F,
    queue_depth: F,
    scheduling: F,
    aging: F,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CacheRaw {
    size: F,
    segments: F,
    read_ahead: F,
    max_read_ahead: F,
    min_read_ahead: F,
    read_any_free_blocks: F,
    almost_read_hits: F,
    skip_ahead_hits: F,
    read_ahead_on_idle_hit: F,
    zero_latency: F,
    write_cache: F,
    write_segments: F,
    destage_high_water: F,
    destage_extents: F,
    read_hits_on_write_data: F,
    combine_sequential_writes: F,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SsdRaw {
    capacity: F,
    channels: F,
    dies_per_channel: F,
    planes_per_die: F,
    page_size: F,
    read_latency: F,
    program_latency: F,
    channel_rate: F,
    firmware_time: F,
    protocol_latency: F,
    interface_rate: F,
    queue_depth: F,
    write_buffer: F,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NullRaw {
    latency: F,
    queue_depth: F,
    capacity: F,
}

// ---- typed access with errors ------------------------------------------------------------

/// An optional section and where it starts, or `default` (all fields absent) if the file
/// has none: every field then takes its documented default.
fn section<'a, T>(raw: &'a Option<Spanned<T>>, default: &'a T) -> (&'a T, Option<usize>) {
    match raw {
        Some(r) => (r.get_ref(), Some(r.span().start)),
        None => (default, None),
    }
}

/// Section name and offset, for "missing" errors.
type Where<'a> = (&'a str, Option<usize>);

struct Ctx<'a> {
    src: &'a str,
    file: &'a str,
}

impl Ctx<'_> {
    fn line(&self, offset: usize) -> u32 {
        self.src[..offset.min(self.src.len())].bytes().filter(|&b| b == b'\n').count() as u32 + 1
    }
    fn err(&self, f: &Spanned<Value>, field: &str, msg: impl Into<String>) -> ProfileError {
        ProfileError {
            file: self.file.into(),
            line: self.line(f.span().start),
            field: Some(field.into()),
            msg: msg.into(),
        }
    }
    fn missing(&self, section: &str, at: Option<usize>, field: &str, what: &str) -> ProfileError {
        ProfileError {
            file: self.file.into(),
            line: at.map(|o| self.line(o)).unwrap_or(0),
            field: Some(field.into()),
            msg: format!("missing in [{section}]: expected {what}"),
        }
    }
    fn int(
        &self,
        f: &F,
        field: &str,
        lo: i64,
        hi: i64,
        default: Option<i64>,
        (section, at): Where,
    ) -> Result<i64, ProfileError> {
        let Some(v) = f else {
            return default.ok_or_else(|| self.missing(section, at, field, &int_what(lo, hi)));
        };
        match v.get_ref() {
            Value::Integer(i) if *i >= lo && *i <= hi => Ok(*i),
            Value::Integer(i) => Err(self.err(v, field, format!("expected {}, got {i}", int_what(lo, hi)))),
            other => Err(self.err(v, field, format!("expected {}, got {}", int_what(lo, hi), show(other)))),
        }
    }
    fn float(&self, f: &F, field: &str, lo: f64, hi: f64, default: f64) -> Result<f64, ProfileError> {
        let Some(v) = f else { return Ok(default) };
        let x = match v.get_ref() {
            Value::Float(x) => *x,
            Value::Integer(i) => *i as f64,
            other => {
                return Err(self.err(v, field, format!("expected a number in {lo}..={hi}, got {}", show(other))));
            }
        };
        if x >= lo && x <= hi {
            Ok(x)
        } else {
            Err(self.err(v, field, format!("expected a number in {lo}..={hi}, got {x}")))
        }
    }
    fn boolean(&self, f: &F, field: &str, default: bool) -> Result<bool, ProfileError> {
        let Some(v) = f else { return Ok(default) };
        match v.get_ref() {
            Value::Boolean(b) => Ok(*b),
            other => Err(self.err(v, field, format!("expected true or false, got {}", show(other)))),
        }
    }
    fn string<'s>(&self, f: &'s F, field: &str) -> Result<Option<&'s str>, ProfileError> {
        let Some(v) = f else { return Ok(None) };
        match v.get_ref() {
            Value::String(s) => Ok(Some(s)),
            other => Err(self.err(v, field, format!("expected a string, got {}", show(other)))),
        }
    }
    fn choice(&self, f: &F, field: &str, options: &[&str], default: &str) -> Result<String, ProfileError> {
        let Some(v) = f else {
            return Ok(default.into());
        };
        match v.get_ref() {
            Value::String(s) if options.contains(&s.as_str()) => Ok(s.clone()),
            other => Err(self.err(v, field, format!("expected one of {}, got {}", quoted(options), show(other)))),
        }
    }
    /// A duration such as "8.9ms", "250us", "2s", "100ns", within `lo..=hi` ns.
    fn duration(
        &self,
        f: &F,
        field: &str,
        lo: u64,
        hi: u64,
        default: Option<u64>,
        (section, at): Where,
    ) -> Result<u64, ProfileError> {
        let what = format!("a duration such as \"8.9ms\" in {}..={}", show_ns(lo), show_ns(hi));
        let Some(v) = f else {
            return default.ok_or_else(|| self.missing(section, at, field, &what));
        };
        let Value::String(s) = v.get_ref() else {
            return Err(self.err(v, field, format!("expected {what}, got {}", show(v.get_ref()))));
        };
        match parse_duration_ns(s) {
            Some(ns) if ns >= lo && ns <= hi => Ok(ns),
            _ => Err(self.err(v, field, format!("expected {what}, got \"{s}\""))),
        }
    }
    /// A device capacity: a size of 1 MiB..=1 EiB in whole 512-byte sectors, in sectors.
    fn sectors(&self, f: &F, field: &str, default: Option<u64>, w: Where) -> Result<u64, ProfileError> {
        let b = self.size(f, field, 1 << 20, 1 << 60, default, w)?;
        if b % 512 != 0 {
            let v = f.as_ref().expect("a default is whole sectors");
            return Err(self.err(v, field, format!("expected a whole number of 512-byte sectors, got {b} bytes")));
        }
        Ok(b / 512)
    }

    /// A size in bytes such as "2MiB", "128KiB", "512B", "40GB": a whole number of bytes.
    fn size(
        &self,
        f: &F,
        field: &str,
        lo: u64,
        hi: u64,
        default: Option<u64>,
        (section, at): Where,
    ) -> Result<u64, ProfileError> {
        let what = format!("a size such as \"128KiB\" in {lo}..={hi} bytes");
        let Some(v) = f else {
            return default.ok_or_else(|| self.missing(section, at, field, &what));
        };
        let Value::String(s) = v.get_ref() else {
            return Err(self.err(v, field, format!("expected {what}, got {}", show(v.get_ref()))));
        };
        match parse_whole_size(s) {
            Some(b) if b >= lo && b <= hi => Ok(b),
            None if parse_size(s).is_some() => {
                Err(self.err(v, field, format!("expected a whole number of bytes, got \"{s}\"")))
            }
            _ if !s.trim().is_empty() && s.trim().chars().all(|c| c.is_ascii_digit()) => Err(self.err(
                v,
                field,
                format!("expected {what}, got \"{s}\" (a unit is required: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"),
            )),
            _ => Err(self.err(v, field, format!("expected {what}, got \"{s}\""))),
        }
    }
    /// A rate in bytes per second such as "100MB/s" or "3.5GB/s".
    fn rate(&self, f: &F, field: &str, default: Option<u64>, (section, at): Where) -> Result<u64, ProfileError> {
        let what = "a rate such as \"100MB/s\" (1KB/s..=1TB/s)";
        let Some(v) = f else {
            return default.ok_or_else(|| self.missing(section, at, field, what));
        };
        let Value::String(s) = v.get_ref() else {
            return Err(self.err(v, field, format!("expected {what}, got {}", show(v.get_ref()))));
        };
        match s.strip_suffix("/s").and_then(parse_size) {
            Some(b) if (1_000..=1_000_000_000_000).contains(&b) => Ok(b),
            _ => Err(self.err(v, field, format!("expected {what}, got \"{s}\""))),
        }
    }
}

fn int_what(lo: i64, hi: i64) -> String {
    if lo == 1 && hi >= i32::MAX as i64 {
        "a positive integer".into()
    } else if lo == 0 && hi >= i32::MAX as i64 {
        "a non-negative integer".into()
    } else {
        format!("an integer in {lo}..={hi}")
    }
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        Value::Integer(i) => i.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => d.to_string(),
        Value::Array(_) => "an array".into(),
        Value::Table(_) => "a table".into(),
    }
}

fn quoted(o: &[&str]) -> String {
    o.iter().map(|s| format!("\"{s}\"")).collect::<Vec<_>>().join(", ")
}

fn show_ns(ns: u64) -> String {
    iosched_core::time::format_duration(Duration::from_nanos(ns))
}

/// The smallest device any profile may describe: 1 MiB.
pub const MIN_CAPACITY_SECTORS: u64 = 2048;

/// Why a rotating disk whose geometry holds `sectors` is refused (`holds`: "the zones
/// hold", "the model holds"): under [`MIN_CAPACITY_SECTORS`].
fn too_small(holds: &str, sectors: u64) -> String {
    format!("{holds} {sectors} sectors; a disk needs at least 1 MiB ({MIN_CAPACITY_SECTORS} sectors)")
}

/// "8.9ms" → 8_900_000. Units: ns, us (µs), ms, s. Profiles hold measurements: a value
/// is rounded to the nearest nanosecond ("4.1666667ms", "1e2us" are fine); a negative,
/// non-finite or beyond-`u64` one is `None`.
pub fn parse_duration_ns(s: &str) -> Option<u64> {
    let (num, per_unit) = iosched_core::time::split_time_unit(s)?;
    let x: f64 = num.trim().parse().ok()?;
    let ns = (x * per_unit as f64).round();
    // (u64::MAX as f64 rounds up to 2^64, which is already out of range.)
    if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
        return None;
    }
    Some(ns as u64)
}

/// "128KiB" → 131072. Units: B, KB/MB/GB/TB (10³…), KiB/MiB/GiB/TiB (2¹⁰…). A value that
/// is not a whole number of bytes ("1000.5B", "1.0001KiB") is rounded: use
/// [`parse_whole_size`] where a size must be exact.
pub fn parse_size(s: &str) -> Option<u64> {
    parse_size_f64(s).map(|b| b.round() as u64)
}

/// As [`parse_size`], but `None` unless the value is a whole number of bytes, decided
/// exactly for a plain decimal ("8.2GB" is 8,200,000,000 bytes; "1000.5B" is refused).
pub fn parse_whole_size(s: &str) -> Option<u64> {
    let (num, mult) = split_size_unit(s)?;
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int}{frac}");
    if int.is_empty() || digits.len() > 30 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        // An exponent or the like: exact only if the float says so.
        let b = parse_size_f64(s)?;
        return (b.fract() == 0.0).then_some(b as u64);
    }
    let scale = 10u128.checked_pow(frac.len() as u32)?;
    let bytes = digits.parse::<u128>().ok()?.checked_mul(mult as u128)?;
    (bytes % scale == 0).then(|| u64::try_from(bytes / scale).ok()).flatten()
}

/// A size's units and what each multiplies by; the binary ones first, so that "KiB" is
/// not read as "B".
const SIZE_UNITS: [(&str, u64); 9] = [
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("B", 1),
];

/// A size's number (trimmed) and its unit's multiplier.
fn split_size_unit(s: &str) -> Option<(&str, u64)> {
    let s = s.trim();
    SIZE_UNITS.iter().find_map(|&(u, m)| s.strip_suffix(u).map(|n| (n.trim(), m)))
}

fn parse_size_f64(s: &str) -> Option<f64> {
    let (n, m) = split_size_unit(s)?;
    let x: f64 = n.parse().ok()?;
    let b = x * m as f64;
    (x.is_finite() && x >= 0.0 && b < u64::MAX as f64).then_some(b)
}

/// An integer too large (or too small) for 64 bits stops the TOML parser before any
/// field's range is known. Put the largest (or smallest) 64-bit integer in its place and
/// parse again, so the error names the field's range, and the text as written.
fn too_large(src: &str, file: &str, e: &toml::de::Error) -> Option<ProfileError> {
    let msg = e.message();
    let start = e.span().filter(|_| msg.contains("too large") || msg.contains("too small"))?.start;
    // The span marks the literal's first character only.
    let rest = src.get(start..)?;
    let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || "_+-".contains(c))).unwrap_or(rest.len());
    let lit = &rest[..len];
    let stand_in = if lit.starts_with('-') { i64::MIN } else { i64::MAX };
    if lit.is_empty() || lit == stand_in.to_string() {
        return None;
    }
    let again = format!("{}{stand_in}{}", &src[..start], &rest[len..]);
    let mut e2 = parse_profile(&again, file).err()?;
    let got = format!("got {stand_in}");
    e2.msg.contains(&got).then(|| {
        e2.msg = e2.msg.replace(&got, &format!("got {lit}"));
        e2
    })
}

/// Parse a profile from TOML text; `file` names it in errors.
pub fn parse_profile(src: &str, file: &str) -> Result<Profile, ProfileError> {
    let cx = Ctx { src, file };
    let doc: Doc = match toml::from_str(src) {
        Ok(doc) => doc,
        Err(e) => {
            if let Some(e) = too_large(src, file, &e) {
                return Err(e);
            }
            let mut line = e.span().map(|s| cx.line(s.start)).unwrap_or(0);
            // An array left open (`surfaces = [4`) is reported where the parser gave up, at
            // the next key: name the line that opened it instead.
            if e.message().contains("array") && line > 1 {
                let lines: Vec<&str> = src.lines().collect();
                let open = (0..(line as usize).saturating_sub(1).min(lines.len())).rev().take(64).find(|&i| {
                    lines[i].split_once('=').is_some_and(|(_, v)| v.trim_start().starts_with('[') && !v.contains(']'))
                });
                if let Some(i) = open {
                    line = i as u32 + 1;
                }
            }
            // Name the key on that line when there is one.
            let field = src.lines().nth((line as usize).wrapping_sub(1)).and_then(|l| {
                l.split_once('=').map(|(k, _)| k.trim().to_owned()).filter(|k| !k.is_empty() && !k.starts_with('['))
            });
            return Err(ProfileError { file: file.into(), line, field, msg: e.message().trim().to_owned() });
        }
    };
    let name =
        cx.string(&doc.name, "name")?.ok_or_else(|| cx.missing("top level", None, "name", "a string"))?.to_owned();
    if name.trim().is_empty() {
        return Err(cx.err(doc.name.as_ref().expect("present"), "name", "expected a non-empty name"));
    }
    if name.chars().any(char::is_control) {
        return Err(cx.err(doc.name.as_ref().expect("present"), "name", "expected a name without control characters"));
    }
    let description = cx.string(&doc.description, "description")?.unwrap_or("").to_owned();
    if description.chars().any(char::is_control) {
        return Err(cx.err(
            doc.description.as_ref().expect("present"),
            "description",
            "expected one line without control characters",
        ));
    }
    let kind = cx.choice(&doc.kind, "kind", &["hdd", "ssd", "null"], "hdd")?;
    // A section of another kind would be read by nothing: refuse it rather than ignore it.
    let sections: [(&str, Option<std::ops::Range<usize>>, &str); 5] = [
        ("disk", doc.disk.as_ref().map(|x| x.span()), "hdd"),
        ("controller", doc.controller.as_ref().map(|x| x.span()), "hdd"),
        ("cache", doc.cache.as_ref().map(|x| x.span()), "hdd"),
        ("ssd", doc.ssd.as_ref().map(|x| x.span()), "ssd"),
        ("null", doc.null.as_ref().map(|x| x.span()), "null"),
    ];
    for (sec, span, owner) in sections {
        if let Some(span) = span
            && owner != kind
        {
            return Err(ProfileError {
                file: file.into(),
                line: cx.line(span.start),
                field: Some(sec.into()),
                msg: format!(
                    "a [{sec}] section belongs to kind = \"{owner}\" profiles; this one is kind = \"{kind}\" \
                     (remove the section or change the kind)"
                ),
            });
        }
    }
    let kind = match kind.as_str() {
        "hdd" => ProfileKind::Hdd(Arc::new(hdd(&cx, &doc, &name)?)),
        "ssd" => ProfileKind::Ssd(ssd(&cx, &doc)?),
        _ => ProfileKind::Null(null(&cx, &doc)?),
    };
    let max_request_sectors = match &doc.max_request_sectors {
        None => None,
        f => Some(cx.int(f, "max_request_sectors", 8, 65535, None, ("top level", None))? as u32),
    };
    let interface = Interface::from_name(&cx.choice(&doc.interface, "interface", INTERFACE_NAMES, "scsi")?)
        .expect("choice() admits only INTERFACE_NAMES");
    Ok(Profile { name, description, origin: file.into(), kind, max_request_sectors, interface })
}

fn null(cx: &Ctx, doc: &Doc) -> Result<NullParams, ProfileError> {
    let d = NullParams::default();
    let Some(n) = &doc.null else { return Ok(d) };
    let at = Some(n.span().start);
    let n = n.get_ref();
    Ok(NullParams {
        latency: Duration::from_nanos(cx.duration(
            &n.latency,
            "latency",
            // At least a nanosecond: a device that takes no time has no rate to report.
            1,
            10_000_000_000,
            Some(d.latency.as_nanos() as u64),
            ("null", at),
        )?),
        queue_depth: cx.int(&n.queue_depth, "queue_depth", 1, 65_535, Some(d.queue_depth as i64), ("null", at))? as u32,
        // At least 1 MiB, as for an SSD: `disk info` measures with 128 KiB commands.
        capacity_sectors: cx.sectors(&n.capacity, "capacity", Some(d.capacity_sectors * 512), ("null", at))?,
    })
}

fn ssd(cx: &Ctx, doc: &Doc) -> Result<SsdParams, ProfileError> {
    let Some(s) = &doc.ssd else {
        return Err(ProfileError {
            file: cx.file.into(),
            line: 0,
            field: Some("ssd".into()),
            msg: "kind = \"ssd\" needs an [ssd] section".into(),
        });
    };
    let at = Some(s.span().start);
    let s = s.get_ref();
    let sec = "ssd";
    let page = cx.size(&s.page_size, "page_size", 512, 1 << 20, Some(16384), (sec, at))?;
    if page % 512 != 0 {
        return Err(cx.err(
            s.page_size.as_ref().unwrap(),
            "page_size",
            format!("expected a multiple of 512 bytes, got {page}"),
        ));
    }
    Ok(SsdParams {
        capacity_sectors: cx.sectors(&s.capacity, "capacity", None, (sec, at))?,
        channels: cx.int(&s.channels, "channels", 1, 1024, None, (sec, at))? as u32,
        dies_per_channel: cx.int(&s.dies_per_channel, "dies_per_channel", 1, 1024, None, (sec, at))? as u32,
        planes_per_die: cx.int(&s.planes_per_die, "planes_per_die", 1, 16, Some(1), (sec, at))? as u32,
        page_bytes: page as u32,
        t_read_ns: cx.duration(&s.read_latency, "read_latency", 1_000, 100_000_000, None, (sec, at))?,
        t_program_ns: cx.duration(&s.program_latency, "program_latency", 1_000, 100_000_000, None, (sec, at))?,
        channel_bytes_per_s: cx.rate(&s.channel_rate, "channel_rate", None, (sec, at))?,
        firmware_ns: cx.duration(&s.firmware_time, "firmware_time", 0, 10_000_000, Some(2_000), (sec, at))?,
        protocol_ns: cx.duration(&s.protocol_latency, "protocol_latency", 0, 10_000_000, Some(0), (sec, at))?,
        link_bytes_per_s: cx.rate(&s.interface_rate, "interface_rate", None, (sec, at))?,
        queue_depth: cx.int(&s.queue_depth, "queue_depth", 1, 65_535, Some(32), (sec, at))? as u32,
        write_buffer_bytes: cx.size(&s.write_buffer, "write_buffer", 0, 1 << 40, Some(64 << 20), (sec, at))?,
    })
}

fn hdd(cx: &Ctx, doc: &Doc, name: &str) -> Result<HddParams, ProfileError> {
    let Some(dsk) = &doc.disk else {
        return Err(ProfileError {
            file: cx.file.into(),
            line: 0,
            field: Some("disk".into()),
            msg: "kind = \"hdd\" needs a [disk] section".into(),
        });
    };
    let at = Some(dsk.span().start);
    let d = dsk.get_ref();
    let sec = "disk";
    let rpm = cx.int(&d.rpm, "rpm", 1, 30_000, None, (sec, at))? as u32;
    let surfaces = cx.int(&d.surfaces, "surfaces", 1, 64, None, (sec, at))? as u32;
    let head_switch = cx.duration(&d.head_switch, "head_switch", 0, 100_000_000, Some(1_000_000), (sec, at))?;
    let write_settle = cx.duration(&d.write_settle, "write_settle", 0, 100_000_000, Some(0), (sec, at))?;
    let mapping = match cx.choice(&d.mapping, "mapping", &["conventional", "serpentine"], "conventional")?.as_str() {
        "serpentine" => Mapping::Serpentine,
        _ => Mapping::Conventional,
    };
    // Zones: an explicit list, or a linear ramp of sectors per track over equal bands of
    // cylinders.
    struct Z {
        first: u32,
        last: u32,
        spt: u32,
        tskew: Option<u32>,
        cskew: Option<u32>,
    }
    let mut zs: Vec<Z> = Vec::new();
    if let Some(list) = &d.zone {
        if d.zones.is_some() || d.outer_sectors_per_track.is_some() || d.inner_sectors_per_track.is_some() {
            let f =
                d.zones.as_ref().or(d.outer_sectors_per_track.as_ref()).or(d.inner_sectors_per_track.as_ref()).unwrap();
            return Err(cx.err(
                f,
                "zones",
                "give either [[disk.zone]] tables or zones/outer_sectors_per_track/inner_sectors_per_track, not both",
            ));
        }
        let mut next = 0u32;
        for z in list {
            let zat = Some(z.span().start);
            let z = z.get_ref();
            let first = cx.int(&z.first_cylinder, "first_cylinder", 0, 10_000_000, None, ("disk.zone", zat))? as u32;
            let last = cx.int(&z.last_cylinder, "last_cylinder", 0, 10_000_000, None, ("disk.zone", zat))? as u32;
            if first != next {
                return Err(cx.err(
                    z.first_cylinder.as_ref().unwrap(),
                    "first_cylinder",
                    format!("expected {next} (zones must be contiguous from cylinder 0), got {first}"),
                ));
            }
            if last < first {
                return Err(cx.err(
                    z.last_cylinder.as_ref().unwrap(),
                    "last_cylinder",
                    format!("expected at least first_cylinder ({first}), got {last}"),
                ));
            }
            next = last + 1;
            zs.push(Z {
                first,
                last,
                spt: cx.int(&z.sectors_per_track, "sectors_per_track", 1, 100_000, None, ("disk.zone", zat))? as u32,
                tskew: z
                    .track_skew
                    .as_ref()
                    .map(|_| cx.int(&z.track_skew, "track_skew", 0, 100_000, None, ("disk.zone", zat)))
                    .transpose()?
                    .map(|v| v as u32),
                cskew: z
                    .cylinder_skew
                    .as_ref()
                    .map(|_| cx.int(&z.cylinder_skew, "cylinder_skew", 0, 100_000, None, ("disk.zone", zat)))
                    .transpose()?
                    .map(|v| v as u32),
            });
        }
        if zs.is_empty() {
            return Err(ProfileError {
                file: cx.file.into(),
                line: cx.line(dsk.span().start),
                field: Some("zone".into()),
                msg: "expected at least one [[disk.zone]]".into(),
            });
        }
    } else {
        let cyls = cx.int(&d.cylinders, "cylinders", 1, 10_000_000, None, (sec, at))? as u32;
        let nz = cx.int(&d.zones, "zones", 1, 1000, Some(16), (sec, at))? as u32;
        if nz > cyls {
            return Err(cx.err(
                d.zones.as_ref().unwrap(),
                "zones",
                format!("expected at most one zone per cylinder ({cyls}), got {nz}"),
            ));
        }
        let outer = cx.int(&d.outer_sectors_per_track, "outer_sectors_per_track", 1, 100_000, None, (sec, at))?;
        let inner =
            cx.int(&d.inner_sectors_per_track, "inner_sectors_per_track", 1, 100_000, Some(outer), (sec, at))?;
        if inner > outer {
            return Err(cx.err(
                d.inner_sectors_per_track.as_ref().unwrap(),
                "inner_sectors_per_track",
                format!("expected at most outer_sectors_per_track ({outer}), got {inner}"),
            ));
        }
        for i in 0..nz {
            let first = (cyls as u64 * i as u64 / nz as u64) as u32;
            let last = (cyls as u64 * (i as u64 + 1) / nz as u64) as u32 - 1;
            let spt = if nz == 1 {
                outer
            } else {
                outer - ((outer - inner) * i as i64 + (nz as i64 - 1) / 2) / (nz as i64 - 1)
            };
            zs.push(Z { first, last, spt: spt as u32, tskew: None, cskew: None });
        }
    }
    if let (Some(_), Some(v)) = (&d.zone, &d.cylinders) {
        return Err(cx.err(v, "cylinders", "not used with [[disk.zone]] tables (the zones give the cylinders)"));
    }
    let cylinders = zs.last().unwrap().last + 1;
    // Seek curve.
    let seek = if let Some(t) = &d.seek_table {
        if d.average_seek.is_some() || d.full_stroke_seek.is_some() || d.track_to_track_seek.is_some() {
            return Err(cx.err(t, "seek_table", "give either seek_table or the three datasheet seek times, not both"));
        }
        let Value::Array(rows) = t.get_ref() else {
            return Err(cx.err(
                t,
                "seek_table",
                format!("expected an array of [distance, \"time\"] pairs, got {}", show(t.get_ref())),
            ));
        };
        let mut tab = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            let bad = || {
                cx.err(
                    t,
                    "seek_table",
                    format!(
                        "entry {}: expected [distance, \"time\"] with increasing distances >= 1, got {}",
                        i + 1,
                        show(r)
                    ),
                )
            };
            let Value::Array(pair) = r else {
                return Err(bad());
            };
            let (Some(Value::Integer(dist)), Some(Value::String(ts))) = (pair.first(), pair.get(1)) else {
                return Err(bad());
            };
            let ns = parse_duration_ns(ts).ok_or_else(bad)?;
            if pair.len() != 2 || *dist < 1 || tab.last().is_some_and(|&(pd, _)| pd as i64 >= *dist) {
                return Err(bad());
            }
            tab.push((*dist as u32, ns));
        }
        if tab.len() < 2 {
            return Err(cx.err(t, "seek_table", "expected at least two points"));
        }
        crate::hdd::seek::check_table(&tab, cylinders).map_err(|e| cx.err(t, "seek_table", e))?;
        SeekCurve::Table(tab)
    } else {
        let t1 = cx.duration(&d.track_to_track_seek, "track_to_track_seek", 1_000, 100_000_000, None, (sec, at))?;
        let avg = cx.duration(&d.average_seek, "average_seek", 1_000, 100_000_000, None, (sec, at))?;
        let full = cx.duration(&d.full_stroke_seek, "full_stroke_seek", 1_000, 200_000_000, None, (sec, at))?;
        if !(t1 < avg && avg < full) {
            return Err(cx.err(
                d.average_seek.as_ref().unwrap(),
                "average_seek",
                format!(
                    "expected track_to_track_seek < average_seek < full_stroke_seek, got {} / {} / {}",
                    show_ns(t1),
                    show_ns(avg),
                    show_ns(full)
                ),
            ));
        }
        SeekCurve::fit_sqrt_linear(t1 as f64, avg as f64, full as f64, cylinders).ok_or_else(|| {
            cx.err(d.average_seek.as_ref().unwrap(), "average_seek", format!("no √→linear seek curve through {} / {} / {} over {cylinders} cylinders: the average must lie between the straight line and the √ curve", show_ns(t1), show_ns(avg), show_ns(full)))
        })?
    };
    // Skews: whole sectors, long enough for the head switch (track) and for the longer of
    // a one-cylinder seek and the head switch (cylinder).
    let period = 60e9 / rpm as f64;
    let auto_t = |spt: u32, t: u64| ((t as f64) * spt as f64 / period).ceil() as u32;
    let skew = |f: &F, field: &str| -> Result<Option<u32>, ProfileError> {
        match f {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                Value::String(s) if s == "auto" => Ok(None),
                Value::Integer(i) if (0..=100_000).contains(i) => Ok(Some(*i as u32)),
                other => Err(cx.err(
                    v,
                    field,
                    format!("expected \"auto\" or a number of sectors in 0..=100000, got {}", show(other)),
                )),
            },
        }
    };
    let tskew_default = skew(&d.track_skew, "track_skew")?;
    let cskew_default = skew(&d.cylinder_skew, "cylinder_skew")?;
    // A cylinder switch is a one-cylinder seek (plus the write settle when writing).
    let cyl_switch = (seek.time_ns(1) + write_settle).max(head_switch);
    let zones: Vec<Zone> = zs
        .iter()
        .map(|z| Zone {
            first_cylinder: z.first,
            last_cylinder: z.last,
            sectors_per_track: z.spt,
            first_block_offset: 0,
            empty_space_at_front: 0,
            track_skew: z.tskew.or(tskew_default).unwrap_or_else(|| auto_t(z.spt, head_switch)) % z.spt,
            cylinder_skew: z.cskew.or(cskew_default).unwrap_or_else(|| auto_t(z.spt, cyl_switch)) % z.spt,
            spares: 0,
            slips: vec![],
        })
        .collect();
    let layout = Layout::new(surfaces, cylinders, mapping, Sparing::None, 1, zones).map_err(|e| ProfileError {
        file: cx.file.into(),
        line: cx.line(dsk.span().start),
        field: Some("zones".into()),
        msg: e.0,
    })?;
    // Like an SSD or a null device, at least 1 MiB (`disk info` measures with 128 KiB
    // commands).
    if layout.capacity() < MIN_CAPACITY_SECTORS {
        return Err(ProfileError {
            file: cx.file.into(),
            line: cx.line(dsk.span().start),
            field: Some("cylinders".into()),
            msg: too_small("the zones hold", layout.capacity()),
        });
    }
    if let Some(c) = &d.capacity_sectors {
        let want = cx.int(&d.capacity_sectors, "capacity_sectors", 1, i64::MAX, None, (sec, at))? as u64;
        if want != layout.capacity() {
            return Err(cx.err(
                c,
                "capacity_sectors",
                format!("the zones hold {} sectors, not {want}", layout.capacity()),
            ));
        }
    }
    // Controller.
    let no_controller = ControllerRaw::default();
    let (c, ctl_at) = section(&doc.controller, &no_controller);
    let sec = "controller";
    let read_miss =
        cx.duration(&c.read_miss_overhead, "read_miss_overhead", 0, 100_000_000, Some(300_000), (sec, ctl_at))?;
    let read_hit =
        cx.duration(&c.read_hit_overhead, "read_hit_overhead", 0, 100_000_000, Some(50_000), (sec, ctl_at))?;
    let write_miss =
        cx.duration(&c.write_miss_overhead, "write_miss_overhead", 0, 100_000_000, Some(read_miss), (sec, ctl_at))?;
    let write_hit =
        cx.duration(&c.write_hit_overhead, "write_hit_overhead", 0, 100_000_000, Some(read_hit), (sec, ctl_at))?;
    let complete =
        cx.duration(&c.completion_overhead, "completion_overhead", 0, 100_000_000, Some(0), (sec, ctl_at))?;
    let rate = cx.rate(&c.interface_rate, "interface_rate", None, (sec, ctl_at))?;
    let block_ns = (512u128 * 1_000_000_000u128).div_ceil(rate as u128) as u64;
    let queue_depth = cx.int(&c.queue_depth, "queue_depth", 1, 256, Some(1), (sec, ctl_at))? as u32;
    let queue_policy = match cx.choice(&c.scheduling, "scheduling", &["fcfs", "sptf"], "fcfs")?.as_str() {
        "sptf" => QueuePolicy::Sptf {
            aging_ns: cx.duration(&c.aging, "aging", 1_000_000, 60_000_000_000, Some(2_000_000_000), (sec, ctl_at))?,
        },
        _ => {
            if let Some(a) = &c.aging {
                return Err(cx.err(a, "aging", "only used with scheduling = \"sptf\" (this controller is fcfs)"));
            }
            QueuePolicy::Fcfs
        }
    };
    let mut overheads = Overheads::uniform(read_miss, read_hit);
    overheads.write_miss_after_read = write_miss;
    overheads.write_miss_after_write = write_miss;
    overheads.write_hit_after_read = write_hit;
    overheads.write_hit_after_write = write_hit;
    overheads.read_complete = complete;
    overheads.write_complete = complete;
    // Cache.
    let sec = "cache";
    let no_cache = CacheRaw::default();
    let (k, cache_at) = section(&doc.cache, &no_cache);
    let size = cx.size(&k.size, "size", 1024, 1 << 36, Some(2 << 20), (sec, cache_at))?;
    let segments = cx.int(&k.segments, "segments", 1, 4096, Some(16), (sec, cache_at))? as u32;
    let seg_blocks = size / 512 / segments as u64;
    if seg_blocks == 0 {
        return Err(cx.err(
            k.segments.as_ref().unwrap(),
            "segments",
            format!("expected at most {} segments for a {size}-byte cache", size / 512),
        ));
    }
    let prefetch = match cx
        .choice(&k.read_ahead, "read_ahead", &["none", "track", "cylinder", "segment", "one-track"], "segment")?
        .as_str()
    {
        "none" => Prefetch::None,
        "track" => Prefetch::TrackEnd,
        "cylinder" => Prefetch::CylinderEnd,
        "one-track" => Prefetch::OneTrackAhead,
        _ => Prefetch::SegmentFull,
    };
    let max_ra =
        cx.size(&k.max_read_ahead, "max_read_ahead", 0, seg_blocks * 512, Some(seg_blocks * 512), (sec, cache_at))?
            / 512;
    let min_ra = cx.size(&k.min_read_ahead, "min_read_ahead", 0, max_ra * 512, Some(0), (sec, cache_at))? / 512;
    let write_cache = cx.boolean(&k.write_cache, "write_cache", true)?;
    let write_segments = cx.int(
        &k.write_segments,
        "write_segments",
        1,
        segments as i64,
        Some((segments as i64 / 2).max(1)),
        (sec, cache_at),
    )? as u32;
    let cache = Cache {
        enabled: true,
        segments,
        segment_blocks: seg_blocks as u32,
        write_segments,
        separate_write_segment: false,
        read_water: 0.0,
        write_water: 0.0,
        water_by_request: true,
        prefetch,
        min_read_ahead: min_ra as u32,
        max_read_ahead: max_ra as u32,
        read_ahead_on_idle_hit: cx.boolean(&k.read_ahead_on_idle_hit, "read_ahead_on_idle_hit", false)?,
        read_any_free_blocks: cx.boolean(&k.read_any_free_blocks, "read_any_free_blocks", false)?,
        almost_read_hits: cx.boolean(&k.almost_read_hits, "almost_read_hits", true)?,
        skip_ahead_hits: cx.size(
            &k.skip_ahead_hits,
            "skip_ahead_hits",
            0,
            seg_blocks * 512,
            Some(0),
            (sec, cache_at),
        )? / 512,
        fast_write: if write_cache { FastWrite::Full } else { FastWrite::Off },
        immediate_read: cx.boolean(&k.zero_latency, "zero_latency", false)?,
        immediate_write: cx.boolean(&k.zero_latency, "zero_latency", false)?,
        combine_seq_writes: cx.boolean(&k.combine_sequential_writes, "combine_sequential_writes", true)?,
        stop_prefetch_in_sector: false,
        write_hit_stop_prefetch: true,
        read_hits_on_write_data: cx.boolean(&k.read_hits_on_write_data, "read_hits_on_write_data", true)?,
        immed_transfer_partial_hit: true,
        destage_high_water: cx.float(&k.destage_high_water, "destage_high_water", 0.0, 1.0, 0.75)?,
        destage_extents: cx.boolean(&k.destage_extents, "destage_extents", true)?,
    };
    Ok(HddParams {
        name: name.to_owned(),
        layout,
        rpm,
        seek,
        head_switch_ns: head_switch,
        write_settle_ns: write_settle as i64,
        write_settle_on_head_switch: false,
        min_seek_delay_ns: 0,
        overheads,
        bus: Bus {
            read_block_ns: block_ns,
            write_block_ns: block_ns,
            hold_read: true,
            hold_write: true,
            never_disconnect: false,
        },
        cache,
        queue_depth,
        queue_policy,
        capacity_limit: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("8.9ms"), Some(8_900_000));
        assert_eq!(parse_duration_ns("250us"), Some(250_000));
        assert_eq!(parse_duration_ns("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("5"), None);
        // Measurements round to the nearest ns; out of range is refused, never clamped.
        assert_eq!(parse_duration_ns("4.1666667ms"), Some(4_166_667));
        assert_eq!(parse_duration_ns("1e2us"), Some(100_000));
        assert_eq!(parse_duration_ns("99999999999s"), None);
        assert_eq!(parse_duration_ns("-1ms"), None);
        assert_eq!(parse_duration_ns("NaNms"), None);
        assert_eq!(parse_size("128KiB"), Some(131072));
        assert_eq!(parse_size("2MB"), Some(2_000_000));
        assert_eq!(parse_size("x"), None);
        // Whole bytes, decided exactly for decimals.
        assert_eq!(parse_whole_size("8.2GB"), Some(8_200_000_000));
        assert_eq!(parse_whole_size("4.1GB"), Some(4_100_000_000));
        assert_eq!(parse_whole_size("16.1KB"), Some(16_100));
        assert_eq!(parse_whole_size("1.5KiB"), Some(1536));
        assert_eq!(parse_whole_size("1000.5B"), None);
        assert_eq!(parse_whole_size("1.0001KiB"), None);
        assert_eq!(parse_whole_size("1e3B"), Some(1000));
    }

    #[test]
    fn builtins_parse() {
        for (n, src) in BUILTINS {
            parse_profile(src, n).unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(builtin_profiles().len(), BUILTINS.len());
    }
}
