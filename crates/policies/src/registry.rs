//! Names, aliases and scheduler specification strings.
//!
//! A spec is `NAME[:key=value[,key=value]...]`, e.g. `as:antic_expire=0,read_expire=250ms`.
//! Keys are the policy's tunables (sysfs names) or the queue's (`nr_requests`,
//! `max_sectors_kb`, `queue_depth`, `plugging`, `unplug_thresh`, `unplug_delay`, `unplug`, `hz`).
//! A list of specs is comma separated; a comma-separated item that contains `=` continues
//! the previous spec's settings: `deadline,as,as:nr_requests=8192,antic_expire=0`.

use iosched_core::{Hz, QUEUE_TUNABLES, Queue, QueueConfig, Scheduler, TunableError};
use std::fmt;

/// A policy as the registry lists it, declared once in the policy's own module (its
/// `POLICY` constant): everything a command, a test or a bench needs to know about it.
#[derive(Copy, Clone, Debug)]
pub struct Policy {
    /// The kernel's name.
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Which kernel the implementation follows.
    pub follows: &'static str,
    pub summary: &'static str,
    /// A fresh instance at the queue's tick rate, with its default tunables.
    pub new: fn(Hz) -> Box<dyn Scheduler>,
    /// Settings (`key=value,...`) that change the policy's behaviour enough to be tested on
    /// their own, beside the defaults (the test kit runs each).
    pub variants: &'static [&'static str],
    /// How long a request may wait under the test kit's steady load, for the policy as the
    /// spec configures it (its defaults, or one of `variants`).
    pub waiting_bound: fn(&SchedSpec) -> WaitBound,
}

/// How long a request may wait for dispatch under the test kit's steady load
/// (`iosched_testkit::props::steady_load`: six processes keep four requests each
/// outstanding, 4 KiB at random sectors, two reads to one write, and the device completes
/// one request every 2–10 ms), derived in the policy's docs ("Waiting bound").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WaitBound {
    /// No request waits longer than this many milliseconds from its arrival.
    Ms(u64),
    /// No request waits longer than this many milliseconds at the head of its FIFO:
    /// counted from when it became the oldest waiting request of its direction (its
    /// arrival, or the dispatch of the previous oldest, whichever is later). AS documents
    /// its bound this way: each older expired request adds one FIFO check interval.
    HeadMs(u64),
    /// There is no useful bound: the named golden scenario shows a request left waiting
    /// while others are served, for as long as the pattern goes on or for a time that
    /// grows with a tunable. The steady load still runs with every other check, and
    /// everything must complete once arrivals stop.
    None { scenario: &'static str },
}

pub use crate::SCHEDULERS;

static REGISTERED: std::sync::RwLock<Vec<Policy>> = std::sync::RwLock::new(Vec::new());

/// Add a policy from outside this crate (a user's own, as `examples/custom-scheduler`
/// does), so that spec strings name it like a built-in one. Call it before parsing any
/// spec. A name or alias that is already taken is refused.
pub fn register(p: Policy) -> Result<(), TunableError> {
    let taken = |n: &str| lookup(n).is_some();
    if let Some(n) = std::iter::once(p.name).chain(p.aliases.iter().copied()).find(|n| taken(n)) {
        return Err(TunableError::Syntax {
            spec: p.name.into(),
            expected: format!("a scheduler name not yet registered; `{n}` is taken"),
        });
    }
    REGISTERED.write().unwrap_or_else(|e| e.into_inner()).push(p);
    Ok(())
}

/// Every policy: the built-in ones, then those added with [`register`].
pub fn policies() -> Vec<Policy> {
    let mut v = SCHEDULERS.to_vec();
    v.extend(REGISTERED.read().unwrap_or_else(|e| e.into_inner()).iter().copied());
    v
}

/// The policy a name or alias denotes (names are matched without regard to case).
pub fn lookup(name: &str) -> Option<Policy> {
    let n = name.trim().to_ascii_lowercase();
    policies().into_iter().find(|i| i.name == n || i.aliases.contains(&n.as_str()))
}

fn all_names() -> Vec<String> {
    policies()
        .iter()
        .map(|i| {
            if i.aliases.is_empty() {
                i.name.to_string()
            } else {
                format!("{} (alias {})", i.name, i.aliases.join(", "))
            }
        })
        .collect()
}

/// A fresh instance of a policy by name or alias, at the given tick rate.
pub fn new_scheduler(name: &str, hz: Hz) -> Option<Box<dyn Scheduler>> {
    lookup(name).map(|p| (p.new)(hz))
}

