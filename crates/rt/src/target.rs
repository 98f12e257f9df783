//! Opening a target safely: never overwrite what we did not create.
//!
//! Rules:
//! - A path that does not exist is created (O_EXCL), space is reserved with `fallocate`
//!   (so ENOSPC shows at creation, not mid-run) and a marker block is written.
//! - An existing regular file is used if it is empty or starts with our marker block;
//!   any other non-empty file is refused unless `force`.
//! - A block device a load will write is refused unless `force` if it has partitions,
//!   carries a filesystem / partition-table / swap / RAID / LVM signature (see
//!   [`SIGNATURES`] and [`tail_signature`]; looked for at its start, at 1 MiB and at its
//!   end, whether or not our marker is there, since a tool may write one beside it), or,
//!   without our marker, is not blank: zeros in its first 2 MiB, its last MiB and
//!   64 blocks sampled between. A device we did not mark is someone's data.
//! - A mounted or held device (it or one of its partitions in `/proc/self/mountinfo`,
//!   holders in sysfs) is refused, and `force` cannot override that: the `O_EXCL` open
//!   would fail with EBUSY anyway.
//! - A load that only reads (`writes == false`) opens its target read-only and writes
//!   nothing to it — no marker, no layout, no growth, `force` or not — and so needs none of
//!   the checks above; a file we did not create is read as it is, from byte 0.
//! - A file's reservation is checked against its filesystem's free space before anything
//!   is written (see [`open`]); gaps between the parts a load uses take no space.
//!
//! The marker is the target's first 4 KiB; the data area starts right after it, so
//! sector 0 of the queue is byte 4096 of the target.

use crate::error::Error;
use crate::runtime::{Notices, Options};
use crate::sys::{self, ALIGN, IoBuf};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Size of the marker block; the data area starts here.
pub const MARKER_LEN: u64 = ALIGN as u64;
const MAGIC: &[u8; 24] = b"iosched-rt target v1\n\0\0\0";

/// What kind of thing a target is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    File,
    BlockDevice,
    /// No file of its own: each unit names its place (see `Target::open_store`).
    Store,
}

/// An opened target.
#[derive(Debug)]
pub struct TargetFile {
    pub path: PathBuf,
    pub file: Arc<File>,
    pub kind: TargetKind,
    /// Byte offset of the data area (after the marker).
    pub data_offset: u64,
    /// Bytes in the data area.
    pub data_len: u64,
    /// We created the file in this call.
    pub created: bool,
    /// The data area from this offset on was reserved in this call and never written: a
    /// filesystem reads such space back as zeros without touching the device.
    pub unwritten_from: Option<u64>,
}

/// Known signatures: (byte offset, bytes, what it is).
pub const SIGNATURES: &[(u64, &[u8], &str)] = &[
    (510, b"\x55\xaa", "a DOS/MBR partition table or boot sector"),
    (512, b"EFI PART", "a GPT partition table"),
    (1080, b"\x53\xef", "an ext2/ext3/ext4 filesystem"),
    (0, b"XFSB", "an XFS filesystem"),
    (65600, b"_BHRfS_M", "a btrfs filesystem"),
    (4086, b"SWAPSPACE2", "a swap area"),
    (4086, b"SWAP-SPACE", "a swap area"),
    (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
    // LVM2 may put its label in any of the first four sectors.
    (0, b"LABELONE", "an LVM physical volume"),
    (512, b"LABELONE", "an LVM physical volume"),
    (1024, b"LABELONE", "an LVM physical volume"),
    (1536, b"LABELONE", "an LVM physical volume"),
    (32769, b"CD001", "an ISO 9660 filesystem"),
    (0, b"hsqs", "a squashfs filesystem"),
    (3, b"NTFS    ", "an NTFS filesystem"),
    (1024, b"\x10\x20\xf5\xf2", "an F2FS filesystem"),
    (0, MD_MAGIC, "a Linux MD RAID member (1.1 superblock)"),
    (4096, MD_MAGIC, "a Linux MD RAID member (1.2 superblock)"),
];

/// The MD superblock magic 0xa92b4efc as stored (little-endian).
const MD_MAGIC: &[u8] = b"\xfc\x4e\x2b\xa9";

/// Bytes read at each end of a block device: to find the signatures that live near the
/// end (MD 0.90 and 1.0), and to tell a blank device (zeros) from one holding data.
const ENDS_LEN: u64 = 1 << 20;

/// A signature near the end of a device of `dev_size` bytes, given its last bytes `tail`:
/// an MD 0.90 superblock (64 KiB-aligned, 64 KiB before the end) or 1.0 (8 KiB before the
/// end, 4 KiB-aligned).
pub fn tail_signature(tail: &[u8], dev_size: u64) -> Option<&'static str> {
    let start = dev_size - tail.len() as u64;
    let at = |off: u64| {
        off >= start && off + 4 <= dev_size && &tail[(off - start) as usize..(off - start) as usize + 4] == MD_MAGIC
    };
    if dev_size >= 128 << 10 && at((dev_size & !0xffff) - 0x10000) {
        return Some("a Linux MD RAID member (0.90 superblock)");
    }
    if dev_size >= 16 << 10 && at((dev_size - 8192) & !4095) {
        return Some("a Linux MD RAID member (1.0 superblock)");
    }
    None
}

