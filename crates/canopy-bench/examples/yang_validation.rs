//! The cost of YANG validation on the `perf` data set: the same operations on
//! a store with the `perf` module (every commit checked and validated) and on
//! a schemaless store (the list's keys declared), LMDB, `sync=off`.
//!
//! Rows: bulk create of all entries in one transaction (into an empty store),
//! a one-leaf commit and a one-entry create on the full list, cache off and on.
//!
//! `cargo run --release -p canopy-bench --example yang_validation -- [ENTRIES] [RUNS]`

use std::time::{Duration, Instant};

use canopy::{ListInfo, Operation, Store, Value};
use canopy_bench::core_suite::perf_json;
use canopy_bench::timing::fmt;

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

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let repeat: usize = args.next().map_or(Ok(5), |a| a.parse())?;
    let doc = perf_json(n);
    let mut rows: Vec<(String, Duration, Duration)> = Vec::new();

    // Bulk create into an empty store, one transaction; schemaless and YANG
    // runs alternate (round 0 warms up).
    let mut bulk = [Vec::new(), Vec::new()];
    for round in 0..=repeat {
        for (i, yang) in [false, true].into_iter().enumerate() {
            let dir = tempfile::tempdir()?;
            let store = open(&dir, yang, false)?;
            let t = Instant::now();
            store.running().import(doc.as_bytes(), Operation::Merge)?;
            let d = t.elapsed();
            if round > 0 {
                bulk[i].push(d);
            }
        }
    }
    let mean = |v: &[Duration]| v.iter().sum::<Duration>() / v.len().max(1) as u32;
    rows.push((format!("create all {n} entries, one transaction"), mean(&bulk[0]), mean(&bulk[1])));

    // Opening a store: with a schema, its modules are compiled by libyang.
    let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
    for (i, d) in dirs.iter().enumerate() {
        drop(open(d, i == 1, false)?);
    }
    let mut opens = [Vec::new(), Vec::new()];
    for round in 0..=repeat {
        for (i, d) in dirs.iter().enumerate() {
            let t = Instant::now();
            drop(Store::open(&format!("lmdb:{}?sync=off", d.path().display()))?);
            if round > 0 {
                opens[i].push(t.elapsed());
            }
        }
    }
    rows.push(("open the store (empty)".into(), mean(&opens[0]), mean(&opens[1])));

    // Both stores are open at once and measured in alternating rounds, so
    // that the machine's noise falls on both alike.
    for cache in [false, true] {
        let ops = 2000;
        let dirs = [tempfile::tempdir()?, tempfile::tempdir()?];
        let stores = [open(&dirs[0], false, cache)?, open(&dirs[1], true, cache)?];
        for s in &stores {
            s.running().import(doc.as_bytes(), Operation::Merge)?;
        }
        let m = n / 2;
        let path = format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l");
        let mut leaf = [Vec::new(), Vec::new()];
        let mut create = [Vec::new(), Vec::new()];
        for round in 0..=repeat {
            for (i, s) in stores.iter().enumerate() {
                let r = s.running();
                let t = Instant::now();
                for j in 0..ops {
                    r.set(&path, Value::String(format!("v{round}-{j}").into())).expect("set");
                }
                let d = t.elapsed();
                let t2 = Instant::now();
                for j in 0..ops {
                    let k = n + round * ops + j;
                    r.set(&format!("/perf:cont/lst[k1='{k}'][k2='str{k}']/l"), Value::String("x".into())).expect("set");
                }
                let d2 = t2.elapsed();
                if round > 0 {
                    leaf[i].push(d / ops as u32);
                    create[i].push(d2 / ops as u32);
                }
            }
        }
        let c = if cache { "cache on" } else { "cache off" };
        rows.push((format!("set one leaf of a {n}-entry list ({c})"), mean(&leaf[0]), mean(&leaf[1])));
        rows.push((format!("create one entry in a {n}-entry list ({c})"), mean(&create[0]), mean(&create[1])));
    }

    println!("LMDB, sync=off, {n} entries, {repeat} runs per row (mean; one-leaf rows: per commit)\n");
    println!("| operation | schemaless | YANG `perf`, validated | ratio |");
    println!("|---|---|---|---|");
    for (name, plain, yang) in rows {
        println!("| {name} | {} | {} | {:.2}× |", fmt(plain), fmt(yang), yang.as_secs_f64() / plain.as_secs_f64());
    }
    Ok(())
}
