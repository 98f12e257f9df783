//! The page of each command's results, built from the JSON documents it prints with
//! `--json` (`--output-format json` for fio). A document's kind is read from its content:
//!
//! | document                                   | recognised by                 | sections |
//! |--------------------------------------------|-------------------------------|----------|
//! | `repro --json`                             | `claims`, `tiobench`          | tiobench rates and latencies beside the seed's, the claims, read-many's times, timelines and seek pictures |
//! | `tiobench --json` (a line per row)         | `phase`, `rate_mb_s`          | rates per phase against threads, latency CDFs |
//! | `real tiobench --json`                     | `workload: "tiobench"`        | as `tiobench` |
//! | `readmany --json` (a line per run)         | `files_read`, `background`    | times, timelines (with `--vmstat`) |
//! | `real readmany --json`                     | `workload: "readmany"`        | times |
//! | `compare --json` (a line per row)          | `change_pct`, `a_cv_pct`      | the change per test with its ±2σ band |
//! | `fio`, `real fio` (`--output-format json`) | `fio version`, `jobs`         | bandwidth over time, completion-latency percentiles |
//!
//! Every figure drawn is a field of the document; nothing is computed here but sums,
//! ratios and the CDF of a histogram the document holds.

use crate::chart::{Axis, Chart, Mark, Point, Series};
use crate::{Page, Section, Table};
use serde_json::Value;

/// The page for `docs`, in the order given (documents of one kind are drawn together,
/// where the first of them was).
pub fn page(docs: &[Value]) -> Result<Page, String> {
    if docs.is_empty() {
        return Err("no JSON documents to draw".into());
    }
    let mut kinds: Vec<(Kind, Vec<&Value>)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let k = kind(d).ok_or_else(|| {
            format!(
                "document {}: not the JSON of a command this report draws (repro, tiobench, readmany, compare, \
                 fio, real tiobench, real readmany, real fio) nor a queue trace; its keys: {}",
                i + 1,
                keys(d)
            )
        })?;
        match kinds.iter_mut().find(|(kk, _)| *kk == k) {
            Some((_, v)) => v.push(d),
            None => kinds.push((k, vec![d])),
        }
    }
    let mut page = Page { title: "iosched report".into(), ..Default::default() };
    let mut seeds: Vec<String> = Vec::new();
    let mut titles: Vec<&str> = Vec::new();
    for (k, ds) in &kinds {
        for d in ds {
            for s in seed_of(d) {
                if !seeds.contains(&s) {
                    seeds.push(s);
                }
            }
        }
        titles.push(k.title());
        let sections = match k {
            Kind::Repro => ds.iter().enumerate().map(|(i, d)| repro(d, i)).collect::<Result<Vec<_>, _>>()?.concat(),
            Kind::Tiobench => tiobench(&ds.iter().flat_map(|d| records(d)).collect::<Vec<_>>(), "tiobench")?,
            Kind::Readmany => readmany(ds)?,
            Kind::Compare => vec![compare(ds)?],
            Kind::Fio => ds.iter().enumerate().map(|(i, d)| fio(d, i)).collect::<Result<Vec<_>, _>>()?,
            Kind::Trace => vec![traces(ds)],
        };
        page.sections.extend(sections);
    }
    page.title = format!("iosched: {}", titles.join(", "));
    page.subtitle = if seeds.is_empty() { "seed: not given".into() } else { format!("seed {}", seeds.join(", ")) };
    Ok(page)
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Kind {
    Repro,
    Tiobench,
    Readmany,
    Compare,
    Fio,
    Trace,
}

impl Kind {
    fn title(self) -> &'static str {
        match self {
            Kind::Repro => "repro (the two 2003 reports)",
            Kind::Tiobench => "tiobench",
            Kind::Readmany => "read-many",
            Kind::Compare => "A/B comparison",
            Kind::Fio => "fio",
            Kind::Trace => "queue traces",
        }
    }
}

