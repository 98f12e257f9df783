//! fio's job-file syntax, as fio 3.x reads it (`init.c` `__parse_jobs_ini`, `parse.c`
//! `strip_blank_front`/`strip_blank_end`, `options.c` `fio_option_dup_subs`): sections,
//! `[global]`, comments, `include`, `${VAR}` expansion, and the same options written on a
//! command line (`--name=a --rw=read`, `init.c` `parse_cmd_line`). The result is a list of
//! sections with their raw `key=value` options, each with the file and line it came from;
//! [`super::job`] gives them meaning.
//!
//! The rules, and where this reader is stricter than fio (it refuses what fio would
//! silently read as something else):
//!
//! - A line whose first non-blank character is `;` or `#` is a comment, and a `;` or `#`
//!   anywhere else ends the line (fio cuts there too, so a value can never hold either).
//! - `[name]` starts a section; a section whose name starts with `global` is global. Global
//!   sections may repeat: each adds to the global options, which reach only the jobs below.
//!   An option before the first section is an error, as in fio.
//! - `key=value`, or a bare `key` for a flag. Blanks around the key are dropped. fio keeps
//!   the blanks after `=`, so `bs = 4k` is 4 bytes to fio: this reader refuses a value that
//!   starts with a blank, naming the line, instead of guessing either way.
//! - `include FILE` inside a section adds FILE's options to that section (FILE may not open
//!   a section). A relative FILE is looked up from the working directory, then beside the
//!   including file, as fio does. fio has no limit on nesting; this reader stops at
//!   [`MAX_INCLUDE_DEPTH`] and names the chain, so a file that includes itself is an error.
//! - `${VAR}` is replaced by the environment variable VAR, or by nothing when VAR is unset
//!   (fio's rule). `$pagesize`, `$mb_memory` and `$ncpus` are the machine's (given by the
//!   caller); a value that used one and holds `+ - * /` is evaluated as integer arithmetic,
//!   as fio hands it to `bc`.
//! - On the command line, options before the first `--name` are global and each `--name`
//!   starts a job; no `${VAR}` or keyword substitution applies there (fio does none).

use std::path::{Path, PathBuf};

/// Nesting bound for `include` (fio has none: a file that includes itself recurses until
/// the process runs out of file descriptors).
pub const MAX_INCLUDE_DEPTH: usize = 16;
/// The longest line fio reads (`OPT_LEN_MAX`, its `fgets` buffer).
pub const MAX_LINE: usize = 8191;

/// Where a piece of input came from: a file and line, or a command-line argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    File { path: PathBuf, line: usize },
    Arg { index: usize },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{}:{line}", path.display()),
            Origin::Arg { index } => write!(f, "command line, argument {index}"),
        }
    }
}

/// A job-file or option error: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub origin: Origin,
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for Error {}

fn err(origin: &Origin, message: impl Into<String>) -> Error {
    Error { origin: origin.clone(), message: message.into() }
}

/// One `key=value` as written (after substitution), with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOption {
    pub key: String,
    /// `None` for a bare flag (`time_based`).
    pub value: Option<String>,
    pub origin: Origin,
}

/// A section: `[global]` or a job, with its options in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub global: bool,
    pub origin: Origin,
    pub options: Vec<RawOption>,
}

/// What `$pagesize`, `$mb_memory` and `$ncpus` stand for, and how to read `${VAR}`: the
/// machine the job runs on, not necessarily this one.
pub struct Context<'a> {
    pub pagesize: u64,
    pub mb_memory: u64,
    pub ncpus: u64,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Reads a file the jobs name (an `include`, a `read_iolog`) of at most the given
    /// bytes: [`super::MAX_JOB_FILE`], [`super::iolog::MAX_IOLOG_BYTES`].
    pub read: &'a dyn Fn(&Path, u64) -> std::io::Result<String>,
}

impl std::fmt::Debug for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("pagesize", &self.pagesize)
            .field("mb_memory", &self.mb_memory)
            .field("ncpus", &self.ncpus)
            .finish_non_exhaustive()
    }
}

/// Parse a job file's text (`path` names it in errors and anchors relative includes).
pub fn parse_file(path: &Path, text: &str, ctx: &Context) -> Result<Vec<Section>, Error> {
    let mut sections = Vec::new();
    read_lines(path, text, ctx, &mut sections, &mut vec![path.to_path_buf()])?;
    Ok(sections)
}

