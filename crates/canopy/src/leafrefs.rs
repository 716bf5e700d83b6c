//! The leafref index of a configuration datastore: its configuration
//! leafrefs that require their target, by (leafref, value), so that removing
//! or changing a target reads only the leafrefs holding its value
//! (`docs/design.md`, "The leafref index").
//!
//! Kept at the validation level `full` by each transaction's batch, in the
//! datastore's index range (`keys::leafref_index_prefix`). A record under
//! `keys::LEAFREFS` says the index is complete for the schema's indexed
//! leafrefs; without it (a new schema, a level just raised to `full`, a store
//! from before the index) the next transaction builds the index from what is
//! stored, once, and checks its own deletes by reading the leafrefs' lists.

use std::collections::BTreeMap;

use canopy_core::keycode;
use canopy_core::path::{Path, Selector};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Batch, Snapshot};
use canopy_yang::{IndexChange, LeafrefUse, YangSchema};

use crate::error::{Error, Result};
use crate::load::Loader;
use crate::yang::{LeafrefLookup, Sparse};

const BY_VALUE: u8 = 0x01;
/// Uses by use key: (key by value, instance path text).
type Uses = BTreeMap<Vec<u8>, (Vec<u8>, String)>;
const BY_USE: u8 = 0x02;

/// The leafref index of one datastore as a transaction finds it.
pub(crate) struct Index {
    ds: Datastore,
    id: u64,
    /// The stored index is complete (else this transaction builds it).
    complete: bool,
}

impl Index {
    /// The index a transaction on `ds` keeps: `None` when it keeps none (no
    /// schema or no indexed leafref, `yang` is `None` below the level `full`,
    /// or the operational datastore, whose state is checked by reading).
    pub(crate) fn of(yang: Option<&YangSchema>, ds: Datastore, snap: &dyn Snapshot) -> Result<Option<Index>> {
        let Some(id) = yang.filter(|_| ds != Datastore::Operational).and_then(YangSchema::leafref_index_id) else {
            return Ok(None);
        };
        let complete = snap.get(&keys::leafrefs_key(ds))?.is_some_and(|v| v == id.to_be_bytes());
        Ok(Some(Index { ds, id, complete }))
    }

