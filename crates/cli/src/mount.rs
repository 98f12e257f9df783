//! `iosched mount` and `iosched umount` (crate `iosched-mount`): the terminal side — the
//! status line, Ctrl-C and SIGTERM, the report at the end.

use crate::record;
use iosched_mount::{Attribution, MountReport, Settings};
use iosched_policies::SchedSpec;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// `iosched mount`.
#[derive(clap::Args, Debug)]
pub struct MountArgs {
    /// The directory whose files the mount presents. Only the programs' own writes change
    /// it: nothing of ours is written there, now or on unmount.
    backing: PathBuf,
    /// An empty directory, not already a mount point, outside BACKING.
    mountpoint: PathBuf,
    /// The scheduler spec (e.g. `as`, `cfq:slice_idle=0`).
    #[arg(long, default_value = "deadline")]
    sched: String,
    /// Emulate a disk profile (e.g. ide-2003-fast): every request completes no earlier than
    /// the model says; the disk's capacity bounds what BACKING may hold.
    #[arg(long, value_name = "PROFILE")]
    emulate: Option<String>,
    /// Write the queue's inputs on unmount (trace format of `iosched replay`) to FILE; not
    /// inside BACKING or the mount. An existing file is replaced only if it is an iosched
    /// trace.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    #[command(flatten)]
    report: crate::report::ReportArg,
    /// Who owns a request: `process` (threads of a process share their scheduler state,
    /// as in the kernel) or `thread`.
    #[arg(long, default_value = "process")]
    owner: String,
    /// The kernel's read-ahead window for the mount (its bdi's read_ahead_kb), from 4k to 16M.
    #[arg(long, value_name = "BYTES", default_value = "128k")]
    readahead: String,
    /// Largest read or write the kernel sends at once (FUSE max_write and max_read), from
    /// 4k to 1M.
    #[arg(long, value_name = "BYTES", default_value = "128k")]
    max_request: String,
    /// Write-through: every write(2) waits for its request, instead of the page cache
    /// writing back later (FUSE writeback caching, on by default).
    #[arg(long)]
    no_writeback_cache: bool,
    /// Do not give O_DIRECT opens FUSE's direct_io: the kernel's FUSE client then handles
    /// O_DIRECT itself (keeping the page cache coherent, splitting requests its own way)
    /// instead of passing each read and write to the queue as the caller made it.
    #[arg(long)]
    no_direct_io: bool,
    /// Requests the kernel keeps in flight on nobody's wait (read-ahead and writeback
    /// together; FUSE max_background). Over it they wait in the kernel, unseen by the
    /// scheduler; the default, FUSE's maximum, leaves that to the queue's request pools.
    #[arg(long, default_value_t = u16::MAX)]
    max_background: u16,
    /// Read BACKING through its own page cache. By default whole-page reads go to BACKING
    /// with O_DIRECT: nothing cached twice, and a read the mount's cache misses reads
    /// BACKING's disk.
    #[arg(long)]
    backing_cache: bool,
    /// I/O engine: auto (io_uring, else a thread pool), io_uring or threads.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Seed of the emulated disk.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the end-of-mount report as one JSON document.
    #[arg(long)]
    json: bool,
}

/// `iosched umount`.
#[derive(clap::Args, Debug)]
pub struct UmountArgs {
    /// The mount point of an `iosched mount` (another kind of mount is refused).
    mountpoint: PathBuf,
}

fn size(s: &str, what: &str, max: u64) -> Result<u32, String> {
    let v = iosched_benchmarks::units::parse_size(s).map_err(|e| format!("{what} {s}: {e}"))?;
    if !(4096..=max).contains(&v) || v % 4096 != 0 {
        return Err(format!("{what} {s}: expected a multiple of 4k from 4k to {}M", max >> 20));
    }
    Ok(v as u32)
}

/// A file of ours must not land in BACKING (which only the programs write) or in the
/// mount (which would send it through the queue).
fn outside(opt: &str, p: &Path, dirs: &[&Path]) -> Result<(), String> {
    let abs = std::path::absolute(p).map_err(|e| format!("{opt} {}: {e}", p.display()))?;
    let parent = abs.parent().unwrap_or(&abs);
    let resolved = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    for d in dirs {
        if let Ok(d) = std::fs::canonicalize(d)
            && (resolved.starts_with(&d) || abs.starts_with(&d))
        {
            return Err(format!(
                "{opt} {}: is inside {}; give it a place outside BACKING and the mount",
                p.display(),
                d.display()
            ));
        }
    }
    Ok(())
}

