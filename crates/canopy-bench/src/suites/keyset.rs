//! `keyset` (seed 001, Elektra's `benchmark_storage`): N keys under one
//! parent, names `_` + a zero-padded increasing number, 15-character random
//! values, 4 metakeys each (names `m0`…`m3`, 15-character random values).
//!
//! In canopy the parent is the container `/tests:bench` and each key one of
//! its leaves, with the metakeys as the leaf's metadata: the whole keyset is
//! one fragment, written and read as one, as Elektra's storage plugins write
//! and read one file.

use anyhow::{ensure, Result};
use canopy::{Container, Edit, Meta, Node, ReadOptions, Store};

use super::{fragment_key, Rng, ALNUM};
use crate::report::{Cell, Row, Table};
use crate::runner::{dir_bytes, Cx};

const PARENT: &str = "/tests:bench";

/// The keyset: its container and the raw size as the seed computes it (every
/// key name, value, metakey name and meta value with a terminating NUL; key
/// names in full, without the parent key).
pub fn keyset(n: usize) -> (Container, u64) {
    let width = (n.max(2) - 1).to_string().len();
    let mut rng = Rng::new(1);
    let mut c = Container::default();
    let mut raw = 0u64;
    for i in 0..n {
        let name = format!("_{i:0width$}");
        let value = rng.text(ALNUM, 15);
        let mut meta = Meta::new();
        for m in 0..4 {
            let (k, v) = (format!("m{m}"), rng.text(ALNUM, 15));
            raw += (k.len() + 1 + v.len() + 1) as u64;
            meta.insert(k, v);
        }
        raw += (PARENT.len() + 1 + name.len() + 1 + value.len() + 1) as u64;
        c.children.insert(name.into(), Node::Leaf { value: canopy::Value::String(value.into()), meta });
    }
    (c, raw)
}

fn open(url: &str) -> Result<Store> {
    Ok(Store::open(url)?)
}

fn write(store: &Store, c: Container) -> Result<()> {
    store.running().apply_owned(vec![Edit::merge(PARENT.parse()?, Node::Container(c))])?;
    Ok(())
}

fn read(store: &Store, n: usize) -> Result<Container> {
    let t = store.running().get(PARENT, ReadOptions::default())?;
    let got = match t.children.get("tests:bench") {
        Some(Node::Container(c)) => c.children.len(),
        _ => 0,
    };
    ensure!(got == n, "read {got} keys, expected {n}");
    Ok(t)
}

/// Times `read`, the keyset it returns kept until the next run's setup, as
/// in the seed (kdbGet, then ksDel measured on its own): freeing it is the
/// "delete keyset" row, not this one.
fn measure_read(cx: &Cx, row: &str, mut read: impl FnMut() -> Result<Container>) -> Result<crate::timing::Sample> {
    let kept = std::cell::RefCell::new(None);
    cx.measure(
        row,
        |_| {
            kept.borrow_mut().take();
            Ok(())
        },
        |()| {
            *kept.borrow_mut() = Some(read()?);
            Ok(())
        },
    )
}

