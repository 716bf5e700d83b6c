//! Queries answered one list entry at a time: when everything a query
//! selects lies inside the entries of one keyed list
//! ([`canopy_core::path::query::Query::entry_scan`]), the list's range is
//! scanned and each entry is built from its fragments, the query evaluated
//! on it (with its ancestors) and its result handed on before the next entry
//! is read. A read's memory is then one entry's, not the list's, and
//! predicates on non-key leaves are evaluated entry by entry as the range is
//! scanned.

use std::borrow::Cow;
use std::io::Write;

use canopy_core::json::{write_members, JsonWriter};
use canopy_core::path::query::{EntryScan, Query};
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Insert, List, Node};
use canopy_core::{Schema, Schemaless};
use canopy_store::fragment::{self, Decoded};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Snapshot, StoreError};
use canopy_yang::YangSchema;

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::load::{corrupt, in_datastore};
use crate::read::{selection, ReadOptions};
use crate::store::{Session, Store};

impl Store {
    /// Runs `q` entry by entry over what `ds` reads (see the module's
    /// comment) when the read can be done so: uncached, not the merged
    /// operational view, defaults as stored, and a query [`plan`] accepts
    /// (see [`scan_at`]). `None`, having called nothing, otherwise.
    pub(crate) fn scan_query(
        &self,
        ds: Datastore,
        merged: bool,
        q: &Query,
        opts: ReadOptions,
        f: impl FnMut(&EntryScan, &Query, Container, Option<&YangSchema>) -> Result<bool>,
    ) -> Result<Option<EntryScan>> {
        if self.cache.is_some() || merged || opts.with_defaults != canopy_yang::WithDefaults::Explicit {
            return Ok(None);
        }
        crate::subscribe::check_not_calling(self.conn.id)?;
        let snap = self.backend.snapshot()?;
        let catalog = self.catalog_at(&*snap)?;
        scan_at(&*snap, &catalog, ds, q, f)
    }
}

/// Runs `q` entry by entry over what `ds` reads in `snap` (whose catalog is
/// `catalog`), calling `f` with the plan, the query to evaluate on each
/// entry (`q`, or the same query written from the root) and each entry's
/// tree, when [`plan`] accepts the query; `None`, having called nothing,
/// otherwise.
pub(crate) fn scan_at(
    snap: &dyn Snapshot,
    catalog: &Catalog,
    ds: Datastore,
    q: &Query,
    mut f: impl FnMut(&EntryScan, &Query, Container, Option<&YangSchema>) -> Result<bool>,
) -> Result<Option<EntryScan>> {
    let yang = catalog.yang.as_deref();
    // `//name` through the one place the schema has it: the same results.
    let q_rooted = crate::rooted::rooted(q, yang);
    let Some(scan) = plan(&q_rooted, &catalog.lists, yang) else { return Ok(None) };
    crate::view::check_query(yang, q)?;
    let ds = catalog.control.read_ds(ds);
    each_entry(snap, ds, &catalog.lists, &scan, |tree| f(&scan, &q_rooted, tree, yang))?;
    Ok(Some(scan))
}

