//! Work is proportional to the change, not to the store: counted in keys the
//! backend reads (through `canopy_store::metered`), never timed.

use std::sync::Arc;

use canopy::{Error, Store};
use canopy_store::memory::MemoryBackend;
use canopy_store::metered::{Metered, Reads};

const ENTRIES: usize = 2000;

/// A store on a metered in-memory backend with `module`, `ENTRIES` entries
/// of `/m:c/i` imported.
fn store(module: &str) -> (Store, Arc<Reads>) {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:metered", canopy::Options::default()).unwrap();
    store.schema_add_texts(&[("m.yang".into(), module.into())], &[]).unwrap();
    let entries: Vec<serde_json::Value> =
        (0..ENTRIES).map(|i| serde_json::json!({ "name": format!("if{i}"), "mtu": 1500 })).collect();
    let doc = serde_json::json!({ "m:c": { "i": entries } }).to_string();
    store.running().import(doc.as_bytes(), canopy::Operation::Merge).unwrap();
    (store, reads)
}

/// Deleting one entry of a list that only state data (config false, as
/// ietf-interfaces' `higher-layer-if`) refers to reads a handful of keys in
/// a configuration datastore: state leafrefs cannot be there to check.
#[test]
fn deleting_an_entry_only_state_refers_to_reads_no_other_entry() {
    let (store, reads) = store(
        r#"module m { namespace "urn:m"; prefix m;
             container c { list i { key name; leaf name { type string; } leaf mtu { type uint16; }
               leaf-list higher { config false; type leafref { path "../../i/name"; } } } } }"#,
    );
    reads.reset();
    store.running().delete("/m:c/i[name='if7']").unwrap();
    let read = reads.total();
    assert!(read < 50, "deleting one of {ENTRIES} entries read {read} keys");
    assert!(store.running().get_item("/m:c/i[name='if7']").unwrap().is_none());
    assert!(store.running().get_item("/m:c/i[name='if8']").unwrap().is_some());
}

/// A configuration leafref to the entry is still checked: the delete is
/// refused while it points there.
#[test]
fn a_config_leafref_still_guards_its_target() {
    let (store, _) = store(
        r#"module m { namespace "urn:m"; prefix m;
             container c { list i { key name; leaf name { type string; } leaf mtu { type uint16; } }
               leaf uses { type leafref { path "../i/name"; } } } }"#,
    );
    store.running().set("/m:c/uses", canopy::Value::String("if7".into())).unwrap();
    match store.running().delete("/m:c/i[name='if7']") {
        Err(Error::Invalid(v)) => assert!(v.iter().any(|x| x.path == "/m:c/uses"), "{v:?}"),
        other => panic!("deleting a leafref target: {other:?}"),
    }
    store.running().delete("/m:c/i[name='if8']").unwrap();
}

const PLAIN: &str = r#"module m { namespace "urn:m"; prefix m;
     container c { list i { key name; leaf name { type string; } leaf mtu { type uint16; }
       container sub { leaf x { type string; } } } } }"#;

/// Deleting a whole list, one entry or the container above is one range
/// delete that reads nothing of what it deletes; the diff says what was
/// erased without its content.
#[test]
fn deletes_erase_without_reading_what_they_delete() {
    for (path, left) in [("/m:c/i[name='if3']", ENTRIES - 1), ("/m:c/i", 0), ("/m:c", 0)] {
        let (store, reads) = store(PLAIN);
        store.running().set("/m:c/i[name='if5']/sub/x", canopy::Value::String("deep".into())).unwrap();
        reads.reset();
        let commit = store.running().delete(path).unwrap();
        let read = reads.total();
        assert!(read < 50, "deleting {path} read {read} keys of {ENTRIES} entries");
        assert_eq!(commit.changes.len(), 1, "{path}: {:?}", commit.changes);
        assert!(
            matches!(&commit.changes[0], canopy::Change::Erased { path: p } if p.to_string() == path),
            "{path}: {:?}",
            commit.changes
        );
        assert_eq!(store.running().count("/m:c/i").unwrap(), left, "{path}");
        assert_eq!(store.running().count("//x").unwrap(), usize::from(left == ENTRIES - 1), "{path}");
        assert!(store.check().unwrap().is_empty(), "{path}: {:?}", store.check());
    }
}