fn marker_block(data_len: u64) -> IoBuf {
    let mut b = IoBuf::new(ALIGN);
    b[..24].copy_from_slice(MAGIC);
    b[24..32].copy_from_slice(&MARKER_LEN.to_le_bytes());
    b[32..40].copy_from_slice(&data_len.to_le_bytes());
    let c = crc32c::crc32c(&b[..40]);
    b[40..44].copy_from_slice(&c.to_le_bytes());
    let text = b"This target was created by iosched-rt (iosched's real runtime); its data area holds test data.\n";
    b[64..64 + text.len()].copy_from_slice(text);
    b
}

/// The data length recorded in a marker block, if `head` starts with one.
fn parse_marker(head: &[u8]) -> Option<u64> {
    if head.len() < 44 || &head[..24] != MAGIC {
        return None;
    }
    let c = u32::from_le_bytes(head[40..44].try_into().unwrap());
    if c != crc32c::crc32c(&head[..40]) {
        return None;
    }
    let off = u64::from_le_bytes(head[24..32].try_into().unwrap());
    (off == MARKER_LEN).then(|| u64::from_le_bytes(head[32..40].try_into().unwrap()))
}

/// The first known signature found in `head`.
pub fn find_signature(head: &[u8]) -> Option<&'static str> {
    SIGNATURES.iter().find_map(|&(off, magic, what)| {
        let o = off as usize;
        (head.len() >= o + magic.len() && &head[o..o + magic.len()] == magic).then_some(what)
    })
}

/// Open a regular file read-write with O_DIRECT (creating it, with `create_new`).
fn open_direct(path: &Path, create_new: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).custom_flags(libc::O_DIRECT);
    if create_new {
        o.create_new(true);
    }
    o.open(path)
}

/// Why an existing file could not be opened (`how`: "" or " read-only"), with the likely
/// cause of EINVAL.
fn open_error(path: &Path, how: &str, e: std::io::Error) -> Error {
    let hint = if e.raw_os_error() == Some(libc::EINVAL) { " (the filesystem may not support O_DIRECT)" } else { "" };
    Error(format!("{}: cannot open{how} with O_DIRECT: {e}{hint}", path.display()))
}

/// `len` bytes at `off`, both multiples of `align` (the device's logical block), for
/// O_DIRECT. The buffer is `len` long: the bytes read, then zeros past the end of a file
/// (a short read ends the reading).
fn read_at(file: &File, path: &Path, off: u64, len: usize, align: usize) -> Result<Vec<u8>, Error> {
    let mut b = IoBuf::new(len.div_ceil(ALIGN).max(1) * ALIGN);
    let mut done = 0;
    while done < len {
        match file.read_at(&mut b[done..len], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(path, &format!("reading {len} bytes at byte {off} to check it"), e)),
        }
        if done % align != 0 {
            break;
        }
    }
    Ok(b[..len].to_vec())
}

fn write_marker(file: &File, path: &Path, data_len: u64) -> Result<(), Error> {
    file.write_all_at(&marker_block(data_len), 0)
        .and_then(|_| file.sync_all())
        .map_err(|e| Error::io(path, "writing the iosched marker block", e))
}

/// The largest data area: the marker and the area must end within a file offset (i64).
pub const MAX_DATA_LEN: u64 = (i64::MAX as u64 - MARKER_LEN) / ALIGN as u64 * ALIGN as u64;

fn check_size(size: u64) -> Result<(), Error> {
    if size == 0 || !size.is_multiple_of(ALIGN as u64) {
        return Err(Error(format!("target size {size} bytes: expected a positive multiple of {ALIGN} bytes")));
    }
    if size > MAX_DATA_LEN {
        return Err(Error(format!(
            "target size {size} bytes: more than the largest file offset allows ({MAX_DATA_LEN} bytes)"
        )));
    }
    Ok(())
}

