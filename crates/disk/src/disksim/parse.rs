//! A reader for DiskSim 4.0 parameter files (`.parv`, `.diskspecs`, `.model`): the subset
//! of libparam's syntax the validation drives use.
//!
//! ```text
//! # comment to end of line
//! source other.diskspecs                      (top level: read another file)
//! disksim_disk NAME { Key words = value, ... } (a named block)
//! Model = source x.model,                      (a value read from another file)
//! Scheduler = disksim_ioqueue { ... },         (a nested block)
//! slips = [ 1, 2, 3 ],                         (a list)
//! instantiate [ disk0 ] as NAME
//! topology disksim_iodriver driver0 [ disksim_bus bus0 [ ... ] ]
//! ```
//!
//! Keys are free text up to `=` (DiskSim keys contain spaces, dots and parentheses).
//! Errors name the file, the line, the field and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A parse or interpretation error in a DiskSim file.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecError {
    pub file: PathBuf,
    pub line: u32,
    /// The parameter concerned, if any.
    pub field: Option<String>,
    pub msg: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.file.display(), self.line)?;
        if let Some(k) = &self.field {
            write!(f, "field `{k}`: ")?;
        }
        f.write_str(&self.msg)
    }
}

impl std::error::Error for SpecError {}

/// Where something was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Loc {
    pub file: Arc<Path>,
    pub line: u32,
}

