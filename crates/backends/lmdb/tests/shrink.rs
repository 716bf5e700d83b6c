//! The LMDB file gives space back on its own after deletes leave most of it
//! free, and never while another process has the store open (its commits
//! would go to the replaced file).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use canopy_lmdb::LmdbBackend;
use canopy_store::backend::{Backend, Batch, BatchOp};
use canopy_store::{ErrorKind, SyncMode};

const CHILD_DIR: &str = "CANOPY_LMDB_SHRINK_CHILD_DIR";

/// 1,500 values of 4 KiB under `d/`: about 6 MB of file.
fn fill(b: &dyn Backend) {
    let ops = (0..1500u32).map(|i| BatchOp::Put(format!("d/{i:05}").into_bytes(), vec![b'x'; 4096])).collect();
    b.apply(&Batch { expect_revision: None, ops }).unwrap();
}

fn erase(b: &dyn Backend) {
    b.apply(&Batch { expect_revision: None, ops: vec![BatchOp::DeletePrefix(b"d/".to_vec())] }).unwrap();
}

fn put(b: &dyn Backend, k: &str, v: &str) {
    b.apply(&Batch { expect_revision: None, ops: vec![BatchOp::Put(k.into(), v.into())] }).unwrap();
}

fn get(b: &dyn Backend, k: &str) -> Option<Vec<u8>> {
    b.snapshot().unwrap().get(k.as_bytes()).unwrap()
}

#[test]
fn erasing_most_of_the_store_gives_the_space_back() {
    for sync in [SyncMode::Commit, SyncMode::Off] {
        let dir = tempfile::tempdir().unwrap();
        let b = LmdbBackend::open(dir.path(), sync).unwrap();
        put(&b, "keep", "kept");
        fill(&b);
        let full = b.disk_size().unwrap();
        assert!(full > 6_000_000, "{full}");
        erase(&b);
        let after = b.disk_size().unwrap();
        assert!(after < 1_000_000, "{sync:?}: {after} bytes on disk after erasing {full}");
        assert_eq!(get(&b, "keep").as_deref(), Some(&b"kept"[..]));
        assert_eq!(get(&b, "d/00001"), None);
        // The store goes on working, and keeps what it is given.
        let rev = b.snapshot().unwrap().revision();
        put(&b, "later", "yes");
        assert_eq!(b.snapshot().unwrap().revision(), rev + 1);
        drop(b);
        let b = LmdbBackend::open(dir.path(), sync).unwrap();
        assert_eq!(get(&b, "later").as_deref(), Some(&b"yes"[..]));
        assert_eq!(get(&b, "keep").as_deref(), Some(&b"kept"[..]));
        assert!(b.check().unwrap().is_empty());
    }
}

#[test]
fn a_store_not_mostly_free_keeps_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    fill(&b);
    let full = b.disk_size().unwrap();
    // Half of the values go: the file stays as it is.
    let ops = (0..750u32).map(|i| BatchOp::Delete(format!("d/{i:05}").into_bytes())).collect();
    b.apply(&Batch { expect_revision: None, ops }).unwrap();
    assert!(b.disk_size().unwrap() >= full);
}

#[test]
fn a_snapshot_open_during_the_commit_defers_the_shrink_to_the_next_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    fill(&b);
    let full = b.disk_size().unwrap();
    let snap = b.snapshot().unwrap();
    erase(&b);
    // The open snapshot still reads what it saw.
    assert!(snap.get(b"d/00001").unwrap().is_some());
    assert!(b.disk_size().unwrap() >= full);
    drop(snap);
    assert_eq!(get(&b, "d/00001"), None);
    assert!(b.disk_size().unwrap() < 1_000_000);
}

/// The child process: opens the store of `CANOPY_LMDB_SHRINK_CHILD_DIR`,
/// says `open`, then on each line `put K V` commits it and says `done`; exits
/// at the end of its input.
#[test]
fn child() {
    let Ok(dir) = std::env::var(CHILD_DIR) else { return };
    let b = LmdbBackend::open(Path::new(&dir), SyncMode::Commit).unwrap();
    println!("open");
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.split(' ').collect();
        if let ["put", k, v] = words.as_slice() {
            put(&b, k, v);
            println!("done");
        }
    }
}

#[test]
fn no_compaction_while_another_process_has_the_store_open() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
    fill(&b);
    let full = b.disk_size().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut wait_for = |word: &str| {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "the child ended before saying {word}");
            if line.trim_end().ends_with(word) {
                return;
            }
        }
    };
    wait_for("open");
    // Mostly free now, but the other process has the store open.
    erase(&b);
    assert!(b.disk_size().unwrap() >= full);
    let e = b.compact().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable);
    assert!(e.to_string().contains("another process has the store open"), "{e}");
    // The other process's commit lands in the file both read.
    let mut input = child.stdin.take().unwrap();
    writeln!(input, "put theirs 1").unwrap();
    wait_for("done");
    assert_eq!(get(&b, "theirs").as_deref(), Some(&b"1"[..]));
    drop(input);
    assert!(child.wait().unwrap().success());
    // Alone again: the next commit compacts, and keeps their commit.
    put(&b, "mine", "2");
    assert!(b.disk_size().unwrap() < 1_000_000);
    assert_eq!(get(&b, "theirs").as_deref(), Some(&b"1"[..]));
    assert_eq!(get(&b, "mine").as_deref(), Some(&b"2"[..]));
    b.compact().unwrap();
}
