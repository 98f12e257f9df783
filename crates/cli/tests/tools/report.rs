//! The report (`--report DIR`, `iosched report`) as a reader meets it: the repro page
//! rendered in headless Chromium with no network, every chart's SVG read back against the
//! data beside it, and the page drawn again from saved `--json` output, byte for byte.

use crate::{TempDir, iosched};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `repro --quick --json --report`, its JSON saved beside the report.
fn repro_report(t: &TempDir) -> PathBuf {
    let o = iosched(&["repro", "--quick", "--json", "--report", &t.s("rep")]);
    std::fs::write(t.join("repro.json"), &o.stdout).unwrap();
    t.join("rep")
}

fn charts(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".svg").map(String::from))
        .collect();
    v.sort();
    v
}

/// The attribute `name="…"` of an SVG element line.
fn attr<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let k = format!(" {name}=\"");
    let i = line.find(&k)? + k.len();
    Some(&line[i..i + line[i..].find('"')?])
}

/// Every series of a chart's `.jsonl` is in its `.svg` with as many marks as points
/// (the element kinds `crates/report/src/chart.rs` draws each mark as).
fn check_chart(dir: &Path, id: &str) -> usize {
    let svg = std::fs::read_to_string(dir.join(format!("{id}.svg"))).unwrap();
    let data = std::fs::read_to_string(dir.join(format!("{id}.jsonl"))).unwrap();
    let lines: Vec<&str> = svg.lines().collect();
    let count = |tag: &str, key: &str, color: &str| {
        lines.iter().filter(|l| l.starts_with(tag) && attr(l, key) == Some(color)).count()
    };
    let polylines = |color: &str| -> Vec<usize> {
        lines
            .iter()
            .filter(|l| l.starts_with("<polyline") && attr(l, "stroke") == Some(color))
            .map(|l| attr(l, "points").unwrap().split_whitespace().count())
            .collect()
    };
    let mut series = 0;
    for (i, l) in data.lines().enumerate() {
        let v: Value = serde_json::from_str(l).unwrap();
        if i == 0 {
            assert_eq!(v["chart"], id);
            assert!(!v["title"].as_str().unwrap().is_empty() && !v["y"]["label"].as_str().unwrap().is_empty());
            continue;
        }
        series += 1;
        let color = v["color"].as_str().unwrap();
        let n = v["points"].as_array().unwrap().len();
        let what = format!("{id}: series `{}` ({color}, {n} points)", v["series"]);
        match v["mark"].as_str().unwrap() {
            "line" => assert!(polylines(color).contains(&n), "{what}: no polyline of {n} points"),
            "line_dots" => {
                assert!(polylines(color).contains(&n), "{what}: no polyline of {n} points");
                assert!(count("<circle", "fill", color) >= n, "{what}: dots missing");
            }
            "dots" => assert_eq!(count("<circle", "fill", color), n, "{what}"),
            "published" => assert_eq!(count("<polygon", "fill", color), n + 1, "{what}: points and the key"),
            "interval" => {
                assert_eq!(count("<circle", "fill", color), n, "{what}");
                assert_eq!(polylines(color).iter().filter(|&&k| k == 2).count(), n, "{what}: intervals");
            }
            m => panic!("{what}: unknown mark {m}"),
        }
    }
    assert!(series > 0, "{id}: no series");
    series
}