fn kind(d: &Value) -> Option<Kind> {
    let has = |k: &str| d.get(k).is_some();
    if has("claims") && has("tiobench") && has("readmany") {
        Some(Kind::Repro)
    } else if (has("phase") && has("rate_mb_s")) || (d["workload"] == "tiobench" && d["records"].is_array()) {
        Some(Kind::Tiobench)
    } else if (has("files_read") && has("background") && has("elapsed_s"))
        || (d["workload"] == "readmany" && d["results"].is_array())
    {
        Some(Kind::Readmany)
    } else if has("change_pct") && has("a_cv_pct") && has("test") {
        Some(Kind::Compare)
    } else if has("fio version") && d["jobs"].is_array() {
        Some(Kind::Fio)
    } else if has("queue_trace") && d["seeks"].is_array() {
        Some(Kind::Trace)
    } else {
        None
    }
}

fn keys(d: &Value) -> String {
    match d.as_object() {
        Some(o) => {
            let v: Vec<&str> = o.keys().map(String::as_str).take(8).collect();
            if v.is_empty() { "none".into() } else { v.join(", ") }
        }
        None => "not an object".into(),
    }
}

fn seed_of(d: &Value) -> Vec<String> {
    if let Some(s) = d["seed"].as_u64() {
        return vec![s.to_string()];
    }
    if let Some(v) = d["seeds"].as_array() {
        return vec![v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("+")];
    }
    Vec::new()
}

