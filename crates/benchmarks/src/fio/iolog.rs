//! I/O logs a job replays (`read_iolog=`) or writes (`write_iolog=`): fio's iolog formats
//! (`iolog.c`, HOWTO "Trace file format v2/v3"), and, recognised by content, two traces
//! people already have — blkparse's default text output and the SNIA/MSR Cambridge CSV.
//!
//! - **v2** (`fio version 2 iolog`): `file add|open|close`, `file read|write|sync|
//!   datasync|trim offset length`, and `file wait usec 0` — a pause, relative to the
//!   previous `wait` (the HOWTO's rule; waits under 100 µs are discarded).
//! - **v3** (`fio version 3 iolog`, fio 3.31+, what `write_iolog` writes): the same with
//!   a leading timestamp, µs from the start of the run; no `wait`.
//! - **blkparse** (`blkparse -i trace` default output): `maj,min cpu seq seconds pid
//!   action rwbs sector + sectors [process]`. Each `Q` (queued) event is one I/O — the
//!   requests as the submitter made them, before merging; the other actions are the
//!   block layer's and are skipped. One file per device (`dev-MAJ-MIN`). The summary
//!   after the events (`CPU0 (…):`, `Total (…):`) ends the trace.
//! - **MSR Cambridge** (`Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`):
//!   timestamps in Windows filetime (100 ns); one file per host and disk.
//!
//! The timing (`delay_since_ttime`): an I/O of a timed log goes no earlier than its
//! timestamp's distance from the previous one after the previous I/O was issued, scaled
//! by `replay_time_scale` (percent: 200 replays twice as fast); `replay_no_stall` drops
//! the delays, leaving only the order. In a v3 log, as in fio, an entry after one stamped
//! 0 has no delay. Trim is refused: the simulator's host has none.

use super::jobfile::{Error, Origin};
use std::path::Path;

/// The largest log a job may name.
pub const MAX_IOLOG_BYTES: u64 = 1 << 30;
/// The most I/Os a log may hold.
pub const MAX_ENTRIES: usize = 20_000_000;

/// The formats, as the report names them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Format {
    V2,
    V3,
    Blkparse,
    Msr,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::V2 => "fio iolog v2",
            Format::V3 => "fio iolog v3",
            Format::Blkparse => "blkparse text",
            Format::Msr => "MSR Cambridge CSV",
        }
    }
}

/// What one line of a log does.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Read,
    Write,
    Sync,
    Datasync,
    /// v2 `wait`: pause this many µs.
    Wait(u64),
}

/// One I/O (or sync, or wait) of a log.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// µs from the start of the run (timed formats).
    pub at_us: Option<u64>,
    /// Index into [`Iolog::files`].
    pub file: usize,
    pub action: Action,
    pub offset: u64,
    pub len: u64,
}

/// A parsed log.
#[derive(Clone, Debug, PartialEq)]
pub struct Iolog {
    pub format: Format,
    pub files: Vec<String>,
    pub entries: Vec<Entry>,
}

impl Iolog {
    /// Each file's extent: the end of its furthest I/O.
    pub fn extents(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.files.len()];
        for e in &self.entries {
            if matches!(e.action, Action::Read | Action::Write) {
                v[e.file] = v[e.file].max(e.offset + e.len);
            }
        }
        v
    }

    /// The bytes its reads and writes move.
    pub fn bytes(&self) -> u64 {
        self.entries.iter().filter(|e| matches!(e.action, Action::Read | Action::Write)).map(|e| e.len).sum()
    }

    /// The delay before entry `i` (µs after the previous I/O's issue): fio's
    /// `delay_since_ttime`, with `scale` (`replay_time_scale`, percent) and `no_stall`.
    pub fn delay_us(&self, i: usize, scale: u32, no_stall: bool) -> u64 {
        let (Some(t), Some(prev)) = (self.entries[i].at_us, i.checked_sub(1).and_then(|p| self.entries[p].at_us))
        else {
            return 0;
        };
        // fio's v3 quirk: no delay while the last timestamp is 0 (its `!last_ttime`
        // test), so an I/O after one at time 0 goes at once. Traces of the other formats
        // count from their first event, which is at 0 by construction: their gaps all count.
        // Nor any delay when time goes back.
        if no_stall || (prev == 0 && self.format == Format::V3) || t < prev {
            return 0;
        }
        if scale == 100 { t - prev } else { ((t - prev) as f64 * 100.0 / scale as f64) as u64 }
    }

    /// Parse `text`, read from `path`, in whichever format its content is.
    pub fn parse(path: &Path, text: &str) -> Result<Iolog, Error> {
        let err = |line: usize, message: String| Error { origin: Origin::File { path: path.into(), line }, message };
        let first = text.lines().enumerate().find(|(_, l)| !l.trim().is_empty());
        let Some((_, first)) = first else { return Err(err(1, "an empty log: no I/O to replay".into())) };
        let first = first.trim();
        let mut log = if first == "fio version 2 iolog" {
            parse_fio(text, Format::V2, &err)?
        } else if first == "fio version 3 iolog" {
            parse_fio(text, Format::V3, &err)?
        } else if first.starts_with("fio version") {
            return Err(err(1, format!("`{first}`: expected fio iolog version 2 or 3 (version 1 is not read)")));
        } else if is_blkparse(first) {
            parse_blkparse(text, &err)?
        } else if first.split(',').count() >= 7 {
            parse_msr(text, &err)?
        } else {
            return Err(err(
                1,
                "not a log this reader knows: expected `fio version 2 iolog`, `fio version 3 iolog`, blkparse's text \
                 (`8,0 0 1 0.000000000 123 Q R 2048 + 8 [prog]`) or the MSR Cambridge CSV"
                    .into(),
            ));
        };
        if log.entries.iter().all(|e| !matches!(e.action, Action::Read | Action::Write)) {
            return Err(err(1, format!("{}: no read or write in it", log.format.name())));
        }
        log.entries.shrink_to_fit();
        Ok(log)
    }
}

