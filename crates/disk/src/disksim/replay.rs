//! A user's trace through a disk model alone (`iosched disk replay`): no host, no queue,
//! only the drive, as DiskSim runs a trace.
//!
//! Two trace formats, recognised by content:
//!
//! - **DiskSim's ascii input** (`iotrace_ascii_get_ioreq_event`): one request per line,
//!   `<arrival ms> <devno> <blkno> <bcount> <flags>`, times non-decreasing, flags bit 0
//!   set for a read (DiskSim's `READ` = 1). Open arrivals: a request is issued at its
//!   arrival, or when the drive has finished the one before (first come, first served,
//!   one at a time: DiskSim's FCFS queue in front of a drive with no queue of its own).
//! - **DiskSim's validation traces** ([`super::validate::read_trace`]): closed, each
//!   request a gap after the previous one completes, as `iosched disk validate` replays
//!   them.
//!
//! For each request: when it arrived, was issued and completed, hence its service time
//! (issue to completion: DiskSim's "physical access time") and response time (arrival to
//! completion). A measured DiskSim `.outv` gives the distribution to score against: its
//! `VALIDATE Trace access time distribution` histogram, scored with the demerit.

use super::validate::{TraceRequest, ValidationError, demerit, read_trace};
use crate::device::{Device, DiskCommand};
use iosched_core::{Instant, Op};
use serde::Serialize;
use std::path::Path;

/// The most requests a trace may hold (a day of a busy drive).
pub const MAX_REQUESTS: usize = 50_000_000;

/// One request of a trace, in either format.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TraceIo {
    /// Open arrival time, ns (ascii traces); `None` in a closed (validation) trace.
    pub arrival_ns: Option<u64>,
    pub write: bool,
    pub blkno: u64,
    pub bcount: u32,
    /// Closed traces: the gap after this request completes, ns.
    pub next_gap_ns: u64,
    /// The measured service time the trace carries (validation traces), ms.
    pub measured_ms: Option<f64>,
}

/// A trace file's requests, and which format it was.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedTrace {
    pub format: &'static str,
    pub requests: Vec<TraceIo>,
}

/// Read a trace in either format (see the module doc).
pub fn read_any(path: &Path) -> Result<LoadedTrace, ValidationError> {
    let bad = |line: usize, msg: String| ValidationError::Trace { file: path.into(), line, msg };
    let text = crate::input::read_text(path, crate::input::MAX_TRACE_BYTES)
        .map_err(|e| bad(0, format!("cannot read: {e}")))?;
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'));
    let Some(first) = first else { return Err(bad(0, "no request in the trace".into())) };
    if matches!(first.split_whitespace().next(), Some("R" | "W")) {
        let v = read_trace(path)?;
        let requests = v.iter().map(closed).collect();
        return Ok(LoadedTrace { format: "DiskSim validation trace (closed)", requests });
    }
    let mut out = Vec::new();
    let mut last = 0u64;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(bad(
                n,
                format!("expected `arrival_ms devno blkno bcount flags` (DiskSim ascii), got `{line}`"),
            ));
        }
        let t: f64 = f[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0 && *t < 1e12)
            .ok_or_else(|| bad(n, format!("field 1 (arrival ms): expected a time in ms, got `{}`", f[0])))?;
        f[1].parse::<u32>()
            .map_err(|_| bad(n, format!("field 2 (devno): expected a device number, got `{}`", f[1])))?;
        let blkno =
            f[2].parse::<u64>().map_err(|_| bad(n, format!("field 3 (blkno): expected a block, got `{}`", f[2])))?;
        let bcount = f[3]
            .parse::<u32>()
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| bad(n, format!("field 4 (bcount): expected a positive count, got `{}`", f[3])))?;
        let flags =
            f[4].parse::<u32>().map_err(|_| bad(n, format!("field 5 (flags): expected a number, got `{}`", f[4])))?;
        let at = (t * 1e6).round() as u64;
        if at < last {
            return Err(bad(
                n,
                format!("field 1 (arrival ms): {t} is before the line above's; arrivals must not go back"),
            ));
        }
        last = at;
        if out.len() == MAX_REQUESTS {
            return Err(bad(n, format!("more than {MAX_REQUESTS} requests")));
        }
        out.push(TraceIo {
            arrival_ns: Some(at),
            write: flags & 1 == 0,
            blkno,
            bcount,
            next_gap_ns: 0,
            measured_ms: None,
        });
    }
    Ok(LoadedTrace { format: "DiskSim ascii (open arrivals)", requests: out })
}

fn closed(r: &TraceRequest) -> TraceIo {
    TraceIo {
        arrival_ns: None,
        write: r.write,
        blkno: r.blkno,
        bcount: r.bcount,
        next_gap_ns: (r.next_gap_ms * 1e6).round() as u64,
        measured_ms: Some(r.service_ms),
    }
}

/// What the drive did with one request, ns since the start.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Served {
    pub arrival_ns: u64,
    pub issue_ns: u64,
    pub done_ns: u64,
}

impl Served {
    pub fn service_ms(&self) -> f64 {
        (self.done_ns - self.issue_ns) as f64 / 1e6
    }
    pub fn response_ms(&self) -> f64 {
        (self.done_ns - self.arrival_ns) as f64 / 1e6
    }
}

