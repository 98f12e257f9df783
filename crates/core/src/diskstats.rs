//! The block layer's per-disk accounting, as `/proc/diskstats` reports it and fio's "Disk
//! stats" line reads it (Linux 2.6.20, `block/ll_rw_blk.c`), kept by the [`crate::Queue`]:
//!
//! - a new request (`add_request` → `drive_stat_acct(rq, nr_sectors, 1)`) is in flight
//!   from then on, in the scheduler or on the device;
//! - a bio merged into a request (`__make_request` → `drive_stat_acct(rq, nr_sectors, 0)`)
//!   is one merge in its direction;
//! - a request another absorbs (`attempt_merge`) is no longer in flight, and is no merge;
//! - a completion (`end_that_request_last`) is one I/O and its sectors in its direction,
//!   and adds the time since the request was made (`start_time`: a merge keeps the older
//!   of two) to that direction's ticks.
//!
//! Whenever the in-flight count changes, `disk_round_stats` first adds the time since the
//! last change to `io_ticks` if anything was in flight, and that time × the count to
//! `time_in_queue`. Only reads and writes count (`blk_fs_request`), not flushes or
//! discards.

use crate::request::{Op, Request};
use crate::time::{Duration, Instant};

/// A disk's counters since the queue was made (the fields of `/proc/diskstats` that fio
/// reads; index 0 reads, 1 writes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    pub ios: [u64; 2],
    pub merges: [u64; 2],
    pub sectors: [u64; 2],
    pub ticks: [Duration; 2],
    /// Time with at least one request in flight.
    pub io_ticks: Duration,
    /// Time × requests in flight.
    pub time_in_queue: Duration,
}

/// The counters and the in-flight count they are rounded with.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accounting {
    stats: DiskStats,
    in_flight: u32,
    stamp: Instant,
}

/// `blk_fs_request`: what the accounting counts.
fn counted(rq: &Request) -> bool {
    matches!(rq.op, Op::Read | Op::Write)
}

impl Accounting {
    /// `disk_round_stats`.
    fn round(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.stamp);
        if self.in_flight > 0 {
            self.stats.io_ticks += dt;
            self.stats.time_in_queue += dt * self.in_flight;
        }
        self.stamp = now;
    }

    /// A request was made for `rq`.
    pub(crate) fn started(&mut self, now: Instant, rq: &Request) {
        if counted(rq) {
            self.round(now);
            self.in_flight += 1;
        }
    }

    /// A bio was merged into a request.
    pub(crate) fn merged(&mut self, bio: &Request) {
        if counted(bio) {
            self.stats.merges[bio.dir().index()] += 1;
        }
    }

    /// A request was absorbed by another.
    pub(crate) fn absorbed(&mut self, now: Instant, rq: &Request) {
        if counted(rq) {
            self.round(now);
            self.in_flight -= 1;
        }
    }

    /// A request completed.
    pub(crate) fn completed(&mut self, now: Instant, rq: &Request) {
        if counted(rq) {
            let d = rq.dir().index();
            self.stats.ticks[d] += now.saturating_duration_since(rq.arrival);
            self.stats.ios[d] += 1;
            self.stats.sectors[d] += rq.len_sectors as u64;
            self.round(now);
            self.in_flight -= 1;
        }
    }

    /// The counters as `/proc/diskstats` would show them at `now`.
    pub(crate) fn at(&self, now: Instant) -> DiskStats {
        let mut a = self.clone();
        a.round(now);
        a.stats
    }
}
