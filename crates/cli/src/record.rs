//! `--record FILE`: where queue-input traces go, for the real runtime and the simulated
//! benchmarks alike (`iosched replay` reads them).

use iosched_core::trace::{self, HEADER, Trace};
use std::path::{Path, PathBuf};

/// `--record`, if given, checked before anything runs (`runs` of them): whether to keep
/// traces. A trace path with nowhere to go is refused now (a directory we may not write to
/// still shows only when the trace is written), and so is one that would overwrite a file
/// that is not a trace of ours: the path itself for one run, `FILE.1` … `FILE.<runs>` for
/// several.
pub fn check(r: Option<&Path>, runs: usize) -> Result<bool, String> {
    let Some(r) = r else {
        return Ok(false);
    };
    let dir = r.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.exists() {
        return Err(format!("--record {}: directory {} does not exist", r.display(), dir.display()));
    }
    if !dir.is_dir() {
        return Err(format!("--record {}: {} is not a directory", r.display(), dir.display()));
    }
    if r.is_dir() {
        return Err(format!("--record {}: is a directory; expected a file path", r.display()));
    }
    for n in 1..=runs.max(1) {
        may_write(&path(r, n, runs))?;
    }
    Ok(true)
}

/// A trace may replace only a trace: a file that does not exist, or one whose first line
/// is the header `Trace::to_text` writes. Anything else is someone's data.
fn may_write(p: &Path) -> Result<(), String> {
    may_replace("--record", p, false, trace::is_header, &format!("an iosched trace (its first line is not `{HEADER}`)"))
}

/// Whether the command may write its own kind of file at `p` (`opt` names the option in
/// errors): a path that does not exist, an empty file if `empty_ok`, or a regular file
/// whose first non-blank line `ours` recognises. Never a directory, FIFO or device (a FIFO
/// is not opened: opening it to read would wait for a writer), nor a dangling symbolic
/// link (writing would create whatever it names).
pub fn may_replace(opt: &str, p: &Path, empty_ok: bool, ours: fn(&str) -> bool, what: &str) -> Result<(), String> {
    use std::io::Read;
    // Look before opening: opening a FIFO to read it would wait for a writer.
    match std::fs::metadata(p) {
        // A dangling symbolic link would create whatever it names: refused.
        Err(_) if std::fs::symlink_metadata(p).is_ok() => {
            return Err(format!("{opt} {}: a symbolic link to nothing; give a plain path", p.display()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{opt} {}: {e}", p.display())),
        Ok(m) if !m.is_file() => {
            return Err(format!("{opt} {}: exists and is not a regular file; give a new path", p.display()));
        }
        Ok(m) if m.len() == 0 && empty_ok => return Ok(()),
        Ok(_) => {}
    }
    let mut f = std::fs::File::open(p).map_err(|e| format!("{opt} {}: {e}", p.display()))?;
    let mut head = Vec::new();
    let _ = f.by_ref().take(4096).read_to_end(&mut head);
    if !String::from_utf8_lossy(&head).lines().find(|l| !l.trim().is_empty()).is_some_and(ours) {
        return Err(format!(
            "{opt} {}: the file exists and is not {what}; not overwriting it: remove it or give another path",
            p.display(),
        ));
    }
    Ok(())
}

/// The file for run `n` (from 1) of `runs`: `base` itself for a single run, else `base.n`.
pub fn path(base: &Path, n: usize, runs: usize) -> PathBuf {
    if runs == 1 {
        base.to_path_buf()
    } else {
        let mut s = base.as_os_str().to_owned();
        s.push(format!(".{n}"));
        PathBuf::from(s)
    }
}

/// Write trace `n` of `runs`; unless `quiet`, say where on stderr.
pub fn write(base: &Path, t: &Trace, n: usize, runs: usize, quiet: bool) -> Result<(), String> {
    let p = path(base, n, runs);
    // Checked again here: the run may have created the file since (e.g. as its target).
    may_write(&p)?;
    std::fs::write(&p, t.to_text()).map_err(|e| format!("--record {}: {e}", p.display()))?;
    if !quiet {
        let run = t.meta.iter().find(|(k, _)| k == "run").map(|(_, v)| format!(" ({v})")).unwrap_or_default();
        eprintln!(
            "recorded {} queue inputs{run} to {} (check with `iosched replay {}`)",
            t.records.len(),
            p.display(),
            p.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let b = Path::new("/tmp/t.trace");
        assert_eq!(path(b, 1, 1), PathBuf::from("/tmp/t.trace"));
        assert_eq!(path(b, 2, 3), PathBuf::from("/tmp/t.trace.2"));
    }

    #[test]
    fn only_a_trace_is_overwritten() {
        let dir = std::env::temp_dir().join(format!("iosched-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("t.trace");
        let check = |p: &Path| check(Some(p), 1);
        assert_eq!(check(&base), Ok(true), "a new path");
        std::fs::write(&base, "# iosched trace v1\n10 U\n").unwrap();
        assert_eq!(check(&base), Ok(true), "our own trace");
        std::fs::write(&base, "\n#  iosched trace v1 (from host A)\n10 U\n").unwrap();
        assert_eq!(check(&base), Ok(true), "a trace as replay reads it");
        std::fs::write(&base, "precious data\n").unwrap();
        let e = check(&base).unwrap_err();
        assert!(e.contains("not an iosched trace") && e.contains("t.trace"), "{e}");
        std::fs::write(&base, "").unwrap();
        assert!(check(&base).is_err(), "an empty file is not ours either");
        std::fs::remove_file(&base).unwrap();
        // A FIFO is refused without being opened (which would wait for a writer).
        assert!(std::process::Command::new("mkfifo").arg(&base).status().unwrap().success());
        assert!(check(&base).unwrap_err().contains("not a regular file"));
        std::fs::remove_file(&base).unwrap();
        // The numbered files a run of several would write are checked, and only those.
        std::fs::write(dir.join("t.trace.2"), "precious").unwrap();
        assert_eq!(check(&base), Ok(true), "one run writes only t.trace");
        let e = super::check(Some(&base), 3).unwrap_err();
        assert!(e.contains("t.trace.2"), "{e}");
        assert_eq!(super::check(Some(&base), 1), Ok(true));
        std::fs::remove_file(dir.join("t.trace.2")).unwrap();
        assert_eq!(super::check(Some(&base), 3), Ok(true));
        // And at write time.
        std::fs::write(&base, "precious").unwrap();
        let t = Trace::parse("# iosched trace v1\n10 U\n").unwrap();
        assert!(write(&base, &t, 1, 1, true).is_err());
        assert_eq!(std::fs::read_to_string(&base).unwrap(), "precious");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
