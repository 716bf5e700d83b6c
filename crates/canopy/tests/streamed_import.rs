//! Imports that stream the document into fragments (an empty or replaced
//! datastore, nobody needing the diff) store what the tree import stores,
//! refuse what it refuses without storing anything, and give way to the tree
//! import where a subscriber, the change log or a YANG schema needs the diff.

use std::sync::{Arc, Mutex};

use canopy::{ChangeEvent, Datastore, Error, ListInfo, Operation, ReadOptions, Store, Subscriber};
use canopy_store::keys;

/// Nested keyed lists, user-ordered lists (at the top and inside entries),
/// keyless lists, leaf-lists, metadata on the root, containers, entries,
/// leaves and leaf-list entries, top-level leaves, entries out of key order.
const DOC: &str = r#"{
  "@": {"m:note": "root"},
  "m:top": 7,
  "m:c": {
    "dev": [
      {"id": "b", "@": {"m:tag": "x"}, "port": [{"n": 2, "ll": [3, 1]}, {"n": 1, "@ll": [{"m:a": "1"}], "ll": ["v"]}],
       "hops": [{"h": "z"}, {"h": "a"}, {"h": "m", "deep": {"x": [1, 2]}}],
       "cfg": {"mtu": 1500, "@mtu": {"m:unit": "bytes"}, "free": [{"x": 1}, {"x": 1}]}},
      {"id": "a", "port": [], "hops": [{"h": "q"}]}
    ],
    "order": [{"k": "3"}, {"k": "1", "w": {"x": 1}}, {"k": "2"}],
    "leaf": "l",
    "empty": {}
  },
  "n:other": {"v": [true, false]}
}"#;

