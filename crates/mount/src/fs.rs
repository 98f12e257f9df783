//! The FUSE file system: BACKING's tree, with every read, write and fsync a request in the
//! queue.
//!
//! Call order, as the kernel's FUSE client (`fs/fuse/`) drives it and `fuser` hands it
//! over, one request at a time on the session thread:
//!
//! - `init` first: the connection's settings ([`crate::Settings`]: read-ahead, request
//!   size, writeback caching, background requests).
//! - Metadata (`lookup`, `getattr`, `setattr`, `readdir`, `mkdir`, `create`, `unlink`,
//!   `rmdir`, `rename`, `symlink`, `readlink`, `open`, `release`, `statfs`) is done at
//!   once on BACKING with ordinary system calls and answered before the next request; it
//!   goes through no queue and costs no emulated time.
//! - `read`, `write` and `fsync` are *submitted*: each piece of the byte range (see
//!   [`crate::layout`]) becomes a unit in the store target's queue, owned by the caller's
//!   process ([`crate::owner`]), and the session thread goes on to the next request. The
//!   answer is sent from the dispatcher thread when the queue completes the last piece —
//!   after the real I/O on BACKING and, with `--emulate`, no earlier than the disk model
//!   says. So the queue holds as many requests as the kernel has outstanding: one per
//!   blocked reader, plus read-ahead and writeback up to the connection's background limit.
//!
//! Which requests are synchronous, as the 2.6 block layer marked them: reads, and writes
//! a caller waits for (write-through, `O_DIRECT`); writes of the page cache's writeback
//! (`FUSE_WRITE_CACHE`) are asynchronous and do not unplug the queue, as pdflush's did not.

use crate::layout::{Allocator, BLOCK, FileMap, Piece};
use crate::owner::{Owners, WRITEBACK, alive};
use crate::{Counters, Settings};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags, KernelConfig,
    LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use iosched_core::{IoPrio, Op, Owner};
use iosched_rt::{Completion, Handle, IoBuf, IoError, Place, Target};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long the kernel may cache names and attributes. Short: BACKING may change under us.
const TTL: Duration = Duration::from_secs(1);
/// How often owners whose process has gone are told to the scheduler.
const SWEEP: Duration = Duration::from_secs(1);

struct Node {
    /// Path below BACKING ("" for the root).
    path: PathBuf,
    kind: FileType,
    map: FileMap,
    /// A directory's entries in creation order (the order `readdir` gives, as ext2's):
    /// name, node and the entry's `readdir` cookie, which never changes (so a listing
    /// resumed after entries were removed skips none).
    children: Vec<(OsString, u64, u64)>,
    /// The next entry's cookie (1 and 2 are "." and "..").
    next_cookie: u64,
    opens: u32,
    /// Unlinked: its blocks are freed when the last open handle closes.
    gone: bool,
}

struct OpenFile {
    ino: u64,
    file: Arc<File>,
    /// The same file opened with `O_DIRECT`, for aligned reads (see `Settings::backing_direct`).
    direct: Option<Arc<File>>,
}

/// A process's two submitters: synchronous requests (which unplug the queue) and the
/// asynchronous writeback ones (which leave it plugged).
struct Io {
    sync: Handle,
    background: Handle,
}

struct State {
    nodes: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next_ino: u64,
    alloc: Allocator,
    files: HashMap<u64, OpenFile>,
    next_fh: u64,
    owners: Owners,
    io: HashMap<u64, Io>,
    last_sweep: Instant,
}

pub(crate) struct Fs {
    root: PathBuf,
    target: Arc<Target>,
    settings: Settings,
    state: Mutex<State>,
    counters: Arc<Counters>,
    replier: std::sync::mpsc::Sender<ReplyJob>,
}

fn errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn rt_errno(e: &IoError) -> Errno {
    match e {
        IoError::Os { errno, .. } => Errno::from_i32(*errno),
        IoError::Invalid(_) => Errno::EINVAL,
        _ => Errno::EIO,
    }
}

fn kind_of(m: &Metadata) -> FileType {
    FileType::from_std(m.file_type()).unwrap_or(FileType::RegularFile)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 { UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32) } else { UNIX_EPOCH }
}

fn attr(ino: u64, m: &Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: m.len(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: UNIX_EPOCH,
        kind: kind_of(m),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: BLOCK as u32,
        flags: 0,
    }
}

impl State {
    fn node(&self, ino: INodeNo) -> Result<&Node, Errno> {
        self.nodes.get(&ino.0).ok_or(Errno::ENOENT)
    }