impl Session<'_> {
    /// [`Session::get_json`] of a query read entry by entry; `false`, having
    /// written nothing, when it cannot be read so.
    pub(crate) fn scan_json<W: Write>(&self, q: &Query, opts: ReadOptions, pretty: bool, out: W) -> Result<bool> {
        let mut out = Some(out);
        let mut writer: Option<ResultWriter<W>> = None;
        let scanned = self.store.scan_query(self.ds, self.pushes(), q, opts, |scan, q, tree, yang| {
            let r = selection(Cow::Owned(tree), q, opts, yang);
            if r.children.is_empty() && r.meta.is_empty() {
                return Ok(true);
            }
            let w = match &mut writer {
                Some(w) => w,
                None => writer.insert(ResultWriter::new(out.take().expect("one writer"), pretty, scan.clone())),
            };
            w.result(&r).map_err(Error::Output)?;
            Ok(true)
        })?;
        let Some(scan) = scanned else { return Ok(false) };
        let w = match writer {
            Some(w) => w,
            None => ResultWriter::new(out.take().expect("one writer"), pretty, scan),
        };
        w.finish().map_err(Error::Output)?;
        Ok(true)
    }

    /// [`Session::get`] of a query read entry by entry, the results put
    /// together as they come; `None` when it cannot be read so.
    pub(crate) fn scan_get(&self, q: &Query, opts: ReadOptions) -> Result<Option<Container>> {
        let mut merged: Option<Container> = None;
        let scanned = self.store.scan_query(self.ds, self.pushes(), q, opts, |scan, q, tree, yang| {
            let mut r = selection(Cow::Owned(tree), q, opts, yang);
            if r.children.is_empty() && r.meta.is_empty() {
                return Ok(true);
            }
            let Some(base) = &mut merged else {
                merged = Some(r);
                return Ok(true);
            };
            let from = list_at(&mut r, scan);
            let to = list_at(base, scan);
            if let (Some(from), Some(to)) = (from, to) {
                let entries: Vec<(Vec<u8>, Container)> = {
                    let pos: Vec<Vec<u8>> = from.entries_with_pos().map(|(p, _)| p.to_vec()).collect();
                    pos.into_iter().filter_map(|p| from.get_at_mut(&p).map(|e| (p, std::mem::take(e)))).collect()
                };
                for (p, e) in entries {
                    to.insert_at_pos(p, e).map_err(|e| Error::Store(StoreError::corrupted(e.to_string())))?;
                }
            }
            Ok(true)
        })?;
        Ok(scanned.map(|_| merged.unwrap_or_default()))
    }

    /// How many nodes a query read entry by entry selects; `None` when it
    /// cannot be read so.
    pub(crate) fn scan_count(&self, q: &Query) -> Result<Option<usize>> {
        let mut n = 0;
        let scanned = self.store.scan_query(self.ds, self.pushes(), q, ReadOptions::default(), |_, q, tree, _| {
            n += q.evaluate(&tree).len();
            Ok(true)
        })?;
        Ok(scanned.map(|_| n))
    }
}

/// The scanned list in a result tree, if the result has it.
fn list_at<'t>(r: &'t mut Container, scan: &EntryScan) -> Option<&'t mut List> {
    let mut c = r;
    for seg in &scan.parent.segments {
        c = match c.children.get_mut(&seg.name)? {
            Node::Container(cc) => cc,
            Node::List(l) => l.entries_mut().next()?,
            _ => return None,
        };
    }
    match c.children.get_mut(&scan.list)? {
        Node::List(l) => Some(l),
        _ => None,
    }
}

/// The entry scan of `q`, when its results over the whole tree are exactly
/// the results over each entry of the list with its ancestors: the query
/// stays inside one entry, and a list name written without its module names
/// no other module's node (only a YANG schema can tell).
pub(crate) fn plan(q: &Query, schema: &Schemaless, yang: Option<&YangSchema>) -> Option<EntryScan> {
    let scan = q.entry_scan(&|sp| schema.list_info(sp))?;
    if scan.unprefixed {
        let model = yang?.model();
        let local = |n: &str| n.rsplit_once(':').map_or(n, |(_, l)| l).to_string();
        let want = local(&scan.list);
        let parent = match scan.parent.is_root() {
            true => return None,
            false => model.nodes.get(*model.by_path.get(&scan.parent.schema_path())?)?,
        };
        if parent.children.keys().filter(|c| local(c) == want).count() != 1 {
            return None;
        }
    }
    Some(scan)
}

