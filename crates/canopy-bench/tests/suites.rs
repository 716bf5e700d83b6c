//! Every suite runs at its smallest size on every embedded backend and reports
//! sane figures: every row present in the seed's order, times and sizes
//! positive, rows that cannot run yet saying what they miss. What was stored
//! is checked inside the suites (they fail on a wrong count); every row the
//! seed figures (`seeds.rs`) name is a row the suite produces. No timing
//! assertions.

use canopy_bench::report::{Cell, Report};
use canopy_bench::runner::{self, Options, SizeSpec};
use canopy_bench::seeds::Unit;

fn options(suite: &str) -> Options {
    let probe = vec![env!("CARGO_BIN_EXE_canopy-bench").into()];
    let args: Vec<String> =
        [suite, "--size", "small", "--repeat", "1", "--quiet"].iter().map(|s| s.to_string()).collect();
    runner::parse_args(&args, probe).unwrap()
}

fn run(suite: &str) -> Report {
    let o = options(suite);
    assert_eq!(o.backends, ["lmdb", "sqlite", "snapshot", "json"], "every embedded backend, lmdb first");
    assert_eq!(o.size, SizeSpec::Small);
    let report = runner::run_suite(o.suites[0], &o).unwrap();
    assert_eq!(report.tables.len(), 4, "one table per backend");
    check_sane(&report);
    check_seed_rows(&report);
    report
}

/// Every row the seed figures name is a row this suite produces, with a cell
/// of the same unit, so a renamed row cannot silently lose its seed line.
fn check_seed_rows(report: &Report) {
    let seed = canopy_bench::seeds::for_suite(&report.suite).expect("every suite has seed figures");
    for s in seed.series {
        let cells: Vec<&Cell> =
            report.tables.iter().flat_map(|t| t.rows.iter().filter(|r| r.name == s.row).map(|r| &r.canopy)).collect();
        assert!(
            !cells.is_empty(),
            "{}: the seed's {} figures name `{}`, a row the suite does not produce",
            report.suite,
            s.system,
            s.row
        );
        for c in cells {
            let same = matches!(
                (s.unit, c),
                (_, Cell::Missing(_)) | (Unit::Seconds, Cell::Time(_)) | (Unit::Bytes, Cell::Bytes(_))
            );
            assert!(
                same,
                "{} `{}`: the seed's figures are in {}, the row's cell is {c:?}",
                report.suite,
                s.row,
                s.unit.name()
            );
        }
    }
}

