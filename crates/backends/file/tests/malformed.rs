//! Damaged and foreign files are refused with a clear error, never loaded half
//! and never a panic; a failed commit leaves the store as it was.

use std::fs;
use std::path::{Path, PathBuf};

use canopy_file::snapshot::{SnapshotFormat, MAGIC};
use canopy_file::FileBackend;
use canopy_store::{Backend, Batch, ErrorKind, StoreError, SyncMode};

fn open(file: &Path) -> Result<FileBackend, StoreError> {
    FileBackend::open(file, &SnapshotFormat, SyncMode::Off)
}

fn open_err(file: &Path) -> StoreError {
    match open(file) {
        Ok(_) => panic!("opened a damaged store {}", file.display()),
        Err(e) => e,
    }
}

/// A store of a few keys (several blocks with `big`), closed; returns its file.
fn make_store(dir: &Path, n: u32, value_len: usize) -> PathBuf {
    let file = dir.join("store.snap");
    let b = open(&file).unwrap();
    let mut batch = Batch::default();
    for i in 0..n {
        batch.put(format!("\x10/m:c\x00\x01lst\x00\x01\x20k{i:04}").into_bytes(), vec![b'v'; value_len]);
    }
    b.apply(&batch).unwrap();
    file
}

#[test]
fn every_truncation_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 4, 3);
    let whole = fs::read(&file).unwrap();
    for len in 0..whole.len() {
        fs::write(&file, &whole[..len]).unwrap();
        let e = open_err(&file);
        assert_eq!(e.kind(), ErrorKind::Corrupted, "length {len}: {e}");
        assert!(e.to_string().contains("store.snap"), "{e}");
    }
    fs::write(&file, &whole).unwrap();
    assert_eq!(open(&file).unwrap().snapshot().unwrap().revision(), 1);
}

#[test]
fn every_flipped_byte_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 4, 3);
    let whole = fs::read(&file).unwrap();
    for at in 0..whole.len() {
        for mask in [0x01u8, 0x80, 0xFF] {
            let mut bytes = whole.clone();
            bytes[at] ^= mask;
            fs::write(&file, &bytes).unwrap();
            let e = open_err(&file);
            assert!(matches!(e.kind(), ErrorKind::Corrupted | ErrorKind::Unsupported), "byte {at} ^ {mask:#x}: {e}");
        }
    }
}

#[test]
fn flipped_bytes_in_a_later_block_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 3000, 100);
    let whole = fs::read(&file).unwrap();
    for at in (whole.len() / 2..whole.len()).step_by(997) {
        let mut bytes = whole.clone();
        bytes[at] ^= 0x10;
        fs::write(&file, &bytes).unwrap();
        let e = open_err(&file);
        assert_eq!(e.kind(), ErrorKind::Corrupted, "byte {at}: {e}");
        assert!(e.to_string().contains("checksum") || e.to_string().contains("past"), "{e}");
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 4, 3);
    let mut bytes = fs::read(&file).unwrap();
    bytes.extend_from_slice(b"\0\0\0\0");
    fs::write(&file, &bytes).unwrap();
    let e = open_err(&file);
    assert!(e.to_string().contains("trailing bytes"), "{e}");
}

#[test]
fn newer_version_and_unknown_flags_are_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 4, 3);
    let whole = fs::read(&file).unwrap();
    let with = |at: usize, v: u32| {
        let mut b = whole.clone();
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
        let crc = crc32(&b[..40]);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        b
    };
    fs::write(&file, with(8, 2)).unwrap();
    let e = open_err(&file);
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("version 2 is newer"), "{e}");
    fs::write(&file, with(12, 1)).unwrap();
    let e = open_err(&file);
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("flags"), "{e}");
}

/// CRC-32 (IEEE), bit by bit: an independent check of the header checksum.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[test]
fn files_of_other_kinds_are_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let lmdb_dir = dir.path().join("lmdb");
    {
        let b = canopy_lmdb::LmdbBackend::open(&lmdb_dir, SyncMode::Off).unwrap();
        let mut batch = Batch::default();
        batch.put(b"\x10a".to_vec(), b"1".to_vec());
        b.apply(&batch).unwrap();
    }
    let lmdb = fs::read(lmdb_dir.join("data.mdb")).unwrap();
    let cases: [(&str, &[u8]); 5] = [
        ("text", b"hello, this is a text file\n"),
        ("json", b"{\"canopy:store\": {\"format\": 1}}\n"),
        ("lmdb", &lmdb),
        ("empty", b""),
        ("magic only", &MAGIC),
    ];
    for (what, bytes) in cases {
        let file = dir.path().join(format!("{what}.snap"));
        fs::write(&file, bytes).unwrap();
        let e = open_err(&file);
        assert_eq!(e.kind(), ErrorKind::Corrupted, "{what}: {e}");
        let msg = e.to_string();
        assert!(msg.contains("not a canopy snapshot") || msg.contains("truncated"), "{what}: {msg}");
        assert_eq!(fs::read(&file).unwrap(), bytes, "{what} is unchanged");
    }
}

