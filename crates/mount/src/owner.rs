//! Who asked: the process behind a FUSE request, as the kernel's schedulers saw it.
//!
//! A FUSE request carries the caller's thread id (`fuse_in_header.pid` is the calling
//! task's pid, which for a thread is its tid). AS and CFQ keep their state per
//! `io_context`, which in 2.6 belongs to a process: its threads share it (`CLONE_IO` made
//! that explicit in 2.6.25; before, threads created with `CLONE_VM` shared it). So by
//! default a request is owned by the thread group, read from `/proc/<tid>/status`
//! (`Tgid:`); [`Attribution::Thread`] keeps threads apart.
//!
//! Requests the kernel sends on nobody's behalf (page-cache writeback from the flusher
//! threads) carry pid 0; they are owned by [`WRITEBACK`], one owner, as pdflush's
//! writes were.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The owner of requests with no caller (pid 0): the kernel's writeback.
pub const WRITEBACK: u64 = 0;

/// Whether threads of one process are one owner (the kernel's default) or several.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Attribution {
    #[default]
    Process,
    Thread,
}

impl std::str::FromStr for Attribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "process" => Ok(Attribution::Process),
            "thread" => Ok(Attribution::Thread),
            o => Err(format!("`{o}`: expected process or thread")),
        }
    }
}

/// How long a tid → process answer is trusted: a tid is reused only after its thread
/// exited, and a process lives far longer than this in the loads we serve.
const TRUST: Duration = Duration::from_secs(1);

/// Maps a request's pid to its owner, caching `/proc` lookups.
#[derive(Debug, Default)]
pub struct Owners {
    by: Attribution,
    cache: HashMap<u32, (u64, Instant)>,
}

impl Owners {
    pub fn new(by: Attribution) -> Owners {
        Owners { by, cache: HashMap::new() }
    }

    /// The owner of a request from thread `tid`: its thread group (or itself, by
    /// thread). A thread gone before we looked owns its requests itself.
    pub fn of(&mut self, tid: u32, now: Instant) -> u64 {
        if tid == 0 {
            return WRITEBACK;
        }
        if self.by == Attribution::Thread {
            return tid as u64;
        }
        if let Some(&(o, at)) = self.cache.get(&tid)
            && now.duration_since(at) < TRUST
        {
            return o;
        }
        let o = tgid(tid).unwrap_or(tid) as u64;
        if self.cache.len() > 4096 {
            self.cache.retain(|_, (_, at)| now.duration_since(*at) < TRUST);
        }
        self.cache.insert(tid, (o, now));
        o
    }
}

/// The thread group of `tid`, from `/proc/<tid>/status`.
pub fn tgid(tid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("Tgid:")).and_then(|v| v.trim().parse().ok())
}

/// Whether process `pid` still exists (its `/proc` entry does).
pub fn alive(pid: u64) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_maps_to_its_process_unless_asked_not_to() {
        let me = std::process::id();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            // /proc/thread-self is "<pid>/task/<tid>".
            let link = std::fs::read_link("/proc/thread-self").unwrap();
            tx.send(link.file_name().unwrap().to_str().unwrap().parse::<u32>().unwrap()).unwrap();
            go_rx.recv().unwrap();
        });
        let tid = rx.recv().unwrap();
        assert_ne!(tid, me);
        let now = Instant::now();
        let mut by_process = Owners::new(Attribution::Process);
        assert_eq!(by_process.of(tid, now), me as u64);
        assert_eq!(Owners::new(Attribution::Thread).of(tid, now), tid as u64);
        go_tx.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(by_process.of(0, now), WRITEBACK);
    }
}