/// Without a schema, a name without keys may be a container (fragments of
/// its own: erased unread, as with a schema) or a leaf or leaf-list (in its
/// parent's fragment: deleted the loading way). Absent, a delete fails.
#[test]
fn schemaless_containers_are_erased_and_leaves_deleted() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:metered", canopy::Options::default()).unwrap();
    store.declare_list("/m:c/box/i", canopy::ListInfo { keys: vec!["name".into()], user_ordered: false }).unwrap();
    let entries: Vec<serde_json::Value> =
        (0..ENTRIES).map(|i| serde_json::json!({ "name": format!("if{i}") })).collect();
    let doc =
        serde_json::json!({ "m:c": { "box": { "i": entries, "n": 1 }, "leaf": 5, "ll": [1, 2], "keep": { "x": 1 } } });
    store.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();

    reads.reset();
    let commit = store.running().delete("/m:c/box").unwrap();
    let read = reads.total();
    assert!(read < 50, "deleting a container of {ENTRIES} entries read {read} keys");
    assert!(
        matches!(&commit.changes[..], [canopy::Change::Erased { path }] if path.to_string() == "/m:c/box"),
        "{:?}",
        commit.changes
    );
    assert_eq!(store.running().count("/m:c/box/i").unwrap(), 0);

    for leaf in ["/m:c/leaf", "/m:c/ll"] {
        let commit = store.running().delete(leaf).unwrap();
        let deleted = |c: &canopy::Change| matches!(c, canopy::Change::Deleted { path, .. } if path.to_string().starts_with(leaf));
        assert!(!commit.changes.is_empty() && commit.changes.iter().all(deleted), "{leaf}: {:?}", commit.changes);
    }
    match store.running().delete("/m:c/nope") {
        Err(Error::Data(canopy_core::Error::NotFound { .. })) => {}
        other => panic!("deleting an absent node: {other:?}"),
    }
    let mut left = Vec::new();
    store.running().get_json("/m:c", canopy::ReadOptions::default(), false, &mut left).unwrap();
    assert_eq!(String::from_utf8(left).unwrap(), r#"{"m:c":{"keep":{"x":1}}}"#);
    assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
}

/// A delete of what is not stored fails and a remove changes nothing, as on
/// the path that reads.
#[test]
fn erasing_what_is_absent() {
    let (store, _) = store(PLAIN);
    match store.running().delete("/m:c/i[name='nope']") {
        Err(Error::Data(canopy_core::Error::NotFound { .. })) => {}
        other => panic!("{other:?}"),
    }
    let remove =
        canopy::Edit { op: canopy::Operation::Remove, ..canopy::Edit::delete("/m:c/i[name='nope']".parse().unwrap()) };
    assert!(store.running().apply(&[remove]).unwrap().changes.is_empty());
}

/// A subscriber gets old values: with one subscribed, the delete reads the
/// entry and the diff holds it.
#[test]
fn a_subscriber_gets_what_was_deleted() {
    struct Quiet;
    impl canopy::Subscriber for Quiet {}
    let (store, _) = store(PLAIN);
    let _sub = store.subscribe(canopy::Datastore::Running, "/m:c", 0, Quiet).unwrap();
    let commit = store.running().delete("/m:c/i[name='if3']").unwrap();
    assert!(
        matches!(&commit.changes[..], [canopy::Change::Deleted { node: canopy::Subtree::Entry(e), .. }] if !e.children.is_empty()),
        "{:?}",
        commit.changes
    );
}

