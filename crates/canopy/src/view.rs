//! The read view of an operation: one snapshot, its catalog, and the tree
//! that holds what a query can select (the cached tree, a sparse tree loaded
//! for the query, or the operational view).

use std::borrow::Cow;

use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::keys::{self, Datastore};
use canopy_yang::YangSchema;

use crate::cache::{catch_up, load_all, Cached};
use crate::error::Result;
use crate::read::load_for;
use crate::store::{poisoned, Store};
use crate::subscribe;

impl Store {
    /// Runs `f` on a tree holding at least what `query` selects from the
    /// view a session reads: a datastore's contents (the candidate's being
    /// running's until it is edited), or for operational (unless `stored`)
    /// the merged operational view. An instance path is checked against the
    /// YANG schema of the revision read.
    pub(crate) fn with_view<T>(
        &self,
        ds: Datastore,
        stored: bool,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        if ds == Datastore::Operational && !stored {
            subscribe::check_not_calling(self.conn.id)?;
            // The operational view merges several datastores and the
            // connections' pushed state, each read at its own snapshot.
            let catalog = self.catalog_at(&*self.backend.snapshot()?)?;
            check_query(catalog.yang.as_deref(), query)?;
            let tree = self.operational_tree(query)?;
            return Ok(f(Cow::Owned(tree), &catalog.lists, catalog.yang.as_deref()));
        }
        self.with_stored_tree(ds, query, f)
    }

    /// A list entry read by its key alone (see [`crate::load::entry_direct`]),
    /// uncached, from what `ds` reads when that is a stored datastore; `None`
    /// when this read cannot serve the path.
    pub(crate) fn entry_direct(&self, ds: Datastore, stored: bool, path: &Path) -> Result<Option<Option<Container>>> {
        // Decided from the path's shape before anything is read, so that
        // paths this read cannot serve (a leaf, a position) pay nothing.
        let entry = matches!(path.last().map(|s| &s.selector), Some(Selector::Keys(_)))
            && path.segments.iter().all(|s| matches!(s.selector, Selector::None | Selector::Keys(_)));
        if !entry || self.cache.is_some() || (ds == Datastore::Operational && !stored) {
            return Ok(None);
        }
        subscribe::check_not_calling(self.conn.id)?;
        let snap = self.backend.snapshot()?;
        let catalog = self.catalog_at(&*snap)?;
        let ds = catalog.control.read_ds(ds);
        let checked = match catalog.yang.as_deref() {
            Some(y) => Cow::Owned(y.resolve_path(path)?.0),
            None => Cow::Borrowed(path),
        };
        let p = canopy_core::edit::canonical_path_cow(&Container::default(), &checked, &*catalog.lists);
        crate::load::entry_direct(&*snap, ds, &catalog.lists, &p)
    }

    /// Runs `f` on a tree that holds at least what `query` can select from
    /// what `ds` reads (the candidate reads running until it is edited): the
    /// cached tree (borrowed), or a sparse tree loaded for it (owned). One
    /// snapshot and its catalog serve the whole read: the datastore read,
    /// the query's check against the schema, the lists and the data.
    pub(crate) fn with_stored_tree<T>(
        &self,
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
        let snap = self.backend.snapshot()?;
        let catalog = self.catalog_at(&*snap)?;
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
                Some(c) => catch_up(&*snap, ds, c)?,
                None => false,
            };
            if !caught_up {
                let tree = load_all(&*snap, ds, schema)?;
                g.insert(ds, Cached { revision: snap.revision(), tree });
            }
            return Ok(f(Cow::Borrowed(&g[&ds].tree), schema, yang));
        }
        // `//name` loads only where the schema has `name` (the same results).
        let planned = crate::rooted::rooted(query, yang);
        let root = load_for(&*snap, keys::Space::datastore(ds), &planned, schema)?;
        Ok(f(Cow::Owned(root), schema, yang))
    }
}

/// With a YANG schema, an instance path read must name schema nodes.
pub(crate) fn check_query(yang: Option<&YangSchema>, q: &Query) -> Result<()> {
    if let (Some(y), Some(p)) = (yang, q.to_instance_path()) {
        // A list named without keys on the way is an XPath step selecting
        // every entry (`/m:c/lst/leaf`): then only its names are checked.
        let keyless_inner = p.segments.iter().enumerate().any(|(i, s)| {
            i + 1 < p.segments.len()
                && s.selector == Selector::None
                && y.kind(&Path { segments: p.segments[..=i].to_vec() }.schema_path()) == Some(NodeKind::List)
        });
        if !keyless_inner {
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
