//! The core suite: the seed's `perf` list (`/perf:cont/lst`, keys `k1` number
//! and `k2` string, leaf `l`) at one size, on one backend, beside that
//! backend's raw engine doing the same puts and gets of the same key and value
//! bytes canopy stores ([`crate::raw`]).

use std::path::Path;

use anyhow::{Context, Result};
use canopy::{Datastore, ListInfo, Operation, ReadOptions, Store, Subtree, Value};
use canopy_core::tree::{Container, Node};
use canopy_store::{fragment, keys};

use crate::timing::{fmt, measure, measure_with, Sample};

/// One row of the report.
pub struct Row {
    pub name: String,
    /// canopy's time per operation.
    pub canopy: Sample,
    /// The raw engine's time per operation, when there is an equivalent.
    pub raw: Option<Sample>,
    /// Operations per timed run (the samples are divided by it).
    pub ops: usize,
}

/// Extra figures that are not times.
pub struct Figures {
    pub cached_bytes_per_leaf: Option<f64>,
    pub store_bytes: u64,
    pub raw_bytes: u64,
}

/// The seed's data set: item i is `k1=i, k2='str'+i, l='l'+i`.
pub fn perf_json(n: usize) -> String {
    perf_list_json("lst", n, |i| format!("{{\"k1\":{i},\"k2\":\"str{i}\",\"l\":\"l{i}\"}}"))
}

/// The seed's user-ordered list: item i is `k=i, l='l'+i`.
pub fn perf_usr_json(n: usize) -> String {
    perf_list_json("usr-lst", n, |i| format!("{{\"k\":{i},\"l\":\"l{i}\"}}"))
}

/// `{"perf:cont":{LIST:[item(0),…]}}`.
fn perf_list_json(list: &str, n: usize, item: impl Fn(usize) -> String) -> String {
    let mut s = String::with_capacity(n * 40 + 32);
    s.push_str(&format!("{{\"perf:cont\":{{\"{list}\":["));
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&item(i));
    }
    s.push_str("]}}");
    s
}

fn entry_path(i: usize) -> String {
    format!("/perf:cont/lst[k1='{i}'][k2='str{i}']")
}

/// The key/value pairs canopy stores for the data set, for the raw floor.
fn raw_pairs(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity(n + 1);
    let cont: canopy_core::Path = "/perf:cont".parse().expect("path");
    let mut k = keys::data_prefix(Datastore::Running);
    k.extend(keys::path_key(&cont).expect("key"));
    out.push((k, fragment::encode(&Container::default(), None)));
    for i in 0..n {
        let p: canopy_core::Path = entry_path(i).parse().expect("path");
        let mut k = keys::data_prefix(Datastore::Running);
        k.extend(keys::path_key(&p).expect("key"));
        out.push((k, entry_fragment(i, &format!("l{i}"))));
    }
    out
}

/// The fragment canopy stores for item `i` with leaf `l`.
fn entry_fragment(i: usize, l: &str) -> Vec<u8> {
    let mut c = Container::default();
    c.children.insert("k1".into(), Node::leaf(Value::Number(i.to_string().into())));
    c.children.insert("k2".into(), Node::leaf(Value::String(format!("str{i}").into())));
    c.children.insert("l".into(), Node::leaf(Value::String(l.into())));
    fragment::encode(&c, None)
}

/// The store URL of `backend` in `dir`.
fn url(backend: &str, dir: &Path, sync: &str, cache: bool) -> String {
    let cache = if cache { "&cache=on" } else { "" };
    match backend {
        "sqlite" => format!("sqlite:{}?sync={sync}{cache}", dir.join("store.db").display()),
        "snapshot" => format!("snapshot:{}?sync={sync}{cache}", dir.join("store.snap").display()),
        "json" => format!("json:{}?sync={sync}{cache}", dir.join("store.json").display()),
        other => format!("{other}:{}?sync={sync}{cache}", dir.display()),
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()).unwrap_or(0)
}

fn new_store(backend: &str, dir: &Path, sync: &str, cache: bool) -> Result<Store> {
    std::fs::create_dir_all(dir)?;
    let store = Store::open(&url(backend, dir, sync, cache))?;
    store.declare_list("/perf:cont/lst", ListInfo::keyed(["k1", "k2"]))?;
    Ok(store)
}

fn per_op(s: Sample, ops: usize) -> Sample {
    Sample { runs: s.runs.into_iter().map(|d| d / ops as u32).collect() }
}

/// A deterministic pseudo-random sequence of item numbers.
fn items(n: usize, count: usize, seed: usize) -> Vec<usize> {
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        })
        .collect()
}

/// The key prefix of all entries of the list.
fn list_prefix() -> Vec<u8> {
    let mut p = keys::data_prefix(Datastore::Running);
    p.extend(keys::path_key(&"/perf:cont".parse().expect("path")).expect("key"));
    keys::push_name(&mut p, "lst");
    p
}

