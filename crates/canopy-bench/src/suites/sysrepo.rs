//! `sysrepo` (seed 000): the 22 rows of sysrepo's datastore plugin test on the
//! `perf` module (see `docs/benchmarks.md` for what each row times).
//!
//! Each row is one function from [`Env`] to its figures. Every store holds the
//! `perf` YANG module, so every commit is validated against it, as the seed's
//! sysrepo validated. The oper rows push state through an operational session
//! (connection-scoped, in memory, as sysrepo's push data), read it through a
//! provider, and notify change subscribers on other connections.

use std::cell::RefCell;
use std::path::PathBuf;

use anyhow::{ensure, Result};
use canopy::{Container, Datastore, Edit, Insert, List, ListInfo, Node, Operation, ReadOptions, Store};
use canopy_core::tree::NodeRef;
use canopy_store::SyncMode;

use super::{container, fragment_key, s};
use crate::raw::RawStore;
use crate::report::{Cell, Row, Table};
use crate::runner::Cx;

/// The figures of one row.
pub struct Measured {
    pub canopy: Cell,
    pub floor: Option<Cell>,
}

type RowFn = fn(&mut Env) -> Result<Measured>;

/// The rows in the seed's order.
pub const ROWS: [(&str, RowFn); 22] = [
    ("get tree", get_tree),
    ("get item", get_item),
    ("get tree hash", get_tree_hash),
    ("get tree hash cached", get_tree_hash_cached),
    ("get user ordered tree", get_user_ordered_tree),
    ("get oper tree", get_oper_tree),
    ("create batch", create_batch),
    ("create user ordered items", create_user_ordered_items),
    ("create all items", create_all_items),
    ("create all items oper", create_all_items_oper),
    ("many oper change_subs", many_oper_change_subs),
    ("remove all items", remove_all_items),
    ("remove all items cached", remove_all_items_cached),
    ("remove whole subtree", remove_whole_subtree),
    ("remove whole subtree cached", remove_whole_subtree_cached),
    ("create an item", create_an_item),
    ("create an item cached", create_an_item_cached),
    ("create an item oper", create_an_item_oper),
    ("modify an item", modify_an_item),
    ("modify an item cached", modify_an_item_cached),
    ("remove an item", remove_an_item),
    ("remove an item cached", remove_an_item_cached),
];

/// What every row works on.
pub struct Env<'a> {
    pub cx: &'a Cx,
    pub n: usize,
    /// The N `lst` items as an RFC 7951 document.
    json: String,
    /// Running with N `lst` items, not cached.
    main: Store,
    /// Running with N `lst` items, cached (its own directory: one process
    /// opens a store once).
    cached: Store,
    /// Running with N `usr-lst` items.
    usr: Store,
    /// The floor: the pairs canopy stores for the N items, in a raw store.
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    usr_pairs: Vec<(Vec<u8>, Vec<u8>)>,
    raw: Box<dyn RawStore>,
}

fn mid(n: usize) -> usize {
    n / 2
}

fn and_xpath(n: usize) -> String {
    let m = mid(n);
    format!("/perf:cont/lst[k1='{m}' and k2='str{m}']/l")
}

fn hash_path(n: usize) -> String {
    let m = mid(n);
    format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l")
}

/// A store with the `perf` YANG module: keys, ordering and types from the
/// schema, every commit validated.
fn open_store(url: &str) -> Result<Store> {
    let store = Store::open(url)?;
    store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[])?;
    Ok(store)
}

/// The N `lst` items as a tree from the root, as an application builds them.
fn lst_tree(n: usize) -> Result<Container> {
    let mut list = List::new(ListInfo::keyed(["k1", "k2"]));
    for i in 0..n {
        list.insert(
            container(&[("k1", super::num(i)), ("k2", s(format!("str{i}"))), ("l", s(format!("l{i}")))]),
            &Insert::Last,
        )?;
    }
    let mut cont = Container::default();
    cont.children.insert("lst".into(), Node::List(Box::new(list)));
    let mut root = Container::default();
    root.children.insert("perf:cont".into(), Node::Container(cont));
    Ok(root)
}

