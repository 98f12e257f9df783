//! Andrew Morton's "read many files during a streaming write" (Feb 2003, reference §6)
//! on a real target.
//!
//! The tree: the simulator's synthetic 2.4.19 kernel tree
//! (`iosched_benchmarks::kernel_tree::KernelTree`: 11,219 files, 141.6 MB, 596 directories
//! with files, the measured size percentiles of reference §6.1), or an evenly spread
//! `scale` fraction of its files, laid out inside the target as ext2 would cluster them:
//! directories in creation (= readdir) order, each one 4 KiB directory block followed by
//! its files, each file in whole 4 KiB blocks, 64 KiB between directories. It is written
//! through the runtime first (untimed, one sequential pass).
//!
//! The measured run: a writer (one owner, asynchronous 128 KiB writes, `writer_depth` in
//! flight — page-cache writeback of `dd ... conv=notrunc`) rewrites a `writer_mb` region
//! after the tree in a loop; after one second the readers start (`find | xargs cat`:
//! one reader by default), each reading its directories in order — the directory block
//! (a metadata read) then every file front to back in `chunk`-byte requests (the
//! read-ahead window). The result is the readers' elapsed time; the writer's throughput
//! is reported beside it.

use super::{Control, Ended};
use crate::error::{Error, IoError};
use crate::runtime::{Completion, Options, Report, Target};
use crate::sys::{ALIGN, IoBuf};
use iosched_benchmarks::kernel_tree::KernelTree;
use iosched_core::Op;
use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const DIR_GAP: u64 = 64 << 10;

/// Parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Fraction of the 2.4.19 tree's files (1.0 = 11,219 files, 141.6 MB).
    pub scale: f64,
    pub readers: u32,
    /// Read request size (the read-ahead window), bytes.
    pub chunk: u32,
    /// Run the streaming writer (false = the no-contention baseline).
    pub writer: bool,
    pub writer_mb: u64,
    pub writer_depth: u32,
    pub seed: u64,
}

impl Config {
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.scale > 0.0 && self.scale <= 1.0) {
            return Err(Error(format!("--scale {}: expected 0 < scale <= 1", self.scale)));
        }
        // Each reader is a thread, each write in flight a 128 KiB buffer: bounded like
        // `real tiobench --threads` and `fio-like --iodepth`.
        if !(1..=4096).contains(&self.readers) {
            return Err(Error(format!("--readers {}: out of range: expected 1..=4096", self.readers)));
        }
        if self.chunk == 0 || !(self.chunk as usize).is_multiple_of(ALIGN) {
            return Err(Error(format!("--chunk {}: expected a positive multiple of {ALIGN} bytes", self.chunk)));
        }
        if self.writer && self.writer_mb == 0 {
            return Err(Error("--writer-size 0: expected at least 1 MiB with the writer on".into()));
        }
        if self.writer && self.writer_depth == 0 || self.writer_depth > 1024 {
            return Err(Error(format!("--writer-depth {}: out of range: expected 1..=1024", self.writer_depth)));
        }
        Ok(())
    }
}

/// One directory: its block and its files (offset, size in bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct Dir {
    pub block: u64,
    pub files: Vec<(u64, u64)>,
}

/// The laid-out tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Tree {
    pub dirs: Vec<Dir>,
    pub files: usize,
    /// Sum of file sizes (bytes).
    pub bytes: u64,
    /// Bytes of the target the tree occupies (from 0).
    pub len: u64,
}

