//! Edits whose values are JSON text: `Session::edit_json` and `Session::set_json`.

use canopy::json::{to_string, WriteOptions};
use canopy::{Error, Insert, ListInfo, Operation, Store};

fn compact(store: &Store, query: &str) -> String {
    to_string(&store.running().get(query, Default::default()).unwrap(), &WriteOptions::default())
}

#[test]
fn set_json_merges_objects_arrays_and_scalars() {
    let store = Store::open("memory:x").unwrap();
    let s = store.running();
    s.set_json("/m:sys", r#"{"name": "r1", "dns": ["a", "b"]}"#).unwrap();
    s.set_json("/m:sys/mtu", "1500").unwrap();
    s.set_json("/m:sys/user[name='bob']", r#"{"name": "bob", "uid": 7}"#).unwrap();
    let c = s.set_json("/m:sys", r#"{"name": "r2"}"#).unwrap();
    assert_eq!(c.changes.len(), 1, "a merge changes only what differs");
    assert_eq!(
        compact(&store, "/m:sys"),
        r#"{"m:sys":{"dns":["a","b"],"mtu":1500,"name":"r2","user":[{"name":"bob","uid":7}]}}"#
    );
    // The path taught the store that `user` is keyed by `name`.
    assert_eq!(s.count("/m:sys/user[name='bob']").unwrap(), 1);
}

#[test]
fn set_json_reports_the_values_own_line() {
    let store = Store::open("memory:x").unwrap();
    let err = store.running().set_json("/m:sys", "{\n  \"a\": 1,\n  \"a\": 2\n}").unwrap_err();
    match err {
        Error::Data(canopy_core::Error::Json { line, .. }) => assert_eq!(line, 3, "{err}"),
        other => panic!("unexpected error {other}"),
    }
    assert!(compact(&store, "/").eq("{}"), "nothing stored");
}

#[test]
fn edit_json_runs_each_operation() {
    let store = Store::open("memory:x").unwrap();
    let s = store.running();
    s.edit_json(Operation::Merge, "/", Some(r#"{"m:sys": {"a": 1, "b": 2}}"#), None).unwrap();
    s.edit_json(Operation::Replace, "/m:sys", Some(r#"{"m:sys": {"c": 3}}"#), None).unwrap();
    assert_eq!(compact(&store, "/"), r#"{"m:sys":{"c":3}}"#);
    let exists = s.edit_json(Operation::Create, "/m:sys/c", Some(r#"{"c": 4}"#), None).unwrap_err();
    assert!(matches!(exists, Error::Data(canopy_core::Error::Exists { .. })), "{exists}");
    s.edit_json(Operation::Create, "/m:sys/d", Some(r#"{"d": 4}"#), None).unwrap();
    s.edit_json(Operation::Delete, "/m:sys/c", None, None).unwrap();
    let missing = s.edit_json(Operation::Delete, "/m:sys/c", None, None).unwrap_err();
    assert!(matches!(missing, Error::Data(canopy_core::Error::NotFound { .. })), "{missing}");
    s.edit_json(Operation::Remove, "/m:sys/c", None, None).unwrap();
    assert_eq!(compact(&store, "/"), r#"{"m:sys":{"d":4}}"#);
    assert!(matches!(s.edit_json(Operation::Merge, "/m:sys", None, None), Err(Error::Usage(_))));
    assert!(matches!(s.edit_json(Operation::Delete, "/m:sys", Some("{}"), None), Err(Error::Usage(_))));
}

#[test]
fn edit_json_inserts_into_user_ordered_lists() {
    let store = Store::open("memory:x").unwrap();
    store.declare_list("/m:acl/rule", ListInfo { keys: vec!["seq".into()], user_ordered: true }).unwrap();
    let s = store.running();
    s.edit_json(Operation::Merge, "/", Some(r#"{"m:acl": {"rule": [{"seq": "b"}, {"seq": "a"}]}}"#), None).unwrap();
    let entry = |k: &str| format!(r#"{{"rule": [{{"seq": "{k}"}}]}}"#);
    s.edit_json(Operation::Create, "/m:acl/rule[seq='c']", Some(&entry("c")), Some(Insert::First)).unwrap();
    s.edit_json(Operation::Create, "/m:acl/rule[seq='d']", Some(&entry("d")), Some(Insert::After(vec!["b".into()])))
        .unwrap();
    assert_eq!(compact(&store, "/"), r#"{"m:acl":{"rule":[{"seq":"c"},{"seq":"b"},{"seq":"d"},{"seq":"a"}]}}"#);
}
