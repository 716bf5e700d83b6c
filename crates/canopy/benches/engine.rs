//! Criterion benchmarks of the engine's costs that issue 11 sets targets for:
//!
//! - `edit/create_entry_with_leaf`: one edit creating a `perf` list entry with
//!   its leaf, the path given as text and checked against the `perf` YANG
//!   module, in a transaction of 1,000 such edits, on the in-memory backend
//!   (the cost before a disk backend; reported per edit).
//! - `delete/ietf_interfaces_entry`: deleting one `interface` entry of a
//!   10,000-entry `ietf-interfaces` list with `ietf-ip` loaded, on LMDB with
//!   `sync=off`; the entry is put back between runs, untimed. Needs the
//!   published modules (`CANOPY_YANG_MODULES`: the directory `scripts/setup.sh`
//!   fills, `~/.cache/canopy/pyang-2.7.1/modules`); without them this
//!   benchmark says so and is skipped.
//! - `delete/leafref_target_unreferenced` and `delete/leafref_target_guarded`:
//!   deleting one entry of a 10,000-entry list whose `name` 10,000 entries of
//!   another list refer to by leafref (absolute path), one each, on LMDB with
//!   `sync=off`: an entry nothing points at (put back between runs, untimed),
//!   and one a referrer points at (the delete is refused).
//!
//! `CANOPY_YANG_MODULES=~/.cache/canopy/pyang-2.7.1/modules cargo bench -p canopy --bench engine`

use std::path::PathBuf;
use std::time::Duration;

use canopy::{Edit, Node, Operation, Store, Value};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const EDITS: usize = 1000;

fn perf_store() -> Store {
    let store = Store::open("memory:bench").unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    store
}

fn create_entry_with_leaf(c: &mut Criterion) {
    let mut g = c.benchmark_group("edit");
    g.throughput(Throughput::Elements(EDITS as u64));
    g.bench_function("create_entry_with_leaf", |b| {
        b.iter_batched(
            perf_store,
            |store| {
                let edits: Vec<Edit> = (0..EDITS)
                    .map(|i| {
                        let path = format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l");
                        Edit::merge(path.parse().unwrap(), Node::leaf(Value::String(format!("l{i}").into())))
                    })
                    .collect();
                let commit = store.running().apply(&edits).unwrap();
                assert!(!commit.changes.is_empty());
                store
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn modules() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("CANOPY_YANG_MODULES")?);
    dir.join("ietf").is_dir().then_some(dir)
}

fn delete_interface(c: &mut Criterion) {
    let Some(m) = modules() else {
        eprintln!("delete/ietf_interfaces_entry: skipped (CANOPY_YANG_MODULES is not set)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    store
        .schema_add(
            &[m.join("ietf/ietf-interfaces.yang"), m.join("ietf/ietf-ip.yang"), m.join("iana/iana-if-type.yang")],
            std::slice::from_ref(&m),
        )
        .unwrap();
    let entry = |i: usize| {
        serde_json::json!({"name": format!("eth{i}"), "type": "iana-if-type:ethernetCsmacd", "enabled": true,
            "ietf-ip:ipv4": {"address": [{"ip": format!("10.{}.{}.1", i / 256, i % 256), "prefix-length": 24}]}})
    };
    let all: Vec<serde_json::Value> = (0..10_000).map(entry).collect();
    let doc = serde_json::json!({"ietf-interfaces:interfaces": {"interface": all}}).to_string();
    store.running().import(doc.as_bytes(), Operation::Merge).unwrap();
    let path = "/ietf-interfaces:interfaces/interface[name='eth5000']";
    let put_back = serde_json::json!({"interface": [entry(5000)]}).to_string();
    let mut g = c.benchmark_group("delete");
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("ietf_interfaces_entry", |b| {
        b.iter_batched(
            || store.running().edit_json(Operation::Merge, path, Some(&put_back), None).unwrap(),
            |_| store.running().delete(path).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

const LEAFREF_MODULE: &str = r#"module lr { namespace "urn:lr"; prefix lr;
  container c {
    list target { key name; leaf name { type string; } leaf mtu { type uint16; } }
    list user { key id; leaf id { type uint32; }
      leaf ref { type leafref { path "/lr:c/lr:target/lr:name"; } } } } }"#;

fn delete_leafref_target(c: &mut Criterion) {
    const N: usize = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    store.schema_add_texts(&[("lr.yang".into(), LEAFREF_MODULE.into())], &[]).unwrap();
    let targets: Vec<serde_json::Value> =
        (0..N).map(|i| serde_json::json!({ "name": format!("t{i}"), "mtu": 1500 })).collect();
    let users: Vec<serde_json::Value> =
        (0..N).map(|i| serde_json::json!({ "id": i, "ref": format!("t{i}") })).collect();
    let doc = serde_json::json!({ "lr:c": { "target": targets, "user": users } }).to_string();
    store.running().import(doc.as_bytes(), Operation::Merge).unwrap();
    let spare = "/lr:c/target[name='spare']";
    let put_back = serde_json::json!({ "target": [{ "name": "spare", "mtu": 1500 }] }).to_string();
    let mut g = c.benchmark_group("delete");
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("leafref_target_unreferenced", |b| {
        b.iter_batched(
            || store.running().edit_json(Operation::Merge, spare, Some(&put_back), None).unwrap(),
            |_| store.running().delete(spare).unwrap(),
            BatchSize::PerIteration,
        )
    });
    let guarded = format!("/lr:c/target[name='t{}']", N / 2);
    g.bench_function("leafref_target_guarded", |b| {
        b.iter(|| assert!(matches!(store.running().delete(&guarded), Err(canopy::Error::Invalid(_)))))
    });
    g.finish();
}

criterion_group!(benches, create_entry_with_leaf, delete_interface, delete_leafref_target);
criterion_main!(benches);
