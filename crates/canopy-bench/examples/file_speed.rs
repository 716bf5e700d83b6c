//! Load and write speed of the whole-file stores, `snapshot:` and `json:`:
//! imports the `perf` data set (100,000 list entries by default, or the first
//! argument), then times opening the store (reading and checking the whole
//! file), decoding and encoding the file alone, and commits of one leaf (each
//! rewrites the whole file), with `sync=off` and `sync=commit`.
//!
//! `cargo run --release -p canopy-bench --example file_speed [ENTRIES]`

use std::time::Instant;

use canopy::{ListInfo, Operation, Store, Value};
use canopy_bench::core_suite::perf_json;
use canopy_file::json::JsonFormat;
use canopy_file::{snapshot::SnapshotFormat, FileBackend, Format};
use canopy_store::SyncMode;

fn main() -> anyhow::Result<()> {
    let n: usize = std::env::args().nth(1).map_or(Ok(100_000), |a| a.parse())?;
    measure(n, &SnapshotFormat)?;
    measure(n, &JsonFormat)
}

fn measure(n: usize, format: &'static dyn Format) -> anyhow::Result<()> {
    let scheme = format.name();
    println!("## {scheme}");
    let dir = tempfile::tempdir()?;
    let file = dir.path().join(format!("perf.{scheme}"));
    let url = format!("{scheme}:{}?sync=off", file.display());
    {
        let store = Store::open(&url)?;
        store.declare_list("/perf:cont/lst", ListInfo { keys: vec!["k1".into(), "k2".into()], user_ordered: false })?;
        let t = Instant::now();
        store.running().import(perf_json(n).as_bytes(), Operation::Merge)?;
        println!("import of {n} entries: {:.0} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    let size = std::fs::metadata(&file)?.len() as f64 / 1e6;
    println!("file: {size:.2} MB");
    let runs = 10;
    let t = Instant::now();
    for _ in 0..runs {
        drop(Store::open(&url)?);
    }
    let open = t.elapsed().as_secs_f64() / runs as f64;
    println!("open (load) through canopy::Store: {:.1} ms, {:.0} MB/s", open * 1e3, size / open);
    let t = Instant::now();
    for _ in 0..runs {
        drop(FileBackend::open(&file, format, SyncMode::Off)?);
    }
    let open = t.elapsed().as_secs_f64() / runs as f64;
    println!("open and close of the backend alone: {:.1} ms, {:.0} MB/s", open * 1e3, size / open);
    let bytes = std::fs::read(&file)?;
    let t = Instant::now();
    for _ in 0..runs {
        // Leaked: time decoding, not freeing the map.
        std::mem::forget(format.decode(&bytes)?);
    }
    let decode = t.elapsed().as_secs_f64() / runs as f64;
    println!("decode alone: {:.1} ms, {:.0} MB/s", decode * 1e3, size / decode);
    let (map, revision) = format.decode(&bytes)?;
    let t = Instant::now();
    for _ in 0..runs {
        std::hint::black_box(format.encode(&map, revision)?);
    }
    let encode = t.elapsed().as_secs_f64() / runs as f64;
    println!("encode alone: {:.1} ms, {:.0} MB/s", encode * 1e3, size / encode);
    for sync in ["off", "commit"] {
        let store = Store::open(&format!("{scheme}:{}?sync={sync}", file.display()))?;
        let t = Instant::now();
        for i in 0..runs {
            store.running().set("/perf:cont/lst[k1='5'][k2='str5']/l", Value::String(format!("v{i}").into()))?;
        }
        let commit = t.elapsed().as_secs_f64() / runs as f64;
        println!("commit of one leaf, sync={sync}: {:.1} ms, {:.0} MB/s", commit * 1e3, size / commit);
    }
    Ok(())
}
