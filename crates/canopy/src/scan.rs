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

use canopy_core::path::query::{Axis, EntryScan, Expr, NodeTest, Operand, Query, Step};
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
use crate::results::{EntryFragments, ResultWriter};
use crate::store::{Session, Store};
use crate::view::ReadView;

impl Store {
    /// Runs `q` entry by entry over what `ds` reads (see the module's
    /// comment) when the read can be done so: uncached, not the merged
    /// operational view, defaults as stored, and a query [`plan`] accepts
    /// (see [`scan_at`]). `None`, having called nothing, otherwise.
    pub(crate) fn scan_query(
        &self,
        view: &ReadView<'_>,
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
        let (snap, catalog) = view.get()?;
        scan_at(snap, catalog, ds, q, f)
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
    pub(crate) fn scan_json<W: Write>(
        &self,
        view: &ReadView<'_>,
        q: &Query,
        opts: ReadOptions,
        pretty: bool,
        out: W,
    ) -> Result<bool> {
        let mut out = Some(out);
        if opts.depth.is_none() {
            if let Some(done) = self.filter_json(view, q, opts, pretty, &mut out)? {
                return Ok(done);
            }
        }
        let mut writer: Option<ResultWriter<W>> = None;
        let scanned = self.store.scan_query(view, self.ds, self.pushes(), q, opts, |scan, q, tree, yang| {
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

    /// [`Session::scan_json`] of a query that selects whole entries of the
    /// scanned list by predicates on child paths (`/m:c/lst[info/type='x']`):
    /// each entry's fragments are gathered as the range is scanned, the
    /// predicates are evaluated on the entry built from the fragments they
    /// can read ([`reach`]), and a matching entry is written from all its
    /// fragments without building it. `None`, having written nothing, when
    /// the query is not one of those.
    fn filter_json<W: Write>(
        &self,
        view: &ReadView<'_>,
        q: &Query,
        opts: ReadOptions,
        pretty: bool,
        out: &mut Option<W>,
    ) -> Result<Option<bool>> {
        let store = self.store;
        if store.cache.is_some() || self.pushes() || opts.with_defaults != canopy_yang::WithDefaults::Explicit {
            return Ok(None);
        }
        crate::subscribe::check_not_calling(store.conn.id)?;
        let (snap, catalog) = view.get()?;
        let yang = catalog.yang.as_deref();
        let q_rooted = crate::rooted::rooted(q, yang);
        let Some(scan) = plan(&q_rooted, &catalog.lists, yang) else { return Ok(None) };
        let Some(reach) = reach(&q_rooted, &scan) else { return Ok(None) };
        crate::view::check_query(yang, q)?;
        let ds = catalog.control.read_ds(self.ds);
        let schema = &*catalog.lists;
        let data = keys::data_prefix(ds);
        let Some(template) = ancestors(snap, &data, schema, &scan.parent)? else {
            // Nothing stored: what the general read writes then.
            let w = ResultWriter::new(out.take().expect("one writer"), pretty, scan);
            w.finish().map_err(Error::Output)?;
            return Ok(Some(true));
        };
        let parent_rel = keys::path_key(&scan.parent)?;
        let mut list_rel = parent_rel.clone();
        keys::push_name(&mut list_rel, &scan.list);
        let parent_sp = if scan.parent.is_root() { String::new() } else { scan.parent.schema_path() };
        let list_sp = format!("{parent_sp}/{}", scan.list);
        let mut failed = None;
        let output = crate::stream::Output { out: out.take().expect("one writer"), failed: &mut failed };
        let mut writer = ResultWriter::new(output, pretty, scan.clone());
        let mut items = Vec::new();
        let read = each_raw(snap, &data, &list_rel, |frags| {
            let entry_len = frags.iter().next().map_or(0, |(k, _)| k.len());
            items.clear();
            for (rel, v) in frags.iter() {
                if reached(&rel[entry_len..], &reach)? {
                    items.push((
                        rel.to_vec(),
                        Some(fragment::decode(v).map_err(|e| in_datastore(&data, corrupt(rel, e)))?),
                    ));
                }
            }
            let mut tree = template.clone();
            let mut sp = parent_sp.clone();
            canopy_store::treeio::build(
                container_at_mut(&mut tree, &scan.parent),
                &mut items,
                parent_rel.len(),
                &mut sp,
                schema,
            )?;
            let r = selection(Cow::Owned(tree), &q_rooted, opts, yang);
            if !r.children.is_empty() || !r.meta.is_empty() {
                writer.entry_fragments(&r, frags, &list_rel, &list_sp, schema)?;
            }
            Ok(true)
        });
        let finished = read.and_then(|()| writer.finish().map(drop).map_err(Error::Output));
        match (finished, failed) {
            (Err(_), Some(e)) => Err(Error::Output(e)),
            (r, _) => r.map(|()| Some(true)),
        }
    }

    /// [`Session::get`] of a query read entry by entry, the results put
    /// together as they come; `None` when it cannot be read so.
    pub(crate) fn scan_get(&self, view: &ReadView<'_>, q: &Query, opts: ReadOptions) -> Result<Option<Container>> {
        let mut merged: Option<Container> = None;
        let scanned = self.store.scan_query(view, self.ds, self.pushes(), q, opts, |scan, q, tree, yang| {
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
    pub(crate) fn scan_count(&self, view: &ReadView<'_>, q: &Query) -> Result<Option<usize>> {
        let mut n = 0;
        let scanned =
            self.store.scan_query(view, self.ds, self.pushes(), q, ReadOptions::default(), |_, q, tree, _| {
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
    let mut items: Vec<(Vec<u8>, Option<Decoded>)> = Vec::new();
    each_raw(snap, &data, &list_key[data.len()..], |frags| {
        for (rel, v) in frags.iter() {
            items.push((rel.to_vec(), Some(fragment::decode(v).map_err(|e| in_datastore(&data, corrupt(rel, e)))?)));
        }
        let mut tree = template.clone();
        let parent = container_at_mut(&mut tree, &scan.parent);
        let mut sp = parent_sp.clone();
        canopy_store::treeio::build(parent, &mut items, parent_rel.len(), &mut sp, schema)?;
        items.clear();
        f(tree)
    })
}

/// Calls `f` with the fragments of each entry of the list at `list_rel`
/// (relative to `data`, the datastore's prefix), in key order, one entry at
/// a time; `f` returns whether to go on.
pub(crate) fn each_raw(
    snap: &dyn Snapshot,
    data: &[u8],
    list_rel: &[u8],
    mut f: impl FnMut(&mut EntryFragments) -> Result<bool>,
) -> Result<()> {
    let dl = data.len();
    let mut list_key = data.to_vec();
    list_key.extend_from_slice(list_rel);
    let mut entry = EntryFragments::default();
    // The relative key of the entry being gathered.
    let mut entry_key: Vec<u8> = Vec::new();
    let mut failed: Option<crate::Error> = None;
    let mut stopped = false;
    snap.scan_prefix(&list_key, false, &mut |k, v| {
        let rel = &k[dl..];
        if entry.is_empty() || !rel.starts_with(&entry_key) {
            if !entry.is_empty() {
                match f(&mut entry) {
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
            entry.clear();
            entry_key.clear();
            entry_key.extend_from_slice(rel);
        }
        entry.push(rel, v);
        Ok(true)
    })
    .map_err(|e| in_datastore(data, e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    if !stopped && !entry.is_empty() {
        f(&mut entry)?;
    }
    Ok(())
}

/// What the predicates of a query that selects whole entries of the
/// scanned list can read of an entry: the local names along each path
/// they look at (`info/type` → `info`, `type`). `None` when the query has
/// steps after the list's, or a predicate path with another axis, a
/// wildcard or a predicate of its own.
fn reach(q: &Query, scan: &EntryScan) -> Option<Vec<Vec<String>>> {
    let step = q.steps.get(scan.parent.segments.len())?;
    if q.steps.len() != scan.parent.segments.len() + 1 {
        return None;
    }
    let mut out = Vec::new();
    let mut todo: Vec<&Expr> = step.predicates.iter().collect();
    while let Some(e) = todo.pop() {
        let paths: Vec<&Vec<Step>> = match e {
            Expr::Or(v) | Expr::And(v) => {
                todo.extend(v);
                continue;
            }
            Expr::Cmp(a, _, b) => [a, b]
                .into_iter()
                .filter_map(|o| match o {
                    Operand::Path(p) => Some(p),
                    _ => None,
                })
                .collect(),
            Expr::Exists(p) => vec![p],
            Expr::Position(_) => return None,
        };
        for p in paths {
            let mut names = Vec::new();
            for s in p {
                let (Axis::Child, NodeTest::Name(n), true) = (&s.axis, &s.test, s.predicates.is_empty()) else {
                    return None;
                };
                names.push(n.rsplit_once(':').map_or(n.as_str(), |(_, l)| l).to_string());
            }
            if names.is_empty() {
                return None;
            }
            out.push(names);
        }
    }
    Some(out)
}

/// Whether the fragment at `below` (its key below the entry's) is one the
/// predicates can read: on a path of [`reach`] (the local names of its
/// segments a prefix of one) or below the end of one (a container compared
/// by its text). The entry's own fragment always is.
fn reached(below: &[u8], reach: &[Vec<String>]) -> Result<bool> {
    let mut open: Vec<&[String]> = reach.iter().map(Vec::as_slice).collect();
    let mut rest = below;
    while !rest.is_empty() {
        // A name is its bytes up to the escaped string's end mark, unless
        // it holds a NUL (escaped).
        let escaped;
        let name = match rest.windows(2).position(|w| w == [0, 1]) {
            Some(i) if !rest[..i].contains(&0) => &rest[..i],
            _ => {
                let mut pos = 0;
                escaped =
                    canopy_core::keycode::read_escaped(rest, &mut pos).ok_or_else(|| keys::malformed_key(below))?;
                &escaped[..]
            }
        };
        let local = name.rsplit(|&b| b == b':').next().unwrap_or(name);
        // Chains ending above this fragment reach all below it.
        if open.iter().any(|r| r.is_empty()) {
            return Ok(true);
        }
        open.retain(|r| r[0].as_bytes() == local);
        if open.is_empty() {
            return Ok(false);
        }
        open.iter_mut().for_each(|r| *r = &r[1..]);
        rest = &rest[keys::first_segment_len(rest)?..];
    }
    Ok(true)
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
