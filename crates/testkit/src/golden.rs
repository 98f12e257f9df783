//! The golden scenario runner: every `*.scn` script in a directory (the format of
//! `iosched scenario --help`) must pass its own `expect` lines, and its transcript must
//! equal the stored `*.out` beside it. `IOSCHED_BLESS=1` in the caller's test writes the
//! transcripts, after a change in behaviour has been read and is intended.

use std::path::{Path, PathBuf};

/// Runs every `*.scn` in `dir` against its `*.out`; returns how many scripts there were and
/// what failed. Only `bless` writes a transcript: a missing `.out` is a failure, so that
/// deleting one cannot re-bless it.
pub fn check_dir(dir: &Path, bless: bool) -> (usize, Vec<String>) {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => {
            d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "scn")).collect()
        }
        Err(e) => return (0, vec![format!("{}: {e}", dir.display())]),
    };
    files.sort();
    let mut failures = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap_or_default().to_string_lossy().to_string();
        if let Err(e) = check_one(f, bless) {
            failures.push(format!("{name}: {e}"));
        }
    }
    (files.len(), failures)
}

fn check_one(f: &Path, bless: bool) -> Result<(), String> {
    let script = std::fs::read_to_string(f).map_err(|e| e.to_string())?;
    let transcript = iosched_policies::scenario::run(&script).map_err(|e| e.to_string())?;
    let out = f.with_extension("out");
    if bless {
        return std::fs::write(&out, &transcript).map_err(|e| format!("{}: {e}", out.display()));
    }
    if !out.exists() {
        return Err(format!("no stored transcript {} (IOSCHED_BLESS=1 to write it, after reading it)", out.display()));
    }
    let want = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    if want != transcript {
        return Err(format!(
            "transcript differs from {} (IOSCHED_BLESS=1 to accept)\n--- stored\n{want}\n--- now\n{transcript}",
            out.display()
        ));
    }
    Ok(())
}

/// [`check_dir`] as a test: panics with every failure, or if `dir` holds no script.
/// `IOSCHED_BLESS` set in the environment writes the transcripts instead.
pub fn assert_dir(dir: &Path) {
    let bless = std::env::var_os("IOSCHED_BLESS").is_some();
    let (checked, failures) = check_dir(dir, bless);
    assert!(checked > 0 || !failures.is_empty(), "no golden scenario in {}", dir.display());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
