//! `rpm` (seed 004, rpm's database backends): N package records with header
//! blobs and four indexes (name, provides, requires, file names); add all,
//! erase all and update all (reinstall + erase the old header), each in
//! forward, reverse and random order, one transaction per package, with sync
//! off and on; bytes on disk after each; a dependency check that resolves
//! every requirement through the provides index.
//!
//! Layout in canopy: `/rpm:db/package[id]` (leaves name, version, release,
//! arch, header; leaf-lists provides, requires, files: what rpm reads from a
//! header) and one list per index, `/rpm:db/provides-index[key]/pkg[id]` and
//! so on, each index entry listing the packages that carry its key. The
//! application keeps the indexes in the same transaction as the package, as
//! rpm does: erasing reads the package (its header) and each index entry it
//! is in, and deletes the entry when the package was its last one.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Result};
use canopy::{Container, Edit, LeafListEntry, ListInfo, Meta, Node, Store, Subtree};

use super::{container, s, Rng};
use crate::report::{Cell, Row, Table};
use crate::runner::{check_interrupt, dir_bytes, Cx};

/// The largest size the whole-file backends run at: each per-package
/// transaction rewrites the whole store.
pub const WHOLE_FILE_LIMIT: u64 = 300;

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The four indexes: list name and which of a package's lists feeds it.
const INDEXES: [&str; 4] = ["name-index", "provides-index", "requires-index", "files-index"];

/// One package record.
#[derive(Clone, Debug)]
pub struct Pkg {
    pub name: String,
    pub version: String,
    pub release: u32,
    pub header: String,
    pub provides: Vec<String>,
    pub requires: Vec<String>,
    pub files: Vec<String>,
}

impl Pkg {
    pub fn id(&self) -> String {
        format!("{}-{}-{}.x86_64", self.name, self.version, self.release)
    }

    /// The keys this package puts in each index, in [`INDEXES`] order.
    fn index_keys(&self) -> [Vec<String>; 4] {
        [vec![self.name.clone()], self.provides.clone(), self.requires.clone(), self.files.clone()]
    }
}

fn provides_of(j: usize) -> Vec<String> {
    let mut rng = Rng::new(j as u64 * 3 + 1);
    let name = format!("pkg{j}");
    let mut v = vec![name.clone(), format!("{name}(x86-64)")];
    for k in 0..rng.below(11) {
        v.push(format!("lib{name}_{k}.so.1()(64bit)"));
    }
    v
}

/// Header length: log-normal with σ = 1 and a mean of 65,000 bytes (median
/// about 39 KB), clamped to 1 KB–1 MB.
fn header_len(rng: &mut Rng) -> usize {
    let sigma = 1.0f64;
    let mu = 65_000f64.ln() - sigma * sigma / 2.0;
    ((mu + sigma * rng.normal()).exp() as usize).clamp(1024, 1 << 20)
}

/// The N packages: package j provides its name, `name(x86-64)` and 0–10
/// libraries, requires 5–35 capabilities of other packages, and owns 10–190
/// files.
pub fn packages(n: usize) -> Vec<Pkg> {
    let provides: Vec<Vec<String>> = (0..n).map(provides_of).collect();
    (0..n)
        .map(|j| {
            let mut rng = Rng::new(j as u64 * 3 + 2);
            let name = format!("pkg{j}");
            let mut requires: Vec<String> = (0..5 + rng.below(31))
                .map(|_| {
                    let p = &provides[rng.below(n as u64) as usize];
                    p[rng.below(p.len() as u64) as usize].clone()
                })
                .collect();
            requires.sort();
            requires.dedup();
            let files = (0..10 + rng.below(181))
                .map(|k| {
                    if k % 5 == 0 {
                        format!("/usr/lib64/{name}/lib{k}.so.1")
                    } else {
                        format!("/usr/share/{name}/data/file{k}.dat")
                    }
                })
                .collect();
            let len = header_len(&mut rng);
            Pkg {
                version: format!("1.{}.{}", j % 10, j % 7),
                release: 1,
                header: rng.text(B64, len),
                provides: provides[j].clone(),
                requires,
                files,
                name,
            }
        })
        .collect()
}

