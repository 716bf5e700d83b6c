//! The sysrepo suite's "remove all items" and "remove whole subtree" rows on
//! the library directly, in a loop a profiler can watch: a fresh LMDB store
//! at `sync=off` with the `perf` module, N `lst` entries imported (untimed),
//! then one delete of the list (`list`) or of its container (`cont`), timed.
//! `cache=on` as the fourth argument caches the store (read once, untimed,
//! before the delete).
//!
//! `cargo run --release -p canopy --example remove_cost [-- N [ROUNDS [list|cont [cache=on]]]]`

use std::time::{Duration, Instant};

use canopy::{Operation, Store};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let path = match args.get(2).map(String::as_str) {
        Some("cont") => "/perf:cont",
        _ => "/perf:cont/lst",
    };
    let mut doc = String::from("{\"perf:cont\":{\"lst\":[");
    for i in 0..n {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!("{{\"k1\":{i},\"k2\":\"str{i}\",\"l\":\"l{i}\"}}"));
    }
    doc.push_str("]}}");
    let mut ts: Vec<Duration> = Vec::new();
    for _ in 0..rounds {
        let dir = tempfile::tempdir().unwrap();
        let extra = args.get(3).map_or(String::new(), |p| format!("&{p}"));
        let store = Store::open(&format!("lmdb:{}?sync=off{extra}", dir.path().display())).unwrap();
        store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
        store.running().import(doc.as_bytes(), Operation::Merge).unwrap();
        // Read once (the cached store's tree is then in memory).
        assert!(!store.running().get("/perf:cont", Default::default()).unwrap().children.is_empty());
        let t = Instant::now();
        store.running().delete(path).unwrap();
        ts.push(t.elapsed());
        assert_eq!(store.running().count("/perf:cont/lst").unwrap(), 0);
    }
    ts.sort();
    println!(
        "delete {path} of {n} entries: median {:.1} us, min {:.1} us ({rounds} rounds)",
        ts[ts.len() / 2].as_secs_f64() * 1e6,
        ts[0].as_secs_f64() * 1e6
    );
}
