//! Transactions: edits applied to the tree they need, validated, handed to
//! subscribers, stored as one batch and published, with one retry loop when
//! another process committed first.

use canopy_core::diff::Change;
use canopy_core::edit::{apply_edit_deferring, apply_edit_owned, fill_created, Edit};
use canopy_core::tree::Container;
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot, WriteView};

use crate::commit::batch_for;
use crate::error::{Error, Result};
use crate::load::Loader;
use crate::prepare::{erasable, erase_edit, learn_edit, prepare, Typed};
use crate::store::{conflict_pause, poisoned, Store, CONFLICT_RETRIES};
use crate::subscribe::{self, Matched};

/// The result of a committed transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    /// The store revision after the commit (unchanged when nothing changed).
    pub revision: u64,
    /// What changed, in order. Empty for an import that streamed its
    /// document into storage (see `streamed`).
    pub changes: Vec<Change>,
    /// For an import that streamed its document straight into storage,
    /// without a diff ([`crate::Session::import`]): what it stored. `None`
    /// for every other commit.
    pub streamed: Option<Imported>,
}

/// What an import that streamed stored (see [`Commit::streamed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Imported {
    /// The fragments stored.
    pub fragments: u64,
    /// The changes the same import would list as a transaction into an empty
    /// datastore: one per top-level node, one for the root's metadata.
    pub changes: u64,
}

impl Store {
    /// Runs `edits` as one transaction on `ds`. When another process commits
    /// first, the transaction is rebuilt on the new state and tried again.
    pub(crate) fn transact(&self, ds: Datastore, edits: &[Edit]) -> Result<Commit> {
        self.transact_built(ds, || Ok(edits.to_vec()))
    }

