//! Damaged and foreign files are refused with a clear error, never a crash;
//! two handles on one file (as two processes would) serialize their batches.

use std::fs;
use std::path::Path;

use canopy_sqlite::SqliteBackend;
use canopy_store::{Backend, Batch, ErrorKind, SyncMode};

fn make_store(file: &Path, n: u32) {
    let b = SqliteBackend::open(file, SyncMode::Commit).unwrap();
    let mut batch = Batch::default();
    for i in 0..n {
        batch.put(format!("\x10key{i:06}").into_bytes(), vec![b'v'; 200]);
    }
    b.apply(&batch).unwrap();
    // Closing the last connection checkpoints the log into the file and removes it.
}

fn open_err(file: &Path) -> canopy_store::StoreError {
    match SqliteBackend::open(file, SyncMode::Commit) {
        Ok(_) => panic!("opened a damaged store"),
        Err(e) => e,
    }
}

#[test]
fn garbage_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store.db");
    fs::write(&f, vec![0xA5u8; 64 * 1024]).unwrap();
    let e = open_err(&f);
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a SQLite database"), "{e}");
}

#[test]
fn text_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store.db");
    fs::write(&f, b"{\"not\": \"sqlite\"}\n").unwrap();
    let e = open_err(&f);
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a SQLite database"), "{e}");
}

#[test]
fn truncated_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store.db");
    make_store(&f, 5000);
    assert!(!dir.path().join("store.db-wal").exists(), "the log was checkpointed on close");
    let len = fs::metadata(&f).unwrap().len();
    fs::OpenOptions::new().write(true).open(&f).unwrap().set_len(len / 2).unwrap();
    let e = open_err(&f);
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn damaged_pages_are_reported_not_crashed_on() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store.db");
    make_store(&f, 5000);
    let mut bytes = fs::read(&f).unwrap();
    let page = 4096;
    for b in &mut bytes[3 * page..6 * page] {
        *b = 0x5A;
    }
    fs::write(&f, bytes).unwrap();
    let b = match SqliteBackend::open(&f, SyncMode::Commit) {
        Err(e) => return assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}"),
        Ok(b) => b,
    };
    let problems = b.check().unwrap();
    assert!(!problems.is_empty(), "integrity_check finds the damage");
    let mut n = 0;
    let scanned = b.snapshot().and_then(|s| {
        s.scan(b"\x10", None, false, &mut |_, _| {
            n += 1;
            Ok(true)
        })
    });
    match scanned {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}"),
        Ok(()) => assert_ne!(n, 5000, "a scan cannot see every key of damaged pages"),
    }
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("is a directory"), "{e}");
}

#[test]
fn sqlite_file_of_another_program_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("other.db");
    {
        let c = rusqlite::Connection::open(&f).unwrap();
        c.execute_batch("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'a');")
            .unwrap();
    }
    let before = fs::read(&f).unwrap();
    let e = open_err(&f);
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a canopy store") && e.to_string().contains("users"), "{e}");
    assert_eq!(fs::read(&f).unwrap(), before, "the other program's file is unchanged");
}

#[test]
fn a_kv_table_of_another_shape_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("other.db");
    rusqlite::Connection::open(&f).unwrap().execute_batch("CREATE TABLE kv(key TEXT, value TEXT)").unwrap();
    let e = open_err(&f);
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("columns key, value"), "{e}");
}

#[test]
fn two_handles_on_one_file_serialize_batches() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store.db");
    let a = SqliteBackend::open(&f, SyncMode::Commit).unwrap();
    let b = SqliteBackend::open(&f, SyncMode::Off).unwrap();
    let mut batch = Batch { expect_revision: Some(0), ops: Vec::new() };
    batch.put(b"\x10x".to_vec(), b"a".to_vec());
    assert_eq!(a.apply(&batch).unwrap(), 1);
    let e = b.apply(&batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let s = b.snapshot().unwrap();
    assert_eq!((s.revision(), s.get(b"\x10x").unwrap()), (1, Some(b"a".to_vec())));
}

#[test]
fn sync_modes_and_disk_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = canopy_store::StoreUrl::parse(&format!("sqlite:{}?sync=off", dir.path().join("s.db").display())).unwrap();
    let b = SqliteBackend::open_url(&url).unwrap();
    assert_eq!(b.sync_mode(), SyncMode::Off);
    let mut batch = Batch::default();
    batch.put(b"\x10big".to_vec(), vec![1; 1 << 20]);
    b.apply(&batch).unwrap();
    assert!(b.disk_size().unwrap() > 1 << 20);
    b.flush().unwrap();
    let bad = canopy_store::StoreUrl::parse("sqlite:x.db?mode=fast").unwrap();
    assert_eq!(SqliteBackend::open_url(&bad).err().unwrap().kind(), ErrorKind::InvalidUrl);
}
