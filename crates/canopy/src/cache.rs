//! The cached mode: each datastore's tree kept in memory, valid at a revision.

use canopy_core::diff::{self, Change};
use canopy_core::tree::Container;
use canopy_core::Schemaless;
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
