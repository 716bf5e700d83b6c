//! The cost of one uncached point read (`Session::get_item` of a list entry
//! by its keys) on the `perf` data set, LMDB, cache off: the path of the
//! sysrepo suite's "get tree hash" row and the objects suite's random reads.
//!
//! `cargo run --release -p canopy-bench --example point_read -- [ENTRIES] [READS]`

use std::time::Instant;

use canopy::{ListInfo, Operation, Store};
use canopy_bench::core_suite::perf_json;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let reads: usize = args.next().map_or(Ok(100_000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let url = format!("lmdb:{}?sync=off", dir.path().display());
    {
        let s = Store::open(&url)?;
        s.declare_list("/perf:cont/lst", ListInfo::keyed(["k1", "k2"]))?;
        s.running().import(perf_json(n).as_bytes(), Operation::Merge)?;
    }
    let store = Store::open(&url)?;
    let session = store.running();
    let paths: Vec<String> = (0..reads)
        .map(|i| {
            let k = (i * 7919) % n;
            format!("/perf:cont/lst[k1='{k}'][k2='str{k}']")
        })
        .collect();
    for round in 0..3 {
        let t = Instant::now();
        for p in &paths {
            anyhow::ensure!(session.get_item(p)?.is_some(), "{p} missing");
        }
        let d = t.elapsed();
        println!(
            "round {round}: {reads} reads of {n} entries: {:.2} µs per read",
            d.as_secs_f64() * 1e6 / reads as f64
        );
    }
    Ok(())
}
