//! Stores and sessions: the API users call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use canopy_core::diff::{self, Change, Subtree};
use canopy_core::edit::{apply_edit_owned, canonical_path, canonical_path_cow, Edit, Operation};
use canopy_core::keycode;
use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::select;
use canopy_core::tree::{Container, Insert, ListInfo, Node, NodeRef};
use canopy_core::{Schema, Schemaless, Value};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Backend, Batch, ErrorKind, Snapshot, StoreUrl};
use canopy_yang::{WithDefaults, YangSchema};

use crate::catalog::{Catalog, Catalogs};
use crate::commit::batch_for;
use crate::connections::{Conn, Control};
use crate::error::{Error, Result};
use crate::hub::Hub;
use crate::load::{node_key, Loader};
use crate::subscribe::{self, Matched};

/// How a store is opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Keep each datastore's tree in memory: reads never touch the backend,
    /// writes go through to it as diffs. The URL parameter `cache=on` sets it.
    pub cache: bool,
}

/// The result of a committed transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Commit {
    /// The store revision after the commit (unchanged when nothing changed).
    pub revision: u64,
    /// What changed, in order.
    pub changes: Vec<Change>,
}

/// A datastore tree held in memory, valid at `revision`.
struct Cached {
    revision: u64,
    tree: Container,
}

/// An open store.
pub struct Store {
    backend: Box<dyn Backend>,
    url: String,
    /// What the newest revision seen says besides its data: lists, the YANG
    /// schema, locks and the candidate's state, as one unit.
    catalog: Catalogs,
    /// One writer at a time in this connection; other connections and
    /// processes are caught by the revision check of each batch.
    pub(crate) writer: Mutex<()>,
    cache: Option<RwLock<HashMap<Datastore, Cached>>>,
    /// This connection (locks and pushed state belong to it).
    pub(crate) conn: Conn,
    /// What the connections of this store in this process share.
    pub(crate) hub: Arc<Hub>,
}

impl Drop for Store {
    fn drop(&mut self) {
        self.release_locks();
        let _ = self.clear_pushed();
        self.conn.close();
    }
}

/// How many times a transaction is rebuilt when another process committed first.
pub(crate) const CONFLICT_RETRIES: usize = 20;

impl Store {
    /// Opens the store a URL names (see [`crate::open::open_backend`]). The URL
    /// parameter `cache=on|off` selects the cached mode.
    ///
    /// # Errors
    /// Invalid URLs, backends not built in, and the backend's open errors.
    pub fn open(url: &str) -> Result<Store> {
        let mut parsed = StoreUrl::parse(url)?;
        let cache = match parsed.params.remove("cache").as_deref() {
            None | Some("off") => false,
            Some("on") => true,
            Some(other) => {
                return Err(canopy_store::StoreError::new(
                    ErrorKind::InvalidUrl,
                    format!("invalid store URL `{url}`: cache must be `on` or `off`, not `{other}`"),
                )
                .into())
            }
        };
        Store::open_with(&parsed, Options { cache })
    }

