//! Damaged and foreign files are refused with a clear error, never a crash.

use std::fs;
use std::path::Path;

use canopy_lmdb::LmdbBackend;
use canopy_store::{Backend, Batch, ErrorKind, SyncMode};

fn make_store(dir: &Path, n: u32) {
    let b = LmdbBackend::open(dir, SyncMode::Commit).unwrap();
    let mut batch = Batch::default();
    for i in 0..n {
        batch.put(format!("\x10key{i:06}").into_bytes(), vec![b'v'; 200]);
    }
    b.apply(&batch).unwrap();
}

fn open_err(dir: &Path) -> canopy_store::StoreError {
    match LmdbBackend::open(dir, SyncMode::Commit) {
        Ok(_) => panic!("opened a damaged store"),
        Err(e) => e,
    }
}

#[test]
fn garbage_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("data.mdb"), vec![0xA5u8; 64 * 1024]).unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("damaged or is not an LMDB store"), "{e}");
}

#[test]
fn text_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("data.mdb"), b"{\"not\": \"lmdb\"}\n").unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
}

#[test]
fn truncated_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path(), 5000);
    let f = dir.path().join("data.mdb");
    let len = fs::metadata(&f).unwrap().len();
    let file = fs::OpenOptions::new().write(true).open(&f).unwrap();
    file.set_len(len / 2).unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("truncated"), "{e}");
}

#[test]
fn a_file_in_place_of_the_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("store");
    fs::write(&f, b"x").unwrap();
    let e = open_err(&f);
    assert!(e.to_string().contains("not a directory"), "{e}");
}

#[test]
fn lmdb_file_of_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
        let mut batch = Batch::default();
        batch.delete(canopy_store::keys::FORMAT.to_vec());
        batch.put(b"someone-else".to_vec(), b"data".to_vec());
        b.apply(&batch).unwrap();
    }
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a canopy store"), "{e}");
}

#[test]
fn newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
        let mut batch = Batch::default();
        batch.put(canopy_store::keys::FORMAT.to_vec(), 99u32.to_be_bytes().to_vec());
        b.apply(&batch).unwrap();
    }
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("version 99"), "{e}");
}

#[test]
fn overlong_keys_are_refused_without_damage() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x10ok".to_vec(), b"1".to_vec());
    batch.put(vec![0x10; 100_000], b"1".to_vec());
    let e = b.apply(&batch).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("longer than LMDB allows"), "{e}");
    assert_eq!(b.snapshot().unwrap().get(b"\x10ok").unwrap(), None, "a failed batch wrote nothing");
}

#[test]
fn map_grows_past_its_initial_size() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    // 1.5 GiB of values in batches of 64 MiB: more than the 1 GiB initial map.
    let v = vec![7u8; 1 << 20];
    for chunk in 0..24u32 {
        let mut batch = Batch::default();
        for i in 0..64u32 {
            batch.put(format!("\x10c{chunk:03}-{i:03}").into_bytes(), v.clone());
        }
        b.apply(&batch).unwrap();
    }
    let s = b.snapshot().unwrap();
    assert_eq!(s.get(b"\x10c023-063").unwrap().map(|x| x.len()), Some(1 << 20));
    drop(s);
    let before = b.disk_size().unwrap();
    let mut d = Batch::default();
    d.delete_prefix(b"\x10c".to_vec());
    b.apply(&d).unwrap();
    // Deleting everything left the file mostly free: it shrank on its own.
    let after = b.disk_size().unwrap();
    assert!(after < before / 10, "the file shrinks: {before} -> {after}");
    b.compact().unwrap();
    assert!(b.disk_size().unwrap() <= after);
}

/// A meta page whose last page number is so large that the file size it needs
/// does not fit in a machine word is damage (not an overflow that wraps to a
/// size the file passes, letting LMDB write over its meta pages).
#[test]
fn meta_page_with_an_impossible_page_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    make_store(dir.path(), 10);
    let f = dir.path().join("data.mdb");
    let mut bytes = fs::read(&f).unwrap();
    // 64-bit LMDB meta page: 16-byte page header, magic, version, address,
    // map size, two 48-byte database records, then the last page number.
    let page = 4096;
    assert_eq!(&bytes[16..20], &0xBEEFC0DEu32.to_le_bytes(), "LMDB meta page magic");
    for meta in [0, page] {
        bytes[meta + 136..meta + 144].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    fs::write(&f, &bytes).unwrap();
    let e = open_err(dir.path());
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("data.mdb"), "{e}");
}
