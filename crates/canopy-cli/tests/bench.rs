//! `canopy bench` end to end: the reports it prints and writes, its errors,
//! Ctrl-C; and what a build without the `bench` feature says.

use std::process::{Command, Output};

fn canopy(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_canopy")).args(args).current_dir(dir).env("TMPDIR", dir).output().unwrap()
}

/// The `canopy-bench-*` temporary directories left in `dir`.
#[cfg(feature = "bench")]
fn temporary_stores(dir: &std::path::Path) -> Vec<std::fs::DirEntry> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("canopy-bench-"))
        .collect()
}

#[cfg(feature = "bench")]
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
    let left = temporary_stores(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

/// A server backend without its server's variable: refused, naming the variable.
#[cfg(feature = "bench")]
#[test]
fn bench_names_the_variable_a_server_backend_needs() {
    let dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args(["bench", "keyset", "--backends", "postgres", "--size", "small"])
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .env_remove("CANOPY_POSTGRES_URL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("CANOPY_POSTGRES_URL"), "{stderr}");
}

#[cfg(feature = "bench")]
#[test]
fn bench_refuses_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (vec!["bench", "nosuch"], "unknown suite `nosuch`"),
        (vec!["bench", "keyset", "--backends", "nosuchdb"], "unknown backend `nosuchdb`"),
        (vec!["bench", "keyset", "--size", "big"], "--size: `big`"),
        (vec!["bench"], "which suite?"),
    ] {
        let run = canopy(&args, dir.path());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("canopy: ") && stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// `--backends` entries carry store options; what the store refuses is a user
/// error before anything runs, and each table is labelled with its entry.
#[cfg(feature = "bench")]
#[test]
fn bench_backends_carry_store_options() {
    let dir = tempfile::tempdir().unwrap();
    let run = canopy(&["bench", "keyset", "--size", "2", "--backends", "lmdb?syncc=off"], dir.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "canopy: --backends: `lmdb?syncc=off`: invalid store URL `lmdb:DIR?syncc=off`: unknown parameter `syncc` \
         (known: sync, mode)\n"
    );
    let args = ["bench", "keyset", "--size", "2", "--repeat", "1", "--quiet", "--format", "json"];
    let run = canopy(&[&args[..], &["--backends", "sqlite,sqlite?sync=off&cache=on"]].concat(), dir.path());
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let json: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let tables: Vec<(&str, &str)> = json["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["backend"].as_str().unwrap(), t["modes"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tables,
        [
            ("sqlite", "sync=commit (floors too), cache=off"),
            ("sqlite?sync=off&cache=on", "sync=off (floors too), cache=on")
        ]
    );
    assert!(temporary_stores(dir.path()).is_empty());
}

#[cfg(feature = "bench")]
#[test]
fn bench_help_describes_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let run = canopy(&["bench", "--help"], dir.path());
    let help = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    for option in ["--backends", "--size", "--repeat", "--format", "--out", "--quiet", "SUITE"] {
        assert!(help.contains(option), "{option} missing from {help}");
    }
    assert!(!help.contains("PROBE"), "the probe's arguments are hidden: {help}");
}

/// Ctrl-C stops the run at the next measured step: exit 130, one line saying
/// so, the temporary stores removed.
#[cfg(feature = "bench")]
#[test]
fn ctrl_c_stops_the_run_and_removes_the_temporary_stores() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_canopy"))
        .args(["bench", "sysrepo", "--size", "200", "--backends", "lmdb", "--repeat", "100000"])
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    // The first progress line: the run is measuring in its temporary stores.
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("[sysrepo] lmdb · size 200"), "{line}");
    assert!(!temporary_stores(dir.path()).is_empty(), "the run works in a temporary directory");
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.ends_with("canopy: interrupted; temporary stores removed\n"), "{rest}");
    let left = temporary_stores(dir.path());
    assert!(left.is_empty(), "{left:?}");
}

#[cfg(not(feature = "bench"))]
#[test]
fn bench_is_not_enabled_without_the_feature() {
    let dir = tempfile::tempdir().unwrap();
    for args in [vec!["bench"], vec!["bench", "sysrepo", "--size", "small"]] {
        let run = canopy(&args, dir.path());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr, "canopy: bench is not enabled in this build\n");
    }
}

/// The server backends run a suite, each beside its floor.
#[cfg(feature = "bench")]
#[test]
fn bench_runs_on_the_server_backends() {
    let servers = ["CANOPY_POSTGRES_URL", "CANOPY_REDIS_URL", "CANOPY_ETCD_URL"];
    if servers.iter().any(|v| canopy_store::conformance::server_url(v).is_none()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = canopy(&["bench", "keyset", "--backends", "postgres,redis,etcd", "--size", "small"], dir.path());
    let (stdout, stderr) = (String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    for name in ["postgres", "redis", "etcd"] {
        assert!(stdout.contains(&format!("{name}: checked: every read returned")), "{stdout}");
    }
    assert!(stdout.contains("canopy's backend alone"), "{stdout}");
}