fn declare(store: &Store) {
    store.declare_list("/m:c/dev", ListInfo::keyed(["id"])).unwrap();
    store.declare_list("/m:c/dev/port", ListInfo::keyed(["n"])).unwrap();
    store.declare_list("/m:c/dev/hops", ListInfo { keys: vec!["h".into()], user_ordered: true }).unwrap();
    store.declare_list("/m:c/order", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
}

fn json(store: &Store, path: &str) -> String {
    let mut out = Vec::new();
    store.running().get_json(path, ReadOptions::default(), false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn lmdb(dir: &tempfile::TempDir, params: &str) -> Store {
    Store::open(&format!("lmdb:{}?sync=off{params}", dir.path().display())).unwrap()
}

/// Every record of the store but its revision and change log, as key → value.
fn records(store: &Store) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut all = Vec::new();
    store
        .backend()
        .snapshot()
        .unwrap()
        .scan(&[], None, false, &mut |k, v| {
            all.push((k.to_vec(), v.to_vec()));
            Ok(true)
        })
        .unwrap();
    let data = [keys::data_prefix(Datastore::Running), keys::order_prefix(Datastore::Running)];
    all.retain(|(k, _)| data.iter().any(|p| k.starts_with(p)) || k.starts_with(keys::LIST_INFO));
    all
}

/// Records the changes each `apply` hands over.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Subscriber for Recorder {
    fn apply(&self, event: &ChangeEvent<'_>) {
        let mut seen = self.0.lock().unwrap();
        seen.extend(event.changes().map(|c| c.path().to_string()));
    }
}

#[test]
fn a_streamed_import_stores_what_the_tree_import_stores() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let streamed = lmdb(&a, "");
    // A change log makes the import build its tree and diff.
    let built = lmdb(&b, "&changelog=5");
    for s in [&streamed, &built] {
        declare(s);
    }
    let c = streamed.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    let imported = c.streamed.expect("streamed");
    assert!(imported.fragments > 10 && c.changes.is_empty(), "{c:?}");
    let c = built.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    assert!(c.streamed.is_none() && !c.changes.is_empty(), "{c:?}");
    assert_eq!(imported.changes, c.changes.len() as u64, "{:?}", c.changes);
    let stored = records(&built).iter().filter(|(k, _)| k.starts_with(&keys::data_prefix(Datastore::Running))).count();
    assert_eq!(imported.fragments, stored as u64);
    assert_eq!(json(&streamed, "/"), json(&built, "/"));
    for path in ["/m:c/dev[id='b']/hops", "/m:c/order", "/m:c/dev[id='a']", "/m:top"] {
        assert_eq!(json(&streamed, path), json(&built, path), "{path}");
    }
    assert!(json(&streamed, "/m:c/order").contains(r#"[{"k":"3"},{"k":"1","#), "user order kept");
    assert_eq!(records(&streamed), records(&built), "the same records");
    // The keyless list is learned, as the transaction learns it.
    assert_eq!(streamed.known_lists().unwrap().lists, built.known_lists().unwrap().lists);
    assert!(streamed.known_lists().unwrap().lists.contains_key("/m:c/dev/cfg/free"));
    assert!(streamed.check().unwrap().is_empty());
    // The stored user order takes edits as the tree import's does.
    for s in [&streamed, &built] {
        s.running()
            .edit_json(
                Operation::Create,
                "/m:c/order[k='0']",
                Some(r#"{"order":[{"k":"0"}]}"#),
                Some(canopy::Insert::First),
            )
            .unwrap();
        s.running().delete("/m:c/dev[id='b']/hops[h='a']").unwrap();
    }
    assert_eq!(json(&streamed, "/"), json(&built, "/"));
}

#[test]
fn a_declared_import_streams_and_declares() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "");
    let decl = vec![
        ("/m:c/dev".to_string(), ListInfo::keyed(["id"])),
        ("/m:c/dev/port".to_string(), ListInfo::keyed(["n"])),
        ("/m:c/unused".to_string(), ListInfo::keyed(["u"])),
    ];
    let c = s.running().import_declared(DOC.as_bytes(), Operation::Merge, &decl).unwrap();
    assert!(c.streamed.is_some(), "{c:?}");
    let lists = s.known_lists().unwrap();
    for (path, info) in &decl {
        assert_eq!(lists.lists.get(path), Some(info), "{path}");
    }
    assert!(lists.lists.get("/m:c/order").is_some_and(|i| i.keys.is_empty()), "undeclared: keyless");
    assert!(json(&s, "/m:c/dev[id='b']/port[n='2']").contains(r#""ll":[3,1]"#));
}

#[test]
fn malformed_documents_store_nothing_and_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "");
    declare(&s);
    let rev = s.revision().unwrap();
    // Far enough in that many entries went to the batch first.
    let entries: Vec<String> = (0..2000).map(|i| format!(r#"{{"id":"d{i}","port":[{{"n":{i}}}]}}"#)).collect();
    let good = format!("{{\"m:c\":{{\"dev\":[\n{}\n]}}}}", entries.join(",\n"));
    let cases = [
        (good.replace(r#"{"id":"d1500","#, r#"{"id":"d1500",,"#), 1502, 15),
        (good.replace(r#"{"id":"d1800","#, r#"{"id":"d7","#), 1802, 1),
        (format!("{}x", good), 2002, 4),
        (good[..good.len() - 10].to_string(), 2001, 29),
    ];
    for (doc, line, column) in cases {
        match s.running().import(doc.as_bytes(), Operation::Merge) {
            Err(Error::Data(canopy_core::Error::Json { line: l, column: c, reason })) => {
                assert_eq!((l, c), (line, column), "{reason}");
            }
            other => panic!("expected a JSON error, got {other:?}"),
        }
        assert_eq!(s.revision().unwrap(), rev, "nothing stored");
        assert_eq!(json(&s, "/"), "{}");
    }
    // A replace refused half way leaves the old contents.
    s.running().import(r#"{"m:keep":1}"#.as_bytes(), Operation::Merge).unwrap();
    let bad = good.replace(r#"{"id":"d1500","#, r#"{"id":"d1500",,"#);
    assert!(s.running().import(bad.as_bytes(), Operation::Replace).is_err());
    assert_eq!(json(&s, "/"), r#"{"m:keep":1}"#);
    let c = s.running().import(good.as_bytes(), Operation::Merge).unwrap();
    assert!(c.streamed.is_none(), "a merge into data builds the tree");
    assert_eq!(s.running().count("/m:c/dev").unwrap(), 2000);
}

#[test]
fn a_replace_streams_over_the_old_contents() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "&cache=on");
    declare(&s);
    s.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    let doc = r#"{"m:c":{"order":[{"k":"9"},{"k":"8"}]}}"#;
    let c = s.running().import(doc.as_bytes(), Operation::Replace).unwrap();
    assert!(c.streamed.is_some(), "{c:?}");
    // The cached tree of the old contents is not served.
    assert_eq!(json(&s, "/"), r#"{"m:c":{"order":[{"k":"9"},{"k":"8"}]}}"#);
    let fresh = lmdb(&dir, "");
    assert_eq!(json(&fresh, "/"), json(&s, "/"));
    // No order record of the old lists is left behind.
    assert!(fresh.check().unwrap().is_empty());
    fresh
        .running()
        .edit_json(Operation::Create, "/m:c/order[k='7']", Some(r#"{"order":[{"k":"7"}]}"#), Some(canopy::Insert::Last))
        .unwrap();
    assert_eq!(json(&fresh, "/m:c/order"), r#"{"m:c":{"order":[{"k":"9"},{"k":"8"},{"k":"7"}]}}"#);
}

#[test]
fn a_subscriber_still_gets_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "");
    declare(&s);
    let seen = Recorder::default();
    let sub = s.subscribe(Datastore::Running, "/m:c", 0, seen.clone()).unwrap();
    let c = s.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    assert!(c.streamed.is_none() && !c.changes.is_empty());
    assert!(seen.0.lock().unwrap().iter().any(|p| p == "/m:c"), "{:?}", seen.0.lock().unwrap());
    drop(sub);
    // A subscriber on another datastore needs no diff of this one.
    let _other = s.subscribe(Datastore::Startup, "/m:c", 0, Recorder::default()).unwrap();
    let c = s.running().import(DOC.as_bytes(), Operation::Replace).unwrap();
    assert!(c.streamed.is_some(), "{c:?}");
}

#[test]
fn a_yang_invalid_document_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "");
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/yang/types.yang");
    s.schema_add(&[path], &[]).unwrap();
    let rev = s.revision().unwrap();
    match s.running().import(r#"{"types:c":{"u16":5}}"#.as_bytes(), Operation::Merge) {
        Err(Error::Invalid(v)) => assert!(v.iter().any(|v| v.to_string().starts_with("/types:c/u16")), "{v:?}"),
        other => panic!("expected a validation error, got {other:?}"),
    }
    assert_eq!(s.revision().unwrap(), rev);
    let c = s.running().import(r#"{"types:c":{"u16":15}}"#.as_bytes(), Operation::Merge).unwrap();
    assert!(c.streamed.is_none(), "validated as a transaction");
}

#[test]
fn a_locked_datastore_is_not_imported_into() {
    let dir = tempfile::tempdir().unwrap();
    let (s, other) = (lmdb(&dir, ""), lmdb(&dir, ""));
    other.lock(Datastore::Running).unwrap();
    assert!(matches!(s.running().import(DOC.as_bytes(), Operation::Merge), Err(Error::Locked(_))));
    assert_eq!(json(&s, "/"), "{}");
}

#[test]
fn a_snapshot_held_by_the_importer_does_not_stall_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = lmdb(&dir, "");
    declare(&s);
    // The map cannot grow while this snapshot is open: the records are
    // gathered into one batch instead of streaming into the backend.
    let pinned = s.running().pin().unwrap();
    let c = s.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    assert!(c.streamed.is_some(), "{c:?}");
    drop(pinned);
    let other = tempfile::tempdir().unwrap();
    let built = lmdb(&other, "&changelog=5");
    declare(&built);
    built.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    assert_eq!(records(&s), records(&built));
}

/// Backends without bulk writes gather the records into one batch and
/// commit it through the write view the checks read.
#[test]
fn backends_without_bulk_writes_store_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    #[allow(unused_mut)]
    let mut urls = vec!["memory:streamed".to_string()];
    #[cfg(feature = "backend-sqlite")]
    urls.push(format!("sqlite:{d}/s.db?sync=off"));
    #[cfg(feature = "backend-file")]
    urls.push(format!("json:{d}/s.json?sync=off"));
    let _ = d;
    for url in urls {
        let s = Store::open(&url).unwrap();
        let other = tempfile::tempdir().unwrap();
        let built = lmdb(&other, "&changelog=5");
        for st in [&s, &built] {
            declare(st);
        }
        let c = s.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
        assert!(c.streamed.is_some(), "{url}: {c:?}");
        built.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
        assert_eq!(json(&s, "/"), json(&built, "/"), "{url}");
        assert_eq!(records(&s), records(&built), "{url}");
        let bad = DOC.replace(r#""leaf": "l","#, r#""leaf": "l",,"#);
        assert!(s.running().import(bad.as_bytes(), Operation::Replace).is_err());
        assert_eq!(json(&s, "/"), json(&built, "/"), "{url}: a refused replace stores nothing");
    }
}
