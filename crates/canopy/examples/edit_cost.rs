//! The per-edit cost of issue 11's target, in a loop a profiler can watch:
//! transactions of 1,000 edits creating `perf` entries with their leaf (paths
//! as text, checked against the `perf` module) on the in-memory backend, the
//! list erased between rounds.
//!
//! `cargo run --release -p canopy --example edit_cost [-- ROUNDS]`

use std::time::Instant;

use canopy::{Edit, Node, Store, Value};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let store = Store::open("memory:edit-cost").unwrap();
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        let edits: Vec<Edit> = (0..1000)
            .map(|i| {
                let path = format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l");
                Edit::merge(path.parse().unwrap(), Node::leaf(Value::String(format!("l{i}"))))
            })
            .collect();
        store.running().apply(&edits).unwrap();
        best = best.min(start.elapsed().as_secs_f64());
        store.running().delete("/perf:cont/lst").unwrap();
    }
    println!("best of {rounds}: {:.2} us an edit", best * 1e6 / 1000.0);
}