    /// Adds to `batch` what `changes` (validated, on `snap`) do to the index;
    /// when it was not complete, the whole index as `snap` holds the data
    /// (read through `loader`, on `snap`) with the changes made, and the
    /// record saying it is complete.
    pub(crate) fn write(
        &self,
        yang: &YangSchema,
        changes: &[canopy_core::diff::Change],
        snap: &dyn Snapshot,
        lists: &canopy_core::Schemaless,
        batch: &mut Batch,
    ) -> Result<()> {
        let mut delta = Delta::default();
        let mut built = match self.complete {
            true => None,
            false => {
                let mut loader = Loader::new(snap, self.ds, lists);
                let mut root = canopy_core::tree::Container::default();
                let uses = yang
                    .leafref_uses(&mut Sparse { loader: &mut loader, root: &mut root, index: None })
                    .map_err(crate::yang::load_error)?;
                let mut map = Uses::new();
                for u in uses {
                    let (use_key, value_key, text) = records(&u)?;
                    map.insert(use_key, (value_key, text));
                }
                Some(map)
            }
        };
        let mut err = None;
        yang.leafref_index_changes(changes, &mut |c| {
            if err.is_none() {
                if let Err(e) = delta.take(c, built.as_mut(), snap, self.ds) {
                    err = Some(e);
                }
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        let prefix = keys::leafref_index_prefix(self.ds);
        let key = |tag: u8, rest: &[u8]| {
            let mut k = prefix.clone();
            k.push(tag);
            k.extend_from_slice(rest);
            k
        };
        if let Some(map) = built {
            batch.delete_prefix(prefix.clone());
            for (use_key, (value_key, text)) in map {
                batch.put(key(BY_VALUE, &value_key), text.into_bytes());
                batch.put(key(BY_USE, &use_key), value_key);
            }
            batch.put(keys::leafrefs_key(self.ds), self.id.to_be_bytes().to_vec());
            return Ok(());
        }
        for value_key in &delta.gone_values {
            batch.delete(key(BY_VALUE, value_key));
        }
        for use_key in &delta.cleared {
            batch.delete_prefix(key(BY_USE, use_key));
        }
        for use_key in &delta.gone_uses {
            batch.delete(key(BY_USE, use_key));
        }
        for (use_key, (value_key, text)) in delta.set {
            batch.put(key(BY_VALUE, &value_key), text.into_bytes());
            batch.put(key(BY_USE, &use_key), value_key);
        }
        Ok(())
    }
}

impl LeafrefLookup for Index {
    /// The instance paths the stored index lists for `referrer` holding
    /// `value`: `None` while it is not complete.
    fn lookup(&self, snap: &dyn Snapshot, referrer: &str, value: &str) -> Result<Option<Vec<Path>>> {
        if !self.complete {
            return Ok(None);
        }
        let mut prefix = keys::leafref_index_prefix(self.ds);
        prefix.push(BY_VALUE);
        keycode::push_escaped(&mut prefix, referrer.as_bytes());
        keycode::push_escaped(&mut prefix, value.as_bytes());
        let mut out = Vec::new();
        let mut bad = None;
        snap.scan_prefix(&prefix, false, &mut |k, v| {
            match std::str::from_utf8(v).ok().and_then(|t| t.parse::<Path>().ok()) {
                Some(p) => out.push(p),
                None => bad = Some(keys::hex(k)),
            }
            Ok(bad.is_none())
        })?;
        match bad {
            Some(k) => Err(Error::Store(canopy_store::StoreError::corrupted(format!(
                "the leafref index record {k} is damaged"
            )))),
            None => Ok(Some(out)),
        }
    }
}

/// The index records of a transaction, gathered in change order and written
/// deletes first, so that a use removed then set again is stored.
#[derive(Default)]
struct Delta {
    /// Uses set: use key → (value key, instance path text).
    set: Uses,
    /// Records by value to delete (their keys after the tag byte).
    gone_values: Vec<Vec<u8>>,
    /// Records by use to delete.
    gone_uses: Vec<Vec<u8>>,
    /// Use-key prefixes whose records by use go.
    cleared: Vec<Vec<u8>>,
}

impl Delta {
    /// Takes one change, on the index being built (`built`) or the stored one.
    fn take(&mut self, c: IndexChange, built: Option<&mut Uses>, snap: &dyn Snapshot, ds: Datastore) -> Result<()> {
        match c {
            IndexChange::Set { now, old } => {
                let (use_key, value_key, text) = records(&now)?;
                match built {
                    Some(map) => {
                        map.insert(use_key, (value_key, text));
                    }
                    None => {
                        if let Some(old) = old {
                            self.gone_values.push(records(&LeafrefUse { value: old, ..now })?.1);
                        }
                        self.set.insert(use_key, (value_key, text));
                    }
                }
            }
            IndexChange::Remove(u) => {
                let (use_key, value_key, _) = records(&u)?;
                match built {
                    Some(map) => {
                        map.remove(&use_key);
                    }
                    None => {
                        self.set.remove(&use_key);
                        self.gone_values.push(value_key);
                        self.gone_uses.push(use_key);
                    }
                }
            }
            IndexChange::Clear(path) => {
                let Some(under) = use_key_of(&path) else { return Ok(()) };
                match built {
                    Some(map) => map.retain(|k, _| !k.starts_with(&under)),
                    None => {
                        self.set.retain(|k, _| !k.starts_with(&under));
                        // The stored records by use under the path name the
                        // records by value to delete.
                        let mut prefix = keys::leafref_index_prefix(ds);
                        prefix.push(BY_USE);
                        prefix.extend_from_slice(&under);
                        let mut found = Vec::new();
                        snap.scan_prefix(&prefix, false, &mut |_, v| {
                            found.push(v.to_vec());
                            Ok(true)
                        })?;
                        self.gone_values.extend(found);
                        self.cleared.push(under);
                    }
                }
            }
        }
        Ok(())
    }
}

/// A use's key by instance, its key by value (both after the tag byte) and
/// its instance path as text.
fn records(u: &LeafrefUse) -> Result<(Vec<u8>, Vec<u8>, String)> {
    // Configuration lists have keys (RFC 7950, 7.8.2): every indexed
    // leafref has a use key.
    let mut use_key = use_key_of(&u.path)
        .ok_or_else(|| Error::Usage(format!("{}: a leafref in a list without keys cannot be indexed", u.path)))?;
    if u.leaf_list {
        keycode::push_escaped(&mut use_key, u.value.as_bytes());
    }
    let mut value_key = Vec::with_capacity(u.referrer.len() + u.value.len() + use_key.len() + 4);
    keycode::push_escaped(&mut value_key, u.referrer.as_bytes());
    keycode::push_escaped(&mut value_key, u.value.as_bytes());
    value_key.extend_from_slice(&use_key);
    Ok((use_key, value_key, u.path.to_string()))
}

/// The use key of the node at `path` (a leaf, leaf-list, leaf-list entry,
/// container, list or entry): a prefix of the use keys of the leafrefs at or
/// below it. `None` for a path through a list without keys.
fn use_key_of(path: &Path) -> Option<Vec<u8>> {
    match path.last().map(|s| &s.selector) {
        Some(Selector::Value(v)) => {
            let mut k = keys::path_key(&canopy_core::diff::with_selector(path, Selector::None)).ok()?;
            keycode::push_escaped(&mut k, v.as_bytes());
            Some(k)
        }
        _ => keys::path_key(path).ok(),
    }
}