impl Loc {
    pub fn err(&self, field: Option<&str>, msg: impl Into<String>) -> SpecError {
        SpecError { file: self.file.to_path_buf(), line: self.line, field: field.map(str::to_owned), msg: msg.into() }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A number (DiskSim does not distinguish in the text; `int` records whether it was
    /// written without a fraction or exponent).
    Num {
        v: f64,
        int: bool,
    },
    /// A bare word: an enumeration value, a file name, a name.
    Word(String),
    List(Vec<(Value, Loc)>),
    Block(Block),
}

impl Value {
    pub fn describe(&self) -> String {
        match self {
            Value::Num { v, .. } => format!("the number {v}"),
            Value::Word(w) => format!("`{w}`"),
            Value::List(_) => "a list".into(),
            Value::Block(b) => format!("a `{}` block", b.ty),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub value: Value,
    pub loc: Loc,
}

/// `TYPE [NAME] { params }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub ty: String,
    pub name: Option<String>,
    pub params: Vec<Param>,
    pub loc: Loc,
}

impl Block {
    /// The parameter with this key (case-insensitive, spaces normalised).
    pub fn get(&self, key: &str) -> Option<&Param> {
        let k = norm_key(key);
        self.params.iter().find(|p| norm_key(&p.key) == k)
    }

    pub fn require(&self, key: &str) -> Result<&Param, SpecError> {
        self.get(key).ok_or_else(|| self.loc.err(Some(key), format!("missing in `{}` block", self.ty)))
    }

    /// A number parameter, required.
    pub fn num(&self, key: &str) -> Result<f64, SpecError> {
        let p = self.require(key)?;
        p.num()
    }

    /// A number parameter with a default.
    pub fn num_or(&self, key: &str, default: f64) -> Result<f64, SpecError> {
        match self.get(key) {
            Some(p) => p.num(),
            None => Ok(default),
        }
    }

    /// A number parameter within `lo..=hi`, with a default.
    pub fn num_in_or(&self, key: &str, lo: f64, hi: f64, default: f64) -> Result<f64, SpecError> {
        match self.get(key) {
            Some(p) => {
                let v = p.num()?;
                if !(lo..=hi).contains(&v) {
                    return Err(p.loc.err(Some(&p.key), format!("expected a number in {lo}..={hi}, got {v}")));
                }
                Ok(v)
            }
            None => Ok(default),
        }
    }

    /// An integer parameter within `lo..=hi`, required.
    pub fn int(&self, key: &str, lo: i64, hi: i64) -> Result<i64, SpecError> {
        self.require(key)?.int(lo, hi)
    }

    pub fn int_or(&self, key: &str, lo: i64, hi: i64, default: i64) -> Result<i64, SpecError> {
        match self.get(key) {
            Some(p) => p.int(lo, hi),
            None => Ok(default),
        }
    }
}

impl Param {
    pub fn num(&self) -> Result<f64, SpecError> {
        match &self.value {
            Value::Num { v, .. } if v.is_finite() => Ok(*v),
            Value::Num { v, .. } => Err(self.loc.err(Some(&self.key), format!("expected a finite number, got {v}"))),
            other => Err(self.loc.err(Some(&self.key), format!("expected a number, got {}", other.describe()))),
        }
    }

    pub fn int(&self, lo: i64, hi: i64) -> Result<i64, SpecError> {
        match &self.value {
            Value::Num { v, .. } if v.fract() == 0.0 && *v >= lo as f64 && *v <= hi as f64 => Ok(*v as i64),
            Value::Num { v, .. } => {
                Err(self.loc.err(Some(&self.key), format!("expected an integer in {lo}..={hi}, got {v}")))
            }
            other => Err(self.loc.err(Some(&self.key), format!("expected an integer, got {}", other.describe()))),
        }
    }

    pub fn word(&self) -> Result<&str, SpecError> {
        match &self.value {
            Value::Word(w) => Ok(w),
            other => Err(self.loc.err(Some(&self.key), format!("expected a word, got {}", other.describe()))),
        }
    }

    pub fn block(&self) -> Result<&Block, SpecError> {
        match &self.value {
            Value::Block(b) => Ok(b),
            other => Err(self.loc.err(Some(&self.key), format!("expected a block, got {}", other.describe()))),
        }
    }

    pub fn list(&self) -> Result<&[(Value, Loc)], SpecError> {
        match &self.value {
            Value::List(l) => Ok(l),
            other => Err(self.loc.err(Some(&self.key), format!("expected a list `[ ... ]`, got {}", other.describe()))),
        }
    }
}

pub(crate) fn norm_key(k: &str) -> String {
    k.split_whitespace().collect::<Vec<_>>().join(" ").to_ascii_lowercase()
}

/// A node of the `topology` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct TopoNode {
    pub ty: String,
    pub name: String,
    pub children: Vec<TopoNode>,
}

/// Everything at the top level of a file (with `source` files expanded).
#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub blocks: Vec<Block>,
    /// `instantiate [ a, b ] as TYPE`: (instance name, type/block name).
    pub instances: Vec<(String, String)>,
    /// Where each `instantiate` statement stands, with the block name it uses.
    instantiated: Vec<(String, Loc)>,
    pub topology: Vec<TopoNode>,
}

impl Spec {
    /// The block defined with this name (`disksim_disk NAME { ... }`).
    pub fn block_named(&self, name: &str) -> Option<&Block> {
        self.blocks.iter().find(|b| b.name.as_deref() == Some(name))
    }
    pub fn blocks_of_type<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Block> + 'a {
        self.blocks.iter().filter(move |b| b.ty == ty)
    }
    /// The block type/name an instance was created from.
    pub fn instance(&self, name: &str) -> Option<&str> {
        self.instances.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }
}

/// Read a top-level DiskSim file, following `source` statements relative to its directory.
pub fn parse_file(path: &Path) -> Result<Spec, SpecError> {
    let mut spec = Spec::default();
    parse_into(path, &mut spec, 0)?;
    // An instance of a block nobody defined is a typo, or a file left out: refused, naming the line.
    for (ty, loc) in &spec.instantiated {
        if spec.block_named(ty).is_none() {
            return Err(loc.err(None, format!("`instantiate … as {ty}`: no block is named `{ty}`")));
        }
    }
    Ok(spec)
}

fn read(path: &Path, from: Option<&Loc>) -> Result<String, SpecError> {
    if let Some(text) = super::data::lookup(path) {
        return Ok(text.to_string());
    }
    crate::input::read_text(path, crate::input::MAX_DISKSIM_BYTES).map_err(|e| match from {
        Some(l) => l.err(None, format!("cannot read `{}`: {e}", path.display())),
        None => SpecError { file: path.to_path_buf(), line: 0, field: None, msg: format!("cannot read: {e}") },
    })
}

fn parse_into(path: &Path, spec: &mut Spec, depth: u32) -> Result<(), SpecError> {
    let text = read(path, None)?;
    let mut p = Parser::new(&text, path);
    p.top(spec, depth)
}