/// Replay `trace` through `dev`, one request at a time (see the module doc). A request
/// beyond the drive's capacity is an error naming it.
pub fn replay(dev: &mut dyn Device, trace: &[TraceIo]) -> Result<Vec<Served>, String> {
    let cap = dev.capacity_sectors();
    let mut out = Vec::with_capacity(trace.len());
    let mut free = 0u64; // when the drive finished the last request
    let mut next_closed = 0u64;
    for (i, r) in trace.iter().enumerate() {
        if r.blkno.saturating_add(r.bcount as u64) > cap {
            return Err(format!(
                "request {} (blkno {}, {} blocks) ends beyond the drive's {cap} sectors",
                i + 1,
                r.blkno,
                r.bcount
            ));
        }
        let arrival = r.arrival_ns.unwrap_or(next_closed);
        let issue = arrival.max(free);
        let op = if r.write { Op::Write } else { Op::Read };
        dev.submit(
            Instant::from_nanos(issue),
            DiskCommand { id: i as u64, op, sector: r.blkno, len_sectors: r.bcount },
        );
        let done = loop {
            let when = dev.poll_timeout().ok_or_else(|| format!("request {}: the drive never completed it", i + 1))?;
            if let Some(c) = dev.poll_completion(when) {
                break c.at.as_nanos();
            }
        };
        out.push(Served { arrival_ns: arrival, issue_ns: issue, done_ns: done });
        free = done;
        next_closed = done + r.next_gap_ns;
    }
    Ok(out)
}

/// The measured access times of a DiskSim `.outv`: its `VALIDATE Trace access time
/// distribution`, each line `<ms> <count> <fraction> <cumulative>`, as samples.
pub fn read_outv_distribution(path: &Path) -> Result<Vec<f64>, ValidationError> {
    let bad = |line: usize, msg: String| ValidationError::Trace { file: path.into(), line, msg };
    let text = crate::input::read_text(path, crate::input::MAX_DISKSIM_BYTES)
        .map_err(|e| bad(0, format!("cannot read: {e}")))?;
    const HEAD: &str = "VALIDATE Trace access time distribution";
    let mut lines = text.lines().enumerate().skip_while(|(_, l)| l.trim() != HEAD);
    if lines.next().is_none() {
        return Err(bad(0, format!("no `{HEAD}` section: not a DiskSim validation output")));
    }
    let mut out = Vec::new();
    for (i, l) in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(ms), Some(count)) = (f.first().and_then(|x| x.parse::<f64>().ok()), f.get(1)) else { break };
        if f.len() != 4 {
            break;
        }
        let c: usize =
            count.parse().map_err(|_| bad(i + 1, format!("field 2 (count): expected a count, got `{count}`")))?;
        if out.len() + c > MAX_REQUESTS {
            return Err(bad(i + 1, format!("more than {MAX_REQUESTS} samples")));
        }
        out.extend(std::iter::repeat_n(ms, c));
    }
    if out.is_empty() {
        return Err(bad(0, format!("`{HEAD}` holds no sample")));
    }
    Ok(out)
}

/// The demerit of `served`'s service times against measured ones (ms), with the measured
/// mean: (demerit ms, demerit in % of the measured mean).
pub fn score(served: &[Served], measured: &[f64]) -> (f64, f64) {
    let ours: Vec<f64> = served.iter().map(Served::service_ms).collect();
    let d = demerit(measured, &ours);
    let mean = measured.iter().sum::<f64>() / measured.len() as f64;
    (d, 100.0 * d / mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::load_profile;

    fn tmp(name: &str, body: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("iosched-disk-replay-{}-{name}", std::process::id()));
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn ascii_arrivals_queue_behind_a_busy_drive() {
        let p = tmp("a.trace", "0.0 0 1000 8 1\n0.0 0 500000 8 1\n100.0 0 1008 8 0\n");
        let t = read_any(&p).unwrap();
        assert_eq!(t.requests.len(), 3);
        assert!(!t.requests[0].write && t.requests[2].write);
        let mut dev = load_profile("ide-2003").unwrap().build_boxed(0);
        let s = replay(dev.as_mut(), &t.requests).unwrap();
        assert_eq!(s[1].issue_ns, s[0].done_ns, "the second waits for the first");
        assert!(s[1].response_ms() > s[1].service_ms());
        assert_eq!(s[2].issue_ns, 100_000_000, "an idle drive takes a request at its arrival");
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn bad_lines_are_named() {
        let p = tmp("b.trace", "0.0 0 1000 8 1\n-1 0 1 1 1\n");
        let e = read_any(&p).unwrap_err().to_string();
        assert!(e.contains(":2:") && e.contains("field 1"), "{e}");
        let p2 = tmp("c.trace", "5.0 0 1000 8 1\n1.0 0 1 1 1\n");
        assert!(read_any(&p2).unwrap_err().to_string().contains("must not go back"));
        let p3 = tmp("d.trace", "5.0 0 1000 0 1\n");
        assert!(read_any(&p3).unwrap_err().to_string().contains("field 4"));
        for p in [p, p2, p3] {
            std::fs::remove_file(p).unwrap();
        }
    }

    #[test]
    fn a_request_beyond_the_drive_is_refused() {
        let mut dev = load_profile("ide-2003").unwrap().build_boxed(0);
        let r = TraceIo {
            arrival_ns: Some(0),
            write: false,
            blkno: u64::MAX - 4,
            bcount: 8,
            next_gap_ns: 0,
            measured_ms: None,
        };
        assert!(replay(dev.as_mut(), &[r]).unwrap_err().contains("beyond"));
    }
}
