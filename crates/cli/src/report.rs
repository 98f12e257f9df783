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
            Some(d) => iosched_report::check_dir(d, "--report"),
            None => Ok(()),
        }
    }

    /// Draw `docs` (the command's JSON documents) into the directory, if one was given.
    pub fn write(&self, docs: &[Value]) -> Result<(), String> {
        let Some(dir) = &self.report else { return Ok(()) };
        // Through the printed text, exactly as `iosched report` reads it back.
        let text: String = docs.iter().map(|d| d.to_string() + "\n").collect();
        draw(&iosched_report::views::parse_docs("the run's JSON", &text)?, dir, "--report")
    }
}

fn draw(docs: &[Value], dir: &Path, opt: &str) -> Result<(), String> {
    let page = iosched_report::views::page(docs)?;
    page.write(dir, opt)?;
    eprintln!("iosched: report: {} ({} charts)", dir.join("index.html").display(), page.charts().count());
    Ok(())
}

/// `iosched report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Saved `--json` output of repro, tiobench, readmany, compare, fio
    /// (--output-format json), real tiobench, real readmany or real fio, or a queue trace
    /// (`--record` of any run: its seek picture); several files draw one page.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The report's directory (created; an existing one must be empty or an earlier report).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// For a queue trace, the part of the run its seek picture shows, in time since the
    /// trace's start, e.g. 20s..25s [default: from the first dispatch, at most 20000
    /// dispatches].
    #[arg(long, value_name = "FROM..TO")]
    pub window: Option<String>,
}

/// The most dispatches a trace's seek picture draws.
pub const SEEK_POINTS_MAX: usize = 20_000;

/// The largest JSON file `iosched report` reads (a full `repro --json` is about 1.5 MB).
pub const MAX_JSON_BYTES: u64 = 256 << 20;

pub fn run(a: Args) -> Result<(), String> {
    iosched_report::check_dir(&a.out, "--out")?;
    let window = a.window.as_deref().map(parse_window).transpose()?;
    let mut docs = Vec::new();
    for f in &a.files {
        let limit = iosched_disk::input::MAX_TRACE_BYTES.max(MAX_JSON_BYTES);
        let text = iosched_disk::input::read_text(f, limit).map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.display().to_string();
        if text.lines().find(|l| !l.trim().is_empty()).is_some_and(iosched_core::trace::is_header) {
            docs.push(trace_doc(&name, &text, window)?);
        } else {
            if text.len() as u64 > MAX_JSON_BYTES {
                return Err(format!(
                    "{name}: {} bytes: a JSON output of at most {MAX_JSON_BYTES} bytes expected",
                    text.len()
                ));
            }
            docs.extend(iosched_report::views::parse_docs(&name, &text)?);
        }
    }
    if window.is_some() && !docs.iter().any(|d| d.get("queue_trace").is_some()) {
        return Err("--window: applies to a queue trace, and no FILE is one".into());
    }
    draw(&docs, &a.out, "--out")
}

/// `--window FROM..TO`, in nanoseconds.
fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("--window {s}: expected FROM..TO, e.g. 20s..25s"))?;
    let d = |x: &str| {
        iosched_benchmarks::units::parse_duration(x.trim())
            .map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
            .map_err(|e| format!("--window {s}: {e}"))
    };
    let (a, b) = (d(a)?, d(b)?);
    if b <= a {
        return Err(format!("--window {s}: expected FROM before TO"));
    }
    Ok((a, b))
}

/// A queue trace as the document the report draws: each dispatch in the window, at the
/// position of its request's first bio (the arrival record of its id).
pub(crate) fn trace_doc(name: &str, text: &str, window: Option<(u64, u64)>) -> Result<Value, String> {
    use iosched_core::trace::{Record, Trace};
    let t = Trace::parse(text).map_err(|e| format!("{name}: {e}"))?;
    let mut arrivals = std::collections::HashMap::new();
    let mut seeks = Vec::new();
    let mut total = 0u64;
    for r in &t.records {
        match r {
            Record::Arrival { rq, .. } => {
                arrivals.insert(rq.id, *rq);
            }
            Record::Dispatch { at, id } => {
                total += 1;
                let ns = at.as_nanos();
                let inside = match window {
                    Some((a, b)) => ns >= a && ns < b,
                    None => true,
                };
                if let (true, true, Some(rq)) = (inside, seeks.len() < SEEK_POINTS_MAX, arrivals.get(id)) {
                    let write = matches!(rq.op, iosched_core::Op::Write);
                    seeks.push(serde_json::json!({
                        "at_ns": ns, "sector": rq.sector, "sectors": rq.len_sectors, "write": write,
                    }));
                }
            }
            _ => {}
        }
    }
    Ok(serde_json::json!({
        "queue_trace": name,
        "sched": t.meta("sched"),
        "run": t.meta("run"),
        "dispatches": total,
        "seeks": seeks,
    }))
}