fn leaf_list(v: &[String]) -> Node {
    Node::LeafList(v.iter().map(|x| LeafListEntry { value: s(x.clone()), meta: Meta::new() }).collect())
}

fn quote(v: &str) -> String {
    if v.contains('\'') {
        format!("\"{v}\"")
    } else {
        format!("'{v}'")
    }
}

fn pkg_path(id: &str) -> String {
    format!("/rpm:db/package[id={}]", quote(id))
}

fn index_entry(index: &str, key: &str) -> String {
    format!("/rpm:db/{index}[key={}]", quote(key))
}

/// The edits that install `p`.
pub fn install_edits(p: &Pkg) -> canopy::Result<Vec<Edit>> {
    let id = p.id();
    let mut c = container(&[
        ("id", s(id.clone())),
        ("name", s(p.name.clone())),
        ("version", s(p.version.clone())),
        ("release", super::num(p.release)),
        ("arch", s("x86_64")),
        ("header", s(p.header.clone())),
    ]);
    c.children.insert("provides".into(), leaf_list(&p.provides));
    c.children.insert("requires".into(), leaf_list(&p.requires));
    c.children.insert("files".into(), leaf_list(&p.files));
    let mut edits = vec![Edit::merge(pkg_path(&id).parse()?, Node::Container(c))];
    for (index, keys) in INDEXES.iter().zip(p.index_keys()) {
        for k in keys {
            let path = format!("{}/pkg[id={}]", index_entry(index, &k), quote(&id));
            edits.push(Edit::merge(path.parse()?, Node::Container(Container::default())));
        }
    }
    Ok(edits)
}

fn text_list(c: &Container, name: &str) -> Vec<String> {
    match c.children.get(name) {
        Some(Node::LeafList(v)) => v.iter().map(|e| e.value.as_text().into_owned()).collect(),
        _ => Vec::new(),
    }
}

/// Reads the installed package `id` (its header) and returns its index keys.
fn read_installed(store: &Store, id: &str) -> canopy::Result<[Vec<String>; 4]> {
    let Some(Subtree::Entry(c)) = store.running().get_item(&pkg_path(id))? else {
        return Err(canopy::Error::Usage(format!("package {id} is not installed")));
    };
    let name = c.children.get("name").and_then(|n| match n {
        Node::Leaf { value, .. } => Some(value.as_text().into_owned()),
        _ => None,
    });
    Ok([name.into_iter().collect(), text_list(&c, "provides"), text_list(&c, "requires"), text_list(&c, "files")])
}

/// Erases `id`: one transaction deleting the package and its index entries
/// (whole index entries where it was their last package). What it reads is
/// read again if another writer commits first (`apply_built`), and the edits
/// move into the transaction uncopied, as for every package transaction here.
fn erase(store: &Store, id: &str) -> Result<()> {
    store.running().apply_built(|| erase_edits(store, id))?;
    Ok(())
}

/// The edits that erase the installed package `id`, read from `store`.
pub fn erase_edits(store: &Store, id: &str) -> canopy::Result<Vec<Edit>> {
    let keys = read_installed(store, id)?;
    let mut edits = vec![Edit::delete(pkg_path(id).parse()?)];
    for (index, keys) in INDEXES.iter().zip(keys) {
        for k in keys {
            let entry = index_entry(index, &k);
            let others = match store.running().get_item(&entry)? {
                Some(Subtree::Entry(c)) => match c.children.get("pkg") {
                    Some(Node::List(l)) => l.len(),
                    _ => 0,
                },
                _ => 0,
            };
            let path = if others <= 1 { entry } else { format!("{entry}/pkg[id={}]", quote(id)) };
            edits.push(Edit::delete(path.parse()?));
        }
    }
    Ok(edits)
}

/// Reinstalls `p` as its next release and erases the old header, in one transaction.
fn update(store: &Store, p: &Pkg) -> Result<()> {
    store.running().apply_built(|| update_edits(store, p))?;
    Ok(())
}

