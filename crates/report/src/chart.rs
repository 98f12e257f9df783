//! A chart: what it shows (title, axes with units, named series of points) and its
//! drawing as SVG through plotters.
//!
//! Every series has its own colour, and each kind of mark is one kind of SVG element, so
//! that what a chart shows can be read back from its SVG (the tests do): a line is one
//! `<polyline>` through all its points, a dot one `<circle>`, a published value one
//! `<polygon>` (a triangle), an interval one two-point `<polyline>` beside its dot. The
//! legend's keys are `<rect>`s, so they count as none of these, except a published
//! series' key: its triangle, one `<polygon>` more.

use plotters::coord::Shift;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::prelude::*;
use serde::Serialize;
use serde_json::{Value, json};

/// One chart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Chart {
    /// The file stem of its `.svg` and `.jsonl` (letters, digits, `-`).
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Vertical reference lines (e.g. a job's start and end), drawn dashed-grey: (x, label).
    pub marks: Vec<(f64, String)>,
}

/// An axis: its label says the unit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Axis {
    pub label: String,
    pub log: bool,
    /// Named positions 0, 1, 2, … (a categorical axis) instead of numbers.
    pub categories: Vec<String>,
}

impl Axis {
    pub fn linear(label: &str) -> Axis {
        Axis { label: label.into(), log: false, categories: Vec::new() }
    }
    pub fn log(label: &str) -> Axis {
        Axis { label: label.into(), log: true, categories: Vec::new() }
    }
    pub fn categories(label: &str, names: Vec<String>) -> Axis {
        Axis { label: label.into(), log: false, categories: names }
    }
}

/// How a series is drawn.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mark {
    /// A line through the points.
    Line,
    /// A line, and a dot on each point.
    LineDots,
    /// A dot on each point.
    Dots,
    /// A published figure (the seed report's): a triangle on each point.
    Published,
    /// A dot on each point with its interval (`lo`..`hi` along x) as a bar.
    Interval,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub name: String,
    pub mark: Mark,
    pub points: Vec<Point>,
    /// Its colour's place in [`PALETTE`]; `None`: the series' own place in the chart. A
    /// published series takes the colour of the series it stands beside.
    pub color: Option<usize>,
}

impl Series {
    pub fn new(name: impl Into<String>, mark: Mark, points: Vec<Point>) -> Series {
        Series { name: name.into(), mark, points, color: None }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// An interval along x around `x` ([`Mark::Interval`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point { x, y, lo: None, hi: None }
    }
}

/// The series colours, in order (Okabe and Ito's colour-blind-safe palette less its black,
/// which the axes use, then three more); a chart with more series cycles through them.
pub const PALETTE: [(u8, u8, u8); 10] = [
    (0, 114, 178),
    (213, 94, 0),
    (0, 158, 115),
    (204, 121, 167),
    (230, 159, 0),
    (86, 180, 233),
    (120, 94, 60),
    (60, 60, 200),
    (100, 60, 140),
    (170, 30, 30),
];

/// Series `i`'s colour, as the SVG spells it (`#RRGGBB`).
pub fn color_hex(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02X}{g:02X}{b:02X}")
}

fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// The size a chart is drawn at, pixels (see [`Chart::size`]).
pub const SIZE: (u32, u32) = (760, 440);

