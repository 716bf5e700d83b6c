//! `canopy bench` end to end: the reports it prints and writes, its errors.

use std::process::{Command, Output};

fn canopy(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canopy")).args(args).current_dir(dir).env("TMPDIR", dir).output().unwrap()
}

#[test]
fn bench_writes_md_json_and_svg_and_removes_its_stores() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reports");
    let run = canopy(
        &[
            "bench",
            "objects",
            "--size",
            "50",
            "--backends",
            "sqlite,lmdb",
            "--repeat",
            "1",
            "--format",
            "json",
            "--out",
        ]
        .iter()
        .copied()
        .chain([out.to_str().unwrap()])
        .collect::<Vec<_>>(),
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("[objects] sqlite · size 50"), "progress on stderr: {stderr}");
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(json["suite"], "objects");
    let tables = json["tables"].as_array().unwrap();
    assert_eq!(tables.iter().map(|t| t["backend"].as_str().unwrap()).collect::<Vec<_>>(), ["sqlite", "lmdb"]);
    // The fresh-process start-up probe ran through this binary.
    let startup = tables[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"].as_str().unwrap().starts_with("start-up to first read before compaction"));
    assert_eq!(startup.unwrap()["canopy"]["kind"], "time");
    for ext in ["md", "json", "svg"] {
        let text = std::fs::read_to_string(out.join(format!("objects.{ext}"))).unwrap();
        assert!(!text.is_empty());
    }
    let md = std::fs::read_to_string(out.join("objects.md")).unwrap();
    assert!(md.contains("| operation | sqlite | raw SQLite | lmdb | raw LMDB | lmdb vs sqlite |"), "{md}");
    // The temporary stores are gone.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("canopy-bench-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn bench_refuses_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["bench", "nosuch"], "unknown suite `nosuch`"),
        (vec!["bench", "keyset", "--backends", "postgres"], "`postgres`"),
        (vec!["bench", "keyset", "--size", "big"], "--size: `big`"),
        (vec!["bench"], "which suite?"),
    ] {
        let run = canopy(&args, dir.path());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("canopy: ") && stderr.contains(needle), "{args:?}: {stderr}");
    }
}