/// Open (or create) a target. `size` is the data-area size wanted: required to create a
/// file, grows one of ours, and limits the area used on a device. `used` lists the parts
/// of the data area the load touches, as (offset, length) in bytes; `None` means all of
/// it. Only those parts of a file are reserved and laid out, so gaps between them (tiotest's
/// `--offset`) take no space. With `lay_out`, the part of a file's data area this call
/// reserves is written once before the marker records the new size (a filesystem reads
/// reserved space back as zeros without touching the device, so reads of it would measure
/// nothing).
///
/// Space: before anything is written, the bytes a file needs — the used parts that no block
/// backs yet, and the marker — are checked against its filesystem's free space, less a
/// headroom ([`headroom`]); too much is refused with both figures. A file this call grew
/// and then failed on goes back to its earlier length.
///
/// A load that only reads (`writes == false`) opens the target read-only and writes
/// nothing — no marker, no layout, no growth — whatever `force` says; a file iosched did
/// not create is read as it is, from its first byte.
pub fn open(path: &Path, opts: &Options) -> Result<TargetFile, Error> {
    let (size, force, lay_out, writes, used) = (opts.size, opts.force, opts.lay_out, opts.writes, opts.used.as_deref());
    let notices = &opts.notices;
    if let Some(s) = size {
        check_size(s)?;
    }
    let meta = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(path, "cannot stat", e)),
    };
    match meta {
        None if !writes => Err(Error(format!(
            "{}: does not exist; a load that only reads never creates a target (a writing load, such as \
             --rw write, creates and fills one)",
            path.display()
        ))),
        None => create_file(path, size, lay_out, used, notices),
        Some(m) if m.is_file() && !writes => open_file_readonly(path, m.len(), size, notices),
        Some(m) if m.is_file() => open_file(path, m.len(), size, force, lay_out, used, notices),
        Some(m) if m.file_type().is_block_device() => open_blockdev(path, m.rdev(), size, force, writes),
        Some(_) => Err(Error(format!("{}: not a regular file or a block device", path.display()))),
    }
}