/// One edit per item: path and value, as the seed's "set items one by one".
fn item_edits(n: usize, usr: bool) -> Result<Vec<Edit>> {
    let mut edits = Vec::with_capacity(n);
    for i in 0..n {
        let path = if usr {
            format!("/perf:cont/usr-lst[k='{i}']/l")
        } else {
            format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l")
        };
        edits.push(Edit::merge(path.parse()?, Node::leaf(s(format!("l{i}")))));
    }
    Ok(edits)
}

/// A change subscriber that does nothing (the seed's 12 idle subscribers).
struct Idle;
impl canopy::Subscriber for Idle {}

fn lst_count(store: &Store) -> Result<usize> {
    Ok(store.running().count("/perf:cont/lst")?)
}

impl Env<'_> {
    fn fresh_store(&self, cache: bool) -> Result<(Store, PathBuf)> {
        let dir = self.cx.fresh_dir()?;
        let url = if cache { self.cx.url_with(&dir, &[("cache", "on")]) } else { self.cx.url(&dir) };
        let store = open_store(&url)?;
        Ok((store, dir))
    }

    /// A fresh store holding the N items (warmed when cached).
    fn filled_store(&self, cache: bool) -> Result<(Store, PathBuf)> {
        let (store, dir) = self.fresh_store(cache)?;
        store.running().import(self.json.as_bytes(), Operation::Merge)?;
        if cache {
            store.running().get_item(&hash_path(self.n))?;
        }
        Ok((store, dir))
    }

    fn mid_pair(&self) -> (Vec<u8>, Vec<u8>) {
        self.pairs[mid(self.n) + 1].clone()
    }
}

/// Stores and directories whose timed run is over, dropped and removed by
/// the next setup (outside the timing).
struct Graveyard(RefCell<Vec<Grave>>);

/// A store or raw store to close, and its directory to remove.
type Grave = (Option<Store>, Option<Box<dyn RawStore>>, PathBuf);