/// Every table has the first table's rows in the same order; figures are
/// positive; markdown, JSON and SVG render.
fn check_sane(report: &Report) {
    let names: Vec<&str> = report.tables[0].rows.iter().map(|r| r.name.as_str()).collect();
    for t in &report.tables {
        let these: Vec<&str> = t.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(these, names, "{} rows differ on {}", report.suite, t.backend);
        for r in &t.rows {
            for (what, cell) in std::iter::once(("canopy", &r.canopy)).chain(r.floor.as_ref().map(|f| ("floor", f))) {
                match cell {
                    Cell::Time(s) => {
                        assert!(!s.runs.is_empty(), "{} {}: {what} has no runs", t.backend, r.name);
                        assert!(s.runs.iter().all(|d| d.as_nanos() > 0), "{} {}: {what} zero", t.backend, r.name);
                    }
                    // A raw file store is empty (0 bytes) after erasing everything.
                    Cell::Bytes(b) => assert!(*b > 0 || what == "floor", "{} {}: {what} is 0 bytes", t.backend, r.name),
                    Cell::Rate { runs, .. } => {
                        assert!(!runs.is_empty() && runs.iter().all(|x| *x > 0.0), "{} {}", t.backend, r.name)
                    }
                    Cell::Missing(why) => assert!(!why.is_empty()),
                }
            }
        }
    }
    let md = report.to_markdown();
    for t in &report.tables {
        assert!(md.contains(&format!("- {}", t.backend)), "{md}");
    }
    let json = report.to_json();
    assert_eq!(json["tables"].as_array().unwrap().len(), report.tables.len());
    let svg = report.to_svg();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

fn missing(report: &Report) -> Vec<&str> {
    report.tables[0].rows.iter().filter(|r| matches!(r.canopy, Cell::Missing(_))).map(|r| r.name.as_str()).collect()
}

#[test]
fn sysrepo_has_the_seeds_22_rows_all_measured_with_validation() {
    let report = run("sysrepo");
    let names: Vec<&str> = report.tables[0].rows.iter().map(|r| r.name.as_str()).collect();
    let seed: Vec<&str> = canopy_bench::suites::sysrepo::ROWS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, seed);
    assert_eq!(names.len(), 22);
    for t in &report.tables {
        let none: Vec<&str> = Vec::new();
        assert_eq!(
            t.rows.iter().filter(|r| matches!(r.canopy, Cell::Missing(_))).map(|r| r.name.as_str()).collect::<Vec<_>>(),
            none,
            "{}: every row runs",
            t.backend
        );
    }
    assert!(missing(&report).is_empty());
    let md = report.to_markdown();
    assert!(md.contains("validation: on (YANG module perf)"), "{md}");
    assert!(!md.contains("n/a"), "{md}");
    // Every row that runs has its floor beside it.
    // Pushed operational state stays in memory: those rows have no engine
    // work to set beside them.
    let in_memory = ["many oper change_subs", "create an item oper"];
    for r in &report.tables[0].rows {
        assert_eq!(r.floor.is_some(), !in_memory.contains(&r.name.as_str()), "{}", r.name);
    }
    // JSON keeps every sample.
    let json = report.to_json();
    let first = &json["tables"][0]["rows"][0]["canopy"];
    assert_eq!(first["kind"], "time");
    assert_eq!(first["samples"].as_array().unwrap().len(), 1);
}

#[test]
fn keyset_runs_every_row() {
    let report = run("keyset");
    assert!(missing(&report).is_empty());
    let t = &report.tables[0];
    assert!(t.rows.iter().any(|r| r.name == "write keyset"));
    assert!(t.rows.iter().any(|r| r.name == "bytes on disk"));
    // The raw size as the seed computes it, for 200 keys of this generator.
    let (_, raw) = canopy_bench::suites::keyset::keyset(200);
    let row = t.rows.iter().find(|r| r.name.starts_with("raw size")).unwrap();
    assert!(matches!(row.canopy, Cell::Bytes(b) if b == raw));
}

#[test]
fn objects_runs_every_row_with_start_up_probes() {
    let report = run("objects");
    assert!(missing(&report).is_empty(), "{:?}", missing(&report));
    let names: Vec<&str> = report.tables[0].rows.iter().map(|r| r.name.as_str()).collect();
    for want in ["start-up to first read before compaction", "start-up to first read after compaction", "compact"] {
        assert!(names.iter().any(|n| n.starts_with(want)), "{want} missing from {names:?}");
    }
}

#[test]
fn cps_runs_every_row() {
    let report = run("cps");
    assert!(missing(&report).is_empty());
    assert!(report.tables[0].checks[0].contains(&format!("{} fragments", 8 * 86 + 1)), "{:?}", report.tables[0].checks);
}

#[test]
fn rpm_runs_every_row() {
    let report = run("rpm");
    assert!(missing(&report).is_empty());
    // 3 operations × 2 sync modes × 3 orders, each with its bytes on disk, and the dependency check.
    assert_eq!(report.tables[0].rows.len(), 3 * 2 * 3 * 2 + 1);
}

#[test]
fn cps_devices_have_86_fragments() {
    let d = canopy_bench::suites::cps::device(7);
    fn fragments(c: &canopy::Container) -> usize {
        1 + c
            .children
            .values()
            .map(|n| match n {
                canopy::Node::Container(c) => fragments(c),
                canopy::Node::List(l) => l.entries().map(fragments).sum(),
                _ => 0,
            })
            .sum::<usize>()
    }
    assert_eq!(fragments(&d), 86);
}

