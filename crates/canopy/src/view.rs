//! The read view of an operation: one snapshot, its catalog, and the tree
//! that holds what a query can select (the cached tree, a sparse tree loaded
//! for the query, or the operational view).

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::keys::{self, Datastore};
use canopy_store::Snapshot;
use canopy_yang::YangSchema;

use crate::cache::{catch_up, load_all, Cached};
use crate::catalog::Catalog;
use crate::error::Result;
use crate::read::load_for;
use crate::store::{poisoned, Store};
use crate::subscribe;

/// The snapshot and its catalog that one read operation reads through:
/// taken when the operation first needs them and shared by the ways it is
/// tried (a key lookup, entry by entry, streamed, as a tree), so that the
/// operation takes one snapshot and reads one revision.
pub(crate) struct ReadView<'s> {
    store: &'s Store,
    kind: ViewKind,
    at: OnceCell<(Box<dyn Snapshot + 's>, Arc<Catalog>)>,
    /// For a snapshot taken at an assumed revision: raised by a read through it.
    seen: Option<Arc<AtomicBool>>,
}

/// Which snapshot a [`ReadView`] reads on.
#[derive(Clone, Copy)]
enum ViewKind {
    /// One whose reads do not fail when the store moves on.
    Registered,
    /// A brief one, at the revision the backend says (see [`Store::read_briefly`]).
    Brief,
    /// A brief one at this revision, taken for the store's without asking.
    BriefAt(u64),
}

