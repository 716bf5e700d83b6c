//! The operational datastore: running's configuration merged with stored
//! state, state pushed by live connections and state that providers build on
//! request, each node annotated with its `origin`; subscriptions and
//! providers are registered here.

use crate::connections::{leased, now_nanos, Conn, Control, Pusher};
use crate::error::{Error, Result};
use crate::hub::{ProvideFn, Provider, Pushed};
use crate::read::ReadOptions;
use crate::store::Store;
use crate::subscribe::{self, Subscriber, Subscription};
use crate::transaction::Commit;
use canopy_core::edit::Edit;
use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Insert, List, Node};
use canopy_core::{Meta, Schema};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, ErrorKind, Snapshot};
use std::borrow::Cow;

/// The metadata name of a node's origin (RFC 8342, section 5.3.4).
pub const ORIGIN: &str = "ietf-origin:origin";

/// Origin of configuration from running.
pub const ORIGIN_INTENDED: &str = "ietf-origin:intended";

/// Origin given to state that does not name its own.
pub const ORIGIN_UNKNOWN: &str = "ietf-origin:unknown";

impl Store {
    /// Subscribes to changes of the subtree at `path` (an instance path; a
    /// segment without keys stands for every entry of its list; `/` for the
    /// whole datastore) of `ds`, with a priority (higher first). See
    /// [`crate::subscribe`].
    ///
    /// # Errors
    /// [`Error::Data`] for a path that does not parse.
    pub fn subscribe(
        &self,
        ds: Datastore,
        path: &str,
        priority: i32,
        subscriber: impl Subscriber + 'static,
    ) -> Result<Subscription> {
        let p = Query::parse_instance(path)?;
        let subscription = subscribe::subscribe(&self.hub, ds, p, priority, Box::new(subscriber));
        self.listen()?;
        Ok(subscription)
    }

    /// Registers an operational data provider for the subtree at `path`:
    /// every read of operational that reaches the subtree calls `provide`
    /// and merges what it returns (a tree from the root) into the result,
    /// marked with origin `ietf-origin:unknown` unless it carries its own
    /// `ietf-origin:origin` metadata. Providers belong to the process: every
    /// connection of the store here sees them.
    ///
    /// # Errors
    /// [`Error::Data`] for a path that does not parse.
    pub fn provide(
        &self,
        path: &str,
        provide: impl Fn(&Path) -> std::result::Result<Container, String> + Send + Sync + 'static,
    ) -> Result<Provider> {
        let p = Query::parse_instance(path)?;
        let f: Box<ProvideFn> = Box::new(provide);
        Ok(Provider { hub: self.hub.clone(), id: self.hub.add_provider(p, f) })
    }