fn read_lines(
    path: &Path,
    text: &str,
    ctx: &Context,
    sections: &mut Vec<Section>,
    chain: &mut Vec<PathBuf>,
) -> Result<(), Error> {
    let included = chain.len() > 1;
    for (i, raw) in text.lines().enumerate() {
        let origin = Origin::File { path: path.to_path_buf(), line: i + 1 };
        if raw.len() > MAX_LINE {
            return Err(err(&origin, format!("line of {} bytes: fio reads at most {MAX_LINE}", raw.len())));
        }
        let line = match raw.find([';', '#']) {
            Some(k) => &raw[..k],
            None => raw,
        };
        let line = line.trim_end();
        let body = line.trim_start();
        if body.is_empty() {
            continue;
        }
        if let Some(rest) = body.strip_prefix('[') {
            if included {
                return Err(err(
                    &origin,
                    "no new sections in included files (fio: `No new sections in included files`)",
                ));
            }
            let Some(name) = rest.strip_suffix(']') else {
                return Err(err(&origin, format!("`{body}`: expected a section header `[name]`")));
            };
            if name.is_empty() {
                return Err(err(&origin, "`[]`: expected a section name"));
            }
            sections.push(Section {
                name: name.to_string(),
                global: name.starts_with("global"),
                origin,
                options: Vec::new(),
            });
            continue;
        }
        let Some(section) = sections.last_mut() else {
            return Err(err(&origin, format!("option `{body}` outside of a [] job section")));
        };
        if let Some(file) = body.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
            let file = file.trim();
            if file.is_empty() {
                return Err(err(&origin, "`include`: expected a file name"));
            }
            let found = resolve_include(Path::new(file), path);
            if chain.len() > MAX_INCLUDE_DEPTH || chain.contains(&found) {
                let names: Vec<String> = chain.iter().map(|p| p.display().to_string()).collect();
                return Err(err(
                    &origin,
                    format!("include {file}: includes nested too deep or in a loop ({} -> {file})", names.join(" -> ")),
                ));
            }
            let text = (ctx.read)(&found, super::MAX_JOB_FILE)
                .map_err(|e| err(&origin, format!("include {}: {e}", found.display())))?;
            chain.push(found.clone());
            let mut inner = vec![Section { options: Vec::new(), ..section.clone() }];
            read_lines(&found, &text, ctx, &mut inner, chain)?;
            chain.pop();
            let opts = inner.pop().map(|s| s.options).unwrap_or_default();
            sections.last_mut().expect("the section").options.extend(opts);
            continue;
        }
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.trim_end(), Some(v)),
            None => (body, None),
        };
        if key.is_empty() {
            return Err(err(&origin, format!("`{body}`: expected key=value")));
        }
        let value = match value {
            None => None,
            Some(v) if v.starts_with([' ', '\t']) => {
                return Err(err(
                    &origin,
                    format!(
                        "`{key}=` is followed by a blank: fio keeps it as part of the value (so `bs = 4k` is 4 bytes to \
                         fio); write `{key}={}`",
                        v.trim_start()
                    ),
                ));
            }
            Some(v) => Some(substitute(v, ctx, &origin)?),
        };
        sections.last_mut().expect("a section").options.push(RawOption { key: key.to_string(), value, origin });
    }
    Ok(())
}

/// fio's include lookup: as written (from the working directory), else beside the file
/// that includes it.
fn resolve_include(file: &Path, from: &Path) -> PathBuf {
    if file.is_absolute() || file.exists() {
        return file.to_path_buf();
    }
    match from.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(file),
        _ => file.to_path_buf(),
    }
}

