//! The rpm suite's package transactions in a loop a profiler can watch: N
//! packages (the seed's 2,506 unless given) added, updated and erased in
//! forward order, one transaction each, on LMDB at `sync=off`, printing each
//! phase's time. `add`, `update` or `erase` as the second argument stops
//! after that phase.
//!
//! `cargo run --release -p canopy-bench --example rpm_cost -- [N [add|update|erase]]`

use std::time::Instant;

use canopy_bench::suites::rpm;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(2506), |a| a.parse())?;
    let last = args.next().unwrap_or_else(|| "erase".into());
    let pkgs = rpm::packages(n);
    let dir = tempfile::tempdir()?;
    let store = rpm::open(&format!("lmdb:{}?sync=off", dir.path().display()))?;
    let t = Instant::now();
    for p in &pkgs {
        store.running().apply_built(|| rpm::install_edits(p))?;
    }
    println!("add {n}: {:.3} s", t.elapsed().as_secs_f64());
    if last == "add" {
        return Ok(());
    }
    let t = Instant::now();
    for p in &pkgs {
        store.running().apply_built(|| rpm::update_edits(&store, p))?;
    }
    println!("update {n}: {:.3} s", t.elapsed().as_secs_f64());
    if last == "update" {
        return Ok(());
    }
    let t = Instant::now();
    for p in &pkgs {
        let mut next = p.clone();
        next.release += 1;
        let id = next.id();
        store.running().apply_built(|| rpm::erase_edits(&store, &id))?;
    }
    println!("erase {n}: {:.3} s", t.elapsed().as_secs_f64());
    Ok(())
}
