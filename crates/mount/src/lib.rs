//! iosched-mount: unmodified programs through iosched's schedulers — a FUSE file system
//! that presents a directory (BACKING) at a mount point, with every read, write and fsync
//! the kernel sends it a request in an [`iosched_core::Queue`], owned by the calling
//! process, at the file's place on an (optionally emulated) disk.
//!
//! What it is: the kernel's page cache and read-ahead above (the programs are ordinary:
//! `cat`, `dd`, fio, sysbench), our policies in the middle, and below them the real
//! runtime's store target ([`iosched_rt::Target::open_store`]): the data goes to BACKING's
//! files through io_uring, and with `--emulate` each request completes no earlier than the
//! disk model says. Files get sectors from a simple allocator ([`layout`]); callers are
//! mapped to processes through `/proc` ([`owner`]); the FUSE side is [`fuser`] over the
//! kernel's `/dev/fuse` ([`fs`] documents the call order).
//!
//! What it is not: a model of a file system's metadata I/O (lookups, directories, inodes
//! and bitmaps cost nothing and go through no queue), a journal, or a cache of its own;
//! and BACKING is only ever written by the programs' own writes — no marker, no layout
//! file, nothing on unmount.
//!
//! Lifecycle: [`mount`] checks the paths, lays out BACKING's files, opens the store target
//! and starts serving on a background thread; [`Mounted::unmount`] asks the kernel to
//! unmount (refused while files are open: the caller says so and may retry), and
//! [`Mounted::finish`] waits for the session to end and the queue to drain and returns
//! the [`MountReport`]. A daemon killed outright leaves BACKING as it is and the mount
//! point disconnected; `fusermount3 -u MOUNTPOINT` (or [`unmount_path`]) recovers it.

pub mod fs;
pub mod layout;
pub mod mountpoint;
pub mod owner;

use iosched_policies::SchedSpec;
use iosched_rt::{BackendChoice, Notices, Options, Report, Target};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

pub use owner::Attribution;

/// How to mount: the queue's settings and the kernel-side settings that shape what the
/// scheduler sees.
#[derive(Clone, Debug)]
pub struct Settings {
    pub sched: SchedSpec,
    /// Disk profile whose timing requests wait for (`--emulate`); its capacity is the
    /// disk's. Without one, the disk is as large as BACKING's filesystem.
    pub emulate: Option<String>,
    /// Keep the queue's input trace (`--record`), returned in the report.
    pub record: bool,
    pub backend: BackendChoice,
    /// Seed of the emulated disk.
    pub seed: u64,
    /// Whether threads of one process share an owner (default) or not.
    pub attribution: Attribution,
    /// The kernel's read-ahead window for the mount, bytes (default 128 KiB, the 2.6
    /// kernel's default `VM_MAX_READAHEAD`). FUSE's `INIT` cannot raise it above the
    /// kernel's proposal (128 KiB), so once the connection is up it is set as the mount's
    /// `/sys/class/bdi/<dev>/read_ahead_kb`, which is what `blockdev --setra` is to a disk.
    pub max_readahead: u32,
    /// Largest read or write the kernel sends in one request, bytes (FUSE `max_write`
    /// and the `max_read` mount option; default 128 KiB, 2.6 IDE's `max_sectors`).
    pub max_request: u32,
    /// The kernel's page cache holds writes and writes them back later
    /// (`FUSE_WRITEBACK_CACHE`, default on, as a local file system's writes are); off,
    /// every write(2) waits for its request (write-through).
    pub writeback_cache: bool,
    /// An `O_DIRECT` caller's reads and writes bypass the mount's page cache and reach the
    /// queue as the caller made them (`FOPEN_DIRECT_IO`; default on).
    pub direct_io: bool,
    /// Requests the kernel's FUSE client keeps in flight on nobody's wait — read-ahead and
    /// writeback share this one limit (FUSE `max_background`), and what is over it waits in
    /// the kernel in one FIFO, where no scheduler sees it: a read-ahead request would wait
    /// there behind the writeback. 2.6 had no such queue before the elevator (reads and
    /// writes had request pools of their own), so by default the limit is as high as
    /// FUSE allows (65535) and the queue's own request pools, per direction, decide who
    /// waits. What is in flight stays bounded by the kernel's dirty-page limits for the
    /// mount and by the readers' read-ahead windows.
    pub max_background: u16,
    /// Reads go to BACKING with `O_DIRECT` where they are whole pages (default on; off:
    /// through BACKING's own page cache). With it, the data is not cached twice — in the
    /// mount's page cache and in BACKING's — a read the mount's cache misses really reads
    /// BACKING's disk, and the daemon does not copy it out of BACKING's cache (the copy
    /// that, beside the answer's own copy into the kernel, limited sequential reads).
    /// Writes always go through BACKING's page cache (they need not be aligned).
    pub backing_direct: bool,
}

