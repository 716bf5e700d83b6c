//! The cost of one cached read of one leaf (the sysrepo suite's "get tree
//! hash cached"): N `perf` entries in an LMDB store with `cache=on`, then
//! READS `get`s of the middle entry's leaf by its plain path.
//!
//! `cargo run --release -p canopy --example cached_get [-- N READS]`

use std::time::Instant;

use canopy::{Edit, Node, ReadOptions, Store, Value};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let reads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let item = |i: usize| format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l");
    let edits: Vec<Edit> = (0..n)
        .map(|i| Edit::merge(item(i).parse().unwrap(), Node::leaf(Value::String(format!("l{i}").into()))))
        .collect();
    store.running().apply_owned(edits).unwrap();
    let q = item(n / 2);
    let session = store.running();
    let t = Instant::now();
    for _ in 0..reads {
        let tree = session.get(&q, ReadOptions::default()).unwrap();
        assert!(!tree.children.is_empty());
    }
    println!("{n} entries, cache=on: {:.2} us a get", t.elapsed().as_secs_f64() * 1e6 / reads as f64);
}