/// Another process's commit holds `PATH.lock` while it writes: a commit here
/// waits for it up to the lock timeout and then says which lock it waited
/// for; reads never wait; once the lock is free the commit goes through.
#[test]
fn a_commit_waits_for_another_process_and_reads_do_not() {
    use canopy_file::Options;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.snap");
    let options = Options { sync: SyncMode::Off, lock_timeout: Duration::from_millis(300), ..Options::default() };
    let a = FileBackend::open_with(&file, &SnapshotFormat, options).unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x10x".to_vec(), b"1".to_vec());
    assert_eq!(a.apply(&batch).unwrap(), 1);
    // Another open file description holding the lock, as another process would.
    let other = fs::OpenOptions::new().write(true).open(dir.path().join("store.snap.lock")).unwrap();
    other.lock().unwrap();
    let start = Instant::now();
    assert_eq!(a.snapshot().unwrap().get(b"\x10x").unwrap(), Some(b"1".to_vec()));
    assert!(start.elapsed() < Duration::from_millis(300), "a read waited for the lock");
    let e = a.apply(&batch).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(300), "gave up after {:?}", start.elapsed());
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("store.snap.lock") && e.to_string().contains("lock_timeout=300 ms"), "{e}");
    assert_eq!(a.snapshot().unwrap().revision(), 1, "nothing was stored");
    // Released while a commit waits: the commit goes through.
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        other.unlock().unwrap();
        other
    });
    assert_eq!(a.apply(&batch).unwrap(), 2);
    let other = release.join().unwrap();
    assert!(other.try_lock().is_ok(), "the store holds its lock only while it commits");
    other.unlock().unwrap();
    // A second handle in this process shares the first one's state; another
    // sync mode is refused.
    let b = open(&file).unwrap();
    assert_eq!(b.snapshot().unwrap().revision(), 2);
    let e = FileBackend::open(&file, &SnapshotFormat, SyncMode::Commit).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
}

/// A file another process renamed in is read again before the next read and
/// before the next commit, which is refused when it was built on the older
/// revision.
#[test]
fn a_file_replaced_by_another_process_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.snap");
    let a = open(&file).unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x10x".to_vec(), b"1".to_vec());
    assert_eq!(a.apply(&batch).unwrap(), 1);
    // Another process's commit: revision 2 with another value, renamed in.
    let mut map = canopy_file::Map::new();
    map.insert(b"\x10x".to_vec(), b"2".to_vec());
    let tmp = dir.path().join("other.tmp");
    fs::write(&tmp, canopy_file::snapshot::encode(&map, 2).unwrap()).unwrap();
    fs::rename(&tmp, &file).unwrap();
    let snap = a.snapshot().unwrap();
    assert_eq!((snap.revision(), snap.get(b"\x10x").unwrap()), (2, Some(b"2".to_vec())));
    drop(snap);
    let mut stale = Batch { expect_revision: Some(1), ..Batch::default() };
    stale.put(b"\x10y".to_vec(), b"1".to_vec());
    assert_eq!(a.apply(&stale).unwrap_err().kind(), ErrorKind::Conflict);
    stale.expect_revision = Some(2);
    assert_eq!(a.apply(&stale).unwrap(), 3);
    assert_eq!(a.snapshot().unwrap().get(b"\x10x").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn a_failed_commit_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 10, 3);
    let b = open(&file).unwrap();
    let before: Vec<_> = collect(&b);
    let on_disk = fs::read(&file).unwrap();
    // The temporary file cannot be created where a directory is.
    fs::create_dir(dir.path().join("store.snap.tmp")).unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x10new".to_vec(), b"1".to_vec());
    batch.put(before[0].0.clone(), b"changed".to_vec());
    batch.delete_prefix(b"\x10/m:c".to_vec());
    let e = b.apply(&batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert_eq!(collect(&b), before);
    assert_eq!(b.snapshot().unwrap().revision(), 1);
    assert_eq!(fs::read(&file).unwrap(), on_disk);
    fs::remove_dir(dir.path().join("store.snap.tmp")).unwrap();
    assert_eq!(b.apply(&batch).unwrap(), 2);
    assert!(b.check().unwrap().is_empty());
}

#[test]
fn a_leftover_temporary_file_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 10, 3);
    fs::write(dir.path().join("store.snap.tmp"), b"half a commit").unwrap();
    let b = open(&file).unwrap();
    assert_eq!(collect(&b).len(), 10);
    assert!(!dir.path().join("store.snap.tmp").exists());
}

#[test]
fn check_finds_a_file_changed_behind_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let file = make_store(dir.path(), 10, 3);
    let b = open(&file).unwrap();
    assert!(b.check().unwrap().is_empty());
    let mut bytes = fs::read(&file).unwrap();
    let n = bytes.len();
    bytes[n - 10] ^= 1;
    fs::write(&file, &bytes).unwrap();
    let problems = b.check().unwrap();
    assert!(problems.len() == 1 && problems[0].contains("checksum"), "{problems:?}");
}

#[test]
fn a_directory_in_place_of_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains("is a directory"), "{e}");
}

#[test]
fn url_sync_modes_and_disk_size() {
    let dir = tempfile::tempdir().unwrap();
    let url = canopy_store::StoreUrl::parse(&format!("snapshot:{}?sync=off", dir.path().join("s.snap").display()));
    let b = FileBackend::open_url(&url.unwrap()).unwrap();
    assert_eq!((b.kind(), b.sync_mode()), ("snapshot", SyncMode::Off));
    let mut batch = Batch::default();
    batch.put(b"\x10big".to_vec(), vec![1; 1 << 20]);
    b.apply(&batch).unwrap();
    assert!(b.disk_size().unwrap() > 1 << 20);
    b.flush().unwrap();
    let bad = canopy_store::StoreUrl::parse("snapshot:x.snap?mode=fast").unwrap();
    assert_eq!(FileBackend::open_url(&bad).err().unwrap().kind(), ErrorKind::InvalidUrl);
}

fn collect(b: &FileBackend) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    b.snapshot()
        .unwrap()
        .scan(&[], None, false, &mut |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(true)
        })
        .unwrap();
    out
}
