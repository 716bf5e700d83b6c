//! What a new user meets around the data: several processes on one store,
//! a full disk, file permissions, long refusals, progress on a terminal.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn canopy(store: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_canopy"));
    cmd.arg("--store").arg(store).args(args).env_remove("CANOPY_STORE").env_remove("CANOPY_CHECK_CHILD");
    cmd.stdin(Stdio::null());
    cmd
}

fn run(store: &str, args: &[&str]) -> Output {
    let out = canopy(store, args).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Four processes running `canopy set` at once on a whole-file store all
/// commit: a second process waits for the lock and then works on the
/// current file (sysrepo's JSON files serve several processes too). Every
/// acknowledged commit has a revision of its own, and the store ends at the
/// last of them.
#[test]
fn four_processes_share_a_whole_file_store() {
    const PROCESSES: usize = 4;
    const SETS: usize = 25;
    for scheme in ["json", "snapshot"] {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("{scheme}:{}", dir.path().join("store").display());
        let workers: Vec<_> = (0..PROCESSES)
            .map(|p| {
                let url = url.clone();
                std::thread::spawn(move || {
                    let (mut failed, mut revisions) = (Vec::new(), Vec::new());
                    for i in 0..SETS {
                        let out = run(&url, &["set", &format!("/m:c/p{p}/v{i}"), &i.to_string()]);
                        let err = text(&out.stderr);
                        match err.strip_prefix("committed revision ").and_then(|r| r.split(':').next()) {
                            Some(r) if out.status.success() => revisions.push(r.parse::<u64>().unwrap()),
                            _ => failed.push(err),
                        }
                    }
                    (failed, revisions)
                })
            })
            .collect();
        let (mut failed, mut revisions) = (Vec::new(), Vec::new());
        for w in workers {
            let (f, r) = w.join().unwrap();
            failed.extend(f);
            revisions.extend(r);
        }
        assert!(failed.is_empty(), "{scheme}: {} of {} commits failed: {:?}", failed.len(), PROCESSES * SETS, failed);
        revisions.sort_unstable();
        revisions.dedup();
        assert_eq!(revisions.len(), PROCESSES * SETS, "{scheme}: two commits were given one revision");
        let out = run(&url, &["export", "--compact"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for p in 0..PROCESSES {
            let leaves = doc["m:c"][format!("p{p}")].as_object().map_or(0, |o| o.len());
            assert_eq!(leaves, SETS, "{scheme}: process {p}'s leaves in {doc}");
        }
        let out = run(&url, &["info"]);
        let last = revisions.last().unwrap();
        assert!(text(&out.stdout).contains(&format!("revision: {last}\n")), "{}", text(&out.stdout));
    }
}

/// A process holding a whole-file store's lock makes a commit wait for the
/// lock timeout and fail naming the lock; reads go on meanwhile.
#[test]
fn a_held_lock_times_out_with_a_clear_error_and_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.json");
    let url = format!("json:{}?lock_timeout=200ms", file.display());
    assert!(run(&url, &["set", "/m:c/v", "1"]).status.success());
    let lock = std::fs::OpenOptions::new().write(true).open(dir.path().join("store.json.lock")).unwrap();
    lock.lock().unwrap();
    let out = run(&url, &["get", "/m:c/v", "--compact"]);
    assert_eq!(text(&out.stdout).trim(), r#"{"m:c":{"v":1}}"#, "{}", text(&out.stderr));
    let out = run(&url, &["set", "/m:c/v", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("store.json.lock") && err.contains("lock_timeout=200 ms"), "{err}");
    lock.unlock().unwrap();
    assert!(run(&url, &["set", "/m:c/v", "2"]).status.success());
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// `canopy ARGS` under umask 022, as most shells run it.
fn run_umask_022(store: &str, args: &[&str]) -> Output {
    let out = Command::new("sh")
        .arg("-c")
        .arg("umask 022; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_canopy"))
        .arg("--store")
        .arg(store)
        .args(args)
        .env_remove("CANOPY_STORE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{store} {args:?}: {}", text(&out.stderr));
    out
}

/// Every file a store creates is 0600 and every directory 0700 whatever the
/// umask (configuration often holds secrets), unless `?mode=` says otherwise;
/// compaction keeps the mode.
#[test]
fn store_files_are_private_unless_the_url_says_otherwise() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for (mode, file_mode, dir_mode) in [("", 0o600, 0o700), ("mode=0640", 0o640, 0o750)] {
        let q = |sep: &str| if mode.is_empty() { String::new() } else { format!("{sep}{mode}") };
        let base = d.join(if mode.is_empty() { "default" } else { "asked" });
        let lmdb = base.join("new/lmdb");
        let stores = [
            (format!("lmdb:{}{}", lmdb.display(), q("?")), vec![lmdb.join("data.mdb"), lmdb.join("lock.mdb")]),
            (
                format!("sqlite:{}{}", base.join("sq/x.db").display(), q("?sync=off&")),
                // SQLite gives its -wal and -shm files (removed at close) the database file's mode.
                vec![base.join("sq/x.db")],
            ),
            (
                format!("json:{}{}", base.join("js/x.json").display(), q("?")),
                vec![base.join("js/x.json"), base.join("js/x.json.lock")],
            ),
            (
                format!("snapshot:{}{}", base.join("sn/x.snap").display(), q("?")),
                vec![base.join("sn/x.snap"), base.join("sn/x.snap.lock")],
            ),
        ];
        for (url, files) in &stores {
            run_umask_022(url, &["set", "/m:c/secret", "s3cret"]);
            run_umask_022(url, &["compact"]);
            for f in files {
                assert!(f.exists(), "{url}: {} missing", f.display());
                assert_eq!(mode_of(f), file_mode, "{url}: {}", f.display());
            }
            let dir = files[0].parent().unwrap();
            assert_eq!(mode_of(dir), dir_mode, "{url}: {}", dir.display());
        }
        assert_eq!(mode_of(lmdb.parent().unwrap()), dir_mode, "directories created on the way");
    }
    let out = run(&format!("lmdb:{}?mode=0777", d.join("bad").display()), &["info"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("mode `0777`"), "{}", text(&out.stderr));
}

/// A small tmpfs mounted for a test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// `None` where this process may not mount (not root, no mount
    /// namespace): then the test says so, and fails under CI, which runs as root.
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(SmallDisk { dir });
        }
        assert!(std::env::var_os("CI").is_none(), "CI runs as root and must be able to mount a tmpfs");
        eprintln!("skipped: cannot mount a tmpfs here (not root?)");
        None
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// An import that fills the disk fails with "no space left on device" naming
/// the store, exit status 1 (an environment error, not an internal one), and
/// loses nothing that was committed before; every backend.
#[test]
fn a_full_disk_says_so_and_loses_nothing() {
    let doc: serde_json::Value = serde_json::json!({
        "m:c": (0..20_000).map(|i| (format!("v{i}"), serde_json::Value::String("x".repeat(100))))
            .collect::<serde_json::Map<_, _>>()
    });
    let src = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(src.path(), doc.to_string()).unwrap();
    for scheme in ["lmdb", "sqlite", "json", "snapshot"] {
        let Some(disk) = SmallDisk::mount("768k") else { return };
        let url = format!("{scheme}:{}", disk.dir.path().join("store").display());
        assert!(run(&url, &["set", "/m:c/kept", "1"]).status.success(), "{scheme}");
        let out = run(&url, &["import", src.path().to_str().unwrap()]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{scheme}: {err}");
        assert!(err.contains("no space left on device") && err.contains(&url[scheme.len() + 1..]), "{scheme}: {err}");
        assert_eq!(err.lines().count(), 1, "{scheme}: {err}");
        let out = run(&url, &["get", "/m:c", "--compact"]);
        assert_eq!(text(&out.stdout).trim(), r#"{"m:c":{"kept":1}}"#, "{scheme}: {}", text(&out.stderr));
    }
}

/// A refused import lists one problem per line (path, then reason), a
/// screenful at most, then how many more; exit status 1.
#[test]
fn a_refused_import_lists_its_problems_a_screenful_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("m.yang");
    std::fs::write(
        &module,
        "module m { namespace \"urn:m\"; prefix m;
           container c { list l { key k; leaf k { type string; } leaf v { type uint8; } } } }",
    )
    .unwrap();
    let store = dir.path().join("store").display().to_string();
    assert!(run(&store, &["schema", "add", module.to_str().unwrap()]).status.success());
    let entries: Vec<serde_json::Value> =
        (0..113).map(|i| serde_json::json!({"k": format!("e{i}"), "v": 300 + i})).collect();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, serde_json::json!({"m:c": {"l": entries}}).to_string()).unwrap();
    let out = run(&store, &["import", doc.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() <= 25, "{} lines: {err}", lines.len());
    assert!(lines[0].starts_with("canopy: ") && lines[0].contains("113 problems"), "{err}");
    assert!(lines[1].starts_with("  /m:c/l[k='e") && lines[1].contains("]/v: "), "{err}");
    assert!(lines.last().unwrap().contains("and 93 more"), "{err}");
    assert!(lines.iter().all(|l| l.len() < 300), "{err}");
}

/// Runs `canopy ARGS` on a pseudo-terminal (util-linux `script`) and returns
/// everything the terminal received.
fn on_terminal(store: &str, args: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let typescript = dir.path().join("typescript");
    let command = format!("{} --store {store} {args} >/dev/null", env!("CARGO_BIN_EXE_canopy"));
    let status = Command::new("script")
        .args(["-qec", &command])
        .arg(&typescript)
        .env_remove("CANOPY_STORE")
        .stdout(Stdio::null())
        .status()
        .expect("util-linux `script` runs commands on a pseudo-terminal");
    assert!(status.success(), "{command}");
    std::fs::read_to_string(&typescript).unwrap()
}

/// Import, export, copy, compact and check show their progress on a
/// terminal, and print nothing of it when stderr is not one.
#[test]
fn long_work_shows_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("doc.json");
    let entries: serde_json::Map<_, _> =
        (0..5000).map(|i| (format!("v{i}"), serde_json::Value::String("x".repeat(50)))).collect();
    std::fs::write(&doc, serde_json::json!({ "m:c": entries }).to_string()).unwrap();
    let store = dir.path().join("a").display().to_string();
    let copy = dir.path().join("b").display().to_string();

    // Not a terminal: the one line a write prints, nothing else.
    let out = run(&store, &["import", doc.to_str().unwrap()]);
    assert_eq!(text(&out.stderr), "committed revision 1: 1 change\n");
    for args in [&["export"][..], &["check"], &["compact"]] {
        let out = run(&store, args);
        assert!(out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(!err.contains("ing "), "{args:?} printed progress without a terminal: {err:?}");
    }

    let seen = on_terminal(&store, &format!("import {}", doc.display()));
    assert!(seen.contains("importing ") && seen.contains("KiB"), "{seen}");
    assert!(seen.contains("no changes (revision 1)"), "{seen}");
    assert!(on_terminal(&store, "export").contains("exporting"));
    assert!(on_terminal(&store, "check").contains("checking ["));
    assert!(on_terminal(&store, "compact").contains("compacting "));
    let seen = on_terminal(&store, &format!("copy --from {store} --to {copy}"));
    assert!(seen.contains("copying to ") && seen.contains("copied "), "{seen}");
}

/// A reader that goes away (`canopy get … | head`) is not an error, for a
/// whole list streamed from the store as for other reads.
#[test]
fn a_closed_pipe_ends_a_streamed_read_quietly() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s").display().to_string();
    let entries: Vec<serde_json::Value> =
        (0..5000).map(|i| serde_json::json!({"k": format!("k{i}"), "v": "x".repeat(40)})).collect();
    let doc = dir.path().join("doc.json");
    std::fs::write(&doc, serde_json::json!({"m:c": {"l": entries}}).to_string()).unwrap();
    assert!(run(&store, &["import", doc.to_str().unwrap(), "--list", "/m:c/l=k"]).status.success());
    for path in ["/m:c/l", "/m:c"] {
        let mut child = canopy(&store, &["get", path]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = [0u8; 16];
        child.stdout.as_mut().unwrap().read_exact(&mut first).unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{path}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{path}");
    }
}