    /// Drops the operational state this connection pushed, in this process
    /// and in the store (one transaction).
    ///
    /// # Errors
    /// Backend errors (the state is kept then).
    pub fn clear_pushed(&self) -> Result<()> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| crate::store::poisoned())?;
        let mut pushed = self.hub.pushed.lock().unwrap_or_else(|p| p.into_inner());
        if !pushed.contains_key(&self.conn.id) {
            return Ok(());
        }
        // Its records, under whichever lease of this process they name.
        self.commit_pushed(false, |snap, batch| {
            for p in Control::load(snap)?.pushers.iter().filter(|p| p.conn == self.conn) {
                let c = p.conn.encode();
                batch.delete(keys::pusher_key(&c));
                batch.delete_prefix(keys::pushed_prefix(&c));
            }
            Ok(())
        })?;
        pushed.remove(&self.conn.id);
        Ok(())
    }

    /// Commits a batch on this connection's pushed state, built by `build` on
    /// each try's view; ended pushers' records are collected on the way.
    /// Returns the new revision. Pushed state of other connections and
    /// datastore contents are untouched, so cached trees stay valid.
    ///
    /// Only this connection writes its key range and an ended connection never
    /// comes back, so the batch holds whatever others committed meanwhile: it
    /// is applied without a revision check (pushes never conflict), unless
    /// `learns` (it records list info, which others may record too).
    /// The control records of `snap` for attempt `attempt` of a push: the
    /// catalog's at first (held when the revision did not move), read alone
    /// on a retry, which must not rebuild the whole catalog of every revision
    /// it meets.
    fn control_for(&self, snap: &dyn Snapshot, attempt: usize) -> Result<std::sync::Arc<Control>> {
        match attempt {
            1 => self.control_at(snap),
            _ => Ok(std::sync::Arc::new(Control::load(snap)?)),
        }
    }

    /// Returns the new revision and the ended pushers whose records it deleted.
    fn commit_pushed(
        &self,
        learns: bool,
        build: impl Fn(&dyn Snapshot, &mut Batch) -> Result<()>,
    ) -> Result<(u64, Vec<Conn>)> {
        for attempt in 1..=crate::store::CONFLICT_RETRIES {
            let (committed, ended) = if learns {
                let view = self.backend().begin_write()?;
                let prepared = (|| -> Result<(Batch, Vec<Conn>)> {
                    let snap: &dyn Snapshot = &*view;
                    let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
                    let live = self.control_for(snap, attempt)?.live(self.backend(), &self.hub)?;
                    live.collect_ended_pushers(&mut batch);
                    build(snap, &mut batch)?;
                    Ok((batch, live.ended_pushers))
                })();
                match prepared {
                    Ok((batch, ended)) => (view.commit(&batch), ended),
                    // A view's read after another writer's commit (Redis's
                    // views): built again, as a conflicting commit is.
                    Err(Error::Store(e)) if e.kind() == ErrorKind::Conflict => {
                        drop(view);
                        crate::store::conflict_pause(attempt);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            } else {
                let snap = self.backend().snapshot()?;
                let mut batch = Batch { expect_revision: None, ops: Vec::new() };
                let live = self.control_for(&*snap, attempt)?.live(self.backend(), &self.hub)?;
                live.collect_ended_pushers(&mut batch);
                build(&*snap, &mut batch)?;
                drop(snap);
                // Pushed state dies with its connection: not flushed.
                (self.backend().apply_unflushed(&batch), live.ended_pushers)
            };
            match committed {
                Err(e) if e.kind() == ErrorKind::Conflict => crate::store::conflict_pause(attempt),
                Err(e) => return Err(e.into()),
                Ok(revision) => {
                    self.datastores_unchanged(revision);
                    return Ok((revision, ended));
                }
            }
        }
        Err(Error::Store(canopy_store::StoreError::new(
            ErrorKind::Conflict,
            "other writers kept committing first; the pushed state was not stored",
        )))
    }

    /// The operational view of what `query` can select: running's
    /// configuration, then stored state, then each live connection's pushed
    /// state (by first push, then connection identity), then what providers
    /// supply, merged in that order.
    pub(crate) fn operational_tree(&self, view: &crate::view::ReadView<'_>, query: &Query) -> Result<Container> {
        let whole = ReadOptions::default();
        // Running's part, with the ancestors it has of what the query reaches
        // (so that configured ancestors of state read alone show as intended).
        let mut out = self
            .with_stored_tree(view, Datastore::Running, query, |t, schema, _| {
                let mut out = part(&t, query, schema);
                let reach = query.instance_prefix(&|sp| schema.list_info(sp));
                let mut at = reach;
                while !at.is_root() && t.lookup(&at).is_none() {
                    at = at.parent().unwrap_or_else(Path::root);
                }
                if !at.is_root() {
                    let mut skeleton = canopy_core::select(&t, std::slice::from_ref(&at));
                    crate::read::trim_at(&mut skeleton, &at, 0);
                    merge(&mut out, skeleton, "")?;
                }
                Ok::<_, String>(out)
            })?
            .map_err(|e| Error::Usage(format!("operational view: running's configuration: {e}")))?;
        mark_origin(&mut out, ORIGIN_INTENDED);
        let stored =
            self.with_stored_tree(view, Datastore::Operational, query, |t, schema, _| part(&t, query, schema))?;
        merge(&mut out, stored, ORIGIN_UNKNOWN)
            .map_err(|e| Error::Usage(format!("operational view: the stored state: {e}")))?;
        for t in self.pushed_state(view, query)? {
            merge(&mut out, t, ORIGIN_UNKNOWN)
                .map_err(|e| Error::Usage(format!("operational view: pushed state: {e}")))?;
        }
        let prefix = query.instance_prefix(&|_| None);
        for p in self.hub.providers() {
            if !(overlaps(&p.subtree, &prefix)) {
                continue;
            }
            let tree = subscribe::call_guarded(self.conn.id, || (p.provide)(&p.subtree))
                .and_then(|r| r)
                .map_err(|e| Error::Usage(format!("the operational data provider of {} failed: {e}", p.subtree)))?;
            merge(&mut out, crate::read::selection(Cow::Owned(tree), query, whole, None), ORIGIN_UNKNOWN)
                .map_err(|e| Error::Usage(format!("the operational data provider of {}: {e}", p.subtree)))?;
        }
        Ok(out)
    }

    /// What `query` can select of the state each live connection pushed, in
    /// merge order. Connections of this process are read from the hub's copy;
    /// others' from the store, loading only the part the query reaches.
    /// Records of ended connections are skipped.
    fn pushed_state(&self, view: &crate::view::ReadView<'_>, query: &Query) -> Result<Vec<Container>> {
        let whole = ReadOptions::default();
        let (snap, catalog) = view.get()?;
        let control = &catalog.control;
        if control.pushers.is_empty() {
            return Ok(Vec::new());
        }
        let live = control.live(self.backend(), &self.hub)?;
        let mut out = Vec::with_capacity(live.pushers.len());
        for p in &live.pushers {
            if p.conn.in_this_process() {
                let local = self.hub.pushed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(t) = local.get(&p.conn.id) {
                    out.push(crate::read::selection(Cow::Borrowed(&t.tree), query, whole, None));
                    continue;
                }
            }
            let space = keys::Space::pushed(&p.conn.encode());
            let tree = crate::read::load_for(snap, space, query, &catalog.lists)?;
            out.push(crate::read::selection(Cow::Owned(tree), query, whole, None));
        }
        Ok(out)
    }

    /// Applies edits to the state this connection pushes to operational and
    /// stores it, in one backend transaction.
    pub(crate) fn push(&self, edits: Vec<Edit>) -> Result<Commit> {
        subscribe::check_not_calling(self.conn.id)?;
        let _w = self.writer.lock().map_err(|_| crate::store::poisoned())?;
        // This connection as its records name it; taken before its tree
        // leaves the hub (a lease found lost takes this process's pushed
        // state with it).
        let me = leased(self.conn, self.backend(), &self.hub)?;
        // Paths and values are checked and made canonical by the YANG schema
        // when there is one, and lists keyed as the store knows them.
        let catalog = self.catalog_at(&*self.backend().snapshot()?)?;
        let (base, yang, revision) = (catalog.lists.clone(), catalog.yang.clone(), catalog.revision);
        let edits = crate::yang::normalize_edits(yang.as_deref(), Datastore::Operational, edits)?;
        let mut schema = std::borrow::Cow::Borrowed(&*base);
        let mut learned = Vec::new();
        // The tree leaves the hub while the push runs (this connection's
        // writer lock keeps other pushes of it out): meanwhile readers of this
        // process load the connection's state from the store, as other
        // processes do, and no hub lock is held across callbacks or the commit.
        let taken = self.hub.pushed.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.conn.id);
        let first = taken.is_none();
        let mut state = taken.unwrap_or_else(|| Pushed { tree: Container::default(), since: now_nanos() });
        let mut changes = Vec::new();
        let mut failed = None;
        for e in edits {
            crate::prepare::learn_edit(&mut schema, &mut learned, &e, &state.tree);
            let typed = crate::prepare::Typed { lists: &schema, yang: yang.as_deref() };
            match canopy_core::edit::apply_edit_owned(&mut state.tree, e, &typed) {
                Ok(c) => changes.extend(c),
                Err(err) => {
                    failed = Some(err.into());
                    break;
                }
            }
        }
        // Back into the hub when the store holds records of it (a first push
        // that stored nothing leaves none).
        let put_back = |state: Pushed, stored: bool| {
            if stored || !first {
                self.hub.pushed.lock().unwrap_or_else(|p| p.into_inner()).insert(self.conn.id, state);
            }
        };
        let matched = subscribe::Matched::find(&self.hub, Datastore::Operational, &changes);
        if failed.is_none() && changes.is_empty() && learned.is_empty() {
            put_back(state, false);
            return Ok(Commit { revision, changes, streamed: None });
        }
        if failed.is_none() {
            failed = matched.validate(self.conn.id, &changes).err();
        }
        let stored = match failed {
            Some(e) => Err(e),
            None => {
                let header = Pusher { conn: me, since: state.since }.encode();
                let c = me.encode();
                let space = keys::Space::pushed(&c);
                let tree = &state.tree;
                self.commit_pushed(!learned.is_empty(), |snap, batch| {
                    let mut b = crate::commit::batch_for(&changes, tree, &space, snap, &*schema, &learned, &|_| true)?;
                    batch.ops.append(&mut b.ops);
                    batch.put(keys::pusher_key(&c), header.clone());
                    Ok(())
                })
                .inspect_err(|_| matched.abort(self.conn.id, &changes))
            }
        };
        match stored {
            Ok((revision, ended)) => {
                // The pushers as this commit leaves them (when it was the
                // next one after the catalog read above): ended ones
                // collected, this connection's recorded.
                let mut control = (*catalog.control).clone();
                control.pushers.retain(|p| !ended.iter().any(|e| e.encode() == p.conn.encode()));
                if !control.pushers.iter().any(|p| p.conn.encode() == me.encode()) {
                    control.pushers.push(Pusher { conn: me, since: state.since });
                    control.pushers.sort_by_key(|p| p.since);
                }
                put_back(state, true);
                self.catalog_committed(
                    catalog.revision,
                    revision,
                    (!learned.is_empty()).then(|| schema.into_owned()),
                    Some(control),
                );
                matched.apply(self.conn.id, &changes, revision);
                Ok(Commit { revision, changes, streamed: None })
            }
            Err(e) => {
                crate::cache::undo(&mut state.tree, &changes);
                put_back(state, false);
                Err(e)
            }
        }
    }
}

