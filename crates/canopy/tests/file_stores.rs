//! The whole-file backends through the engine: data imported into a store is
//! read back the same after reopening, in every datastore.

#![cfg(feature = "backend-file")]

use canopy::{Datastore, ListInfo, Operation, ReadOptions, Store};

const INTERFACES: &str = include_str!("../../../examples/interfaces.json");

fn perf_json(n: usize) -> String {
    let entries: Vec<String> = (0..n).map(|i| format!("{{\"k1\":{i},\"k2\":\"str{i}\",\"l\":\"l{i}\"}}")).collect();
    format!("{{\"perf:cont\":{{\"lst\":[{}]}}}}", entries.join(","))
}

fn whole(store: &Store, ds: Datastore) -> String {
    let mut out = Vec::new();
    store.session(ds).get_json("/", ReadOptions::default(), false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn snapshot_store_keeps_imported_data_across_reopening() {
    let dir = tempfile::tempdir().unwrap();
    keeps_imported_data_across_reopening(&format!("snapshot:{}", dir.path().join("s.snap").display()), "snapshot");
}

#[test]
fn json_store_keeps_imported_data_across_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    keeps_imported_data_across_reopening(&format!("json:{}", file.display()), "json");
    // Every datastore member is an RFC 7951 document of its own.
    let text = std::fs::read_to_string(&file).unwrap();
    let members = canopy_core::json::top_level_members(&text).unwrap();
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["canopy:store", "canopy:running", "canopy:startup"]);
    let schemaless = canopy_core::Schemaless::default();
    let running = canopy_core::json::parse_str(&text[members[1].value.clone()], &schemaless).unwrap();
    assert!(running.children.contains_key("perf:cont") && running.children.contains_key("ietf-interfaces:interfaces"));
}

fn keeps_imported_data_across_reopening(url: &str, kind: &str) {
    let url = url.to_string();
    let (running, startup, revision) = {
        let store = Store::open(&url).unwrap();
        store
            .declare_list("/perf:cont/lst", ListInfo { keys: vec!["k1".into(), "k2".into()], user_ordered: false })
            .unwrap();
        store
            .declare_list(
                "/ietf-interfaces:interfaces/interface",
                ListInfo { keys: vec!["name".into()], user_ordered: true },
            )
            .unwrap();
        store
            .declare_list(
                "/ietf-interfaces:interfaces/interface/ietf-ip:ipv4/address",
                ListInfo { keys: vec!["ip".into()], user_ordered: false },
            )
            .unwrap();
        store.running().import(perf_json(2000).as_bytes(), Operation::Merge).unwrap();
        store.running().import(INTERFACES.as_bytes(), Operation::Merge).unwrap();
        store.session(Datastore::Startup).import(INTERFACES.as_bytes(), Operation::Merge).unwrap();
        store.running().set("/perf:cont/lst[k1='7'][k2='str7']/l", canopy::Value::String("seven".into())).unwrap();
        (whole(&store, Datastore::Running), whole(&store, Datastore::Startup), store.revision().unwrap())
    };
    assert!(running.contains("\"seven\"") && running.contains("eth0"), "{}", &running[..200]);
    let store = Store::open(&url).unwrap();
    assert_eq!(store.revision().unwrap(), revision);
    assert_eq!(whole(&store, Datastore::Running), running);
    assert_eq!(whole(&store, Datastore::Startup), startup);
    assert!(store.check().unwrap().is_empty());
    assert_eq!(store.backend().kind(), kind);
    // A commit after reopening (fresh order keys) keeps the store consistent.
    store.running().set("/perf:cont/lst[k1='8'][k2='str8']/l", canopy::Value::String("eight".into())).unwrap();
    store.running().delete("/ietf-interfaces:interfaces/interface[name='eth0']").unwrap();
    assert!(store.check().unwrap().is_empty());
    let after = whole(&store, Datastore::Running);
    drop(store);
    let store = Store::open(&url).unwrap();
    assert_eq!(whole(&store, Datastore::Running), after);
    assert!(store.check().unwrap().is_empty());
}
