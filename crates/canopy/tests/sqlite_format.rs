//! The engine's format record check on SQLite files: a canopy file of a newer
//! layout, and a `kv` table holding data but no format record, are refused.
#![cfg(feature = "backend-sqlite")]

use canopy::{Error, Store};
use canopy_store::ErrorKind;

fn store_err(url: &str) -> canopy_store::StoreError {
    match Store::open(url) {
        Ok(_) => panic!("opened {url}"),
        Err(Error::Store(e)) => e,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn newer_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("store.db");
    let url = format!("sqlite:{}", file.display());
    Store::open(&url).unwrap().running().set("/m:c/l", canopy::Value::String("x".into())).unwrap();
    let c = rusqlite::Connection::open(&file).unwrap();
    c.execute("UPDATE kv SET v = ?1 WHERE k = ?2", (99u32.to_be_bytes(), canopy_store::keys::FORMAT)).unwrap();
    drop(c);
    let e = store_err(&url);
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("layout version 99"), "{e}");
}

#[test]
fn data_without_format_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("other.db");
    let c = rusqlite::Connection::open(&file).unwrap();
    c.execute_batch(
        "CREATE TABLE kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID; INSERT INTO kv VALUES (x'41', x'42');",
    )
    .unwrap();
    drop(c);
    let e = store_err(&format!("sqlite:{}", file.display()));
    assert_eq!(e.kind(), ErrorKind::Corrupted, "{e}");
    assert!(e.to_string().contains("not a canopy store"), "{e}");
}

#[test]
fn a_new_file_opens_at_revision_zero_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}?sync=commit", dir.path().join("new.db").display());
    assert_eq!(Store::open(&url).unwrap().revision().unwrap(), 0, "the format record comes with the table");
    let rev = Store::open(&url).unwrap().running().set("/m:c/l", canopy::Value::String("x".into())).unwrap().revision;
    assert_eq!(rev, 1);
    assert_eq!(Store::open(&url).unwrap().revision().unwrap(), 1);
}
