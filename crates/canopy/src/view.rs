//! The read view of an operation: one snapshot, its catalog, and the tree
//! that holds what a query can select (the cached tree, a sparse tree loaded
//! for the query, or the operational view).

use std::borrow::Cow;

use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::keys::{self, Datastore};
use canopy_store::Snapshot;
use canopy_yang::YangSchema;

use crate::cache::{load_all, Cached};
use crate::error::Result;
use crate::read::load_for;
use crate::store::{poisoned, Store};
use crate::subscribe;

impl Store {
    /// Runs `f` on a tree holding at least what `query` selects from the
    /// view a session reads: a datastore's contents (the candidate's being
    /// running's until it is edited), or for operational (unless `stored`)
    /// the merged operational view.
    pub(crate) fn with_view<T>(
        &self,
        ds: Datastore,
        stored: bool,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        if ds == Datastore::Operational && !stored {
            subscribe::check_not_calling(self.conn.id)?;
            let tree = self.operational_tree(query)?;
            let schema = self.schema_now()?;
            let yang = self.yang_schema()?;
            return Ok(f(Cow::Owned(tree), &schema, yang.as_deref()));
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
        let ds = self.stored_ds(&*snap, ds)?;
        let schema = self.schema_at(&*snap)?;
        let yang = self.yang_at(&*snap)?;
        let checked = match yang.as_deref() {
            Some(y) => Cow::Owned(y.resolve_path(path)?.0),
            None => Cow::Borrowed(path),
        };
        let p = canopy_core::edit::canonical_path_cow(&Container::default(), &checked, &*schema);
        crate::load::entry_direct(&*snap, ds, &schema, &p)
    }

    /// [`Store::with_tree`] on what `ds` reads: the candidate reads running
    /// until it is edited.
    pub(crate) fn with_stored_tree<T>(
        &self,
        ds: Datastore,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        let ds = match ds {
            Datastore::Candidate => self.stored_ds(&*self.backend.snapshot()?, ds)?,
            d => d,
        };
        self.with_tree(ds, query, f)
    }

    /// The datastore whose records `ds` reads in `snap`: the candidate reads
    /// running until it is edited.
    pub(crate) fn stored_ds(&self, snap: &dyn Snapshot, ds: Datastore) -> Result<Datastore> {
        Ok(match ds {
            Datastore::Candidate => self.control_at(snap)?.read_ds(ds),
            d => d,
        })
    }

    /// With a YANG schema, an instance path read must name schema nodes.
    pub(crate) fn check_query(&self, q: &Query) -> Result<()> {
        if let Some(p) = q.to_instance_path() {
            if let Some(y) = self.yang_schema()? {
                y.resolve_path(&p)?;
            }
        }
        Ok(())
    }

    /// Runs `f` on a tree that holds at least what `query` can select: the
    /// cached tree (borrowed), or a sparse tree loaded for it (owned).
    pub(crate) fn with_tree<T>(
        &self,
        ds: Datastore,
        query: &Query,
        f: impl FnOnce(Cow<'_, Container>, &Schemaless, Option<&YangSchema>) -> T,
    ) -> Result<T> {
        subscribe::check_not_calling(self.conn.id)?;
        let snap = self.backend.snapshot()?;
        let schema = self.schema_at(&*snap)?;
        let yang = self.yang_at(&*snap)?;
        let yang = yang.as_deref();
        if let Some(cache) = &self.cache {
            {
                let g = cache.read().map_err(|_| poisoned())?;
                if let Some(c) = g.get(&ds).filter(|c| c.revision == snap.revision()) {
                    return Ok(f(Cow::Borrowed(&c.tree), &schema, yang));
                }
            }
            let mut g = cache.write().map_err(|_| poisoned())?;
            let tree = load_all(&*snap, ds, &schema)?;
            g.insert(ds, Cached { revision: snap.revision(), tree });
            return Ok(f(Cow::Borrowed(&g[&ds].tree), &schema, yang));
        }
        let root = load_for(&*snap, keys::Space::datastore(ds), query, &schema)?;
        Ok(f(Cow::Owned(root), &schema, yang))
    }
}
