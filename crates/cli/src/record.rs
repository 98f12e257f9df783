//! `--record FILE`: where queue-input traces go, for the real runtime and the simulated
//! benchmarks alike (`iosched replay` reads them).

use iosched_core::trace::Trace;
use std::path::{Path, PathBuf};

/// `--record`, if given, checked before anything runs: whether to keep traces. A trace
/// path with nowhere to go is refused now (a directory we may not write to still shows
/// only when the trace is written).
pub fn check(r: Option<&Path>) -> Result<bool, String> {
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
    Ok(true)
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
}