#[test]
fn rpm_headers_average_about_65_kb() {
    let pkgs = canopy_bench::suites::rpm::packages(2506);
    let mean = pkgs.iter().map(|p| p.header.len()).sum::<usize>() as f64 / pkgs.len() as f64;
    assert!((55_000.0..75_000.0).contains(&mean), "mean header {mean}");
}

#[test]
fn arguments_are_checked() {
    let parse = |a: &[&str]| runner::parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>(), Vec::new());
    assert!(parse(&["nosuch"]).unwrap_err().to_string().contains("unknown suite `nosuch`"));
    assert!(parse(&["keyset", "--backends", "nosuchdb"]).unwrap_err().to_string().contains("`nosuchdb`"));
    assert!(parse(&["keyset", "--size", "0"]).unwrap_err().to_string().contains("`0`"));
    assert!(parse(&["keyset", "--repeat", "x"]).unwrap_err().to_string().contains("--repeat"));
    assert!(parse(&["keyset", "--format", "xml"]).unwrap_err().to_string().contains("xml"));
    let o = parse(&["all", "--size", "2,200", "--backends", "sqlite,lmdb", "--format=json"]).unwrap();
    assert_eq!(o.suites.len(), 6);
    assert_eq!(o.size, SizeSpec::List(vec![2, 200]));
    assert_eq!(o.backends, ["sqlite", "lmdb"]);
}

#[test]
fn only_cps_has_an_http_mode() {
    let parse = |a: &[&str]| runner::parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>(), Vec::new());
    let o = parse(&["cps", "--mode", "http"]).unwrap();
    assert_eq!(o.mode, runner::Mode::Http);
    assert!(o.suites[0].http.is_some());
    assert_eq!(parse(&["cps"]).unwrap().mode, runner::Mode::InProcess);
    assert!(parse(&["keyset", "--mode", "http"]).unwrap_err().to_string().contains("no HTTP mode"));
    let all = parse(&["all", "--mode", "http"]).unwrap();
    assert_eq!(all.suites.iter().map(|s| s.name).collect::<Vec<_>>(), ["cps"]);
}

#[test]
fn cps_http_schema_covers_every_leaf_of_a_device() {
    let yang = canopy_bench::suites::cps_http::yang();
    let leaves = yang.matches("leaf ").count();
    // The distinct leaves of docs/benchmarks.md's table: device-id 1, info 19,
    // geoLocation 2, shelves 16, circuit-packs 19, ports 10, interface 9, lldp 3,
    // physical-links 5.
    assert_eq!(leaves, 84, "{yang}");
    for list in ["openroadm-device", "shelves", "circuit-packs", "ports", "interface", "physical-links"] {
        assert!(yang.contains(&format!("list {list} {{")), "{list} missing");
    }
    assert!(yang.contains("decimal64 { fraction-digits 6; }"));
}

#[test]
fn backends_take_store_options_checked_by_the_store() {
    let parse = |a: &[&str]| runner::parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>(), Vec::new());
    let o = parse(&["keyset", "--backends", "lmdb?sync=off,sqlite?sync=off&cache=on,json,lmdb"]).unwrap();
    assert_eq!(o.backends, ["lmdb?sync=off", "sqlite?sync=off&cache=on", "json", "lmdb"]);
    assert_eq!(o.backends[1].name, "sqlite");
    assert_eq!(o.backends[1].options.get("cache").map(String::as_str), Some("on"));
    assert_eq!(o.backends[0].sync(), canopy_store::SyncMode::Off);
    assert_eq!(o.backends[3].sync(), canopy_store::SyncMode::Commit);
    // Options the backend knows beyond sync and cache pass too.
    assert!(parse(&["keyset", "--backends", "json?lock_timeout=1s&mode=0640"]).is_ok());
    for (backends, needle) in [
        ("lmdb?syncc=off", "unknown parameter `syncc`"),
        ("lmdb?lock_timeout=1s", "unknown parameter `lock_timeout`"),
        ("memory?sync=off", "unknown parameter `sync`"),
        ("sqlite?sync=maybe", "sync must be `commit` or `off`"),
        ("json?cache=maybe", "cache must be `on`, `watch` or `off`"),
        ("lmdb?sync", "has no `=`"),
        ("lmdb?sync=off&sync=commit", "given twice"),
        ("lmdb?sync=off,lmdb?sync=off", "`lmdb?sync=off` is given twice"),
        ("nosuchdb?sync=off", "`nosuchdb`"),
    ] {
        let e = format!("{:#}", parse(&["keyset", "--backends", backends]).unwrap_err());
        assert!(e.starts_with("--backends: ") && e.contains(needle), "{backends}: {e}");
        assert!(!e.contains("/tmp"), "the temporary directory is not named: {e}");
    }
}