/// The tiobench rows of a document: itself (a `tiobench --json` line) or its `records`.
fn records(d: &Value) -> Vec<&Value> {
    match d["records"].as_array() {
        Some(v) => v.iter().collect(),
        None => vec![d],
    }
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

/// tiotest's phase names, in tiobench.pl's printed order.
const PHASES: [(&str, &str); 4] = [
    ("seq_read", "Sequential reads"),
    ("rand_read", "Random reads"),
    ("seq_write", "Sequential writes"),
    ("rand_write", "Random writes"),
];

/// The CDF of a `lat_hist_us` histogram: (latency in ms, fraction of calls at most that).
fn cdf(hist: &Value) -> Vec<Point> {
    let Some(b) = hist.as_array() else { return Vec::new() };
    let total: f64 = b.iter().filter_map(|x| x[1].as_f64()).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut acc = 0.0;
    let mut out = Vec::new();
    for x in b {
        let (Some(us), Some(c)) = (x[0].as_f64(), x[1].as_f64()) else { continue };
        acc += c;
        // A log axis has no zero: a bucket of 0 µs is drawn at 1 µs.
        out.push(Point::new(us.max(1.0) / 1000.0, acc / total));
    }
    out
}

/// Rate per phase against thread count and latency CDFs, from tiobench rows (with the
/// seed's figures where a row carries them: `seed_rate_mb_s`).
fn tiobench(rows: &[&Value], id: &str) -> Result<Vec<Section>, String> {
    // A repro row wraps the record in `ours` and names the scheduler by its seed label.
    let rec = |r: &Value| -> Value { if r.get("ours").is_some() { r["ours"].clone() } else { r.clone() } };
    let name = |r: &Value| -> String { if r.get("label").is_some() { s(&r["label"]) } else { s(&r["scheduler"]) } };
    let mut scheds: Vec<String> = Vec::new();
    let mut threads: Vec<u64> = Vec::new();
    for r in rows {
        let n = name(r);
        if !scheds.contains(&n) {
            scheds.push(n);
        }
        if let Some(t) = rec(r)["threads"].as_u64()
            && !threads.contains(&t)
        {
            threads.push(t);
        }
    }
    threads.sort_unstable();
    let cats: Vec<String> = threads.iter().map(|t| t.to_string()).collect();
    let mut rates = Section { heading: "tiobench: rate per phase".into(), ..Default::default() };
    rates.text.push(
        "tiobench.pl's Rate column (MiB/s of phase wall time) against the thread count, one line per scheduler; \
         the seed report's figures, where it has them, as triangles."
            .into(),
    );
    let mut lats = Section { heading: "tiobench: latency distributions".into(), ..Default::default() };
    let top = threads.last().copied().unwrap_or(0);
    let mid = threads.get(threads.len() / 2).copied().unwrap_or(0);
    let lat_at = if rows.iter().any(|r| r.get("ours").is_some()) { mid } else { top };
    lats.text.push(format!(
        "The CDF of every read or write call's latency (tiotest's per-call timing, bucketed within 12.5 %), per \
         scheduler, at {lat_at} threads."
    ));
    for (ph, title) in PHASES {
        let of_phase: Vec<&&Value> = rows.iter().filter(|r| rec(r)["phase"] == ph).collect();
        if of_phase.is_empty() {
            continue;
        }
        let mut series = Vec::new();
        let mut seed = Vec::new();
        let mut lat = Vec::new();
        for (si, sc) in scheds.iter().enumerate() {
            let mine: Vec<&&&Value> = of_phase.iter().filter(|r| name(r) == *sc).collect();
            let pos = |r: &Value| threads.iter().position(|&t| Some(t) == rec(r)["threads"].as_u64());
            let pts: Vec<Point> =
                mine.iter().filter_map(|r| Some(Point::new(pos(r)? as f64, f(&rec(r)["rate_mb_s"])?))).collect();
            let sp: Vec<Point> =
                mine.iter().filter_map(|r| Some(Point::new(pos(r)? as f64, f(&r["seed_rate_mb_s"])?))).collect();
            if !pts.is_empty() {
                series.push(Series { color: Some(si), ..Series::new(sc.clone(), Mark::LineDots, pts) });
            }
            if !sp.is_empty() {
                seed.push(Series { color: Some(si), ..Series::new(format!("{sc} (seed)"), Mark::Published, sp) });
            }
            if let Some(r) = mine.iter().find(|r| rec(r)["threads"].as_u64() == Some(lat_at)) {
                let c = cdf(&rec(r)["lat_hist_us"]);
                if !c.is_empty() {
                    lat.push(Series { color: Some(si), ..Series::new(sc.clone(), Mark::Line, c) });
                }
            }
        }
        series.extend(seed);
        rates.charts.push(Chart {
            id: format!("{id}-rate-{}", ph.replace('_', "-")),
            title: format!("{title}: rate against threads"),
            x: Axis::categories("threads", cats.clone()),
            y: Axis::linear("rate (MiB/s)"),
            series,
            marks: Vec::new(),
        });
        if !lat.is_empty() {
            lats.charts.push(Chart {
                id: format!("{id}-latency-{}", ph.replace('_', "-")),
                title: format!("{title}: call latency CDF at {lat_at} threads"),
                x: Axis::log("latency (ms, log)"),
                y: Axis::linear("fraction of calls ≤ latency"),
                series: lat,
                marks: Vec::new(),
            });
        }
    }
    let mut out = vec![rates];
    if !lats.charts.is_empty() {
        out.push(lats);
    }
    Ok(out)
}

fn repro(d: &Value, i: usize) -> Result<Vec<Section>, String> {
    let id = if i == 0 { "repro".to_string() } else { format!("repro{}", i + 1) };
    let rows: Vec<&Value> = d["tiobench"].as_array().map(|v| v.iter().collect()).unwrap_or_default();
    let mut out = Vec::new();
    let mut claims = Section { heading: "The claims".into(), ..Default::default() };
    let setup = &d["setup"];
    claims.text.push(format!(
        "tiobench on {} ({} MiB memory, {}), read-many on {} ({} MiB, {}), host {}{}; seed {}.",
        s(&setup["tiobench_disk"]),
        s(&setup["tiobench_mem_mib"]),
        s(&setup["tiobench_cpu"]),
        s(&setup["readmany_disk"]),
        s(&setup["readmany_mem_mib"]),
        s(&setup["readmany_cpu"]),
        s(&setup["host"]),
        if d["quick"] == true { ", quick (smaller runs: no seed figures beside them)" } else { "" },
        s(&d["seed"]),
    ));
    let mut t = Table { head: vec!["#".into(), "claim".into(), "verdict".into(), "figures".into()], rows: Vec::new() };
    for c in d["claims"].as_array().into_iter().flatten() {
        let v = if c["pass"] == true { "PASS" } else { "FAIL" };
        t.rows.push(vec![s(&c["id"]), s(&c["text"]), v.into(), s(&c["figures"])]);
    }
    claims.tables.push(t);
    out.push(claims);
    out.extend(tiobench(&rows, &format!("{id}-tiobench"))?);
    let rm: Vec<&Value> = d["readmany"].as_array().map(|v| v.iter().collect()).unwrap_or_default();
    out.extend(readmany_rows(&rm, &format!("{id}-readmany"))?);
    Ok(out)
}

/// Simulated runs are rows themselves; a real run's document holds its rows in
/// `results` (with `writer` for the streaming write).
fn readmany(docs: &[&Value]) -> Result<Vec<Section>, String> {
    let mut rows: Vec<Value> = Vec::new();
    for d in docs {
        match d["results"].as_array() {
            Some(v) => rows.extend(v.iter().map(|r| {
                let bg = if r["writer"] == true { "stream-write" } else { "none" };
                serde_json::json!({"scheduler": r["scheduler"], "background": bg, "elapsed_s": r["elapsed_s"]})
            })),
            None => rows.push((*d).clone()),
        }
    }
    readmany_rows(&rows.iter().collect::<Vec<_>>(), "readmany")
}

/// Elapsed times (beside the seed's where the rows carry `seed_s`), and per run its
/// vmstat timeline and seek picture where the rows hold them.
fn readmany_rows(rows: &[&Value], id: &str) -> Result<Vec<Section>, String> {
    let label = |r: &Value| -> String {
        let l = if r.get("label").is_some() { s(&r["label"]) } else { s(&r["scheduler"]) };
        format!("{l}, {}", s(&r["background"]))
    };
    let cats: Vec<String> = rows.iter().map(|r| label(r)).collect();
    let mut times = Section { heading: "Read-many: elapsed time".into(), ..Default::default() };
    times.text.push(
        "`find tree -type f | xargs cat`'s elapsed time per scheduler, alone (none) and beside the streaming \
         write; the seed report's times as triangles. A log axis: the schedulers differ by 50×."
            .into(),
    );
    // Horizontal: the runs' names down the side, where they have room.
    let ours: Vec<Point> =
        rows.iter().enumerate().filter_map(|(i, r)| Some(Point::new(f(&r["elapsed_s"])?, i as f64))).collect();
    let seed: Vec<Point> =
        rows.iter().enumerate().filter_map(|(i, r)| Some(Point::new(f(&r["seed_s"])?, i as f64))).collect();
    let mut series = vec![Series::new("ours", Mark::Dots, ours)];
    if !seed.is_empty() {
        series.push(Series::new("seed report", Mark::Published, seed));
    }
    times.charts.push(Chart {
        id: format!("{id}-elapsed"),
        title: "Read-many: elapsed time per scheduler".into(),
        x: Axis::log("elapsed (s, log)"),
        y: Axis::categories("run (scheduler, background)", cats),
        series,
        marks: Vec::new(),
    });
    let mut timelines =
        Section { heading: "Read-many: the disk's reads and writes over time".into(), ..Default::default() };
    timelines.text.push(
        "vmstat's bi and bo (MiB/s read and written by the device, each second) while the command ran, per run \
         under a background load; the command's start and end marked. The seed report's vmstat lines are the \
         triangles: it printed them without their time in the run, so they are drawn one a second from the \
         command's start (AS's first three, with no reads, came before its reads began)."
            .into(),
    );
    let mut seeks = Section { heading: "Read-many: the seek picture".into(), ..Default::default() };
    seeks.text.push(
        "Every request dispatched to the disk in a window of the run under the streaming write: its position \
         against time, reads and writes apart (what blktrace's seekwatcher draws). Anticipation shows as runs \
         of reads; batching as bands of writes."
            .into(),
    );
    for (i, r) in rows.iter().enumerate() {
        let start = f(&r["start_s"]).unwrap_or(0.0);
        let slug = format!("{i}-{}", slug(&label(r)));
        if let Some(v) = r["vmstat"].as_array().filter(|v| !v.is_empty())
            && r["background"] != "none"
        {
            let pt = |k: &str| -> Vec<Point> {
                v.iter()
                    .filter_map(|l| Some(Point::new(l["second"].as_f64()? - start, l[k].as_f64()? / 1024.0)))
                    .collect()
            };
            let mut marks = vec![(0.0, "start".to_string())];
            if let Some(e) = f(&r["elapsed_s"]) {
                marks.push((e, if r["timed_out"] == true { "timeout".into() } else { "end".into() }));
            }
            let mut series =
                vec![Series::new("read (bi)", Mark::Line, pt("bi")), Series::new("written (bo)", Mark::Line, pt("bo"))];
            if let Some(sv) = r["seed_vmstat"].as_array().filter(|v| !v.is_empty()) {
                let spt = |k: usize| -> Vec<Point> {
                    sv.iter()
                        .enumerate()
                        .filter_map(|(j, l)| Some(Point::new(j as f64, l[k].as_f64()? / 1024.0)))
                        .collect()
                };
                series.push(Series { color: Some(0), ..Series::new("seed's bi", Mark::Published, spt(0)) });
                series.push(Series { color: Some(1), ..Series::new("seed's bo", Mark::Published, spt(1)) });
            }
            timelines.charts.push(Chart {
                id: format!("{id}-timeline-{slug}"),
                title: format!("{}: MiB/s read and written each second", label(r)),
                x: Axis::linear("time since the command started (s)"),
                y: Axis::linear("MiB/s"),
                series,
                marks,
            });
        }
        if let Some(v) = r["seeks"].as_array().filter(|v| !v.is_empty()) {
            seeks.charts.push(seek_chart(
                format!("{id}-seeks-{slug}"),
                format!("{}: each dispatched request's position ({} requests)", label(r), v.len()),
                "time since the command started (s)",
                v,
                start,
            ));
        }
    }
    let mut out = vec![times];
    for sec in [timelines, seeks] {
        if !sec.charts.is_empty() {
            out.push(sec);
        }
    }
    Ok(out)
}

/// The change of each test with its ±2σ band, sorted by effect.
fn compare(rows: &[&Value]) -> Result<Section, String> {
    let first = rows[0];
    let mut sorted: Vec<&&Value> = rows.iter().collect();
    sorted.sort_by(|a, b| {
        let (x, y) = (f(&a["change_pct"]).unwrap_or(0.0), f(&b["change_pct"]).unwrap_or(0.0));
        x.total_cmp(&y)
    });
    let cats: Vec<String> = sorted.iter().map(|r| format!("{}: {}", s(&r["bench"]), s(&r["test"]))).collect();
    let pts: Vec<Point> = sorted
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let c = f(&r["change_pct"])?;
            let band = 2.0 * f(&r["a_cv_pct"])?.max(f(&r["b_cv_pct"])?);
            Some(Point { x: c, y: i as f64, lo: Some(c - band), hi: Some(c + band) })
        })
        .collect();
    let mut sec =
        Section { heading: format!("A/B: {} against {}", s(&first["b"]), s(&first["a"])), ..Default::default() };
    sec.text.push(format!(
        "Each test's change of B's mean from A's, in %, over {} runs each (seeds {}); the bar is ±2 × the larger \
         coefficient of variation: a change whose bar crosses zero is within run-to-run variation (the seed \
         report's rule).",
        s(&first["runs"]),
        first["seeds"]
            .as_array()
            .map(|v| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
            .unwrap_or_default()
    ));
    let mut t = Table {
        head: ["bench", "test", "A", "B", "unit", "change %", "A cv %", "B cv %", "verdict"].map(String::from).to_vec(),
        rows: Vec::new(),
    };
    for r in rows {
        let n = |k: &str| f(&r[k]).map(|x| format!("{x:.3}")).unwrap_or_default();
        t.rows.push(vec![
            s(&r["bench"]),
            s(&r["test"]),
            n("a_mean"),
            n("b_mean"),
            s(&r["unit"]),
            n("change_pct"),
            n("a_cv_pct"),
            n("b_cv_pct"),
            s(&r["verdict"]),
        ]);
    }
    sec.charts.push(Chart {
        id: "compare".into(),
        title: format!("Change of {} from {} per test, with ±2σ", s(&first["b"]), s(&first["a"])),
        x: Axis::linear("change of B from A (%)"),
        y: Axis::categories("test", cats),
        series: vec![Series::new("change ± 2σ", Mark::Interval, pts)],
        marks: vec![(0.0, "no change".into())],
    });
    sec.tables.push(t);
    Ok(sec)
}