/// `${VAR}` from the environment (unset: nothing), then the keywords, then arithmetic if a
/// keyword was replaced.
fn substitute(v: &str, ctx: &Context, origin: &Origin) -> Result<String, Error> {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(k) = rest.find("${") {
        out.push_str(&rest[..k]);
        let after = &rest[k + 2..];
        match after.find('}') {
            Some(e) => {
                out.push_str(&(ctx.env)(&after[..e]).unwrap_or_default());
                rest = &after[e + 1..];
            }
            None => {
                // fio leaves an unterminated `${X` as it is.
                out.push_str(&rest[k..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    let mut replaced = false;
    for (word, value) in [("$pagesize", ctx.pagesize), ("$mb_memory", ctx.mb_memory), ("$ncpus", ctx.ncpus)] {
        if out.contains(word) {
            out = out.replace(word, &value.to_string());
            replaced = true;
        }
    }
    if replaced && out.contains(['+', '-', '*', '/']) {
        let v = arithmetic(&out).ok_or_else(|| {
            err(origin, format!("`{out}`: expected integer arithmetic (+ - * / and parentheses) after the keywords"))
        })?;
        out = v.to_string();
    }
    Ok(out)
}

/// Integer arithmetic as `bc` does it with its default scale 0: `+ - * /` with the usual
/// precedence, parentheses, truncating division. `None` for anything else, a division by
/// zero or an overflow.
fn arithmetic(s: &str) -> Option<i128> {
    let toks: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    let mut pos = 0;
    let v = expr(&toks, &mut pos)?;
    (pos == toks.len()).then_some(v)
}

fn expr(t: &[char], p: &mut usize) -> Option<i128> {
    let mut v = term(t, p)?;
    while let Some(&c) = t.get(*p).filter(|c| **c == '+' || **c == '-') {
        *p += 1;
        let r = term(t, p)?;
        v = if c == '+' { v.checked_add(r)? } else { v.checked_sub(r)? };
    }
    Some(v)
}

fn term(t: &[char], p: &mut usize) -> Option<i128> {
    let mut v = atom(t, p)?;
    while let Some(&c) = t.get(*p).filter(|c| **c == '*' || **c == '/') {
        *p += 1;
        let r = atom(t, p)?;
        v = if c == '*' { v.checked_mul(r)? } else { v.checked_div(r)? };
    }
    Some(v)
}

fn atom(t: &[char], p: &mut usize) -> Option<i128> {
    match t.get(*p)? {
        '(' => {
            *p += 1;
            let v = expr(t, p)?;
            (t.get(*p) == Some(&')')).then(|| *p += 1)?;
            Some(v)
        }
        '-' => {
            *p += 1;
            atom(t, p)?.checked_neg()
        }
        c if c.is_ascii_digit() => {
            let start = *p;
            while t.get(*p).is_some_and(char::is_ascii_digit) {
                *p += 1;
            }
            t[start..*p].iter().collect::<String>().parse().ok()
        }
        _ => None,
    }
}

/// fio's command-line form: `--key=value` and `--flag`; options before the first `--name`
/// are global, each `--name=N` starts job N. `args` holds only job options (the caller
/// has taken its own flags out); `first_index` numbers them in errors.
pub fn parse_args(args: &[String], first_index: usize) -> Result<Vec<Section>, Error> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let origin = Origin::Arg { index: first_index + i };
        let Some(body) = a.strip_prefix("--") else {
            return Err(err(&origin, format!("`{a}`: expected a job option written --key=value")));
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        if key.is_empty() {
            return Err(err(&origin, format!("`{a}`: expected --key=value")));
        }
        if key == "name" {
            let name =
                value.clone().filter(|v| !v.is_empty()).ok_or_else(|| err(&origin, "--name: expected a job name"))?;
            sections.push(Section {
                global: name.starts_with("global"),
                name,
                origin: origin.clone(),
                options: Vec::new(),
            });
            continue;
        }
        if sections.is_empty() {
            sections.push(Section { name: "global".into(), global: true, origin: origin.clone(), options: Vec::new() });
        }
        sections.last_mut().expect("a section").options.push(RawOption { key: key.to_string(), value, origin });
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn ctx_with<'a>(
        env: &'a dyn Fn(&str) -> Option<String>,
        read: &'a dyn Fn(&Path, u64) -> std::io::Result<String>,
    ) -> Context<'a> {
        Context { pagesize: 4096, mb_memory: 1024, ncpus: 2, env, read }
    }

    fn parse(text: &str) -> Result<Vec<Section>, Error> {
        let env = |v: &str| (v == "SIZE").then(|| "64m".to_string());
        let read = |_: &Path, _: u64| -> std::io::Result<String> { Err(std::io::ErrorKind::NotFound.into()) };
        parse_file(Path::new("job.fio"), text, &ctx_with(&env, &read))
    }

    fn opts(s: &Section) -> Vec<(String, Option<String>)> {
        s.options.iter().map(|o| (o.key.clone(), o.value.clone())).collect()
    }

    #[test]
    fn sections_comments_flags_and_substitution() {
        let v = parse(
            "; a comment\n[global]\nbs=4k ; trailing\n  # indented comment\n\n[job one]\nsize=${SIZE}\ntime_based\n\
             rw=randread\nnrfiles=${NOPE}2\niodepth=$ncpus*8\n[globalx]\n",
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        assert!(v[0].global && !v[1].global && v[2].global, "a section named global… is global, as in fio");
        assert_eq!(v[1].name, "job one");
        assert_eq!(opts(&v[0]), [("bs".into(), Some("4k".into()))]);
        assert_eq!(
            opts(&v[1]),
            [
                ("size".into(), Some("64m".into())),
                ("time_based".into(), None),
                ("rw".into(), Some("randread".into())),
                ("nrfiles".into(), Some("2".into())),
                ("iodepth".into(), Some("16".into())),
            ]
        );
        assert_eq!(v[1].options[0].origin, Origin::File { path: "job.fio".into(), line: 7 });
    }

    #[test]
    fn bad_lines_name_their_line() {
        let e = parse("bs=4k\n").unwrap_err();
        assert_eq!(e.to_string(), "job.fio:1: option `bs=4k` outside of a [] job section");
        let e = parse("[a]\nbs = 4k\n").unwrap_err();
        assert!(e.to_string().starts_with("job.fio:2: `bs=` is followed by a blank"), "{e}");
        assert!(parse("[a\n").unwrap_err().to_string().contains("expected a section header"));
        let e = parse("[a]\nsize=$mb_memory/0\n").unwrap_err();
        assert!(e.to_string().contains("job.fio:2"), "{e}");
        assert_eq!(parse("[a]\nsize=$mb_memory/2\n").unwrap()[0].options[0].value.as_deref(), Some("512"));
        assert_eq!(parse("[a]\nsize=($mb_memory-24)*2\n").unwrap()[0].options[0].value.as_deref(), Some("2000"));
    }

    #[test]
    fn includes_add_to_the_section_and_loops_are_refused() {
        let files: HashMap<&str, &str> = HashMap::from([
            ("dir/common.fio", "bs=8k\niodepth=4\n"),
            ("dir/loop.fio", "include loop.fio\n"),
            ("dir/section.fio", "[x]\n"),
        ]);
        let read = |p: &Path, _: u64| -> std::io::Result<String> {
            files.get(p.to_str().unwrap()).map(|s| s.to_string()).ok_or(std::io::ErrorKind::NotFound.into())
        };
        let env = |_: &str| None;
        let ctx = ctx_with(&env, &read);
        let v = parse_file(Path::new("dir/job.fio"), "[a]\nrw=read\ninclude common.fio\nsize=1m\n", &ctx).unwrap();
        let keys: Vec<&str> = v[0].options.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, ["rw", "bs", "iodepth", "size"]);
        assert_eq!(v[0].options[1].origin, Origin::File { path: "dir/common.fio".into(), line: 1 });
        let e = parse_file(Path::new("dir/job.fio"), "[a]\ninclude loop.fio\n", &ctx).unwrap_err();
        assert!(e.message.contains("in a loop"), "{e}");
        let e = parse_file(Path::new("dir/job.fio"), "[a]\ninclude section.fio\n", &ctx).unwrap_err();
        assert_eq!(e.origin, Origin::File { path: "dir/section.fio".into(), line: 1 });
        let e = parse_file(Path::new("dir/job.fio"), "[a]\ninclude missing.fio\n", &ctx).unwrap_err();
        assert!(e.to_string().starts_with("dir/job.fio:2: include dir/missing.fio"), "{e}");
    }

    #[test]
    fn command_line_globals_then_jobs() {
        let args: Vec<String> =
            ["--bs=8k", "--name=a", "--rw=read", "--name=b", "--time_based"].iter().map(|s| s.to_string()).collect();
        let v = parse_args(&args, 1).unwrap();
        assert_eq!(
            v.iter().map(|s| (s.name.as_str(), s.global)).collect::<Vec<_>>(),
            [("global", true), ("a", false), ("b", false)]
        );
        assert_eq!(opts(&v[2]), [("time_based".into(), None)]);
        assert_eq!(v[1].options[0].origin, Origin::Arg { index: 3 });
        assert!(parse_args(&["bs=4k".into()], 1).unwrap_err().message.contains("--key=value"));
    }
}