/// A parsed scheduler specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedSpec {
    /// Canonical policy name.
    pub name: &'static str,
    /// `key=value` settings in the order written.
    pub settings: Vec<(String, String)>,
    /// The label of report rows: the name in lower case and the settings as written,
    /// without stray spaces (`deadline:read_expire=5`).
    pub text: String,
}

impl fmt::Display for SchedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl SchedSpec {
    /// Parse one spec: `NAME[:key=value,...]`.
    pub fn parse(text: &str) -> Result<SchedSpec, TunableError> {
        let mut v = parse_list(text)?;
        if v.len() != 1 {
            return Err(TunableError::Syntax {
                spec: text.into(),
                expected: "exactly one scheduler (NAME[:key=value,...])".into(),
            });
        }
        Ok(v.remove(0))
    }

    /// The setting the spec gives for `key`'s knob, under that name or its other one
    /// (`max_sectors` / `max_sectors_kb`, BFQ's `slice_idle` / `slice_idle_us`).
    pub fn setting_for(&self, key: &str) -> Option<&(String, String)> {
        self.settings.iter().find(|(k, _)| same_knob(k, key))
    }

    /// Add a setting (from `--set key=value`, or a recording's device settings). If the
    /// spec already sets the knob, the later setting wins when the queue is built; the
    /// command line refuses that case before calling this ([`SchedSpec::setting_for`]).
    /// The label (`text`) shows the setting too, so a report names the configuration
    /// that ran.
    pub fn with_setting(mut self, key: &str, value: &str) -> Self {
        self.settings.push((key.to_string(), value.to_string()));
        self.text.push(if self.text.contains(':') { ',' } else { ':' });
        self.text.push_str(&format!("{key}={value}"));
        self
    }

    /// The spec as a driver sets the queue up before the user's settings apply: `driver`'s
    /// settings (the device's queue depth, largest request, whether it rotates, …) written
    /// in front of the spec's own, except those the spec sets itself (under either name of
    /// a knob). The result builds the same queue the run uses, so it is a recording's
    /// `# sched` line and `iosched replay` rebuilds that queue from it.
    pub fn with_driver_settings(&self, driver: &[(&str, String)]) -> Result<SchedSpec, TunableError> {
        let (name, own) = match self.text.split_once(':') {
            Some((n, rest)) => (n, Some(rest)),
            None => (self.text.as_str(), None),
        };
        let mut items: Vec<String> =
            driver.iter().filter(|(k, _)| self.setting_for(k).is_none()).map(|(k, v)| format!("{k}={v}")).collect();
        items.extend(own.map(str::to_string));
        let text = if items.is_empty() { name.to_string() } else { format!("{name}:{}", items.join(",")) };
        SchedSpec::parse(&text)
    }

    /// Build the queue configuration and the configured policy, validating every setting.
    pub fn build(&self) -> Result<(QueueConfig, Box<dyn Scheduler>), TunableError> {
        self.build_on(QueueConfig::default())
    }

    /// As [`SchedSpec::build`], starting from `base` — the queue as the device driver set
    /// it up (its largest request, its queue depth) — so the spec's settings override the
    /// driver's, as sysfs writes do.
    pub fn build_on(&self, base: QueueConfig) -> Result<(QueueConfig, Box<dyn Scheduler>), TunableError> {
        let mut cfg = base;
        // The tick rate first: policy defaults depend on it.
        for (k, v) in self.settings.iter().filter(|(k, _)| k == "hz") {
            cfg.set(k, v)?;
        }
        let mut sched = new_scheduler(self.name, cfg.hz).expect("registered");
        for (k, v) in &self.settings {
            if k == "hz" {
                continue;
            }
            if let Some(spec) = sched.tunables().iter().find(|s| s.name == k) {
                let val = spec.parse(v)?;
                sched.set_tunable(k, val);
            } else if !cfg.set(k, v)? {
                let mut allowed: Vec<String> = sched.tunables().iter().map(|s| s.name.to_string()).collect();
                allowed.extend(QUEUE_TUNABLES.iter().map(|s| s.name.to_string()));
                return Err(TunableError::UnknownTunable { scheduler: self.name.into(), name: k.clone(), allowed });
            }
        }
        Ok((cfg, sched))
    }

    /// Build a ready [`Queue`].
    pub fn queue(&self) -> Result<Queue, TunableError> {
        let (cfg, sched) = self.build()?;
        Ok(Queue::new(cfg, sched))
    }

    /// Build a ready [`Queue`] on a driver's base configuration (see [`SchedSpec::build_on`]).
    pub fn queue_on(&self, base: QueueConfig) -> Result<Queue, TunableError> {
        let (cfg, sched) = self.build_on(base)?;
        Ok(Queue::new(cfg, sched))
    }
}