impl Chart {
    /// The data behind the chart, as JSON lines: a first line naming the chart and its
    /// axes, then one line per series with its mark, colour and points.
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        let head = json!({
            "chart": self.id, "title": self.title, "x": self.x, "y": self.y,
            "marks": self.marks.iter().map(|(x, l)| json!({"x": x, "label": l})).collect::<Vec<_>>(),
        });
        out.push_str(&head.to_string());
        out.push('\n');
        for (i, s) in self.series.iter().enumerate() {
            let c = color_hex(s.color.unwrap_or(i));
            let v: Value = json!({"series": s.name, "mark": s.mark, "color": c, "points": s.points});
            out.push_str(&v.to_string());
            out.push('\n');
        }
        out
    }

    /// Its size in pixels: [`SIZE`], taller when many categories run down the side.
    pub fn size(&self) -> (u32, u32) {
        let n = self.y.categories.len() as u32;
        (SIZE.0, SIZE.1.max(110 + 20 * n))
    }

    /// The chart as an SVG document.
    pub fn svg(&self) -> Result<String, String> {
        let mut s = String::new();
        {
            let root = SVGBackend::with_string(&mut s, self.size()).into_drawing_area();
            self.draw(&root).map_err(|e| format!("chart `{}`: {e}", self.id))?;
            root.present().map_err(|e| format!("chart `{}`: {e}", self.id))?;
        }
        Ok(s)
    }

    fn draw(&self, root: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        let (x0, x1) = range(self.x_values(), &self.x);
        let (y0, y1) = range(self.y_values(), &self.y);
        let mut b = ChartBuilder::on(root);
        b.caption(&self.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(if self.y.categories.is_empty() { 64 } else { 190 });
        // Four coordinate kinds (linear or log on each axis), drawn by one generic body.
        match (self.x.log, self.y.log) {
            (false, false) => self.body(b.build_cartesian_2d(x0..x1, y0..y1).map_err(err)?),
            (true, false) => self.body(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1).map_err(err)?),
            (false, true) => self.body(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale()).map_err(err)?),
            (true, true) => self.body(b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale()).map_err(err)?),
        }
    }

    fn body<'a, X, Y>(&self, mut c: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>) -> Result<(), String>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let xcat = self.x.categories.clone();
        let ycat = self.y.categories.clone();
        let fx = move |v: &f64| category_or_number(&xcat, *v);
        let fy = move |v: &f64| category_or_number(&ycat, *v);
        let mut mesh = c.configure_mesh();
        mesh.x_desc(self.x.label.as_str()).y_desc(self.y.label.as_str()).x_label_formatter(&fx).y_label_formatter(&fy);
        if !self.x.categories.is_empty() {
            mesh.x_labels(self.x.categories.len()).disable_x_mesh();
        }
        if !self.y.categories.is_empty() {
            mesh.y_labels(self.y.categories.len()).disable_y_mesh();
        }
        mesh.draw().map_err(err)?;
        let (ylo, yhi) = {
            let r = c.y_range();
            (r.start, r.end)
        };
        for (x, label) in &self.marks {
            let grey = RGBColor(120, 120, 120);
            c.draw_series(std::iter::once(PathElement::new(vec![(*x, ylo), (*x, yhi)], grey.stroke_width(1))))
                .map_err(err)?;
            c.draw_series(std::iter::once(Text::new(label.clone(), (*x, yhi), ("sans-serif", 12).into_font())))
                .map_err(err)?;
        }
        for (i, s) in self.series.iter().enumerate() {
            let col = color(s.color.unwrap_or(i));
            let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (p.x, p.y)).collect();
            let dot = if pts.len() > 400 { 1 } else { 3 };
            let anno = match s.mark {
                Mark::Line => {
                    c.draw_series(std::iter::once(PathElement::new(pts, col.stroke_width(2)))).map_err(err)?
                }
                Mark::LineDots => {
                    c.draw_series(std::iter::once(PathElement::new(pts.clone(), col.stroke_width(2)))).map_err(err)?;
                    c.draw_series(pts.into_iter().map(|p| Circle::new(p, dot, col.filled()))).map_err(err)?
                }
                Mark::Dots => c.draw_series(pts.into_iter().map(|p| Circle::new(p, dot, col.filled()))).map_err(err)?,
                Mark::Published => c
                    .draw_series(pts.into_iter().map(|p| TriangleMarker::new(p, 6, col.stroke_width(2))))
                    .map_err(err)?,
                Mark::Interval => {
                    c.draw_series(s.points.iter().map(|p| {
                        PathElement::new(
                            vec![(p.lo.unwrap_or(p.x), p.y), (p.hi.unwrap_or(p.x), p.y)],
                            col.stroke_width(2),
                        )
                    }))
                    .map_err(err)?;
                    c.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, col.filled()))).map_err(err)?
                }
            };
            // A published series' key is its triangle (one more `<polygon>` than points);
            // every other key a `<rect>`.
            if s.mark == Mark::Published {
                anno.label(s.name.as_str()).legend(move |(x, y)| TriangleMarker::new((x + 7, y), 6, col.filled()));
            } else {
                anno.label(s.name.as_str())
                    .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 14, y + 4)], col.filled()));
            }
        }
        if self.series.iter().any(|s| !s.name.is_empty()) {
            c.configure_series_labels()
                .position(self.legend_corner())
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(err)?;
        }
        Ok(())
    }

    /// The corner of the plot where the legend hides the fewest points.
    fn legend_corner(&self) -> SeriesLabelPosition {
        let (x0, x1) = range(self.x_values(), &self.x);
        let (y0, y1) = range(self.y_values(), &self.y);
        let norm = |v: f64, lo: f64, hi: f64, log: bool| {
            if log { (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) } else { (v - lo) / (hi - lo) }
        };
        let mut count = [0usize; 4]; // upper right, upper left, lower right, lower left
        for p in self.series.iter().flat_map(|s| &s.points) {
            let (x, y) = (norm(p.x, x0, x1, self.x.log), norm(p.y, y0, y1, self.y.log));
            let (right, left, up, down) = (x > 0.6, x < 0.4, y > 0.65, y < 0.35);
            for (i, hit) in [right && up, left && up, right && down, left && down].into_iter().enumerate() {
                count[i] += hit as usize;
            }
        }
        let best = (0..4).min_by_key(|&i| count[i]).unwrap_or(0);
        [
            SeriesLabelPosition::UpperRight,
            SeriesLabelPosition::UpperLeft,
            SeriesLabelPosition::LowerRight,
            SeriesLabelPosition::LowerLeft,
        ][best]
            .clone()
    }

    fn x_values(&self) -> Vec<f64> {
        let mut v: Vec<f64> = Vec::new();
        for s in &self.series {
            for p in &s.points {
                v.push(p.x);
                v.extend(p.lo);
                v.extend(p.hi);
            }
        }
        v.extend(self.marks.iter().map(|m| m.0));
        v
    }

    fn y_values(&self) -> Vec<f64> {
        self.series.iter().flat_map(|s| s.points.iter().map(|p| p.y)).collect()
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// An axis's range over `values`, with room around them: a categorical axis spans its
/// positions ±½, a log axis positive values only (a zero or negative value has no place on
/// it: the chart builders leave such points out).
fn range(values: Vec<f64>, axis: &Axis) -> (f64, f64) {
    if !axis.categories.is_empty() {
        return (-0.5, axis.categories.len() as f64 - 0.5);
    }
    let vals: Vec<f64> = values.into_iter().filter(|v| v.is_finite() && (!axis.log || *v > 0.0)).collect();
    let lo = vals.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if axis.log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if axis.log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = if hi > lo { (hi - lo) * 0.06 } else { hi.abs().max(1.0) * 0.1 };
        let lo = if lo >= 0.0 && lo - pad < 0.0 { 0.0 } else { lo - pad };
        (lo, hi + pad)
    }
}

