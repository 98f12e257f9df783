//! Names, aliases and scheduler specification strings.
//!
//! A spec is `NAME[:key=value[,key=value]...]`, e.g. `as:antic_expire=0,read_expire=250ms`.
//! Keys are the policy's tunables (sysfs names) or the queue's (`nr_requests`,
//! `max_sectors_kb`, `queue_depth`, `plugging`, `unplug_thresh`, `unplug_delay`, `hz`).
//! A list of specs is comma separated; a comma-separated item that contains `=` continues
//! the previous spec's settings: `deadline,as,as:nr_requests=8192,antic_expire=0`.

use crate::{Anticipatory, Bfq, Cfq, CfqV1, Deadline, Kyber, MqDeadline, Noop};
use iosched_core::{Hz, QUEUE_TUNABLES, Queue, QueueConfig, Scheduler, TunableError};
use std::fmt;

/// A registered policy.
#[derive(Copy, Clone, Debug)]
pub struct Info {
    /// The kernel's name.
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    /// Which kernel the implementation follows.
    pub follows: &'static str,
    pub summary: &'static str,
}

pub const SCHEDULERS: &[Info] = &[
    Info {
        name: "noop",
        aliases: &["none"],
        follows: "Linux 2.6.20 block/noop-iosched.c",
        summary: "FIFO; merging only",
    },
    Info {
        name: "deadline",
        aliases: &[],
        follows: "Linux 2.6.20 block/deadline-iosched.c",
        summary: "sector-sorted batches per direction with FIFO deadlines; reads preferred",
    },
    Info {
        name: "anticipatory",
        aliases: &["as"],
        follows: "Linux 2.6.20 block/as-iosched.c",
        summary: "deadline-like read/write batches plus anticipation of a process's next read",
    },
    Info {
        name: "cfq",
        aliases: &[],
        follows: "Linux 2.6.20 block/cfq-iosched.c (+ 2007 defer_slice_start option)",
        summary: "per-process queues served in time slices with idling; I/O priorities",
    },
    Info {
        name: "cfq-v1",
        aliases: &["cfq1"],
        follows: "CFQ #2 of Feb 2003 (2.5.61-mm1); 2.6.6 / 2.6.8 as options",
        summary: "original CFQ: per-process queues refilled round-robin, no slices, no idling",
    },
    Info {
        name: "mq-deadline",
        aliases: &["mq_deadline"],
        follows: "recent mainline block/mq-deadline.c (2024 tag fix; async_depth not modelled)",
        summary: "deadline per I/O priority level (RT, BE, IDLE), strict priority with aging",
    },
    Info {
        name: "kyber",
        aliases: &[],
        follows: "block/kyber-iosched.c, histogram version (4.18 to today; async tag limit not modelled)",
        summary: "per-operation token depths tuned from p90/p99 latency histograms; FIFO, batches per domain",
    },
    Info {
        name: "bfq",
        aliases: &[],
        follows: "block/bfq-iosched.c + bfq-wf2q.c, 6.x, with weight raising; no cgroups, queue merging or injection",
        summary: "per-process queues served in sector budgets by B-WF2Q+ (weight from I/O priority), with idling",
    },
];

fn lookup(name: &str) -> Option<&'static Info> {
    let n = name.trim().to_ascii_lowercase();
    SCHEDULERS.iter().find(|i| i.name == n || i.aliases.contains(&n.as_str()))
}

fn all_names() -> Vec<String> {
    SCHEDULERS
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

/// A fresh instance of a policy by canonical name, at the given tick rate.
pub fn new_scheduler(name: &str, hz: Hz) -> Option<Box<dyn Scheduler>> {
    let info = lookup(name)?;
    Some(match info.name {
        "noop" => Box::new(Noop::new()),
        "deadline" => Box::new(Deadline::new(hz)),
        "anticipatory" => Box::new(Anticipatory::new(hz)),
        "cfq" => Box::new(Cfq::new(hz)),
        "cfq-v1" => Box::new(CfqV1::new()),
        "mq-deadline" => Box::new(MqDeadline::new(hz)),
        "kyber" => Box::new(Kyber::new(hz)),
        "bfq" => Box::new(Bfq::new(hz)),
        _ => unreachable!(),
    })
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