/// Whether one of two paths is a prefix of the other (names match; keys
/// match where both give them).
/// What the operational view takes of one source's tree `t` for `query`:
/// the nodes it selects when it is an instance identifier; otherwise the
/// whole subtree it reaches (its instance prefix), because the view's own
/// selection evaluates the query again on the merged tree, and predicates
/// (`artist[album/year<2000]/name`) read nodes the query does not select.
fn part(t: &Container, query: &Query, schema: &dyn Schema) -> Container {
    // Only what an instance path names: its predicates are keys, which the
    // selection keeps. A predicate on other leaves (`album[year=2011]/name`)
    // needs them in the merged view: the reached subtree, below.
    if query.to_instance_path().is_some_and(|p| crate::stream::names_entries(&p, schema)) {
        return canopy_core::select(t, &query.evaluate(t));
    }
    let reach = query.instance_prefix(&|sp| schema.list_info(sp));
    if reach.is_root() {
        return t.clone();
    }
    canopy_core::select(t, std::slice::from_ref(&reach))
}

fn overlaps(a: &Path, b: &Path) -> bool {
    a.segments.iter().zip(&b.segments).all(|(x, y)| {
        x.name == y.name
            && (matches!(x.selector, Selector::None)
                || matches!(y.selector, Selector::None)
                || x.selector == y.selector)
    })
}