fn create_file(
    path: &Path,
    size: Option<u64>,
    lay_out: bool,
    used: Option<&[(u64, u64)]>,
    notices: &Notices,
) -> Result<TargetFile, Error> {
    let Some(size) = size else {
        return Err(Error(format!("{}: does not exist; give a size to create it", path.display())));
    };
    let file = open_direct(path, true).map_err(|e| Error::io(path, "cannot create", e))?;
    // Ours from the first moment: a marker of an empty area, so that a layout killed
    // half-way (a second Ctrl-C) leaves a file the next run recognises and lays out again,
    // not one it refuses as someone else's.
    let unwritten_from =
        match write_marker(&file, path, 0).and_then(|_| init_file(&file, path, 0, size, lay_out, used, notices)) {
            Ok(u) => u,
            Err(e) => {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
    Ok(TargetFile {
        path: path.to_path_buf(),
        file: Arc::new(file),
        kind: TargetKind::File,
        data_offset: MARKER_LEN,
        data_len: size,
        created: true,
        unwritten_from,
    })
}

/// Free space a run leaves on a target's filesystem at the least: 1 % of its size, at most
/// 1 GiB, so that a run never fills the filesystem for everyone else.
pub fn headroom(fs_size: u64) -> u64 {
    (fs_size / 100).min(1 << 30)
}

/// The byte ranges of a file that a data area of `size` bytes with `used` parts occupies:
/// the marker, then each used part (clipped to the area), sorted and joined.
fn file_ranges(size: u64, used: Option<&[(u64, u64)]>) -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = match used {
        None => vec![(0, size)],
        Some(u) => u.iter().map(|&(o, l)| (o.min(size), o.saturating_add(l).min(size))).collect(),
    };
    r.retain(|&(a, b)| b > a);
    r.sort_unstable();
    let mut out: Vec<(u64, u64)> = vec![(0, MARKER_LEN)];
    for (a, b) in r {
        let (a, b) = (MARKER_LEN + a, MARKER_LEN + b);
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Make sure every block of `ranges` (file offsets) is allocated before the run, so that
/// ENOSPC shows here and not mid-run: what no block backs yet is counted, checked against
/// the filesystem's free space less [`headroom`] (refused with both figures, nothing
/// written), then reserved with `fallocate`, after extending the file to hold a data area
/// of `size` bytes.
fn reserve(file: &File, path: &Path, size: u64, ranges: &[(u64, u64)], notices: &Notices) -> Result<(), Error> {
    let approx = iosched_benchmarks::units::fmt_bytes_approx;
    // A file whose blocks cover every byte of it needs nothing (SEEK_DATA reports space
    // fallocated but not yet written as holes on ext4 and XFS, which would count twice).
    let meta = file.metadata().map_err(|e| Error::io(path, "cannot stat", e))?;
    let end = ranges.last().map_or(0, |r| r.1);
    if meta.blocks().saturating_mul(512) >= end && meta.len() >= end {
        return Ok(());
    }
    let mut need = 0u64;
    for &(a, b) in ranges {
        need += sys::unbacked(file, a, b - a).map_err(|e| Error::io(path, "looking for unallocated space", e))?;
    }
    if need == 0 {
        return Ok(());
    }
    let (free, fs_size) =
        sys::fs_space(file).map_err(|e| Error::io(path, "cannot read its filesystem's free space", e))?;
    let keep = headroom(fs_size);
    if need.saturating_add(keep) > free {
        return Err(Error(format!(
            "{}: this run needs {} of new space on its filesystem (the parts of the target it uses, its \
             4 KiB marker among them, that no block backs yet), but the filesystem has {} free and iosched leaves at least {} \
             of it (1 % of its size, at most 1 GiB); nothing was written",
            path.display(),
            approx(need),
            approx(free),
            approx(keep)
        )));
    }
    notices.say(&format!("{}: reserving {} of {} free on its filesystem", path.display(), approx(need), approx(free)));
    if meta.len() < MARKER_LEN + size {
        file.set_len(MARKER_LEN + size).map_err(|e| Error::io(path, "cannot extend", e))?;
    }
    for &(a, b) in ranges {
        sys::fallocate(file, a, b - a).map_err(|e| {
            let want = iosched_benchmarks::units::fmt_bytes(b - a);
            Error::io(path, &format!("cannot reserve {want} at byte {a}"), e)
        })?;
    }
    Ok(())
}

/// Reserve a data area of `size` bytes whose first `from` bytes already exist, lay out
/// the rest if asked, then record the size in the marker. Returns where the never-written
/// part starts (`TargetFile::unwritten_from`): `from`, or none once laid out. On failure
/// the file is cut back to the length it had.
fn init_file(
    file: &File,
    path: &Path,
    from: u64,
    size: u64,
    lay_out: bool,
    used: Option<&[(u64, u64)]>,
    notices: &Notices,
) -> Result<Option<u64>, Error> {
    let old_len = file.metadata().map_err(|e| Error::io(path, "cannot stat", e))?.len();
    let ranges = file_ranges(size, used);
    let r = (|| {
        reserve(file, path, size, &ranges, notices)?;
        // The used parts past the `from` bytes that exist already.
        let new: Vec<(u64, u64)> =
            ranges.iter().map(|&(a, b)| (a.max(MARKER_LEN + from), b)).filter(|&(a, b)| a < b).collect();
        if lay_out && !new.is_empty() {
            notices.say(&format!(
                "{}: laying out {} before use (new space reads as holes)",
                path.display(),
                iosched_benchmarks::units::fmt_bytes(new.iter().map(|&(a, b)| b - a).sum())
            ));
            let mut buf = IoBuf::new(LAYOUT_CHUNK.min(size - from) as usize);
            buf.fill(0x5a);
            for &(a, b) in &new {
                let mut off = a;
                while off < b {
                    let n = LAYOUT_CHUNK.min(b - off) as usize;
                    file.write_all_at(&buf[..n], off).map_err(|e| {
                        Error::io(path, &format!("laying out the data area at byte {}", off - MARKER_LEN), e)
                    })?;
                    off += n as u64;
                }
            }
        }
        write_marker(file, path, size)
    })();
    if let Err(e) = r {
        // Give back what this call took: truncation frees the blocks past the old end.
        let _ = file.set_len(old_len);
        return Err(e);
    }
    Ok((!lay_out).then_some(from))
}

/// Writes of a layout (sequential, O_DIRECT).
const LAYOUT_CHUNK: u64 = 1 << 20;

fn open_file(
    path: &Path,
    len: u64,
    size: Option<u64>,
    force: bool,
    lay_out: bool,
    used: Option<&[(u64, u64)]>,
    notices: &Notices,
) -> Result<TargetFile, Error> {
    let file = open_direct(path, false).map_err(|e| open_error(path, "", e))?;
    let mut t = TargetFile {
        path: path.to_path_buf(),
        file: Arc::new(file),
        kind: TargetKind::File,
        data_offset: MARKER_LEN,
        data_len: 0,
        created: false,
        unwritten_from: None,
    };
    let whole = len.saturating_sub(MARKER_LEN) / ALIGN as u64 * ALIGN as u64;
    t.data_len = if len == 0 {
        let Some(size) = size else {
            return Err(Error(format!("{}: empty file; give a size to initialise it", path.display())));
        };
        t.unwritten_from = init_file(&t.file, path, 0, size, lay_out, used, notices)?;
        size
    } else {
        let head = read_at(&t.file, path, 0, ALIGN, ALIGN)?;
        match (parse_marker(&head), size) {
            // The file lost data since we wrote the marker (truncated, or cut by a full
            // disk): reads past its end would fail mid-run as short transfers.
            (Some(old), _) if old > whole && !force => {
                return Err(Error(format!(
                    "{}: its iosched marker records {old} bytes of data, but the file holds only {whole} \
                     after the marker (truncated?); refusing to use it (use --force to lay it out again)",
                    path.display()
                )));
            }
            (Some(old), s) if old > whole => {
                let s = s.unwrap_or(old);
                t.unwritten_from = init_file(&t.file, path, whole, s, lay_out, used, notices)?;
                s
            }
            (Some(old), Some(s)) if s > old => {
                t.unwritten_from = init_file(&t.file, path, old, s, lay_out, used, notices)?;
                s
            }
            // A smaller or equal area of ours: nothing to lay out, but the parts this run
            // uses may be holes a sparser run left (its --offset gaps).
            (Some(_), Some(s)) => {
                reserve(&t.file, path, s, &file_ranges(s, used), notices)?;
                s
            }
            (Some(old), None) => {
                let s = old.min(whole);
                reserve(&t.file, path, s, &file_ranges(s, used), notices)?;
                s
            }
            (None, _) if !force => {
                return Err(Error(format!(
                    "{}: existing non-empty file ({len} bytes) not created by iosched (no \
                     marker block); refusing to overwrite it (use --force to overwrite)",
                    path.display()
                )));
            }
            (None, s) => {
                let s = s.unwrap_or(whole);
                check_size(s).map_err(|e| Error(format!("{}: {e}", path.display())))?;
                t.unwritten_from = init_file(&t.file, path, 0, s, lay_out, used, notices)?;
                s
            }
        }
    };
    if t.data_len == 0 {
        return Err(Error(format!("{}: no data area", path.display())));
    }
    Ok(t)
}

/// A file for a load that only reads: opened read-only, nothing written. Ours (with the
/// marker): its data area. Anyone else's: the whole file, from byte 0, as it is.
fn open_file_readonly(path: &Path, len: u64, size: Option<u64>, notices: &Notices) -> Result<TargetFile, Error> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| open_error(path, " read-only", e))?;
    let head = if len >= MARKER_LEN { read_at(&file, path, 0, ALIGN, ALIGN)? } else { Vec::new() };
    let whole = |from: u64| len.saturating_sub(from) / ALIGN as u64 * ALIGN as u64;
    let (data_offset, data_len) = match parse_marker(&head) {
        Some(recorded) => (MARKER_LEN, recorded.min(whole(MARKER_LEN))),
        None => (0, whole(0)),
    };
    if data_len == 0 {
        return Err(Error(format!("{}: holds no whole 4 KiB block to read ({len} bytes)", path.display())));
    }
    if let Some(s) = size
        && s > data_len
    {
        return Err(Error(format!(
            "{}: holds {data_len} bytes to read, less than the {s} asked; a load that only reads uses a target \
             as it is (a writing load grows one of ours)",
            path.display()
        )));
    }
    // Holes (and, on ext4 and XFS, space reserved but never written) read back as zeros
    // without touching the device: say so, since such reads measure nothing.
    let area = size.unwrap_or(data_len);
    if let Ok(holes) = sys::unbacked(&file, data_offset, area)
        && holes > 0
    {
        notices.say(&format!(
            "{}: note: {} of the {} read holds no written data; a filesystem answers such reads with zeros \
             without the device, so they measure nothing (write the target first)",
            path.display(),
            iosched_benchmarks::units::fmt_bytes_approx(holes),
            iosched_benchmarks::units::fmt_bytes_approx(area)
        ));
    }
    Ok(TargetFile {
        path: path.to_path_buf(),
        file: Arc::new(file),
        kind: TargetKind::File,
        data_offset,
        data_len,
        created: false,
        unwritten_from: None,
    })
}

/// Whether the device under `path` rotates, from sysfs (`queue/rotational` of the block
/// device itself, or of the device holding the file; a partition reads its disk's). `None`
/// when it cannot be told (a file on tmpfs or overlayfs, no sysfs).
pub fn rotational(path: &Path) -> Option<bool> {
    // A target that does not exist yet will be created in its directory.
    let md = std::fs::metadata(path).or_else(|_| {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::metadata(parent)
    });
    let md = md.ok()?;
    let dev = if md.file_type().is_block_device() { md.rdev() } else { md.dev() };
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    [sys.join("queue/rotational"), sys.join("../queue/rotational")]
        .iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .and_then(|v| match v.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        })
}