impl Graveyard {
    fn new() -> Graveyard {
        Graveyard(RefCell::new(Vec::new()))
    }
    fn bury_store(&self, s: Store, d: PathBuf) {
        self.0.borrow_mut().push((Some(s), None, d));
    }
    fn bury_raw(&self, r: Box<dyn RawStore>, d: PathBuf) {
        self.0.borrow_mut().push((None, Some(r), d));
    }
    /// The last buried store, for checks.
    fn last_store(&self) -> Option<std::cell::Ref<'_, Store>> {
        std::cell::Ref::filter_map(self.0.borrow(), |v| v.last().and_then(|(s, _, _)| s.as_ref())).ok()
    }
    fn clear(&self) {
        for (s, r, d) in self.0.borrow_mut().drain(..) {
            drop(s);
            drop(r);
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

impl Drop for Graveyard {
    fn drop(&mut self) {
        self.clear();
    }
}

// ---- reads ----

fn get_tree(e: &mut Env) -> Result<Measured> {
    let q = and_xpath(e.n);
    let main = &e.main;
    let canopy = e.cx.measure(
        "get tree",
        |_| Ok(()),
        |()| {
            let t = main.running().get(&q, ReadOptions::default())?;
            ensure!(!t.children.is_empty(), "{q} selected nothing");
            Ok(())
        },
    )?;
    let floor = floor_get(e, "get tree")?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn get_item(e: &mut Env) -> Result<Measured> {
    let q = and_xpath(e.n);
    let want = format!("l{}", mid(e.n));
    let target: canopy::Path = hash_path(e.n).parse()?;
    let main = &e.main;
    let canopy = e.cx.measure(
        "get item",
        |_| Ok(()),
        |()| {
            let t = main.running().get(&q, ReadOptions::default())?;
            match t.lookup(&target) {
                Some(NodeRef::Leaf(v, _)) if v.as_text() == want => Ok(()),
                other => anyhow::bail!("{q}: expected the leaf {want}, got {other:?}"),
            }
        },
    )?;
    let floor = floor_get(e, "get item")?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn get_hash(e: &mut Env, cached: bool, row: &str) -> Result<Measured> {
    let q = hash_path(e.n);
    let store = if cached { &e.cached } else { &e.main };
    let canopy = e.cx.measure(
        row,
        |_| Ok(()),
        |()| {
            let t = store.running().get(&q, ReadOptions::default())?;
            ensure!(!t.children.is_empty(), "{q} selected nothing");
            Ok(())
        },
    )?;
    let floor = floor_get(e, row)?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn get_tree_hash(e: &mut Env) -> Result<Measured> {
    get_hash(e, false, "get tree hash")
}

fn get_tree_hash_cached(e: &mut Env) -> Result<Measured> {
    get_hash(e, true, "get tree hash cached")
}

/// The floor of a point read: one key lookup in the raw engine.
fn floor_get(e: &mut Env, row: &str) -> Result<Cell> {
    let (k, _) = e.mid_pair();
    let raw = &e.raw;
    let s = e.cx.measure(
        &format!("{row} (floor)"),
        |_| Ok(()),
        |()| {
            ensure!(raw.get(&k)?.is_some(), "raw key missing");
            Ok(())
        },
    )?;
    Ok(Cell::Time(s))
}

fn get_user_ordered_tree(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    let usr = &e.usr;
    let canopy = e.cx.measure(
        "get user ordered tree",
        |_| Ok(()),
        |()| {
            let t = usr.running().get("/perf:cont", ReadOptions::default())?;
            match t.lookup(&"/perf:cont/usr-lst".parse()?) {
                Some(NodeRef::List(l)) if l.len() == n => Ok(()),
                _ => anyhow::bail!("usr-lst does not hold {n} entries"),
            }
        },
    )?;
    let raw_dir = e.cx.fresh_dir()?;
    let mut raw = e.cx.floor(&raw_dir)?;
    raw.put_all(&e.usr_pairs)?;
    let mut prefix = fragment_key("/perf:cont");
    canopy_store::keys::push_name(&mut prefix, "usr-lst");
    let prefix = &prefix;
    let floor = e.cx.measure(
        "get user ordered tree (floor)",
        |_| Ok(()),
        |()| {
            ensure!(raw.scan_prefix(prefix)? > 0, "raw scan found nothing");
            Ok(())
        },
    )?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(Cell::Time(floor)) })
}

fn get_oper_tree(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    // An application provides the N items on request; running is empty.
    let (store, dir) = e.fresh_store(false)?;
    let _provider = store.provide("/perf:cont", move |_| lst_tree(n).map_err(|e| e.to_string()))?;
    let canopy = e.cx.measure(
        "get oper tree",
        |_| Ok(()),
        |()| {
            let t = store.session(Datastore::Operational).get("/perf:cont", ReadOptions::default())?;
            match t.lookup(&"/perf:cont/lst".parse()?) {
                Some(NodeRef::List(l)) if l.len() == n => Ok(()),
                _ => anyhow::bail!("the operational lst does not hold {n} entries"),
            }
        },
    )?;
    drop(_provider);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    // The floor: one scan of the N items' records.
    let mut prefix = fragment_key("/perf:cont");
    canopy_store::keys::push_name(&mut prefix, "lst");
    let raw = &e.raw;
    let floor = e.cx.measure(
        "get oper tree (floor)",
        |_| Ok(()),
        |()| {
            ensure!(raw.scan_prefix(&prefix)? >= n, "raw scan found too little");
            Ok(())
        },
    )?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(Cell::Time(floor)) })
}

// ---- creating many ----

fn create_batch(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    let graves = Graveyard::new();
    let canopy = e.cx.measure(
        "create batch",
        |_| {
            graves.clear();
            let dir = e.cx.fresh_dir()?;
            Ok((open_store(&e.cx.url(&dir))?, dir))
        },
        |(store, dir)| {
            let mut root = lst_tree(n)?;
            let cont = root.children.remove("perf:cont").expect("built above");
            store.running().apply(&[Edit::merge("/perf:cont".parse()?, cont)])?;
            graves.bury_store(store, dir);
            Ok(())
        },
    )?;
    check_created(&graves, n, "create batch")?;
    drop(graves);
    let flush = e.cx.sync() == SyncMode::Commit;
    let floor = floor_put_all(e, "create batch", false, flush)?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn check_created(graves: &Graveyard, n: usize, row: &str) -> Result<()> {
    let store = graves.last_store().ok_or_else(|| anyhow::anyhow!("{row}: no store"))?;
    let got = lst_count(&store)? + store.running().count("/perf:cont/usr-lst")?;
    ensure!(got == n, "{row}: {got} entries stored, expected {n}");
    Ok(())
}

/// The floor of a create row: the N items' pairs put in one transaction of a
/// fresh raw store, flushed when `flush`.
fn floor_put_all(e: &mut Env, row: &str, usr: bool, flush: bool) -> Result<Cell> {
    let graves = Graveyard::new();
    let pairs = if usr { e.usr_pairs.clone() } else { e.pairs.clone() };
    let s = e.cx.measure(
        &format!("{row} (floor)"),
        |_| {
            graves.clear();
            let dir = e.cx.fresh_dir()?;
            Ok((crate::raw::open(&e.cx.backend, &dir, flush)?, dir))
        },
        |(mut r, dir)| {
            r.put_all(&pairs)?;
            graves.bury_raw(r, dir);
            Ok(())
        },
    )?;
    Ok(Cell::Time(s))
}

fn create_one_by_one(e: &mut Env, row: &str, usr: bool) -> Result<Measured> {
    let n = e.n;
    let graves = Graveyard::new();
    let canopy = e.cx.measure(
        row,
        |_| {
            graves.clear();
            let dir = e.cx.fresh_dir()?;
            Ok((open_store(&e.cx.url(&dir))?, dir))
        },
        |(store, dir)| {
            // One set of path + value per item, then one commit.
            store.running().apply_owned(item_edits(n, usr)?)?;
            graves.bury_store(store, dir);
            Ok(())
        },
    )?;
    check_created(&graves, n, row)?;
    drop(graves);
    let flush = e.cx.sync() == SyncMode::Commit;
    let floor = floor_put_all(e, row, usr, flush)?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn create_user_ordered_items(e: &mut Env) -> Result<Measured> {
    create_one_by_one(e, "create user ordered items", true)
}

fn create_all_items(e: &mut Env) -> Result<Measured> {
    create_one_by_one(e, "create all items", false)
}

/// Operational state pushed by this connection: how many `lst` entries.
fn pushed_count(store: &Store) -> Result<usize> {
    Ok(store.session(Datastore::Operational).count("/perf:cont/lst")?)
}

fn create_all_items_oper(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    let (store, dir) = e.fresh_store(false)?;
    let canopy = e.cx.measure(
        "create all items oper",
        |_| {
            store.clear_pushed()?;
            Ok(())
        },
        |()| {
            store.session(Datastore::Operational).apply_owned(item_edits(n, false)?)?;
            Ok(())
        },
    )?;
    ensure!(pushed_count(&store)? == n, "create all items oper: operational does not hold {n} entries");
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    let flush = pushes_flush(e.cx);
    let floor = floor_put_all(e, "create all items oper", false, flush)?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(floor) })
}

fn many_oper_change_subs(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    let (store, dir) = e.fresh_store(false)?;
    // 12 other connections, each subscribed to changes of the module.
    let url = e.cx.url(&dir);
    let mut others = Vec::new();
    for _ in 0..12 {
        let c = Store::open(&url)?;
        let sub = c.subscribe(Datastore::Operational, "/perf:cont", 0, Idle)?;
        others.push((c, sub));
    }
    let edits = item_edits(n, false)?;
    let delete = [Edit::delete("/perf:cont/lst".parse()?)];
    let canopy = e.cx.measure(
        "many oper change_subs",
        |_| {
            store.clear_pushed()?;
            Ok(())
        },
        |()| {
            let oper = store.session(Datastore::Operational);
            for _ in 0..10 {
                oper.apply(&edits)?;
                oper.apply(&delete)?;
            }
            Ok(())
        },
    )?;
    ensure!(pushed_count(&store)? == 0, "many oper change_subs: entries left");
    drop(others);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    Ok(Measured { canopy: Cell::Time(canopy), floor: None })
}

// ---- removing many ----

fn remove(e: &mut Env, row: &str, path: &str, cached: bool) -> Result<Measured> {
    let graves = Graveyard::new();
    let n = e.n;
    let canopy = e.cx.measure(
        row,
        |_| {
            graves.clear();
            let (store, dir) = e.filled_store(cached)?;
            ensure!(lst_count(&store)? == n, "setup: expected {n} entries");
            Ok((store, dir))
        },
        |(store, dir)| {
            store.running().delete(path)?;
            graves.bury_store(store, dir);
            Ok(())
        },
    )?;
    {
        let store = graves.last_store().ok_or_else(|| anyhow::anyhow!("{row}: no store"))?;
        ensure!(lst_count(&store)? == 0, "{row}: entries left after the delete");
    }
    graves.clear();
    let pairs = e.pairs.clone();
    let mut prefix = fragment_key("/perf:cont");
    if path != "/perf:cont" {
        canopy_store::keys::push_name(&mut prefix, "lst");
    }
    let floor = e.cx.measure(
        &format!("{row} (floor)"),
        |_| {
            graves.clear();
            let dir = e.cx.fresh_dir()?;
            let mut r = e.cx.floor(&dir)?;
            r.put_all(&pairs)?;
            Ok((r, dir))
        },
        |(mut r, dir)| {
            let removed = r.delete_prefix(&prefix)?;
            ensure!(removed >= n, "raw delete removed {removed}");
            graves.bury_raw(r, dir);
            Ok(())
        },
    )?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(Cell::Time(floor)) })
}

