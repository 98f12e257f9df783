//! The request model: what a submitter hands to the block layer and what a policy sees.
//!
//! One type, [`Request`], serves both as the submitted unit (the kernel's bio) and as the
//! queued unit (the kernel's request, which may have absorbed several bios by merging).

use crate::time::Instant;
use core::fmt;

/// Identifies a submitted unit of I/O. The same value is used as io_uring `user_data` by
/// the real runtime. A merged request keeps the id of the request the others merged into.
pub type ReqId = u64;

/// The operation of a request.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    Read,
    Write,
    /// A cache flush / barrier: drains the scheduler and is never merged or reordered.
    Flush,
    /// A discard (trim): a write-direction request that is never merged.
    Discard,
}

impl Op {
    /// The data direction used for the request pool and for deadline's two queues.
    pub fn dir(self) -> Dir {
        match self {
            Op::Read => Dir::Read,
            Op::Write | Op::Flush | Op::Discard => Dir::Write,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
        }
    }
}

/// Data direction (the kernel's `rq_data_dir`): READ = 0, WRITE = 1.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Dir {
    Read = 0,
    Write = 1,
}

impl Dir {
    pub const BOTH: [Dir; 2] = [Dir::Read, Dir::Write];
    pub fn index(self) -> usize {
        self as usize
    }
    pub fn other(self) -> Dir {
        match self {
            Dir::Read => Dir::Write,
            Dir::Write => Dir::Read,
        }
    }
}

/// I/O scheduling class (`include/linux/ioprio.h`).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum IoClass {
    /// Never set: CFQ maps it to best-effort with a level derived from CPU nice.
    None = 0,
    RealTime = 1,
    BestEffort = 2,
    Idle = 3,
}

/// An I/O priority: class and level (0 = highest .. 7 = lowest).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct IoPrio {
    pub class: IoClass,
    pub level: u8,
}

impl IoPrio {
    /// `IOPRIO_NORM`.
    pub const NORM_LEVEL: u8 = 4;
    /// The priority of a task that never called `ioprio_set` (class NONE, nice 0).
    pub const NONE: IoPrio = IoPrio { class: IoClass::None, level: 4 };

    pub fn new(class: IoClass, level: u8) -> Self {
        assert!(level < 8, "I/O priority level must be 0..=7");
        IoPrio { class, level }
    }
    pub fn be(level: u8) -> Self {
        Self::new(IoClass::BestEffort, level)
    }
    pub fn rt(level: u8) -> Self {
        Self::new(IoClass::RealTime, level)
    }
    pub fn idle() -> Self {
        Self::new(IoClass::Idle, 7)
    }
    /// The class as CFQ uses it: NONE counts as best-effort.
    pub fn effective_class(self) -> IoClass {
        if self.class == IoClass::None { IoClass::BestEffort } else { self.class }
    }
    /// `ioprio_best`: the better of two priorities (NONE counts as BE; lower class number
    /// wins; same class → lower level).
    pub fn best(a: IoPrio, b: IoPrio) -> IoPrio {
        let (ca, cb) = (a.effective_class(), b.effective_class());
        if ca != cb {
            return if ca < cb { a } else { b };
        }
        if a.level <= b.level { a } else { b }
    }
    /// Parse `be/4`, `rt/0`, `idle`, `none`.
    pub fn parse(s: &str) -> Result<IoPrio, String> {
        let s = s.trim().to_ascii_lowercase();
        if s == "idle" {
            return Ok(IoPrio::idle());
        }
        if s == "none" {
            return Ok(IoPrio::NONE);
        }
        let (class, level) =
            s.split_once('/').ok_or_else(|| format!("bad I/O priority `{s}`: expected rt/N, be/N, idle or none"))?;
        let class = match class {
            "rt" => IoClass::RealTime,
            "be" => IoClass::BestEffort,
            // These have no level (ionice ignores one given with -c3), and the trace writes
            // them without one: a level here would be dropped on the way through.
            "idle" | "none" => {
                return Err(format!("bad I/O priority `{s}`: the {class} class has no level; write {class}"));
            }
            other => {
                return Err(format!("bad I/O priority class `{other}`: expected rt, be, idle or none"));
            }
        };
        let level: u8 = level
            .parse()
            .ok()
            .filter(|l| *l < 8)
            .ok_or_else(|| format!("bad I/O priority level `{level}`: expected 0..=7"))?;
        Ok(IoPrio { class, level })
    }
}