/// Runs the suite at `n` entries on `backend` with `repeat` measured runs per row.
///
/// # Errors
/// Any store or file error.
pub fn run(backend: &str, n: usize, repeat: usize) -> Result<(Vec<Row>, Figures)> {
    let tmp = tempfile::tempdir()?;
    let json = perf_json(n);
    let pairs = raw_pairs(n);
    let mut rows = Vec::new();
    let fresh = {
        let mut k = 0;
        move |tmp: &Path| {
            k += 1;
            tmp.join(format!("fresh{k}"))
        }
    };
    let mut fresh = fresh;

    // Import the whole document into a fresh store, one synced transaction.
    let mut dirs = Vec::new();
    for _ in 0..=repeat {
        dirs.push(fresh(tmp.path()));
    }
    let canopy = measure_with(
        repeat,
        |i| (new_store(backend, &dirs[i], "commit", false).expect("store"), dirs[i].clone()),
        |(store, d)| {
            store.running().import(json.as_bytes(), Operation::Merge).expect("import");
            drop(store);
            let _ = std::fs::remove_dir_all(d);
        },
    );
    let mut raw_dirs = Vec::new();
    for _ in 0..=repeat {
        raw_dirs.push(fresh(tmp.path()));
    }
    let raw = measure_with(
        repeat,
        |i| (crate::raw::open(backend, &raw_dirs[i], true).expect("raw"), raw_dirs[i].clone()),
        |(mut r, d)| {
            r.put_all(&pairs).expect("put");
            drop(r);
            let _ = std::fs::remove_dir_all(d);
        },
    );
    rows.push(Row {
        name: format!("import {n} entries (JSON text, one transaction, sync=commit)"),
        canopy,
        raw: Some(raw),
        ops: 1,
    });

    // The stores the read and write rows use.
    let main_dir = tmp.path().join("main");
    new_store(backend, &main_dir, "commit", false)?.running().import(json.as_bytes(), Operation::Merge)?;
    let raw_dir = tmp.path().join("raw");
    crate::raw::open(backend, &raw_dir, true)?.put_all(&pairs)?;
    let store_bytes = dir_size(&main_dir);
    let raw_bytes = crate::raw::open(backend, &raw_dir, true)?.disk_size();

    let probe = entry_path(n / 2) + "/l";
    let canopy = measure(repeat * 4, |_| {
        let store = Store::open(&url(backend, &main_dir, "commit", false)).expect("open");
        assert!(store.running().get_item(&probe).expect("get").is_some());
    });
    let probe_key = pairs[n / 2 + 1].0.clone();
    let raw = measure(repeat * 4, |_| {
        let r = crate::raw::open(backend, &raw_dir, true).expect("open");
        assert!(r.get(&probe_key).expect("get").is_some());
    });
    rows.push(Row { name: "open store to first read (one leaf)".into(), canopy, raw: Some(raw), ops: 1 });

    const READS: usize = 1000;
    for cache in [false, true] {
        let store = Store::open(&url(backend, &main_dir, "commit", cache))?;
        let session = store.running();
        let mut round = 0;
        let canopy = measure(repeat, |_| {
            round += 1;
            for i in items(n, READS, round) {
                match session.get_item(&entry_path(i)).expect("get") {
                    Some(Subtree::Entry(_)) => {}
                    other => panic!("entry {i} missing: {other:?}"),
                }
            }
        });
        let raw = if cache {
            None
        } else {
            let r = crate::raw::open(backend, &raw_dir, true)?;
            let mut round = 0;
            let s = measure(repeat, |_| {
                round += 1;
                for i in items(n, READS, round) {
                    let v = r.get(&pairs[i + 1].0).expect("get").expect("present");
                    std::hint::black_box(fragment::decode(&v).expect("decode"));
                }
            });
            Some(per_op(s, READS))
        };
        let mode = if cache { "cached" } else { "uncached" };
        rows.push(Row { name: format!("get one list entry ({mode})"), canopy: per_op(canopy, READS), raw, ops: READS });

        let canopy = measure(repeat, |_| {
            let mut out = Vec::with_capacity(json.len() + 1024);
            session.get_json("/", ReadOptions::default(), false, &mut out).expect("get");
            assert!(out.len() >= json.len());
        });
        let raw = if cache {
            None
        } else {
            let r = crate::raw::open(backend, &raw_dir, true)?;
            Some(measure(repeat, |_| {
                std::hint::black_box(r.scan_all().expect("scan"));
            }))
        };
        rows.push(Row { name: format!("get the whole tree as JSON ({mode})"), canopy, raw, ops: 1 });
    }

    // Memory of the cached tree: heap bytes held after loading it.
    let before = crate::timing::heap_bytes();
    let cached = Store::open(&url(backend, &main_dir, "commit", true))?;
    cached.running().get_item(&probe)?;
    let after = crate::timing::heap_bytes();
    let cached_bytes_per_leaf = (after > before).then(|| (after - before) as f64 / (3 * n) as f64);
    drop(cached);

    // Whole-file backends rewrite the store at every commit: fewer commits per run.
    let whole_file = matches!(backend, "snapshot" | "json");
    let set_rows = if whole_file { [("off", 20usize), ("commit", 10)] } else { [("off", 1000), ("commit", 100)] };
    for (sync, ops) in set_rows {
        let store = Store::open(&url(backend, &main_dir, sync, false))?;
        let session = store.running();
        let mut round = 0;
        let canopy = measure(repeat, |_| {
            round += 1;
            for (j, i) in items(n, ops, round).into_iter().enumerate() {
                session
                    .set(&format!("{}/l", entry_path(i)), Value::String(format!("{sync}{round}-{j}").into()))
                    .expect("set");
            }
        });
        drop(store);
        let mut r = crate::raw::open(backend, &raw_dir, sync == "commit")?;
        let mut round = 0;
        let raw = measure(repeat, |_| {
            round += 1;
            // The value canopy stores for the same set: a changed value (an
            // unchanged row would let SQLite skip the write and the flush).
            for (j, i) in items(n, ops, round).into_iter().enumerate() {
                let v = entry_fragment(i, &format!("{sync}{round}-{j}"));
                r.put_one(&pairs[i + 1].0, &v).expect("put");
            }
        });
        drop(r);
        rows.push(Row {
            name: format!("set one leaf (sync={sync})"),
            canopy: per_op(canopy, ops),
            raw: Some(per_op(raw, ops)),
            ops,
        });
    }

    // Delete the whole list in one transaction.
    let mut dirs = Vec::new();
    for _ in 0..=repeat {
        dirs.push(fresh(tmp.path()));
    }
    let canopy = measure_with(
        repeat,
        |i| {
            let store = new_store(backend, &dirs[i], "commit", false).expect("store");
            store.running().import(json.as_bytes(), Operation::Merge).expect("import");
            (store, dirs[i].clone())
        },
        |(store, d)| {
            store.running().delete("/perf:cont/lst").expect("delete");
            drop(store);
            let _ = std::fs::remove_dir_all(d);
        },
    );
    let mut raw_dirs = Vec::new();
    for _ in 0..=repeat {
        raw_dirs.push(fresh(tmp.path()));
    }
    let prefix = list_prefix();
    let raw = measure_with(
        repeat,
        |i| {
            let mut r = crate::raw::open(backend, &raw_dirs[i], true).expect("raw");
            r.put_all(&pairs).expect("put");
            (r, raw_dirs[i].clone())
        },
        |(mut r, d)| {
            assert_eq!(r.delete_prefix(&prefix).expect("delete"), n);
            drop(r);
            let _ = std::fs::remove_dir_all(d);
        },
    );
    rows.push(Row {
        name: format!("delete all {n} entries (one transaction, sync=commit)"),
        canopy,
        raw: Some(raw),
        ops: 1,
    });

    Ok((rows, Figures { cached_bytes_per_leaf, store_bytes, raw_bytes }))
}