    /// Runs the edits `build` returns as one transaction on `ds`, taking
    /// them by value; when another process commits first, `build` is called
    /// again and the new edits run on the new state.
    pub(crate) fn transact_built(&self, ds: Datastore, mut build: impl FnMut() -> Result<Vec<Edit>>) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        for attempt in 1..=CONFLICT_RETRIES {
            match self.transact_once(ds, build()?) {
                Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict => conflict_pause(attempt),
                other => return other,
            }
        }
        Err(Error::Store(canopy_store::StoreError::new(
            ErrorKind::Conflict,
            "other writers kept committing first; the transaction was not applied",
        )))
    }

    /// Runs `edits`, taken by value (their values move into the tree), as one
    /// transaction, once: a conflict with another process's commit is
    /// reported as [`ErrorKind::Conflict`] and nothing is stored (callers that
    /// can build the edits again use [`Store::transact_built`]).
    pub(crate) fn transact_owned(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        self.transact_once(ds, edits)
    }

    pub(crate) fn transact_once(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        // Locks, read through the view the transaction is built on, and the
        // candidate's first edit, which gives it its own copy of running
        // (undone when the edit fails) before the transaction's own view.
        let view = self.backend.begin_write()?;
        let control = self.control_at(&*view)?;
        self.check_unlocked(&control.live_locks(self.backend(), &self.hub)?, ds)?;
        let (view, materialized) = match ds == Datastore::Candidate && !control.candidate_modified {
            true => {
                // The copy is committed on its own (SQLite's view holds the
                // write lock): read from a snapshot, then a view on top of it.
                // Locks and the candidate's state are read again from the
                // snapshot the copy is made of (the copy commits on its revision).
                drop(view);
                let snap = self.backend.snapshot()?;
                let control = self.control_at(&*snap)?;
                self.check_unlocked(&control.live_locks(self.backend(), &self.hub)?, ds)?;
                let materialized = match control.candidate_modified {
                    false => Some(self.materialize_candidate(&*snap)?),
                    true => None,
                };
                drop(snap);
                (self.backend.begin_write()?, materialized)
            }
            false => (view, None),
        };
        let out = self.attempt(ds, edits, view);
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

    /// One attempt at a transaction, in named phases. Cached and uncached
    /// stores run the same phases; they differ in the last one only.
    ///
    /// 1. **Build the candidate**: through one write view of the store and the
    ///    catalog of its revision, each edit loads the stored nodes it meets
    ///    into a sparse tree and is applied to it (a delete nothing reads is
    ///    an erase, loading nothing), giving the diff.
    /// 2. **Schema validation** of the diff, loading what the checks read.
    /// 3. **Subscriber `validate`**: a rejection stops here, nothing stored.
    /// 4. **Batch**: the diff as fragment puts and range deletes, and its
    ///    change log record for the other processes (`crate::listen`).
    /// 5. **Store**: the batch committed through the view, conditional on its
    ///    revision (a conflict makes [`Store::transact`] try again).
    /// 6. **Publish**: the catalog of the new revision, and with `cache=on`
    ///    the diff applied to the cached tree. Readers read the old tree
    ///    until then: they never wait for the flush or for callbacks.
    /// 7. **`apply`** to the subscribers (or `abort` when storing failed).
    fn attempt(&self, ds: Datastore, edits: Vec<Edit>, view: Box<dyn WriteView + '_>) -> Result<Commit> {
        // 1. Build the candidate. On SQLite the view is one transaction.
        let snap: &dyn Snapshot = &*view;
        let base = snap.revision();
        let catalog = self.catalog_at(snap)?;
        let yang = catalog.yang.as_deref();
        let edits = crate::yang::normalize_edits(yang, ds, edits)?;
        // Stored lists are all in the catalog's; `schema` grows with what edits teach.
        let mut schema = (*catalog.lists).clone();
        let mut learned = Vec::new();
        let mut root = Container::default();
        let mut loader = Loader::new(snap, ds, &catalog.lists);
        let mut changes = Vec::with_capacity(edits.len());
        // Under `Validation::Structure` the schema types and shapes the edits
        // (above) but no constraint between nodes is checked.
        let checked = yang.filter(|_| catalog.validation == crate::yang::Validation::Full);
        let erasable = erasable(&edits, ds, &catalog.lists, yang, checked.is_some(), &self.hub);
        // The list entries and containers edits create are put in their changes once: moved
        // out of the tree when the batch is built, unless something reads the
        // changes before (constraint checks, subscribers: then copied).
        // Edits inside one another keep the copy each edit makes, so that a
        // change holds its entry as its own edit left it.
        let defer = checked.is_none() && edits.iter().any(creates_node) && edits_apart(&edits, &schema);
        let mut deferred: Vec<usize> = Vec::new();
        for (e, erase) in edits.into_iter().zip(erasable) {
            if erase {
                erase_edit(&mut loader, &mut root, &e, &schema, &mut changes)?;
                continue;
            }
            prepare(&mut loader, &mut root, &e, &schema)?;
            learn_edit(&mut schema, &mut learned, &e, &root);
            let typed = Typed { lists: &schema, yang };
            if defer {
                let (c, created) = apply_edit_deferring(&mut root, e, &typed)?;
                deferred.extend(created.map(|i| changes.len() + i));
                changes.extend(c);
            } else {
                changes.extend(apply_edit_owned(&mut root, e, &typed)?);
            }
        }
        if changes.is_empty() && learned.is_empty() {
            return Ok(Commit { revision: base, changes, streamed: None });
        }
        // 2. Schema validation, with the datastore's leafref index.
        let index = crate::leafrefs::Index::of(checked, ds, snap)?;
        if let Some(y) = checked {
            let index = index.as_ref().map(|i| i as &dyn crate::yang::LeafrefLookup);
            crate::yang::validate(
                y,
                ds,
                &changes,
                &mut crate::yang::Sparse { loader: &mut loader, root: &mut root, index },
            )?;
        }
        // 3. Subscribers validate.
        // Which subscribers a change concerns depends on what it created:
        // the ones of this moment see whole entries.
        let subscribers = self.hub.subscribers();
        if !deferred.is_empty() && subscribers.iter().any(|e| e.ds == ds) {
            fill_deferred(&mut root, &mut changes, &mut deferred, false)?;
        }
        let matched = Matched::find_among(&subscribers, ds, &changes);
        matched.validate(self.conn.id, &changes)?;
        // 4. Batch.
        let batch =
            batch_for(&changes, &root, &keys::Space::datastore(ds), snap, &schema, &learned, &|k| loader.has_range(k));
        // The tree is done with: its created entries move into their changes.
        fill_deferred(&mut root, &mut changes, &mut deferred, true)?;
        let batch = batch.and_then(|mut b| {
            if let (Some(index), Some(y)) = (&index, checked) {
                index.write(y, &changes, snap, &catalog.lists, &mut b)?;
            }
            self.log_commit(snap, ds, &changes, &mut b)?;
            Ok(b)
        });
        drop(loader);
        drop(root);
        // 5. Store.
        match batch.and_then(|b| Ok(view.commit(&b)?)) {
            Ok(revision) => {
                // 6. Publish.
                // Data commits leave locks and the candidate's state alone.
                self.catalog_committed(base, revision, Some(schema), None);
                self.publish_cached(ds, base, revision, &changes);
                // 7. Apply.
                matched.apply(self.conn.id, &changes, revision);
                Ok(Commit { revision, changes, streamed: None })
            }
            Err(e) => {
                matched.abort(self.conn.id, &changes);
                Err(e)
            }
        }
    }

    /// With `cache=on`, after a commit of `changes` to `ds` at `revision` on
    /// top of `base`: the cached tree of `ds`, if it was `base`'s, takes the
    /// changes (a short write lock, after the commit is durable); others
    /// stay valid. A tree that was not `base`'s, or that the changes do not
    /// fit, is dropped and read again by the next read.
    fn publish_cached(&self, ds: Datastore, base: u64, revision: u64, changes: &[Change]) {
        let Some(cache) = &self.cache else { return };
        let Ok(mut g) = cache.write() else { return };
        for (d, c) in g.iter_mut() {
            if *d != ds && c.revision == base {
                c.revision = revision;
            }
        }
        let mut removed = canopy_core::diff::Removed::default();
        let fits = match g.get_mut(&ds) {
            Some(c) if c.revision == base => {
                let applied = canopy_core::diff::apply_keeping_removed(&mut c.tree, changes, &mut removed).is_ok();
                c.revision = revision;
                applied
            }
            _ => false,
        };
        let dropped = if fits { None } else { g.remove(&ds) };
        drop(g);
        // What the commit took out of the tree is freed off this thread when big.
        if removed.at_least(crate::free::FREE_IN_PLACE_BELOW) {
            crate::free::free_later(removed);
        }
        if let Some(tree) = dropped {
            crate::free::free_later(tree);
        }
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

/// Whether `e` may create the list entry or container its path names (the
/// kinds of change [`apply_edit_deferring`] defers).
fn creates_node(e: &Edit) -> bool {
    use canopy_core::path::Selector;
    matches!(
        (&e.value, e.path.last().map(|s| &s.selector)),
        (Some(_), Some(Selector::Keys(_))) | (Some(canopy_core::tree::Node::Container(_)), Some(Selector::None))
    )
}

/// Whether no edit's path lies inside another's or names the same node, as
/// paths are written: then no edit changes what another created. A segment
/// without a selector where another path has one names a whole list, which
/// holds every entry: such paths are taken for nested.
fn edits_apart(edits: &[Edit], lists: &canopy_core::Schemaless) -> bool {
    use canopy_core::path::Selector;
    use std::cmp::Ordering;
    if edits.len() < 2 {
        return true;
    }
    // Each path as names and selectors, keys in one order whatever order
    // the path gives them in. A position, or keys of a list not known as
    // keyed (read as a position or a search), may name any entry: wild.
    type Seg<'a> = (&'a str, Option<std::borrow::Cow<'a, Selector>>);
    fn spelled<'a>(e: &'a Edit, lists: &canopy_core::Schemaless) -> Vec<Seg<'a>> {
        let mut sp = String::new();
        e.path
            .segments
            .iter()
            .map(|s| {
                sp.push('/');
                sp.push_str(&s.name);
                let keyed = || lists.lists.get(&sp).is_some_and(|l| !l.keys.is_empty());
                let sel = match &s.selector {
                    Selector::None | Selector::Position(_) => None,
                    Selector::Keys(_) if !keyed() => None,
                    Selector::Keys(k) if k.len() > 1 => {
                        let mut k = k.clone();
                        k.sort();
                        Some(std::borrow::Cow::Owned(Selector::Keys(k)))
                    }
                    sel => Some(std::borrow::Cow::Borrowed(sel)),
                };
                (s.name.as_str(), sel)
            })
            .collect()
    }
    let names = |a: &[Seg<'_>], b: &[Seg<'_>]| -> Ordering { a.iter().map(|s| s.0).cmp(b.iter().map(|s| s.0)) };
    let mut paths: Vec<Vec<Seg<'_>>> = edits.iter().map(|e| spelled(e, lists)).collect();
    paths.sort_unstable_by(|a, b| names(a, b).then_with(|| a.cmp(b)));
    let wild = |p: &[Seg<'_>]| -> Vec<bool> { p.iter().map(|s| s.1.is_none()).collect() };
    let mut group_wild = wild(&paths[0]);
    for w in paths.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if names(a, b) == Ordering::Equal {
            // The same nodes by name: apart only with different selectors
            // where they are given, and given at the same places.
            if a == b || wild(b) != group_wild {
                return false;
            }
        } else {
            // Sorted by names, a path comes right before the first path
            // whose names continue its own.
            if b.len() > a.len() && b.iter().zip(a.iter()).all(|(x, y)| x.0 == y.0) {
                return false;
            }
            group_wild = wild(b);
        }
    }
    true
}

/// Fills the changes at `deferred` (entries created but not copied, see
/// [`apply_edit_deferring`]) from `root`: moved out of it with `take`.
fn fill_deferred(root: &mut Container, changes: &mut [Change], deferred: &mut Vec<usize>, take: bool) -> Result<()> {
    for i in deferred.drain(..) {
        fill_created(root, &mut changes[i], take)?;
    }
    Ok(())
}