/// Every chart kind of the repro page is there, and each SVG shows its data.
pub fn repro_charts_show_their_data() {
    let t = TempDir::new("charts");
    let dir = repro_report(&t);
    let ids = charts(&dir);
    for kind in ["tiobench-rate-", "tiobench-latency-", "readmany-elapsed", "readmany-timeline-", "readmany-seeks-"] {
        assert!(ids.iter().any(|c| c.contains(kind)), "no {kind} chart in {ids:?}");
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<table>") && html.contains("PASS"), "the claims' verdicts");
    assert!(html.contains("seed 1"), "the seed is printed");
    for id in &ids {
        check_chart(&dir, id);
        assert!(html.contains(&format!("<figure id=\"{id}\">")), "{id} not on the page");
    }
    // The rate chart: the three schedulers and their seed figures (none in --quick).
    assert_eq!(check_chart(&dir, "repro-tiobench-rate-seq-read"), 3);
}

/// compare's and fio's charts, drawn from their runs.
pub fn compare_and_fio_charts_show_their_data() {
    let t = TempDir::new("cmp");
    iosched(&[
        "compare",
        "--a",
        "deadline",
        "--b",
        "as",
        "--bench",
        "aio-stress",
        "--runs",
        "2",
        "--report",
        &t.s("c"),
    ]);
    assert_eq!(charts(&t.join("c")), ["compare"]);
    check_chart(&t.join("c"), "compare");
    let job = ["--name=r", "--rw=randread", "--size=8M", "--direct=1", "--ioengine=libaio", "--iodepth=8"];
    let mut args = vec!["fio", "--sched", "noop,deadline", "--output-format", "json", "--report"];
    let out = t.s("f");
    args.push(&out);
    args.push("--");
    args.extend(job);
    iosched(&args);
    let ids = charts(&t.join("f"));
    assert_eq!(ids, ["fio1-bw", "fio1-clat", "fio2-bw", "fio2-clat"]);
    for id in &ids {
        check_chart(&t.join("f"), id);
    }
}

/// A queue trace (`--record`) draws its seek picture; `--window` picks the part.
pub fn a_recorded_trace_draws_its_seek_picture() {
    let t = TempDir::new("trace");
    let tr = t.s("run.trace");
    iosched(&["tiobench", "--sched", "as", "--threads", "2", "--size", "8M", "--record", &tr]);
    iosched(&["report", &tr, "--out", &t.s("all")]);
    assert_eq!(check_chart(&t.join("all"), "trace1-seeks"), 2);
    let xs = |d: &str| -> Vec<f64> {
        let data = std::fs::read_to_string(t.join(d).join("trace1-seeks.jsonl")).unwrap();
        let v: Vec<Value> = data.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
        v.iter().flat_map(|s| s["points"].as_array().unwrap().iter().map(|p| p["x"].as_f64().unwrap())).collect()
    };
    let all = xs("all");
    let (lo, hi) = all.iter().fold((f64::MAX, 0f64), |(a, b), &x| (a.min(x), b.max(x)));
    // The first half of the dispatches' time span.
    let window = format!("{}ms..{}ms", (lo * 1000.0) as u64, ((lo + hi) / 2.0 * 1000.0) as u64);
    iosched(&["report", &tr, "--out", &t.s("part"), "--window", &window]);
    let pts = |d: &str| xs(d).len();
    assert!(pts("part") > 0 && pts("part") < pts("all"), "{} of {}", pts("part"), pts("all"));
    check_chart(&t.join("part"), "trace1-seeks");
    // --window with no trace among the files is refused.
    std::fs::write(t.join("x.json"), "{\"a\": 1}").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(["report", &t.s("x.json"), "--out", &t.s("no"), "--window", "1s..2s"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--window: applies to a queue trace"));
}

/// The page is self-contained: no script, no external file or address (the only URL is
/// SVG's namespace, which nothing fetches).
pub fn the_page_references_nothing_outside_it() {
    let t = TempDir::new("offline");
    let dir = repro_report(&t);
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for bad in ["<script", "<link", "<img", "<iframe", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(bad), "index.html contains `{bad}`");
    }
    let urls = html.matches("http").count();
    let ns = html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(urls, ns, "an address other than SVG's namespace");
}

/// `iosched report` on the saved `--json` draws the same bytes as `--report` did.
pub fn a_report_from_saved_json_is_the_same_bytes() {
    let t = TempDir::new("again");
    let dir = repro_report(&t);
    iosched(&["report", &t.s("repro.json"), "--out", &t.s("again")]);
    let a = charts(&dir);
    assert_eq!(a, charts(&t.join("again")));
    for f in a.iter().flat_map(|c| [format!("{c}.svg"), format!("{c}.jsonl")]).chain(["index.html".to_string()]) {
        assert!(
            std::fs::read(dir.join(&f)).unwrap() == std::fs::read(t.join("again").join(&f)).unwrap(),
            "{f} differs"
        );
    }
    // A directory that is not a report is refused, and left as it was.
    std::fs::create_dir_all(t.join("mine")).unwrap();
    std::fs::write(t.join("mine/notes"), "x").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_iosched"))
        .args(["report", &t.s("repro.json"), "--out", &t.s("mine")])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out"), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_dir(t.join("mine")).unwrap().count(), 1);
}

/// Chromium, in a network namespace of its own (no network at all), renders the page:
/// it loads with no console error, the DOM holds every chart, and the screenshot is not
/// blank (many pixels neither white nor one colour).
pub fn chromium_renders_the_page_without_network() {
    let t = TempDir::new("browser");
    let dir = repro_report(&t);
    let url = format!("file://{}", dir.join("index.html").display());
    let shot = t.join("page.png");
    let chrome = |extra: &[&str]| {
        let mut c = Command::new("unshare");
        c.args(["--net", "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]);
        c.args(["--enable-logging=stderr", "--v=0"]).arg(format!("--user-data-dir={}", t.join("profile").display()));
        c.args(extra).arg(&url);
        let o = c.output().expect("run chromium under unshare --net");
        assert!(o.status.success(), "chromium: {}", String::from_utf8_lossy(&o.stderr));
        o
    };
    let dom = chrome(&["--dump-dom"]);
    let text = String::from_utf8_lossy(&dom.stdout);
    for id in charts(&dir) {
        assert!(text.contains(&format!("id=\"{id}\"")), "the loaded page lacks {id}");
    }
    let log = String::from_utf8_lossy(&dom.stderr);
    // The page's own messages (a script error, a failed load); Chromium's internal pages
    // (`chrome://…`) log on their own, with their source named.
    let console: Vec<&str> =
        log.lines().filter(|l| l.contains("CONSOLE") && !l.contains("source: chrome://")).collect();
    assert!(console.is_empty(), "the page logged: {console:#?}");
    chrome(&["--window-size=1100,2400", &format!("--screenshot={}", shot.display())]);
    let dec = png::Decoder::new(std::fs::File::open(&shot).unwrap());
    let mut r = dec.read_info().unwrap();
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let ink = pixels.iter().filter(|p| p[..3].iter().any(|&c| c < 200)).count();
    let blue = pixels.iter().filter(|p| p[2] > 150 && p[0] < 60).count(); // the first series' colour
    assert!(info.width == 1100 && info.height == 2400, "{}x{}", info.width, info.height);
    assert!(ink > pixels.len() / 200, "the screenshot is nearly blank: {ink} dark pixels of {}", pixels.len());
    assert!(blue > 100, "no series drawn in the screenshot ({blue} pixels of the first series' colour)");
}