fn remove_all_items(e: &mut Env) -> Result<Measured> {
    remove(e, "remove all items", "/perf:cont/lst", false)
}

fn remove_all_items_cached(e: &mut Env) -> Result<Measured> {
    remove(e, "remove all items cached", "/perf:cont/lst", true)
}

fn remove_whole_subtree(e: &mut Env) -> Result<Measured> {
    remove(e, "remove whole subtree", "/perf:cont", false)
}

fn remove_whole_subtree_cached(e: &mut Env) -> Result<Measured> {
    remove(e, "remove whole subtree cached", "/perf:cont", true)
}

// ---- one item ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum One {
    Create,
    Modify,
    Remove,
}

fn one_item(e: &mut Env, row: &str, what: One, cached: bool) -> Result<Measured> {
    let path = hash_path(e.n);
    let m = mid(e.n);
    let store = if cached { &e.cached } else { &e.main };
    let canopy = e.cx.measure(
        row,
        |i| {
            let session = store.running();
            match what {
                One::Create => {
                    session.edit_json(Operation::Remove, &path, None, None)?;
                }
                One::Remove => {
                    session.set(&path, s(format!("l{m}")))?;
                }
                One::Modify => {}
            }
            Ok(i)
        },
        |i| {
            let session = store.running();
            match what {
                One::Create => {
                    session.apply(&[Edit {
                        op: Operation::Create,
                        path: path.parse()?,
                        value: Some(Node::leaf(s(format!("l{m}")))),
                        insert: None,
                    }])?;
                }
                One::Modify => {
                    session.set(&path, s(format!("modified{i}")))?;
                }
                One::Remove => {
                    session.delete(&path)?;
                }
            }
            Ok(())
        },
    )?;
    // Leave the item as the setup of the other rows expects it.
    store.running().set(&path, s(format!("l{m}")))?;
    ensure!(lst_count(store)? == e.n, "{row}: the list no longer holds {} entries", e.n);
    let (k, v) = e.mid_pair();
    let raw = &mut e.raw;
    // Each run writes bytes that differ from the stored ones, as canopy's
    // commit does: SQLite skips the flush of a commit that changes nothing.
    let floor = e.cx.measure(
        &format!("{row} (floor)"),
        |i| {
            let mut v = v.clone();
            v.push((i % 2) as u8);
            Ok(v)
        },
        |v| {
            raw.put_one(&k, &v)?;
            Ok(())
        },
    )?;
    Ok(Measured { canopy: Cell::Time(canopy), floor: Some(Cell::Time(floor)) })
}

