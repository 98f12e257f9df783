//! `iosched schedulers`, `iosched scenario`, `iosched replay`.

use iosched_core::{QUEUE_TUNABLES, QueueConfig, Spec, trace};
use iosched_policies::{SchedSpec, policies};
use serde::Serialize;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this scheduler (name or alias).
    pub name: Option<String>,
    /// Print JSON instead of tables: `schedulers` (name, aliases, follows, summary,
    /// tunables) and `queue_tunables`; each tunable has name, unit, default and range as
    /// printed, default_value, min and max as numbers in its unit (allowed: the only
    /// values, for hz), and meaning.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct TunableRow {
    name: &'static str,
    unit: &'static str,
    /// As the table prints them.
    default: String,
    range: String,
    /// The same as numbers in `unit` (a mode: its index), for programs. The default is
    /// the value without a device (a device sets queue_depth and max_sectors).
    default_value: Option<i64>,
    min: i64,
    max: i64,
    /// When only some values between min and max are allowed (`hz`), those.
    allowed: Option<Vec<i64>>,
    meaning: &'static str,
}

#[derive(Serialize)]
struct SchedRow {
    name: &'static str,
    aliases: &'static [&'static str],
    follows: &'static str,
    summary: &'static str,
    tunables: Vec<TunableRow>,
}

#[derive(Serialize)]
struct Listing {
    schedulers: Vec<SchedRow>,
    queue_tunables: Vec<TunableRow>,
}

fn rows(specs: &[Spec], get: impl Fn(&str) -> Option<i64>) -> Vec<TunableRow> {
    specs
        .iter()
        .map(|s| TunableRow {
            name: s.name,
            unit: s.kind.unit(),
            default: get(s.name).map(|v| s.kind.format(v)).unwrap_or_default(),
            range: s.kind.describe_range(),
            default_value: get(s.name),
            min: s.kind.range().0,
            max: s.kind.range().1,
            allowed: match s.kind {
                iosched_core::tunable::Kind::Values(vs) => Some(vs.to_vec()),
                _ => None,
            },
            meaning: s.help,
        })
        .collect()
}

pub fn run(a: Args) -> Result<(), String> {
    let hz = iosched_core::Hz::default();
    let wanted = match &a.name {
        Some(n) => {
            let spec = SchedSpec::parse(n).map_err(|e| e.to_string())?;
            if !spec.settings.is_empty() {
                return Err(format!(
                    "{n}: give a scheduler name only, e.g. `iosched schedulers {}`; the listing shows defaults, not settings",
                    spec.name
                ));
            }
            Some(spec.name)
        }
        None => None,
    };
    let mut listing = Listing { schedulers: Vec::new(), queue_tunables: Vec::new() };
    for info in policies().into_iter().filter(|i| wanted.is_none_or(|w| w == i.name)) {
        let s = (info.new)(hz);
        listing.schedulers.push(SchedRow {
            name: info.name,
            aliases: info.aliases,
            follows: info.follows,
            summary: info.summary,
            tunables: rows(s.tunables(), |n| s.get_tunable(n)),
        });
    }
    let qc = QueueConfig::default();
    listing.queue_tunables = rows(QUEUE_TUNABLES, |n| qc.get(n));
    if a.json {
        println!("{}", serde_json::to_string_pretty(&listing).unwrap());
        return Ok(());
    }
    for s in &listing.schedulers {
        let alias = if s.aliases.is_empty() { String::new() } else { format!(" (alias {})", s.aliases.join(", ")) };
        println!("{}{} — {}", s.name, alias, s.summary);
        println!("  follows {}", s.follows);
        print_table(&s.tunables);
        println!();
    }
    println!("queue (any scheduler; set like a tunable, e.g. as:nr_requests=8192)");
    print_table(&listing.queue_tunables);
    Ok(())
}

fn print_table(rows: &[TunableRow]) {
    if rows.is_empty() {
        println!("  (no tunables)");
        return;
    }
    let w = |f: &dyn Fn(&TunableRow) -> usize, h: usize| rows.iter().map(f).max().unwrap_or(0).max(h);
    let (wn, wu, wd, wr) =
        (w(&|r| r.name.len(), 4), w(&|r| r.unit.len(), 4), w(&|r| r.default.len(), 7), w(&|r| r.range.len(), 5));
    println!("  {:wn$}  {:wu$}  {:>wd$}  {:wr$}  meaning", "name", "unit", "default", "range");
    for r in rows {
        println!("  {:wn$}  {:wu$}  {:>wd$}  {:wr$}  {}", r.name, r.unit, r.default, r.range, r.meaning);
    }
}

/// The script format, for `iosched scenario --help`.
pub const SCENARIO_FORMAT: &str = "\
Script format (one command per line; `#` starts a comment):
  sched as:antic_expire=6          the scheduler spec (first command, exactly once)
  set read_expire=125              more settings, before the first input
  at 10ms                          advance time; timers due on the way fire in order
  arrive r1 read 1000+8 owner=1    submit NAME OP SECTOR+LEN owner=N [sync] [meta] [prio=be/4]
                                   (OP: read, write, flush, discard; LEN >= 1 except a flush)
  complete r1                      the device finished r1 (also: complete r1 err=5)
  exit 1                           owner 1 exited
  unplug | drain | timeout         other inputs
  expect dispatch r1 r2            the next requests the queue issued, in order (r1@10ms: at that time)
  expect none                      nothing issued that was not yet expected
  expect timeout 16ms              poll_timeout() (or: expect timeout none)
  expect state batch_dir=sync      policy state, as `debug_state` names it
  expect admitted r5 | expect waiting r5 | expect merged r2 r1 | expect inflight 1