impl Settings {
    pub fn new(sched: SchedSpec) -> Settings {
        Settings {
            sched,
            emulate: None,
            record: false,
            backend: BackendChoice::Auto,
            seed: 1,
            attribution: Attribution::Process,
            max_readahead: 128 << 10,
            max_request: 128 << 10,
            writeback_cache: true,
            direct_io: true,
            max_background: u16::MAX,
            backing_direct: true,
        }
    }
}

/// Live counters of a mount, for a progress line.
#[derive(Debug, Default)]
pub struct Counters {
    /// FUSE reads and writes answered or in flight, and fsyncs.
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    pub flushes: AtomicU64,
    pub read_bytes: AtomicU64,
    pub written_bytes: AtomicU64,
    /// Units in the queue or at the disk now.
    pub in_flight: AtomicU64,
    pub errors: AtomicU64,
    /// Owners seen (processes, or threads by `--owner thread`; writeback is one).
    pub owners: AtomicU64,
}

/// What a mount did, once it ended.
#[derive(Debug, Serialize)]
pub struct MountReport {
    pub backing: PathBuf,
    pub mountpoint: PathBuf,
    pub elapsed_s: f64,
    pub reads: u64,
    pub writes: u64,
    pub fsyncs: u64,
    pub read_bytes: u64,
    pub written_bytes: u64,
    pub owners: u64,
    pub errors: u64,
    /// The runtime's counters: requests, merges, dispatches, lateness.
    pub queue: Report,
}

/// A served mount.
pub struct Mounted {
    session: Option<fuser::BackgroundSession>,
    target: Arc<Target>,
    counters: Arc<Counters>,
    backing: PathBuf,
    mountpoint: PathBuf,
    start: Instant,
}

impl std::fmt::Debug for Mounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mounted").field("backing", &self.backing).field("mountpoint", &self.mountpoint).finish()
    }
}

/// Present `backing` at `mountpoint` through a queue with `settings`. Refused: a backing
/// that is not a directory; a mount point that is not an empty directory, is already a
/// mount point, or lies inside BACKING (or BACKING inside it); a BACKING holding more than
/// the emulated disk's capacity.
pub fn mount(backing: &Path, mountpoint: &Path, settings: Settings, notices: Notices) -> Result<Mounted, String> {
    let (backing, mountpoint) = mountpoint::check(backing, mountpoint)?;
    let capacity = match &settings.emulate {
        Some(p) => iosched_rt::emulate::load(p, settings.seed).map_err(|e| e.to_string())?.0.capacity_sectors() * 512,
        None => {
            let f = std::fs::File::open(&backing).map_err(|e| format!("{}: {e}", backing.display()))?;
            iosched_rt::fs_space(&f).map_err(|e| format!("{}: {e}", backing.display()))?.1
        }
    };
    let mut opts = Options::new(settings.sched.clone());
    opts.emulate = settings.emulate.clone();
    opts.record = settings.record;
    opts.backend = settings.backend;
    opts.seed = settings.seed;
    opts.notices = notices.clone();
    if let Err(e) = iosched_rt::raise_fd_limit() {
        notices.say(&format!("cannot raise the open-file limit: {e}"));
    }
    let target =
        Arc::new(Target::open_store(&backing, capacity, opts).map_err(|e| format!("{}: {e}", backing.display()))?);
    let counters = Arc::new(Counters::default());
    let fs = fs::Fs::new(backing.clone(), Arc::clone(&target), settings.clone(), Arc::clone(&counters))?;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(format!("{}{}", mountpoint::SOURCE_PREFIX, backing.display())),
        fuser::MountOption::Subtype(mountpoint::SUBTYPE.into()),
        fuser::MountOption::DefaultPermissions,
        fuser::MountOption::CUSTOM(format!("max_read={}", settings.max_request)),
    ];
    let session = fuser::spawn_mount(fs, &mountpoint, &config)
        .map_err(|e| format!("cannot mount {} at {}: {e}", backing.display(), mountpoint.display()))?;
    let m = Mounted { session: Some(session), target, counters, backing, mountpoint, start: Instant::now() };
    // FUSE's INIT already set a window up to the kernel's 128 KiB; a larger one is the
    // mount's sysfs setting, written once INIT is done (a stat waits for it; INIT would
    // lower a window set before it). If it cannot be written the mount still works, with
    // the smaller window, and says so.
    if settings.max_readahead > 128 << 10 {
        let ra = (|| -> Result<(), String> {
            std::fs::metadata(&m.mountpoint).map_err(|e| e.to_string())?;
            let dev = mountpoint::find(&m.mountpoint)?.dev;
            let knob = format!("/sys/class/bdi/{dev}/read_ahead_kb");
            std::fs::write(&knob, format!("{}\n", settings.max_readahead / 1024)).map_err(|e| format!("{knob}: {e}"))
        })();
        if let Err(e) = ra {
            notices.say(&format!("the mount's read-ahead stays at 128 KiB: {e}"));
        }
    }
    Ok(m)
}

