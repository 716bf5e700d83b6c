//! The SVG charts: each panel draws canopy's backends as solid lines and the
//! seed systems' published figures for the same row as dashed ones, inside
//! the panel's axes; the document is well-formed and escaped. The JSON report
//! carries the same seed figures.

use std::time::Duration;

use canopy_bench::report::{Cell, Layout, Report, Row, Table};
use canopy_bench::seeds;
use canopy_bench::timing::Sample;

/// A report of `suite` built by hand: every backend at every size has every
/// row, timed at `secs`.
fn report(suite: &str, sizes: &[u64], rows: &[&str], secs: f64) -> Report {
    let mut tables = Vec::new();
    for backend in ["lmdb", "sqlite"] {
        for &size in sizes {
            let rows = rows
                .iter()
                .map(|name| Row::new(*name, Cell::Time(Sample { runs: vec![Duration::from_secs_f64(secs)] })))
                .collect();
            tables.push(Table { backend: backend.into(), size, modes: String::new(), rows, checks: Vec::new() });
        }
    }
    Report {
        suite: suite.into(),
        file: suite.into(),
        title: String::new(),
        layout: Layout::PerBackend,
        params: Vec::new(),
        tables,
        notes: Vec::new(),
    }
}

fn sysrepo_rows() -> Vec<&'static str> {
    canopy_bench::suites::sysrepo::ROWS.iter().map(|(n, _)| *n).collect()
}

/// The text of the panel drawn for `row` (up to the next panel).
fn panel<'a>(svg: &'a str, row: &str) -> &'a str {
    let start = format!("<g class=\"panel\"><title>{row}</title>");
    let at = svg.find(&start).unwrap_or_else(|| panic!("no panel for {row}"));
    let rest = &svg[at + start.len()..];
    let end = rest.find("<g class=\"panel\">").unwrap_or(rest.len());
    &rest[..end]
}

/// The lines of `class` ("seed" or "backend") in a panel: title and body.
fn lines<'a>(panel: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    let open = format!("<g class=\"{class}\"><title>");
    panel
        .split(open.as_str())
        .skip(1)
        .map(|g| {
            let (title, rest) = g.split_once("</title>").expect("a closed title");
            (title, &rest[..rest.find("</g>").expect("a closed group")])
        })
        .collect()
}

fn attr(tag: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let at = tag.find(&key).unwrap_or_else(|| panic!("no {name} in {tag}")) + key.len();
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

/// The tags named `name` in `text`, each up to its `>`.
fn tags<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    text.match_indices(open.as_str()).map(|(i, _)| &text[i..i + text[i..].find('>').unwrap()]).collect()
}

/// Every circle of a panel lies within its plot area.
fn check_inside(panel: &str, row: &str) {
    let rect = tags(panel, "rect")[0];
    let (x, y, w, h) = (attr(rect, "x"), attr(rect, "y"), attr(rect, "width"), attr(rect, "height"));
    for c in tags(panel, "circle") {
        let (cx, cy) = (attr(c, "cx"), attr(c, "cy"));
        assert!((x - 0.1..=x + w + 0.1).contains(&cx) && (y - 0.1..=y + h + 0.1).contains(&cy), "{row}: {c} outside");
    }
}

/// Opening and closing tags pair up; text holds no raw `<` or `&`.
fn check_well_formed(svg: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(!text.contains('>'), "raw > in text {text:?}");
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(["&amp;", "&lt;", "&gt;", "&quot;"].iter().any(|e| entity.starts_with(e)), "raw & in {text:?}");
        }
        let gt = rest[lt..].find('>').expect("a closed tag") + lt;
        let tag = &rest[lt + 1..gt];
        assert!(!tag.contains('<'), "< inside tag {tag:?}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(open.pop(), Some(name), "closing {name}");
        } else if !tag.ends_with('/') {
            open.push(tag.split_whitespace().next().unwrap());
        }
        rest = &rest[gt + 1..];
    }
    assert!(open.is_empty(), "unclosed {open:?}");
}