fn category_or_number(cats: &[String], v: f64) -> String {
    if cats.is_empty() {
        return number(v);
    }
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < cats.len() { cats[i as usize].clone() } else { String::new() }
}

/// A tick label: few digits, no exponent for everyday magnitudes.
fn number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 100.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(mark: Mark) -> Chart {
        Chart {
            id: "t".into(),
            title: "T".into(),
            x: Axis::linear("x (s)"),
            y: Axis::log("y (MB/s)"),
            series: vec![
                Series::new("a", mark, vec![Point::new(1.0, 2.0), Point::new(2.0, 3.0)]),
                Series::new("b", Mark::Published, vec![Point::new(1.0, 5.0)]),
            ],
            marks: vec![],
        }
    }

    #[test]
    fn each_mark_is_its_own_element_in_its_colour() {
        let svg = chart(Mark::LineDots).svg().unwrap();
        let c0 = color_hex(0);
        let c1 = color_hex(1);
        assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
        assert!(svg.contains(&format!("fill=\"{c0}\"")));
        assert_eq!(svg.matches("<polygon").count(), 2, "the point and its legend key");
        assert!(svg.lines().any(|l| l.starts_with("<polygon") && l.contains(&format!("fill=\"{c1}\""))));
    }

    #[test]
    fn the_same_chart_draws_the_same_bytes() {
        assert_eq!(chart(Mark::Dots).svg().unwrap(), chart(Mark::Dots).svg().unwrap());
    }

    #[test]
    fn ranges_leave_room_and_keep_log_axes_positive() {
        let (lo, hi) = range(vec![0.0, 10.0], &Axis::log("l"));
        assert!(lo > 0.0 && lo < 10.0 && hi > 10.0);
        let (lo, hi) = range(vec![0.0, 10.0], &Axis::linear("l"));
        assert_eq!(lo, 0.0);
        assert!(hi > 10.0);
    }
}