/// Calls `f` with each entry of the list `scan` names, in key order, as a
/// tree holding the entry with its ancestors (containers with their
/// metadata, entries with their key leaves), as [`canopy_core::select`]
/// keeps ancestors. Nothing is called when an ancestor is not stored. `f`
/// returns whether to go on.
pub(crate) fn each_entry(
    snap: &dyn Snapshot,
    ds: Datastore,
    schema: &Schemaless,
    scan: &EntryScan,
    mut f: impl FnMut(Container) -> Result<bool>,
) -> Result<()> {
    let data = keys::data_prefix(ds);
    let Some(template) = ancestors(snap, &data, schema, &scan.parent)? else { return Ok(()) };
    let parent_rel = keys::path_key(&scan.parent)?;
    let mut list_key = data.clone();
    list_key.extend_from_slice(&parent_rel);
    keys::push_name(&mut list_key, &scan.list);
    let parent_sp = scan.parent.schema_path();
    let parent_sp = if scan.parent.is_root() { String::new() } else { parent_sp };
    let dl = data.len();
    // The entry being gathered: its key (relative) and its fragments.
    let mut entry: Option<Vec<u8>> = None;
    let mut items: Vec<(Vec<u8>, Option<Decoded>)> = Vec::new();
    let mut failed: Option<crate::Error> = None;
    let mut stopped = false;
    let mut emit = |items: &mut Vec<(Vec<u8>, Option<Decoded>)>| -> Result<bool> {
        let mut tree = template.clone();
        let parent = container_at_mut(&mut tree, &scan.parent);
        let mut sp = parent_sp.clone();
        canopy_store::treeio::build(parent, items, parent_rel.len(), &mut sp, schema)?;
        items.clear();
        f(tree)
    };
    snap.scan_prefix(&list_key, false, &mut |k, v| {
        let rel = &k[dl..];
        if entry.as_ref().is_none_or(|e| !rel.starts_with(e)) {
            if entry.is_some() {
                match emit(&mut items) {
                    Ok(true) => {}
                    Ok(false) => {
                        stopped = true;
                        return Ok(false);
                    }
                    Err(e) => {
                        failed = Some(e);
                        return Ok(false);
                    }
                }
            }
            entry = Some(rel.to_vec());
        }
        let d = fragment::decode(v).map_err(|e| corrupt(rel, e))?;
        items.push((rel.to_vec(), Some(d)));
        Ok(true)
    })
    .map_err(|e| in_datastore(&data, e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    if !stopped && !items.is_empty() {
        emit(&mut items)?;
    }
    Ok(())
}

/// The ancestors of a scanned list: the root, then each node of `parent`
/// (containers with their metadata, entries with metadata and key leaves);
/// `None` when one is not stored.
fn ancestors(snap: &dyn Snapshot, data: &[u8], schema: &Schemaless, parent: &Path) -> Result<Option<Container>> {
    let mut root = Container::default();
    let mut at = Path::root();
    let mut key = data.to_vec();
    for seg in &parent.segments {
        at = at.child(seg.name.clone(), seg.selector.clone());
        key.truncate(data.len());
        key.extend_from_slice(&keys::path_key(&at)?);
        let Some(v) = snap.get(&key)? else { return Ok(None) };
        let d = fragment::decode(&v).map_err(|e| corrupt(&key[data.len()..], in_datastore(data, e)))?;
        let holder = container_at_mut(&mut root, &Path { segments: at.segments[..at.segments.len() - 1].to_vec() });
        match &seg.selector {
            Selector::Keys(kv) => {
                let info = schema.list_info(&at.schema_path()).unwrap_or_default();
                let mut e = Container { meta: d.container.meta, ..Default::default() };
                for (k, _) in kv {
                    if let Some(n) = d.container.children.get(k) {
                        e.children.insert(k.clone(), n.clone());
                    }
                }
                let mut l = List::new(info);
                l.insert(e, &Insert::Last).map_err(|e| StoreError::corrupted(e.to_string()))?;
                holder.children.insert(seg.name.clone(), Node::List(Box::new(l)));
            }
            _ => {
                let c = Container { meta: d.container.meta, ..Default::default() };
                holder.children.insert(seg.name.clone(), Node::Container(c));
            }
        }
    }
    Ok(Some(root))
}

/// The container or entry at `path` of a tree built by [`ancestors`], which
/// holds every node of the path (one entry per list).
fn container_at_mut<'t>(root: &'t mut Container, path: &Path) -> &'t mut Container {
    let mut cur = root;
    for seg in &path.segments {
        cur = match cur.children.get_mut(&seg.name) {
            Some(Node::Container(c)) => c,
            Some(Node::List(l)) => l.entries_mut().next().expect("one entry per ancestor list"),
            _ => unreachable!("ancestors() built every node of the path"),
        };
    }
    cur
}