#[test]
fn sysrepo_chart_draws_each_seed_system_dashed_beside_the_backends() {
    let r = report("sysrepo", &[1000], &sysrepo_rows(), 0.0001);
    let svg = r.to_svg();
    check_well_formed(&svg);
    let seed = seeds::for_suite("sysrepo").unwrap();
    // The legend: solid backends, then each seed system dashed.
    let legend = &svg[..svg.find("<g class=\"panel\">").unwrap()];
    for label in ["lmdb", "sqlite", "seed: JSON DS file", "seed: MONGO DS", "seed: REDIS DS"] {
        assert!(legend.contains(&format!(">{label}</text>")), "{label} missing from the legend");
    }
    assert_eq!(tags(legend, "line").iter().filter(|l| l.contains("stroke-dasharray")).count(), 3);
    assert!(legend.contains(seed.document));
    for row in sysrepo_rows() {
        let p = panel(&svg, row);
        check_inside(p, row);
        let drawn = lines(p, "seed");
        let titles: Vec<&str> = drawn.iter().map(|(t, _)| *t).collect();
        assert_eq!(titles, ["seed: JSON DS file", "seed: MONGO DS", "seed: REDIS DS"], "{row}");
        for (title, body) in drawn {
            let figures = seed.row(row).find(|s| format!("seed: {}", s.system) == title).unwrap().points;
            assert_eq!(figures.len(), 3, "{row} {title}");
            let polyline = tags(body, "polyline");
            assert_eq!(polyline.len(), 1, "{row} {title}");
            assert!(polyline[0].contains("stroke-dasharray"), "{row} {title}: not dashed");
            let points = polyline[0].split("points=\"").nth(1).unwrap().split('"').next().unwrap();
            assert_eq!(points.split_whitespace().count(), figures.len(), "{row} {title}");
            let markers = tags(body, "circle");
            assert_eq!(markers.len(), figures.len(), "{row} {title}");
            assert!(markers.iter().all(|m| m.contains("fill=\"white\"")), "{row} {title}: markers not hollow");
        }
        // canopy's backends: solid, one point each (one size run).
        let backends = lines(p, "backend");
        assert_eq!(backends.iter().map(|(t, _)| *t).collect::<Vec<_>>(), ["lmdb", "sqlite"], "{row}");
        assert!(backends.iter().all(|(_, b)| !b.contains("stroke-dasharray") && tags(b, "circle").len() == 1));
    }
    // The x axis reaches the seed's largest size although canopy ran at 1,000.
    assert!(svg.contains(">100k</text>"));
}

/// Seed points far outside canopy's figures still lie inside the axes: the
/// y range covers both.
#[test]
fn the_y_axis_covers_the_seed_figures() {
    for secs in [1e-9, 1e3] {
        let svg = report("sysrepo", &[1000], &["many oper change_subs", "get tree hash cached"], secs).to_svg();
        for row in ["many oper change_subs", "get tree hash cached"] {
            let p = panel(&svg, row);
            assert_eq!(tags(p, "circle").len(), 3 * 3 + 2, "{row}");
            check_inside(p, row);
        }
    }
}

#[test]
fn a_seed_measured_at_one_size_gets_a_dashed_tick() {
    let row = "read item 123";
    let svg = report("objects", &[500_000], &[row, "peak RSS during create"], 0.00003).to_svg();
    check_well_formed(&svg);
    let p = panel(&svg, row);
    check_inside(p, row);
    let drawn = lines(p, "seed");
    let want = ["FileStorage2", "ShelfStorage", "PgsqlStorage", "SqliteStorage", "BerkeleyDBStorage"];
    assert_eq!(drawn.iter().map(|(t, _)| *t).collect::<Vec<_>>(), want.map(|s| format!("seed: {s}")));
    for (title, body) in drawn {
        let tick = tags(body, "line");
        assert_eq!(tick.len(), 1, "{title}");
        assert!(tick[0].contains("stroke-dasharray"), "{title}");
        assert_eq!(attr(tick[0], "y1"), attr(tick[0], "y2"), "{title}: not horizontal");
        assert!(attr(tick[0], "x2") - attr(tick[0], "x1") > 10.0, "{title}: too short to see");
        assert_eq!(tags(body, "circle").len(), 1, "{title}");
    }
}

/// Rows the seed has no figures for, and suites without a seed, draw
/// canopy's backends alone; a seed's size rows are not drawn on time panels.
#[test]
fn rows_without_seed_figures_draw_backends_only() {
    let svg = report("keyset", &[200], &["write keyset", "iterate keyset"], 0.001).to_svg();
    assert_eq!(lines(panel(&svg, "iterate keyset"), "seed").len(), 0);
    assert_eq!(lines(panel(&svg, "write keyset"), "seed").len(), 4);
    assert_eq!(lines(panel(&svg, "iterate keyset"), "backend").len(), 2);
    assert!(!svg.contains("bytes on disk"), "a size row drawn on the time chart");

    let svg = report("nosuch", &[10, 100], &["a <row> & \"more\""], 0.001).to_svg();
    check_well_formed(&svg);
    assert!(!svg.contains("seed"), "{svg}");
    assert!(svg.contains("a &lt;row&gt; &amp; &quot;more&quot;"));
    assert_eq!(svg, report("nosuch", &[10, 100], &["a <row> & \"more\""], 0.001).to_svg(), "deterministic");
}

#[test]
fn json_carries_the_seed_figures() {
    let json = report("sysrepo", &[1000], &sysrepo_rows(), 0.001).to_json();
    let seed = &json["seed"];
    assert!(seed["document"].as_str().unwrap().starts_with("seed 000"));
    let series = seed["series"].as_array().unwrap();
    assert_eq!(series.len(), 66);
    let get_tree = series.iter().find(|s| s["system"] == "MONGO DS" && s["row"] == "get tree").unwrap();
    assert_eq!(get_tree["unit"], "s");
    assert_eq!(get_tree["points"][2], serde_json::json!([100_000, 0.419329]));
    assert!(report("nosuch", &[1], &["x"], 0.001).to_json()["seed"].is_null());
}