/// Lay out `scale` of the synthetic kernel tree (every file whose index crosses a
/// multiple of 1/scale, so the fraction is spread over the whole tree).
pub fn generate_tree(scale: f64, seed: u64) -> Tree {
    let kt = KernelTree::synthesize(seed);
    let a = ALIGN as u64;
    let mut off = 0u64;
    let mut bytes = 0;
    let mut nfiles = 0;
    let mut dirs: Vec<Dir> = Vec::new();
    let mut cur: Option<usize> = None;
    for (i, &(d, _, size)) in kt.files.iter().enumerate() {
        let take = ((i + 1) as f64 * scale).floor() > (i as f64 * scale).floor();
        if !take {
            continue;
        }
        if cur != Some(d) {
            if cur.is_some() {
                off += DIR_GAP;
            }
            cur = Some(d);
            dirs.push(Dir { block: off, files: Vec::new() });
            off += a;
        }
        dirs.last_mut().expect("a directory").files.push((off, size));
        bytes += size;
        nfiles += 1;
        off += size.div_ceil(a) * a;
    }
    Tree { dirs, files: nfiles, bytes, len: off + DIR_GAP }
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Result_ {
    pub scheduler: String,
    pub files: usize,
    pub dirs: usize,
    pub tree_mb: f64,
    /// Readers' elapsed time, seconds (the figure akpm reported).
    pub elapsed_s: f64,
    pub read_mb_s: f64,
    pub writer: bool,
    /// Bytes the writer wrote while the readers ran, MiB/s.
    pub writer_mb_s: f64,
    pub setup_s: f64,
    pub report: Report,
}

/// Run readmany on `path` with the scheduler in `opts`.
pub fn run(path: &Path, mut opts: Options, cfg: &Config, ctl: &Control) -> Result<(Result_, Ended), Error> {
    cfg.validate()?;
    let tree = generate_tree(cfg.scale, cfg.seed);
    let wbase = tree.len.div_ceil(1 << 20) << 20;
    let wlen = if cfg.writer { cfg.writer_mb << 20 } else { 0 };
    let need = wbase + wlen;
    if opts.size.is_none() {
        opts.size = Some(need);
    }
    let label = opts.sched.text.clone();
    let target = Target::open(path, opts)?;
    if target.info().data_len < need {
        return Err(Error(format!(
            "{}: data area is {} bytes; this run needs {need} (give a larger --size)",
            path.display(),
            target.info().data_len
        )));
    }
    let t_setup = Instant::now();
    let mut ended = match setup(&target, &tree, ctl) {
        Err(e) => Ended::Failed(e),
        Ok(()) if ctl.stopped() => Ended::Interrupted,
        Ok(()) => Ended::Complete,
    };
    let setup_s = t_setup.elapsed().as_secs_f64();
    let mut elapsed = Duration::ZERO;
    let mut written = 0u64;
    let mut wtime = Duration::ZERO;
    if ended.is_complete() {
        let (e, w, wt, end) = measured(&target, &tree, cfg, wbase, wlen, ctl, &label);
        (elapsed, written, wtime, ended) = (e, w, wt, end);
    }
    let report = target.close()?;
    let secs = elapsed.as_secs_f64().max(1e-9);
    Ok((
        Result_ {
            scheduler: label,
            files: tree.files,
            dirs: tree.dirs.len(),
            tree_mb: tree.bytes as f64 / 1e6,
            elapsed_s: elapsed.as_secs_f64(),
            read_mb_s: tree.bytes as f64 / (1 << 20) as f64 / secs,
            writer: cfg.writer,
            writer_mb_s: written as f64 / (1 << 20) as f64 / wtime.as_secs_f64().max(1e-9),
            setup_s,
            report,
        },
        ended,
    ))
}

fn rounded(sz: u64) -> usize {
    (sz.div_ceil(ALIGN as u64) * ALIGN as u64) as usize
}

fn setup(target: &Target, tree: &Tree, ctl: &Control) -> Result<(), IoError> {
    let h = target.handle();
    let mut dirbuf = IoBuf::new(ALIGN);
    for d in &tree.dirs {
        if ctl.stopped() {
            return Ok(());
        }
        h.write(d.block, &mut dirbuf)?;
        for &(off, sz) in &d.files {
            let mut b = IoBuf::new(rounded(sz));
            b.fill(b'c');
            h.write(off, &mut b)?;
        }
    }
    Ok(())
}

struct Writer {
    inflight: u32,
    written: u64,
    error: Option<IoError>,
}

#[allow(clippy::too_many_arguments)]
fn measured(
    target: &Target,
    tree: &Tree,
    cfg: &Config,
    wbase: u64,
    wlen: u64,
    ctl: &Control,
    label: &str,
) -> (Duration, u64, Duration, Ended) {
    let done_reading = AtomicBool::new(false);
    let read_bytes = AtomicU64::new(0);
    let wstate = Arc::new((Mutex::new(Writer { inflight: 0, written: 0, error: None }), Condvar::new()));
    let wstart = Instant::now();
    std::thread::scope(|s| {
        // The streaming writer: keeps `writer_depth` asynchronous writes in flight.
        let writer = cfg.writer.then(|| {
            let mut h = target.handle();
            h.set_sync_writes(false);
            let (ws, done_reading) = (Arc::clone(&wstate), &done_reading);
            s.spawn(move || {
                let block = 128u64 << 10;
                let mut off = 0u64;
                let (m, cv) = &*ws;
                let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if done_reading.load(Ordering::Relaxed) || ctl.stopped() || st.error.is_some() {
                        break;
                    }
                    if st.inflight >= cfg.writer_depth {
                        st = cv.wait_timeout(st, Duration::from_millis(50)).unwrap_or_else(|e| e.into_inner()).0;
                        continue;
                    }
                    let mut b = IoBuf::new(block as usize);
                    b.fill(b'w');
                    let ws2 = Arc::clone(&ws);
                    let r = h.submit(Op::Write, wbase + off, b, move |c: Completion| {
                        let (m, cv) = &*ws2;
                        let mut st = m.lock().unwrap_or_else(|e| e.into_inner());
                        st.inflight -= 1;
                        match c.result {
                            Ok(n) => st.written += n as u64,
                            Err(e) => {
                                st.error.get_or_insert(e);
                            }
                        }
                        cv.notify_all();
                    });
                    match r {
                        Ok(()) => st.inflight += 1,
                        Err(e) => st.error = Some(e),
                    }
                    off = (off + block) % wlen.max(block);
                }
                while st.inflight > 0 {
                    st = cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            })
        });
        if writer.is_some() {
            // Let the writer fill the queue first, as in akpm's test.
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(1) && !ctl.stopped() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let t0 = Instant::now();
        let readers: Vec<_> = (0..cfg.readers)
            .map(|r| {
                let h = target.handle();
                let read_bytes = &read_bytes;
                s.spawn(move || {
                    super::ended(|| -> Option<IoError> {
                        let mut meta = IoBuf::new(ALIGN);
                        let mut chunk = IoBuf::new(cfg.chunk as usize);
                        for d in tree.dirs.iter().skip(r as usize).step_by(cfg.readers as usize) {
                            if ctl.stopped() {
                                return None;
                            }
                            if let Err(e) = h.read_meta(d.block, &mut meta) {
                                return Some(e);
                            }
                            for &(off, sz) in &d.files {
                                let len = rounded(sz) as u64;
                                let mut pos = 0;
                                while pos < len {
                                    let n = (cfg.chunk as u64).min(len - pos) as usize;
                                    let res = if n == chunk.len() {
                                        h.read(off + pos, &mut chunk)
                                    } else {
                                        let mut b = IoBuf::new(n);
                                        h.read(off + pos, &mut b)
                                    };
                                    if let Err(e) = res {
                                        return Some(e);
                                    }
                                    pos += n as u64;
                                }
                                read_bytes.fetch_add(sz, Ordering::Relaxed);
                            }
                        }
                        None
                    })
                })
            })
            .collect();
        let mut p = super::Progress::new(ctl, format!("{label} readmany"), tree.bytes);
        super::wait_with_progress(&readers, &mut p, &read_bytes);
        done_reading.store(true, Ordering::Relaxed);
        let (errs, elapsed) = super::join_timed(readers, t0);
        let rerr = super::first_error(errs);
        if let Some(w) = writer {
            w.join().expect("writer");
        }
        let wt = wstart.elapsed();
        let st = wstate.0.lock().unwrap_or_else(|e| e.into_inner());
        let ended = match rerr.or_else(|| st.error.clone()) {
            Some(e) => Ended::Failed(e),
            None if ctl.stopped() => Ended::Interrupted,
            None => Ended::Complete,
        };
        (elapsed, st.written, wt, ended)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_tree_is_the_2_4_19_tree_and_a_fraction_spreads_over_it() {
        let t = generate_tree(1.0, 42);
        assert_eq!(t.files, 11_219);
        assert_eq!(t.bytes, 141_602_081);
        // Every directory that holds files, in the simulator's tree.
        assert_eq!(t.dirs.len(), KernelTree::synthesize(42).dirs_with_files());
        // Layout: aligned, increasing, no overlap.
        let mut end = 0;
        for d in &t.dirs {
            assert!(d.block >= end && d.block % 4096 == 0);
            end = d.block + 4096;
            for &(off, sz) in &d.files {
                assert!(off >= end && off % 4096 == 0);
                end = off + rounded(sz) as u64;
            }
        }
        assert!(t.len >= end);
        let q = generate_tree(0.25, 42);
        assert_eq!(q.files, 11_219 / 4);
        let share = q.bytes as f64 / t.bytes as f64;
        assert!((0.15..0.35).contains(&share), "{share}");
        assert!(q.dirs.len() > 400, "a quarter of the files still spans the tree: {}", q.dirs.len());
    }
}