/// Why a block device may not be used as it is.
enum InUse {
    /// Mounted (it or one of its partitions), or held by another device: never overridden.
    Busy(String),
    /// It has partitions, none of them in use: `force` may take the whole device.
    Partitions(usize),
}

/// Whether a block device looks in use: a mount or holder of it or of any partition first,
/// then partitions at all.
fn blockdev_in_use(rdev: u64) -> Option<InUse> {
    let (maj, min) = (libc::major(rdev), libc::minor(rdev));
    let mut devs = vec![format!("{maj}:{min}")];
    let sys = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let mut parts = Vec::new();
    // Partitions are subdirectories with a `partition` file and a `dev` file.
    if let Ok(rd) = std::fs::read_dir(&sys) {
        for e in rd.flatten() {
            let p = e.path();
            if p.join("partition").exists()
                && let Ok(d) = std::fs::read_to_string(p.join("dev"))
            {
                devs.push(d.trim().to_string());
                parts.push(p);
            }
        }
    }
    if let Ok(mi) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in mi.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 4 && devs.iter().any(|d| d == f[2]) {
                return Some(InUse::Busy(format!("it or a partition of it is mounted on {}", f[4])));
            }
        }
    }
    for dir in std::iter::once(&sys).chain(&parts) {
        if let Ok(rd) = std::fs::read_dir(dir.join("holders"))
            && let Some(h) = rd.flatten().next()
        {
            return Some(InUse::Busy(format!("it is held by {}", h.file_name().to_string_lossy())));
        }
    }
    (!parts.is_empty()).then_some(InUse::Partitions(parts.len()))
}

