//! Scenario scripts: a tiny text format that drives a [`Queue`] by hand and checks its
//! decisions. Used for the golden tests of every policy, and by `iosched scenario FILE`.
//!
//! ```text
//! # comments start with '#'
//! sched as:antic_expire=6          # the scheduler spec (first command)
//! set read_expire=125              # more settings, before the first input
//! at 10ms                          # advance time; timers due on the way fire in order
//! arrive r1 read 1000+8 owner=1    # submit: NAME OP SECTOR+LEN owner=N [sync] [meta] [prio=be/4]
//! complete r1                      # the device finished r1 (also: complete r1 err=5)
//! exit 1                           # owner 1 exited
//! unplug | drain | timeout         # other inputs
//! expect dispatch r1 r2            # the next requests the queue issued, in order
//! expect dispatch r1@10ms          # ... at that time
//! expect none                      # nothing issued that was not yet expected
//! expect timeout 16ms              # poll_timeout() (or: expect timeout none)
//! expect state antic_status=ANTIC_WAIT_NEXT batch_dir=sync   # policy state (debug_state)
//! expect admitted r5 | expect waiting r5 | expect merged r2 r1
//! expect inflight 1
//! expect diskstats ios=1/0 merge=1/0 ticks=10/0 in_queue=10 io_ticks=10   # ms, /proc/diskstats
//! ```
//!
//! After every input the runner acts as a driver: it takes everything `poll_dispatch`
//! releases and logs it; `expect dispatch` consumes that log. `run` returns a transcript
//! of everything that happened, which golden tests compare with a stored copy.

use crate::registry::SchedSpec;
use iosched_core::{Admission, Event, FastMap, Instant, IoPrio, Op, Owner, Queue, Request, Status};
use std::collections::VecDeque;
use std::fmt::Write as _;

/// A failed expectation or a malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ScenarioError {}

struct Runner {
    queue: Option<Queue>,
    spec: Option<SchedSpec>,
    now: Instant,
    names: FastMap<String, u64>,
    by_id: FastMap<u64, String>,
    dispatched: VecDeque<(Instant, u64)>,
    admissions: FastMap<u64, &'static str>,
    merges: FastMap<u64, u64>,
    out: String,
    line: usize,
}

/// A time with a unit (`6ms`, `1.5s`, `250us`, `500ns`), exactly, up to `u64::MAX` ns
/// (about 584 years): a larger one is rejected, not clamped.
fn parse_time(t: &str) -> Option<Instant> {
    let ns = iosched_core::time::parse_time_nanos(t, None)?;
    u64::try_from(ns).ok().map(Instant::from_nanos)
}

impl Runner {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, ScenarioError> {
        Err(ScenarioError { line: self.line, message: msg.into() })
    }

    fn q(&mut self) -> Result<&mut Queue, ScenarioError> {
        if self.queue.is_none() {
            let Some(spec) = &self.spec else {
                return self.err("no `sched` line before the first input");
            };
            let q = spec.queue().map_err(|e| ScenarioError { line: self.line, message: e.to_string() })?;
            self.queue = Some(q);
        }
        Ok(self.queue.as_mut().unwrap())
    }

    fn name(&self, id: u64) -> String {
        self.by_id.get(&id).cloned().unwrap_or_else(|| id.to_string())
    }

    fn id(&self, name: &str) -> Result<u64, ScenarioError> {
        match self.names.get(name) {
            Some(&i) => Ok(i),
            None => self.err(format!("unknown request `{name}`")),
        }
    }

