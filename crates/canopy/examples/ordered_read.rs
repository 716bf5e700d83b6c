//! Reading the `perf` module's user-ordered list `/perf:cont/usr-lst` of N
//! entries from an LMDB store (sync=commit, cache off), as the sysrepo
//! suite's "get user ordered tree" holds it: `get_json` of the list and of
//! its container (streamed), `get` of the container (the tree), and a raw
//! range scan of the list's fragments (the floor); for comparison,
//! `get_json` of the system-ordered `/perf:cont/lst` of N entries in another
//! store. Best of ROUNDS.
//!
//! `cargo run --release -p canopy --example ordered_read [-- N ROUNDS]`

use std::time::Instant;

use canopy::{Operation, ReadOptions, Store};

fn best(rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        f();
        best = best.min(start.elapsed().as_secs_f64());
    }
    best
}

fn show(what: &str, secs: f64, floor: f64) {
    println!("{what:<32} {:>10.1} us  {:>6.1}x floor", secs * 1e6, secs / floor);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}?sync=commit", dir.path().display())).unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let entries: Vec<serde_json::Value> = (0..n).map(|i| serde_json::json!({"k": i, "l": format!("l{i}")})).collect();
    let doc = serde_json::json!({"perf:cont": {"usr-lst": entries}});
    store.running().import(doc.to_string().as_bytes(), Operation::Merge).unwrap();
    let mut prefix = canopy_store::keys::data_prefix(canopy::Datastore::Running);
    prefix.extend_from_slice(&canopy_store::keys::path_key(&"/perf:cont/usr-lst".parse().unwrap()).unwrap());
    let floor = best(rounds, || {
        let snap = store.backend().snapshot().unwrap();
        let mut count = 0;
        snap.scan_prefix(&prefix, false, &mut |_, _| {
            count += 1;
            Ok(true)
        })
        .unwrap();
        assert_eq!(count, n);
    });
    println!("{n} entries, best of {rounds}");
    show("raw scan of the list (floor)", floor, floor);
    for path in ["/perf:cont/usr-lst", "/perf:cont"] {
        let mut out = Vec::new();
        let t = best(rounds, || {
            out.clear();
            store.running().get_json(path, ReadOptions::default(), false, &mut out).unwrap();
        });
        assert!(out.len() > n * 10);
        show(&format!("get_json {path}"), t, floor);
    }
    let t = best(rounds, || {
        let t = store.running().get("/perf:cont", ReadOptions::default()).unwrap();
        assert!(t.lookup(&"/perf:cont/usr-lst".parse().unwrap()).is_some());
    });
    show("get /perf:cont (tree)", t, floor);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}?sync=commit", dir.path().display())).unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let entries: Vec<serde_json::Value> =
        (0..n).map(|i| serde_json::json!({"k1": i, "k2": format!("str{i}"), "l": format!("l{i}")})).collect();
    let doc = serde_json::json!({"perf:cont": {"lst": entries}});
    store.running().import(doc.to_string().as_bytes(), Operation::Merge).unwrap();
    let mut out = Vec::new();
    let t = best(rounds, || {
        out.clear();
        store.running().get_json("/perf:cont/lst", ReadOptions::default(), false, &mut out).unwrap();
    });
    assert!(out.len() > n * 10);
    show("get_json /perf:cont/lst (system)", t, floor);
}