fn file_index(files: &mut Vec<String>, name: &str) -> usize {
    match files.iter().position(|f| f == name) {
        Some(i) => i,
        None => {
            files.push(name.to_string());
            files.len() - 1
        }
    }
}

fn push(entries: &mut Vec<Entry>, e: Entry, line: usize, err: &dyn Fn(usize, String) -> Error) -> Result<(), Error> {
    if entries.len() == MAX_ENTRIES {
        return Err(err(line, format!("more than {MAX_ENTRIES} entries")));
    }
    entries.push(e);
    Ok(())
}

fn parse_fio(text: &str, format: Format, err: &dyn Fn(usize, String) -> Error) -> Result<Iolog, Error> {
    let mut files: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    let mut header = true;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if header {
            header = false;
            continue;
        }
        let mut f: Vec<&str> = line.split_whitespace().collect();
        let at_us = if format == Format::V3 {
            let t = f.first().and_then(|t| t.parse::<u64>().ok()).ok_or_else(|| {
                err(n, format!("field 1 (timestamp): expected µs since the start, got `{}`", f.first().unwrap_or(&"")))
            })?;
            f.remove(0);
            Some(t)
        } else {
            None
        };
        let (name, action) = match f.as_slice() {
            [name, action, ..] => (*name, *action),
            _ => return Err(err(n, format!("expected `filename action [offset length]`, got `{line}`"))),
        };
        match (action, f.len()) {
            ("add", 2) => {
                if files.iter().any(|x| x == name) {
                    return Err(err(n, format!("`{name}` is added twice")));
                }
                files.push(name.to_string());
            }
            ("open" | "close", 2) => {
                if !files.iter().any(|x| x == name) {
                    return Err(err(n, format!("`{name}` {action}ed before it was added")));
                }
            }
            ("read" | "write" | "sync" | "datasync" | "trim" | "wait", 4) => {
                let num = |k: usize, what: &str| {
                    f[k].parse::<u64>()
                        .map_err(|_| err(n, format!("{what}: expected a whole number of bytes, got `{}`", f[k])))
                };
                let (offset, len) = (num(2, "offset")?, num(3, "length")?);
                let file = files
                    .iter()
                    .position(|x| x == name)
                    .ok_or_else(|| err(n, format!("`{name}`: an I/O on a file the log did not add")))?;
                let action = match action {
                    "read" => Action::Read,
                    "write" => Action::Write,
                    "sync" => Action::Sync,
                    "datasync" => Action::Datasync,
                    "trim" => return Err(err(n, "trim: not modelled in the simulator's host".into())),
                    _ if format == Format::V3 => {
                        return Err(err(n, "wait: not allowed in a version 3 log (its timestamps time it)".into()));
                    }
                    // The HOWTO: waits under 100 µs are discarded.
                    _ => Action::Wait(if offset < 100 { 0 } else { offset }),
                };
                if matches!(action, Action::Read | Action::Write) && len == 0 {
                    return Err(err(n, "length 0: expected a positive length".into()));
                }
                if offset.checked_add(len).is_none() {
                    return Err(err(n, "offset + length overflows".into()));
                }
                push(&mut entries, Entry { at_us, file, action, offset, len }, n, err)?;
            }
            _ => {
                return Err(err(
                    n,
                    format!(
                        "`{line}`: expected `filename add|open|close` or `filename read|write|sync|datasync|trim{} \
                         offset length`",
                        if format == Format::V2 { "|wait" } else { "" }
                    ),
                ));
            }
        }
    }
    Ok(Iolog { format, files, entries })
}

