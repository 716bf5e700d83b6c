//! A suite's results and their three renderings: the seed-shaped markdown
//! table, JSON with every sample, and an SVG chart of time against data size.

use std::fmt::Write as _;

use serde_json::{json, Value as Json};

use crate::seeds::{self, Series, Unit};
use crate::timing::{fmt, Sample};

/// Which figure of a timed row the tables print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stat {
    /// The mean of the runs (what the seeds report).
    Mean,
    /// The best run (the seed says "best of three").
    Min,
}

/// One measured figure.
#[derive(Clone, Debug)]
pub enum Cell {
    /// Times of the measured runs (per operation where the row says so).
    Time(Sample),
    /// A size in bytes.
    Bytes(u64),
    /// A rate (higher is better), one value per run.
    Rate { unit: &'static str, runs: Vec<f64> },
    /// The row cannot run yet: what is missing.
    Missing(String),
}

impl Cell {
    /// The figure a table prints, as a number in the cell's unit (seconds for
    /// times), and whether bigger is better.
    pub fn headline(&self, stat: Stat) -> Option<(f64, bool)> {
        match self {
            Cell::Time(s) if !s.runs.is_empty() => {
                let d = match stat {
                    Stat::Mean => s.mean(),
                    Stat::Min => s.min(),
                };
                Some((d.as_secs_f64(), false))
            }
            Cell::Bytes(b) => Some((*b as f64, false)),
            Cell::Rate { runs, .. } if !runs.is_empty() => Some((runs.iter().sum::<f64>() / runs.len() as f64, true)),
            _ => None,
        }
    }

    fn text(&self, stat: Stat) -> String {
        match self {
            Cell::Time(s) => match stat {
                Stat::Mean => fmt(s.mean()),
                Stat::Min => fmt(s.min()),
            },
            Cell::Bytes(b) => bytes(*b),
            Cell::Rate { unit, runs } => {
                format!("{:.0} {unit}", runs.iter().sum::<f64>() / runs.len().max(1) as f64)
            }
            Cell::Missing(what) => format!("n/a: {what}"),
        }
    }

    fn json(&self) -> Json {
        match self {
            Cell::Time(s) => json!({
                "kind": "time",
                "unit": "ns",
                "mean": s.mean().as_nanos() as u64,
                "median": s.median().as_nanos() as u64,
                "min": s.min().as_nanos() as u64,
                "max": s.max().as_nanos() as u64,
                "samples": s.runs.iter().map(|d| d.as_nanos() as u64).collect::<Vec<_>>(),
            }),
            Cell::Bytes(b) => json!({ "kind": "bytes", "bytes": b }),
            Cell::Rate { unit, runs } => json!({ "kind": "rate", "unit": unit, "samples": runs }),
            Cell::Missing(what) => json!({ "kind": "n/a", "missing": what }),
        }
    }
}

/// A size in bytes in the unit that reads best.
pub fn bytes(b: u64) -> String {
    let f = b as f64;
    if f < 1e4 {
        format!("{b} B")
    } else if f < 1e7 {
        format!("{:.1} KB", f / 1e3)
    } else if f < 1e10 {
        format!("{:.1} MB", f / 1e6)
    } else {
        format!("{:.2} GB", f / 1e9)
    }
}

/// One row of a table: canopy's figure, and the raw engine's beside it.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub canopy: Cell,
    /// The same work done directly on the backend's engine, when there is an equivalent.
    pub floor: Option<Cell>,
    pub stat: Stat,
}

impl Row {
    /// The rows `{prefix}: latency p50` and `… p99` of a sample of latencies.
    pub fn latencies(prefix: &str, s: &crate::timing::Sample) -> [Row; 2] {
        [50.0, 99.0].map(|p| {
            Row::new(
                format!("{prefix}: latency p{p}"),
                Cell::Time(crate::timing::Sample { runs: vec![s.percentile(p)] }),
            )
        })
    }

    pub fn new(name: impl Into<String>, canopy: Cell) -> Row {
        Row { name: name.into(), canopy, floor: None, stat: Stat::Mean }
    }

    pub fn floor(mut self, floor: Cell) -> Row {
        self.floor = Some(floor);
        self
    }

    pub fn best_of(mut self) -> Row {
        self.stat = Stat::Min;
        self
    }
}

