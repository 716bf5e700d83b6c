//! Bulk writes: parts applied by one write transaction, committed at once,
//! nothing stored when dropped or when the store moved on.

use canopy_lmdb::LmdbBackend;
use canopy_store::backend::{Backend, Batch, BatchOp};
use canopy_store::{ErrorKind, SyncMode};

fn put(k: &str, v: &str) -> BatchOp {
    BatchOp::Put(k.as_bytes().to_vec(), v.as_bytes().to_vec())
}

fn get(b: &LmdbBackend, k: &str) -> Option<Vec<u8>> {
    b.snapshot().unwrap().get(k.as_bytes()).unwrap()
}

#[test]
fn parts_are_committed_together() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
    b.apply(&Batch { expect_revision: None, ops: vec![put("x/old", "1"), put("y", "2")] }).unwrap();
    let rev = b.snapshot().unwrap().revision();
    let mut bulk = b.begin_bulk(rev).unwrap().expect("lmdb has bulk writes");
    bulk.write(vec![BatchOp::DeletePrefix(b"x/".to_vec())]).unwrap();
    for i in 0..50 {
        let part = (0..1000).map(|j| put(&format!("x/{i:03}/{j:04}"), &"v".repeat(100))).collect();
        bulk.write(part).unwrap();
    }
    // Not visible before the commit.
    assert_eq!(get(&b, "x/old"), Some(b"1".to_vec()));
    assert_eq!(get(&b, "x/000/0000"), None);
    assert_eq!(bulk.commit().unwrap(), rev + 1);
    let snap = b.snapshot().unwrap();
    assert_eq!(snap.revision(), rev + 1);
    let mut n = 0;
    snap.scan_prefix(b"x/", false, &mut |_, _| {
        n += 1;
        Ok(true)
    })
    .unwrap();
    assert_eq!(n, 50_000);
    drop(snap);
    assert_eq!(get(&b, "x/old"), None);
    assert_eq!(get(&b, "y"), Some(b"2".to_vec()));
    // Reopened: durable.
    drop(b);
    let b = LmdbBackend::open(dir.path(), SyncMode::Commit).unwrap();
    assert_eq!(get(&b, "x/049/0999").map(|v| v.len()), Some(100));
}

#[test]
fn a_dropped_bulk_write_stores_nothing_and_frees_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    let rev = b.snapshot().unwrap().revision();
    let mut bulk = b.begin_bulk(rev).unwrap().unwrap();
    bulk.write(vec![put("a", "1")]).unwrap();
    drop(bulk);
    assert_eq!(get(&b, "a"), None);
    assert_eq!(b.snapshot().unwrap().revision(), rev);
    // Other writes go on.
    assert_eq!(b.apply(&Batch { expect_revision: Some(rev), ops: vec![put("b", "2")] }).unwrap(), rev + 1);
}

#[test]
fn a_bulk_write_on_a_revision_gone_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let b = LmdbBackend::open(dir.path(), SyncMode::Off).unwrap();
    let rev = b.snapshot().unwrap().revision();
    // With a snapshot open the map cannot be grown: no bulk write, no wait.
    let snap = b.snapshot().unwrap();
    assert!(b.begin_bulk(rev).unwrap().is_none());
    drop(snap);
    b.apply(&Batch { expect_revision: None, ops: vec![put("b", "2")] }).unwrap();
    match b.begin_bulk(rev) {
        Err(e) => assert_eq!(e.kind(), ErrorKind::Conflict, "{e}"),
        Ok(_) => panic!("a bulk write began on revision {rev}, which is gone"),
    }
    // Grown once, the map takes bulk writes with snapshots open.
    let snap = b.snapshot().unwrap();
    let mut bulk = b.begin_bulk(rev + 1).unwrap().expect("the map is large enough now");
    bulk.write(vec![put("c", "3")]).unwrap();
    assert_eq!(bulk.commit().unwrap(), rev + 2);
    assert_eq!(snap.get(b"c").unwrap(), None, "the snapshot keeps its revision");
}
