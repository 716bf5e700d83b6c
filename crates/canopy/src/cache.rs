//! The cached mode: each datastore's tree kept in memory, valid at a revision.

use canopy_core::diff::{self, Change};
use canopy_core::tree::Container;
use canopy_core::Schemaless;
use canopy_store::changelog;
use canopy_store::keys::Datastore;
use canopy_store::Snapshot;

use crate::error::Result;
use crate::load::Loader;

/// A datastore tree held in memory, valid at `revision`.
pub(crate) struct Cached {
    pub(crate) revision: u64,
    pub(crate) tree: Container,
}

/// Reads a whole datastore into a tree.
pub(crate) fn load_all(snap: &dyn Snapshot, ds: Datastore, schema: &Schemaless) -> Result<Container> {
    let mut root = Container::default();
    Loader::new(snap, ds, schema).range(&mut root, &[])?;
    // The tree is kept: pack its lists.
    root.pack_lists();
    Ok(root)
}

/// Undoes changes already applied to a cached tree.
pub(crate) fn undo(tree: &mut Container, changes: &[Change]) {
    diff::apply(tree, &diff::invert(changes)).expect("undoing applied changes");
}

/// Brings a cached tree of `ds` from its revision to `snap`'s with the change
/// log's records of the commits in between (other processes' commits), as
/// this process's own commits are applied to it. `false` when it cannot: a
/// revision without a record (a commit that changed no datastore: a lock,
/// a schema, a declaration; records not kept or trimmed), a record that does
/// not decode or apply, or the operational datastore (pushed state commits
/// log nothing). The tree may then be half brought up: the caller loads it
/// again.
///
/// # Errors
/// Backend read errors.
pub(crate) fn catch_up(snap: &dyn Snapshot, ds: Datastore, cached: &mut Cached) -> Result<bool> {
    let now = snap.revision();
    if ds == Datastore::Operational || cached.revision >= now {
        return Ok(false);
    }
    let mut next = cached.revision + 1;
    let mut entries = Vec::new();
    let mut complete = true;
    snap.scan(&changelog::key(next), Some(&changelog::key(now + 1)), false, &mut |k, v| {
        let entry = match changelog::revision_of(k) {
            Some(r) if r == next => changelog::decode(v).ok(),
            _ => None,
        };
        match entry {
            Some(e) => {
                entries.push(e);
                next += 1;
                Ok(true)
            }
            None => {
                complete = false;
                Ok(false)
            }
        }
    })?;
    if !complete || next != now + 1 {
        return Ok(false);
    }
    for e in entries.iter().filter(|e| e.datastore == ds) {
        if diff::apply(&mut cached.tree, &e.changes).is_err() {
            return Ok(false);
        }
    }
    cached.revision = now;
    Ok(true)
}