/// The origin a node states for itself.
fn own_origin(meta: &Meta) -> Option<&str> {
    meta.get(ORIGIN)
}

/// Marks the top-level nodes of `tree` with `origin`, where they name none.
fn mark_origin(tree: &mut Container, origin: &str) {
    for node in tree.children.values_mut() {
        set_origin(node, origin, "");
    }
}

/// Gives `node` the origin `origin` when it differs from its parent's and the
/// node names none.
fn set_origin(node: &mut Node, origin: &str, parent: &str) {
    if origin == parent {
        return;
    }
    let mark = |meta: &mut Meta| {
        meta.insert_if_absent(ORIGIN, || origin.into());
    };
    match node {
        Node::Leaf { meta, .. } | Node::AnyData { meta, .. } => mark(meta),
        Node::Container(c) => mark(&mut c.meta),
        Node::LeafList(v) => v.iter_mut().for_each(|e| mark(&mut e.meta)),
        Node::List(l) => l.entries_mut().for_each(|e| mark(&mut e.meta)),
    }
}

/// Merges `src` into `dst` (both from the root): what `src` adds or replaces
/// gets the origin `origin` (unless it names its own). Fails on an entry of a
/// keyed list that lacks its keys (nothing is dropped silently).
fn merge(dst: &mut Container, src: Container, origin: &str) -> std::result::Result<(), String> {
    merge_container(dst, src, origin, "")
}

fn merge_container(dst: &mut Container, src: Container, origin: &str, parent: &str) -> std::result::Result<(), String> {
    let here = own_origin(&dst.meta).unwrap_or(parent).to_string();
    for (name, node) in src.children {
        match (dst.children.get_mut(&name), node) {
            (Some(Node::Container(d)), Node::Container(s)) => merge_container(d, s, origin, &here)?,
            (Some(Node::List(d)), Node::List(s)) if d.info == s.info && !d.info.keys.is_empty() => {
                merge_list(d, *s, origin, &here)?
            }
            (Some(Node::LeafList(d)), Node::LeafList(s)) => {
                for mut e in s {
                    if !d.iter().any(|x| x.value == e.value) {
                        if origin != here {
                            e.meta.insert_if_absent(ORIGIN, || origin.into());
                        }
                        d.push(e);
                    }
                }
            }
            // The same value (a list entry's keys): it keeps its origin.
            (Some(Node::Leaf { value: d, .. }), Node::Leaf { value: v, meta }) if *d == v && meta.is_empty() => {}
            (_, mut node) => {
                set_origin(&mut node, origin, &here);
                dst.children.insert(name, node);
            }
        }
    }
    Ok(())
}

fn merge_list(dst: &mut List, src: List, origin: &str, parent: &str) -> std::result::Result<(), String> {
    for mut entry in src.into_entries() {
        let keys = dst.keys_of(&entry).map_err(|e| e.to_string())?;
        match dst.get_mut(&keys) {
            Some(d) => {
                let here = own_origin(&d.meta).unwrap_or(parent).to_string();
                merge_container(d, entry, origin, &here)?
            }
            None => {
                if origin != parent {
                    entry.meta.insert_if_absent(ORIGIN, || origin.into());
                }
                dst.insert(entry, &Insert::Last).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}