/// The report as a markdown table.
pub fn render_md(backend: &str, n: usize, repeat: usize, rows: &[Row], f: &Figures) -> String {
    let raw_name = match backend {
        "lmdb" => "raw LMDB",
        "sqlite" => "raw SQLite",
        "snapshot" | "json" => "raw file write",
        _ => "raw engine",
    };
    let mut s = format!(
        "core suite on `{backend}`, {n} entries, {repeat} runs per row (mean; median in brackets), cache off unless the row says cached\n\n\
         | operation | canopy | {raw_name} | ratio |\n|---|---|---|---|\n"
    );
    for r in rows {
        let (raw, ratio) = match &r.raw {
            Some(raw) => (
                format!("{} ({})", fmt(raw.mean()), fmt(raw.median())),
                format!("{:.2}×", r.canopy.mean().as_secs_f64() / raw.mean().as_secs_f64().max(1e-12)),
            ),
            None => ("—".into(), "—".into()),
        };
        s.push_str(&format!(
            "| {} | {} ({}) | {raw} | {ratio} |\n",
            r.name,
            fmt(r.canopy.mean()),
            fmt(r.canopy.median())
        ));
    }
    s.push_str(&format!(
        "\nstore size on disk: canopy {:.1} MB, {raw_name} with the same pairs {:.1} MB\n",
        f.store_bytes as f64 / 1e6,
        f.raw_bytes as f64 / 1e6
    ));
    if let Some(b) = f.cached_bytes_per_leaf {
        s.push_str(&format!("cached tree: {b:.0} bytes of heap per leaf ({} leaves)\n", 3 * n));
    }
    s
}

/// Entry point for `canopy-bench core [--size N] [--repeat R]`.
///
/// # Errors
/// Bad arguments, store errors.
pub fn main_with_args(args: &[String]) -> Result<()> {
    let mut size = 100_000;
    let mut repeat = 5;
    let mut backends = vec!["lmdb".to_string()];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => size = it.next().context("--size needs a number")?.parse().context("--size")?,
            "--repeat" => repeat = it.next().context("--repeat needs a number")?.parse().context("--repeat")?,
            "--backends" => {
                backends = it.next().context("--backends needs a list")?.split(',').map(String::from).collect()
            }
            other => anyhow::bail!("unknown argument `{other}` (--size N, --repeat R, --backends a,b)"),
        }
    }
    for backend in &backends {
        let (rows, figures) = run(backend, size, repeat)?;
        println!("{}", render_md(backend, size, repeat, &rows, &figures));
    }
    Ok(())
}