impl Mounted {
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The queue's effective scheduler spec (with the device depth it implies).
    pub fn effective_scheduler(&self) -> &str {
        &self.target.info().effective_scheduler
    }

    /// The session still serves (it ends when the file system is unmounted, by us or by
    /// `iosched umount` / `fusermount3 -u` from elsewhere).
    pub fn serving(&self) -> bool {
        self.session.as_ref().is_some_and(|s| !s.guard.is_finished())
    }

    /// The queue's dispatcher still runs. If it stopped (its I/O engine failed), every
    /// read, write and fsync fails with EIO: the caller should unmount.
    pub fn queue_running(&self) -> bool {
        self.target.running()
    }

    /// Ask the kernel to unmount (as `fusermount3 -u` does): the kernel first writes back
    /// the mount's dirty pages through us. Fails, changing nothing, while a program has a
    /// file or directory open on it.
    pub fn unmount(&self) -> Result<(), String> {
        unmount_path(&self.mountpoint)
    }

    /// Wait for the session to end (after an unmount), then for every request to
    /// complete, and report.
    pub fn finish(mut self) -> Result<MountReport, String> {
        if let Some(s) = self.session.take() {
            s.join().map_err(|e| format!("the FUSE session ended with an error: {e}"))?;
        }
        // The file system (and its handles on the target) went with the session thread.
        let target = Arc::into_inner(self.target).ok_or("the queue is still in use after the session ended")?;
        let queue = target.close().map_err(|e| e.to_string())?;
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Ok(MountReport {
            backing: self.backing,
            mountpoint: self.mountpoint,
            elapsed_s: self.start.elapsed().as_secs_f64(),
            reads: get(&c.reads),
            writes: get(&c.writes),
            fsyncs: get(&c.flushes),
            read_bytes: get(&c.read_bytes),
            written_bytes: get(&c.written_bytes),
            owners: get(&c.owners),
            errors: get(&c.errors),
            queue,
        })
    }
}

/// The start of [`unmount_path`]'s error when `fusermount3` cannot be run at all.
pub const NO_FUSERMOUNT: &str = "cannot run fusermount3";

/// Unmount an iosched mount at `mountpoint` (refusing any other kind of mount), through
/// `fusermount3 -u`.
pub fn unmount_path(mountpoint: &Path) -> Result<(), String> {
    let m = mountpoint::find(mountpoint)?;
    if !m.is_ours() {
        return Err(format!("{}: is a {} mount of {}, not an iosched one", mountpoint.display(), m.fstype, m.source));
    }
    let out = std::process::Command::new("fusermount3")
        .arg("-u")
        .arg("--")
        .arg(&m.path)
        .output()
        .map_err(|e| format!("{NO_FUSERMOUNT} (Debian package fuse3): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let msg = String::from_utf8_lossy(&out.stderr);
        Err(format!("{}: {}", mountpoint.display(), msg.trim().trim_start_matches("fusermount3: ")))
    }
}