    /// Act as the driver after an input: issue what the queue releases, note events.
    fn settle(&mut self) -> Result<(), ScenarioError> {
        let now = self.now;
        let mut issued = Vec::new();
        let mut events = Vec::new();
        {
            let q = self.q()?;
            while let Some(rq) = q.poll_dispatch(now) {
                issued.push(rq.id);
            }
            while let Some(e) = q.poll_event() {
                events.push(e);
            }
        }
        for id in issued {
            let _ = writeln!(self.out, "  -> dispatch {} @{}", self.name(id), now);
            self.dispatched.push_back((now, id));
        }
        for e in events {
            match e {
                Event::Admitted { id } => {
                    self.admissions.insert(id, "admitted");
                    let _ = writeln!(self.out, "  -> admitted {}", self.name(id));
                }
                Event::Coalesced { id, into } => {
                    self.merges.insert(id, into);
                    let _ = writeln!(self.out, "  -> coalesced {} into {}", self.name(id), self.name(into));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn advance(&mut self, to: Instant) -> Result<(), ScenarioError> {
        if to < self.now {
            return self.err(format!("time goes backwards: {} < {}", to, self.now));
        }
        loop {
            let t = self.q()?.poll_timeout();
            match t {
                Some(t) if t <= to => {
                    self.now = self.now.max(t);
                    let now = self.now;
                    self.q()?.handle_timeout(now);
                    let _ = writeln!(self.out, "  timer @{now}");
                    self.settle()?;
                }
                _ => break,
            }
        }
        self.now = to;
        Ok(())
    }

    fn command(&mut self, words: &[&str]) -> Result<(), ScenarioError> {
        // Commands of a fixed shape: a word past it is a mistake, not something to ignore.
        let most = match words[0] {
            "unplug" | "drain" | "timeout" => Some(1),
            "at" | "exit" => Some(2),
            "complete" => Some(3),
            _ => None,
        };
        if let Some(m) = most
            && let Some(extra) = words.get(m)
        {
            return self.err(format!("unexpected `{extra}` after `{}`", words[..m].join(" ")));
        }
        match words[0] {
            "sched" => {
                if self.queue.is_some() {
                    return self.err("`sched` after the first input");
                }
                if self.spec.is_some() {
                    return self.err("a second `sched` line (a script runs one scheduler)");
                }
                let text = words[1..].join(" ");
                let spec =
                    SchedSpec::parse(&text).map_err(|e| ScenarioError { line: self.line, message: e.to_string() })?;
                // Validate the settings now, so an error points at this line.
                spec.build().map_err(|e| ScenarioError { line: self.line, message: e.to_string() })?;
                self.spec = Some(spec);
            }
            "set" => {
                if self.queue.is_some() {
                    return self.err("`set` after the first input");
                }
                let Some(mut spec) = self.spec.take() else {
                    return self.err("`set` before `sched`");
                };
                for kv in &words[1..] {
                    let Some((k, v)) = kv.split_once('=') else {
                        return self.err(format!("expected key=value, got `{kv}`"));
                    };
                    // Once each, as on the command line: a second value would silently win.
                    if let Some((k0, v0)) = spec.setting_for(k) {
                        return self.err(format!("`{k}` is already set ({k0}={v0}); give each setting once"));
                    }
                    spec = spec.with_setting(k, v);
                }
                // Validate now, so the error points at this line.
                spec.build().map_err(|e| ScenarioError { line: self.line, message: e.to_string() })?;
                self.spec = Some(spec);
            }
            "at" => {
                let Some(t) = words.get(1).and_then(|t| parse_time(t)) else {
                    return self.err("expected `at TIME`: a time with a unit (ns, us, ms, s), a whole number of nanoseconds, at most about 584 years, e.g. at 6ms");
                };
                self.q()?;
                self.advance(t)?;
            }
            "arrive" => self.arrive(&words[1..])?,
            "complete" => {
                let Some(name) = words.get(1) else {
                    return self.err("expected `complete NAME`");
                };
                let id = self.id(name)?;
                let status = match words.get(2) {
                    None => Status::Ok,
                    Some(s) => match Status::parse_err(s) {
                        Ok(st) => st,
                        Err(m) => return self.err(m),
                    },
                };
                let now = self.now;
                if !self.q()?.is_in_flight(id) {
                    return self.err(format!(
                        "`complete {name}`: request {name} is not on the device (still queued, merged into another, or already completed)"
                    ));
                }
                self.q()?.handle_completion(now, id, status);
                self.settle()?;
            }
            "exit" => {
                let Some(o) = words.get(1).and_then(|o| o.parse().ok()) else {
                    return self.err("expected `exit OWNER`");
                };
                let now = self.now;
                self.q()?.handle_owner_exit(now, Owner(o));
                self.settle()?;
            }
            "unplug" => {
                let now = self.now;
                self.q()?.handle_unplug(now);
                self.settle()?;
            }
            "drain" => {
                let now = self.now;
                self.q()?.drain(now);
                self.settle()?;
            }
            "timeout" => {
                let now = self.now;
                self.q()?.handle_timeout(now);
                self.settle()?;
            }
            "expect" => self.expect(&words[1..])?,
            other => return self.err(format!("unknown command `{other}`")),
        }
        Ok(())
    }

    fn arrive(&mut self, w: &[&str]) -> Result<(), ScenarioError> {
        if w.len() < 4 {
            return self.err("expected `arrive NAME OP SECTOR+LEN owner=N [sync] [meta] [prio=P]`");
        }
        let name = w[0].to_string();
        if self.names.contains_key(&name) {
            return self.err(format!("request name `{name}` used twice"));
        }
        let op = match w[1] {
            "read" => Op::Read,
            "write" => Op::Write,
            "flush" => Op::Flush,
            "discard" => Op::Discard,
            o => return self.err(format!("unknown op `{o}` (read, write, flush, discard)")),
        };
        let Some((s, l)) = w[2].split_once('+') else {
            return self.err("expected SECTOR+LEN");
        };
        let (Ok(sector), Ok(len)) = (s.parse::<u64>(), l.parse::<u32>()) else {
            return self.err(format!(
                "expected SECTOR+LEN as numbers, SECTOR in 0..={} and LEN in 0..={}, got `{}`",
                u64::MAX,
                u32::MAX,
                w[2]
            ));
        };
        let mut owner = None;
        if len == 0 && op != Op::Flush {
            return self.err("LEN must be at least 1 sector (only a flush is empty)");
        }
        if sector.checked_add(len as u64).is_none() {
            return self.err("SECTOR+LEN runs past the largest sector number");
        }
        if op == Op::Flush && len != 0 {
            return self.err(format!("a flush carries no data: write `flush {sector}+0`, not `+{len}`"));
        }
        // The block layer never builds a request larger than the queue takes.
        let max = self.q()?.config().max_sectors;
        if len > max {
            return self.err(format!(
                "LEN {len} sectors is more than the queue's max_sectors, {max} (max_sectors_kb={}): the block \
                 layer splits larger I/O into requests of at most that",
                max / 2
            ));
        }
        let mut rq = Request::read(0, sector, len, Owner(0), self.now);
        rq.op = op;
        rq.sync = op == Op::Read;
        for opt in &w[3..] {
            if let Some(o) = opt.strip_prefix("owner=") {
                if owner.is_some() {
                    return self.err("owner= given twice");
                }
                owner = Some(o.parse().map_err(|_| ScenarioError {
                    line: self.line,
                    message: format!("owner=`{o}`: expected an owner number in 0..={}", u64::MAX),
                })?);
            } else if *opt == "sync" {
                rq.sync = true;
            } else if *opt == "meta" {
                rq.meta = true;
            } else if let Some(p) = opt.strip_prefix("prio=") {
                rq.prio = IoPrio::parse(p).map_err(|m| ScenarioError { line: self.line, message: m })?;
            } else {
                return self.err(format!("unknown option `{opt}`"));
            }
        }
        let Some(owner) = owner else {
            return self.err("missing owner=N");
        };
        rq.owner = Owner(owner);
        let id = self.names.len() as u64 + 1;
        rq.id = id;
        self.names.insert(name.clone(), id);
        self.by_id.insert(id, name.clone());
        let now = self.now;
        let adm = self.q()?.handle_arrival(now, rq);
        match adm {
            Admission::Queued => {
                self.admissions.insert(id, "queued");
            }
            Admission::Wait => {
                self.admissions.insert(id, "waiting");
                let _ = writeln!(self.out, "  -> waiting for a request slot");
            }
            Admission::Merged { into, kind } => {
                self.admissions.insert(id, "merged");
                self.merges.insert(id, into);
                let _ = writeln!(self.out, "  -> merged into {} ({:?})", self.name(into), kind);
            }
        }
        self.settle()
    }

    fn expect(&mut self, w: &[&str]) -> Result<(), ScenarioError> {
        // A word too many is a typo or a misunderstanding, never something to skip; an
        // expectation of nothing checks nothing.
        let most = match w.first().copied() {
            Some("none") => Some(1),
            Some("timeout" | "admitted" | "waiting" | "queued" | "inflight") => Some(2),
            Some("merged") => Some(3),
            _ => None,
        };
        if let Some(m) = most
            && w.len() > m
        {
            return self.err(format!(
                "`expect {}` takes {} word(s) after it; unexpected `{}`",
                w[0],
                m - 1,
                w[m..].join(" ")
            ));
        }
        if w.len() == 1 && matches!(w[0], "dispatch" | "state") {
            let what = if w[0] == "dispatch" { "NAME[@TIME]" } else { "KEY=VALUE" };
            return self.err(format!("expected `expect {} {what} …` (at least one)", w[0]));
        }
        match w.first().copied() {
            Some("dispatch") => {
                for item in &w[1..] {
                    let (name, at) = match item.split_once('@') {
                        Some((n, t)) => (
                            n,
                            Some(parse_time(t).ok_or_else(|| ScenarioError {
                                line: self.line,
                                message: format!("bad time in `{item}`"),
                            })?),
                        ),
                        None => (*item, None),
                    };
                    let want = self.id(name)?;
                    match self.dispatched.pop_front() {
                        None => {
                            let hint = if self.queue.as_ref().is_some_and(|q| q.is_plugged()) {
                                " (the queue is plugged: add plugging=0 to the spec, `unplug`, or advance time past unplug_delay)"
                            } else {
                                ""
                            };
                            return self.err(format!("expected dispatch of {name}, but nothing was dispatched{hint}"));
                        }
                        Some((t, got)) => {
                            if got != want {
                                return self.err(format!("expected dispatch of {name}, got {} @{t}", self.name(got)));
                            }
                            if let Some(at) = at
                                && at != t
                            {
                                return self.err(format!("{name} was dispatched @{t}, expected @{at}"));
                            }
                        }
                    }
                }
            }
            Some("none") => {
                if let Some((t, id)) = self.dispatched.front() {
                    return self.err(format!("expected no dispatch, but {} was dispatched @{t}", self.name(*id)));
                }
            }
            Some("timeout") => {
                let got = self.q()?.poll_timeout();
                let want = match w.get(1) {
                    Some(&"none") => None,
                    Some(t) => Some(
                        parse_time(t)
                            .ok_or_else(|| ScenarioError { line: self.line, message: format!("bad time `{t}`") })?,
                    ),
                    None => return self.err("expected `expect timeout TIME|none`"),
                };
                if got != want {
                    let f = |x: Option<Instant>| x.map(|t| t.to_string()).unwrap_or_else(|| "none".into());
                    return self.err(format!("expected timeout {}, got {}", f(want), f(got)));
                }
            }
            Some("state") => {
                let state = self.q()?.scheduler().debug_state();
                for kv in &w[1..] {
                    let Some((k, v)) = kv.split_once('=') else {
                        return self.err(format!("expected key=value, got `{kv}`"));
                    };
                    let got = state.iter().find(|(sk, _)| sk == k).map(|(_, sv)| sv.clone());
                    match got {
                        None => {
                            let keys: Vec<&str> = state.iter().map(|(k, _)| k.as_str()).collect();
                            return self.err(format!("no state `{k}`; known: {}", keys.join(", ")));
                        }
                        Some(g) if g == v || g.split_whitespace().any(|t| t == v) => {}
                        Some(g) => return self.err(format!("state {k}: expected {v}, got {g}")),
                    }
                }
            }
            Some(kind @ ("admitted" | "waiting" | "queued")) => {
                let Some(name) = w.get(1) else { return self.err(format!("expected `expect {kind} NAME`")) };
                let id = self.id(name)?;
                let got = self.admissions.get(&id).copied().unwrap_or("unknown");
                if got != kind {
                    return self.err(format!("{name}: expected {kind}, got {got}"));
                }
            }
            Some("merged") => {
                let (Some(a), Some(b)) = (w.get(1), w.get(2)) else {
                    return self.err("expected `expect merged NAME INTO`");
                };
                let (a, b) = (self.id(a)?, self.id(b)?);
                if self.merges.get(&a) != Some(&b) {
                    return self.err(format!("{} was not merged into {}", self.name(a), self.name(b)));
                }
            }
            Some("diskstats") => {
                // The queue's `/proc/diskstats` counters now, times in whole ms; each
                // field given is checked.
                let now = self.now;
                let d = self.q()?.disk_stats(now);
                let ms = |t: std::time::Duration| t.as_millis() as u64;
                let pair = |a: [u64; 2]| format!("{}/{}", a[0], a[1]);
                let got = [
                    ("ios", pair(d.ios)),
                    ("merge", pair(d.merges)),
                    ("sectors", pair(d.sectors)),
                    ("ticks", pair(d.ticks.map(ms))),
                    ("in_queue", ms(d.time_in_queue).to_string()),
                    ("io_ticks", ms(d.io_ticks).to_string()),
                ];
                if w.len() < 2 {
                    return self.err(
                        "expected `expect diskstats KEY=VALUE…` (ios, merge, sectors, ticks, in_queue, io_ticks)",
                    );
                }
                for kv in &w[1..] {
                    let Some((k, v)) = kv.split_once('=') else {
                        return self.err(format!("`{kv}`: expected KEY=VALUE"));
                    };
                    let Some((_, have)) = got.iter().find(|g| g.0 == k) else {
                        return self.err(format!("`{k}`: expected ios, merge, sectors, ticks, in_queue or io_ticks"));
                    };
                    if have != v {
                        return self.err(format!("diskstats {k}: expected {v}, got {have}"));
                    }
                }
            }
            Some("inflight") => {
                let Some(n) = w.get(1).and_then(|n| n.parse::<u32>().ok()) else {
                    return self.err("expected `expect inflight N`");
                };
                let got = self.q()?.in_flight();
                if got != n {
                    return self.err(format!("expected {n} in flight, got {got}"));
                }
            }
            _ => {
                return self.err(
                    "expected one of: dispatch, none, timeout, state, admitted, waiting, queued, merged, inflight, \
                     diskstats",
                );
            }
        }
        Ok(())
    }
}

/// Run a scenario script; returns its transcript or the first failure.
pub fn run(script: &str) -> Result<String, ScenarioError> {
    let (out, result) = run_with_transcript(script);
    result.map(|()| out)
}

/// Run a scenario script; returns the transcript up to the end or up to the first failure
/// (what a user needs to see why an expectation failed), and the failure if any.
pub fn run_with_transcript(script: &str) -> (String, Result<(), ScenarioError>) {
    let mut r = Runner {
        queue: None,
        spec: None,
        now: Instant::ZERO,
        names: FastMap::default(),
        by_id: FastMap::default(),
        dispatched: VecDeque::new(),
        admissions: FastMap::default(),
        merges: FastMap::default(),
        out: String::new(),
        line: 0,
    };
    for (i, raw) in script.lines().enumerate() {
        r.line = i + 1;
        let line = raw.split('#').next().unwrap().trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let _ = writeln!(r.out, "{line}");
        if let Err(e) = r.command(&words) {
            return (r.out, Err(e));
        }
    }
    if r.spec.is_none() {
        let e =
            ScenarioError { line: r.line.max(1), message: "no `sched` line: a script starts with `sched SPEC`".into() };
        return (r.out, Err(e));
    }
    if let Some(q) = &r.queue {
        let mut state = q.scheduler().debug_state();
        state.retain(|(k, _)| !k.contains('.'));
        let _ = writeln!(r.out, "# final state at {}:", r.now);
        for (k, v) in state {
            let _ = writeln!(r.out, "#   {k} = {v}");
        }
    }
    (r.out, Ok(()))
}