/// The edits that reinstall `p` as its next release and erase the old one.
pub fn update_edits(store: &Store, p: &Pkg) -> canopy::Result<Vec<Edit>> {
    let old = p.id();
    let keys = read_installed(store, &old)?;
    let mut new = p.clone();
    new.release += 1;
    let mut edits = install_edits(&new)?;
    edits.push(Edit::delete(pkg_path(&old).parse()?));
    for (index, keys) in INDEXES.iter().zip(keys) {
        for k in keys {
            edits.push(Edit::delete(format!("{}/pkg[id={}]", index_entry(index, &k), quote(&old)).parse()?));
        }
    }
    Ok(edits)
}

/// Opens the store at `url` with the suite's lists declared.
pub fn open(url: &str) -> Result<Store> {
    let store = Store::open(url)?;
    store.declare_list("/rpm:db/package", ListInfo::keyed(["id"]))?;
    for index in INDEXES {
        store.declare_list(&format!("/rpm:db/{index}"), ListInfo::keyed(["key"]))?;
        store.declare_list(&format!("/rpm:db/{index}/pkg"), ListInfo::keyed(["id"]))?;
    }
    Ok(store)
}

/// Resolves every requirement of every package through the provides index;
/// returns how many were resolved.
fn dep_check(store: &Store, pkgs: &[Pkg]) -> Result<usize> {
    let session = store.running();
    let mut resolved = 0;
    for p in pkgs {
        let Some(Subtree::Entry(c)) = session.get_item(&pkg_path(&p.id()))? else {
            anyhow::bail!("package {} missing", p.id());
        };
        for req in text_list(&c, "requires") {
            ensure!(session.get_item(&index_entry("provides-index", &req))?.is_some(), "{req} unresolved");
            resolved += 1;
        }
    }
    Ok(resolved)
}

// ---- the floor: the same records on the raw engine, with natural keys ----

fn raw_pkg_key(id: &str) -> Vec<u8> {
    let mut k = b"P\0".to_vec();
    k.extend_from_slice(id.as_bytes());
    k
}

fn raw_index_key(index: usize, key: &str, id: Option<&str>) -> Vec<u8> {
    let mut k = vec![b'0' + index as u8, 0];
    k.extend_from_slice(key.as_bytes());
    k.push(0);
    if let Some(id) = id {
        k.extend_from_slice(id.as_bytes());
    }
    k
}

fn raw_puts(p: &Pkg) -> Vec<(Vec<u8>, Vec<u8>)> {
    let id = p.id();
    let mut v = vec![(raw_pkg_key(&id), p.header.as_bytes().to_vec())];
    for (i, keys) in p.index_keys().iter().enumerate() {
        for k in keys {
            v.push((raw_index_key(i, k, Some(&id)), Vec::new()));
        }
    }
    v
}

fn raw_dels(p: &Pkg) -> Vec<Vec<u8>> {
    raw_puts(p).into_iter().map(|(k, _)| k).collect()
}

/// Copies the files of a closed store directory (a prepared database).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        std::fs::copy(e.path(), to.join(e.file_name()))?;
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Erase,
    Update,
}

fn order(n: usize, which: &str) -> Vec<usize> {
    match which {
        "forward" => (0..n).collect(),
        "reverse" => (0..n).rev().collect(),
        _ => Rng::new(4).permutation(n),
    }
}

