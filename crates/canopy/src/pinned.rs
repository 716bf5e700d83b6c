//! Reads pinned to one snapshot: several reads that together make one
//! reply (a server writing a large subtree piece by piece) see one revision
//! of the store, as one [`Session::get`] does.

use std::borrow::Cow;
use std::sync::Arc;

use canopy_core::path::query::Query;
use canopy_core::path::Path;
use canopy_core::tree::Container;
use canopy_store::fragment;
use canopy_store::keys::{self, Datastore};
use canopy_store::Snapshot;
use canopy_yang::WithDefaults;

use crate::catalog::Catalog;
use crate::error::Result;
use crate::load::{corrupt, in_datastore};
use crate::read::{selection, ReadOptions};
use crate::results::EntryFragments;
use crate::store::Session;

/// Reads of one datastore's stored contents at one revision (see
/// [`Session::pin`]).
pub struct Pinned<'s> {
    snap: Box<dyn Snapshot + 's>,
    catalog: Arc<Catalog>,
    ds: Datastore,
}

impl<'a> Session<'a> {
    /// Reads at the store's current revision, all of them, however long
    /// they take: what the datastore stores (for operational, the state
    /// kept in the store, without running's configuration, pushed state or
    /// providers), defaults as stored, read from the backend even when the
    /// store has a cache. The snapshot is held until the value is dropped.
    ///
    /// # Errors
    /// Backend errors; called from a subscriber's callback on the connection
    /// that is committing.
    pub fn pin(&self) -> Result<Pinned<'a>> {
        crate::subscribe::check_not_calling(self.store.conn.id)?;
        let snap = self.store.backend.snapshot()?;
        let catalog = self.store.catalog_at(&*snap)?;
        Ok(Pinned { snap, catalog, ds: self.ds })
    }
}

impl Pinned<'_> {
    /// The revision read.
    pub fn revision(&self) -> u64 {
        self.snap.revision()
    }

    /// The container or list entry at instance path `path` as stored: its
    /// metadata and its leaves, leaf-lists and anydata, without its child
    /// containers and lists (one stored fragment, one key lookup); `None`
    /// when it is not stored.
    ///
    /// # Errors
    /// [`crate::Error::Data`] for a path that does not parse or does not name
    /// a container or entry by names and keys; backend errors.
    pub fn stored_node(&self, path: &str) -> Result<Option<Container>> {
        let p: Path = path.parse()?;
        if !crate::stream::streamable(&p) {
            let reason = "a container or list entry path (names and keys) is needed here".to_string();
            return Err(canopy_core::Error::Path { input: path.to_string(), pos: 0, reason }.into());
        }
        let p = canopy_core::edit::canonical_path(&Container::default(), &p, &*self.catalog.lists);
        let data = keys::data_prefix(self.catalog.control.read_ds(self.ds));
        let rel = keys::path_key(&p)?;
        let mut key = data.clone();
        key.extend_from_slice(&rel);
        let Some(v) = self.snap.get(&key)? else { return Ok(None) };
        let d = fragment::decode(&v).map_err(|e| corrupt(&rel, in_datastore(&data, e)))?;
        Ok(Some(d.container))
    }

    /// Reads what `query` selects one list entry at a time, when it can be
    /// read so: defaults as stored (`opts.with_defaults` explicit) and a
    /// query whose results lie inside the entries of one keyed,
    /// system-ordered list, `//name` planned through the schema included
    /// (`docs/design.md`, Reads). `f` gets, in document order, each entry's
    /// result as [`Session::get`] gives it for that entry alone (the
    /// selected nodes with their ancestors; entries that select nothing are
    /// skipped) and returns whether to go on. Put together, the results are
    /// what [`Session::get`] returns. The read's memory is one entry's.
    ///
    /// Returns `Ok(false)`, having called nothing, when the query cannot be
    /// read so (then read it with [`Session::get`]).
    ///
    /// # Errors
    /// As [`Session::get`], and what `f` returns.
    pub fn get_each(
        &self,
        query: &str,
        opts: ReadOptions,
        mut f: impl FnMut(Container) -> Result<bool>,
    ) -> Result<bool> {
        if opts.with_defaults != WithDefaults::Explicit {
            return Ok(false);
        }
        let q = Query::parse(query)?;
        let scanned = crate::scan::scan_at(&*self.snap, &self.catalog, self.ds, &q, |_, q, tree, yang| {
            let r = selection(Cow::Owned(tree), q, opts, yang);
            if r.children.is_empty() && r.meta.is_empty() {
                return Ok(true);
            }
            f(r)
        })?;
        Ok(scanned.is_some())
    }

    /// The stored fragments of each entry of the list at `list` (a path of
    /// names and keys whose last segment names the list, without keys; or
    /// one entry, with its keys), in key order, one entry at a time: `f`
    /// gets the entry's fragments (its own first, then its descendants' in
    /// document order, keys relative to the datastore) and returns whether
    /// to go on. Nothing is decoded: a reader that writes the entries out
    /// does so from the bytes, and the read's memory is one entry's. `f` may
    /// take the fragments (swap in a buffer of its own, which is cleared and
    /// scanned into next): a reader that writes entries on another thread
    /// moves them there without a copy. Entries
    /// of a user-ordered list come in key order, not in their order. Nothing
    /// stored: no call.
    ///
    /// # Errors
    /// [`crate::Error::Data`] for a path that does not parse or is not made
    /// of names and keys; `Corrupted` for fragments stored below an entry
    /// whose own fragment is not; backend errors; what `f` returns.
    pub fn each_entry_fragments(
        &self,
        list: &str,
        mut f: impl FnMut(&mut EntryFragments) -> Result<bool>,
    ) -> Result<()> {
        let p: Path = list.parse()?;
        if !crate::stream::streamable(&p) || p.is_root() {
            let reason = "a list path (names and keys, the list's name last) is needed here".to_string();
            return Err(canopy_core::Error::Path { input: list.to_string(), pos: 0, reason }.into());
        }
        let p = canopy_core::edit::canonical_path(&Container::default(), &p, &*self.catalog.lists);
        let data = keys::data_prefix(self.catalog.control.read_ds(self.ds));
        let rel = keys::path_key(&p)?;
        // Where each entry's own key ends its parent's: an entry's first
        // fragment must be the entry's own, not a descendant's of an entry
        // that is not stored (a damaged store; `canopy check` reports it).
        let entry_named = p.last().is_some_and(|s| matches!(s.selector, canopy_core::path::Selector::Keys(_)));
        let parent = Path { segments: p.segments[..p.segments.len() - 1].to_vec() };
        let parent_len = keys::path_key(&parent)?.len();
        crate::scan::each_raw(&*self.snap, &data, &rel, |frags| {
            let Some((own, _)) = frags.iter().next() else { return Ok(true) };
            let is_entry = match entry_named {
                true => own.len() == rel.len(),
                false => keys::first_segment_len(&own[parent_len..]).is_ok_and(|n| parent_len + n == own.len()),
            };
            if !is_entry {
                let e = canopy_store::StoreError::corrupted("stored below a list entry that is not stored");
                return Err(in_datastore(&data, corrupt(own, e)).into());
            }
            f(frags)
        })
    }
}