fn create_an_item(e: &mut Env) -> Result<Measured> {
    one_item(e, "create an item", One::Create, false)
}

fn create_an_item_cached(e: &mut Env) -> Result<Measured> {
    one_item(e, "create an item cached", One::Create, true)
}

fn create_an_item_oper(e: &mut Env) -> Result<Measured> {
    let n = e.n;
    let path = hash_path(n);
    let m = mid(n);
    let (store, dir) = e.fresh_store(false)?;
    store.session(Datastore::Operational).apply_owned(item_edits(n, false)?)?;
    let canopy = e.cx.measure(
        "create an item oper",
        |_| {
            store.session(Datastore::Operational).edit_json(Operation::Remove, &path, None, None)?;
            Ok(())
        },
        |()| {
            store.session(Datastore::Operational).apply(&[Edit {
                op: Operation::Create,
                path: path.parse()?,
                value: Some(Node::leaf(s(format!("l{m}")))),
                insert: None,
            }])?;
            Ok(())
        },
    )?;
    ensure!(pushed_count(&store)? == n, "create an item oper: operational does not hold {n} entries");
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
    Ok(Measured { canopy: Cell::Time(canopy), floor: None })
}

fn modify_an_item(e: &mut Env) -> Result<Measured> {
    one_item(e, "modify an item", One::Modify, false)
}

