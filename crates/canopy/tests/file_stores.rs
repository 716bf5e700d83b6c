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
    let url = format!("snapshot:{}", dir.path().join("s.snap").display());
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
    assert_eq!(store.backend().kind(), "snapshot");
}