/// A blkparse event line starts with the device, `maj,min`.
fn is_blkparse(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|d| d.split_once(',').is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok()))
}

fn parse_blkparse(text: &str, err: &dyn Fn(usize, String) -> Error) -> Result<Iolog, Error> {
    let mut files: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    let mut t0: Option<f64> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        // The per-CPU and total summaries follow the events.
        if line.starts_with("CPU") || line.starts_with("Total") {
            break;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 7 || !is_blkparse(f[0]) {
            return Err(err(
                n,
                format!("expected a blkparse event (`maj,min cpu seq time pid action rwbs …`), got `{line}`"),
            ));
        }
        if f[5] != "Q" {
            continue;
        }
        let secs: f64 = f[3]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| err(n, format!("field 4 (time): expected seconds, got `{}`", f[3])))?;
        let rwbs = f[6];
        let (a, b) = f[0].split_once(',').expect("checked");
        let file = file_index(&mut files, &format!("dev-{a}-{b}"));
        let t = *t0.get_or_insert(secs);
        let at_us = Some(((secs - t).max(0.0) * 1e6).round() as u64);
        if rwbs.contains('D') {
            return Err(err(n, "a discard (trim): not modelled in the simulator's host".into()));
        }
        // `sector + sectors`: absent on a flush (`FWS` with no data).
        let extent = (f.len() >= 10 && f[8] == "+").then(|| (f[7].parse::<u64>().ok(), f[9].parse::<u64>().ok()));
        match extent {
            Some((Some(sector), Some(sectors))) if sectors > 0 => {
                let action = if rwbs.contains('W') {
                    Action::Write
                } else if rwbs.contains('R') {
                    Action::Read
                } else {
                    return Err(err(n, format!("field 7 (rwbs): `{rwbs}` is neither a read nor a write")));
                };
                let e = Entry { at_us, file, action, offset: sector * 512, len: sectors * 512 };
                push(&mut entries, e, n, err)?;
            }
            Some((Some(_), Some(0))) | None if rwbs.contains('F') => {
                push(&mut entries, Entry { at_us, file, action: Action::Sync, offset: 0, len: 0 }, n, err)?;
            }
            _ => return Err(err(n, format!("expected `sector + sectors` after `{rwbs}`, got `{line}`"))),
        }
    }
    Ok(Iolog { format: Format::Blkparse, files, entries })
}

fn parse_msr(text: &str, err: &dyn Fn(usize, String) -> Error) -> Result<Iolog, Error> {
    let mut files: Vec<String> = Vec::new();
    let mut entries = Vec::new();
    let mut t0: Option<u64> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != 7 {
            return Err(err(
                n,
                format!(
                    "expected 7 fields `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, got `{line}`"
                ),
            ));
        }
        if n == 1 && f[0].eq_ignore_ascii_case("timestamp") {
            continue; // a header row
        }
        let num = |k: usize, what: &str| {
            f[k].parse::<u64>()
                .map_err(|_| err(n, format!("field {} ({what}): expected a whole number, got `{}`", k + 1, f[k])))
        };
        let ts = num(0, "Timestamp, Windows filetime")?;
        let action = match f[3].to_ascii_lowercase().as_str() {
            "read" => Action::Read,
            "write" => Action::Write,
            other => return Err(err(n, format!("field 4 (Type): expected Read or Write, got `{other}`"))),
        };
        let (offset, len) = (num(4, "Offset")?, num(5, "Size")?);
        if len == 0 {
            return Err(err(n, "field 6 (Size): expected a positive size".into()));
        }
        let t = *t0.get_or_insert(ts);
        if ts < t {
            return Err(err(n, "field 1 (Timestamp): before the first line's".into()));
        }
        let file = file_index(&mut files, &format!("{}-{}", f[1], f[2]));
        push(&mut entries, Entry { at_us: Some((ts - t) / 10), file, action, offset, len }, n, err)?;
    }
    Ok(Iolog { format: Format::Msr, files, entries })
}

/// One issued I/O as `write_iolog` records it: (µs since the job started, file index,
/// action, offset, length).
pub type Issued = (u64, usize, Action, u64, u64);