/// One fio report: bandwidth over time and completion-latency percentiles per job and
/// direction.
fn fio(d: &Value, i: usize) -> Result<Section, String> {
    let id = format!("fio{}", i + 1);
    let world = s(&d["world"]);
    let sched = s(&d["scheduler"]);
    let mut sec = Section { heading: format!("fio: {sched} ({world})"), ..Default::default() };
    let jobs = d["jobs"].as_array().cloned().unwrap_or_default();
    let logs = d["iosched"]["bw_log"].as_array().cloned().unwrap_or_default();
    let interval = d["iosched"]["bw_interval_ms"].as_f64().unwrap_or(500.0) / 1000.0;
    let mut bw = Vec::new();
    for l in &logs {
        for (k, dir) in [("read_bytes", "read"), ("write_bytes", "write")] {
            let Some(v) = l[k].as_array().filter(|v| !v.is_empty()) else { continue };
            let pts = v
                .iter()
                .enumerate()
                .filter_map(|(j, b)| Some(Point::new((j as f64 + 0.5) * interval, b.as_f64()? / interval / 1e6)))
                .collect();
            bw.push(Series::new(format!("{} {dir}", s(&l["jobname"])), Mark::Line, pts));
        }
    }
    if !bw.is_empty() {
        sec.charts.push(Chart {
            id: format!("{id}-bw"),
            title: format!("fio under {sched}: bandwidth over time ({:.0} ms intervals)", interval * 1000.0),
            x: Axis::linear("time since the job started (s)"),
            y: Axis::linear("bandwidth (MB/s)"),
            series: bw,
            marks: Vec::new(),
        });
    }
    let mut pct_names: Vec<String> = Vec::new();
    let mut lat = Vec::new();
    for j in &jobs {
        for dir in ["read", "write"] {
            let Some(p) = j[dir]["clat_ns"]["percentile"].as_object().filter(|p| !p.is_empty()) else { continue };
            let mut pts = Vec::new();
            for (k, v) in p {
                let name = k.trim_end_matches('0').trim_end_matches('.').to_string();
                let pos = match pct_names.iter().position(|n| *n == name) {
                    Some(i) => i,
                    None => {
                        pct_names.push(name);
                        pct_names.len() - 1
                    }
                };
                if let Some(ns) = v.as_f64().filter(|&x| x > 0.0) {
                    pts.push(Point::new(pos as f64, ns / 1000.0));
                }
            }
            lat.push(Series::new(format!("{} {dir}", s(&j["jobname"])), Mark::LineDots, pts));
        }
    }
    if !lat.is_empty() {
        sec.charts.push(Chart {
            id: format!("{id}-clat"),
            title: format!("fio under {sched}: completion-latency percentiles per job"),
            x: Axis::categories("percentile", pct_names),
            y: Axis::log("completion latency (µs, log)"),
            series: lat,
            marks: Vec::new(),
        });
    }
    sec.text.push(format!(
        "{} job entr{}, seed {}.",
        jobs.len(),
        if jobs.len() == 1 { "y" } else { "ies" },
        s(&d["seed"])
    ));
    Ok(sec)
}