/// Runs the rows at `size` packages.
///
/// # Errors
/// Store errors; counts that do not add up.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let whole_file = matches!(cx.backend.as_str(), "snapshot" | "json");
    let mut rows = Vec::new();
    // The rows fix their sync mode; the entry's other options apply.
    let modes = |cache: bool| {
        let ignored =
            if cx.spec.options.contains_key("sync") { " (the `sync` of --backends does not apply)" } else { "" };
        format!(
            "one transaction per package; cache={}; sync as each row says{ignored}, floors too",
            if cache { "on" } else { "off" }
        )
    };
    if whole_file && size > WHOLE_FILE_LIMIT {
        let why = format!(
            "not run: a whole-file store rewrites all of it (about {} MB here) in each of the {n} per-package \
             transactions; --size {WHOLE_FILE_LIMIT} or less runs it",
            n as u64 * 65_000 / 1_000_000
        );
        for op in ["add all", "erase all", "update all"] {
            for sync in ["off", "on"] {
                rows.push(Row::new(format!("{op} (forward, sync={sync})"), Cell::Missing(why.clone())));
            }
        }
        rows.push(Row::new("dependency check", Cell::Missing(why)));
        let cache = cx.spec.options.get("cache").is_some_and(|v| v == "on");
        return Ok(Table { backend: cx.label(), size, modes: modes(cache), rows, checks: Vec::new() });
    }
    let pkgs = packages(n);
    let header_bytes: usize = pkgs.iter().map(|p| p.header.len()).sum();
    let index_entries: usize = pkgs.iter().map(|p| p.index_keys().iter().map(Vec::len).sum::<usize>()).sum();

    // A full database to copy for the erase and update rows, canopy's and the floor's.
    let full = cx.fresh_dir()?;
    {
        let store = open(&cx.url_with(&full, &[("sync", "off")]))?;
        for p in &pkgs {
            check_interrupt()?;
            store.running().apply_built(|| install_edits(p))?;
        }
        ensure!(store.running().count("/rpm:db/package")? == n, "the full database does not hold {n} packages");
        store.backend().flush()?;
    }
    let raw_full = cx.fresh_dir()?;
    {
        let mut r = crate::raw::open(&cx.backend, &raw_full, false)?;
        for p in &pkgs {
            r.apply(&raw_puts(p), &[])?;
        }
    }

    let mut checks = Vec::new();
    for op in [Op::Add, Op::Erase, Op::Update] {
        for sync in ["off", "on"] {
            let url_sync = if sync == "on" { "commit" } else { "off" };
            for which in ["forward", "reverse", "random"] {
                let label = match op {
                    Op::Add => "add all",
                    Op::Erase => "erase all",
                    Op::Update => "update all",
                };
                let row = format!("{label} ({which}, sync={sync})");
                let ord = order(n, which);
                let last_dir = std::cell::RefCell::new(PathBuf::new());
                let canopy = cx.measure(
                    &row,
                    |_| {
                        let old = last_dir.replace(PathBuf::new());
                        if !old.as_os_str().is_empty() {
                            let _ = std::fs::remove_dir_all(old);
                        }
                        let d = cx.fresh_dir()?;
                        if op != Op::Add {
                            copy_dir(&full, &d)?;
                        }
                        let store = open(&cx.url_with(&d, &[("sync", url_sync)]))?;
                        *last_dir.borrow_mut() = d;
                        Ok(store)
                    },
                    |store| {
                        for &j in &ord {
                            check_interrupt()?;
                            match op {
                                Op::Add => {
                                    store.running().apply_built(|| install_edits(&pkgs[j]))?;
                                }
                                Op::Erase => erase(&store, &pkgs[j].id())?,
                                Op::Update => update(&store, &pkgs[j])?,
                            }
                        }
                        Ok(())
                    },
                )?;
                let dir = last_dir.into_inner();
                {
                    let store = open(&cx.url_with(&dir, &[("sync", url_sync)]))?;
                    let ran = crate::runner::sync_of(&store);
                    ensure!(ran == "in memory" || ran == format!("sync={url_sync}"), "{row}: the store ran at {ran}");
                    let count = store.running().count("/rpm:db/package")?;
                    let want = if op == Op::Erase { 0 } else { n };
                    ensure!(count == want, "{row}: {count} packages stored, expected {want}");
                    if op == Op::Erase {
                        for index in INDEXES {
                            let left = store.running().count(&format!("/rpm:db/{index}"))?;
                            ensure!(left == 0, "{row}: {left} entries left in {index} after erasing everything");
                        }
                    }
                }
                let bytes = dir_bytes(&dir);
                let _ = std::fs::remove_dir_all(&dir);

                let last_raw = std::cell::RefCell::new(PathBuf::new());
                let floor = cx.measure(
                    &format!("{row} (floor)"),
                    |_| {
                        let old = last_raw.replace(PathBuf::new());
                        if !old.as_os_str().is_empty() {
                            let _ = std::fs::remove_dir_all(old);
                        }
                        let d = cx.fresh_dir()?;
                        if op != Op::Add {
                            copy_dir(&raw_full, &d)?;
                        }
                        let r = crate::raw::open(&cx.backend, &d, sync == "on")?;
                        *last_raw.borrow_mut() = d;
                        Ok(r)
                    },
                    |mut r| {
                        for &j in &ord {
                            check_interrupt()?;
                            let p = &pkgs[j];
                            match op {
                                Op::Add => r.apply(&raw_puts(p), &[])?,
                                Op::Erase => r.apply(&[], &raw_dels(p))?,
                                Op::Update => {
                                    let mut new = p.clone();
                                    new.release += 1;
                                    r.apply(&raw_puts(&new), &raw_dels(p))?
                                }
                            }
                        }
                        Ok(())
                    },
                )?;
                let raw_dir = last_raw.into_inner();
                let raw_bytes = dir_bytes(&raw_dir);
                let _ = std::fs::remove_dir_all(&raw_dir);
                rows.push(Row::new(row.clone(), Cell::Time(canopy)).floor(Cell::Time(floor)));
                rows.push(
                    Row::new(format!("bytes on disk after {label} ({which}, sync={sync})"), Cell::Bytes(bytes))
                        .floor(Cell::Bytes(raw_bytes)),
                );
            }
        }
    }

    // Dependency check on the full database.
    let store = open(&cx.url_with(&full, &[("sync", "off")]))?;
    let cache = store.is_cached();
    let resolved = std::cell::Cell::new(0);
    let canopy = cx.measure(
        "dependency check",
        |_| Ok(()),
        |()| {
            resolved.set(dep_check(&store, &pkgs)?);
            Ok(())
        },
    )?;
    let want: usize = pkgs.iter().map(|p| p.requires.len()).sum();
    ensure!(resolved.get() == want, "dependency check resolved {} of {want}", resolved.get());
    drop(store);
    let raw = crate::raw::open(&cx.backend, &raw_full, false)?;
    let floor = cx.measure(
        "dependency check (floor)",
        |_| Ok(()),
        |()| {
            for p in &pkgs {
                ensure!(raw.get(&raw_pkg_key(&p.id()))?.is_some(), "raw package missing");
                for req in &p.requires {
                    ensure!(raw.has_prefix(&raw_index_key(1, req, None))?, "raw {req} unresolved");
                }
            }
            Ok(())
        },
    )?;
    rows.push(Row::new("dependency check", Cell::Time(canopy)).floor(Cell::Time(floor)));
    checks.push(format!(
        "checked: {n} packages after add and update, 0 packages and no index entries left after erase; {want} \
         requirements resolved. Data: {} of headers (mean {:.1} KB), {index_entries} index entries",
        crate::report::bytes(header_bytes as u64),
        header_bytes as f64 / n.max(1) as f64 / 1e3
    ));
    Ok(Table { backend: cx.label(), size, modes: modes(cache), rows, checks })
}

pub fn notes() -> Vec<String> {
    vec![format!(
        "rpm: package j is `pkg{{j}}` with a header of random base64 text whose length is log-normal (σ = 1, \
         mean 65,000 bytes, median about 39 KB, clamped to 1 KB–1 MB), 2–12 provides, 5–35 requires drawn \
         from other packages' provides, and 10–190 files. Indexes are lists of index entries keyed by name, \
         capability or file path, each holding the ids of its packages; every package transaction keeps them \
         in step. Erase reads the package and each index entry it is in before its transaction (to delete \
         entries it leaves empty); update reads the package, installs release+1 and erases the old one in one \
         transaction. Erase and update start from a copy of a database filled beforehand. The floor keeps the \
         same records on the raw engine under natural keys (`P\\0id` → header, `index\\0key\\0id` → empty) with \
         one transaction per package and the same flush setting. Whole-file backends run at {WHOLE_FILE_LIMIT} \
         packages or fewer."
    )]
}