impl Default for IoPrio {
    fn default() -> Self {
        IoPrio::NONE
    }
}

impl fmt::Display for IoPrio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.class {
            IoClass::None => write!(f, "none"),
            IoClass::RealTime => write!(f, "rt/{}", self.level),
            IoClass::BestEffort => write!(f, "be/{}", self.level),
            IoClass::Idle => write!(f, "idle"),
        }
    }
}

/// A process identity (the kernel's io_context owner). AS, CFQ and BFQ keep per-owner
/// state; all requests of one task share one owner.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Default)]
pub struct Owner(pub u64);

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A request: a contiguous range of 512-byte sectors in one direction.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Request {
    pub id: ReqId,
    pub op: Op,
    /// First sector (512 bytes each).
    pub sector: u64,
    /// Length in 512-byte sectors.
    pub len_sectors: u32,
    /// Synchronous in the 2.6.20 sense: every read, and writes flagged sync (O_DIRECT).
    pub sync: bool,
    /// Filesystem metadata (CFQ prefers it).
    pub meta: bool,
    pub prio: IoPrio,
    pub owner: Owner,
    /// When the request was created (`start_time`); a merge keeps the older of two.
    pub arrival: Instant,
}

impl Request {
    /// A read (always sync).
    pub fn read(id: ReqId, sector: u64, len_sectors: u32, owner: Owner, arrival: Instant) -> Self {
        Request { id, op: Op::Read, sector, len_sectors, sync: true, meta: false, prio: IoPrio::NONE, owner, arrival }
    }
    /// An asynchronous (buffered writeback) write.
    pub fn write(id: ReqId, sector: u64, len_sectors: u32, owner: Owner, arrival: Instant) -> Self {
        Request { op: Op::Write, sync: false, ..Self::read(id, sector, len_sectors, owner, arrival) }
    }
    pub fn with_sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }
    pub fn with_prio(mut self, prio: IoPrio) -> Self {
        self.prio = prio;
        self
    }
    pub fn with_meta(mut self, meta: bool) -> Self {
        self.meta = meta;
        self
    }
    /// One past the last sector.
    pub fn end(&self) -> u64 {
        self.sector + self.len_sectors as u64
    }
    pub fn dir(&self) -> Dir {
        self.op.dir()
    }
    /// The AS/CFQ class: reads and sync writes are sync.
    pub fn is_sync(&self) -> bool {
        self.op == Op::Read || self.sync
    }
    pub fn bytes(&self) -> u64 {
        self.len_sectors as u64 * 512
    }
}

/// How a request finished.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Status {
    Ok,
    /// The device reported an error (the errno, positive).
    Error(i32),
    /// Fewer bytes than asked were transferred.
    Short(u32),
}

impl Status {
    /// A failed completion as traces and scenario scripts write it, `err=N`: N must be an
    /// errno (1..=4095, Linux's `MAX_ERRNO`), as the kernel's completions carry it
    /// (negated there) and the runtime records it.
    pub fn parse_err(word: &str) -> Result<Status, String> {
        word.strip_prefix("err=")
            .and_then(|e| e.parse().ok())
            .filter(|e| (1..=4095).contains(e))
            .map(Status::Error)
            .ok_or_else(|| format!("expected err=N with an errno N in 1..=4095, got `{word}`"))
    }
}