    /// A node for `path` (below BACKING) of kind `kind`, with blocks for `len` bytes of a
    /// regular file.
    fn add(&mut self, path: PathBuf, kind: FileType, len: u64) -> Result<u64, Errno> {
        let ino = self.next_ino;
        let mut map = FileMap::default();
        if kind == FileType::RegularFile {
            self.alloc.extend(&mut map, len).map_err(|_| Errno::ENOSPC)?;
        }
        self.next_ino += 1;
        self.by_path.insert(path.clone(), ino);
        let node = Node { path, kind, map, children: Vec::new(), next_cookie: 3, opens: 0, gone: false };
        self.nodes.insert(ino, node);
        Ok(ino)
    }

    /// Forget `ino` (unlinked, replaced by a rename, or gone from BACKING) and, for a
    /// directory, everything below it: blocks go back unless the file is open.
    fn drop_node(&mut self, ino: u64) {
        let Some(n) = self.nodes.get_mut(&ino) else { return };
        if self.by_path.get(&n.path) == Some(&ino) {
            self.by_path.remove(&n.path);
        }
        n.gone = true;
        let below: Vec<u64> = n.children.drain(..).map(|c| c.1).collect();
        if n.opens == 0 {
            let mut n = self.nodes.remove(&ino).expect("node");
            self.alloc.free(&mut n.map);
        }
        for c in below {
            self.drop_node(c);
        }
    }

    fn unlink_child(&mut self, parent: u64, name: &OsStr) {
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children.retain(|(n, _, _)| n != name);
        }
    }

    /// List `ino` as `name` in directory `parent`, after the entries it has.
    fn add_child(&mut self, parent: u64, name: &OsStr, ino: u64) {
        if let Some(p) = self.nodes.get_mut(&parent)
            && !p.children.iter().any(|(n, _, _)| n == name)
        {
            p.children.push((name.to_owned(), ino, p.next_cookie));
            p.next_cookie += 1;
        }
    }

    /// An open descriptor of `ino`, if any: the way to reach a file whose name is gone.
    fn open_file(&self, ino: u64) -> Option<Arc<File>> {
        self.files.values().find(|f| f.ino == ino).map(|f| Arc::clone(&f.file))
    }
}

impl Fs {
    /// The file system over `root` (canonical), its files laid out on `target`'s disk.
    pub(crate) fn new(
        root: PathBuf,
        target: Arc<Target>,
        settings: Settings,
        counters: Arc<Counters>,
    ) -> Result<Fs, String> {
        let capacity = target.info().data_len;
        let mut st = State {
            nodes: HashMap::new(),
            by_path: HashMap::new(),
            next_ino: 1,
            alloc: Allocator::new(capacity),
            files: HashMap::new(),
            next_fh: 1,
            owners: Owners::new(settings.attribution),
            io: HashMap::new(),
            last_sweep: Instant::now(),
        };
        let root_ino = st.add(PathBuf::new(), FileType::Directory, 0).expect("the root takes no blocks");
        debug_assert_eq!(root_ino, INodeNo::ROOT.0);
        scan(&root, &mut st, root_ino).map_err(|e| format!("{}: {e}", root.display()))?;
        Ok(Fs { root, target, settings, state: Mutex::new(st), counters, replier: replier() })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn full(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    /// The path of `name` in directory `parent`, which must be a directory we know.
    fn child_path(&self, st: &State, parent: INodeNo, name: &OsStr) -> Result<PathBuf, Errno> {
        let p = st.node(parent)?;
        if p.kind != FileType::Directory {
            return Err(Errno::ENOTDIR);
        }
        if name.as_encoded_bytes().contains(&b'/') || name == "." || name == ".." {
            return Err(Errno::EINVAL);
        }
        Ok(p.path.join(name))
    }

    /// The node of `name` in `parent`, made if BACKING has it and we did not know it.
    fn entry(&self, st: &mut State, parent: INodeNo, name: &OsStr) -> Result<(u64, Metadata), Errno> {
        let rel = self.child_path(st, parent, name)?;
        let m = std::fs::symlink_metadata(self.full(&rel)).map_err(|e| errno(&e))?;
        let ino = match st.by_path.get(&rel) {
            Some(&i) => {
                // BACKING's file may have grown behind our back: give it blocks.
                let n = st.nodes.get_mut(&i).expect("node of a known path");
                if n.kind == FileType::RegularFile {
                    st.alloc.extend(&mut n.map, m.len()).map_err(|_| Errno::ENOSPC)?;
                }
                st.add_child(parent.0, name, i);
                i
            }
            None => {
                let i = st.add(rel, kind_of(&m), m.len())?;
                st.add_child(parent.0, name, i);
                i
            }
        };
        Ok((ino, m))
    }

    /// The submitters of the process behind `req`; owners whose process has gone are
    /// dropped first, at most once a [`SWEEP`], which tells the scheduler they exited.
    fn io<'a>(&self, st: &'a mut State, pid: u32) -> &'a Io {
        let now = Instant::now();
        if now.duration_since(st.last_sweep) >= SWEEP {
            st.last_sweep = now;
            st.io.retain(|&o, _| o == WRITEBACK || alive(o));
        }
        let owner = st.owners.of(pid, now);
        let target = &self.target;
        let counters = &self.counters;
        st.io.entry(owner).or_insert_with(|| {
            counters.owners.fetch_add(1, Ordering::Relaxed);
            // Owner ids are the kernel's pids (writeback: 0), as the trace shows them.
            let o = Owner(owner);
            let sync = target.handle_as(o, IoPrio::NONE);
            let mut background = target.handle_as(o, IoPrio::NONE);
            background.set_sync_writes(false);
            background.set_unplug(false);
            Io { sync, background }
        })
    }