pub fn mount(a: MountArgs) -> Result<(), String> {
    let spec = SchedSpec::parse(&a.sched).map_err(|e| format!("--sched {}: {e}", a.sched))?;
    let mut s = Settings::new(spec);
    s.emulate = a.emulate.clone();
    s.record = a.record.is_some() || a.report.report.is_some();
    s.backend = a.backend.parse().map_err(|e| format!("--backend: {e}"))?;
    s.seed = a.seed;
    s.attribution = a.owner.parse::<Attribution>().map_err(|e| format!("--owner {e}"))?;
    s.max_readahead = size(&a.readahead, "--readahead", 16 << 20)?;
    // FUSE's largest request: 256 pages (FUSE_MAX_MAX_PAGES).
    s.max_request = size(&a.max_request, "--max-request", 1 << 20)?;
    s.writeback_cache = !a.no_writeback_cache;
    s.direct_io = !a.no_direct_io;
    if a.max_background == 0 {
        return Err("--max-background 0: expected at least 1".into());
    }
    s.max_background = a.max_background;
    s.backing_direct = !a.backing_cache;
    record::check(a.record.as_deref(), 1)?;
    a.report.check()?;
    let dirs = [a.backing.as_path(), a.mountpoint.as_path()];
    if let Some(r) = &a.record {
        outside("--record", r, &dirs)?;
    }
    if let Some(r) = &a.report.report {
        outside("--report", r, &dirs)?;
    }
    let stop = crate::signals::interrupt_flag()?;
    let notices = iosched_rt::Notices::to(|m| eprintln!("iosched: {m}"));
    let m = iosched_mount::mount(&a.backing, &a.mountpoint, s, notices)?;
    eprintln!(
        "iosched: {} mounted at {} (queue {}{}); Ctrl-C, SIGTERM or `iosched umount {}` unmounts",
        a.backing.display(),
        m.mountpoint().display(),
        m.effective_scheduler(),
        a.emulate.as_ref().map(|e| format!(", emulating {e}")).unwrap_or_default(),
        m.mountpoint().display()
    );
    let tty = std::io::stderr().is_terminal();
    let start = Instant::now();
    let (mut last_status, mut last_try) = (Instant::now(), None::<Instant>);
    let mut said_busy = false;
    while m.serving() {
        std::thread::sleep(Duration::from_millis(100));
        if !m.queue_running() && !stop.swap(true, Ordering::SeqCst) {
            eprintln!("\niosched: the queue's dispatcher stopped (its I/O engine failed); unmounting");
        }
        if stop.load(Ordering::SeqCst) && last_try.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            last_try = Some(Instant::now());
            match m.unmount() {
                Ok(()) => {}
                // Without fusermount3 nothing can unmount it: say so and quit.
                Err(e) if e.starts_with(iosched_mount::NO_FUSERMOUNT) => {
                    return Err(format!("{e}; the mount point needs `umount {}`", m.mountpoint().display()));
                }
                // Busy: keep serving the programs still using it, and try again.
                Err(e) if !said_busy => {
                    said_busy = true;
                    eprintln!(
                        "\niosched: cannot unmount yet ({e}); still serving until the programs using it stop. A second Ctrl-C quits at once, leaving the mount point to `fusermount3 -u {}`",
                        m.mountpoint().display()
                    );
                }
                Err(_) => {}
            }
        }
        if tty && last_status.elapsed() >= Duration::from_secs(1) {
            last_status = Instant::now();
            let c = m.counters();
            let mb = |v: &std::sync::atomic::AtomicU64| v.load(Ordering::Relaxed) as f64 / 1e6;
            eprint!(
                "\r\x1b[K{:>6.0} s  reads {} ({:.1} MB)  writes {} ({:.1} MB)  fsyncs {}  in flight {}  owners {}",
                start.elapsed().as_secs_f64(),
                c.reads.load(Ordering::Relaxed),
                mb(&c.read_bytes),
                c.writes.load(Ordering::Relaxed),
                mb(&c.written_bytes),
                c.flushes.load(Ordering::Relaxed),
                c.in_flight.load(Ordering::Relaxed),
                c.owners.load(Ordering::Relaxed),
            );
        }
    }
    if tty {
        eprint!("\r\x1b[K");
    }
    let r = m.finish()?;
    if let (Some(base), Some(t)) = (&a.record, &r.queue.trace) {
        record::write(base, t, 1, 1, a.json)?;
    }
    let doc = json(&a, &r);
    if let (Some(_), Some(t)) = (&a.report.report, &r.queue.trace) {
        let trace = crate::report::trace_doc("the mount's queue", &t.to_text(), None)?;
        a.report.write(&[trace])?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
    } else {
        print!("{}", text(&r));
    }
    Ok(())
}