/// The seek picture of each queue trace.
fn traces(docs: &[&Value]) -> Section {
    let mut sec = Section { heading: "Queue traces: the seek picture".into(), ..Default::default() };
    sec.text.push(
        "Each request dispatched to the device, its position (its first bio's) against time since the trace \
         began, reads and writes apart."
            .into(),
    );
    for (i, d) in docs.iter().enumerate() {
        let v = d["seeks"].as_array().cloned().unwrap_or_default();
        let what = match d["run"].as_str() {
            Some(r) => format!("{} ({r})", s(&d["queue_trace"])),
            None => s(&d["queue_trace"]),
        };
        sec.text.push(format!(
            "{what}: scheduler {}; {} of its {} dispatches drawn.",
            s(&d["sched"]),
            v.len(),
            s(&d["dispatches"])
        ));
        let title = format!(
            "{} (trace {}): each dispatched request's position",
            s(&d["sched"]).split(':').next().unwrap_or_default(),
            i + 1
        );
        sec.charts.push(seek_chart(format!("trace{}-seeks", i + 1), title, "time since the trace began (s)", &v, 0.0));
    }
    sec
}

/// The seek picture of dispatches (`at_ns`, `sector`, `write` each): position against
/// time since `t0_s`, reads and writes apart.
fn seek_chart(id: String, title: String, x_label: &str, seeks: &[Value], t0_s: f64) -> Chart {
    let pt = |w: bool| -> Vec<Point> {
        seeks
            .iter()
            .filter(|p| p["write"] == w)
            .filter_map(|p| {
                let t = p["at_ns"].as_f64()? / 1e9 - t0_s;
                Some(Point::new(t, p["sector"].as_f64()? * 512.0 / (1u64 << 30) as f64))
            })
            .collect()
    };
    Chart {
        id,
        title,
        x: Axis::linear(x_label),
        y: Axis::linear("position on the disk (GiB)"),
        series: vec![Series::new("read", Mark::Dots, pt(false)), Series::new("write", Mark::Dots, pt(true))],
        marks: Vec::new(),
    }
}

