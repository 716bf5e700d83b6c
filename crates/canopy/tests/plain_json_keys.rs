//! After importing plain RFC 7951 JSON whose lists nobody declared, paths with
//! key predicates (`lst[k1='2'][k2='b']`) read, change and delete the entry
//! whose leaves match, as a user expects; the lists stay keyless.

use canopy::{Datastore, Operation, Store, Value};

const DOC: &str = r#"{"m:c": {"lst": [
  {"k1": 1, "k2": "a", "v": "one-a"},
  {"k1": 2, "k2": "b", "v": "two-b"},
  {"k1": 2, "k2": "c", "v": "two-c"}
]}}"#;

fn json(store: &Store, q: &str) -> String {
    let mut out = Vec::new();
    store.session(Datastore::Running).get_json(q, Default::default(), false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn exercise(url: &str) {
    {
        let store = Store::open(url).unwrap();
        let s = store.running();
        s.import(DOC.as_bytes(), Operation::Merge).unwrap();
        // Read by key predicates (a query over the keyless list; its entries
        // have no keys to repeat in the result).
        assert_eq!(json(&store, "/m:c/lst[k1='2'][k2='b']/v"), r#"{"m:c":{"lst":[{"v":"two-b"}]}}"#);
        // Set through key predicates: the matching entry changes, nothing else.
        let c = s.set("/m:c/lst[k1='2'][k2='b']/v", Value::String("changed".into())).unwrap();
        assert_eq!(c.changes.len(), 1, "{:?}", c.changes);
        assert_eq!(s.count("/m:c/lst").unwrap(), 3);
        // Keys in the other order name the same entry.
        s.set("/m:c/lst[k2='b'][k1='2']/w", Value::Bool(true)).unwrap();
        assert_eq!(
            json(&store, "/m:c/lst[k1='2'][k2='b']"),
            r#"{"m:c":{"lst":[{"k1":2,"k2":"b","v":"changed","w":true}]}}"#
        );
        // Predicates that match several entries are refused for edits.
        let e = s.set("/m:c/lst[k1='2']/v", Value::String("x".into())).unwrap_err();
        assert!(e.to_string().contains("2 entries"), "{e}");
        // No match: a new entry is appended with those leaves.
        s.set("/m:c/lst[k1='3'][k2='d']/v", Value::String("three-d".into())).unwrap();
        assert_eq!(s.count("/m:c/lst").unwrap(), 4);
        // Delete through key predicates.
        s.delete("/m:c/lst[k1='1'][k2='a']").unwrap();
        assert!(s.delete("/m:c/lst[k1='9'][k2='z']").is_err());
        // A merge into the first entry, named by position, that moves it
        // after the third: the entry named changes, and moves there.
        let edit = s
            .parse_edit(
                Operation::Merge,
                "/m:c/lst[1]".parse().unwrap(),
                Some(r#"{"m:lst":[{"v":"moved"}]}"#),
                Some(canopy::Insert::After(vec!["3".into()])),
            )
            .unwrap();
        s.apply(&[edit]).unwrap();
        assert_eq!(json(&store, "/m:c/lst/v"), r#"{"m:c":{"lst":[{"v":"two-c"},{"v":"three-d"},{"v":"moved"}]}}"#);
        assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
    }
    // After reopening, the list is still keyless and in the same order.
    let store = Store::open(url).unwrap();
    assert_eq!(json(&store, "/m:c/lst/k2"), r#"{"m:c":{"lst":[{"k2":"c"},{"k2":"d"},{"k2":"b"}]}}"#);
    assert_eq!(json(&store, "/m:c/lst[3]/v"), r#"{"m:c":{"lst":[{"v":"moved"}]}}"#);
    assert!(store.check().unwrap().is_empty());
}

#[test]
fn uncached() {
    let dir = tempfile::tempdir().unwrap();
    exercise(&format!("lmdb:{}", dir.path().display()));
}

#[test]
fn cached() {
    let dir = tempfile::tempdir().unwrap();
    exercise(&format!("lmdb:{}?cache=on", dir.path().display()));
}

#[test]
fn keys_can_be_declared_once_keyless_entries_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}", dir.path().display())).unwrap();
    store.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    let keyed = canopy::ListInfo::keyed(["k1", "k2"]);
    let e = store.declare_list("/m:c/lst", keyed.clone()).unwrap_err();
    assert!(e.to_string().contains("stored without keys"), "{e}");
    store.running().delete("/m:c/lst").unwrap();
    store.declare_list("/m:c/lst", keyed.clone()).unwrap();
    // Now the same document imports into a keyed list.
    store.running().import(DOC.as_bytes(), Operation::Merge).unwrap();
    let c = store.running().set("/m:c/lst[k1='2'][k2='c']/v", Value::String("x".into())).unwrap();
    assert_eq!(c.changes[0].path().to_string(), "/m:c/lst[k1='2'][k2='c']/v");
    let e = store.declare_list("/m:c/lst", canopy::ListInfo::keyed(["k2"])).unwrap_err();
    assert!(e.to_string().contains("declared keys cannot change"), "{e}");
    assert!(store.check().unwrap().is_empty());
}
