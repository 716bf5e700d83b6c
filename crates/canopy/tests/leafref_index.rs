//! The leafref index: removing or changing a leafref target reads only the
//! leafrefs that hold its value (counted in keys the backend reads through
//! `canopy_store::metered`, never timed), and every violation the full read
//! found is still found.

use std::sync::Arc;

use canopy::{Error, Store, Validation, Value};
use canopy_store::memory::MemoryBackend;
use canopy_store::metered::{Metered, Reads};

/// Targets `/m:c/i[name]`; referrers `/m:c/u[id]/ref` (absolute path),
/// `/m:c/u[id]/refs` (a leaf-list), `/m:c/u[id]/loose` (require-instance
/// false) and, inside each target entry, addresses referred to with a
/// predicate (`/m:c/u[id]/addr`, whose interface is `/m:c/u[id]/via`).
const MODULE: &str = r#"module m { yang-version 1.1; namespace "urn:m"; prefix m;
  container c {
    list i { key name; leaf name { type string; }
      list a { key ip; leaf ip { type string; } } }
    list u { key id; leaf id { type uint32; }
      leaf ref { type leafref { path "/m:c/m:i/m:name"; } }
      leaf-list refs { type leafref { path "/m:c/m:i/m:name"; } }
      leaf loose { type leafref { path "/m:c/m:i/m:name"; require-instance false; } }
      leaf via { type leafref { path "/m:c/m:i/m:name"; } }
      leaf addr { type leafref { path "/m:c/m:i[m:name = current()/../via]/m:a/m:ip"; } } } } }"#;

/// A store on a metered in-memory backend: `n` targets `if0…`, and `n`
/// referrers, the k-th pointing at `if{k}`.
fn store(n: usize) -> (Store, Arc<Reads>) {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:metered", canopy::Options::default()).unwrap();
    store.schema_add_texts(&[("m.yang".into(), MODULE.into())], &[]).unwrap();
    let targets: Vec<serde_json::Value> = (0..n)
        .map(|k| serde_json::json!({ "name": format!("if{k}"), "a": [{ "ip": format!("10.0.0.{k}") }] }))
        .collect();
    let users: Vec<serde_json::Value> =
        (0..n).map(|k| serde_json::json!({ "id": k, "ref": format!("if{k}") })).collect();
    let doc = serde_json::json!({ "m:c": { "i": targets, "u": users } }).to_string();
    store.running().import(doc.as_bytes(), canopy::Operation::Merge).unwrap();
    // A target nothing points at.
    store.running().set("/m:c/i[name='spare']/name", Value::String("spare".into())).unwrap();
    (store, reads)
}

fn violations(r: canopy::Result<canopy::Commit>) -> Vec<String> {
    match r {
        Err(Error::Invalid(v)) => v.into_iter().map(|v| v.path).collect(),
        other => panic!("expected violations, got {other:?}"),
    }
}

/// Keys read by deleting `path` in a store of `n` referrers.
fn reads_deleting(n: usize, path: &str) -> u64 {
    let (store, reads) = store(n);
    // The first commit after the schema was added built the index.
    reads.reset();
    store.running().delete(path).unwrap();
    reads.total()
}

#[test]
fn deleting_a_target_reads_the_same_at_any_number_of_referrers() {
    let small = reads_deleting(50, "/m:c/i[name='spare']");
    let large = reads_deleting(1000, "/m:c/i[name='spare']");
    assert_eq!(small, large, "deleting a target nothing points at read {small} keys at 50 referrers, {large} at 1000");
    assert!(large < 40, "deleting one target read {large} keys");
}

#[test]
fn a_referrer_still_guards_its_target_and_only_it_is_read() {
    let mut read = Vec::new();
    for n in [50usize, 1000] {
        let (store, reads) = store(n);
        reads.reset();
        let v = violations(store.running().delete("/m:c/i[name='if7']"));
        read.push(reads.total());
        assert_eq!(v, vec!["/m:c/u[id='7']/ref".to_string()]);
        assert!(store.running().get_item("/m:c/i[name='if7']").unwrap().is_some());
    }
    assert_eq!(read[0], read[1], "keys read at 50 and 1000 referrers");
}

#[test]
fn changed_and_deleted_referrers_leave_the_index() {
    let (store, _) = store(20);
    let s = store.running();
    // The referrer moves: the old target may go, the new one may not.
    s.set("/m:c/u[id='3']/ref", Value::String("if4".into())).unwrap();
    s.delete("/m:c/i[name='if3']").unwrap();
    assert_eq!(violations(s.delete("/m:c/i[name='if4']")), vec!["/m:c/u[id='3']/ref", "/m:c/u[id='4']/ref"]);
    // A referrer deleted, then its target (two transactions), and both in one.
    s.delete("/m:c/u[id='5']").unwrap();
    s.delete("/m:c/i[name='if5']").unwrap();
    s.apply(&[
        canopy::Edit::delete("/m:c/u[id='6']".parse().unwrap()),
        canopy::Edit::delete("/m:c/i[name='if6']".parse().unwrap()),
    ])
    .unwrap();
    // The whole referrer list erased: every target may go.
    s.delete("/m:c/u").unwrap();
    s.delete("/m:c/i[name='if4']").unwrap();
    s.delete("/m:c/i").unwrap();
}

