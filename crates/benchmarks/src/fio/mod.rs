//! fio's job language — the job files every storage engineer already writes — with fio 3.x's
//! syntax, defaults and meanings, for either world to run (fio's repository: `HOWTO.rst`,
//! `init.c`, `parse.c`, `options.c`).
//!
//! - [`jobfile`]: the text — sections, `[global]`, comments, `include`, `${VAR}` and the
//!   machine's keywords, and the same options on a command line;
//! - [`value`]: the value syntax — sizes with fio's suffixes and `kb_base`, percentages,
//!   times in each option's unit, per-direction lists;
//! - [`job`]: the options typed into [`job::Job`]s with fio's defaults and fix-ups, what is
//!   accepted but only changes fio's output, and what is refused;
//! - [`stream`]: each job thread's I/Os (file, direction, size, offset), sans-IO, for the
//!   executors of either world;
//! - [`thread`]: a job thread's life — when each I/O goes, its limits, syncs, think time,
//!   rate and replay, and its accounting — as a sans-IO state machine both executors run;
//! - [`verify`]: the write history a `verify` job reads back, and in what order.
//!
//! Where fio silently reads a value as something other than it looks (`bs = 4k` as 4 bytes,
//! `1.5k` as 1, `10sec` as 10 µs), this reader refuses it with the file, line and option,
//! and says what fio would have done.

pub mod fio_options;
pub mod iolog;
pub mod job;
pub mod jobfile;
pub mod report;
pub mod stream;
pub mod thread;
pub mod value;
pub mod verify;

pub use job::{Job, JobSet};
pub use jobfile::{Context, Error, Origin};
pub use report::Report;

/// The largest job file a caller should read (fio's own files are a few KiB): the
/// bound for [`Context::read`].
pub const MAX_JOB_FILE: u64 = 1 << 20;

/// Read, parse and type the job files `paths` (`include`s resolved as fio does), then the
/// command-line job options `args` as one more file. As in fio, a later file starts from
/// fio's defaults, not from an earlier file's globals, and its first job starts a new
/// reporting group.
pub fn load(paths: &[std::path::PathBuf], args: &[String], ctx: &Context) -> Result<JobSet, Error> {
    let mut all = JobSet {
        jobs: Vec::new(),
        groups: Vec::new(),
        phases: Vec::new(),
        warnings: Vec::new(),
        global_options: Vec::new(),
    };
    let mut sets = Vec::new();
    for p in paths {
        let origin = Origin::File { path: p.clone(), line: 0 };
        let text = (ctx.read)(p, MAX_JOB_FILE).map_err(|e| Error { origin, message: e.to_string() })?;
        sets.push(job::build(&jobfile::parse_file(p, &text, ctx)?)?);
    }
    if !args.is_empty() {
        sets.push(job::build(&jobfile::parse_args(args, 1)?)?);
    }
    for set in sets {
        // Each job file after the first starts with a stonewall (fio's `parse_jobs_ini`).
        let base = all.groups.last().map_or(0, |g| g + 1);
        all.groups.extend(set.groups.iter().map(|g| g + base));
        let base = all.phases.last().map_or(0, |g| g + 1);
        all.phases.extend(set.phases.iter().map(|g| g + base));
        all.jobs.extend(set.jobs);
        all.warnings.extend(set.warnings);
        all.global_options.extend(set.global_options);
    }
    if all.jobs.is_empty() {
        return Err(Error {
            origin: Origin::Arg { index: 0 },
            message: "no job file and no --name: nothing to run".into(),
        });
    }
    // The logs the jobs replay, each read once.
    let mut logs: Vec<(String, std::sync::Arc<iolog::Iolog>)> = Vec::new();
    for job in &mut all.jobs {
        let Some(path) = job.read_iolog.clone() else { continue };
        let log = match logs.iter().find(|(p, _)| *p == path) {
            Some((_, l)) => l.clone(),
            None => {
                let p = std::path::Path::new(&path);
                let text = (ctx.read)(p, iolog::MAX_IOLOG_BYTES).map_err(|e| Error {
                    origin: job.origin.clone(),
                    message: format!("job `{}`: read_iolog {path}: {e}", job.section),
                })?;
                let l = std::sync::Arc::new(iolog::Iolog::parse(p, &text)?);
                logs.push((path.clone(), l.clone()));
                l
            }
        };
        job.iolog = Some(log);
    }
    Ok(all)
}