/// A chart id's part from a label: letters and digits, the rest `-`.
fn slug(l: &str) -> String {
    let mut o = String::new();
    for c in l.chars() {
        if c.is_ascii_alphanumeric() {
            o.push(c.to_ascii_lowercase());
        } else if !o.ends_with('-') {
            o.push('-');
        }
    }
    o.trim_matches('-').to_string()
}

/// Parse a file of JSON documents (one, or several one after another: JSON lines or
/// pretty-printed), naming `name` and the document's place in an error.
pub fn parse_docs(name: &str, text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (i, v) in serde_json::Deserializer::from_str(text).into_iter::<Value>().enumerate() {
        let v = v.map_err(|e| format!("{name}: document {}: line {}, column {}: {e}", i + 1, e.line(), e.column()))?;
        out.push(v);
    }
    if out.is_empty() {
        return Err(format!("{name}: no JSON document in it (expected the output of a command's --json)"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_of_no_known_kind_is_refused_by_its_keys() {
        let e = page(&[json!({"hello": 1})]).unwrap_err();
        assert!(e.contains("document 1") && e.contains("hello"), "{e}");
    }

    #[test]
    fn tiobench_lines_draw_one_series_per_scheduler_and_the_cdf_ends_at_one() {
        let row = |sc: &str, t: u64, r: f64| {
            json!({"scheduler": sc, "phase": "seq_read", "threads": t, "rate_mb_s": r, "seed": 4,
                   "lat_hist_us": [[10, 3], [100, 1]]})
        };
        let p = page(&[row("as", 2, 10.0), row("as", 4, 12.0), row("deadline", 2, 5.0)]).unwrap();
        assert_eq!(p.subtitle, "seed 4");
        let rate = p.charts().find(|c| c.id == "tiobench-rate-seq-read").unwrap();
        assert_eq!(rate.series.len(), 2);
        assert_eq!(rate.series[0].points.len(), 2);
        let lat = p.charts().find(|c| c.id == "tiobench-latency-seq-read").unwrap();
        assert_eq!(lat.series.len(), 1, "only `as` ran at 4 threads");
        assert_eq!(lat.series[0].points.last().unwrap().y, 1.0);
        assert_eq!(lat.series[0].points[0].y, 0.75);
    }

    #[test]
    fn several_documents_in_one_file_parse_and_a_bad_one_is_named() {
        assert_eq!(parse_docs("f", "{\"a\":1}\n{\"b\":2}").unwrap().len(), 2);
        assert_eq!(parse_docs("f", "{\n \"a\": 1\n}\n{\n}").unwrap().len(), 2);
        let e = parse_docs("out.json", "{\"a\":1}\n{\"b\":").unwrap_err();
        assert!(e.starts_with("out.json: document 2: line 2"), "{e}");
        assert!(parse_docs("f", " \n").unwrap_err().contains("no JSON document"));
    }
}
