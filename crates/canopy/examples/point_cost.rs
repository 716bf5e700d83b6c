//! The cost of point operations on one store, in a loop a profiler (or a
//! server's command log) can watch: N `perf` entries written once, then
//! ROUNDS rounds of a read of one entry's leaf and a write of it. Prints the
//! median of each. On the in-memory backend unless a store URL is given
//! (`?cache=on` for the cached mode).
//!
//! `cargo run --release -p canopy --example point_cost [-- ROUNDS [N [URL]]]`

use std::time::Instant;

use canopy::{Edit, Node, ReadOptions, Store, Value};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let url = args.get(2).map_or("memory:point-cost", String::as_str);
    let store = Store::open(url).unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let edits: Vec<Edit> = (0..n)
        .map(|i| {
            let path = format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l");
            Edit::merge(path.parse().unwrap(), Node::leaf(Value::String(format!("l{i}").into())))
        })
        .collect();
    store.running().apply(&edits).unwrap();
    let m = n / 2;
    let leaf = format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l");
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let t = Instant::now();
        let got = store.running().get(&leaf, ReadOptions::default()).unwrap();
        reads.push(t.elapsed().as_secs_f64());
        assert!(!got.children.is_empty());
        let t = Instant::now();
        store.running().set(&leaf, Value::String(format!("v{i}").into())).unwrap();
        writes.push(t.elapsed().as_secs_f64());
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 1e6
    };
    println!("read {:.1} us, write {:.1} us (medians of {rounds})", median(&mut reads), median(&mut writes));
}
