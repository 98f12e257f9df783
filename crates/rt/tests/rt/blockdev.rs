//! Block devices (loop devices, as root): a blank device is used and marked; a device with
//! a filesystem signature or mounted is refused unless forced. Also checks that io_uring
//! itself works here. What each test needs (root, losetup, mkfs.ext4, io_uring) is
//! declared in `main.rs`.

use crate::common::*;
use iosched_rt::{BackendChoice, IoBuf, Options, Target};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The loop-device tests, one at a time: while one detaches a device, `losetup --find`
/// in another can hand out that device while it is still held, which the target's
/// exclusive open then refuses as busy.
static LOOP_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    LOOP_TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A loop device over a fresh file; detached on drop.
struct Loop {
    dev: PathBuf,
}

impl Loop {
    fn new(backing: &Path, size: u64) -> Result<Loop, String> {
        std::fs::File::create(backing).and_then(|f| f.set_len(size)).map_err(|e| e.to_string())?;
        let out = Command::new("losetup")
            .args(["--find", "--show", "--direct-io=on"])
            .arg(backing)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            return Err(format!("losetup failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Loop { dev: PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string()) })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

fn opts(force: bool) -> Options {
    let mut o = options("deadline");
    o.verify = true;
    o.force = force;
    o
}

/// A loop device over a fresh file of `size` bytes (the test declared `Need::Losetup`, so
/// a failing losetup is a failure).
fn new_loop(backing: &Path, size: u64) -> Loop {
    Loop::new(backing, size).unwrap_or_else(|e| panic!("cannot set up a loop device: {e}"))
}

fn mkfs_ext4(dev: &Path) {
    let ok = Command::new("mkfs.ext4").args(["-q", "-F"]).arg(dev).stdout(Stdio::null()).status();
    assert!(ok.map(|s| s.success()).unwrap_or(false), "mkfs.ext4 {} failed", dev.display());
}

fn mount(dev: &Path, at: &Path) {
    let ok = Command::new("mount").arg(dev).arg(at).status();
    assert!(ok.map(|s| s.success()).unwrap_or(false), "mount {} {} failed", dev.display(), at.display());
}

pub fn io_uring_backend_is_available() {
    let dir = TempDir::new("uring");
    let mut o = opts(false);
    o.size = Some(1 << 20);
    o.backend = BackendChoice::IoUring;
    // Verification rewrites part of each block: compare whole blocks without it.
    o.verify = false;
    // The need was probed with io_uring_setup; any error here is a broken ring, a failure.
    let t = Target::open(dir.path("t"), o).unwrap();
    assert_eq!(t.info().backend, "io_uring");
    let h = t.handle();
    let mut b = IoBuf::new(4096);
    b.fill(9);
    h.write(0, &mut b).unwrap();
    b.fill(0);
    h.read(0, &mut b).unwrap();
    assert!(b.iter().all(|&x| x == 9), "io_uring read back other bytes than it wrote");
    drop(h);
    t.close().unwrap();
}

pub fn loop_devices_blank_is_used_signature_and_mount_are_refused() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("blockdev");
    let lo = new_loop(&dir.path("blank.img"), 32 << 20);
    // Blank: accepted, data round-trips, the marker makes a reopen fine.
    {
        let t = Target::open(&lo.dev, opts(false)).unwrap();
        assert_eq!(t.info().data_len, (32 << 20) - 4096);
        let h = t.handle();
        let mut b = IoBuf::new(65536);
        b.fill(3);
        h.write(1 << 20, &mut b).unwrap();
        h.read(1 << 20, &mut b).unwrap();
        drop(h);
        let rep = t.close().unwrap();
        assert_eq!(rep.verify.unwrap().mismatches, 0);
    }
    Target::open(&lo.dev, opts(false)).unwrap().close().unwrap();

    // A filesystem on it: refused, untouched; --force takes it.
    let fs = new_loop(&dir.path("fs.img"), 32 << 20);
    mkfs_ext4(&fs.dev);
    let e = Target::open(&fs.dev, opts(false)).unwrap_err();
    assert!(e.0.contains("ext2/ext3/ext4") && e.0.contains("--force"), "{e}");
    let blkid = Command::new("blkid").arg("-p").arg(&fs.dev).output().unwrap();
    assert!(String::from_utf8_lossy(&blkid.stdout).contains("ext4"), "refusal must leave the filesystem");

    // Mounted: refused even before looking at the signature.
    let mnt = dir.path("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    mount(&fs.dev, &mnt);
    let e = Target::open(&fs.dev, opts(false)).unwrap_err();
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(e.0.contains("mounted on"), "{e}");
    let t = Target::open(&fs.dev, opts(true)).unwrap();
    t.close().unwrap();
}

/// What is on a device we did not mark is kept: data without any known signature is
/// refused unless forced; a signature written beside our marker is still seen; a load that
/// only reads writes nothing, even forced; a mount cannot be forced.
pub fn loop_devices_foreign_data_is_never_written_unforced() {
    let _serial = one_at_a_time();
    let dir = TempDir::new("blockdev-data");
    let img = dir.path("data.img");
    let lo = new_loop(&img, 8 << 20);
    // Someone's bytes, no signature: refused, untouched.
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(&img, &data).unwrap();
    let e = Target::open(&lo.dev, opts(false)).unwrap_err();
    assert!(e.0.contains("holds data iosched did not write") && e.0.contains("--force"), "{e}");
    // Forced, a load that only reads leaves every byte as it was.
    let mut ro = opts(true);
    ro.writes = false;
    ro.verify = false;
    let t = Target::open(&lo.dev, ro).unwrap();
    let h = t.handle();
    let mut b = IoBuf::new(4096);
    h.read(0, &mut b).unwrap();
    drop(h);
    t.close().unwrap();
    assert!(std::fs::read(&img).unwrap() == data, "the device was written");

    // Ours, then a partition table written beside the marker (bytes 446..512): refused.
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    Target::open(&lo.dev, opts(false)).unwrap().close().unwrap();
    let mut now = std::fs::read(&img).unwrap();
    now[510] = 0x55;
    now[511] = 0xaa;
    std::fs::write(&img, &now).unwrap();
    let e = Target::open(&lo.dev, opts(false)).unwrap_err();
    assert!(e.0.contains("partition table"), "{e}");

    // A wiped partition table over a partition's filesystem at 1 MiB (nothing else in the
    // first MiB, nothing at the end): not blank, and the superblock is named.
    let mut wiped = vec![0u8; 8 << 20];
    wiped[(1 << 20) + 1080..(1 << 20) + 1082].copy_from_slice(&[0x53, 0xef]);
    std::fs::write(&img, &wiped).unwrap();
    let e = Target::open(&lo.dev, opts(false)).unwrap_err();
    assert!(e.0.contains("ext2/ext3/ext4"), "{e}");
    // Data only in the middle of the device: found by the samples.
    let mut middle = vec![0u8; 8 << 20];
    middle[(4 << 20)..(4 << 20) + 4096].fill(7);
    std::fs::write(&img, &middle).unwrap();
    let e = Target::open(&lo.dev, opts(false)).unwrap_err();
    assert!(e.0.contains("holds data iosched did not write"), "{e}");
    assert!(std::fs::read(&img).unwrap() == middle, "the device was written");

    // Mounted: --force does not take it.
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    mkfs_ext4(&lo.dev);
    let mnt = dir.path("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    mount(&lo.dev, &mnt);
    let e = Target::open(&lo.dev, opts(true)).unwrap_err();
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(e.0.contains("mounted on") && e.0.contains("--force does not override"), "{e}");
}