/// Blocks sampled across a device, besides its ends, before it is called blank.
const BLANK_SAMPLES: u64 = 64;

fn open_blockdev(path: &Path, rdev: u64, size: Option<u64>, force: bool, writes: bool) -> Result<TargetFile, Error> {
    match blockdev_in_use(rdev) {
        Some(InUse::Busy(why)) => {
            return Err(Error(format!(
                "{}: block device in use ({why}); refusing to use it (--force does not override this)",
                path.display()
            )));
        }
        Some(InUse::Partitions(n)) if !force && writes => {
            return Err(Error(format!(
                "{}: block device in use (it has {n} partition(s)); refusing to write to it (use --force to override)",
                path.display()
            )));
        }
        _ => {}
    }
    let file = open_device(path, writes).map_err(|e| match e.raw_os_error() {
        Some(libc::EBUSY) => Error(format!(
            "{}: block device is busy (mounted or held by another user; --force does not override this)",
            path.display()
        )),
        Some(libc::EROFS) => Error(format!("{}: the device is read-only ({e}); this load writes", path.display())),
        Some(libc::EACCES) | Some(libc::EPERM) => {
            Error(format!("{}: permission denied ({e}): block devices need root (or the disk group)", path.display()))
        }
        _ => Error::io(path, "cannot open with O_DIRECT|O_EXCL", e),
    })?;
    let lbs = sys::blkdev_logical_block(&file).map_err(|e| Error::io(path, "BLKSSZGET", e))?;
    if !(ALIGN as u32).is_multiple_of(lbs) {
        return Err(Error(format!("{}: logical block size {lbs} does not divide {ALIGN}", path.display())));
    }
    let dev_size = sys::blkdev_size(&file).map_err(|e| Error::io(path, "BLKGETSIZE64", e))?;
    let avail = dev_size.saturating_sub(MARKER_LEN) / ALIGN as u64 * ALIGN as u64;
    // What may not be overwritten without --force. A load that only reads overwrites
    // nothing, so it needs no check (and no read of the device's far end).
    if writes && !force {
        check_device_is_ours_or_blank(&file, path, dev_size, lbs as u64)?;
    }
    let data_len = match size {
        Some(s) if s > avail => {
            return Err(Error(format!(
                "{}: size {s} bytes is larger than the device's data area ({avail} bytes)",
                path.display()
            )));
        }
        Some(s) => s,
        None => avail,
    };
    if data_len == 0 {
        return Err(Error(format!("{}: device too small", path.display())));
    }
    // A load that only reads leaves the device as it found it.
    if writes {
        write_marker(&file, path, data_len)?;
    }
    Ok(TargetFile {
        path: path.to_path_buf(),
        file: Arc::new(file),
        kind: TargetKind::BlockDevice,
        data_offset: MARKER_LEN,
        data_len,
        created: false,
        unwritten_from: None,
    })
}

/// Open a device for a load: read-write, or read-only for a load that only reads; always
/// exclusive (`O_EXCL` fails with EBUSY on a mounted or held device).
fn open_device(path: &Path, writes: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(writes).custom_flags(libc::O_DIRECT | libc::O_EXCL);
    o.open(path)
}