    /// Submit `pieces` of an open file as units; `done` gets each piece's completion, in
    /// any order, with its index. A piece the queue refuses (the dispatcher has stopped)
    /// completes at once as failed, and so do the ones after it.
    ///
    /// A read piece that starts on a page and is whole pages, or ends at the end of the
    /// file (`eof`), goes to `direct` when given: the buffer is rounded up to whole pages,
    /// and the read returns what the file has.
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        h: &Handle,
        op: Op,
        file: &Arc<File>,
        direct: Option<(&Arc<File>, u64)>,
        pieces: &[Piece],
        mut data: Option<&[u8]>,
        done: &Arc<Gather>,
    ) {
        self.counters.in_flight.fetch_add(pieces.len() as u64, Ordering::Relaxed);
        for (i, p) in pieces.iter().enumerate() {
            let page = BLOCK;
            let (file, len) = match direct {
                Some((d, eof)) if p.offset % page == 0 && (p.len % page == 0 || p.offset + p.len == eof) => {
                    (d, p.len.div_ceil(page) * page)
                }
                _ => (file, p.len),
            };
            let mut buf = IoBuf::new(len as usize);
            if let Some(d) = data.as_mut() {
                let (head, rest) = d.split_at(p.len as usize);
                buf.copy_from_slice(head);
                *d = rest;
            }
            // The sectors that hold the bytes moved (a direct read: whole pages, as the
            // kernel reads a page).
            let sectors = ((p.offset % 512) + len).div_ceil(512) as u32;
            let place = Place { file: Arc::clone(file), offset: p.offset };
            let g = Arc::clone(done);
            if let Err(e) = h.submit_placed(op, p.sector, sectors, place, buf, move |c| g.piece(i, c)) {
                for _ in i..pieces.len() {
                    done.piece(usize::MAX, Completion { buf: None, result: Err(e.clone()) });
                }
                return;
            }
        }
    }
}

/// Give `dir`'s tree (below BACKING, node `ino`) nodes and blocks: depth first, each
/// directory's entries in name order.
fn scan(root: &Path, st: &mut State, ino: u64) -> io::Result<()> {
    let rel = st.nodes[&ino].path.clone();
    let mut names: Vec<OsString> =
        std::fs::read_dir(root.join(&rel))?.map(|e| e.map(|e| e.file_name())).collect::<io::Result<_>>()?;
    names.sort();
    for name in names {
        let p = rel.join(&name);
        let m = std::fs::symlink_metadata(root.join(&p))?;
        let kind = kind_of(&m);
        let child = st.add(p.clone(), kind, m.len()).map_err(|_| {
            io::Error::other(format!(
                "{} ({} bytes) does not fit on the disk: BACKING holds more than the disk's capacity",
                p.display(),
                m.len()
            ))
        })?;
        st.add_child(ino, &name, child);
        if kind == FileType::Directory {
            scan(root, st, child)?;
        }
    }
    Ok(())
}