impl<'s> ReadView<'s> {
    /// A view on a snapshot whose reads do not fail when the store moves on
    /// (for reads that write their reply as they read).
    pub(crate) fn new(store: &'s Store) -> ReadView<'s> {
        ReadView::of(store, ViewKind::Registered)
    }

    fn of(store: &'s Store, kind: ViewKind) -> ReadView<'s> {
        let seen = matches!(kind, ViewKind::BriefAt(_)).then(|| Arc::new(AtomicBool::new(false)));
        ReadView { store, kind, at: OnceCell::new(), seen }
    }

    /// Whether what was read through this view can be trusted: its snapshot
    /// was not taken, was asked for, or something read through it showed
    /// the store at the revision it assumed (see [`crate::vouched`]).
    fn vouched(&self) -> bool {
        self.at.get().is_none() || self.seen.as_ref().is_none_or(|s| s.load(Ordering::Relaxed))
    }

    /// The snapshot and its catalog, taken at the first call.
    pub(crate) fn get(&self) -> Result<(&dyn Snapshot, &Catalog)> {
        if self.at.get().is_none() {
            let backend = &self.store.backend;
            let snap = match self.kind {
                ViewKind::Registered => backend.snapshot()?,
                ViewKind::Brief => backend.brief_snapshot()?,
                ViewKind::BriefAt(revision) => Box::new(crate::vouched::Vouched {
                    inner: backend.brief_snapshot_at(revision)?,
                    seen: self.seen.clone().unwrap_or_default(),
                }),
            };
            let catalog = self.store.catalog_at(&*snap)?;
            let _ = self.at.set((snap, catalog));
        }
        let (snap, catalog) = self.at.get().expect("set above");
        Ok((&**snap, catalog))
    }
}

/// How many times a read is tried on brief snapshots at the revision the
/// backend says before it takes a snapshot whose reads cannot fail so.
const BRIEF_TRIES: usize = 2;

impl Store {
    /// Runs the read `f` on a brief snapshot ([`canopy_store::Backend::brief_snapshot`]:
    /// on Redis, no round trip to begin or end), and again on a new one when
    /// the store was not at its revision or another writer committed while it
    /// read; the last try takes a snapshot whose reads do not fail so. The
    /// first try takes the newest revision this store knows of (heard from
    /// the backend with `cache=watch`, else its catalog's) for the store's,
    /// without asking; the next asks. `f` returns what it read and writes
    /// nothing, so that a try can be given up.
    pub(crate) fn read_briefly<T>(&self, mut f: impl FnMut(&ReadView<'_>) -> Result<T>) -> Result<T> {
        let known = self.known_revision();
        let tries = known.map(ViewKind::BriefAt).into_iter().chain([ViewKind::Brief; BRIEF_TRIES]);
        for kind in tries {
            let view = ReadView::of(self, kind);
            match f(&view) {
                Err(crate::Error::Store(e)) if e.kind() == canopy_store::ErrorKind::Conflict => continue,
                // Decided from an assumed revision's catalog alone.
                _ if !view.vouched() => continue,
                other => return other,
            }
        }
        f(&ReadView::new(self))
    }

    /// The newest revision this store knows of without asking, when its
    /// backend takes revisions so ([`canopy_store::Backend::takes_revisions`]):
    /// heard from the backend with `cache=watch` (while trusted), else its
    /// catalog's.
    pub(crate) fn known_revision(&self) -> Option<u64> {
        if !self.backend.takes_revisions() {
            return None;
        }
        self.watch.as_ref().and_then(|w| w.revision()).or_else(|| self.catalog.newest())
    }

    /// Runs `f` on a tree holding at least what `query` selects from the
    /// view a session reads: a datastore's contents (the candidate's being
    /// running's until it is edited), or for operational (unless `stored`)
    /// the merged operational view. An instance path is checked against the
    /// YANG schema of the revision read.
    pub(crate) fn with_view<T>(
        &self,
        view: &ReadView<'_>,
        ds: Datastore,
        stored: bool,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        if ds == Datastore::Operational && !stored {
            subscribe::check_not_calling(self.conn.id)?;
            // The operational view merges several datastores and the
            // connections' pushed state, each read at its own snapshot.
            let (_, catalog) = view.get()?;
            check_query(catalog.yang.as_deref(), query)?;
            let tree = self.operational_tree(view, query)?;
            return Ok(f(Cow::Owned(tree), &catalog.lists, catalog.yang.as_deref()));
        }
        self.with_stored_tree(view, ds, query, f)
    }

    /// A list entry read by its key alone (see [`read_entry`]),
    /// uncached, from what `ds` reads when that is a stored datastore; `None`
    /// when this read cannot serve the path.
    pub(crate) fn entry_direct(
        &self,
        view: &ReadView<'_>,
        ds: Datastore,
        stored: bool,
        path: &Path,
    ) -> Result<Option<Option<Container>>> {
        // Decided from the path's shape before anything is read, so that
        // paths this read cannot serve (a leaf, a position) pay nothing.
        let entry = matches!(path.last().map(|s| &s.selector), Some(Selector::Keys(_)))
            && path.segments.iter().all(|s| matches!(s.selector, Selector::None | Selector::Keys(_)));
        if !entry || self.cache.is_some() || (ds == Datastore::Operational && !stored) {
            return Ok(None);
        }
        subscribe::check_not_calling(self.conn.id)?;
        let (snap, catalog) = view.get()?;
        let ds = catalog.control.read_ds(ds);
        let checked = match catalog.yang.as_deref() {
            Some(y) => Cow::Owned(y.resolve_path(path)?.0),
            None => Cow::Borrowed(path),
        };
        let p = canopy_core::edit::canonical_path_cow(&Container::default(), &checked, &*catalog.lists);
        read_entry(snap, ds, &catalog.lists, &p)
    }

    /// Runs `f` on a tree that holds at least what `query` can select from
    /// what `ds` reads (the candidate reads running until it is edited): the
    /// cached tree (borrowed), or a sparse tree loaded for it (owned). One
    /// snapshot and its catalog serve the whole read: the datastore read,
    /// the query's check against the schema, the lists and the data.
    pub(crate) fn with_stored_tree<T>(
        &self,
        view: &ReadView<'_>,
        ds: Datastore,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        subscribe::check_not_calling(self.conn.id)?;
        // Cached, at the store's revision (read alone, or as the watch heard
        // it): no snapshot is needed.
        if let Some(cache) = &self.cache {
            let revision = match self.watch.as_ref().and_then(|w| w.revision()) {
                Some(r) => r,
                None => self.backend.revision()?,
            };
            if let Some(catalog) = self.catalog.held(revision) {
                let ds = catalog.control.read_ds(ds);
                let g = cache.read().map_err(|_| poisoned())?;
                if let Some(c) = g.get(&ds).filter(|c| c.revision == revision) {
                    let (schema, yang) = (&*catalog.lists, catalog.yang.as_deref());
                    check_query(yang, query)?;
                    return Ok(f(Cow::Borrowed(&c.tree), schema, yang));
                }
            }
        }
        // A cached store reads at the newest revision, on a snapshot of its
        // own: the view's may be older than the cached tree, which would
        // then be read again whole.
        let own = self.cache.is_some().then(|| ReadView::new(self));
        let (snap, catalog) = match &own {
            Some(own) => own.get()?,
            None => view.get()?,
        };
        let ds = catalog.control.read_ds(ds);
        let (schema, yang) = (&*catalog.lists, catalog.yang.as_deref());
        check_query(yang, query)?;
        if let Some(cache) = &self.cache {
            {
                let g = cache.read().map_err(|_| poisoned())?;
                if let Some(c) = g.get(&ds).filter(|c| c.revision == snap.revision()) {
                    return Ok(f(Cow::Borrowed(&c.tree), schema, yang));
                }
            }
            let mut g = cache.write().map_err(|_| poisoned())?;
            // Behind (another process committed): the change log's records
            // of the commits since, when it has them all; else the whole
            // datastore read again.
            let caught_up = match g.get_mut(&ds) {
                Some(c) if c.revision == snap.revision() => true,
                Some(c) => catch_up(snap, ds, c)?,
                None => false,
            };
            if !caught_up {
                let tree = load_all(snap, ds, schema)?;
                g.insert(ds, Cached { revision: snap.revision(), tree });
            }
            return Ok(f(Cow::Borrowed(&g[&ds].tree), schema, yang));
        }
        // `//name` loads only where the schema has `name` (the same results).
        let planned = crate::rooted::rooted(query, yang);
        let root = load_for(snap, keys::Space::datastore(ds), &planned, schema)?;
        Ok(f(Cow::Owned(root), schema, yang))
    }
}

/// With a YANG schema, an instance path read must name schema nodes.
pub(crate) fn check_query(yang: Option<&YangSchema>, q: &Query) -> Result<()> {
    if let (Some(y), Some(p)) = (yang, q.to_instance_path()) {
        // A list named without keys on the way is an XPath step selecting
        // every entry (`/m:c/lst/leaf`): then only its names are checked.
        // So is a predicate on other leaves than the list's keys
        // (`/m:c/lst[mtu=1500]`): an XPath filter, not an entry's keys.
        // Each segment's schema path grows from the one before.
        let (mut keyless_inner, mut filters) = (false, false);
        let mut sp = String::with_capacity(p.schema_path_len());
        for (i, s) in p.segments.iter().enumerate() {
            sp.push('/');
            sp.push_str(&s.name);
            match &s.selector {
                Selector::None if i + 1 < p.segments.len() => {
                    keyless_inner |= y.kind(&sp) == Some(NodeKind::List);
                }
                Selector::Keys(k) => {
                    let model = y.model();
                    filters |= model.by_path.get(&sp).is_some_and(|&n| {
                        let info = canopy_core::tree::ListInfo::keyed(model.nodes[n].keys.iter().cloned());
                        !crate::prepare::names_one_entry(k, Some(&info))
                    });
                }
                _ => {}
            }
        }
        if !keyless_inner && !filters {
            y.resolve_path(&p)?;
        } else {
            let bare = Path {
                segments: p
                    .segments
                    .iter()
                    .map(|s| canopy_core::path::Segment { name: s.name.clone(), selector: Selector::None })
                    .collect(),
            };
            if y.kind(&bare.schema_path()).is_none() {
                // Names the first segment the schema does not know.
                let mut at = Path::root();
                for s in &bare.segments {
                    at = at.child(s.name.clone(), Selector::None);
                    if y.kind(&at.schema_path()).is_none() {
                        return Err(canopy_core::Error::Path {
                            input: p.to_string(),
                            pos: 1,
                            reason: format!("no schema node {}", at.schema_path()),
                        }
                        .into());
                    }
                }
            }
        }
    }
    Ok(())
}

/// The list entry `path` names, read with one range scan of its key and
/// nothing else: every stored fragment has its parent's, so an entry that is
/// stored has its ancestors. `None` when the path is not one this read can
/// serve: it must be canonical, end at an entry, and cross only lists known
/// with keys and stored by key (not user-ordered, whose entries a tree holds
/// by order); `Some(None)` when the entry is not stored.
fn read_entry(
    snap: &dyn Snapshot,
    ds: Datastore,
    schema: &Schemaless,
    path: &Path,
) -> Result<Option<Option<Container>>> {
    if !matches!(path.last().map(|s| &s.selector), Some(Selector::Keys(_))) {
        return Ok(None);
    }
    let mut sp = canopy_core::scratch::Scratch::take();
    for seg in &path.segments {
        sp.push('/');
        sp.push_str(&seg.name);
        match &seg.selector {
            Selector::None => {}
            Selector::Keys(kv) => match schema.lists.get(sp.as_str()) {
                Some(i) if !i.user_ordered && canopy_core::schema::keys_in_order(i, kv) => {}
                _ => return Ok(None),
            },
            Selector::Position(_) | Selector::Value(_) => return Ok(None),
        }
    }
    let Ok(rel) = keys::path_key(path) else { return Ok(None) };
    let mut prefix = keys::data_prefix(ds);
    let dl = prefix.len();
    prefix.extend_from_slice(&rel);
    let mut items = crate::load::scan_fragments(snap, &prefix, dl, &|_| false)
        .map_err(|e| crate::load::in_datastore(&prefix[..dl], e))?;
    // The entry's own key sorts before its descendants'.
    if items.first().is_none_or(|(k, _)| k.len() != rel.len()) {
        return Ok(Some(None));
    }
    let (_, d) = items.remove(0);
    let mut entry = d.expect("fresh").container;
    canopy_store::treeio::build(&mut entry, &mut items, rel.len(), &mut sp, schema)?;
    Ok(Some(Some(entry)))
}