/// Refuse a device that holds a known signature (ours beside it or not), or, without our
/// marker, anything but zeros where a blank device has them: its first 2 MiB (partitions
/// usually start at 1 MiB, with their own superblocks right there), its last MiB
/// (to the last logical block) and [`BLANK_SAMPLES`] blocks spread between.
fn check_device_is_ours_or_blank(file: &File, path: &Path, dev_size: u64, lbs: u64) -> Result<(), Error> {
    let a = ALIGN as u64;
    let head_len = (2 * ENDS_LEN).min(dev_size / a * a).max(a);
    let head = read_at(file, path, 0, head_len as usize, ALIGN)?;
    // The tail in logical blocks, so a device whose size is not a multiple of 4 KiB has
    // its last sectors (a GPT backup header, say) looked at too.
    let tail_at = dev_size.saturating_sub(ENDS_LEN) / lbs * lbs;
    let tail = read_at(file, path, tail_at, (dev_size - tail_at) as usize, lbs as usize)?;
    let what = find_signature(&head)
        .or_else(|| (head.len() as u64 > ENDS_LEN).then(|| find_signature(&head[ENDS_LEN as usize..])).flatten())
        .or_else(|| tail_signature(&tail, dev_size));
    if let Some(what) = what {
        return Err(Error(format!(
            "{}: block device holds {what}; refusing to overwrite it (use --force to override)",
            path.display()
        )));
    }
    if parse_marker(&head).is_some() {
        return Ok(());
    }
    let mut blank = head.iter().all(|&b| b == 0) && tail.iter().all(|&b| b == 0);
    let blocks = dev_size / a;
    for i in 1..BLANK_SAMPLES {
        if !blank {
            break;
        }
        let b = read_at(file, path, blocks * i / BLANK_SAMPLES * a, ALIGN, ALIGN)?;
        blank = b.iter().all(|&x| x == 0);
    }
    if !blank {
        return Err(Error(format!(
            "{}: block device holds data iosched did not write (no iosched marker, and not all \
             zeros where a blank device has them); refusing to overwrite it (use --force to override)",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`open`] with these settings, the rest Options' defaults.
    fn open_at(
        path: &Path,
        size: Option<u64>,
        force: bool,
        lay_out: bool,
        writes: bool,
        used: Option<&[(u64, u64)]>,
    ) -> Result<TargetFile, Error> {
        let mut o = Options::new(iosched_policies::SchedSpec::parse("noop").unwrap());
        (o.size, o.force, o.lay_out, o.writes, o.used) = (size, force, lay_out, writes, used.map(<[_]>::to_vec));
        open(path, &o)
    }

    /// The flag comes from sysfs when the path is on a block device; a pseudo filesystem
    /// has none, and a path that does not exist yet is judged by its directory.
    #[test]
    fn rotational_flag_from_sysfs() {
        assert_eq!(rotational(Path::new("/proc/self/status")), None);
        let d = tmpdir("rot");
        let dev = std::fs::metadata(&d).unwrap().dev();
        let f = format!("/sys/dev/block/{}:{}/queue/rotational", libc::major(dev), libc::minor(dev));
        let want = std::fs::read_to_string(&f).ok().map(|v| v.trim() == "1");
        if want.is_some() {
            assert_eq!(rotational(&d.join("not-yet")), want);
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("iosched-rt-target-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn create_reopen_and_refuse_foreign_files() {
        let d = tmpdir("rules");
        let p = d.join("t");
        let e = open_at(&p, None, false, false, true, None).unwrap_err();
        assert!(e.0.contains("give a size"), "{e}");
        let t = open_at(&p, Some(1 << 20), false, false, true, None).unwrap();
        assert!(t.created);
        assert_eq!(t.data_len, 1 << 20);
        assert_eq!(t.unwritten_from, Some(0));
        drop(t);
        // Ours: reopened without a size (nothing new), grown with one (the new part).
        let t = open_at(&p, None, false, false, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (1 << 20, None));
        let t = open_at(&p, Some(2 << 20), false, false, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (2 << 20, Some(1 << 20)));
        // Foreign non-empty file: refused, content untouched; --force takes it, all new.
        let f = d.join("foreign");
        std::fs::write(&f, vec![b'x'; 3 * 4096]).unwrap();
        let e = open_at(&f, Some(4096), false, false, true, None).unwrap_err();
        assert!(e.0.contains("refusing to overwrite") && e.0.contains("--force"), "{e}");
        assert_eq!(std::fs::read(&f).unwrap(), vec![b'x'; 3 * 4096]);
        let t = open_at(&f, None, true, false, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (2 * 4096, Some(0)));
        // Empty existing file: initialised.
        let z = d.join("empty");
        std::fs::write(&z, b"").unwrap();
        let t = open_at(&z, Some(8192), false, false, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (8192, Some(0)));
        // One of ours that lost its tail: refused (naming both sizes) rather than failing
        // mid-run on short reads; --force lays the missing part out again.
        let cut = d.join("cut");
        drop(open_at(&cut, Some(4 * 4096), false, false, true, None).unwrap());
        std::fs::OpenOptions::new().write(true).open(&cut).unwrap().set_len(MARKER_LEN + 4096 + 100).unwrap();
        let e = open_at(&cut, None, false, false, true, None).unwrap_err();
        assert!(e.0.contains("records 16384 bytes of data, but the file holds only 4096"), "{e}");
        assert!(e.0.contains("--force"), "{e}");
        let t = open_at(&cut, None, true, false, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (4 * 4096, Some(4096)));
        // Bad sizes are rejected, not rounded.
        let e = open_at(&d.join("odd"), Some(1000), false, false, true, None).unwrap_err();
        assert!(e.0.contains("multiple of 4096"), "{e}");
        assert!(open_at(d.as_path(), None, false, false, true, None).unwrap_err().0.contains("not a regular file"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// With `lay_out`, what the open reserves is written before use, and only that: a
    /// grown file keeps its old data.
    #[test]
    fn lay_out_writes_the_new_space_only() {
        let d = tmpdir("layout");
        let p = d.join("t");
        let t = open_at(&p, Some(8192), false, true, true, None).unwrap();
        assert_eq!(t.unwritten_from, None);
        t.file.write_all_at(&marker_block(0)[..], MARKER_LEN).unwrap(); // our own data in block 0
        drop(t);
        let t = open_at(&p, Some(3 * 8192), false, true, true, None).unwrap();
        assert_eq!((t.data_len, t.unwritten_from), (3 * 8192, None));
        drop(t);
        let data = std::fs::read(&p).unwrap();
        assert_eq!(data.len() as u64, MARKER_LEN + 3 * 8192);
        let area = &data[MARKER_LEN as usize..];
        assert_eq!(&area[..4096], &marker_block(0)[..], "old data was overwritten");
        assert!(area[4096..8192].iter().all(|&b| b == 0x5a));
        assert!(area[8192..].iter().all(|&b| b == 0x5a), "the new space was not laid out");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn signatures_are_recognised() {
        let mut head = vec![0u8; ENDS_LEN as usize];
        assert_eq!(find_signature(&head), None);
        head[1080] = 0x53;
        head[1081] = 0xef;
        assert_eq!(find_signature(&head), Some("an ext2/ext3/ext4 filesystem"));
        let mut head = vec![0u8; ENDS_LEN as usize];
        head[512..520].copy_from_slice(b"EFI PART");
        assert_eq!(find_signature(&head), Some("a GPT partition table"));
        assert_eq!(parse_marker(&marker_block(4096)), Some(4096));
        // LVM's label in any of the first four sectors; MD 1.1 at the start.
        for off in [0, 512, 1024, 1536] {
            let mut head = vec![0u8; 8192];
            head[off..off + 8].copy_from_slice(b"LABELONE");
            assert_eq!(find_signature(&head), Some("an LVM physical volume"), "{off}");
        }
        // Our marker matches nothing, and a signature written beside it is still found.
        let mut head = marker_block(4096).to_vec();
        assert_eq!(find_signature(&head), None);
        head[510..512].copy_from_slice(b"\x55\xaa");
        assert_eq!(find_signature(&head), Some("a DOS/MBR partition table or boot sector"));
        // MD 0.90 and 1.0 superblocks near the end of a 10 MiB + 12 KiB device.
        let size: u64 = (10 << 20) + (12 << 10);
        let tail_start = size - (1 << 20);
        let mut tail = vec![0u8; 1 << 20];
        assert_eq!(tail_signature(&tail, size), None);
        let at = |off: u64| (off - tail_start) as usize;
        // Where md puts them on a device of 20,504 sectors: 0.90 at MD_NEW_SIZE_SECTORS
        // ((20504 & ~127) - 128 = 20352 sectors), 1.0 at ((20504 - 16) & ~7 = 20488).
        let v090 = 20352 * 512;
        tail[at(v090)..at(v090) + 4].copy_from_slice(MD_MAGIC);
        assert_eq!(tail_signature(&tail, size), Some("a Linux MD RAID member (0.90 superblock)"));
        tail[at(v090)..at(v090) + 4].fill(0);
        let v10 = 20488 * 512;
        tail[at(v10)..at(v10) + 4].copy_from_slice(MD_MAGIC);
        assert_eq!(tail_signature(&tail, size), Some("a Linux MD RAID member (1.0 superblock)"));
    }
}