/// A v3 log (`write_iolog`): each file added and opened at 0, its I/Os, each file closed
/// at `end_us`.
pub fn write_v3(files: &[String], ios: &[Issued], end_us: u64) -> String {
    let mut s = String::from("fio version 3 iolog\n");
    for f in files {
        s.push_str(&format!("0 {f} add\n0 {f} open\n"));
    }
    for &(t, file, action, offset, len) in ios {
        let a = match action {
            Action::Read => "read",
            Action::Write => "write",
            Action::Sync => "sync",
            Action::Datasync => "datasync",
            Action::Wait(_) => continue,
        };
        s.push_str(&format!("{t} {} {a} {offset} {len}\n", files[file]));
    }
    for f in files {
        s.push_str(&format!("{end_us} {f} close\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Iolog, Error> {
        Iolog::parse(Path::new("t.log"), text)
    }

    #[test]
    fn v2_and_v3_read_back_what_v3_writes() {
        let v3 = write_v3(&["/a".into()], &[(0, 0, Action::Write, 0, 4096), (1500, 0, Action::Read, 8192, 512)], 2000);
        let l = p(&v3).unwrap();
        assert_eq!(l.format, Format::V3);
        assert_eq!(l.entries.len(), 2);
        assert_eq!(l.entries[1], Entry { at_us: Some(1500), file: 0, action: Action::Read, offset: 8192, len: 512 });
        assert_eq!(l.extents(), vec![8704]);
        let v2 = "fio version 2 iolog\n/a add\n/a open\n/a write 0 4096\n/a wait 50 0\n/a wait 2000 0\n/a close\n";
        let l = p(v2).unwrap();
        assert_eq!(l.entries[1].action, Action::Wait(0), "under 100 µs is discarded");
        assert_eq!(l.entries[2].action, Action::Wait(2000));
    }

    #[test]
    fn delays_follow_fios_rule() {
        let v3 = write_v3(
            &["/a".into()],
            &[(0, 0, Action::Write, 0, 1), (10, 0, Action::Write, 0, 1), (1010, 0, Action::Write, 0, 1)],
            2000,
        );
        let l = p(&v3).unwrap();
        assert_eq!(l.delay_us(1, 100, false), 0, "no delay while the last timestamp is 0");
        assert_eq!(l.delay_us(2, 100, false), 1000);
        assert_eq!(l.delay_us(2, 200, false), 500, "200 % replays twice as fast");
        assert_eq!(l.delay_us(2, 100, true), 0);
    }

    #[test]
    fn blkparse_and_msr_are_recognised() {
        let b = "  8,0    0        1     0.000000000   697  Q   R 2048 + 8 [cat]\n  8,0    0        2     0.000001000   697  G   R 2048 + 8 [cat]\n  8,0    0        3     0.002500000   698  Q  WS 4096 + 16 [dd]\n  8,0    0        4     0.003000000   698  Q FWS [dd]\nCPU0 (sda):\n Reads Queued: 1\n";
        let l = p(b).unwrap();
        assert_eq!(l.format, Format::Blkparse);
        assert_eq!(l.files, vec!["dev-8-0"]);
        assert_eq!(l.entries.len(), 3, "Q events only, up to the summary");
        assert_eq!(
            l.entries[1],
            Entry { at_us: Some(2500), file: 0, action: Action::Write, offset: 4096 * 512, len: 16 * 512 }
        );
        assert_eq!(l.entries[2].action, Action::Sync);
        let m = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n128166372003061629,hm,1,Read,3154152960,32768,1331\n128166372003161629,hm,1,Write,4096,4096,100\n";
        let l = p(m).unwrap();
        assert_eq!(l.format, Format::Msr);
        assert_eq!(l.entries[1].at_us, Some(10_000), "filetime is in 100 ns");
        assert_eq!(l.files, vec!["hm-1"]);
    }

    #[test]
    fn bad_lines_name_their_line() {
        let e = p("fio version 3 iolog\n0 /a add\n5 /b read 0 4096\n").unwrap_err();
        assert!(e.to_string().starts_with("t.log:3:") && e.message.contains("did not add"), "{e}");
        let e = p("fio version 3 iolog\n0 /a add\nx /a read 0 4096\n").unwrap_err();
        assert!(e.message.contains("timestamp"), "{e}");
        let e = p("fio version 3 iolog\n0 /a add\n1 /a wait 100 0\n").unwrap_err();
        assert!(e.message.contains("not allowed in a version 3"), "{e}");
        let e = p("fio version 2 iolog\n/a add\n/a trim 0 4096\n").unwrap_err();
        assert!(e.message.contains("trim"), "{e}");
        let e = p("hello\n").unwrap_err();
        assert!(e.message.contains("not a log this reader knows"), "{e}");
        let e = p("1,2,3,Read,0,512,1\n2,2,3,Erase,0,512,1\n").unwrap_err();
        assert!(e.to_string().starts_with("t.log:2:") && e.message.contains("Type"), "{e}");
    }
}