fn modify_an_item_cached(e: &mut Env) -> Result<Measured> {
    one_item(e, "modify an item cached", One::Modify, true)
}

fn remove_an_item(e: &mut Env) -> Result<Measured> {
    one_item(e, "remove an item", One::Remove, false)
}

fn remove_an_item_cached(e: &mut Env) -> Result<Measured> {
    one_item(e, "remove an item cached", One::Remove, true)
}

/// The pairs canopy stores for the N items (container first), for the floors.
fn raw_pairs(n: usize, usr: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity(n + 1);
    out.push((fragment_key("/perf:cont"), canopy_store::fragment::encode(&Container::default(), None)));
    for i in 0..n {
        let (path, c) = if usr {
            (format!("/perf:cont/usr-lst[k='{i}']"), container(&[("k", super::num(i)), ("l", s(format!("l{i}")))]))
        } else {
            (
                format!("/perf:cont/lst[k1='{i}'][k2='str{i}']"),
                container(&[("k1", super::num(i)), ("k2", s(format!("str{i}"))), ("l", s(format!("l{i}")))]),
            )
        };
        out.push((fragment_key(&path), canopy_store::fragment::encode(&c, None)));
    }
    out
}

/// Runs the 22 rows at `size` items.
///
/// # Errors
/// Store errors; a row whose result is wrong.
pub fn run(cx: &Cx, size: u64) -> Result<Table> {
    let n = size as usize;
    let json = crate::core_suite::perf_json(n);
    let main_dir = cx.fresh_dir()?;
    let main = open_store(&cx.url(&main_dir))?;
    main.running().import(json.as_bytes(), Operation::Merge)?;
    let cached_dir = cx.fresh_dir()?;
    let cached = open_store(&cx.url_with(&cached_dir, &[("cache", "on")]))?;
    cached.running().import(json.as_bytes(), Operation::Merge)?;
    let usr_dir = cx.fresh_dir()?;
    let usr = open_store(&cx.url(&usr_dir))?;
    usr.running().import(crate::core_suite::perf_usr_json(n).as_bytes(), Operation::Merge)?;
    ensure!(lst_count(&main)? == n && lst_count(&cached)? == n, "setup: the stores do not hold {n} entries");
    ensure!(usr.running().count("/perf:cont/usr-lst")? == n, "setup: usr-lst does not hold {n} entries");
    let pairs = raw_pairs(n, false);
    let raw_dir = cx.fresh_dir()?;
    let mut raw = cx.floor(&raw_dir)?;
    raw.put_all(&pairs)?;
    let modes = modes(cx, &main, &cached)?;
    let mut env = Env { cx, n, json, main, cached, usr, pairs, usr_pairs: raw_pairs(n, true), raw };
    let mut rows = Vec::new();
    for (name, f) in ROWS {
        let m = f(&mut env)?;
        let mut row = Row::new(name, m.canopy);
        row.floor = m.floor;
        rows.push(row);
    }
    let checks = vec![format!(
        "checked: running held {n} `lst` and {n} `usr-lst` entries before each row; every create row stored {n}, every remove row left 0"
    )];
    Ok(Table { backend: cx.label(), size, modes, rows, checks })
}

