//! The cost of YANG validation on the `perf` data set: the same operations on
//! a store with the `perf` module (every commit checked and validated) and on
//! a schemaless store (the list's keys declared), LMDB, `sync=off`.
//!
//! Rows: bulk create of all entries in one transaction (into an empty store),
//! a one-leaf commit and a one-entry create on the full list, cache off and on.
//!
//! `cargo run --release -p canopy-bench --example yang_validation -- [ENTRIES] [RUNS]`

use std::time::Duration;

use canopy::{ListInfo, Operation, Store, Value};
use canopy_bench::core_suite::perf_json;
use canopy_bench::timing::{fmt, measure, measure_with, Sample};

fn open(dir: &tempfile::TempDir, yang: bool, cache: bool) -> anyhow::Result<Store> {
    let url = format!("lmdb:{}?sync=off{}", dir.path().display(), if cache { "&cache=on" } else { "" });
    let s = Store::open(&url)?;
    if yang {
        s.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[])?;
    } else {
        s.declare_list("/perf:cont/lst", ListInfo { keys: vec!["k1".into(), "k2".into()], user_ordered: false })?;
    }
    Ok(s)
}

fn per_op(s: &Sample, ops: usize) -> Duration {
    s.mean() / ops as u32
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let repeat: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let doc = perf_json(n);
    let mut rows: Vec<(String, Duration, Duration)> = Vec::new();

    // Bulk create into an empty store, one transaction.
    let mut bulk = [Duration::ZERO; 2];
    for (i, yang) in [false, true].into_iter().enumerate() {
        let s = measure_with(
            repeat,
            |_| {
                let dir = tempfile::tempdir().expect("temp dir");
                let store = open(&dir, yang, false).expect("open");
                (dir, store)
            },
            |(_dir, store)| {
                store.running().import(doc.as_bytes(), Operation::Merge).expect("import");
            },
        );
        bulk[i] = s.mean();
    }
    rows.push((format!("create all {n} entries, one transaction"), bulk[0], bulk[1]));

    for cache in [false, true] {
        let ops = 2000;
        let mut leaf = [Duration::ZERO; 2];
        let mut create = [Duration::ZERO; 2];
        for (i, yang) in [false, true].into_iter().enumerate() {
            let dir = tempfile::tempdir()?;
            let store = open(&dir, yang, cache)?;
            store.running().import(doc.as_bytes(), Operation::Merge)?;
            let r = store.running();
            let m = n / 2;
            let path = format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l");
            let s = measure(repeat, |run| {
                for j in 0..ops {
                    r.set(&path, Value::String(format!("v{run}-{j}"))).expect("set");
                }
            });
            leaf[i] = per_op(&s, ops);
            let s = measure(repeat, |run| {
                for j in 0..ops {
                    let k = n + run * ops + j;
                    r.set(&format!("/perf:cont/lst[k1='{k}'][k2='str{k}']/l"), Value::String("x".into())).expect("set");
                }
            });
            create[i] = per_op(&s, ops);
        }
        let c = if cache { "cache on" } else { "cache off" };
        rows.push((format!("set one leaf of a {n}-entry list ({c})"), leaf[0], leaf[1]));
        rows.push((format!("create one entry in a {n}-entry list ({c})"), create[0], create[1]));
    }

    println!("LMDB, sync=off, {n} entries, {repeat} runs per row (mean; one-leaf rows: per commit)\n");
    println!("| operation | schemaless | YANG `perf`, validated | ratio |");
    println!("|---|---|---|---|");
    for (name, plain, yang) in rows {
        println!("| {name} | {} | {} | {:.2}× |", fmt(plain), fmt(yang), yang.as_secs_f64() / plain.as_secs_f64());
    }
    Ok(())
}
