//! The per-edit cost of issue 11's target, in a loop a profiler can watch:
//! transactions of N edits (1,000 unless given) creating `perf` entries with
//! their leaf (paths as text, checked against the `perf` module), the list
//! erased between rounds. On the in-memory backend unless `lmdb` is given (a
//! fresh LMDB store at `sync=off`) or a store URL (a server backend's, with
//! its cargo feature); `usr` creates entries of the user-ordered list
//! `usr-lst` instead of `lst`.
//!
//! `cargo run --release -p canopy --example edit_cost [-- ROUNDS [N [memory|lmdb|URL] [lst|usr]]]`

use std::time::Instant;

use canopy::{Edit, Node, Store, Value};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let backend = args.get(2).map_or("memory", String::as_str);
    let usr = args.get(3).is_some_and(|a| a == "usr");
    let dir = tempfile::tempdir().unwrap();
    let store = match backend {
        "lmdb" => Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap(),
        "memory" => Store::open("memory:edit-cost").unwrap(),
        url => Store::open(url).unwrap(),
    };
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
    let list = if usr { "/perf:cont/usr-lst" } else { "/perf:cont/lst" };
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        let edits: Vec<Edit> = (0..n)
            .map(|i| {
                let path = match usr {
                    true => format!("/perf:cont/usr-lst[k='{i}']/l"),
                    false => format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l"),
                };
                Edit::merge(path.parse().unwrap(), Node::leaf(Value::String(format!("l{i}").into())))
            })
            .collect();
        store.running().apply(&edits).unwrap();
        best = best.min(start.elapsed().as_secs_f64());
        store.running().delete(list).unwrap();
    }
    println!("best of {rounds}: {:.2} us an edit", best * 1e6 / n as f64);
}
