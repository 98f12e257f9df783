//! iosched-testkit: the checks every iosched policy must pass, for the policies in the
//! tree and for your own (`examples/custom-scheduler` runs them on its policy).
//!
//! What it is: [`props`] (the framework's invariants as property tests, and the waiting
//! bound under a steady load), [`golden`] (the scenario-script runner) and
//! [`check_policy`], which runs both on a [`Policy`] and each of its variants and checks
//! that a policy without a waiting bound names a golden scenario that shows why. The
//! in-tree policies' own tests call the same functions.
//!
//! What it is not: a simulator or a benchmark. Everything here drives a `Queue` by hand
//! with synthetic inputs; nothing reads a clock or does I/O.

pub mod golden;
pub mod props;

use iosched_policies::{Policy, SchedSpec, WaitBound};
use std::path::Path;

/// How many random cases [`check_policy`] draws per configuration: `IOSCHED_KIT_CASES`
/// if set (a positive whole number), else the defaults given.
fn cases(default: u32) -> u32 {
    match std::env::var("IOSCHED_KIT_CASES") {
        Ok(v) => v
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| panic!("IOSCHED_KIT_CASES={v}: expected a positive whole number of cases")),
        Err(_) => default,
    }
}

/// The specs the kit tests for a policy: its defaults, then each of its variants.
pub fn configurations(p: &Policy) -> Vec<SchedSpec> {
    std::iter::once(p.name.to_string())
        .chain(p.variants.iter().map(|v| format!("{}:{v}", p.name)))
        .map(|s| SchedSpec::parse(&s).unwrap_or_else(|e| panic!("{}: variant `{s}`: {e}", p.name)))
        .collect()
}

/// Every check on `policy` and each of its variants: the invariants, the steady load
/// against the policy's waiting bound, and — for a policy that declares no bound — that
/// the golden scenario it names exists in `golden_dir` and runs the same policy with the
/// variant's settings. `regressions` are `(spec, load seed)` pairs that once failed: each
/// runs first on the configuration whose spec it names. Returns every failure, one
/// paragraph each.
pub fn check_policy(policy: &Policy, golden_dir: &Path, regressions: &[(&str, u64)]) -> Result<(), String> {
    let mut failures = Vec::new();
    let configs = configurations(policy);
    for (s, _) in regressions {
        let ours = SchedSpec::parse(s).is_ok_and(|p| p.name == policy.name);
        if ours && !configs.iter().any(|c| c.text == *s) {
            let names: Vec<&str> = configs.iter().map(|c| c.text.as_str()).collect();
            failures.push(format!("regression `{s}`: names no configuration the kit runs ({})", names.join(", ")));
        }
    }
    for spec in configs {
        let bound = (policy.waiting_bound)(&spec);
        if let WaitBound::None { scenario } = bound
            && let Err(e) = scenario_shows(&spec, &golden_dir.join(scenario))
        {
            failures.push(e);
        }
        failures.extend(props::invariants(&spec, cases(8)).err());
        let seeds: Vec<u64> = regressions.iter().filter(|(s, _)| *s == spec.text).map(|&(_, seed)| seed).collect();
        failures.extend(props::steady_load(&spec, bound, &seeds, cases(3)).err());
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("\n\n")) }
}

/// The scenario at `path` runs `spec`'s policy with every one of its settings.
pub fn scenario_shows(spec: &SchedSpec, path: &Path) -> Result<(), String> {
    let script = std::fs::read_to_string(path)
        .map_err(|e| format!("{spec}: its waiting-bound scenario {} cannot be read: {e}", path.display()))?;
    let sched = script
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find_map(|l| l.strip_prefix("sched "))
        .ok_or_else(|| format!("{spec}: {} has no `sched` line", path.display()))?;
    let shown = SchedSpec::parse(sched).map_err(|e| format!("{}: {e}", path.display()))?;
    if shown.name != spec.name {
        return Err(format!("{spec}: {} runs another policy ({})", path.display(), shown.name));
    }
    for (k, v) in &spec.settings {
        if !shown.settings.contains(&(k.clone(), v.clone())) {
            return Err(format!("{spec}: {} does not set {k}={v}", path.display()));
        }
    }
    Ok(())
}