/// Read answers at least this large are written to `/dev/fuse` by the replier thread, not
/// by the dispatcher: writing an answer copies its data into the kernel's page cache, and
/// with the copy that brought it from BACKING (in the dispatcher's `io_uring_enter`) both
/// copies of every byte were on one thread, which then capped sequential reads (perf: the
/// dispatcher at 100 % CPU, 48 % of it in `fuse_dev_write`'s copy, 40 % in the read's).
/// Small answers stay on the dispatcher: a thread hop would cost more than their copy.
const OFFLOAD_BYTES: u32 = 32 << 10;

/// Work for the replier thread.
pub(crate) type ReplyJob = Box<dyn FnOnce() + Send>;

/// The thread that writes large answers (see [`OFFLOAD_BYTES`]); it ends when the last
/// sender (the file system's, and those of the requests in flight) is gone.
pub(crate) fn replier() -> std::sync::mpsc::Sender<ReplyJob> {
    let (tx, rx) = std::sync::mpsc::channel::<ReplyJob>();
    std::thread::Builder::new()
        .name("iosched-reply".into())
        .spawn(move || {
            for job in rx {
                job();
            }
        })
        .expect("cannot start the reply thread");
    tx
}

/// The pieces of one FUSE request in flight; the last one to complete sends the answer.
pub(crate) struct Gather {
    inner: Mutex<GatherState>,
    counters: Arc<Counters>,
    replier: std::sync::mpsc::Sender<ReplyJob>,
}

struct GatherState {
    left: usize,
    /// A read's pieces, in file order: each one's buffer, the bytes it got (at most the
    /// piece's), and the piece's length.
    parts: Vec<(Option<IoBuf>, u32, u32)>,
    error: Option<Errno>,
    answer: Option<Answer>,
}

enum Answer {
    Read { reply: ReplyData, len: u64 },
    Write { reply: ReplyWrite, len: u32 },
    Sync(ReplyEmpty),
}

/// Answer a read with its pieces' bytes up to the first short one (the end of the file);
/// one piece, the common case, is answered from its own buffer.
fn answer_read(reply: ReplyData, parts: &[(Option<IoBuf>, u32, u32)], len: u64, c: &Counters) {
    if let [(Some(b), n, _)] = parts {
        c.read_bytes.fetch_add(*n as u64, Ordering::Relaxed);
        return reply.data(&b[..*n as usize]);
    }
    let mut out = Vec::with_capacity(len as usize);
    for (b, n, want) in parts {
        let Some(b) = b else { break };
        out.extend_from_slice(&b[..*n as usize]);
        if n < want {
            break;
        }
    }
    c.read_bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
    reply.data(&out);
}

impl Gather {
    fn new(pieces: &[Piece], answer: Answer, fs: &Fs) -> Arc<Gather> {
        Arc::new(Gather {
            inner: Mutex::new(GatherState {
                left: pieces.len().max(1),
                parts: pieces.iter().map(|p| (None, 0, p.len as u32)).collect(),
                error: None,
                answer: Some(answer),
            }),
            counters: Arc::clone(&fs.counters),
            replier: fs.replier.clone(),
        })
    }

    fn piece(&self, i: usize, c: Completion) {
        self.counters.in_flight.fetch_sub(1, Ordering::Relaxed);
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match c.result {
            Ok(n) => {
                if let Some(p) = g.parts.get_mut(i) {
                    *p = (c.buf, n.min(p.2), p.2);
                }
            }
            Err(e) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                g.error.get_or_insert(rt_errno(&e));
            }
        }
        g.left -= 1;
        if g.left > 0 {
            return;
        }
        let Some(answer) = g.answer.take() else { return };
        let c = &self.counters;
        if let Some(e) = g.error {
            match answer {
                Answer::Read { reply, .. } => reply.error(e),
                Answer::Write { reply, .. } => reply.error(e),
                Answer::Sync(reply) => reply.error(e),
            }
            return;
        }
        match answer {
            Answer::Read { reply, len } if len >= OFFLOAD_BYTES as u64 => {
                let parts = std::mem::take(&mut g.parts);
                let counters = Arc::clone(&self.counters);
                let job: ReplyJob = Box::new(move || answer_read(reply, &parts, len, &counters));
                if let Err(std::sync::mpsc::SendError(job)) = self.replier.send(job) {
                    job();
                }
            }
            Answer::Read { reply, len } => answer_read(reply, &g.parts, len, c),
            Answer::Write { reply, len } => {
                c.written_bytes.fetch_add(len as u64, Ordering::Relaxed);
                reply.written(len);
            }
            Answer::Sync(reply) => reply.ok(),
        }
    }
}

