//! `--report DIR` of the commands, and `iosched report FILE… --out DIR`: both draw the
//! page from the same JSON text the command prints with `--json` (the document, printed
//! and read back), so a report drawn later from saved output is the same bytes.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// `--report DIR`, as every command that draws one takes it.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportArg {
    /// Also write a report to DIR: DIR/index.html (one self-contained page: inline SVG
    /// charts, no script, no network) and per chart its .svg and the data behind it as
    /// .jsonl. DIR is created; an existing one must be empty or an earlier report.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
}

impl ReportArg {
    /// Refuse an unusable directory before anything runs.
    pub fn check(&self) -> Result<(), String> {
        match &self.report {
            Some(d) => iosched_report::check_dir(d),
            None => Ok(()),
        }
    }

    /// Draw `docs` (the command's JSON documents) into the directory, if one was given.
    pub fn write(&self, docs: &[Value]) -> Result<(), String> {
        let Some(dir) = &self.report else { return Ok(()) };
        // Through the printed text, exactly as `iosched report` reads it back.
        let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
        draw(&iosched_report::views::parse_docs("the run's JSON", &text)?, dir)
    }
}

fn draw(docs: &[Value], dir: &Path) -> Result<(), String> {
    let page = iosched_report::views::page(docs)?;
    page.write(dir)?;
    eprintln!("iosched: report: {} ({} charts)", dir.join("index.html").display(), page.charts().count());
    Ok(())
}

/// `iosched report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Saved `--json` output of repro, tiobench, readmany, compare, fio
    /// (--output-format json), real tiobench or real fio; several files draw one page.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The report's directory (created; an existing one must be empty or an earlier report).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The largest JSON file `iosched report` reads (a full `repro --json` is about 1.5 MB).
pub const MAX_JSON_BYTES: u64 = 256 << 20;

pub fn run(a: Args) -> Result<(), String> {
    iosched_report::check_dir(&a.out).map_err(|e| e.replacen("--report", "--out", 1))?;
    let mut docs = Vec::new();
    for f in &a.files {
        let text = iosched_disk::input::read_text(f, MAX_JSON_BYTES).map_err(|e| format!("{}: {e}", f.display()))?;
        docs.extend(iosched_report::views::parse_docs(&f.display().to_string(), &text)?);
    }
    draw(&docs, &a.out).map_err(|e| e.replacen("--report", "--out", 1))
}
