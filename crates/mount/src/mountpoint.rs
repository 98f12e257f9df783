//! The mount point's rules, and finding mounts in `/proc/self/mountinfo`.
//!
//! A mount point must be an existing, empty directory that is not already a mount point:
//! mounting over a non-empty directory hides its files, and over a mount stacks a second
//! file system on the first. BACKING must be a directory, and neither may contain the
//! other (a mount inside BACKING would list itself; BACKING inside the mount would be
//! hidden by it).

use std::path::{Path, PathBuf};

/// Our mounts' FUSE subtype (shown as `fuse.iosched` where the mount goes through
/// fusermount3; a mount made directly by root shows plain `fuse`).
pub const SUBTYPE: &str = "iosched";
/// Our mounts' source, before BACKING's path: `iosched:/srv/backing`, as `df` and
/// `/proc/self/mountinfo` show it. It is how `iosched umount` knows a mount is ours.
pub const SOURCE_PREFIX: &str = "iosched:";

/// One line of `/proc/self/mountinfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    pub path: PathBuf,
    pub fstype: String,
    pub source: String,
    /// The file system's device, `major:minor` (a FUSE mount's backing-device-info in
    /// `/sys/class/bdi/` has this name).
    pub dev: String,
}

impl MountEntry {
    /// A FUSE mount made by `iosched mount`.
    pub fn is_ours(&self) -> bool {
        (self.fstype == "fuse" || self.fstype == format!("fuse.{SUBTYPE}")) && self.source.starts_with(SOURCE_PREFIX)
    }
}

/// Canonical (BACKING, MOUNTPOINT), or why they cannot be used.
pub fn check(backing: &Path, mountpoint: &Path) -> Result<(PathBuf, PathBuf), String> {
    let canon = |p: &Path, what: &str| std::fs::canonicalize(p).map_err(|e| format!("{what} {}: {e}", p.display()));
    let b = canon(backing, "BACKING")?;
    if !b.is_dir() {
        return Err(format!("BACKING {}: is not a directory", backing.display()));
    }
    let m = canon(mountpoint, "MOUNTPOINT")?;
    if !m.is_dir() {
        return Err(format!("MOUNTPOINT {}: is not a directory", mountpoint.display()));
    }
    if let Some(e) = mounts()?.into_iter().find(|e| e.path == m) {
        return Err(format!(
            "MOUNTPOINT {}: is already a mount point ({} from {})",
            mountpoint.display(),
            e.fstype,
            e.source
        ));
    }
    let mut entries = std::fs::read_dir(&m).map_err(|e| format!("MOUNTPOINT {}: {e}", mountpoint.display()))?;
    if entries.next().is_some() {
        return Err(format!("MOUNTPOINT {}: is not empty (mounting would hide its files)", mountpoint.display()));
    }
    if m.starts_with(&b) || b.starts_with(&m) {
        return Err(format!(
            "MOUNTPOINT {} and BACKING {}: one lies inside the other",
            mountpoint.display(),
            backing.display()
        ));
    }
    Ok((b, m))
}

/// The mount at `mountpoint` (canonicalised if it can be; a disconnected FUSE mount
/// cannot be stat'ed, so the path is also matched as given, made absolute).
pub fn find(mountpoint: &Path) -> Result<MountEntry, String> {
    let abs = std::path::absolute(mountpoint).map_err(|e| format!("{}: {e}", mountpoint.display()))?;
    let canon = std::fs::canonicalize(mountpoint).unwrap_or_else(|_| abs.clone());
    mounts()?
        .into_iter()
        .rev()
        .find(|e| e.path == canon || e.path == abs)
        .ok_or_else(|| format!("{}: is not a mount point", mountpoint.display()))
}

/// Every mount of this process's namespace.
pub fn mounts() -> Result<Vec<MountEntry>, String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    Ok(parse(&text))
}

/// Parse mountinfo: `id parent dev root MOUNTPOINT options [tags…] - FSTYPE SOURCE super`.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let dev = left.split(' ').nth(2)?.to_string();
            let path = left.split(' ').nth(4)?;
            let mut r = right.split(' ');
            let fstype = r.next()?;
            let source = r.next().unwrap_or("");
            Some(MountEntry {
                path: PathBuf::from(unescape(path)),
                fstype: unescape(fstype),
                source: unescape(source),
                dev,
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') as u32 * 64 + (b[i + 2] - b'0') as u32 * 8 + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_path_type_and_source_unescaped() {
        let t = "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - fuse.iosched /srv/x rw,user_id=0\n\
                 1 0 8:1 / / rw - ext4 /dev/sda1 rw\n";
        let m = parse(t);
        assert_eq!(
            m[0],
            MountEntry {
                path: "/mnt/a b".into(),
                fstype: "fuse.iosched".into(),
                source: "/srv/x".into(),
                dev: "98:0".into(),
            }
        );
        assert_eq!(m[1].fstype, "ext4");
    }

    #[test]
    fn a_non_empty_or_nested_mount_point_is_refused() {
        let d = std::env::temp_dir().join(format!("iosched-mountpoint-{}", std::process::id()));
        let (b, m) = (d.join("backing"), d.join("mnt"));
        std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir_all(&m).unwrap();
        assert!(check(&b, &m).is_ok());
        std::fs::write(m.join("x"), b"x").unwrap();
        assert!(check(&b, &m).unwrap_err().contains("is not empty"));
        std::fs::remove_file(m.join("x")).unwrap();
        std::fs::create_dir(b.join("inner")).unwrap();
        assert!(check(&b, &b.join("inner")).unwrap_err().contains("inside"));
        assert!(check(&b.join("nope"), &m).unwrap_err().contains("BACKING"));
        assert!(check(&b, Path::new("/")).unwrap_err().contains("already a mount point"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
