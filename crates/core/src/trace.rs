//! The queue-input trace: every input a [`Queue`](crate::Queue) received, with its time, plus the
//! dispatch decisions it produced. Both drivers write it (`--record` of `iosched real …`
//! and of the simulated benchmarks); [`replay`](crate::replay::replay) feeds a
//! recording to a fresh queue and checks that the dispatch sequence is identical — the
//! proof that both drivers run the same code.
//!
//! Text format, one record per line, times in nanoseconds since the start of the run:
//!
//! ```text
//! # iosched trace v1
//! # sched as:antic_expire=6
//! 1000000 A 17 read 2048+8 s prio=none owner=3      arrival (flags: s sync, m meta, - none)
//! 1000000 D 17                                       dispatched to the device (output)
//! 9000000 C 17 ok                                    completion (ok | err=ERRNO, 1..=4095 | short=BYTES)
//! 9000000 R 17                                       requeue
//! 9000000 U                                          unplug
//! 9000000 X 3                                        owner 3 exited
//! 9000000 F                                          drain
//! 9000000 T                                          timeout
//! ```
//! Lines starting with `#` are comments; `# key value` comments carry metadata (`# sched
//! SPEC` at most once). The first line must be `# iosched trace v1`.

use crate::request::{IoPrio, Op, Owner, ReqId, Request, Status};
use crate::time::Instant;
use std::fmt;

/// The first line of every trace; [`Trace::parse`] requires it (before it only blank lines).
pub const HEADER: &str = "# iosched trace v1";

/// Whether `line` is a trace header of some version (`# iosched trace vN`, spaces allowed
/// around `#`): what makes a text a trace, for [`Trace::parse`] and for whoever must not
/// overwrite anything else.
pub fn is_header(line: &str) -> bool {
    line.trim().strip_prefix('#').is_some_and(|h| h.trim_start().starts_with("iosched trace v"))
}

/// One line of a trace.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Record {
    Arrival { at: Instant, rq: Request },
    Completion { at: Instant, id: ReqId, status: Status },
    Requeue { at: Instant, id: ReqId },
    Unplug { at: Instant },
    Exit { at: Instant, owner: Owner },
    Drain { at: Instant },
    Timeout { at: Instant },
    Dispatch { at: Instant, id: ReqId },
}

impl Record {
    pub fn at(&self) -> Instant {
        match *self {
            Record::Arrival { at, .. }
            | Record::Completion { at, .. }
            | Record::Requeue { at, .. }
            | Record::Unplug { at }
            | Record::Exit { at, .. }
            | Record::Drain { at }
            | Record::Timeout { at }
            | Record::Dispatch { at, .. } => at,
        }
    }
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.at().as_nanos();
        match self {
            Record::Arrival { rq, .. } => {
                let mut flags = String::new();
                if rq.sync {
                    flags.push('s');
                }
                if rq.meta {
                    flags.push('m');
                }
                if flags.is_empty() {
                    flags.push('-');
                }
                write!(
                    f,
                    "{t} A {} {} {}+{} {flags} prio={} owner={}",
                    rq.id,
                    rq.op.name(),
                    rq.sector,
                    rq.len_sectors,
                    rq.prio,
                    rq.owner
                )
            }
            Record::Completion { id, status, .. } => match status {
                Status::Ok => write!(f, "{t} C {id} ok"),
                Status::Error(e) => write!(f, "{t} C {id} err={e}"),
                Status::Short(b) => write!(f, "{t} C {id} short={b}"),
            },
            Record::Requeue { id, .. } => write!(f, "{t} R {id}"),
            Record::Unplug { .. } => write!(f, "{t} U"),
            Record::Exit { owner, .. } => write!(f, "{t} X {owner}"),
            Record::Drain { .. } => write!(f, "{t} F"),
            Record::Timeout { .. } => write!(f, "{t} T"),
            Record::Dispatch { id, .. } => write!(f, "{t} D {id}"),
        }
    }
}

/// A parse error naming the line and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub field: &'static str,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: field `{}`: {}", self.line, self.field, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A parsed trace: metadata comments and records.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// `# key value` comment lines, in order.
    pub meta: Vec<(String, String)>,
    pub records: Vec<Record>,
    /// The line of each record in the text it was parsed from ([`Trace::parse`]; empty
    /// for a trace recorded in memory), so a replay can name where it diverged.
    pub lines: Vec<usize>,
}