/// The rows of one backend at one data set size.
#[derive(Clone, Debug)]
pub struct Table {
    /// The `--backends` entry as written: the backend and its options
    /// (`lmdb`, `lmdb?sync=off`), which keep two runs of one backend apart.
    pub backend: String,
    pub size: u64,
    /// Sync and cache modes as the stores reported them, and anything else
    /// that holds for every row.
    pub modes: String,
    pub rows: Vec<Row>,
    /// Counts checked after the run (what was stored), printed under the table.
    pub checks: Vec<String>,
}

/// How the markdown tables are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One table per backend, `test name | time | comparison` (sysrepo's seed).
    PerBackend,
    /// One table per size, the backends side by side with a factor against the
    /// first (Elektra's `operation | dump | quickdump | factor`).
    SideBySide,
}

/// A suite's results.
#[derive(Clone, Debug)]
pub struct Report {
    pub suite: String,
    /// The stem of its files in `--out`: the suite's name, `-http` after it
    /// for the HTTP mode.
    pub file: String,
    /// What the seed calls it, for the heading.
    pub title: String,
    pub layout: Layout,
    /// Options of the run (repeat, sizes, backends, machine).
    pub params: Vec<(String, String)>,
    pub tables: Vec<Table>,
    pub notes: Vec<String>,
}

/// The human name of a backend's floor (`backend` may carry its options:
/// `lmdb?sync=off`).
pub fn floor_name(backend: &str) -> &'static str {
    match backend.split_once('?').map_or(backend, |(name, _)| name) {
        "lmdb" => "raw LMDB",
        "sqlite" => "raw SQLite",
        "snapshot" | "json" => "raw file write",
        "postgres" | "redis" | "etcd" | "mongodb" => "canopy's backend alone",
        _ => "raw engine",
    }
}

fn factor(first: Option<(f64, bool)>, this: Option<(f64, bool)>) -> String {
    match (first, this) {
        (Some((a, higher)), Some((b, _))) if a > 0.0 && b > 0.0 => {
            format!("{:.3} x", if higher { b / a } else { a / b })
        }
        _ => "—".into(),
    }
}

fn ratio(canopy: &Cell, floor: &Option<Cell>, stat: Stat) -> String {
    match (canopy.headline(stat), floor.as_ref().and_then(|f| f.headline(stat))) {
        (Some((c, higher)), Some((f, _))) if c > 0.0 && f > 0.0 => {
            format!("{:.2}", if higher { f / c } else { c / f })
        }
        _ => "—".into(),
    }
}

impl Report {
    fn sizes(&self) -> Vec<u64> {
        let mut s: Vec<u64> = self.tables.iter().map(|t| t.size).collect();
        s.dedup();
        s.sort_unstable();
        s.dedup();
        s
    }

    fn backends(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in &self.tables {
            if !out.contains(&t.backend) {
                out.push(t.backend.clone());
            }
        }
        out
    }

    fn table(&self, backend: &str, size: u64) -> Option<&Table> {
        self.tables.iter().find(|t| t.backend == backend && t.size == size)
    }

