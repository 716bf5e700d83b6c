//! Transactions: edits applied to the tree they need, validated, handed to
//! subscribers, stored as one batch and published, with one retry loop when
//! another process committed first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use canopy_core::diff::Change;
use canopy_core::edit::{apply_edit_deferring, apply_edit_owned, fill_created_all, Edit};
use canopy_core::tree::Container;
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot, WriteView};

use crate::commit::batch_for;
use crate::error::{Error, Result};
use crate::load::Loader;
use crate::prepare::{erasable, erase_edit, learn_edit, prepare, Erase, Typed};
use crate::store::{conflict_pause, poisoned, Store, CONFLICT_RETRIES};
use crate::subscribe::{self, Matched};
use crate::vouched::Vouched;

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
        // The first try takes the newest revision this store knows of for
        // the store's, without asking; when that was not it, the next try
        // asks, at once.
        let mut assumed = self.known_revision();
        let mut attempt = 0;
        while attempt < CONFLICT_RETRIES {
            let at = assumed.take();
            match self.transact_once(ds, build()?, None, at) {
                Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict => {
                    if at.is_none() {
                        attempt += 1;
                        conflict_pause(attempt);
                    }
                }
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
        self.transact_once(ds, edits, None, None)
    }

    /// Runs `edits` as one transaction on `ds` if the store is still at
    /// `revision` (what the caller read and checked), once: when it is not,
    /// or another process commits first, nothing is stored and the error is
    /// [`ErrorKind::Conflict`].
    pub(crate) fn transact_at(&self, ds: Datastore, edits: &[Edit], revision: u64) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        self.transact_once(ds, edits.to_vec(), Some(revision), None)
    }

    /// One try of a transaction; with `expect`, only on that revision. With
    /// `at`, its view takes that revision for the store's without asking
    /// ([`canopy_store::Backend::begin_write_at`]): when the store is
    /// elsewhere, or when nothing read through the view or its commit
    /// vouched for it ([`crate::vouched`]), whatever the try came to, it
    /// fails as a conflict (what it decided from that revision's catalog
    /// alone, such as a lock, may be stale).
    pub(crate) fn transact_once(
        &self,
        ds: Datastore,
        edits: Vec<Edit>,
        expect: Option<u64>,
        at: Option<u64>,
    ) -> Result<Commit> {
        let Some(at) = at else {
            return self.transact_on(ds, edits, expect, self.backend.begin_write()?, None);
        };
        let seen = Arc::new(AtomicBool::new(false));
        let view = Box::new(Vouched { inner: self.backend.begin_write_at(at)?, seen: seen.clone() });
        let out = self.transact_on(ds, edits, expect, view, Some(&seen));
        match seen.load(Ordering::Relaxed) {
            true => out,
            false => Err(Error::Store(canopy_store::StoreError::new(
                ErrorKind::Conflict,
                format!("nothing showed the store at revision {at}, taken for its own"),
            ))),
        }
    }

    /// [`Store::transact_once`] on `view`; `seen` (for a view at an assumed
    /// revision) is raised when the view is replaced by views that asked.
    fn transact_on(
        &self,
        ds: Datastore,
        edits: Vec<Edit>,
        expect: Option<u64>,
        view: Box<dyn WriteView + '_>,
        seen: Option<&AtomicBool>,
    ) -> Result<Commit> {
        // Locks, read through the view the transaction is built on, and the
        // candidate's first edit, which gives it its own copy of running
        // (undone when the edit fails) before the transaction's own view.
        let control = self.control_at(&*view)?;
        self.check_unlocked(&control.live_locks(self.backend(), &self.hub)?, ds)?;
        let (view, materialized) = match ds == Datastore::Candidate && !control.candidate_modified {
            true => {
                // The copy is committed on its own (SQLite's view holds the
                // write lock): read from a snapshot, then a view on top of it.
                // Locks and the candidate's state are read again from the
                // snapshot the copy is made of (the copy commits on its revision).
                drop(view);
                if let Some(seen) = seen {
                    seen.store(true, Ordering::Relaxed);
                }
                let snap = self.backend.snapshot()?;
                if let Some(r) = expect.filter(|&r| r != snap.revision()) {
                    return Err(moved(r, snap.revision()));
                }
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
        // With `expect`, the view is at that revision, or at the copy's
        // when the copy was made at it.
        let out = match expect.map(|r| materialized.unwrap_or(r)) {
            Some(want) if view.revision() != want => Err(moved(want, view.revision())),
            _ => self.attempt(ds, edits, view),
        };
        if let (Some(revision), Err(e)) = (materialized, &out) {
            // A conflict keeps the copy (for the next try; with `expect`,
            // another writer committed after it, and the undo, conditional
            // on the copy's revision, could not apply).
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
        let mut schema = std::borrow::Cow::Borrowed(&*catalog.lists);
        let mut learned = Vec::new();
        let mut root = Container::default();
        let mut loader = Loader::new(snap, ds, &catalog.lists);
        let mut changes = Vec::with_capacity(edits.len());
        // Under `Validation::Structure` the schema types and shapes the edits
        // (above) but no constraint between nodes is checked.
        let checked = yang.filter(|_| catalog.validation == crate::yang::Validation::Full);
        // Whether no edit lies at or under another, found once if asked.
        let apart = std::cell::OnceCell::new();
        let is_apart = || *apart.get_or_init(|| edits_apart(&edits, &catalog.lists));
        let erasable = erasable(&edits, ds, &catalog.lists, yang, checked.is_some(), &self.hub, &is_apart);
        // The list entries and containers edits create are put in their changes once: moved
        // out of the tree when the batch is built, unless something reads the
        // changes before (constraint checks, subscribers: then copied).
        // Edits inside one another keep the copy each edit makes, so that a
        // change holds its entry as its own edit left it.
        let defer = checked.is_none() && edits.iter().any(creates_node) && is_apart();
        let mut deferred: Vec<usize> = Vec::new();
        for (e, erase) in edits.into_iter().zip(erasable) {
            if erase != Erase::No && erase_edit(&mut loader, &mut root, &e, erase, &schema, &mut changes)? {
                continue;
            }
            prepare(&mut loader, &mut root, &e, &schema)?;
            learn_edit(&mut schema, &mut learned, &e, &root);
            let typed = Typed { lists: &schema, yang };
            if defer {
                let (c, created) = apply_edit_deferring(&mut root, e, &typed)?;
                deferred.extend(created.into_iter().map(|i| changes.len() + i));
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
            batch_for(&changes, &root, &keys::Space::datastore(ds), snap, &*schema, &learned, &|k| loader.has_range(k));
        // The tree is done with: its created entries move into their changes
        // (a batch that failed keeps its error).
        if batch.is_ok() {
            fill_deferred(&mut root, &mut changes, &mut deferred, true)?;
        }
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
                let taught = match schema {
                    std::borrow::Cow::Owned(s) => Some(s),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                self.catalog_committed(base, revision, taught, None);
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

/// The error of a transaction asked to run at revision `expected` when the
/// store is at `now`.
pub(crate) fn moved(expected: u64, now: u64) -> Error {
    Error::Store(canopy_store::StoreError::new(
        ErrorKind::Conflict,
        format!("the store moved on from revision {expected} to {now}: another writer committed first"),
    ))
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

/// Whether no edit's path lies at or under another's or names the same node,
/// as paths are written: then no edit changes what another created or
/// deleted. The paths are sorted as bytes and neighbours compared. A step
/// names one node when it has no selector (a container or leaf, or a whole
/// list), names a list entry by all of its list's keys, or a leaf-list entry
/// by its value; a step that may name several (a position, keys of a list
/// not known as keyed, some of a list's keys) is wild. Beside a wild step,
/// or beside a whole list where other paths name its entries, paths are
/// taken for overlapping.
fn edits_apart(edits: &[Edit], lists: &canopy_core::Schemaless) -> bool {
    use canopy_core::keycode::push_escaped;
    use canopy_core::path::Selector;
    if edits.len() < 2 {
        return true;
    }
    // Each path as bytes: per step its name, escaped, then what the step
    // names: 1 the node, 2 an entry (its keys sorted by name, escaped, then
    // 4), 3 wild (the path's bytes end there); with where those kind bytes
    // are. Sorted, a path at or under another follows it: two paths overlap
    // when one is a prefix of the next, or they first differ at a kind byte
    // (the same name taken otherwise: whole and entries, or wild).
    // All paths' bytes in one buffer and all kind-byte offsets in another;
    // each path is its two ranges.
    let mut bytes: Vec<u8> = Vec::with_capacity(edits.len() * 64);
    let mut kinds: Vec<u32> = Vec::with_capacity(edits.len() * 4);
    let mut paths: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::with_capacity(edits.len());
    let mut sp = String::new();
    let mut pairs: Vec<&(canopy_core::Name, canopy_core::value::Text)> = Vec::new();
    for e in edits {
        if e.path.is_root() {
            return false;
        }
        sp.clear();
        let (start, kinds_start) = (bytes.len(), kinds.len());
        for seg in &e.path.segments {
            sp.push('/');
            sp.push_str(&seg.name);
            push_escaped(&mut bytes, seg.name.as_bytes());
            kinds.push((bytes.len() - start) as u32);
            match &seg.selector {
                Selector::None => bytes.push(1),
                Selector::Value(v) => {
                    bytes.push(2);
                    push_escaped(&mut bytes, b"");
                    push_escaped(&mut bytes, v.as_bytes());
                    bytes.push(4);
                }
                Selector::Keys(k) if crate::prepare::names_one_entry(k, lists.lists.get(&sp)) => {
                    bytes.push(2);
                    pairs.clear();
                    pairs.extend(k.iter());
                    if !pairs.is_sorted_by(|a, b| a.0 <= b.0) {
                        pairs.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                    }
                    for (n, v) in pairs.drain(..) {
                        push_escaped(&mut bytes, n.as_bytes());
                        push_escaped(&mut bytes, v.as_bytes());
                    }
                    bytes.push(4);
                }
                Selector::Keys(_) | Selector::Position(_) => {
                    bytes.push(3);
                    break;
                }
            }
        }
        paths.push((start..bytes.len(), kinds_start..kinds.len()));
    }
    paths.sort_unstable_by(|a, b| bytes[a.0.clone()].cmp(&bytes[b.0.clone()]));
    paths.windows(2).all(|w| {
        let ((a, a_kinds), (b, _)) = (&w[0], &w[1]);
        let (a, b) = (&bytes[a.clone()], &bytes[b.clone()]);
        let d = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        d < a.len() && kinds[a_kinds.clone()].binary_search(&(d as u32)).is_err()
    })
}

/// Fills the changes at `deferred` (entries created but not copied, see
/// [`apply_edit_deferring`]) from `root`: moved out of it with `take`.
fn fill_deferred(root: &mut Container, changes: &mut [Change], deferred: &mut Vec<usize>, take: bool) -> Result<()> {
    fill_created_all(root, changes, deferred, take)?;
    deferred.clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::edits_apart;
    use canopy_core::edit::Edit;
    use canopy_core::tree::ListInfo;
    use canopy_core::Path;

    #[test]
    fn edits_apart_takes_nested_and_wild_paths_for_overlapping() {
        let mut lists = canopy_core::Schemaless::default();
        lists.lists.insert("/c/i".into(), ListInfo::keyed(["name".to_string()]));
        lists.lists.insert("/c/p".into(), ListInfo::keyed(["a".to_string(), "b".to_string()]));
        let apart = |paths: &[&str]| {
            let edits: Vec<Edit> = paths.iter().map(|p| Edit::delete(p.parse().unwrap())).collect();
            edits_apart(&edits, &lists)
        };
        // Apart: other entries, other leaves, keys in another order naming other entries.
        assert!(apart(&["/c/i[name='a']", "/c/i[name='b']/mtu", "/c/x"]));
        assert!(apart(&["/c/p[a='1'][b='2']", "/c/p[b='1'][a='2']", "/c/i[name='a']"]));
        assert!(apart(&["/c/l[.='1']", "/c/l[.='2']"]));
        // Leaves of one entry; names and key values one the prefix of another.
        assert!(apart(&["/c/i[name='a']/mtu", "/c/i[name='a']/speed", "/c/i[name='ab']/mtu"]));
        assert!(apart(&["/c/x", "/c/xy", "/c/i[name='a']", "/c/ix"]));
        assert!(apart(&["/c/p[a='1'][b='2']/v", "/c/p[a='1'][b='22']", "/c/p[a='12'][b='2']"]));
        // Nested, or the same node: an entry and a node below it, in either order.
        assert!(!apart(&["/c/i[name='a']", "/c/i[name='a']/mtu"]));
        assert!(!apart(&["/c/i[name='a']/mtu", "/c/i[name='a']"]));
        assert!(!apart(&["/c/i[name='a']", "/c/i[name='a']"]));
        assert!(!apart(&["/c/p[a='1'][b='2']", "/c/p[b='2'][a='1']/v"]));
        assert!(!apart(&["/c", "/c/i[name='a']"]));
        assert!(!apart(&["/", "/c/x"]));
        // A whole list beside its entries; wild steps beside anything of their name.
        assert!(!apart(&["/c/i", "/c/i[name='a']"]));
        assert!(!apart(&["/c/i[name='a']", "/c/i"]));
        assert!(!apart(&["/c/p[a='1']", "/c/p[a='1'][b='2']"]));
        assert!(!apart(&["/c/k[3]", "/c/k[4]"]));
        assert!(!apart(&["/c/u[n='1']/x", "/c/u[n='2']/x"]));
    }

    /// Paths taken for apart never overlap pairwise (`prepare::overlap`,
    /// which reads a step without a selector as any entry), over random sets
    /// of paths through keyed, partly keyed, unknown and leaf-list steps.
    #[test]
    fn edits_taken_for_apart_overlap_in_no_pair() {
        let mut lists = canopy_core::Schemaless::default();
        lists.lists.insert("/c/i".into(), ListInfo::keyed(["name".to_string()]));
        lists.lists.insert("/c/p".into(), ListInfo::keyed(["a".to_string(), "b".to_string()]));
        lists.lists.insert("/c/i/q".into(), ListInfo::keyed(["k".to_string()]));
        let steps = [
            "/c",
            "/c/x",
            "/c/i",
            "/c/i[name='a']",
            "/c/i[name='b']",
            "/c/i[name='a']/mtu",
            "/c/i[name='b']/mtu",
            "/c/i[name='a']/q[k='1']",
            "/c/i[name='a']/q[k='1']/v",
            "/c/i[name='a']/q",
            "/c/p[a='1'][b='2']",
            "/c/p[b='2'][a='1']",
            "/c/p[a='1']",
            "/c/p[a='1'][b='2']/v",
            "/c/u[n='1']",
            "/c/u[n='1']/x",
            "/c/k[2]",
            "/c/l[.='1']",
            "/c/l[.='2']",
            "/c/l",
            "/c/xy",
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut apart_sets = 0;
        for _ in 0..20_000 {
            let count = 2 + next(4);
            let paths: Vec<Path> = (0..count).map(|_| steps[next(steps.len())].parse().unwrap()).collect();
            let edits: Vec<Edit> = paths.iter().map(|p| Edit::delete(p.clone())).collect();
            if edits_apart(&edits, &lists) {
                apart_sets += 1;
                for (i, a) in paths.iter().enumerate() {
                    for b in &paths[i + 1..] {
                        assert!(!crate::prepare::overlap(a, b), "taken for apart: {a} and {b}");
                    }
                }
            }
        }
        assert!(apart_sets > 1_000, "{apart_sets}");
    }
}