impl Trace {
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Write the trace in the text format.
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        for (k, v) in &self.meta {
            s.push_str(&format!("# {k} {v}\n"));
        }
        for r in &self.records {
            s.push_str(&r.to_string());
            s.push('\n');
        }
        s
    }

    pub fn parse(text: &str) -> Result<Trace, ParseError> {
        let mut t = Trace::default();
        let mut ids = std::collections::HashSet::new();
        let mut header_seen = false;
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            // The header first: a file without it is not a trace (and replaying, say, an
            // empty log would prove nothing).
            if !header_seen {
                if !is_header(line) {
                    let message = format!("expected the first line to be `{HEADER}`: this is not an iosched trace");
                    return Err(ParseError { line: n, field: "header", message });
                }
                header_seen = true;
            }
            if let Some(c) = line.strip_prefix('#') {
                let c = c.trim();
                if let Some(v) = c.strip_prefix("iosched trace v") {
                    if v.split_whitespace().next() != Some("1") {
                        let message = format!("this is a v1 parser; the file says `{c}`");
                        return Err(ParseError { line: n, field: "version", message });
                    }
                } else if let Some((k, v)) = c.split_once(' ') {
                    // A second `# sched` would be silently ignored (the first wins); other
                    // `# key …` lines are comments that may repeat.
                    if k == "sched" && t.meta(k).is_some() {
                        let message = "a second `# sched` line".to_string();
                        return Err(ParseError { line: n, field: "header", message });
                    }
                    t.meta.push((k.to_string(), v.trim().to_string()));
                }
                continue;
            }
            let r = parse_record(line, n)?;
            // A queue's clock never goes back; a trace that does cannot be replayed.
            if let Some(prev) = t.records.last()
                && r.at() < prev.at()
            {
                return Err(ParseError {
                    line: n,
                    field: "time",
                    message: format!(
                        "goes backwards: {} ns after {} ns on an earlier line",
                        r.at().as_nanos(),
                        prev.at().as_nanos()
                    ),
                });
            }
            if let Record::Arrival { rq, .. } = &r
                && !ids.insert(rq.id)
            {
                return Err(ParseError { line: n, field: "id", message: format!("request {} arrives twice", rq.id) });
            }
            t.records.push(r);
            t.lines.push(n);
        }
        if !header_seen {
            let message = format!("the file is empty: expected `{HEADER}` and records");
            return Err(ParseError { line: 1, field: "header", message });
        }
        Ok(t)
    }
}