fn json(a: &MountArgs, r: &MountReport) -> serde_json::Value {
    serde_json::json!({
        "command": "mount",
        "backing": r.backing,
        "mountpoint": r.mountpoint,
        "sched": a.sched,
        "emulate": a.emulate,
        "seed": a.seed,
        "owner": a.owner,
        "readahead": a.readahead,
        "max_request": a.max_request,
        "writeback_cache": !a.no_writeback_cache,
        "direct_io": !a.no_direct_io,
        "max_background": a.max_background,
        "backing_cache": a.backing_cache,
        "report": r,
    })
}

fn text(r: &MountReport) -> String {
    let q = &r.queue;
    let mut s = format!(
        "unmounted {} after {:.1} s (scheduler {})\n\
         reads {} ({:.1} MB), writes {} ({:.1} MB), fsyncs {}, owners {}, errors {}\n\
         queue: {} units, {} dispatched, {} merged, {} waited for a request slot\n",
        r.mountpoint.display(),
        r.elapsed_s,
        q.effective_scheduler,
        r.reads,
        r.read_bytes as f64 / 1e6,
        r.writes,
        r.written_bytes as f64 / 1e6,
        r.fsyncs,
        r.owners,
        r.errors,
        q.requests,
        q.dispatched,
        q.merged,
        q.slot_waits,
    );
    if let Some(l) = &q.emulated_lateness {
        s += &format!(
            "emulated completions late by p50 {:.0} us, p99 {:.0} us ({} samples)\n",
            l.p50_us, l.p99_us, l.count
        );
    }
    if let Some(e) = &q.first_error {
        s += &format!("first error: {e}\n");
    }
    s
}

pub fn umount(a: UmountArgs) -> Result<(), String> {
    iosched_mount::unmount_path(&a.mountpoint)
}

/// `iosched kernel-tree`.
#[derive(clap::Args, Debug)]
pub struct KernelTreeArgs {
    /// Where to create the tree: a new or empty directory (a mount's, to lay the tree out
    /// on its disk in creation order).
    dir: PathBuf,
    /// Fraction of the 2.4.19 tree (11,219 files, 141.6 MB): the same shape, scaled.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Seed of the sizes' shuffle and the files' bytes.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Write the read-many report's synthetic kernel tree (the plan both worlds' read-many
/// use, `iosched_benchmarks::kernel_tree`) as real directories and files under DIR, in the
/// plan's creation order.
pub fn kernel_tree(a: KernelTreeArgs) -> Result<(), String> {
    if !(a.scale > 0.0 && a.scale <= 1.0) {
        return Err(format!("--scale {}: expected a fraction in (0, 1]", a.scale));
    }
    match std::fs::read_dir(&a.dir) {
        Ok(mut d) => {
            if d.next().is_some() {
                return Err(format!("{}: is not empty; the tree goes into a new or empty directory", a.dir.display()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir(&a.dir).map_err(|e| format!("{}: {e}", a.dir.display()))?
        }
        Err(e) => return Err(format!("{}: {e}", a.dir.display())),
    }
    let plan = iosched_benchmarks::kernel_tree::KernelTree::scaled(a.seed, a.scale);
    // Directory i's path; the plan's first directory is the tree's root, DIR itself.
    let mut paths: Vec<PathBuf> = Vec::with_capacity(plan.dirs.len());
    for (parent, name) in &plan.dirs {
        let p = match parent {
            None => a.dir.clone(),
            Some(i) => paths[*i].join(name),
        };
        if parent.is_some() {
            std::fs::create_dir(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        paths.push(p);
    }
    let mut rng = iosched_core::Rng::new(a.seed);
    let bytes: Vec<u8> = (0..(1 << 16)).map(|_| rng.next_u64() as u8).collect();
    let stop = crate::signals::interrupt_flag()?;
    for (k, (dir, name, size)) in plan.files.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            return Err(format!("interrupted after {k} of {} files", plan.files.len()));
        }
        let p = paths[*dir].join(name);
        let mut left = *size as usize;
        let mut data = Vec::with_capacity(left);
        while left > 0 {
            let n = left.min(bytes.len());
            let at = (k * 4099) % bytes.len();
            data.extend(bytes[at..].iter().chain(&bytes[..at]).take(n));
            left -= n;
        }
        std::fs::write(&p, &data).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    eprintln!(
        "iosched: kernel tree in {}: {} files, {} bytes, {} directories (scale {}, seed {})",
        a.dir.display(),
        plan.files.len(),
        plan.total_bytes(),
        plan.dirs.len(),
        a.scale,
        a.seed
    );
    Ok(())
}
