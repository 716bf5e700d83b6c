//! Transactions: edits applied to the tree they need, validated, handed to
//! subscribers, stored as one batch and published, with one retry loop when
//! another process committed first.

use std::collections::HashMap;
use std::sync::RwLock;

use canopy_core::diff::Change;
use canopy_core::edit::{apply_edit_owned, Edit};
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot};

use crate::cache::{load_all, undo, Cached};
use crate::commit::batch_for;
use crate::error::{Error, Result};
use crate::load::Loader;
use crate::prepare::{erasable, erase_edit, learn_edit, prepare, Typed};
use crate::store::{poisoned, Store, CONFLICT_RETRIES};
use crate::subscribe::{self, Matched};

/// The result of a committed transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    /// The store revision after the commit (unchanged when nothing changed).
    pub revision: u64,
    /// What changed, in order.
    pub changes: Vec<Change>,
}

impl Store {
    /// Runs `edits` as one transaction on `ds`. When another process commits
    /// first, the transaction is rebuilt on the new state and tried again.
    pub(crate) fn transact(&self, ds: Datastore, edits: &[Edit]) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        for _ in 0..CONFLICT_RETRIES {
            match self.transact_once(ds, edits.to_vec()) {
                Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict => continue,
                other => return other,
            }
        }
        Err(Error::Store(canopy_store::StoreError::new(
            ErrorKind::Conflict,
            "other writers kept committing first; the transaction was not applied",
        )))
    }

    /// Runs `edits`, taken by value (their values move into the tree), as one
    /// transaction. Not retried: a conflict with another process's commit is
    /// reported as [`ErrorKind::Conflict`] and nothing is stored.
    pub(crate) fn transact_owned(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        self.transact_once(ds, edits)
    }

    pub(crate) fn transact_once(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        // Locks, and the candidate's first edit, which gives it its own copy
        // of running (undone when the edit fails).
        let materialized = {
            let snap = self.backend.snapshot()?;
            let control = self.control_at(&*snap)?;
            self.check_unlocked(&control, ds)?;
            match ds == Datastore::Candidate && !control.candidate_modified {
                true => Some(self.materialize_candidate(&*snap)?),
                false => None,
            }
        };
        let out = match &self.cache {
            Some(cache) => self.transact_cached(cache, ds, edits),
            None => self.transact_uncached(ds, edits),
        };
        if let (Some(revision), Err(e)) = (materialized, &out) {
            if !matches!(e, Error::Store(s) if s.kind() == ErrorKind::Conflict) {
                let mut batch = Batch { expect_revision: Some(revision), ops: Vec::new() };
                crate::connections::discard_ops(&mut batch);
                // Another writer committed since: the candidate is theirs now.
                let _ = self.backend.apply(&batch);
            }
        }
        out
    }

    pub(crate) fn transact_uncached(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        // Reads and the commit go through one view: on SQLite, one transaction.
        let view = self.backend.begin_write()?;
        let snap: &dyn Snapshot = &*view;
        let base = self.schema_at(snap)?;
        let yang = self.yang_at(snap)?;
        let edits = crate::yang::normalize_edits(yang.as_deref(), ds, edits)?;
        let mut schema = (*base).clone();
        let mut learned = Vec::new();
        let mut root = Container::default();
        // Stored lists are all in `base`; `schema` grows with what edits teach.
        let mut loader = Loader::new(snap, ds, &base);
        let mut changes = Vec::new();
        let erasable = erasable(&edits, ds, &base, yang.as_deref(), &self.hub);
        for (e, erase) in edits.into_iter().zip(erasable) {
            if erase {
                erase_edit(&mut loader, &mut root, &e, &schema, &mut changes)?;
                continue;
            }
            prepare(&mut loader, &mut root, &e, &schema)?;
            learn_edit(&mut schema, &mut learned, &e, &root);
            changes.extend(apply_edit_owned(&mut root, e, &Typed { lists: &schema, yang: yang.as_deref() })?);
        }
        if changes.is_empty() && learned.is_empty() {
            return Ok(Commit { revision: snap.revision(), changes });
        }
        if let Some(y) = &yang {
            crate::yang::validate(y, ds, &changes, &mut crate::yang::Sparse { loader: &mut loader, root: &mut root })?;
        }
        let matched = Matched::find(&self.hub, ds, &changes);
        matched.validate(self.conn.id, &changes)?;
        let batch =
            batch_for(&changes, &root, &keys::Space::datastore(ds), snap, &schema, &learned, &|k| loader.has_range(k));
        drop(loader);
        drop(root);
        match batch.and_then(|b| Ok(view.commit(&b)?)) {
            Ok(revision) => {
                self.learned_committed(revision, schema);
                matched.apply(self.conn.id, &changes, revision);
                Ok(Commit { revision, changes })
            }
            Err(e) => {
                matched.abort(self.conn.id, &changes);
                Err(e)
            }
        }
    }

    pub(crate) fn transact_cached(
        &self,
        cache: &RwLock<HashMap<Datastore, Cached>>,
        ds: Datastore,
        edits: Vec<Edit>,
    ) -> Result<Commit> {
        let mut g = cache.write().map_err(|_| poisoned())?;
        let view = self.backend.begin_write()?;
        let snap: &dyn Snapshot = &*view;
        let base = self.schema_at(snap)?;
        let fresh = matches!(g.get(&ds), Some(c) if c.revision == snap.revision());
        if !fresh {
            let tree = load_all(snap, ds, &base)?;
            g.insert(ds, Cached { revision: snap.revision(), tree });
        }
        let cached = g.get_mut(&ds).expect("just loaded");
        let yang = self.yang_at(snap)?;
        let edits = crate::yang::normalize_edits(yang.as_deref(), ds, edits)?;
        let mut schema = (*base).clone();
        let mut learned = Vec::new();
        let mut changes: Vec<Change> = Vec::new();
        for e in edits {
            learn_edit(&mut schema, &mut learned, &e, &cached.tree);
            match apply_edit_owned(&mut cached.tree, e, &Typed { lists: &schema, yang: yang.as_deref() }) {
                Ok(c) => changes.extend(c),
                Err(err) => {
                    undo(&mut cached.tree, &changes);
                    return Err(err.into());
                }
            }
        }
        if changes.is_empty() && learned.is_empty() {
            return Ok(Commit { revision: snap.revision(), changes });
        }
        if let Some(y) = &yang {
            if let Err(e) = crate::yang::validate(y, ds, &changes, &mut crate::yang::Whole(&cached.tree)) {
                undo(&mut cached.tree, &changes);
                return Err(e);
            }
        }
        let matched = Matched::find(&self.hub, ds, &changes);
        if let Err(e) = matched.validate(self.conn.id, &changes) {
            undo(&mut cached.tree, &changes);
            return Err(e);
        }
        let stored = batch_for(&changes, &cached.tree, &keys::Space::datastore(ds), snap, &schema, &learned, &|_| true)
            .and_then(|batch| Ok(view.commit(&batch)?));
        match stored {
            Ok(revision) => {
                cached.revision = revision;
                // Other datastores' trees are still valid: only this one changed.
                for (d, c) in g.iter_mut() {
                    if *d != ds && c.revision + 1 == revision {
                        c.revision = revision;
                    }
                }
                self.learned_committed(revision, schema);
                matched.apply(self.conn.id, &changes, revision);
                Ok(Commit { revision, changes })
            }
            Err(e) => {
                undo(&mut cached.tree, &changes);
                matched.abort(self.conn.id, &changes);
                Err(e)
            }
        }
    }

    /// After a data commit at `revision` made from the lists in force plus
    /// what it learned: the catalog of `revision` is the one before with
    /// those lists (data commits leave locks and the candidate's state alone).
    pub(crate) fn learned_committed(&self, revision: u64, schema: Schemaless) {
        self.catalog.committed(revision - 1, revision, Some(schema), None);
    }

    /// After a commit at `revision` that changed no datastore's contents
    /// (pushed state): cached trees of the revision before are still valid.
    pub(crate) fn datastores_unchanged(&self, revision: u64) {
        if let Some(cache) = &self.cache {
            if let Ok(mut g) = cache.write() {
                for c in g.values_mut() {
                    if c.revision + 1 == revision {
                        c.revision = revision;
                    }
                }
            }
        }
    }
}