#[test]
fn a_whole_list_of_targets_deleted_names_every_referrer() {
    let (store, _) = store(20);
    let v = violations(store.running().delete("/m:c/i"));
    assert_eq!(v.len(), 20, "{v:?}");
    assert!(v.contains(&"/m:c/u[id='13']/ref".to_string()));
    // With their referrers, in one transaction: nothing points at them.
    store.running().delete("/m:c").unwrap();
    assert!(store.running().get_item("/m:c").unwrap().is_none());
}

#[test]
fn leaf_lists_predicates_and_loose_leafrefs() {
    let (store, _) = store(10);
    let s = store.running();
    for (path, value) in [
        ("/m:c/u[id='100']/refs[.='if1']", "if1"),
        ("/m:c/u[id='100']/refs[.='if2']", "if2"),
        ("/m:c/u[id='100']/loose", "if8"),
        ("/m:c/u[id='100']/via", "if9"),
        ("/m:c/u[id='100']/addr", "10.0.0.9"),
    ] {
        s.set(path, Value::String(value.into())).unwrap();
    }
    assert_eq!(
        violations(s.delete("/m:c/i[name='if2']")),
        vec!["/m:c/u[id='100']/refs[.='if2']", "/m:c/u[id='2']/ref"]
    );
    s.delete("/m:c/u[id='100']/refs[.='if2']").unwrap();
    s.delete("/m:c/u[id='2']").unwrap();
    s.delete("/m:c/i[name='if2']").unwrap();
    // require-instance false: nothing guards if8 but its own referrer.
    s.delete("/m:c/u[id='8']").unwrap();
    s.delete("/m:c/i[name='if8']").unwrap();
    // The predicate's target: the address in if9's entry.
    assert_eq!(violations(s.delete("/m:c/i[name='if9']/a[ip='10.0.0.9']")), vec!["/m:c/u[id='100']/addr"]);
    // The same address in another interface does not satisfy it.
    s.set("/m:c/i[name='if1']/a[ip='10.0.0.9']/ip", Value::String("10.0.0.9".into())).unwrap();
    assert_eq!(violations(s.delete("/m:c/i[name='if9']/a[ip='10.0.0.9']")), vec!["/m:c/u[id='100']/addr"]);
    s.set("/m:c/u[id='100']/via", Value::String("if1".into())).unwrap();
    s.delete("/m:c/i[name='if9']/a[ip='10.0.0.9']").unwrap();
}

#[test]
fn the_index_follows_the_validation_level_and_the_candidate() {
    let (store, _) = store(10);
    store.set_validation(Validation::Structure).unwrap();
    // Unchecked: a referrer to a target that is not there, and a referrer moved.
    store.running().set("/m:c/u[id='50']/ref", Value::String("if1".into())).unwrap();
    store.running().set("/m:c/u[id='1']/ref", Value::String("if2".into())).unwrap();
    store.set_validation(Validation::Full).unwrap();
    // The first commit at full reads the lists (the first to succeed builds
    // the index)...
    assert_eq!(violations(store.running().delete("/m:c/i[name='if1']")), vec!["/m:c/u[id='50']/ref"]);
    store.running().set("/m:c/i[name='spare']/name", Value::String("spare".into())).unwrap();
    // ...the next ones read the index built from what is stored.
    assert_eq!(violations(store.running().delete("/m:c/i[name='if1']")), vec!["/m:c/u[id='50']/ref"]);
    assert_eq!(
        violations(store.running().delete("/m:c/i[name='if2']")),
        vec!["/m:c/u[id='1']/ref", "/m:c/u[id='2']/ref"]
    );
    // The candidate starts with running's index and keeps its own.
    let cand = store.session(canopy::Datastore::Candidate);
    cand.delete("/m:c/u[id='50']").unwrap();
    cand.delete("/m:c/i[name='if1']").unwrap();
    assert_eq!(violations(cand.delete("/m:c/i[name='if3']")), vec!["/m:c/u[id='3']/ref"]);
    assert_eq!(violations(store.running().delete("/m:c/i[name='if1']")), vec!["/m:c/u[id='50']/ref"]);
    store.commit_candidate().unwrap();
    store.running().delete("/m:c/u[id='3']").unwrap();
    store.running().delete("/m:c/i[name='if3']").unwrap();
    assert_eq!(
        violations(store.running().delete("/m:c/i[name='if2']")),
        vec!["/m:c/u[id='1']/ref", "/m:c/u[id='2']/ref"]
    );
    assert!(store.check().unwrap().is_empty());
}