/// Parse one file that holds a single block (a `Model = source x.model` target).
fn parse_block_file(path: &Path, from: &Loc, depth: u32) -> Result<Block, SpecError> {
    if depth > 8 {
        return Err(from.err(None, "`source` nested too deeply"));
    }
    let text = read(path, Some(from))?;
    let mut p = Parser::new(&text, path);
    let mut spec = Spec::default();
    p.top(&mut spec, depth + 1)?;
    spec.blocks.into_iter().next().ok_or_else(|| from.err(None, format!("`{}` holds no block", path.display())))
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    line: u32,
    file: Arc<Path>,
    dir: PathBuf,
    /// The files whose `source` statements led here, outermost first (this one last): a
    /// file that sources one of them is a cycle.
    chain: Vec<PathBuf>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, path: &Path) -> Parser<'a> {
        Parser {
            s: text.as_bytes(),
            i: 0,
            line: 1,
            file: Arc::from(path),
            dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            chain: vec![path.to_path_buf()],
        }
    }

    fn loc(&self) -> Loc {
        Loc { file: self.file.clone(), line: self.line }
    }

    fn err(&self, field: Option<&str>, msg: impl Into<String>) -> SpecError {
        self.loc().err(field, msg)
    }

    /// Skip blanks and comments.
    fn ws(&mut self) {
        while self.i < self.s.len() {
            match self.s[self.i] {
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'#' => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8, field: Option<&str>) -> Result<(), SpecError> {
        match self.peek() {
            Some(x) if x == c => {
                self.i += 1;
                Ok(())
            }
            Some(x) => Err(self.err(field, format!("expected `{}`, found `{}`", c as char, x as char))),
            None => Err(self.err(field, format!("expected `{}`, found the end of the file", c as char))),
        }
    }

    /// A word: everything up to blank or punctuation.
    fn word(&mut self) -> Option<String> {
        self.ws();
        let st = self.i;
        while self.i < self.s.len() {
            match self.s[self.i] {
                b' ' | b'\t' | b'\r' | b'\n' | b'{' | b'}' | b'[' | b']' | b',' | b'=' | b'#' => {
                    break;
                }
                _ => self.i += 1,
            }
        }
        (self.i > st).then(|| String::from_utf8_lossy(&self.s[st..self.i]).into_owned())
    }

    fn top(&mut self, spec: &mut Spec, depth: u32) -> Result<(), SpecError> {
        loop {
            let Some(_) = self.peek() else { return Ok(()) };
            let loc = self.loc();
            let Some(w) = self.word() else {
                return Err(self.err(None, format!("unexpected `{}`", self.s[self.i] as char)));
            };
            match w.as_str() {
                "source" => {
                    let f = self.word().ok_or_else(|| self.err(None, "`source` needs a file name"))?;
                    if depth > 8 {
                        return Err(loc.err(None, "`source` nested too deeply"));
                    }
                    let path = self.dir.join(&f);
                    let same = |a: &Path, b: &Path| {
                        a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
                    };
                    if let Some(i) = self.chain.iter().position(|c| same(c, &path)) {
                        let cycle: Vec<String> =
                            self.chain[i..].iter().chain([&path]).map(|p| p.display().to_string()).collect();
                        return Err(loc.err(None, format!("`source {f}` makes a cycle: {}", cycle.join(" → "))));
                    }
                    let text = read(&path, Some(&loc))?;
                    let mut p = Parser::new(&text, &path);
                    p.chain = self.chain.iter().cloned().chain([path.clone()]).collect();
                    p.top(spec, depth + 1)?;
                }
                "instantiate" => {
                    self.expect(b'[', None)?;
                    let names = self.list_items(None, "bad instance list", |p| {
                        p.word().ok_or_else(|| p.err(None, "bad instance list"))
                    })?;
                    let as_ = self.word();
                    if as_.as_deref() != Some("as") {
                        return Err(self.err(None, "expected `as` after `instantiate [ ... ]`"));
                    }
                    let ty = self.word().ok_or_else(|| self.err(None, "expected a name after `as`"))?;
                    for n in names {
                        spec.instances.push((n, ty.clone()));
                    }
                    spec.instantiated.push((ty, loc));
                }
                "topology" => {
                    let node = self.topo_node()?;
                    spec.topology.push(node);
                }
                ty => {
                    // TYPE [NAME] { ... }
                    let name = match self.peek() {
                        Some(b'{') => None,
                        _ => Some(self.word().ok_or_else(|| self.err(None, format!("expected a block after `{ty}`")))?),
                    };
                    let params = self.params(depth)?;
                    spec.blocks.push(Block { ty: ty.to_owned(), name, params, loc });
                }
            }
        }
    }

    /// The items of a `[a, b, ...]` list whose `[` was just read, up to and including the
    /// `]`; commas are optional separators. `unterminated` is the error at the end of the
    /// file.
    fn list_items<T>(
        &mut self,
        field: Option<&str>,
        unterminated: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, SpecError>,
    ) -> Result<Vec<T>, SpecError> {
        let mut items = Vec::new();
        loop {
            match self.peek() {
                Some(b']') => {
                    self.i += 1;
                    return Ok(items);
                }
                Some(b',') => self.i += 1,
                None => return Err(self.err(field, unterminated)),
                Some(_) => items.push(item(self)?),
            }
        }
    }

    fn topo_node(&mut self) -> Result<TopoNode, SpecError> {
        let ty = self.word().ok_or_else(|| self.err(None, "expected a component type in `topology`"))?;
        let name = self.word().ok_or_else(|| self.err(None, "expected a component name in `topology`"))?;
        self.expect(b'[', None)?;
        let children = self.list_items(None, "unterminated `topology`", |p| p.topo_node())?;
        Ok(TopoNode { ty, name, children })
    }

    /// `{ key = value, ... }`
    fn params(&mut self, depth: u32) -> Result<Vec<Param>, SpecError> {
        self.expect(b'{', None)?;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b',') => {
                    self.i += 1;
                    continue;
                }
                None => return Err(self.err(None, "unterminated block: expected `}`")),
                _ => {}
            }
            // key: text up to '=' on the same logical entry
            let loc = self.loc();
            let st = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b'=' | b'\n' | b'}' | b'{' | b',') {
                self.i += 1;
            }
            let key = String::from_utf8_lossy(&self.s[st..self.i]).split_whitespace().collect::<Vec<_>>().join(" ");
            if self.s.get(self.i) != Some(&b'=') {
                return Err(loc.err(Some(&key), "expected `=` after the parameter name"));
            }
            self.i += 1;
            let value = self.value(&key, depth)?;
            // One of the two would win without a word; which one is not worth guessing.
            if let Some(first) = out.iter().find(|p: &&Param| norm_key(&p.key) == norm_key(&key)) {
                let msg = format!("given twice in this block (first on line {})", first.loc.line);
                return Err(loc.err(Some(&key), msg));
            }
            out.push(Param { key, value, loc });
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                Some(c) => {
                    return Err(self.err(None, format!("expected `,` or `}}` after a value, found `{}`", c as char)));
                }
                None => return Err(self.err(None, "unterminated block: expected `}`")),
            }
        }
    }

    fn value(&mut self, key: &str, depth: u32) -> Result<Value, SpecError> {
        match self.peek() {
            Some(b'[') => {
                self.i += 1;
                let items = self.list_items(Some(key), "unterminated list: expected `]`", |p| {
                    let loc = p.loc();
                    Ok((p.value(key, depth)?, loc))
                })?;
                Ok(Value::List(items))
            }
            None => Err(self.err(Some(key), "expected a value, found the end of the file")),
            _ => {
                let loc = self.loc();
                let w = self.word().ok_or_else(|| self.err(Some(key), "expected a value"))?;
                if w == "source" {
                    let f = self.word().ok_or_else(|| self.err(Some(key), "`source` needs a file name"))?;
                    let b = parse_block_file(&self.dir.join(&f), &loc, depth)?;
                    return Ok(Value::Block(b));
                }
                if self.peek() == Some(b'{') {
                    let params = self.params(depth)?;
                    return Ok(Value::Block(Block { ty: w, name: None, params, loc }));
                }
                if let Ok(v) = w.parse::<f64>() {
                    let int = !w.contains(['.', 'e', 'E']);
                    return Ok(Value::Num { v, int });
                }
                Ok(Value::Word(w))
            }
        }
    }
}

