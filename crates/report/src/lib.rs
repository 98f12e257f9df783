//! iosched-report: the pictures of iosched's results.
//!
//! What it is: charts ([`chart::Chart`]: titled, axes with units, a legend, the seed
//! report's figures beside ours) drawn as SVG by plotters, and one self-contained HTML
//! page ([`Page`]: inline SVG, no script, no network, opens from `file://`) with each
//! chart also as its own `.svg` and the data behind it as `.jsonl`. The charts are built
//! from the JSON documents the commands print with `--json` ([`views::page`]), so a page
//! drawn from a run (`--report DIR`) and one drawn later from its saved output (`iosched
//! report FILE…`) are the same bytes.
//!
//! What it is not: a place where results are computed. Every figure comes from a
//! command's JSON; this crate only arranges and draws them.

pub mod chart;
pub mod views;

pub use chart::{Axis, Chart, Mark, Point, Series};
use std::fmt::Write as _;
use std::path::Path;

/// A table on the page (e.g. the claims' verdicts).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// A part of the page: a heading, paragraphs, tables, charts.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Section {
    pub heading: String,
    pub text: Vec<String>,
    pub tables: Vec<Table>,
    pub charts: Vec<Chart>,
}

/// A whole report.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Page {
    pub title: String,
    /// What ran, with its seeds: every report prints them.
    pub subtitle: String,
    pub sections: Vec<Section>,
}

/// What marks a directory as one of ours: `index.html` carries it, so a second `--report`
/// may write over it, and nothing else is ever written over.
pub const GENERATOR: &str = "<meta name=\"generator\" content=\"iosched report\">";

impl Page {
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.sections.iter().flat_map(|s| s.charts.iter())
    }

    /// The page: one HTML document, every chart inline.
    pub fn html(&self) -> Result<String, String> {
        let svgs = self.charts().map(Chart::svg).collect::<Result<Vec<_>, _>>()?;
        Ok(self.html_with(&svgs))
    }

    /// The page with the charts' SVG already drawn (`svgs`, in [`Page::charts`] order).
    fn html_with(&self, svgs: &[String]) -> String {
        let mut svgs = svgs.iter();
        let mut o = String::new();
        let _ = write!(
            o,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{GENERATOR}\n<title>{}</title>\n\
             <style>\nbody{{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}}\n\
             table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #bbb;padding:.3em .6em;\
             vertical-align:top;text-align:left}}th{{background:#eee}}\n.pass{{color:#060;font-weight:bold}}\
             .fail{{color:#a00;font-weight:bold}}\nfigure{{margin:1.5em 0}}figcaption{{font-size:.9em;color:#555}}\n\
             </style>\n</head>\n<body>\n<h1>{}</h1>\n<p>{}</p>\n",
            esc(&self.title),
            esc(&self.title),
            esc(&self.subtitle)
        );
        for s in &self.sections {
            let _ = writeln!(o, "<h2>{}</h2>", esc(&s.heading));
            for t in &s.text {
                let _ = writeln!(o, "<p>{}</p>", esc(t));
            }
            for t in &s.tables {
                o.push_str("<table>\n<tr>");
                for h in &t.head {
                    let _ = write!(o, "<th>{}</th>", esc(h));
                }
                o.push_str("</tr>\n");
                for r in &t.rows {
                    o.push_str("<tr>");
                    for c in r {
                        let class = match c.as_str() {
                            "PASS" => " class=\"pass\"",
                            "FAIL" => " class=\"fail\"",
                            _ => "",
                        };
                        let _ = write!(o, "<td{class}>{}</td>", esc(c));
                    }
                    o.push_str("</tr>\n");
                }
                o.push_str("</table>\n");
            }
            for c in &s.charts {
                let _ = write!(
                    o,
                    "<figure id=\"{}\">\n{}\n<figcaption>{} — <code>{}.svg</code>, data <code>{}.jsonl</code></figcaption>\n</figure>\n",
                    c.id,
                    svgs.next().expect("an SVG per chart"),
                    esc(&c.title),
                    c.id,
                    c.id
                );
            }
        }
        o.push_str("</body>\n</html>\n");
        o
    }

    /// Write the report into `dir` (given with option `opt`, named in errors): `index.html`,
    /// and per chart `ID.svg` and `ID.jsonl`. `dir` is created if missing; an existing one
    /// must be empty or an earlier report of ours (its `index.html` says so), and only our
    /// own files are written in it. Returns the files written.
    pub fn write(&self, dir: &Path, opt: &str) -> Result<Vec<std::path::PathBuf>, String> {
        check_dir(dir, opt)?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{opt} {}: cannot create it: {e}", dir.display()))?;
        let mut files = Vec::new();
        let mut put = |name: String, body: &str| -> Result<(), String> {
            let p = dir.join(name);
            std::fs::write(&p, body).map_err(|e| format!("{opt}: cannot write {}: {e}", p.display()))?;
            files.push(p);
            Ok(())
        };
        // Each chart drawn once, for its file and for the page.
        let svgs = self.charts().map(Chart::svg).collect::<Result<Vec<_>, _>>()?;
        for (c, svg) in self.charts().zip(&svgs) {
            put(format!("{}.svg", c.id), svg)?;
            put(format!("{}.jsonl", c.id), &c.jsonl())?;
        }
        put("index.html".into(), &self.html_with(&svgs))?;
        Ok(files)
    }
}

/// Refuse a report directory (given with option `opt`) that exists and is neither empty
/// nor ours.
pub fn check_dir(dir: &Path, opt: &str) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(format!("{opt} {}: exists and is not a directory", dir.display()));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| format!("{opt} {}: {e}", dir.display()))?;
    if entries.next().is_none() {
        return Ok(());
    }
    let index = dir.join("index.html");
    let ours = std::fs::read_to_string(&index).map(|s| s.contains(GENERATOR)).unwrap_or(false);
    if ours {
        Ok(())
    } else {
        Err(format!(
            "{opt} {}: the directory is not empty and holds no earlier iosched report (no index.html of ours); \
             give a new or empty directory",
            dir.display()
        ))
    }
}

/// Text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_not_ours_is_refused_and_left_alone() {
        let d = std::env::temp_dir().join(format!("iosched-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("notes.txt"), "mine").unwrap();
        let e = Page::default().write(&d, "--report").unwrap_err();
        assert!(e.contains("not empty"), "{e}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        std::fs::remove_file(d.join("notes.txt")).unwrap();
        Page::default().write(&d, "--report").unwrap();
        // Ours now: a second report may replace it.
        Page::default().write(&d, "--report").unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn text_is_escaped() {
        let p = Page { title: "<a & b>".into(), ..Default::default() };
        let h = p.html().unwrap();
        assert!(h.contains("&lt;a &amp; b&gt;"));
        assert!(!h.contains("<a & b>"));
    }
}
