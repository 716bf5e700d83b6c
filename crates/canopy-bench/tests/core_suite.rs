//! The core suite runs at a tiny size and reports sane figures (no timing
//! assertions: only that every row is there, positive, and the floor ran).

#[test]
fn core_suite_runs_and_reports_every_row() {
    for backend in ["lmdb", "sqlite", "snapshot", "json"] {
        check(backend);
    }
}

fn check(backend: &str) {
    let (rows, figures) = canopy_bench::core_suite::run(backend, 300, 1).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    for want in [
        "import 300 entries",
        "open store to first read",
        "get one list entry (uncached)",
        "get one list entry (cached)",
        "get the whole tree as JSON (uncached)",
        "get the whole tree as JSON (cached)",
        "set one leaf (sync=off)",
        "set one leaf (sync=commit)",
        "delete all 300 entries",
    ] {
        assert!(names.iter().any(|n| n.starts_with(want)), "row `{want}` missing from {names:?}");
    }
    for r in &rows {
        assert!(!r.canopy.runs.is_empty() && r.canopy.mean().as_nanos() > 0, "{}", r.name);
        if let Some(raw) = &r.raw {
            assert!(raw.mean().as_nanos() > 0, "{}", r.name);
        }
    }
    assert!(figures.store_bytes > 0 && figures.raw_bytes > 0);
    let md = canopy_bench::core_suite::render_md(backend, 300, 1, &rows, &figures);
    assert_eq!(md.matches("\n| ").count(), rows.len() + 1, "{md}");
}