/// An extracted seek curve file (`Seek distances measured: N` then `distance, ms[, sd]`).
pub fn parse_seek_file(path: &Path, from: &Loc) -> Result<Vec<(u32, u64)>, SpecError> {
    let text = read(path, Some(from))?;
    let mut out = Vec::new();
    // The header's count, checked against the rows: a mismatch means a cut or mangled file.
    let mut declared: Option<(usize, Loc)> = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if let Some(n) = l.strip_prefix("Seek distances measured") {
            let loc = Loc { file: Arc::from(path), line: i as u32 + 1 };
            let n = n.trim_start_matches(':').trim();
            let n = n.parse::<usize>().map_err(|_| loc.err(None, format!("expected a count of rows, got `{n}`")))?;
            declared = Some((n, loc));
            continue;
        }
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let loc = Loc { file: Arc::from(path), line: i as u32 + 1 };
        let mut parts = l.split(',').map(str::trim);
        let d = parts.next().and_then(|x| x.parse::<u32>().ok());
        let t = parts.next().and_then(|x| x.parse::<f64>().ok());
        match (d, t) {
            (Some(d), Some(t)) if t >= 0.0 => {
                if out.last().is_some_and(|&(pd, _)| pd >= d) {
                    return Err(
                        loc.err(None, format!("seek distances must increase, got {d} after {}", out.last().unwrap().0))
                    );
                }
                out.push((d, (t * 1e6).round() as u64));
            }
            _ => {
                return Err(loc.err(None, format!("expected `distance, milliseconds`, got `{l}`")));
            }
        }
    }
    if out.len() < 2 {
        return Err(from.err(None, format!("`{}`: a seek table needs at least two points", path.display())));
    }
    if let Some((n, loc)) = declared
        && n != out.len()
    {
        return Err(loc.err(None, format!("says {n} seek distances, but the file has {} rows", out.len())));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Result<Spec, SpecError> {
        let mut p = Parser::new(s, Path::new("t.parv"));
        let mut spec = Spec::default();
        p.top(&mut spec, 0)?;
        Ok(spec)
    }

    #[test]
    fn blocks_lists_and_keys_with_spaces() {
        let s = parse_str(
            "# c\ndisksim_disk D {\n  Segment size (in blks) = 374,\n  Add. write settling delay = -0.4,\n  slips = [ 1, 2 ],\n  Scheduler = disksim_ioqueue { Scheduling policy = 1 },\n  Access time type = trackSwitchPlusRotation\n}\ninstantiate [ disk0 ] as D\ntopology disksim_iodriver driver0 [ disksim_bus bus0 [ disksim_disk disk0 [] ] ]\n",
        )
        .unwrap();
        let b = s.block_named("D").unwrap();
        assert_eq!(b.num("segment size (in blks)").unwrap(), 374.0);
        assert_eq!(b.num("Add. write settling delay").unwrap(), -0.4);
        assert_eq!(b.require("slips").unwrap().list().unwrap().len(), 2);
        assert_eq!(b.require("Scheduler").unwrap().block().unwrap().num("Scheduling policy").unwrap(), 1.0);
        assert_eq!(b.require("Access time type").unwrap().word().unwrap(), "trackSwitchPlusRotation");
        assert_eq!(s.instance("disk0"), Some("D"));
        assert_eq!(s.topology[0].children[0].children[0].name, "disk0");
    }

    #[test]
    fn errors_name_file_line_field() {
        let e = parse_str("disksim_disk D {\n  Max queue length = 1,\n  Foo 3\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.field.as_deref(), Some("Foo 3"));
        assert!(e.to_string().starts_with("t.parv:3: field `Foo 3`: expected `=`"), "{e}");
        let s = parse_str("disksim_disk D {\n  Max queue length = x,\n}").unwrap();
        let e = s.block_named("D").unwrap().int("Max queue length", 1, 256).unwrap_err();
        assert_eq!(e.to_string(), "t.parv:2: field `Max queue length`: expected an integer, got `x`");
    }
}