/// Parse a comma-separated list of specs.
pub fn parse_list(text: &str) -> Result<Vec<SchedSpec>, TunableError> {
    let mut out: Vec<SchedSpec> = Vec::new();
    let mut open = false; // the last spec had a colon, so `k=v` items continue it
    for raw in text.split(',') {
        let item = raw.trim();
        if item.is_empty() {
            let expected =
                if text.trim().is_empty() { "at least one scheduler name" } else { "no empty items between commas" };
            return Err(TunableError::Syntax { spec: text.into(), expected: expected.into() });
        }
        if item.contains('=') && !item.contains(':') {
            let Some(last) = out.last_mut().filter(|_| open) else {
                // `as;antic_expire=0`: the name is there, with the wrong separator.
                let example = match item.split_once(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_') {
                    Some((name, rest)) if !name.is_empty() && !rest.starts_with('=') && rest.contains('=') => {
                        format!(
                            "{name}:{}",
                            rest.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()).replace(';', ",")
                        )
                    }
                    _ => format!("as:{item}"),
                };
                return Err(TunableError::Syntax {
                    spec: text.into(),
                    expected: format!(
                        "setting `{item}` must follow a scheduler name and a colon, with commas between settings, \
                         e.g. {example}"
                    ),
                });
            };
            let (k, v) = split_kv(item, text)?;
            if let Some((k0, _)) = last.setting_for(&k) {
                let expected = if *k0 == k {
                    format!("each setting once in a scheduler's list; `{k}` is given twice")
                } else {
                    format!("one of `{k0}` and `{k}`: they set the same knob in different units")
                };
                return Err(TunableError::Syntax { spec: text.into(), expected });
            }
            last.text.push_str(&format!(",{k}={v}"));
            last.settings.push((k, v));
            continue;
        }
        let (name, first) = match item.split_once(':') {
            Some((n, rest)) => (n.trim(), Some(rest.trim())),
            None => (item, None),
        };
        let info = lookup(name)
            .ok_or_else(|| TunableError::UnknownScheduler { name: name.to_string(), allowed: all_names() })?;
        // The label as the kernel spells names (lower case: `AS` and `as` are one
        // scheduler, so one row label) and without stray spaces.
        let mut spec = SchedSpec { name: info.name, settings: Vec::new(), text: name.to_ascii_lowercase() };
        open = first.is_some();
        if let Some(kv) = first {
            let (k, v) = split_kv(kv, text)?;
            spec.text.push_str(&format!(":{k}={v}"));
            spec.settings.push((k, v));
        }
        out.push(spec);
    }
    if out.is_empty() {
        return Err(TunableError::Syntax { spec: text.into(), expected: "at least one scheduler name".into() });
    }
    // One rule for every list option: an item given twice is refused, not run twice or
    // dropped.
    for (i, a) in out.iter().enumerate() {
        if out[..i].iter().any(|b| b.text == a.text) {
            return Err(TunableError::Syntax {
                spec: text.into(),
                expected: format!("each scheduler once; `{}` is listed twice", a.text),
            });
        }
    }
    Ok(out)
}

/// Two setting names for one knob: the same name, or the sysfs pairs that differ only in
/// unit (`max_sectors` / `max_sectors_kb`, BFQ's `slice_idle` / `slice_idle_us`).
fn same_knob(a: &str, b: &str) -> bool {
    const PAIRS: [(&str, &str); 2] = [("max_sectors", "max_sectors_kb"), ("slice_idle", "slice_idle_us")];
    a == b || PAIRS.iter().any(|&(x, y)| (a == x && b == y) || (a == y && b == x))
}

fn split_kv(item: &str, whole: &str) -> Result<(String, String), TunableError> {
    match item.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => {
            Ok((k.trim().to_string(), v.trim().to_string()))
        }
        _ => Err(TunableError::Syntax { spec: whole.into(), expected: format!("`key=value`, got `{item}`") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_with_settings() {
        let v = parse_list("deadline,as,as:nr_requests=8192,antic_expire=0").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].name, "anticipatory");
        assert_eq!(v[2].settings.len(), 2);
        assert_eq!(v[2].text, "as:nr_requests=8192,antic_expire=0");
        // Names are matched without regard to case, and labelled as the kernel spells them,
        // without stray spaces: `AS` and `as` make one row.
        let v = parse_list("AS, Deadline: read_expire=5 ,fifo_batch = 4").unwrap();
        let texts: Vec<&str> = v.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["as", "deadline:read_expire=5,fifo_batch=4"]);
    }

    #[test]
    fn setting_without_colon_is_an_error() {
        let e = parse_list("as,antic_expire=0").unwrap_err();
        assert!(e.to_string().contains("must follow a scheduler name and a colon"), "{e}");
    }
}
