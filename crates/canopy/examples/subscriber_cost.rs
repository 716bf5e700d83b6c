//! What change subscribers that do nothing add to a commit: one-leaf commits
//! on a 100,000-entry list and one commit creating all 100,000 entries, with
//! 0 and with 12 subscribers on the list's module, alternating so that both
//! see the same machine. LMDB, sync=off.
//!
//! `cargo run --release -p canopy --example subscriber_cost [-- N [cache]]`

use std::time::Instant;

use canopy::{Datastore, Edit, Node, Store, Subscriber, Value};

struct Idle;
impl Subscriber for Idle {}

fn populate(store: &Store, n: usize) {
    let mut doc = String::from(r#"{"perf:cont": {"lst": ["#);
    for i in 0..n {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&format!(r#"{{"k1": {i}, "k2": "str{i}", "l": "l{i}"}}"#));
    }
    doc.push_str("]}}");
    store.declare_list("/perf:cont/lst", canopy::ListInfo::keyed(["k1", "k2"])).unwrap();
    store.running().import(doc.as_bytes(), canopy::Operation::Merge).unwrap();
}

fn subscribe(store: &Store, n: usize) -> Vec<canopy::Subscription> {
    (0..n).map(|_| store.subscribe(Datastore::Running, "/perf:cont", 0, Idle).unwrap()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let cache = if args.iter().any(|a| a == "cache") { "&cache=on" } else { "" };
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}/one?sync=off{cache}", dir.path().display());
    let store = Store::open(&url).unwrap();
    populate(&store, n);
    let m = n / 2;
    let path = format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l");
    let running = store.running();
    // Short alternating rounds; the median of each side resists the noise
    // of a shared machine.
    let rounds = 60;
    let per = 200;
    let (mut none, mut twelve) = (Vec::new(), Vec::new());
    let mut v = 0u64;
    let subs = subscribe(&store, 12);
    let mut held = Some(subs);
    for r in 0..rounds {
        for with in [false, true] {
            match (with, held.is_some()) {
                (true, false) => held = Some(subscribe(&store, 12)),
                (false, true) => held = None,
                _ => {}
            }
            let t = Instant::now();
            for _ in 0..per {
                v += 1;
                running.set(&path, Value::String(format!("v{v}").into())).unwrap();
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / per as f64;
            if r > 0 {
                if with {
                    twelve.push(us)
                } else {
                    none.push(us)
                }
            }
        }
    }
    let (none, twelve) = (median(none), median(twelve));
    println!(
        "one-leaf commit, {n} entries{}: 0 subscribers {none:.1} µs, 12 subscribers {twelve:.1} µs ({:+.1}%), median of {} rounds of {per}",
        if cache.is_empty() { "" } else { ", cache=on" },
        (twelve / none - 1.0) * 100.0,
        rounds - 1
    );

    if args.iter().any(|a| a == "point") {
        return;
    }
    // One commit creating every entry, on an empty datastore each time.
    let edits: Vec<Edit> = (0..n)
        .map(|i| {
            Edit::merge(
                format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l").parse().unwrap(),
                Node::leaf(Value::String(format!("l{i}").into())),
            )
        })
        .collect();
    let (mut none, mut twelve) = (0f64, 0f64);
    let rounds = 4;
    for r in 0..rounds {
        for subs in [0, 12] {
            let url = format!("lmdb:{}/bulk{r}-{subs}?sync=off{cache}", dir.path().display());
            let s = Store::open(&url).unwrap();
            s.declare_list("/perf:cont/lst", canopy::ListInfo::keyed(["k1", "k2"])).unwrap();
            let _s = subscribe(&s, subs);
            let t = Instant::now();
            s.running().apply(&edits).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if r > 0 {
                if subs == 0 {
                    none += ms
                } else {
                    twelve += ms
                }
            }
        }
    }
    let k = (rounds - 1) as f64;
    println!(
        "create all {n} entries in one commit: 0 subscribers {:.1} ms, 12 subscribers {:.1} ms ({:+.1}%)",
        none / k,
        twelve / k,
        (twelve / none - 1.0) * 100.0
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