fn parse_record(line: &str, n: usize) -> Result<Record, ParseError> {
    let err = |field: &'static str, message: String| ParseError { line: n, field, message };
    let mut it = line.split_whitespace();
    let at: u64 =
        it.next().unwrap().parse().map_err(|_| err("time", "expected nanoseconds as an unsigned integer".into()))?;
    let at = Instant::from_nanos(at);
    let kind = it.next().ok_or_else(|| err("kind", "expected one of A C R U X F T D".into()))?;
    let mut id = |field: &'static str| -> Result<u64, ParseError> {
        it.next()
            .ok_or_else(|| err(field, "missing".into()))?
            .parse::<u64>()
            .map_err(|_| err(field, "expected an unsigned integer".into()))
    };
    let rec = match kind {
        "A" => {
            let rid = id("id")?;
            let rest: Vec<&str> = line.split_whitespace().skip(3).collect();
            if rest.len() != 5 {
                return Err(err("arrival", "expected `OP SECTOR+LEN FLAGS prio=P owner=N`".into()));
            }
            let op = match rest[0] {
                "read" => Op::Read,
                "write" => Op::Write,
                "flush" => Op::Flush,
                "discard" => Op::Discard,
                o => {
                    return Err(err("op", format!("expected read, write, flush or discard, got `{o}`")));
                }
            };
            let (sector, len) = rest[1]
                .split_once('+')
                .ok_or_else(|| err("extent", format!("expected SECTOR+LEN, got `{}`", rest[1])))?;
            let sector: u64 = sector.parse().map_err(|_| err("sector", "expected an unsigned integer".into()))?;
            let len: u32 = len.parse().map_err(|_| err("len", "expected an unsigned 32-bit integer".into()))?;
            if len == 0 && op != Op::Flush {
                return Err(err("len", "expected at least 1 sector (only a flush is empty)".into()));
            }
            if sector.checked_add(len as u64).is_none() {
                return Err(err("extent", "SECTOR+LEN runs past the largest sector number".into()));
            }
            let flags = rest[2];
            if !flags.chars().all(|c| matches!(c, 's' | 'm' | '-')) {
                return Err(err("flags", format!("expected letters s, m or `-`, got `{flags}`")));
            }
            let prio = rest[3]
                .strip_prefix("prio=")
                .ok_or_else(|| err("prio", "expected prio=CLASS/LEVEL".into()))
                .and_then(|p| IoPrio::parse(p).map_err(|m| err("prio", m)))?;
            let owner = rest[4]
                .strip_prefix("owner=")
                .and_then(|o| o.parse().ok())
                .ok_or_else(|| err("owner", "expected owner=N".into()))?;
            Record::Arrival {
                at,
                rq: Request {
                    id: rid,
                    op,
                    sector,
                    len_sectors: len,
                    sync: flags.contains('s'),
                    meta: flags.contains('m'),
                    prio,
                    owner: Owner(owner),
                    arrival: at,
                },
            }
        }
        "C" => {
            let rid = id("id")?;
            let s = it.next().ok_or_else(|| err("status", "missing".into()))?;
            let status = if s == "ok" {
                Status::Ok
            } else if s.starts_with("err=") {
                Status::parse_err(s).map_err(|m| err("status", m))?
            } else if let Some(b) = s.strip_prefix("short=") {
                Status::Short(b.parse().map_err(|_| err("status", "expected short=BYTES".into()))?)
            } else {
                return Err(err("status", format!("expected ok, err=N or short=N, got `{s}`")));
            };
            Record::Completion { at, id: rid, status }
        }
        "R" => Record::Requeue { at, id: id("id")? },
        "D" => Record::Dispatch { at, id: id("id")? },
        "X" => Record::Exit { at, owner: Owner(id("owner")?) },
        "U" => Record::Unplug { at },
        "F" => Record::Drain { at },
        "T" => Record::Timeout { at },
        k => {
            return Err(err("kind", format!("expected one of A C R U X F T D, got `{k}`")));
        }
    };
    // (An arrival's words were counted above.)
    if kind != "A"
        && let Some(extra) = it.next()
    {
        return Err(err("record", format!("unexpected `{extra}` after a complete {kind} record")));
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_text() {
        let rq = Request::read(17, 2048, 8, Owner(3), Instant::from_millis(1)).with_prio(IoPrio::be(2));
        let t = Trace {
            meta: vec![("sched".into(), "as:antic_expire=6".into())],
            records: vec![
                Record::Arrival { at: Instant::from_millis(1), rq },
                Record::Dispatch { at: Instant::from_millis(1), id: 17 },
                Record::Completion { at: Instant::from_millis(9), id: 17, status: Status::Error(5) },
                Record::Exit { at: Instant::from_millis(9), owner: Owner(3) },
                Record::Timeout { at: Instant::from_millis(10) },
            ],
            lines: Vec::new(),
        };
        let text = t.to_text();
        let back = Trace::parse(&text).unwrap();
        assert_eq!((&back.meta, &back.records), (&t.meta, &t.records));
        // Each record's line: the header, the meta line, then one line per record.
        assert_eq!(back.lines, (3..8).collect::<Vec<_>>());
    }

    #[test]
    fn parse_errors_name_line_and_field() {
        // Every text below starts with the header line, so its records start on line 2.
        let parse = |body: &str| Trace::parse(&format!("{HEADER}\n{body}"));
        let e = parse("10 A 1 read 5+x s prio=none owner=1\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert_eq!(e.field, "len");
        let e = parse("10 Q 1\n").unwrap_err();
        assert_eq!(e.field, "kind");
        // Requests the queue would refuse are parse errors, not panics in a replay.
        let e = parse("10 A 1 read 5+0 s prio=none owner=1\n").unwrap_err();
        assert_eq!((e.line, e.field), (2, "len"));
        let e = parse("10 A 1 read 18446744073709551615+8 s prio=none owner=1\n").unwrap_err();
        assert_eq!(e.field, "extent");
        let e = parse("10 A 1 read 5+8 s prio=none owner=1\n11 A 1 read 50+8 s prio=none owner=1\n").unwrap_err();
        assert_eq!((e.line, e.field), (3, "id"));
        parse("10 A 1 flush 0+0 - prio=none owner=1\n").unwrap();
        // The queue's clock never goes back: a replay would panic on such a trace.
        let e = parse("100 U\n50 U\n").unwrap_err();
        assert_eq!((e.line, e.field), (3, "time"), "{e}");
        let e = Trace::parse("# iosched trace v9\n10 U\n").unwrap_err();
        assert_eq!((e.line, e.field), (1, "version"), "{e}");
        let e = parse("# sched deadline\n# sched noop\n").unwrap_err();
        assert_eq!((e.line, e.field), (3, "header"), "{e}");
        // Other comments may repeat, and a comment may follow the version.
        Trace::parse("# iosched trace v1 (from host A)\n# note a\n# note b\n# iosched traces are text\n10 U\n")
            .unwrap();
        // err= carries an errno, as the runtime records it.
        for bad in ["err=0", "err=-5", "err=4096", "err=EIO"] {
            let e = parse(&format!("10 C 1 {bad}\n")).unwrap_err();
            assert_eq!((e.line, e.field), (2, "status"), "{e}");
            assert!(e.to_string().contains("errno N in 1..=4095"), "{e}");
        }
        parse("10 C 1 err=5\n").unwrap();
        let e = parse("10 C 1 ok junk\n").unwrap_err();
        assert_eq!((e.line, e.field), (2, "record"), "{e}");
        let e = parse("10 X 1 2\n").unwrap_err();
        assert_eq!((e.line, e.field), (2, "record"), "{e}");
        // The header comes first (after blank lines only): without it, this is not a trace.
        for (text, line) in [("", 1), ("10 U\n", 1), ("# sched noop\n# iosched trace v1\n10 U\n", 1), ("\n\nx\n", 3)] {
            let e = Trace::parse(text).unwrap_err();
            assert_eq!((e.line, e.field), (line, "header"), "{text:?}: {e}");
        }
        Trace::parse("\n\n# iosched trace v1\n").unwrap();
    }
}