impl Filesystem for Fs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        let s = &self.settings;
        let _ = config.set_max_readahead(s.max_readahead);
        let _ = config.set_max_write(s.max_request);
        let _ = config.set_max_background(s.max_background);
        let _ = config.set_congestion_threshold((u32::from(s.max_background) * 3 / 4) as u16);
        let mut caps = InitFlags::FUSE_ASYNC_DIO;
        if s.writeback_cache {
            caps |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        config.add_capabilities(caps).map_err(|missing| {
            io::Error::other(format!("the kernel's FUSE lacks {missing:?} (see --writeback-cache)"))
        })?;
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut st = self.state();
        match self.entry(&mut st, parent, name) {
            Ok((ino, m)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let st = self.state();
        let m = match fh.and_then(|h| st.files.get(&h.0)).map(|f| Arc::clone(&f.file)) {
            Some(f) => f.metadata(),
            None => match st.node(ino) {
                // A file whose name is gone (unlinked or renamed over while open): its
                // path may now be another file's.
                Ok(n) if n.gone => match st.open_file(ino.0) {
                    Some(f) => f.metadata(),
                    None => return reply.error(Errno::ENOENT),
                },
                Ok(n) => std::fs::symlink_metadata(self.full(&n.path)),
                Err(e) => return reply.error(e),
            },
        };
        match m {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut st = self.state();
        let (path, link, gone) = match st.node(ino) {
            Ok(n) => (self.full(&n.path), n.kind == FileType::Symlink, n.gone),
            Err(e) => return reply.error(e),
        };
        // The open file when there is one (for a file whose name is gone, the only way to
        // it); else the path, never following a symlink out of BACKING.
        let fd = match fh.and_then(|h| st.files.get(&h.0)).map(|f| Arc::clone(&f.file)) {
            Some(f) => Some(f),
            None if gone => match st.open_file(ino.0) {
                Some(f) => Some(f),
                None => return reply.error(Errno::ENOENT),
            },
            None => None,
        };
        let r = (|| -> io::Result<()> {
            // A symlink's own mode means nothing on Linux, and std has no way to set its
            // times without following it: both are left as they are.
            if let Some(m) = mode.filter(|_| !link) {
                let perm = std::fs::Permissions::from_mode(m & 0o7777);
                match &fd {
                    Some(f) => f.set_permissions(perm)?,
                    None => std::fs::set_permissions(&path, perm)?,
                }
            }
            if uid.is_some() || gid.is_some() {
                match &fd {
                    Some(f) => std::os::unix::fs::fchown(&**f, uid, gid)?,
                    None => std::os::unix::fs::lchown(&path, uid, gid)?,
                }
            }
            if let Some(len) = size {
                let f = match &fd {
                    Some(f) => Arc::clone(f),
                    None => Arc::new(OpenOptions::new().write(true).open(&path)?),
                };
                f.set_len(len)?;
                let st = &mut *st;
                let n = st.nodes.get_mut(&ino.0).expect("node");
                // A file's blocks cover its bytes: cut on shrinking, given on growing.
                st.alloc.truncate(&mut n.map, len);
                st.alloc.extend(&mut n.map, len).map_err(|_| io::Error::from_raw_os_error(libc::ENOSPC))?;
            }
            if (atime.is_some() || mtime.is_some()) && !link {
                let to = |t: TimeOrNow| match t {
                    TimeOrNow::SpecificTime(t) => t,
                    TimeOrNow::Now => SystemTime::now(),
                };
                let mut times = std::fs::FileTimes::new();
                if let Some(a) = atime {
                    times = times.set_accessed(to(a));
                }
                if let Some(m) = mtime {
                    times = times.set_modified(to(m));
                }
                match &fd {
                    Some(f) => f.set_times(times)?,
                    None => File::open(&path)?.set_times(times)?,
                }
            }
            Ok(())
        })();
        let m = r.and_then(|_| match &fd {
            Some(f) => f.metadata(),
            None => std::fs::symlink_metadata(&path),
        });
        match m {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let st = self.state();
        match st.node(ino) {
            Ok(n) => match std::fs::read_link(self.full(&n.path)) {
                Ok(t) => reply.data(t.as_os_str().as_encoded_bytes()),
                Err(e) => reply.error(errno(&e)),
            },
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let mut st = self.state();
        let rel = match self.child_path(&st, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let full = self.full(&rel);
        let r = std::fs::create_dir(&full)
            .and_then(|_| std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode & !umask & 0o7777)))
            .and_then(|_| std::fs::symlink_metadata(&full));
        match r {
            Ok(m) => match self.entry(&mut st, parent, name) {
                Ok((ino, _)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
                Err(e) => reply.error(e),
            },
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, |p| std::fs::remove_file(p), reply)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(parent, name, |p| std::fs::remove_dir(p), reply)
    }

    fn symlink(&self, _req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let mut st = self.state();
        let rel = match self.child_path(&st, parent, link_name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match std::os::unix::fs::symlink(target, self.full(&rel)) {
            Ok(()) => match self.entry(&mut st, parent, link_name) {
                Ok((ino, m)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
                Err(e) => reply.error(e),
            },
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !flags.is_empty() {
            // RENAME_NOREPLACE / RENAME_EXCHANGE: not offered (the caller falls back).
            return reply.error(Errno::EINVAL);
        }
        let mut st = self.state();
        let (from, to) = match (self.child_path(&st, parent, name), self.child_path(&st, newparent, newname)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        if let Err(e) = std::fs::rename(self.full(&from), self.full(&to)) {
            return reply.error(errno(&e));
        }
        let st = &mut *st;
        // A name the rename replaced is gone.
        if let Some(&old) = st.by_path.get(&to) {
            st.drop_node(old);
            st.unlink_child(newparent.0, newname);
        }
        st.unlink_child(parent.0, name);
        if let Some(ino) = st.by_path.remove(&from) {
            // The node and everything below it move to the new path.
            // (Not the unlinked ones still open below it: their names are gone.)
            let moved: Vec<u64> =
                st.nodes.iter().filter(|(_, n)| !n.gone && n.path.starts_with(&from)).map(|(i, _)| *i).collect();
            for i in moved {
                let n = st.nodes.get_mut(&i).expect("node");
                st.by_path.remove(&n.path);
                let rest = n.path.strip_prefix(&from).expect("prefix").to_path_buf();
                n.path = if rest.as_os_str().is_empty() { to.clone() } else { to.join(rest) };
                st.by_path.insert(n.path.clone(), i);
            }
            st.add_child(newparent.0, newname, ino);
        }
        reply.ok()
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut st = self.state();
        let path = match st.node(ino) {
            Ok(n) => self.full(&n.path),
            Err(e) => return reply.error(e),
        };
        match self.open_backing(&path, flags.0) {
            Ok(file) => {
                let fh = self.add_open(&mut st, ino.0, file, &path);
                reply.opened(FileHandle(fh), self.fopen_flags(flags.0))
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let mut st = self.state();
        let Some(of) = st.files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        let (file, direct) = (Arc::clone(&of.file), of.direct.clone());
        let (len, eof) = match file.metadata() {
            Ok(m) => (m.len().saturating_sub(offset).min(size as u64), m.len()),
            Err(e) => return reply.error(errno(&e)),
        };
        if len == 0 {
            return reply.data(&[]);
        }
        let st = &mut *st;
        let Some(n) = st.nodes.get_mut(&ino.0) else { return reply.error(Errno::ENOENT) };
        if st.alloc.extend(&mut n.map, offset + len).is_err() {
            return reply.error(Errno::ENOSPC);
        }
        let pieces = n.map.pieces(offset, len);
        self.counters.reads.fetch_add(1, Ordering::Relaxed);
        let g = Gather::new(&pieces, Answer::Read { reply, len }, self);
        let h = &self.io(st, req.pid()).sync;
        self.submit(h, Op::Read, &file, direct.as_ref().map(|d| (d, eof)), &pieces, None, &g);
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut st = self.state();
        let Some(of) = st.files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        let file = Arc::clone(&of.file);
        if data.is_empty() {
            return reply.written(0);
        }
        let st = &mut *st;
        let Some(n) = st.nodes.get_mut(&ino.0) else { return reply.error(Errno::ENOENT) };
        if st.alloc.extend(&mut n.map, offset + data.len() as u64).is_err() {
            return reply.error(Errno::ENOSPC);
        }
        let pieces = n.map.pieces(offset, data.len() as u64);
        self.counters.writes.fetch_add(1, Ordering::Relaxed);
        let g = Gather::new(&pieces, Answer::Write { reply, len: data.len() as u32 }, self);
        // Page-cache writeback is asynchronous; a write the caller waits for is not.
        let cached = write_flags.contains(WriteFlags::FUSE_WRITE_CACHE);
        let io = self.io(st, req.pid());
        let h = if cached { &io.background } else { &io.sync };
        self.submit(h, Op::Write, &file, None, &pieces, Some(data), &g);
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        // close(): nothing of ours is buffered (the kernel wrote its cached pages first).
        reply.ok()
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = self.state();
        if let Some(of) = st.files.remove(&fh.0) {
            let st = &mut *st;
            if let Some(n) = st.nodes.get_mut(&of.ino) {
                n.opens -= 1;
                if n.gone && n.opens == 0 {
                    let mut n = st.nodes.remove(&of.ino).expect("node");
                    st.alloc.free(&mut n.map);
                }
            }
        }
        reply.ok()
    }

    fn fsync(&self, req: &Request, _ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let mut st = self.state();
        let Some(of) = st.files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        let file = Arc::clone(&of.file);
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        let g = Gather::new(&[], Answer::Sync(reply), self);
        let h = &self.io(&mut st, req.pid()).sync;
        self.counters.in_flight.fetch_add(1, Ordering::Relaxed);
        let g2 = Arc::clone(&g);
        let place = Place { file, offset: 0 };
        if let Err(e) = h.submit_placed(Op::Flush, 0, 0, place, IoBuf::new(0), move |c| g2.piece(0, c)) {
            g.piece(usize::MAX, Completion { buf: None, result: Err(e) });
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let mut st = self.state();
        let (rel, parent) = match st.node(ino) {
            Ok(n) if n.kind == FileType::Directory => {
                let parent = n.path.parent().and_then(|p| st.by_path.get(p).copied()).unwrap_or(INodeNo::ROOT.0);
                (n.path.clone(), parent)
            }
            Ok(_) => return reply.error(Errno::ENOTDIR),
            Err(e) => return reply.error(e),
        };
        if offset == 0 {
            // Names BACKING gained or lost behind our back, before the listing starts.
            if let Err(e) = self.reconcile(&mut st, ino, &rel) {
                return reply.error(errno(&e));
            }
        }
        let n = &st.nodes[&ino.0];
        let mut entries: Vec<(u64, u64, FileType, &OsStr)> =
            vec![(ino.0, 1, FileType::Directory, OsStr::new(".")), (parent, 2, FileType::Directory, OsStr::new(".."))];
        for (name, i, cookie) in &n.children {
            let kind = st.nodes.get(i).map_or(FileType::RegularFile, |c| c.kind);
            entries.push((*i, *cookie, kind, name));
        }
        // Resume after the entry whose cookie the kernel gave back.
        for (i, cookie, kind, name) in entries.into_iter().filter(|e| e.1 > offset) {
            if reply.add(INodeNo(i), cookie, kind, name) {
                break;
            }
        }
        reply.ok()
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let st = self.state();
        let (blocks, free) = st.alloc.blocks();
        // No more than BACKING's filesystem can take either.
        let backing_free = File::open(&self.root)
            .and_then(|f| iosched_rt::fs_space(&f))
            .map(|(avail, _)| avail / BLOCK)
            .unwrap_or(free);
        let free = free.min(backing_free);
        reply.statfs(blocks, free, free, st.nodes.len() as u64 + free, free, BLOCK as u32, 255, BLOCK as u32);
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.state();
        let rel = match self.child_path(&st, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        let full = self.full(&rel);
        let mut o = self.backing_options(flags);
        o.create(true).mode(mode & !umask & 0o7777);
        if flags & libc::O_EXCL != 0 {
            o.create_new(true);
        }
        if flags & libc::O_TRUNC != 0 {
            o.truncate(true);
        }
        let existed = std::fs::symlink_metadata(&full).is_ok();
        // open(2) applies the daemon's own umask on top of the caller's: set the mode the
        // caller asked for on a file this call created.
        let r = o
            .open(&full)
            .and_then(|f| {
                if !existed {
                    f.set_permissions(std::fs::Permissions::from_mode(mode & !umask & 0o7777))?;
                }
                Ok(f)
            })
            .and_then(|f| f.metadata().map(|m| (f, m)));
        match r {
            Ok((file, m)) => match self.entry(&mut st, parent, name) {
                Ok((ino, _)) => {
                    let fh = self.add_open(&mut st, ino, file, &full);
                    reply.created(&TTL, &attr(ino, &m), Generation(0), FileHandle(fh), self.fopen_flags(flags))
                }
                Err(e) => reply.error(e),
            },
            Err(e) => reply.error(errno(&e)),
        }
    }
}

impl Fs {
    /// How BACKING's file is opened for a caller's `flags`: never `O_APPEND` (every write
    /// names its offset, and Linux appends whatever the offset with it) nor `O_DIRECT`
    /// (FUSE requests need not be aligned; a direct caller bypasses the mount's page cache
    /// instead, see [`Fs::fopen_flags`]); read-write whenever it writes, as writeback
    /// caching may read to fill a partly written page.
    fn backing_options(&self, flags: i32) -> OpenOptions {
        let mut o = OpenOptions::new();
        match flags & libc::O_ACCMODE {
            libc::O_RDONLY => o.read(true),
            libc::O_WRONLY if !self.settings.writeback_cache => o.write(true),
            _ => o.read(true).write(true),
        };
        o.custom_flags(flags & libc::O_NOFOLLOW);
        o
    }

    /// BACKING's file for a caller's `open`, with `O_NOATIME` where it is allowed (the
    /// file's owner, or root): our reads are the programs' reads, and the backing file
    /// system would otherwise write access times of its own.
    fn open_backing(&self, path: &Path, flags: i32) -> io::Result<File> {
        let mut o = self.backing_options(flags);
        match o.custom_flags((flags & libc::O_NOFOLLOW) | libc::O_NOATIME).open(path) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => self.backing_options(flags).open(path),
            r => r,
        }
    }

    /// BACKING's file opened read-only with `O_DIRECT` (and `O_NOATIME` where allowed), or
    /// `None` where its file system refuses direct I/O.
    fn open_direct(&self, path: &Path) -> Option<File> {
        let open = |extra: i32| OpenOptions::new().read(true).custom_flags(libc::O_DIRECT | extra).open(path);
        match open(libc::O_NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(0).ok(),
            r => r.ok(),
        }
    }

    /// `FOPEN_DIRECT_IO` for an `O_DIRECT` caller when passthrough is on: each of its
    /// reads and writes reaches us as it made it, past the page cache. Every other open
    /// gets `FOPEN_KEEP_CACHE`: FUSE would otherwise drop a file's cached pages at each
    /// open, where a local file system keeps them (a file written and then read, or read
    /// twice, would go to the disk again). BACKING changed behind the mount's back may
    /// then be read stale from the cache.
    fn fopen_flags(&self, flags: i32) -> FopenFlags {
        if self.settings.direct_io && flags & libc::O_DIRECT != 0 {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        }
    }

    fn add_open(&self, st: &mut State, ino: u64, file: File, path: &Path) -> u64 {
        let fh = st.next_fh;
        st.next_fh += 1;
        // A second descriptor with O_DIRECT for reads, where BACKING's file system takes it.
        let direct = self.settings.backing_direct.then(|| self.open_direct(path)).flatten().map(Arc::new);
        st.files.insert(fh, OpenFile { ino, file: Arc::new(file), direct });
        if let Some(n) = st.nodes.get_mut(&ino) {
            n.opens += 1;
        }
        fh
    }

    /// `unlink` and `rmdir`: remove `name` from BACKING with `remove`, then forget it.
    fn remove(&self, parent: INodeNo, name: &OsStr, remove: fn(&Path) -> io::Result<()>, reply: ReplyEmpty) {
        let mut st = self.state();
        let rel = match self.child_path(&st, parent, name) {
            Ok(p) => p,
            Err(e) => return reply.error(e),
        };
        match remove(&self.full(&rel)) {
            Ok(()) => {
                if let Some(&ino) = st.by_path.get(&rel) {
                    st.drop_node(ino);
                }
                st.unlink_child(parent.0, name);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    /// Bring a directory's children in line with BACKING: new names are added (sorted,
    /// after the known ones), vanished ones dropped.
    fn reconcile(&self, st: &mut State, ino: INodeNo, rel: &Path) -> io::Result<()> {
        let mut names: Vec<OsString> =
            std::fs::read_dir(self.full(rel))?.map(|e| e.map(|e| e.file_name())).collect::<io::Result<_>>()?;
        names.sort();
        let known: Vec<(OsString, u64, u64)> = st.nodes[&ino.0].children.clone();
        for (name, i, _) in &known {
            if names.binary_search(name).is_err() {
                st.drop_node(*i);
                st.unlink_child(ino.0, name);
            }
        }
        for name in names {
            if !known.iter().any(|(n, _, _)| *n == name) {
                self.entry(st, ino, &name).map_err(|e| io::Error::from_raw_os_error(i32::from(e)))?;
            }
        }
        Ok(())
    }
}