After every input the runner takes everything the queue dispatches. On success the
transcript is printed; on a failure, the transcript up to the failing line and then the error.";

#[derive(clap::Args, Debug)]
pub struct ScenarioArgs {
    /// The scenario script (format below).
    pub file: PathBuf,
    /// One JSON object: file, pass, transcript (its lines), and error (line, message) on a
    /// failure. The exit status is 1 on a failure either way.
    #[arg(long)]
    pub json: bool,
}

pub fn scenario(a: ScenarioArgs) -> Result<(), String> {
    let text = read_text(&a.file, iosched_disk::input::MAX_PROFILE_BYTES)?;
    let (transcript, result) = iosched_policies::scenario::run_with_transcript(&text);
    if a.json {
        let error = result.as_ref().err().map(|e| serde_json::json!({ "line": e.line, "message": e.message }));
        let j = serde_json::json!({
            "file": a.file.display().to_string(),
            "pass": result.is_ok(),
            "transcript": transcript.lines().collect::<Vec<_>>(),
            "error": error,
        });
        println!("{j}");
    } else {
        print!("{transcript}");
    }
    result.map_err(|e| format!("{}:{}: {}", a.file.display(), e.line, e.message))
}

#[derive(clap::Args, Debug)]
pub struct ReplayArgs {
    /// A queue-input trace written by `--record` (`iosched real …`, or a simulated benchmark:
    /// tiobench, readmany, sysbench fileio, iozone, aio-stress).
    pub file: PathBuf,
    /// Scheduler spec to replay with (default: the trace's `# sched` line). What the
    /// device and the kernel gave the queue, recorded there (queue_depth, rotational,
    /// max_sectors, request_alloc), applies unless this spec sets it; the recording's
    /// other settings do not carry over.
    #[arg(long)]
    pub sched: Option<String>,
    /// One JSON object: file, scheduler, records, identical, and dispatches (when
    /// identical) or mismatch (when not). The exit status is 1 on a mismatch either way.
    #[arg(long)]
    pub json: bool,
}

pub fn replay(a: ReplayArgs) -> Result<(), String> {
    let text = read_text(&a.file, iosched_disk::input::MAX_TRACE_BYTES)?;
    let t = trace::Trace::parse(&text)
        .map_err(|e| format!("{}:{}: field `{}`: {}", a.file.display(), e.line, e.field, e.message))?;
    if t.records.is_empty() {
        // "replay OK" would claim a check that did not happen.
        return Err(format!("{}: the trace has no records: nothing to replay", a.file.display()));
    }
    let spec_text = match (&a.sched, t.meta("sched")) {
        (Some(s), _) => s.clone(),
        (None, Some(s)) => s.to_string(),
        (None, None) => {
            return Err(format!("{}: no `# sched SPEC` line; pass --sched", a.file.display()));
        }
    };
    // Name where a bad spec came from: the option, or the trace's header line.
    let origin = || match &a.sched {
        Some(_) => "--sched".to_string(),
        None => {
            let line =
                text.lines().position(|l| l.trim().strip_prefix('#').is_some_and(|c| c.trim().starts_with("sched ")));
            format!("{}:{}: `# sched`", a.file.display(), line.map_or(0, |i| i + 1))
        }
    };
    let mut spec = SchedSpec::parse(&spec_text).map_err(|e| format!("{}: {e}", origin()))?;
    // The recorded spec also carries what the device and the kernel gave the queue
    // (DRIVER_TUNABLES: its depth, whether it rotates, its largest request, when its
    // driver dequeues, the pool's and the plug's rules; the runtime and the simulator add
    // them): those describe the recording, not the scheduler, so they carry over to a
    // --sched that does not set them.
    if a.sched.is_some()
        && let Some(rec) = t.meta("sched").and_then(|s| SchedSpec::parse(s).ok())
    {
        for (k, v) in &rec.settings {
            let device = iosched_core::DRIVER_TUNABLES.contains(&k.as_str());
            if device && spec.setting_for(k).is_none() {
                spec = spec.with_setting(k, v);
            }
        }
    }
    let mut q = spec.queue().map_err(|e| format!("{}: {e}", origin()))?;
    let r = iosched_core::replay::replay(&t.records, &mut q);
    if a.json {
        let mut j = serde_json::json!({
            "file": a.file.display().to_string(),
            "scheduler": spec.to_string(),
            "records": t.records.len(),
            "identical": r.is_ok(),
        });
        match &r {
            Ok(n) => j["dispatches"] = serde_json::json!(n),
            Err(m) => j["mismatch"] = serde_json::json!(m.to_string()),
        }
        println!("{j}");
    }
    match r {
        Ok(n) => {
            if !a.json {
                println!("replay OK: {n} dispatches identical ({} records, scheduler {spec})", t.records.len());
            }
            Ok(())
        }
        Err(m) => Err(match t.lines.get(m.index) {
            Some(line) => format!("replay FAILED at {}:{line}: {m}", a.file.display()),
            None => format!("replay FAILED: {m}"),
        }),
    }
}

/// A text input file (scenario or trace), bounded (`iosched_disk::input`), with an error
/// that names the file and what was expected.
fn read_text(path: &std::path::Path, limit: u64) -> Result<String, String> {
    iosched_disk::input::read_text(path, limit).map_err(|e| format!("{}: {e}", path.display()))
}