    /// The seed-shaped markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("## `{}`: {}\n\n", self.suite, self.title);
        for (k, v) in &self.params {
            let _ = writeln!(s, "- {k}: {v}");
        }
        s.push('\n');
        let backends = self.backends();
        let first = backends.first().cloned().unwrap_or_default();
        for size in self.sizes() {
            let _ = writeln!(s, "### data set size {size}\n");
            match self.layout {
                Layout::PerBackend => {
                    for b in &backends {
                        let Some(t) = self.table(b, size) else { continue };
                        let _ = writeln!(s, "- {b} ({})\n", t.modes);
                        let _ = writeln!(
                            s,
                            "| test name | time | comparison | {} | canopy / floor |\n|---|---|---|---|---|",
                            floor_name(b)
                        );
                        let base = self.table(&first, size);
                        for r in &t.rows {
                            let first_cell =
                                base.and_then(|bt| bt.rows.iter().find(|x| x.name == r.name)).map(|x| &x.canopy);
                            let _ = writeln!(
                                s,
                                "| {} | {} | {} | {} | {} |",
                                r.name,
                                r.canopy.text(r.stat),
                                factor(first_cell.and_then(|c| c.headline(r.stat)), r.canopy.headline(r.stat)),
                                r.floor.as_ref().map_or("—".into(), |f| f.text(r.stat)),
                                ratio(&r.canopy, &r.floor, r.stat),
                            );
                        }
                        for c in &t.checks {
                            let _ = writeln!(s, "\n{c}");
                        }
                        s.push('\n');
                    }
                }
                Layout::SideBySide => {
                    let present: Vec<&Table> = backends.iter().filter_map(|b| self.table(b, size)).collect();
                    let Some(base) = present.first() else { continue };
                    for t in &present {
                        let _ = writeln!(s, "- {}: {}", t.backend, t.modes);
                    }
                    s.push_str("\n| operation |");
                    for t in &present {
                        let _ = write!(s, " {} | {} |", t.backend, floor_name(&t.backend));
                    }
                    for t in present.iter().skip(1) {
                        let _ = write!(s, " {} vs {} |", t.backend, base.backend);
                    }
                    s.push_str("\n|---|");
                    for _ in 0..present.len() * 3 - 1 {
                        s.push_str("---|");
                    }
                    s.push('\n');
                    for r in &base.rows {
                        let _ = write!(s, "| {} |", r.name);
                        let cells: Vec<Option<&Row>> =
                            present.iter().map(|t| t.rows.iter().find(|x| x.name == r.name)).collect();
                        for c in &cells {
                            match c {
                                Some(row) => {
                                    let _ = write!(
                                        s,
                                        " {} | {} |",
                                        row.canopy.text(row.stat),
                                        row.floor.as_ref().map_or("—".into(), |f| f.text(row.stat))
                                    );
                                }
                                None => s.push_str(" — | — |"),
                            }
                        }
                        for c in cells.iter().skip(1) {
                            let f = factor(r.canopy.headline(r.stat), c.and_then(|row| row.canopy.headline(row.stat)));
                            let _ = write!(s, " {f} |");
                        }
                        s.push('\n');
                    }
                    for t in &present {
                        for c in &t.checks {
                            let _ = writeln!(s, "\n{}: {c}", t.backend);
                        }
                    }
                    s.push('\n');
                }
            }
        }
        if self.layout == Layout::PerBackend {
            s.push_str(
                "comparison: how many times faster than the first backend (bigger is faster); \
                 canopy / floor: canopy's time over the raw engine's doing the same puts and gets.\n",
            );
        } else {
            s.push_str(
                "`X vs Y`: how many times faster X is than Y (bigger is faster; for sizes, smaller); \
                 floors: the raw engine doing the same puts and gets without canopy.\n",
            );
        }
        for n in &self.notes {
            let _ = writeln!(s, "\n{n}");
        }
        s
    }

    /// Every sample, as JSON, and the seed's figures for the suite (`seed`,
    /// null when it has none).
    pub fn to_json(&self) -> Json {
        json!({
            "suite": self.suite,
            "title": self.title,
            "params": self.params.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
            "tables": self.tables.iter().map(|t| json!({
                "backend": t.backend,
                "size": t.size,
                "modes": t.modes,
                "checks": t.checks,
                "rows": t.rows.iter().map(|r| json!({
                    "name": r.name,
                    "stat": match r.stat { Stat::Mean => "mean", Stat::Min => "min" },
                    "canopy": r.canopy.json(),
                    "floor": r.floor.as_ref().map(Cell::json),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "notes": self.notes,
            "seed": seeds::for_suite(&self.suite).map(|sd| json!({
                "document": sd.document,
                "series": sd.series.iter().map(|x| json!({
                    "system": x.system,
                    "row": x.row,
                    "unit": x.unit.name(),
                    "points": x.points.iter().map(|&(size, v)| json!([size, v])).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })),
        })
    }

    /// Time against data size, one panel per timed row, both axes
    /// logarithmic: a solid line per backend and, where the suite's seed
    /// document has figures for the row, a dashed line per seed system, so the
    /// comparison the page is about is on the chart.
    pub fn to_svg(&self) -> String {
        let backends = self.backends();
        let mut names: Vec<String> = Vec::new();
        for t in &self.tables {
            for r in &t.rows {
                if matches!(r.canopy, Cell::Time(_)) && !names.contains(&r.name) {
                    names.push(r.name.clone());
                }
            }
        }
        let seed = seeds::for_suite(&self.suite);
        // The seed's time figures for the rows drawn, and the systems that have some.
        let seed_rows: Vec<&Series> = seed.map_or(Vec::new(), |sd| {
            sd.series.iter().filter(|x| x.unit == Unit::Seconds && names.iter().any(|n| n == x.row)).collect()
        });
        let systems: Vec<&str> = seed
            .map_or(Vec::new(), |sd| sd.systems())
            .into_iter()
            .filter(|sys| seed_rows.iter().any(|x| x.system == *sys))
            .collect();
        // The x axis covers the sizes run and the sizes the seed measured.
        let mut sizes = self.sizes();
        sizes.extend(seed_rows.iter().flat_map(|x| x.points.iter().map(|p| p.0)));
        sizes.sort_unstable();
        sizes.dedup();

        const COLS: usize = 3;
        const W: f64 = 380.0;
        const H: f64 = 250.0;
        const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];
        const SEED_COLORS: [&str; 5] = ["#7f7f7f", "#bcbd22", "#17becf", "#222222", "#e377c2"];
        let rows = names.len().div_ceil(COLS).max(1);
        let legend_h = if systems.is_empty() { 40.0 } else { 56.0 };
        let (tw, th) = (W * COLS as f64, H * rows as f64 + legend_h);
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{tw}\" height=\"{th}\" viewBox=\"0 0 {tw} {th}\" \
             font-family=\"sans-serif\" font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        );
        let dashed_by = match seed {
            Some(sd) if !systems.is_empty() => format!("; dashed: {}", sd.document),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "<text x=\"10\" y=\"16\" font-size=\"13\">canopy bench {}: time against data size (log-log){}</text>",
            esc(&self.suite),
            esc(&dashed_by)
        );
        // Each backend's label as its tables name it (with its options), as wide as it needs.
        let mut x = 10.0;
        for (i, b) in backends.iter().enumerate() {
            let c = COLORS[i % COLORS.len()];
            let _ = writeln!(
                s,
                "<line x1=\"{x}\" y1=\"30\" x2=\"{}\" y2=\"30\" stroke=\"{c}\" stroke-width=\"2\"/>\
                 <circle cx=\"{}\" cy=\"30\" r=\"2.5\" fill=\"{c}\"/><text x=\"{}\" y=\"34\">{}</text>",
                x + 20.0,
                x + 10.0,
                x + 24.0,
                esc(b)
            );
            // About 5.5 px a character at font size 10.
            x += (34.0 + 5.5 * b.chars().count() as f64).max(110.0);
        }
        let mut x = 10.0;
        for (i, sys) in systems.iter().enumerate() {
            let c = SEED_COLORS[i % SEED_COLORS.len()];
            let label = format!("seed: {sys}");
            let _ = writeln!(
                s,
                "<line x1=\"{x}\" y1=\"46\" x2=\"{}\" y2=\"46\" stroke=\"{c}\" stroke-width=\"1.5\" \
                 stroke-dasharray=\"5,3\"/><circle cx=\"{}\" cy=\"46\" r=\"2.5\" fill=\"white\" stroke=\"{c}\"/>\
                 <text x=\"{}\" y=\"50\">{}</text>",
                x + 20.0,
                x + 10.0,
                x + 24.0,
                esc(&label)
            );
            // About 5.5 px a character at font size 10.
            x += 40.0 + 5.5 * label.chars().count() as f64;
        }
        let (xmin, xmax) = match (sizes.first(), sizes.last()) {
            (Some(&a), Some(&b)) => ((a.max(1) as f64).log10(), (b.max(1) as f64).log10()),
            _ => (0.0, 1.0),
        };
        for (p, name) in names.iter().enumerate() {
            let ox = (p % COLS) as f64 * W;
            let oy = legend_h + (p / COLS) as f64 * H;
            let (px, py, pw, ph) = (ox + 55.0, oy + 22.0, W - 75.0, H - 62.0);
            let mut lines: Vec<Line> = Vec::new();
            for (si, sys) in systems.iter().enumerate() {
                let Some(series) = seed_rows.iter().find(|x| x.system == *sys && x.row == name) else { continue };
                lines.push(Line {
                    label: format!("seed: {sys}"),
                    color: SEED_COLORS[si % SEED_COLORS.len()],
                    seed: true,
                    points: series.points.iter().map(|&(size, v)| ((size.max(1) as f64).log10(), v.log10())).collect(),
                });
            }
            for (bi, b) in backends.iter().enumerate() {
                let mut pts = Vec::new();
                for &size in &sizes {
                    let Some(t) = self.table(b, size) else { continue };
                    let Some(r) = t.rows.iter().find(|r| &r.name == name) else { continue };
                    if let Some((v, _)) = r.canopy.headline(r.stat) {
                        if v > 0.0 {
                            pts.push(((size.max(1) as f64).log10(), v.log10()));
                        }
                    }
                }
                lines.push(Line { label: b.clone(), color: COLORS[bi % COLORS.len()], seed: false, points: pts });
            }
            let all: Vec<f64> = lines.iter().flat_map(|l| l.points.iter().map(|q| q.1)).collect();
            let _ = writeln!(s, "<g class=\"panel\"><title>{}</title>", esc(name));
            // A name longer than the panel is set smaller (about 0.55 em a character).
            let font = (11.0f64).min(((W - 20.0) / (0.55 * name.chars().count() as f64) * 10.0).floor() / 10.0);
            let _ =
                writeln!(s, "<text x=\"{}\" y=\"{}\" font-size=\"{font}\">{}</text>", ox + 10.0, oy + 14.0, esc(name));
            let _ = writeln!(
                s,
                "<rect x=\"{px}\" y=\"{py}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>"
            );
            if all.is_empty() {
                let _ = writeln!(s, "<text x=\"{}\" y=\"{}\">n/a</text>\n</g>", px + pw / 2.0 - 8.0, py + ph / 2.0);
                continue;
            }
            let ymin = all.iter().copied().fold(f64::INFINITY, f64::min).floor();
            let ymax = all.iter().copied().fold(f64::NEG_INFINITY, f64::max).ceil().max(ymin + 1.0);
            let (x0, x1) = if xmax > xmin { (xmin, xmax) } else { (xmin - 0.5, xmin + 0.5) };
            let sx = |x: f64| px + (x - x0) / (x1 - x0) * pw;
            let sy = |y: f64| py + ph - (y - ymin) / (ymax - ymin) * ph;
            let mut d = ymin;
            while d <= ymax + 1e-9 {
                let y = sy(d);
                let _ = writeln!(
                    s,
                    "<line x1=\"{px}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
                     <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                    px + pw,
                    px - 3.0,
                    y + 3.0,
                    decade_label(d as i32)
                );
                d += 1.0;
            }
            for &size in &sizes {
                let x = sx((size.max(1) as f64).log10());
                let _ = writeln!(
                    s,
                    "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    py + ph + 13.0,
                    size_label(size)
                );
            }
            // Seeds first, so canopy's lines lie on top.
            for l in lines.iter().filter(|l| !l.points.is_empty()) {
                let c = l.color;
                let (class, dash, fill) =
                    if l.seed { ("seed", " stroke-dasharray=\"5,3\"", "white") } else { ("backend", "", c) };
                let _ = writeln!(s, "<g class=\"{class}\"><title>{}</title>", esc(&l.label));
                let at: Vec<(f64, f64)> = l.points.iter().map(|&(x, y)| (sx(x), sy(y))).collect();
                if at.len() > 1 {
                    let path: Vec<String> = at.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                    let _ = writeln!(
                        s,
                        "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\"{dash}/>",
                        path.join(" ")
                    );
                } else if l.seed {
                    // One size only: a dashed tick across the marker.
                    let (x, y) = at[0];
                    let _ = writeln!(
                        s,
                        "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" \
                         stroke-width=\"1.5\"{dash}/>",
                        x - 14.0,
                        x + 14.0
                    );
                }
                for (x, y) in &at {
                    let _ =
                        writeln!(s, "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"{fill}\" stroke=\"{c}\"/>");
                }
                s.push_str("</g>\n");
            }
            s.push_str("</g>\n");
        }
        s.push_str("</svg>\n");
        s
    }
}

/// One line of a chart panel, in log10 of size and figure.
struct Line {
    label: String,
    color: &'static str,
    /// A seed system's published figures (dashed, hollow markers), not a backend's.
    seed: bool,
    points: Vec<(f64, f64)>,
}

/// 10^`d` seconds on the chart's y axis: 100 ns, 1 µs, 10 ms, 1 s, 1000 s.
fn decade_label(d: i32) -> String {
    let (unit, shift) = match d {
        0.. => ("s", 0),
        -3..=-1 => ("ms", 3),
        -6..=-4 => ("µs", 6),
        _ => ("ns", 9),
    };
    format!("{} {unit}", 10f64.powi(d + shift))
}

/// A data set size on the chart's x axis: 2, 200, 2k, 200k, 2M, 2506.
fn size_label(n: u64) -> String {
    if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}k", n / 1000)
    } else {
        n.to_string()
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