/// Runs the keyset rows at `size` keys.
///
/// # Errors
/// Store errors; a read that does not return every key.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let (ks, raw_size) = keyset(n);
    let frag = (fragment_key(PARENT), canopy_store::fragment::encode(&ks, None));
    let mut rows = Vec::new();

    // write: a fresh store per run, the keyset built before the clock starts.
    let mut dirs = Vec::new();
    let canopy = cx.measure(
        "write keyset",
        |_| {
            let d = cx.fresh_dir()?;
            dirs.push(d.clone());
            Ok((open(&cx.url(&d))?, ks.clone()))
        },
        |(store, c)| write(&store, c),
    )?;
    let written = dirs.last().cloned().expect("one run");
    for d in &dirs[..dirs.len() - 1] {
        let _ = std::fs::remove_dir_all(d);
    }
    let mut raw_dirs = Vec::new();
    let floor = cx.measure(
        "write keyset (floor)",
        |_| {
            let d = cx.fresh_dir()?;
            raw_dirs.push(d.clone());
            cx.floor(&d)
        },
        |mut r| r.put_one(&frag.0, &frag.1),
    )?;
    let raw_dir = raw_dirs.last().cloned().expect("one run");
    for d in &raw_dirs[..raw_dirs.len() - 1] {
        let _ = std::fs::remove_dir_all(d);
    }
    rows.push(Row::new("write keyset", Cell::Time(canopy)).floor(Cell::Time(floor)));

    // read: open the store and read the keyset, as a fresh kdbGet does.
    let url = cx.url(&written);
    let canopy = measure_read(cx, "read keyset", || read(&open(&url)?, n))?;
    let floor = cx.measure(
        "read keyset (floor)",
        |_| Ok(()),
        |()| {
            let r = cx.floor(&raw_dir)?;
            ensure!(r.get(&frag.0)?.is_some(), "raw keyset missing");
            Ok(())
        },
    )?;
    rows.push(Row::new("read keyset", Cell::Time(canopy)).floor(Cell::Time(floor)));

    let store = open(&url)?;
    let modes = cx.modes(&store)?;
    // The iterated keyset is kept until the next setup: freeing it is the
    // next row, not this one.
    let kept = std::cell::RefCell::new(None);
    let canopy = cx.measure(
        "iterate keyset",
        |_| {
            kept.borrow_mut().take();
            read(&store, n)
        },
        |t| {
            let mut bytes = 0usize;
            if let Some(Node::Container(c)) = t.children.get("tests:bench") {
                for (name, node) in c.children.iter() {
                    if let Node::Leaf { value, meta } = node {
                        bytes += name.len() + value.as_text().len() + meta.values().map(str::len).sum::<usize>();
                    }
                }
            }
            ensure!(bytes > 0 || n == 0, "nothing iterated");
            std::hint::black_box(bytes);
            *kept.borrow_mut() = Some(t);
            Ok(())
        },
    )?;
    drop(kept);
    rows.push(Row::new("iterate keyset", Cell::Time(canopy)));

    let canopy = cx.measure(
        "delete keyset",
        |_| read(&store, n),
        |t| {
            drop(t);
            Ok(())
        },
    )?;
    rows.push(Row::new("delete keyset (free the read keyset)", Cell::Time(canopy)));

    let canopy = measure_read(cx, "re-read keyset", || read(&store, n))?;
    let raw = cx.floor(&raw_dir)?;
    let floor = cx.measure(
        "re-read keyset (floor)",
        |_| Ok(()),
        |()| {
            ensure!(raw.get(&frag.0)?.is_some(), "raw keyset missing");
            Ok(())
        },
    )?;
    rows.push(Row::new("re-read keyset (store open)", Cell::Time(canopy)).floor(Cell::Time(floor)));
    drop(store);

    // Deleting the keyset from the store (beyond the seed: one commit).
    let graves = std::cell::RefCell::new(Vec::new());
    let canopy = cx.measure(
        "delete keyset from the store",
        |_| {
            for d in graves.borrow_mut().drain(..) {
                let _ = std::fs::remove_dir_all(d);
            }
            let d = cx.fresh_dir()?;
            let store = open(&cx.url(&d))?;
            write(&store, ks.clone())?;
            Ok((store, d))
        },
        |(store, d)| {
            store.running().delete(PARENT)?;
            graves.borrow_mut().push(d);
            Ok(())
        },
    )?;
    for d in graves.borrow_mut().drain(..) {
        let _ = std::fs::remove_dir_all(d);
    }
    let floor = cx.measure(
        "delete keyset from the store (floor)",
        |_| {
            let d = cx.fresh_dir()?;
            let mut r = cx.floor(&d)?;
            r.put_one(&frag.0, &frag.1)?;
            Ok(r)
        },
        |mut r| {
            ensure!(r.delete_prefix(&frag.0)? == 1, "raw delete");
            Ok(())
        },
    )?;
    rows.push(Row::new("delete keyset from the store (one commit)", Cell::Time(canopy)).floor(Cell::Time(floor)));

    let on_disk = dir_bytes(&written);
    rows.push(Row::new("bytes on disk", Cell::Bytes(on_disk)).floor(Cell::Bytes(dir_bytes(&raw_dir))));
    rows.push(Row::new("raw size (seed's formula, without parent)", Cell::Bytes(raw_size)));
    Ok(Table {
        backend: cx.label(),
        size,
        modes,
        rows,
        checks: vec![format!(
            "checked: every read returned {n} keys; {} on disk is {:.2}× the raw size",
            crate::report::bytes(on_disk),
            on_disk as f64 / raw_size.max(1) as f64
        )],
    })
}

pub fn notes() -> Vec<String> {
    vec!["keyset: the parent is `/tests:bench`, each key one of its leaves (`_` + zero-padded number, a \
         15-character random value) with 4 metakeys as leaf metadata; the whole keyset is one fragment. \
         \"read\" opens the store and reads the keyset (a fresh kdbGet; the keyset read is freed outside the \
         timing, as the seed's ksDel is); \"delete keyset\" frees the keyset \
         read into memory, as the seed's ksDel does; \"re-read\" reads again through the open store. \
         The floor writes and reads the same fragment bytes as one key of the raw engine."
        .into()]
}
