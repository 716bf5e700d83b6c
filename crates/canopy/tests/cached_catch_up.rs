//! A cached store (`cache=on`) brought up to another writer's commits with
//! the change log's records, when it has all of them, and read again whole
//! when it does not: either way its reads are the store's.

use canopy::{Insert, Operation, ReadOptions, Store, Value};

fn open(dir: &tempfile::TempDir, params: &str) -> Store {
    Store::open(&format!("lmdb:{}?sync=off&{params}", dir.path().display())).unwrap()
}

/// The whole running datastore as the cached store reads it and as a store
/// without a cache reads it.
fn assert_same(cached: &Store, plain: &Store, what: &str) {
    let read = |s: &Store| s.running().get("/", ReadOptions::default()).unwrap();
    assert_eq!(read(cached), read(plain), "after {what}");
    let json = |s: &Store| {
        let mut out = Vec::new();
        s.running().get_json("/", ReadOptions::default(), false, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert_eq!(json(cached), json(plain), "after {what} (JSON)");
}

#[test]
fn a_cached_store_follows_another_writers_commits() {
    let dir = tempfile::tempdir().unwrap();
    let writer = open(&dir, "changelog=100");
    writer.declare_list("/m:c/e", canopy::ListInfo { keys: vec!["k".into()], user_ordered: false }).unwrap();
    writer.declare_list("/m:c/u", canopy::ListInfo { keys: vec!["n".into()], user_ordered: true }).unwrap();
    let doc = r#"{"m:c":{"leaf":1,"e":[{"k":"a","v":1},{"k":"b","v":2},{"k":"c","v":3}],
                   "u":[{"n":"x"},{"n":"y"}],"ll":["p","q"]}}"#;
    writer.running().import(doc.as_bytes(), Operation::Merge).unwrap();
    let cached = open(&dir, "cache=on&changelog=100");
    let plain = open(&dir, "changelog=100");
    assert_same(&cached, &plain, "the import");

    // Each kind of change, committed by the other store, one commit at a time
    // and several between two reads.
    writer.running().set("/m:c/leaf", Value::Number("2".into())).unwrap();
    assert_same(&cached, &plain, "a leaf set");
    writer.running().delete("/m:c/e[k='b']").unwrap();
    assert_same(&cached, &plain, "an entry erased");
    writer.running().set("/m:c/e[k='d']/v", Value::Number("4".into())).unwrap();
    writer.running().set_json("/m:c/more", r#"{"m:more":{"deep":{"x":"1"}}}"#).unwrap();
    writer
        .running()
        .edit_json(Operation::Merge, "/m:c/u[n='z']", Some(r#"{"m:u":[{"n":"z"}]}"#), Some(Insert::First))
        .unwrap();
    writer.running().delete("/m:c/ll[.='p']").unwrap();
    assert_same(&cached, &plain, "several commits");
    // The cached store's own commits go on as before.
    cached.running().set("/m:c/e[k='a']/v", Value::Number("10".into())).unwrap();
    assert_same(&cached, &plain, "the cached store's own commit");
    writer.running().delete("/m:c/more").unwrap();
    assert_same(&cached, &plain, "a container erased");

    // Commits the log does not hold (a lock and its release, a writer that
    // keeps no log): the cached store reads the datastore again.
    writer.lock(canopy::Datastore::Running).unwrap();
    writer.running().set("/m:c/leaf", Value::Number("3".into())).unwrap();
    writer.unlock(canopy::Datastore::Running).unwrap();
    assert_same(&cached, &plain, "a lock, a commit and an unlock");
    let unlogged = open(&dir, "changelog=0");
    unlogged.running().set("/m:c/leaf", Value::Number("4".into())).unwrap();
    unlogged.running().delete("/m:c/e[k='c']").unwrap();
    assert_same(&cached, &plain, "commits without log records");
    writer.running().set("/m:c/leaf", Value::Number("5".into())).unwrap();
    assert_same(&cached, &plain, "a logged commit after unlogged ones");
}

#[test]
fn other_datastores_commits_leave_the_cached_tree_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let writer = open(&dir, "changelog=100");
    writer.running().set("/m:a/x", Value::String("1".into())).unwrap();
    let cached = open(&dir, "cache=on&changelog=100");
    let plain = open(&dir, "changelog=100");
    assert_same(&cached, &plain, "the first commit");
    writer.session(canopy::Datastore::Startup).set("/m:a/x", Value::String("startup".into())).unwrap();
    writer.running().set("/m:a/y", Value::String("2".into())).unwrap();
    assert_same(&cached, &plain, "commits to startup and running");
    let startup = |s: &Store| s.session(canopy::Datastore::Startup).get("/", ReadOptions::default()).unwrap();
    assert_eq!(startup(&cached), startup(&plain));
}