/// Whether pushed operational state is flushed when it is committed: LMDB and
/// SQLite commit it without a flush (it dies with its connection), the
/// whole-file stores write it as any commit.
fn pushes_flush(cx: &Cx) -> bool {
    matches!(cx.backend.as_str(), "snapshot" | "json") && cx.sync() == SyncMode::Commit
}

/// The table's modes, as the stores report them.
fn modes(cx: &Cx, main: &Store, cached: &Store) -> Result<String> {
    let sync = crate::runner::sync_of(main);
    ensure!(crate::runner::sync_of(cached) == sync, "the cached store runs at another sync mode");
    ensure!(cached.is_cached(), "the store of the cached rows is not cached");
    let cache = match main.is_cached() {
        true => format!("cache={} on every row", main.cache_mode()),
        false => format!("cache=off except the rows named cached (cache={})", cached.cache_mode()),
    };
    let floors = match sync {
        "in memory" => String::new(),
        _ if pushes_flush(cx) || cx.sync() == SyncMode::Off => " (floors too)".into(),
        _ => " (floors too, except that of \"create all items oper\": pushed state is committed without a flush, \
               and so is its floor)"
            .into(),
    };
    ensure!(
        sync == "in memory" || main.backend().sync_mode() == cx.sync(),
        "the store and its floors differ in sync mode"
    );
    Ok(format!(
        "{sync}{floors}; {cache}; validation: on (YANG module perf); oper rows: state pushed by the connection \
         (stored per connection)"
    ))
}

pub fn notes() -> Vec<String> {
    vec![
        "Rows as sysrepo's test defines them (module `perf`, item i = `lst[k1=i][k2='str'+i]/l = 'l'+i`, \
         the middle item i = N/2). Every timed run starts from the row's setup state, re-established untimed; \
         \"remove all items\" and \"remove whole subtree\" remove N items in every run (the seed's harness \
         removed them only in its first run). Stores without `cache=on` read what each operation needs from \
         the backend."
            .into(),
        "validation: every store holds the `perf` YANG module, so every commit's paths and values are \
         checked and the commit validated, as the seed's sysrepo did. Oper rows: \"create ... oper\" push \
         state through an operational session (connection-scoped, as sysrepo's push data: written to the \
         store in the push's own transaction, not flushed, so other processes read it, and dropped with the connection; \
         pushed state is not validated against the schema); \"get oper tree\" reads /perf:cont from \
         operational where a provider callback builds the N items on each read (running empty); \
         \"many oper change_subs\" has 12 other connections subscribed to operational /perf:cont and \
         times 10 rounds of pushing N items and deleting the list."
            .into(),
    ]
}
