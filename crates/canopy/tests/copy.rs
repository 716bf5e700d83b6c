//! `canopy::copy` moves a store between backends: LMDB → SQLite → memory keeps
//! every datastore, list declaration and user order, in several batches.
#![cfg(all(feature = "backend-lmdb", feature = "backend-sqlite"))]

use canopy::{copy, Datastore, Error, ListInfo, Operation, Store, Value};

/// A document of `n` entries of a declared list and a user-ordered list whose
/// order differs from its key order.
fn document(n: usize) -> String {
    let entries: Vec<String> = (0..n).map(|i| format!(r#"{{"k": "{i}", "v": "value {i}"}}"#)).collect();
    format!(
        r#"{{"m:c": {{"lst": [{}], "u": [{{"k": "z"}}, {{"k": "a"}}, {{"k": "m"}}], "leaf": "x"}}}}"#,
        entries.join(",")
    )
}

fn whole_json(store: &Store, ds: Datastore) -> String {
    let mut out = Vec::new();
    store.session(ds).get_json("/", Default::default(), false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn lmdb_to_sqlite_to_memory_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let lmdb = Store::open(&format!("lmdb:{}?sync=off", dir.path().join("lmdb").display())).unwrap();
    lmdb.declare_list("/m:c/lst", ListInfo::keyed(["k"])).unwrap();
    lmdb.declare_list("/m:c/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    let n = 2 * canopy::COPY_BATCH + 500;
    lmdb.running().import(document(n).as_bytes(), Operation::Merge).unwrap();
    lmdb.session(Datastore::Startup).set("/m:s/leaf", Value::String("boot".into())).unwrap();

    let sqlite = Store::open(&format!("sqlite:{}", dir.path().join("store.db").display())).unwrap();
    let first = copy(&lmdb, &sqlite).unwrap();
    // Fragments: the n + 3 entries, /m:c and /m:s. Other keys: the order index
    // of the 3 user-ordered entries, two list records and the format record.
    assert_eq!(first.fragments, n as u64 + 5);
    assert_eq!(first.keys, first.fragments + 3 + 2 + 1, "{first:?}");
    assert_eq!(first.batches, 3);
    assert_eq!(first.source_revision, lmdb.revision().unwrap());
    assert_eq!(first.revision, sqlite.revision().unwrap());
    assert_eq!(sqlite.info().unwrap().fragments, first.fragments);

    let memory = Store::open("memory:copy").unwrap();
    let second = copy(&sqlite, &memory).unwrap();
    assert_eq!((second.keys, second.fragments), (first.keys, first.fragments));
    for ds in [Datastore::Running, Datastore::Startup] {
        let expected = whole_json(&lmdb, ds);
        assert_eq!(whole_json(&sqlite, ds), expected, "{ds:?} on sqlite");
        assert_eq!(whole_json(&memory, ds), expected, "{ds:?} in memory");
    }
    assert!(whole_json(&memory, Datastore::Running).contains(r#""u":[{"k":"z"},{"k":"a"},{"k":"m"}]"#));
    assert!(memory.check().unwrap().is_empty());
    // The learned list info came along: new entries go where the declaration says.
    memory.running().set("/m:c/lst[k='-1']/v", Value::String("new".into())).unwrap();
    assert!(whole_json(&memory, Datastore::Running).contains(r#""lst":[{"k":"-1","v":"new"},{"k":"0""#));
}

#[test]
fn a_destination_with_data_is_refused_and_unchanged() {
    let from = Store::open("memory:a").unwrap();
    from.running().set("/m:c/leaf", Value::String("a".into())).unwrap();
    let to = Store::open("memory:b").unwrap();
    to.running().set("/m:c/other", Value::String("b".into())).unwrap();
    let before = whole_json(&to, Datastore::Running);
    match copy(&from, &to) {
        Err(Error::Usage(m)) => assert!(m.contains("not empty"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(whole_json(&to, Datastore::Running), before);
    // An empty source copies to an empty destination as just its format record.
    let empty = copy(&Store::open("memory:c").unwrap(), &Store::open("memory:d").unwrap()).unwrap();
    assert_eq!((empty.keys, empty.fragments, empty.batches), (1, 0, 1));
}