/// Erasing entries of user-ordered lists, and a container holding one,
/// removes their order records too: the store checks clean and the list
/// keeps its order for later inserts.
#[test]
fn erasing_user_ordered_entries_and_their_parents_leaves_no_order_records() {
    let store = Store::open("memory:erase-ordered").unwrap();
    store.declare_list("/m:c/u", canopy::ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    store.declare_list("/m:c/u/v", canopy::ListInfo { keys: vec!["n".into()], user_ordered: true }).unwrap();
    for k in 0..10 {
        store.running().set(&format!("/m:c/u[k='{k}']/v[n='a']/x"), canopy::Value::from_cli("1")).unwrap();
        store.running().set(&format!("/m:c/u[k='{k}']/v[n='b']/x"), canopy::Value::from_cli("2")).unwrap();
    }
    let commit = store.running().delete("/m:c/u[k='4']").unwrap();
    assert!(matches!(&commit.changes[..], [canopy::Change::Erased { .. }]), "{:?}", commit.changes);
    assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
    let keys = |s: &Store| -> Vec<String> {
        let mut out = Vec::new();
        s.running().get_json("/m:c/u/k", canopy::ReadOptions::default(), false, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        v["m:c"]["u"].as_array().unwrap().iter().map(|e| e["k"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(keys(&store), ["0", "1", "2", "3", "5", "6", "7", "8", "9"]);
    store.running().delete("/m:c").unwrap();
    assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
    store.running().set("/m:c/u[k='z']/v[n='a']/x", canopy::Value::from_cli("1")).unwrap();
    assert_eq!(keys(&store), ["z"]);
    assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
}

/// A transaction of more deletes than the pairwise check takes (an rpm
/// erase: hundreds of edits), none at or under another, erases each one
/// unread; one whose edits nest reads what it deletes and deletes the same.
#[test]
fn many_edits_erase_when_they_are_apart() {
    let (store, reads) = store(PLAIN);
    // Each entry with a fragment below it, which a delete that loads reads.
    let subs: Vec<canopy::Edit> = (0..100)
        .map(|i| {
            let path = format!("/m:c/i[name='if{i}']/sub/x").parse().unwrap();
            canopy::Edit::merge(path, canopy::Node::leaf(canopy::Value::String("deep".into())))
        })
        .collect();
    store.running().apply(&subs).unwrap();
    let deletes: Vec<canopy::Edit> =
        (0..100).map(|i| canopy::Edit::delete(format!("/m:c/i[name='if{i}']").parse().unwrap())).collect();
    reads.reset();
    let commit = store.running().apply(&deletes).unwrap();
    let read = reads.total();
    assert_eq!(commit.changes.len(), 100);
    assert!(commit.changes.iter().all(|c| matches!(c, canopy::Change::Erased { .. })), "{:?}", &commit.changes[..3]);
    // One check that each entry is stored.
    assert!(read < 150, "100 deletes read {read} keys");
    assert_eq!(store.running().count("/m:c/i").unwrap(), ENTRIES - 100);
    assert!(store.check().unwrap().is_empty(), "{:?}", store.check());

    // An entry and a node below it, in one long transaction: read, and
    // deleted all the same.
    let mut nested: Vec<canopy::Edit> =
        (100..200).map(|i| canopy::Edit::delete(format!("/m:c/i[name='if{i}']").parse().unwrap())).collect();
    nested.insert(0, canopy::Edit::delete("/m:c/i[name='if150']/mtu".parse().unwrap()));
    let commit = store.running().apply(&nested).unwrap();
    assert!(commit.changes.iter().all(|c| matches!(c, canopy::Change::Deleted { .. })), "{:?}", &commit.changes[..3]);
    assert_eq!(store.running().count("/m:c/i").unwrap(), ENTRIES - 200);
}

/// A merge below an entry that is not stored reads nothing of what its value
/// names: below a missing node nothing is stored.
#[test]
fn merges_below_a_missing_entry_read_it_once() {
    let (store, reads) = store(PLAIN);
    let edits: Vec<canopy::Edit> = (0..100)
        .map(|i| {
            let mut sub = canopy::Container::default();
            sub.children.insert("x".into(), canopy::Node::leaf(canopy::Value::String(format!("v{i}").into())));
            let value = canopy::Node::Container(sub);
            canopy::Edit::merge(format!("/m:c/i[name='new{i}']/sub").parse().unwrap(), value)
        })
        .collect();
    reads.reset();
    store.running().apply(&edits).unwrap();
    let read = reads.total();
    assert!(read < 150, "100 merges below new entries read {read} keys");
    assert_eq!(store.running().count("/m:c/i").unwrap(), ENTRIES + 100);
    assert!(store.running().get_item("/m:c/i[name='new7']/sub/x").unwrap().is_some());
}

/// A path that gives some of a list's keys names no one entry: its delete
/// is not erased as a key prefix (which would take every entry the given
/// keys start), whether the transaction is short or long.
#[test]
fn paths_with_some_of_the_keys_name_no_entry() {
    const TWO_KEYS: &str = r#"module m { namespace "urn:m"; prefix m;
         container c { list p { key "a b"; leaf a { type string; } leaf b { type string; } leaf v { type string; } }
           list q { key k; leaf k { type string; } } } }"#;
    let entries: Vec<serde_json::Value> = (0..3)
        .flat_map(|a| (0..3).map(move |b| serde_json::json!({ "a": format!("x{a}"), "b": format!("y{b}"), "v": "1" })))
        .collect();
    for (yang, long) in [(false, true), (false, false), (true, true), (true, false)] {
        let store = Store::open("memory:partial-keys").unwrap();
        match yang {
            true => drop(store.schema_add_texts(&[("m.yang".into(), TWO_KEYS.into())], &[]).unwrap()),
            false => {
                store.declare_list("/m:c/p", canopy::ListInfo::keyed(["a".to_string(), "b".to_string()])).unwrap();
                store.declare_list("/m:c/q", canopy::ListInfo::keyed(["k".to_string()])).unwrap();
            }
        }
        let doc = serde_json::json!({ "m:c": { "p": entries } }).to_string();
        store.running().import(doc.as_bytes(), canopy::Operation::Merge).unwrap();
        let mut edits = vec![canopy::Edit::delete("/m:c/p[a='x1']".parse().unwrap())];
        if long {
            // Removes of what is not there, in another list: apart from the
            // delete, which the long transaction's one-pass check then lets
            // through to the per-delete check.
            let remove = |i: usize| canopy::Edit {
                op: canopy::Operation::Remove,
                ..canopy::Edit::delete(format!("/m:c/q[k='z{i}']").parse().unwrap())
            };
            edits.extend((0..80).map(remove));
        }
        let outcome = store.running().apply(&edits);
        assert!(outcome.is_err(), "yang={yang} long={long}: a delete of /m:c/p[a='x1'] succeeded: {outcome:?}");
        assert_eq!(store.running().count("/m:c/p").unwrap(), 9, "yang={yang} long={long}: entries were lost");
    }
}

/// A merge of a whole list reads the stored entries its value names (a list
/// has no fragment of its own, yet it is not missing): what the value leaves
/// out is kept, and a create of the stored list fails.
#[test]
fn a_merge_of_a_whole_list_keeps_what_it_leaves_out() {
    let (store, _) = store(PLAIN);
    let s = store.running();
    let commit =
        s.edit_json(canopy::Operation::Merge, "/m:c/i", Some(r#"{"m:i":[{"name":"if3","sub":{"x":"a"}}]}"#), None);
    assert!(
        commit
            .unwrap()
            .changes
            .iter()
            .all(|c| !matches!(c, canopy::Change::Created { path, .. } if path.to_string() == "/m:c/i[name='if3']")),
        "the stored entry was created again"
    );
    let mut out = Vec::new();
    s.get_json("/m:c/i[name='if3']", canopy::ReadOptions::default(), false, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["m:c"]["i"][0]["mtu"], 1500, "{v}");
    assert_eq!(v["m:c"]["i"][0]["sub"]["x"], "a", "{v}");
    let created = s.edit_json(canopy::Operation::Create, "/m:c/i", Some(r#"{"m:i":[{"name":"if3"}]}"#), None);
    assert!(created.is_err(), "a create of the stored list: {created:?}");
    assert_eq!(s.count("/m:c/i").unwrap(), ENTRIES);
}

/// One read takes one snapshot, whichever way it is served (a key lookup,
/// entry by entry, streamed, as a loaded tree, the operational view): it
/// reads one revision, and on a server one snapshot is one round trip or a
/// few, not several.
#[test]
fn one_read_takes_one_snapshot() {
    let (store, reads) = store(PLAIN);
    store.running().set("/m:c/i[name='if5']/sub/x", canopy::Value::String("deep".into())).unwrap();
    let snapshots = |what: &str, read: &dyn Fn() -> canopy::Result<()>| {
        reads.reset();
        read().unwrap_or_else(|e| panic!("{what}: {e}"));
        let n = reads.snapshots.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(n, 1, "{what} took {n} snapshots");
    };
    let s = store.running();
    let o = store.session(canopy::Datastore::Operational);
    let all = canopy::ReadOptions::default();
    for q in ["/m:c/i[name='if5']/sub/x", "/m:c/i[name='if5']", "/m:c/i[mtu=1500]", "/m:c/i/sub", "//x", "/m:c"] {
        snapshots(&format!("get {q}"), &|| s.get(q, all).map(drop));
        snapshots(&format!("count {q}"), &|| s.count(q).map(drop));
        snapshots(&format!("get on operational {q}"), &|| o.get(q, all).map(drop));
        snapshots(&format!("get_json {q}"), &|| s.get_json(q, all, false, Vec::new()));
    }
    for p in ["/m:c/i[name='if5']", "/m:c/i[name='if5']/sub/x", "/m:c/i[name='nope']", "/m:c"] {
        snapshots(&format!("get_item {p}"), &|| s.get_item(p).map(drop));
    }
}