/// One backend twice with different options: two tables, each labelled with
/// its entry and stating the modes its store reported; the JSON report and the
/// chart's legend carry the labels.
#[test]
fn one_backend_twice_with_other_options_keeps_its_tables_apart() {
    let probe = vec![env!("CARGO_BIN_EXE_canopy-bench").into()];
    let args: Vec<String> =
        ["keyset", "--size", "small", "--repeat", "1", "--quiet", "--backends", "lmdb,lmdb?sync=off"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let o = runner::parse_args(&args, probe).unwrap();
    let report = runner::run_suite(o.suites[0], &o).unwrap();
    let tables: Vec<(&str, &str)> = report.tables.iter().map(|t| (t.backend.as_str(), t.modes.as_str())).collect();
    assert_eq!(
        tables,
        [("lmdb", "sync=commit (floors too), cache=off"), ("lmdb?sync=off", "sync=off (floors too), cache=off")]
    );
    check_sane(&report);
    let md = report.to_markdown();
    assert!(md.contains("- lmdb?sync=off: sync=off (floors too), cache=off"), "{md}");
    assert!(md.contains("| operation | lmdb | raw LMDB | lmdb?sync=off | raw LMDB | lmdb?sync=off vs lmdb |"), "{md}");
    let json = report.to_json();
    assert_eq!(json["tables"][1]["backend"], "lmdb?sync=off");
    assert_eq!(json["tables"][1]["modes"], "sync=off (floors too), cache=off");
    assert_eq!(json["params"]["backends"], "lmdb, lmdb?sync=off");
    let svg = report.to_svg();
    let legend = &svg[..svg.find("<g class=\"panel\">").unwrap()];
    assert!(legend.contains(">lmdb</text>") && legend.contains(">lmdb?sync=off</text>"), "{legend}");
    assert!(svg.contains("<title>lmdb?sync=off</title>"));
}

/// Rows about a mode keep it whatever the entry says: sysrepo's cached rows
/// run cached, and the table says which rows are.
#[test]
fn sysrepo_states_its_modes_from_the_stores() {
    let probe = vec![env!("CARGO_BIN_EXE_canopy-bench").into()];
    let args: Vec<String> =
        ["sysrepo", "--size", "20", "--repeat", "1", "--quiet", "--backends", "lmdb?sync=off,sqlite?cache=on"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let o = runner::parse_args(&args, probe).unwrap();
    let report = runner::run_suite(o.suites[0], &o).unwrap();
    let modes: Vec<&str> = report.tables.iter().map(|t| t.modes.as_str()).collect();
    assert!(
        modes[0].starts_with("sync=off (floors too); cache=off except the rows named cached (cache=on);"),
        "{}",
        modes[0]
    );
    assert!(modes[1].starts_with("sync=commit (floors too, except that of \"create all items oper\""), "{}", modes[1]);
    assert!(modes[1].contains("; cache=on on every row;"), "{}", modes[1]);
    let md = report.to_markdown();
    assert!(md.contains("- lmdb?sync=off (sync=off (floors too);"), "{md}");
    assert!(md.contains("| test name | time | comparison | raw SQLite | canopy / floor |"), "{md}");
}