/// Writes the per-entry results of a scan (trees holding one entry of the
/// list below the same ancestors) as one RFC 7951 document, the one the
/// results merged into one tree give: the ancestors are opened at the
/// first result, each result's entry is written as it comes, and `{}` is
/// written when nothing was selected.
pub(crate) struct ResultWriter<W: Write> {
    w: JsonWriter<W>,
    scan: EntryScan,
    /// Per open ancestor level: the members after the path's child, written
    /// when it closes, and whether the level is an entry (two closes).
    pending: Vec<(Container, bool)>,
    open: bool,
}

impl<W: Write> ResultWriter<W> {
    pub fn new(out: W, pretty: bool, scan: EntryScan) -> Self {
        ResultWriter { w: JsonWriter::new(out, pretty), scan, pending: Vec::new(), open: false }
    }

    /// Writes one entry's result.
    ///
    /// # Errors
    /// Write errors.
    pub fn result(&mut self, r: &Container) -> std::io::Result<()> {
        if r.children.is_empty() && r.meta.is_empty() {
            return Ok(());
        }
        if !self.open {
            self.open_ancestors(r)?;
            self.open = true;
        }
        let mut c = r;
        for seg in &self.scan.parent.segments {
            c = match c.children.get(&seg.name) {
                Some(Node::Container(cc)) => cc,
                Some(Node::List(l)) => l.entries().next().expect("one entry per ancestor list"),
                _ => return Ok(()),
            };
        }
        if let Some(Node::List(l)) = c.children.get(&self.scan.list) {
            for e in l.entries() {
                self.w.begin_entry()?;
                write_members(&mut self.w, e, None)?;
                self.w.end()?;
            }
        }
        Ok(())
    }

    /// Opens the ancestors and the list as `r` (the first result) has them:
    /// the members before the path's child are written now, the rest kept.
    fn open_ancestors(&mut self, r: &Container) -> std::io::Result<()> {
        self.w.meta(&r.meta)?;
        let mut c = r;
        let names = self.scan.parent.segments.iter().map(|s| s.name.as_str()).chain([self.scan.list.as_str()]);
        for name in names {
            let (mut before, mut after) = (Container::default(), Container::default());
            for (n, node) in &c.children {
                match n.as_str().cmp(name) {
                    std::cmp::Ordering::Less => before.children.insert(n.clone(), node.clone()),
                    std::cmp::Ordering::Greater => after.children.insert(n.clone(), node.clone()),
                    std::cmp::Ordering::Equal => None,
                };
            }
            write_members(&mut self.w, &before, None)?;
            match c.children.get(name) {
                Some(Node::Container(cc)) => {
                    self.w.begin_container(name)?;
                    self.w.meta(&cc.meta)?;
                    self.pending.push((after, false));
                    c = cc;
                }
                Some(Node::List(l)) if name == self.scan.list => {
                    self.w.begin_list(name)?;
                    self.pending.push((after, false));
                    let _ = l;
                }
                Some(Node::List(l)) => {
                    let e = l.entries().next().expect("one entry per ancestor list");
                    self.w.begin_list(name)?;
                    self.w.begin_entry()?;
                    self.w.meta(&e.meta)?;
                    self.pending.push((after, true));
                    c = e;
                }
                _ => return Err(std::io::Error::other("a result without its ancestors")),
            }
        }
        Ok(())
    }

    /// Closes what is open and finishes the document.
    ///
    /// # Errors
    /// Write errors.
    pub fn finish(mut self) -> std::io::Result<W> {
        // The list's level first: its `after` members belong to its parent.
        let mut levels = std::mem::take(&mut self.pending);
        while let Some((after, entry)) = levels.pop() {
            self.w.end()?;
            if entry {
                self.w.end()?;
            }
            write_members(&mut self.w, &after, None)?;
        }
        self.w.finish()
    }
}