    /// Opens a store with explicit options.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub fn open_with(url: &StoreUrl, options: Options) -> Result<Store> {
        let backend = crate::open::open_backend(url)?;
        Store::from_backend(backend, url.as_str(), options)
    }

    /// Wraps an already open backend.
    ///
    /// # Errors
    /// Errors reading the store's learned list info.
    pub fn from_backend(backend: Box<dyn Backend>, url: &str, options: Options) -> Result<Store> {
        init_format(&*backend)?;
        {
            let snap = backend.snapshot()?;
            let control = Control::load(&*snap)?;
            // Pushed state of ended connections is collected; best effort (a
            // read-only store keeps it, and readers skip it anyway).
            let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
            crate::connections::collect_ended_pushers(&control, &mut batch);
            if !batch.is_empty() {
                drop(snap);
                let _ = backend.apply(&batch);
            }
        }
        let store = Store {
            backend,
            url: url.to_string(),
            catalog: Catalogs::new(),
            writer: Mutex::new(()),
            cache: options.cache.then(|| RwLock::new(HashMap::new())),
            conn: Conn::new(),
            hub: crate::hub::hub_for(url),
        };
        // Learned lists and the YANG schema are read (and checked) at open.
        store.catalog_at(&*store.backend.snapshot()?)?;
        Ok(store)
    }

    /// The URL the store was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The backend behind the store.
    pub fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// A session on a datastore.
    pub fn session(&self, ds: Datastore) -> Session<'_> {
        Session { store: self, ds, stored: false }
    }

    /// A session on `running`.
    pub fn running(&self) -> Session<'_> {
        self.session(Datastore::Running)
    }

    /// The current revision.
    ///
    /// # Errors
    /// Backend read errors.
    pub fn revision(&self) -> Result<u64> {
        Ok(self.backend.snapshot()?.revision())
    }

    /// The catalog of `snap`'s revision: lists, YANG schema, locks and the
    /// candidate's state as that revision holds them.
    pub(crate) fn catalog_at(&self, snap: &dyn Snapshot) -> Result<Arc<Catalog>> {
        self.catalog.at(snap)
    }

    /// The lists known at `snap`'s revision (learned, declared, the YANG schema's).
    pub(crate) fn schema_at(&self, snap: &dyn Snapshot) -> Result<Arc<Schemaless>> {
        Ok(self.catalog.at(snap)?.lists.clone())
    }

    /// Locks and the candidate's state at `snap`'s revision.
    pub(crate) fn control_at(&self, snap: &dyn Snapshot) -> Result<Arc<Control>> {
        Ok(self.catalog.at(snap)?.control.clone())
    }

    /// The YANG schema at `snap`'s revision (`None`: a schemaless store).
    pub(crate) fn yang_at(&self, snap: &dyn Snapshot) -> Result<Option<Arc<YangSchema>>> {
        Ok(self.catalog.at(snap)?.yang.clone())
    }

    /// The learned list info of the current revision.
    fn schema_now(&self) -> Result<Arc<Schemaless>> {
        let snap = self.backend.snapshot()?;
        self.schema_at(&*snap)
    }

    /// Declares a list's keys and ordering before data is imported (a schema
    /// would say this; schemaless stores learn it here or from the first path
    /// that creates an entry). Declaring what is already known does nothing.
    ///
    /// # Errors
    /// [`Error::Usage`] when the list is known with other keys or ordering.
    pub fn declare_list(&self, schema_path: &str, info: ListInfo) -> Result<()> {
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        if !self.declaration_needed(schema_path, &info)? {
            return Ok(());
        }
        let snap = self.backend.snapshot()?;
        let mut k = keys::LIST_INFO.to_vec();
        k.extend_from_slice(schema_path.as_bytes());
        let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
        batch.put(k, keys::encode_list_info(&info));
        drop(snap);
        self.backend.apply(&batch)?;
        Ok(())
    }

    /// Whether declaring `info` for the list at `schema_path` records anything
    /// (`false`: known as declared).
    ///
    /// # Errors
    /// As [`Store::declare_list`].
    fn declaration_needed(&self, schema_path: &str, info: &ListInfo) -> Result<bool> {
        let known = {
            let snap = self.backend.snapshot()?;
            self.schema_at(&*snap)?.list_info(schema_path)
        };
        match known {
            Some(known) if known == *info => return Ok(false),
            // Recorded keyless (imported before its keys were declared): keys
            // may be declared once no datastore holds entries stored without them.
            Some(known) if known.keys.is_empty() => {
                for ds in Datastore::ALL {
                    if self.session(ds).count(schema_path)? > 0 {
                        return Err(Error::Usage(format!(
                            "list {schema_path} holds entries stored without keys (in {}, imported before its keys \
                             were declared); delete them before declaring its keys",
                            ds.name()
                        )));
                    }
                }
            }
            Some(known) => {
                return Err(Error::Usage(format!(
                    "list {schema_path} already has keys {:?}{}; declared keys cannot change",
                    known.keys,
                    if known.user_ordered { " (ordered by user)" } else { "" }
                )))
            }
            None => {}
        }
        Ok(true)
    }

    /// Rewrites the store so that space freed by deletes returns to the filesystem.
    ///
    /// # Errors
    /// Backend errors; the store is unchanged when compaction fails.
    pub fn compact(&self) -> Result<()> {
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        Ok(self.backend.compact()?)
    }

    /// Verifies the store: every key and fragment decodes, every fragment has
    /// its parent, user-ordered entries and the order index agree, and the
    /// backend's own check passes. Returns the problems found (empty: healthy).
    ///
    /// # Errors
    /// Errors that stop the check itself (the store cannot be read at all).
    pub fn check(&self) -> Result<Vec<String>> {
        self.check_with_progress(&mut |_| {})
    }

    /// [`Store::check`], telling `progress` how many records it has read so
    /// far, every few thousand (compare with `backend().approx_len()`).
    ///
    /// # Errors
    /// As [`Store::check`].
    pub fn check_with_progress(&self, progress: &mut dyn FnMut(u64)) -> Result<Vec<String>> {
        let yang_lists = match self.yang_schema() {
            Ok(y) => Ok(y.map(|y| y.lists()).unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        };
        crate::check::check(self.backend(), yang_lists, progress)
    }

    /// Runs `edits` as one transaction on `ds`. When another process commits
    /// first, the transaction is rebuilt on the new state and tried again.
    fn transact(&self, ds: Datastore, edits: &[Edit]) -> Result<Commit> {
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
    fn transact_owned(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| poisoned())?;
        self.transact_once(ds, edits)
    }

    fn transact_once(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
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
                crate::datastores::discard_ops(&mut batch);
                // Another writer committed since: the candidate is theirs now.
                let _ = self.backend.apply(&batch);
            }
        }
        out
    }

    fn transact_uncached(&self, ds: Datastore, edits: Vec<Edit>) -> Result<Commit> {
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

    fn transact_cached(
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
    fn learned_committed(&self, revision: u64, schema: Schemaless) {
        self.catalog.committed(revision - 1, revision, Some(schema), None);
    }

    /// After a commit at `revision` on top of the catalog held: the lists
    /// and control records it leaves, where it changed them.
    pub(crate) fn catalog_committed(
        &self,
        base: u64,
        revision: u64,
        lists: Option<Schemaless>,
        control: Option<Control>,
    ) {
        self.catalog.committed(base, revision, lists, control);
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

    /// Runs `f` on a tree holding at least what `query` selects from the
    /// view a session reads: a datastore's contents (the candidate's being
    /// running's until it is edited), or for operational (unless `stored`)
    /// the merged operational view.
    fn with_view<T>(
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
    fn entry_direct(&self, ds: Datastore, stored: bool, path: &Path) -> Result<Option<Option<Container>>> {
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
    fn stored_ds(&self, snap: &dyn Snapshot, ds: Datastore) -> Result<Datastore> {
        Ok(match ds {
            Datastore::Candidate => self.control_at(snap)?.read_ds(ds),
            d => d,
        })
    }

    /// With a YANG schema, an instance path read must name schema nodes.
    fn check_query(&self, q: &Query) -> Result<()> {
        if let Some(p) = q.to_instance_path() {
            if let Some(y) = self.yang_schema()? {
                y.resolve_path(&p)?;
            }
        }
        Ok(())
    }

    /// Runs `f` on a tree that holds at least what `query` can select: the
    /// cached tree (borrowed), or a sparse tree loaded for it (owned).
    fn with_tree<T>(
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

/// A sparse tree of the one in `space` holding at least what `query` can select.
pub(crate) fn load_for(
    snap: &dyn Snapshot,
    space: keys::Space,
    query: &Query,
    schema: &Schemaless,
) -> Result<Container> {
    let mut root = Container::default();
    let mut loader = Loader::in_space(snap, space, schema);
    let prefix = read_prefix(query, schema);
    loader.path(&mut root, &prefix)?;
    load_whole(&mut loader, &mut root, &prefix)?;
    drop(loader);
    Ok(root)
}

/// The schema edits are applied with: lists as known (learned or from YANG),
/// values in paths typed by the YANG schema if there is one.
pub(crate) struct Typed<'a> {
    pub(crate) lists: &'a Schemaless,
    pub(crate) yang: Option<&'a YangSchema>,
}

impl Schema for Typed<'_> {
    fn kind(&self, schema_path: &str) -> Option<canopy_core::schema::NodeKind> {
        match self.yang {
            Some(y) => y.kind(schema_path),
            None => self.lists.kind(schema_path),
        }
    }

    fn list_info(&self, schema_path: &str) -> Option<ListInfo> {
        self.lists.list_info(schema_path)
    }

    fn lists_below(&self, schema_path: &str) -> bool {
        // With YANG, normalisation has typed every node of a value already.
        self.yang.is_none() && self.lists.lists_below(schema_path)
    }

    fn path_value(&self, at: &Path, key: Option<&str>, text: &str) -> Value {
        match self.yang {
            Some(y) => y.path_value(at, key, text),
            None => Value::String(text.to_string()),
        }
    }
}

/// What a query selects from `tree`, as one tree (see [`Session::get`]).
pub(crate) fn selection(
    tree: Cow<'_, Container>,
    query: &Query,
    opts: ReadOptions,
    yang: Option<&YangSchema>,
) -> Container {
    let paths = query.evaluate(&tree);
    if let (Some(y), [], Some(p)) = (yang, paths.as_slice(), query.to_instance_path()) {
        if opts.with_defaults == WithDefaults::ReportAll {
            return default_only(y, &tree, &p);
        }
    }
    let mut out = match (paths.as_slice(), tree) {
        ([p], tree) if p.is_root() => tree.into_owned(),
        // A tree loaded for this read: the selection moves out of it.
        ([p], Cow::Owned(tree)) => canopy_core::select_owned(tree, p),
        (_, tree) => select(&tree, &paths),
    };
    if let Some(y) = yang {
        for p in &paths {
            y.with_defaults(&mut out, p, opts.with_defaults);
        }
    }
    if let Some(d) = opts.depth {
        for p in &paths {
            trim_at(&mut out, p, d);
        }
    }
    out
}

/// A node that is not stored but has a default (report-all): the default,
/// with its ancestors, when its parent exists.
fn default_only(y: &YangSchema, tree: &Container, p: &Path) -> Container {
    let (Some(parent), Some(last)) = (p.parent(), p.last()) else { return Container::default() };
    let mut out = if parent.is_root() { Container::default() } else { select(tree, std::slice::from_ref(&parent)) };
    if !parent.is_root() && out.children.is_empty() {
        return out;
    }
    y.with_defaults(&mut out, &parent, WithDefaults::ReportAll);
    if let Ok(c) = diff::container_mut(&mut out, &parent) {
        c.children.retain(|name, _| *name == last.name);
    }
    out
}

/// Writes the layout version into an empty store; refuses a store with data
/// but no version, or another version. Processes opening a new store at once
/// race to write it: the ones that lose read the winner's.
fn init_format(backend: &dyn Backend) -> Result<()> {
    for _ in 0..CONFLICT_RETRIES {
        match init_format_once(backend) {
            Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict => continue,
            other => return other,
        }
    }
    init_format_once(backend)
}

fn init_format_once(backend: &dyn Backend) -> Result<()> {
    let snap = backend.snapshot()?;
    match snap.get(keys::FORMAT)? {
        Some(v) if v == keys::FORMAT_VERSION.to_be_bytes() => Ok(()),
        Some(v) => Err(canopy_store::StoreError::new(
            ErrorKind::Unsupported,
            format!(
                "{} store: layout version {}; this canopy reads version {}",
                backend.kind(),
                v.try_into().map(u32::from_be_bytes).map_or_else(|_| "?".into(), |n: u32| n.to_string()),
                keys::FORMAT_VERSION
            ),
        )
        .into()),
        None => {
            if snap.first_with_prefix(&[], false)?.is_some() {
                return Err(canopy_store::StoreError::corrupted(format!(
                    "{} store holds data but no canopy format record (not a canopy store?)",
                    backend.kind()
                ))
                .into());
            }
            let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
            batch.put(keys::FORMAT.to_vec(), keys::FORMAT_VERSION.to_be_bytes().to_vec());
            drop(snap);
            backend.apply(&batch)?;
            Ok(())
        }
    }
}

pub(crate) fn poisoned() -> Error {
    Error::Store(canopy_store::StoreError::new(ErrorKind::Unavailable, "store lock poisoned by a panic"))
}

/// Undoes changes already applied to a cached tree.
pub(crate) fn undo(tree: &mut Container, changes: &[Change]) {
    diff::apply(tree, &diff::invert(changes)).expect("undoing applied changes");
}

/// Reads a whole datastore into a tree.
fn load_all(snap: &dyn Snapshot, ds: Datastore, schema: &Schemaless) -> Result<Container> {
    let mut root = Container::default();
    Loader::new(snap, ds, schema).range(&mut root, &[])?;
    // The tree is kept: pack its lists.
    root.pack_lists();
    Ok(root)
}

/// Teaches `schema` what `edit` says about lists it does not know: keyed paths
/// through a new list give its keys (user-ordered when the edit inserts at a
/// position); lists in the edit's value give theirs. A list that `tree` holds
/// as keyless (imported without declared keys) is not taught keys: key
/// predicates select among its entries instead. New lists go to `learned`.
pub(crate) fn learn_edit(
    schema: &mut Schemaless,
    learned: &mut Vec<(String, ListInfo)>,
    edit: &Edit,
    tree: &Container,
) {
    let mut teach = |schema: &mut Schemaless, sp: String, info: ListInfo| {
        if !schema.lists.contains_key(&sp) {
            schema.lists.insert(sp.clone(), info.clone());
            learned.push((sp, info));
        }
    };
    fn walk(
        schema: &mut Schemaless,
        sp: &str,
        c: &Container,
        teach: &mut dyn FnMut(&mut Schemaless, String, ListInfo),
    ) {
        for (name, child) in &c.children {
            if child.is_inline() {
                continue;
            }
            let csp = if sp == "/" { format!("/{name}") } else { format!("{sp}/{name}") };
            match child {
                Node::Container(cc) => walk(schema, &csp, cc, teach),
                Node::List(l) => {
                    // Keyless lists are recorded too: then every stored list
                    // is known as one, and reads plan around it.
                    teach(schema, csp.clone(), l.info.clone());
                    for e in l.entries() {
                        walk(schema, &csp, e, teach);
                    }
                }
                _ => {}
            }
        }
    }
    // Lists the schema knows teach nothing: only look further when the path
    // names an unknown one.
    let mut sp = String::new();
    let known = edit.path.segments.iter().all(|seg| {
        sp.push('/');
        sp.push_str(&seg.name);
        !matches!(seg.selector, Selector::Keys(_)) || schema.lists.contains_key(&sp)
    });
    let path = match known {
        true => Path::root(),
        false => canonical_path(tree, &edit.path, schema),
    };
    for (i, seg) in path.segments.iter().enumerate() {
        let Selector::Keys(k) = &seg.selector else { continue };
        let list = Path { segments: path.segments[..=i].to_vec() };
        let list = canopy_core::diff::with_selector(&list, Selector::None);
        if matches!(tree.lookup(&list), Some(NodeRef::List(l)) if l.info.keys.is_empty()) {
            continue;
        }
        let info = match (&edit.insert, i + 1 == path.segments.len()) {
            // An insert position on a new list's entry asks for user order.
            (Some(_), true) => ListInfo { keys: k.iter().map(|(n, _)| n.clone()).collect(), user_ordered: true },
            _ => ListInfo::keyed(k.iter().map(|(n, _)| n.clone())),
        };
        teach(schema, list.schema_path(), info);
    }
    match &edit.value {
        Some(Node::Container(c)) => walk(schema, &edit.path.schema_path(), c, &mut teach),
        Some(Node::List(l)) => {
            teach(schema, edit.path.schema_path(), l.info.clone());
            for entry in l.entries() {
                walk(schema, &edit.path.schema_path(), entry, &mut teach);
            }
        }
        _ => {}
    }
}

/// The deepest path every node `query` can select lies under. An unprefixed
/// first name may match a top-level node of any module: then the whole
/// datastore is the prefix.
fn read_prefix(query: &Query, schema: &Schemaless) -> Path {
    let prefix = query.instance_prefix(&|sp| schema.list_info(sp));
    match prefix.segments.first() {
        Some(seg) if !seg.name.contains(':') && schema.lists.keys().any(|k| k.contains(':')) => Path::root(),
        _ => prefix,
    }
}

/// Loads the whole subtree at `path` (ancestors must be loaded).
pub(crate) fn load_whole(loader: &mut Loader, root: &mut Container, path: &Path) -> Result<()> {
    let Some(last) = path.last() else {
        loader.range(root, &[])?;
        return Ok(());
    };
    match &last.selector {
        Selector::None => {
            let parent = path.parent().unwrap_or_default();
            let Some(mut rel) = node_key(root, &parent) else { return Ok(()) };
            keys::push_name(&mut rel, &last.name);
            loader.range(root, &rel)?;
        }
        Selector::Keys(_) => {
            if let Some(rel) = node_key(root, path).or_else(|| keys::path_key(path).ok()) {
                loader.range(root, &rel)?;
            }
        }
        Selector::Position(_) | Selector::Value(_) => {}
    }
    Ok(())
}

/// Which of a transaction's edits delete a container, a whole list or a list
/// entry that can be erased unread (one range delete, [`Change::Erased`]):
/// a delete or remove of such a node whose lists are all known with keys,
/// that no other edit of the transaction touches, that no subscriber of the
/// datastore is told about (subscribers get old values), and whose content no
/// YANG check reads.
fn erasable(edits: &[Edit], ds: Datastore, schema: &Schemaless, yang: Option<&YangSchema>, hub: &Hub) -> Vec<bool> {
    let mut out = vec![false; edits.len()];
    if hub.subscribers().iter().any(|s| s.ds == ds) {
        return out;
    }
    for (i, e) in edits.iter().enumerate() {
        if !matches!(e.op, Operation::Delete | Operation::Remove) || e.path.is_root() {
            continue;
        }
        let mut sp = String::new();
        let keyed = e.path.segments.iter().all(|seg| {
            sp.push('/');
            sp.push_str(&seg.name);
            match &seg.selector {
                Selector::None => true,
                Selector::Keys(_) => schema.lists.get(&sp).is_some_and(|l| !l.keys.is_empty()),
                Selector::Position(_) | Selector::Value(_) => false,
            }
        });
        if !keyed {
            continue;
        }
        let last_keyed = matches!(e.path.last().map(|s| &s.selector), Some(Selector::Keys(_)));
        let fragment_node = match yang {
            Some(y) => {
                matches!(y.kind(&sp), Some(NodeKind::Container | NodeKind::List))
                    && !y.erase_needs_content(&sp, ds != Datastore::Operational)
            }
            // Without a schema a name without keys may be a leaf (stored in
            // its parent's fragment): only known lists and their entries.
            None => last_keyed || schema.lists.contains_key(&sp),
        };
        let alone = edits.iter().enumerate().all(|(j, o)| j == i || !overlap(&o.path, &e.path));
        out[i] = fragment_node && alone;
    }
    out
}

/// Whether one of two paths may lie at or under the other: their common
/// steps name the same nodes, a step without a selector standing for any
/// entry of its list.
fn overlap(a: &Path, b: &Path) -> bool {
    a.segments.iter().zip(&b.segments).all(|(x, y)| {
        x.name == y.name
            && (x.selector == y.selector
                || matches!(x.selector, Selector::None)
                || matches!(y.selector, Selector::None))
    })
}

/// Applies an edit [`erasable`] chose: checks that the node is stored (a
/// delete of an absent node fails), loads its ancestors (validation checks
/// what their losing a child means) and records [`Change::Erased`].
fn erase_edit(
    loader: &mut Loader,
    root: &mut Container,
    edit: &Edit,
    schema: &Schemaless,
    changes: &mut Vec<Change>,
) -> Result<()> {
    let path = canonical_path_cow(root, &edit.path, schema).into_owned();
    let rel = keys::path_key(&path)?;
    if !loader.any_under(&rel)? {
        return match edit.op {
            Operation::Delete => Err(canopy_core::Error::NotFound { path: edit.path.to_string() }.into()),
            _ => Ok(()),
        };
    }
    if let Some(parent) = path.parent() {
        loader.path(root, &parent)?;
    }
    changes.push(Change::Erased { path });
    Ok(())
}

/// Loads what `edit` needs into the sparse tree `root`.
fn prepare(loader: &mut Loader, root: &mut Container, edit: &Edit, schema: &Schemaless) -> Result<()> {
    // A keyless list (imported without declared keys), or one the schema does
    // not know yet: read it whole, so that key predicates can pick among its
    // entries (see `canonical_path`).
    let mut sp = String::new();
    for (i, seg) in edit.path.segments.iter().enumerate() {
        sp.push('/');
        sp.push_str(&seg.name);
        if !matches!(seg.selector, Selector::Keys(_)) || schema.lists.get(&sp).is_some_and(|i| !i.keys.is_empty()) {
            continue;
        }
        let parent = canonical_path(root, &Path { segments: edit.path.segments[..i].to_vec() }, schema);
        loader.path(root, &parent)?;
        if let Some(mut rel) = node_key(root, &parent) {
            keys::push_name(&mut rel, &seg.name);
            loader.range(root, &rel)?;
        }
    }
    let path = canonical_path_cow(root, &edit.path, schema);
    let path = &*path;
    loader.path(root, path)?;
    match edit.op {
        Operation::Delete | Operation::Remove | Operation::Replace => load_whole(loader, root, path)?,
        Operation::Merge | Operation::Create => {
            if let Some(v) = &edit.value {
                load_value(loader, root, path, v, schema)?;
            }
            // Create of a whole list must see whether the list exists.
            if let (Some(last), Some(Node::List(_))) = (path.last(), &edit.value) {
                if last.selector == Selector::None {
                    load_whole(loader, root, path)?;
                }
            }
        }
    }
    // User-ordered entries on the path, the target's and its ancestors' (a
    // merge below a new entry creates it too): the list's ends, the entry's
    // neighbours, and for the target the anchor's.
    sp.clear();
    for depth in 1..=path.segments.len() {
        sp.push('/');
        sp.push_str(&path.segments[depth - 1].name);
        let Selector::Keys(kv) = &path.segments[depth - 1].selector else { continue };
        if !schema.lists.get(&sp).is_some_and(|i| i.user_ordered) {
            continue;
        }
        let entry_path = Path { segments: path.segments[..depth].to_vec() };
        let list_path = canopy_core::diff::with_selector(&entry_path, Selector::None);
        let Some(parent_rel) = node_key(root, &list_path.parent().unwrap_or_default()) else { break };
        if !parent_rel.is_empty() && loader.known_absent(&parent_rel) {
            // Nothing of the list is stored.
            break;
        }
        let mut list_rel = parent_rel;
        keys::push_name(&mut list_rel, &list_path.last().expect("list").name);
        let order_of = |root: &Container, vals: &[String]| -> Option<Vec<u8>> {
            match root.lookup(&list_path) {
                Some(NodeRef::List(l)) => l.pos_of(vals),
                _ => None,
            }
        };
        let vals: Vec<String> = kv.iter().map(|(_, v)| v.clone()).collect();
        let around = order_of(root, &vals);
        loader.order_edges(root, &list_rel, around.as_deref())?;
        if depth < path.segments.len() {
            continue;
        }
        if let Some(Insert::Before(anchor) | Insert::After(anchor)) = &edit.insert {
            let mut arel = list_rel.clone();
            arel.extend_from_slice(&keycode::entry_key(anchor));
            loader.fragment(root, &arel)?;
            let around = order_of(root, anchor);
            loader.order_edges(root, &list_rel, around.as_deref())?;
        }
    }
    Ok(())
}

/// Loads the stored nodes a merge of `node` at `path` meets: point reads of
/// each container and entry the value names, skipping whatever lies below a
/// node that is not stored.
fn load_value(loader: &mut Loader, root: &mut Container, path: &Path, node: &Node, schema: &Schemaless) -> Result<()> {
    match node {
        Node::Container(c) => {
            let Some(rel) = node_key(root, path).or_else(|| keys::path_key(path).ok()) else { return Ok(()) };
            if !path.is_root() && !loader.fragment(root, &rel)? {
                return Ok(());
            }
            for (name, child) in &c.children {
                load_value(loader, root, &path.child(name.clone(), Selector::None), child, schema)?;
            }
        }
        Node::List(l) => {
            let Some(mut list_rel) = node_key(root, &path.parent().unwrap_or_default()) else { return Ok(()) };
            keys::push_name(&mut list_rel, &path.last().expect("list").name);
            let info = schema.list_info(&path.schema_path()).unwrap_or_else(|| l.info.clone());
            if info.keys.is_empty() {
                loader.range(root, &list_rel)?;
                return Ok(());
            }
            if !loader.any_under(&list_rel)? {
                return Ok(());
            }
            if info.user_ordered {
                loader.order_edges(root, &list_rel, None)?;
            }
            for e in l.entries() {
                let Some(vals) = info.keys.iter().map(|k| e.key_text(k)).collect::<Option<Vec<_>>>() else { continue };
                let mut rel = list_rel.clone();
                rel.extend_from_slice(&keycode::entry_key(&vals));
                if loader.fragment(root, &rel)? {
                    let ep = canopy_core::diff::with_selector(
                        path,
                        Selector::Keys(info.keys.iter().cloned().zip(vals).collect()),
                    );
                    for (name, child) in &e.children {
                        load_value(loader, root, &ep.child(name.clone(), Selector::None), child, schema)?;
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Options of a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Levels of data nodes below each selected node to include (`None`: all).
    /// `Some(0)` gives the selected nodes without children; list entries keep
    /// their key leaves at every depth.
    pub depth: Option<usize>,
    /// How defaults are reported when the store has a YANG schema (RFC 6243);
    /// `explicit` (what is stored) unless asked.
    pub with_defaults: WithDefaults,
}

/// Work on one datastore of a store.
///
/// On operational, a session reads the operational view (running's
/// configuration merged with state; see [`Store::provide`]) and its writes
/// push state that lasts as long as its connection ([`Store`]); a
/// [`Session::stored`] session reads and writes the state kept in the store
/// instead, which lasts until deleted.
pub struct Session<'s> {
    store: &'s Store,
    ds: Datastore,
    stored: bool,
}

impl Session<'_> {
    /// The datastore this session works on.
    pub fn datastore(&self) -> Datastore {
        self.ds
    }

    /// The same session on the datastore's stored contents: for operational,
    /// the state kept in the store (it outlives connections), without
    /// running's configuration, pushed state or providers.
    pub fn stored(self) -> Self {
        Session { stored: true, ..self }
    }

    /// Whether writes push connection-scoped operational state.
    fn pushes(&self) -> bool {
        self.ds == Datastore::Operational && !self.stored
    }

    /// Reads what `query` selects (an instance path or an XPath subset query)
    /// as one tree: each selected node with its subtree and its ancestors.
    ///
    /// # Errors
    /// [`Error::Data`] for a query that does not parse; backend errors.
    pub fn get(&self, query: &str, opts: ReadOptions) -> Result<Container> {
        let q = Query::parse(query)?;
        self.store.check_query(&q)?;
        self.store.with_view(self.ds, self.stored, &q, |tree, _, yang| selection(tree, &q, opts, yang))
    }

    /// Reads what `query` selects and writes it as RFC 7951 JSON to `out`.
    /// When the whole datastore is selected from the cache, it is written
    /// straight from the cached tree, without a copy.
    ///
    /// # Errors
    /// As [`Session::get`], and write errors of `out`.
    pub fn get_json<W: std::io::Write>(&self, query: &str, opts: ReadOptions, pretty: bool, mut out: W) -> Result<()> {
        let q = Query::parse(query)?;
        self.store.check_query(&q)?;
        // Uncached, a whole subtree streams from the stored fragments.
        let explicit = opts.with_defaults == WithDefaults::Explicit;
        let plain = !self.pushes() && explicit;
        if let (None, None, Some(p), true) = (&self.store.cache, opts.depth, q.to_instance_path(), plain) {
            if crate::stream::streamable(&p) {
                let snap = self.store.backend.snapshot()?;
                let schema = self.store.schema_at(&*snap)?;
                let ds = self.store.control_at(&*snap)?.read_ds(self.ds);
                let p = canonical_path(&Container::default(), &p, &*schema);
                if crate::stream::write_path(&*snap, ds, &schema, &p, pretty, &mut out)? {
                    return Ok(());
                }
            }
        }
        let wopts = canopy_core::json::WriteOptions { pretty, depth: None };
        let written = self.store.with_view(self.ds, self.stored, &q, |tree, _, yang| {
            let paths = q.evaluate(&tree);
            match (paths.as_slice(), &tree) {
                ([p], Cow::Borrowed(t)) if p.is_root() && opts.depth.is_none() && explicit => {
                    canopy_core::json::write_container(out, t, &wopts)
                }
                _ => canopy_core::json::write_container(out, &selection(tree, &q, opts, yang), &wopts),
            }
        })?;
        written.map_err(Error::Output)
    }

    /// The node at an instance path, if present.
    ///
    /// # Errors
    /// [`Error::Data`] for a path that does not parse; backend errors.
    pub fn get_item(&self, path: &str) -> Result<Option<Subtree>> {
        // One parse on the hot path; the instance-path parser runs again only
        // to name the position of what is not an instance identifier.
        let q = Query::parse(path)?;
        let p = match q.to_instance_path() {
            Some(p) => p,
            None => Query::parse_instance(path)?,
        };
        if let Some(found) = self.store.entry_direct(self.ds, self.stored, &p)? {
            return Ok(found.map(Subtree::Entry));
        }
        self.store
            .with_view(self.ds, self.stored, &q, |tree, schema, yang| {
                let p = crate::yang::check_read_path(yang, &p)?;
                let p = canonical_path(&tree, &p, schema);
                Ok(tree.lookup(&p).map(owned))
            })
            .and_then(|r| r)
    }

    /// How many nodes `query` selects.
    ///
    /// # Errors
    /// As [`Session::get`].
    pub fn count(&self, query: &str) -> Result<usize> {
        let q = Query::parse(query)?;
        self.store.check_query(&q)?;
        self.store.with_view(self.ds, self.stored, &q, |tree, _, _| q.evaluate(&tree).len())
    }

    /// Sets the leaf at `path` (merging: containers and list entries on the way
    /// are created). For a leaf-list entry path (`[.='v']`) the value is ignored.
    ///
    /// # Errors
    /// [`Error::Data`] for a bad path or a value that does not fit; backend errors.
    pub fn set(&self, path: &str, value: Value) -> Result<Commit> {
        let p: Path = path.parse()?;
        let node = match p.last().map(|s| &s.selector) {
            Some(Selector::Value(v)) => Node::leaf(Value::String(v.clone())),
            _ => Node::leaf(value),
        };
        self.apply(&[Edit::merge(p, node)])
    }

    /// Deletes the node at `path`.
    ///
    /// # Errors
    /// [`Error::Data`] ([`canopy_core::Error::NotFound`]) when it does not exist.
    pub fn delete(&self, path: &str) -> Result<Commit> {
        self.apply(&[Edit::delete(path.parse()?)])
    }

    /// Applies `edits` as one transaction: all of them, or on any error none.
    ///
    /// # Errors
    /// The first edit that fails (nothing is stored then); backend errors.
    pub fn apply(&self, edits: &[Edit]) -> Result<Commit> {
        match self.pushes() {
            true => self.store.push(edits.to_vec()),
            false => self.store.transact(self.ds, edits),
        }
    }

    /// Applies one edit whose value is RFC 7951 JSON text, as one transaction.
    /// `json` is written as [`canopy_core::json::parse_subtree`] takes it (the
    /// RESTCONF form: an object with the node as its only member, a whole
    /// document at `/`) and parsed with the lists the store knows; delete and
    /// remove take no value (`None`).
    ///
    /// # Errors
    /// [`Error::Data`] for a bad path, malformed JSON (with line and column) or
    /// a value that does not fit; [`Error::Usage`] for a value missing or given
    /// where the operation does not take one; as [`Session::apply`].
    pub fn edit_json(&self, op: Operation, path: &str, json: Option<&str>, insert: Option<Insert>) -> Result<Commit> {
        let p: Path = path.parse()?;
        let value = match (op, json) {
            (Operation::Delete | Operation::Remove, None) => None,
            (Operation::Delete | Operation::Remove, Some(_)) => {
                return Err(Error::Usage(format!("{op:?} takes no value").to_lowercase()))
            }
            // A leaf-list entry needs no value: the path names it.
            (_, None) if matches!(p.last().map(|s| &s.selector), Some(Selector::Value(_))) => None,
            (_, None) => return Err(Error::Usage(format!("{op:?} needs a value").to_lowercase())),
            (_, Some(text)) => {
                // Lists the path names by key are keyed lists, known or not.
                let mut schema = (*self.store.schema_now()?).clone();
                let mut at = Path::root();
                for seg in &p.segments {
                    at = at.child(seg.name.clone(), Selector::None);
                    if let Selector::Keys(k) = &seg.selector {
                        schema
                            .lists
                            .entry(at.schema_path())
                            .or_insert_with(|| ListInfo::keyed(k.iter().map(|(n, _)| n.clone())));
                    }
                }
                let node = canopy_core::json::parse_subtree_str(text, &schema, &p)?;
                // An edit of one entry takes the entry itself (see `Edit::value`).
                Some(match (node, p.last().map(|s| &s.selector)) {
                    (Node::List(l), Some(Selector::Keys(_) | Selector::Position(_))) => {
                        Node::Container(l.entries().next().cloned().unwrap_or_default())
                    }
                    (Node::LeafList(mut v), Some(Selector::Value(_))) if v.len() == 1 => {
                        let e = v.remove(0);
                        Node::Leaf { value: e.value, meta: e.meta }
                    }
                    (node, _) => node,
                })
            }
        };
        self.apply(&[Edit { op, path: p, value, insert }])
    }

    /// Merges the JSON value `json` (an object for a container or for a list
    /// entry, which must hold its key leaves; an array for a list or leaf-list;
    /// a scalar for a leaf) at `path`, the
    /// way [`Session::set`] merges a scalar. List entries in it are keyed as
    /// the store knows their lists; lists it does not know are keyless.
    ///
    /// # Errors
    /// As [`Session::edit_json`]; line numbers in JSON errors are those of `json`.
    pub fn set_json(&self, path: &str, json: &str) -> Result<Commit> {
        let p: Path = path.parse()?;
        let Some(last) = p.last() else {
            return self.edit_json(Operation::Merge, path, Some(json), None);
        };
        // The RESTCONF form around the value, on lines of its own, so that an
        // error's line is the value's line plus one.
        let mut name = String::new();
        canopy_core::json::write_json_string(&mut name, &last.name);
        let (open, close) = match last.selector {
            Selector::Keys(_) | Selector::Position(_) => ("[", "]"),
            _ => ("", ""),
        };
        let wrapped = format!("{{{name}:{open}\n{json}\n{close}}}");
        match self.edit_json(Operation::Merge, path, Some(&wrapped), None) {
            Err(Error::Data(canopy_core::Error::Json { line, column, reason })) if line > 1 => {
                Err(Error::Data(canopy_core::Error::Json { line: line - 1, column, reason }))
            }
            other => other,
        }
    }

    /// Imports an RFC 7951 JSON document: merged into the datastore (or
    /// replacing it with `Operation::Replace`) as one transaction.
    ///
    /// # Errors
    /// [`Error::Data`] for malformed JSON (with line and column); as [`Session::apply`].
    pub fn import<R: std::io::Read>(&self, input: R, op: Operation) -> Result<Commit> {
        let tree = canopy_core::json::parse_document(input, &*self.store.schema_now()?)?;
        let edit = Edit { op, path: Path::root(), value: Some(Node::Container(tree)), insert: None };
        self.apply_owned(vec![edit])
    }

    /// [`Session::import`] with list declarations (as [`Store::declare_list`]
    /// takes them) that the document's lists follow. Every declaration is
    /// checked before anything is stored; the lists the document holds are
    /// recorded in the import's own transaction, so a failed import leaves no
    /// declaration behind. Declared lists the document does not hold are
    /// recorded after the import succeeded (a list recorded keyless, with no
    /// entries left, is re-declared before it, as [`Store::declare_list`] does).
    ///
    /// # Errors
    /// [`Error::Usage`] for a declaration that conflicts with a known list
    /// (nothing is stored); as [`Session::import`].
    pub fn import_declared<R: std::io::Read>(
        &self,
        input: R,
        op: Operation,
        lists: &[(String, ListInfo)],
    ) -> Result<Commit> {
        let known = self.store.schema_now()?;
        let mut schema = (*known).clone();
        for (path, info) in lists {
            if self.store.declaration_needed(path, info)? {
                schema.lists.insert(path.clone(), info.clone());
            }
        }
        for (path, info) in lists {
            // Recorded keyless: the transaction would keep the stored record.
            if known.lists.get(path).is_some_and(|k| k.keys.is_empty() && k != info) {
                self.store.declare_list(path, info.clone())?;
            }
        }
        let tree = canopy_core::json::parse_document(input, &schema)?;
        let edit = Edit { op, path: Path::root(), value: Some(Node::Container(tree)), insert: None };
        let commit = self.apply_owned(vec![edit])?;
        for (path, info) in lists {
            self.store.declare_list(path, info.clone())?;
        }
        Ok(commit)
    }

    /// [`Session::apply`] with edits taken by value. Not retried on a conflict.
    pub(crate) fn apply_owned(&self, edits: Vec<Edit>) -> Result<Commit> {
        match self.pushes() {
            true => self.store.push(edits),
            false => self.store.transact_owned(self.ds, edits),
        }
    }
}

/// An owned copy of a looked-up node.
fn owned(r: NodeRef<'_>) -> Subtree {
    match r {
        NodeRef::Root(c) | NodeRef::Container(c) => Subtree::Node(Node::Container(c.clone())),
        NodeRef::Entry(c) => Subtree::Entry(c.clone()),
        NodeRef::List(l) => Subtree::Node(Node::List(Box::new(l.clone()))),
        NodeRef::Leaf(v, m) => Subtree::Node(Node::Leaf { value: v.clone(), meta: m.clone() }),
        NodeRef::LeafList(v) => Subtree::Node(Node::LeafList(v.to_vec())),
        NodeRef::LeafListEntry(e) => Subtree::Value(e.clone()),
        NodeRef::AnyData(v, m) => Subtree::Node(Node::AnyData { value: Box::new(v.clone()), meta: m.clone() }),
    }
}

/// Cuts the subtree at `path` in `tree` to `depth` levels below it.
pub(crate) fn trim_at(tree: &mut Container, path: &Path, depth: usize) {
    let Some(parent) = path.parent() else {
        trim(tree, depth);
        return;
    };
    let Ok(parent) = diff::container_mut(tree, &parent) else { return };
    let seg = path.last().expect("not root");
    match (parent.children.get_mut(&seg.name), &seg.selector) {
        (Some(Node::Container(c)), Selector::None) => trim(c, depth),
        (Some(Node::List(l)), Selector::None) => {
            let keys = l.info.keys.clone();
            for e in l.entries_mut() {
                trim_entry(e, &keys, depth);
            }
        }
        (Some(Node::List(l)), sel) => {
            let keys = l.info.keys.clone();
            if let Some(vals) = diff::selector_values(&l.info, sel) {
                if let Some(e) = l.get_mut(&vals) {
                    trim_entry(e, &keys, depth);
                }
            }
        }
        _ => {}
    }
}

fn trim_entry(e: &mut Container, keys: &[String], depth: usize) {
    if depth == 0 {
        e.children.retain(|name, _| keys.contains(name));
    } else {
        trim(e, depth);
    }
}

/// Keeps `depth` levels of children (0: none).
fn trim(c: &mut Container, depth: usize) {
    if depth == 0 {
        c.children.clear();
        return;
    }
    for child in c.children.values_mut() {
        match child {
            Node::Container(cc) => trim(cc, depth - 1),
            Node::List(l) => {
                let keys = l.info.keys.clone();
                for e in l.entries_mut() {
                    trim_entry(e, &keys, depth - 1);
                }
            }
            _ => {}
        }
    }
}
