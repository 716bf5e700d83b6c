//! Moving entries of a user-ordered list whose entries hold user-ordered
//! lists of their own: the inner lists' order records share the outer
//! list's prefix in the order index and must not be taken for its ends or
//! neighbours.

use canopy::{Insert, ListInfo, Operation, ReadOptions, Store};

/// The keys of `/m:c/u` in the order a read gives them.
fn order(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    store.running().get_json("/m:c/u", ReadOptions::default(), false, &mut out).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    doc["m:c"]["u"].as_array().unwrap().iter().map(|e| e["k"].as_str().unwrap().to_string()).collect()
}

fn fill(store: &Store, n: usize) {
    store.declare_list("/m:c/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    store.declare_list("/m:c/u/inner", ListInfo { keys: vec!["n".into()], user_ordered: true }).unwrap();
    let entries: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let mut e = serde_json::json!({"k": format!("k{i}")});
            if i % 5 == 0 {
                e["inner"] = serde_json::json!([{"n": "b"}, {"n": "a"}, {"n": "c"}]);
            }
            e
        })
        .collect();
    let doc = serde_json::json!({"m:c": {"u": entries}});
    store.running().import(doc.to_string().as_bytes(), Operation::Merge).unwrap();
}

fn moved(store: &Store, key: &str, insert: Insert) {
    let s = store.running();
    let path = format!("/m:c/u[k='{key}']").parse().unwrap();
    let edit =
        s.parse_edit(Operation::Merge, path, Some(&format!(r#"{{"m:u":[{{"k":"{key}"}}]}}"#)), Some(insert)).unwrap();
    s.apply(&[edit]).unwrap();
}

#[test]
fn entries_move_past_entries_with_inner_lists() {
    for cache in ["off", "on"] {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&format!("lmdb:{}?sync=off&cache={cache}", dir.path().display())).unwrap();
        fill(&store, 40);
        let mut expect: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        assert_eq!(order(&store), expect);
        for (key, insert) in [
            ("k3", Insert::First),
            ("k10", Insert::Last),
            ("k0", Insert::Last),
            ("k25", Insert::First),
            ("k7", Insert::After(vec!["k20".into()])),
            ("k30", Insert::Before(vec!["k5".into()])),
        ] {
            let at = expect.iter().position(|k| k == key).unwrap();
            let k = expect.remove(at);
            match &insert {
                Insert::First => expect.insert(0, k),
                Insert::Last => expect.push(k),
                Insert::After(v) => {
                    let p = expect.iter().position(|x| *x == v[0]).unwrap();
                    expect.insert(p + 1, k)
                }
                Insert::Before(v) => {
                    let p = expect.iter().position(|x| *x == v[0]).unwrap();
                    expect.insert(p, k)
                }
            }
            moved(&store, key, insert);
            assert_eq!(order(&store), expect, "cache={cache}, after moving {key}");
            // A fresh handle reads the order index itself.
            let fresh = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
            assert_eq!(order(&fresh), expect, "cache={cache}, after moving {key}, read afresh");
        }
        assert!(store.check().unwrap().is_empty(), "{:?}", store.check());
    }
}
