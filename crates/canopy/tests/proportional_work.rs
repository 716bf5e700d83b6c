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
