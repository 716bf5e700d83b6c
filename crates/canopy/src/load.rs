//! Loading stored fragments into a (partial) tree.
//!
//! Uncached transactions and reads work on a *sparse* tree: only the fragments
//! an operation needs are read (point gets for merges, one range scan for a
//! subtree), and placed into an in-memory [`Container`] where edits and queries
//! run. Placing is idempotent, and a fragment is read at most once per
//! transaction: after an edit has changed the tree, reading the old stored
//! version again would bring deleted data back.

use std::collections::BTreeSet;
use std::ops::Bound;

use canopy_core::keycode;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, Node};
use canopy_core::{FastMap, FastSet, Schema, Schemaless};
use canopy_store::fragment::{self, Decoded};
use canopy_store::keys::{self, Datastore, Space};
use canopy_store::treeio::{build, describe_key};
use canopy_store::{Snapshot, StoreError};

use crate::error::Result;

/// Reads fragments of one datastore from one snapshot into a tree.
pub(crate) struct Loader<'a> {
    snap: &'a dyn Snapshot,
    schema: &'a Schemaless,
    data: Vec<u8>,
    order: Vec<u8>,
    /// Relative keys already read, each with whether it was stored.
    seen: FastMap<Vec<u8>, bool>,
    /// Keyed lists found to have no entry stored (their relative keys).
    empty_lists: Vec<Vec<u8>>,
    /// The list whose entries the last point reads were of, and how many.
    streak: (Vec<u8>, u32),
    /// Prefixes read whole by a range scan, none a prefix of another (so
    /// that the one covering a key, if any, is the greatest not above it).
    ranges: BTreeSet<Vec<u8>>,
    /// User-ordered lists whose first and last stored entries were read.
    ends: FastSet<Vec<u8>>,
    /// Fragments read ahead by [`Loader::reach`], not placed yet.
    ahead: FastMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'a> Loader<'a> {
    pub fn new(snap: &'a dyn Snapshot, ds: Datastore, schema: &'a Schemaless) -> Loader<'a> {
        Loader::in_space(snap, Space::datastore(ds), schema)
    }

    /// A loader of the tree laid out in `space`.
    pub fn in_space(snap: &'a dyn Snapshot, space: Space, schema: &'a Schemaless) -> Loader<'a> {
        Loader {
            snap,
            schema,
            data: space.data,
            order: space.order,
            seen: FastMap::default(),
            empty_lists: Vec::new(),
            streak: (Vec::new(), 0),
            ranges: BTreeSet::new(),
            ahead: FastMap::default(),
            ends: FastSet::default(),
        }
    }

    fn covered(&self, rel: &[u8]) -> bool {
        self.seen.contains_key(rel) || self.has_range(rel)
    }

    /// The full key of relative key `rel` (allocated once, at its size).
    fn data_key(&self, rel: &[u8]) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.data.len() + rel.len());
        key.extend_from_slice(&self.data);
        key.extend_from_slice(rel);
        key
    }

    /// The snapshot it reads.
    pub fn snapshot(&self) -> &'a dyn Snapshot {
        self.snap
    }

    /// Reads the fragment at `rel` (unless read before) and places it. Returns
    /// whether the node is in the tree now... as far as storage says: `false`
    /// when it is not stored.
    pub fn fragment(&mut self, root: &mut Container, rel: &[u8]) -> Result<bool> {
        if !self.empty_lists.is_empty() && self.in_empty_list(rel) {
            return Ok(false);
        }
        if self.covered(rel) {
            return Ok(self.seen.get(rel) != Some(&false));
        }
        let value = match self.ahead.remove(rel) {
            Some(v) => v,
            None => {
                let key = self.data_key(rel);
                self.snap.get(&key)?
            }
        };
        match value {
            Some(v) => {
                self.seen.insert(rel.to_vec(), true);
                let d = fragment::decode(&v).map_err(|e| in_datastore(&self.data, corrupt(rel, e)))?;
                place(root, rel, d, self.schema).map_err(|e| in_datastore(&self.data, e))?;
                Ok(true)
            }
            None => {
                self.seen.insert(rel.to_vec(), false);
                Ok(false)
            }
        }
    }

    /// Reads every fragment under `rel` (a node's key, or a list's name prefix)
    /// with one range scan and builds them into the tree in one pass over the
    /// sorted keys. Fragments read before are left as the tree has them.
    /// Returns how many were read.
    pub fn range(&mut self, root: &mut Container, rel: &[u8]) -> Result<usize> {
        if self.has_range(rel) {
            return Ok(0);
        }
        let prefix = self.data_key(rel);
        let dl = self.data.len();
        // Each scanned key is looked up among the keys read before (not
        // those keys filtered by prefix first: a transaction of many edits
        // reads many, and ranges many times).
        let seen = &self.seen;
        let ranges: Vec<&[u8]> = self
            .ranges
            .range::<[u8], _>((Bound::Included(rel), Bound::Unbounded))
            .map(Vec::as_slice)
            .take_while(|r| r.starts_with(rel))
            .collect();
        let mut items = scan_fragments(self.snap, &prefix, dl, &|rel_k| {
            // Read before (and perhaps changed since): keep the tree's version.
            seen.contains_key(rel_k) || ranges.iter().any(|r| rel_k.starts_with(r))
        })
        .map_err(|e| in_datastore(&self.data, e))?;
        // `rel` covers the ranges under it from now on.
        let under: Vec<Vec<u8>> = ranges.iter().map(|r| r.to_vec()).collect();
        for r in under {
            self.ranges.remove(&r);
        }
        self.ranges.insert(rel.to_vec());
        let n = items.len();
        if let Some(pos) = items.iter().position(|(k, _)| k.is_empty()) {
            let (_, d) = items.remove(pos);
            let d = d.expect("fresh");
            root.meta = d.container.meta;
            for (k, v) in d.container.children {
                root.children.entry(k).or_insert(v);
            }
        }
        let mut schema_path = String::new();
        build(root, &mut items, 0, &mut schema_path, self.schema).map_err(|e| in_datastore(&self.data, e))?;
        Ok(n)
    }

    /// Whether the node at `rel` is known not to be stored (nor, then, anything
    /// below it, unless it is the root).
    pub fn known_absent(&self, rel: &[u8]) -> bool {
        self.seen.get(rel) == Some(&false) || self.in_empty_list(rel)
    }

    /// Whether everything stored under `rel` was read into the tree.
    pub fn has_range(&self, rel: &[u8]) -> bool {
        self.ranges
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(rel)))
            .next_back()
            .is_some_and(|r| rel.starts_with(r))
    }

    /// Whether a fragment is stored at exactly `rel` (a list entry's or a
    /// container's own): one point read, no range.
    pub fn stored_at(&self, rel: &[u8]) -> Result<bool> {
        let key = self.data_key(rel);
        Ok(self.snap.get(&key)?.is_some())
    }

    /// Whether anything is stored under `rel` (read without placing).
    pub fn any_under(&self, rel: &[u8]) -> Result<bool> {
        let prefix = self.data_key(rel);
        Ok(self.snap.first_with_prefix(&prefix, false)?.is_some())
    }

    /// Loads the ancestors of `path` and the nodes on the way, resolving
    /// positions in keyless lists (whose lists are read whole). Returns the
    /// relative key of `path`'s node when it has one.
    pub fn path(&mut self, root: &mut Container, path: &Path) -> Result<Option<Vec<u8>>> {
        Ok(self.reach(root, path)?.0)
    }

    /// As [`Loader::path`], and whether the walk found the node of `path`
    /// or one of its ancestors not stored (then nothing below it is).
    pub fn reach(&mut self, root: &mut Container, path: &Path) -> Result<(Option<Vec<u8>>, bool)> {
        self.read_ahead(path, false)?;
        let reached = self.walk(root, path);
        self.ahead.clear();
        reached
    }

    /// As [`Loader::path`], for a path that names a node with children (a
    /// container or an entry: the parent of another node, never a leaf), so
    /// that its own fragment is read ahead with its ancestors'.
    pub fn parent(&mut self, root: &mut Container, path: &Path) -> Result<Option<Vec<u8>>> {
        self.read_ahead(path, true)?;
        let reached = self.walk(root, path);
        self.ahead.clear();
        Ok(reached?.0)
    }

    /// On a server ([`Snapshot::remote`]), reads the fragments of the root and
    /// of each node on `path` that [`Loader::reach`] may read, those not read
    /// before, with one [`Snapshot::get_many`] when there are several (one
    /// round trip instead of one per level).
    fn read_ahead(&mut self, path: &Path, last_has_children: bool) -> Result<()> {
        if !self.snap.remote() {
            return Ok(());
        }
        let mut rels: Vec<Vec<u8>> = Vec::new();
        let mut rel = Vec::new();
        if !self.covered(&rel) {
            rels.push(rel.clone());
        }
        for (i, seg) in path.segments.iter().enumerate() {
            keys::push_name(&mut rel, &seg.name);
            match &seg.selector {
                // The last node named without a selector may be a leaf its
                // parent's fragment holds (then the walk reads nothing for it).
                Selector::None if i + 1 == path.segments.len() && !last_has_children => break,
                Selector::None => {}
                Selector::Keys(keys) => {
                    for (_, v) in keys {
                        keycode::push_key_value(&mut rel, v);
                    }
                }
                Selector::Position(_) | Selector::Value(_) => break,
            }
            if self.known_absent(&rel) {
                break;
            }
            if !self.covered(&rel) {
                rels.push(rel.clone());
            }
        }
        if rels.len() < 2 {
            return Ok(());
        }
        let full: Vec<Vec<u8>> = rels.iter().map(|r| [self.data.as_slice(), r].concat()).collect();
        let refs: Vec<&[u8]> = full.iter().map(Vec::as_slice).collect();
        let values = self.snap.get_many(&refs)?;
        self.ahead.extend(rels.into_iter().zip(values));
        Ok(())
    }

    /// [`Loader::reach`]'s walk down `path`.
    fn walk(&mut self, root: &mut Container, path: &Path) -> Result<(Option<Vec<u8>>, bool)> {
        self.fragment(root, &[])?;
        let mut rel = Vec::with_capacity(path.key_len_hint());
        // Below a node that is not stored nothing is (every stored fragment
        // but the root's has its parent's): no more reads.
        let mut stored = true;
        for (i, seg) in path.segments.iter().enumerate() {
            keys::push_name(&mut rel, &seg.name);
            match &seg.selector {
                Selector::None => {
                    // A leaf, leaf-list or anydata came with its parent's
                    // fragment and has none of its own: no read.
                    let inline = || {
                        container_at(root, &path.segments[..i])
                            .and_then(|c| c.children.get(&seg.name))
                            .is_some_and(Node::is_inline)
                    };
                    if stored && !inline() {
                        stored = self.fragment(root, &rel)?;
                    }
                }
                Selector::Keys(keys) => {
                    let list_len = rel.len();
                    for (_, v) in keys {
                        keycode::push_key_value(&mut rel, v);
                    }
                    if stored && self.list_is_empty(&rel[..list_len])? {
                        stored = false;
                    }
                    if stored {
                        stored = self.fragment(root, &rel)?;
                    }
                }
                Selector::Position(p) => {
                    let list_rel = rel.clone();
                    self.range(root, &list_rel)?;
                    let order = match container_at(root, &path.segments[..i]).and_then(|c| c.children.get(&seg.name)) {
                        Some(Node::List(l)) => {
                            l.entries_with_pos().nth((*p as usize).saturating_sub(1)).map(|(k, _)| k.to_vec())
                        }
                        _ => None,
                    };
                    match order {
                        Some(o) => keys::push_order(&mut rel, &o),
                        None => return Ok((None, !stored)),
                    }
                }
                Selector::Value(_) => return Ok((None, !stored)),
            }
        }
        Ok((Some(rel), !stored))
    }

    /// Whether the keyed list at `list_rel` is known to have no entry stored.
    /// A transaction that names many entries of one list (a bulk create)
    /// asks storage once whether the list has any, after a few point reads
    /// of its entries, instead of once per entry.
    fn list_is_empty(&mut self, list_rel: &[u8]) -> Result<bool> {
        if self.empty_lists.iter().any(|l| l == list_rel) {
            return Ok(true);
        }
        if self.streak.0 != list_rel {
            self.streak = (list_rel.to_vec(), 0);
        }
        self.streak.1 += 1;
        if self.streak.1 != 3 || self.has_range(list_rel) || self.any_under(list_rel)? {
            return Ok(false);
        }
        self.empty_lists.push(list_rel.to_vec());
        Ok(true)
    }

    /// Which entries of the keyed list at `list_rel` are stored, for entry
    /// keys `suffixes` in ascending order: one scan from the first entry's
    /// key walks the stored keys beside them (a merge of the two sorted
    /// runs), each entry before the stored key reached is not stored; the
    /// scan starts again at the next entry when it passes a few stored keys
    /// none of them names. So a run of new entries costs one read, not one
    /// each. A stored entry's fragment is kept for [`Loader::fragment`] to
    /// place without reading it again. Returns, per suffix, whether it is
    /// stored.
    pub fn entries_stored<'k>(
        &mut self,
        list_rel: &[u8],
        suffixes: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<Vec<bool>> {
        /// Stored keys passed that no entry names before the scan starts again.
        const PASSED: usize = 8;
        let wanted: Vec<&[u8]> = suffixes.into_iter().collect();
        let prefix = self.data_key(list_rel);
        let (dl, pl) = (self.data.len(), prefix.len());
        let end = canopy_store::backend::prefix_end(&prefix);
        let mut stored = vec![false; wanted.len()];
        let mut found: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut start = prefix;
        let mut i = 0;
        while i < wanted.len() {
            start.truncate(pl);
            start.extend_from_slice(wanted[i]);
            let (mut passed, mut stopped) = (0, false);
            self.snap.scan(&start, end.as_deref(), false, &mut |k, v| {
                // Every stored fragment has its parent's, which sorts before
                // it: a wanted entry before the key reached is not stored.
                let k = &k[pl..];
                while i < wanted.len() && wanted[i] < k {
                    i += 1;
                }
                if i == wanted.len() {
                    stopped = true;
                    return Ok(false);
                }
                if wanted[i] == k {
                    found.push((i, v.to_vec()));
                    // (A value naming one entry twice names it stored twice.)
                    while i < wanted.len() && wanted[i] == k {
                        stored[i] = true;
                        i += 1;
                    }
                    passed = 0;
                } else {
                    passed += 1;
                }
                stopped = passed == PASSED;
                Ok(!stopped)
            })?;
            if !stopped {
                // The list's end: no wanted entry after the last key is stored.
                break;
            }
        }
        for (i, v) in found {
            start.truncate(pl);
            start.extend_from_slice(wanted[i]);
            let rel = &start[dl..];
            if !self.covered(rel) {
                self.ahead.insert(rel.to_vec(), Some(v));
            }
        }
        Ok(stored)
    }

    /// Whether `rel` lies in a list known to have no entry stored.
    fn in_empty_list(&self, rel: &[u8]) -> bool {
        self.empty_lists.iter().any(|l| rel.len() > l.len() && rel.starts_with(l))
    }

    /// Loads the first and last entries of the user-ordered list at `list_rel`
    /// and, for an entry whose order key is `around`, its neighbours.
    pub fn order_edges(&mut self, root: &mut Container, list_rel: &[u8], around: Option<&[u8]>) -> Result<()> {
        // The ends read already and no entry to read around: nothing to do
        // (the common case of a bulk create, so before any key is built).
        if around.is_none() && self.ends.contains(list_rel) {
            return Ok(());
        }
        let mut prefix = self.order.clone();
        prefix.extend_from_slice(list_rel);
        let mut wanted = Vec::new();
        // The stored ends are read once per list: once placed, the tree has them.
        let end = canopy_store::backend::prefix_end(&prefix);
        // The first own record of the list in a range (see `keys::own_order_record`).
        let first_own = |from: &[u8], to: Option<&[u8]>, reverse: bool| -> Result<Option<Vec<u8>>> {
            let mut found = None;
            self.snap.scan(from, to, reverse, &mut |k, v| {
                if keys::own_order_record(&k[prefix.len()..]) {
                    found = Some(v.to_vec());
                    return Ok(false);
                }
                Ok(true)
            })?;
            Ok(found)
        };
        if !self.ends.contains(list_rel) {
            for reverse in [false, true] {
                wanted.extend(first_own(&prefix, end.as_deref(), reverse)?);
            }
            self.ends.insert(list_rel.to_vec());
        }
        if around.is_none() && wanted.is_empty() {
            return Ok(());
        }
        if let Some(o) = around {
            let mut at = prefix.clone();
            at.extend_from_slice(o);
            at.push(0);
            let prev = first_own(&prefix, Some(&at), true)?;
            let mut after = at.clone();
            after.push(0);
            let next = first_own(&after, end.as_deref(), false)?;
            wanted.extend(prev);
            wanted.extend(next);
        }
        for suffix in wanted {
            let mut rel = list_rel.to_vec();
            rel.extend_from_slice(&suffix);
            self.fragment(root, &rel)?;
        }
        Ok(())
    }
}

/// A `Corrupted` error `e` about the datastore whose fragments are under
/// `data` (its prefix) with the datastore named in front.
pub(crate) fn in_datastore(data: &[u8], e: StoreError) -> StoreError {
    match (e.kind(), data.get(1).and_then(|&c| Datastore::from_code(c))) {
        (canopy_store::ErrorKind::Corrupted, Some(ds)) => {
            StoreError::corrupted(format!("datastore {}: {e}", ds.name()))
        }
        _ => e,
    }
}

/// A fragment read by a range scan: its relative key and the fragment (taken
/// when it is built into a tree).
type Scanned = (Vec<u8>, Option<Decoded>);

/// The fragments under `prefix`, decoded, with their keys relative to the
/// datastore (the first `dl` bytes cut), but for those `skip` names.
pub(crate) fn scan_fragments(
    snap: &dyn Snapshot,
    prefix: &[u8],
    dl: usize,
    skip: &dyn Fn(&[u8]) -> bool,
) -> canopy_store::Result<Vec<Scanned>> {
    let mut items = Vec::new();
    let mut err = None;
    snap.scan_prefix(prefix, false, &mut |k, v| {
        let rel_k = &k[dl..];
        if skip(rel_k) {
            return Ok(true);
        }
        match fragment::decode(v) {
            Ok(d) => {
                items.push((rel_k.to_vec(), Some(d)));
                Ok(true)
            }
            Err(e) => {
                err = Some(corrupt(rel_k, e));
                Ok(false)
            }
        }
    })?;
    match err {
        Some(e) => Err(e),
        None => Ok(items),
    }
}

/// `e` with the fragment at relative key `rel` named in front.
pub(crate) fn corrupt(rel: &[u8], e: StoreError) -> StoreError {
    StoreError::corrupted(format!("fragment {}: {e}", describe_key(rel)))
}

/// The container or entry at `segs` in `root`.
pub(crate) fn container_at<'t>(root: &'t Container, segs: &[canopy_core::Segment]) -> Option<&'t Container> {
    let mut cur = root;
    for seg in segs {
        cur = match (cur.children.get(&seg.name)?, &seg.selector) {
            (Node::Container(c), Selector::None) => c,
            (Node::List(l), sel) => l.find(sel)?.1,
            _ => return None,
        };
    }
    Some(cur)
}

/// Places a decoded fragment at relative key `rel` into `root`: the root's
/// own fragment merges into `root`; any other goes where its key says, below
/// ancestors the tree must hold already (point loads go top-down). A node
/// already in the tree is left as it is.
pub(crate) fn place(root: &mut Container, rel: &[u8], d: Decoded, schema: &dyn Schema) -> canopy_store::Result<()> {
    if rel.is_empty() {
        root.meta = d.container.meta;
        for (k, v) in d.container.children {
            root.children.entry(k).or_insert(v);
        }
        return Ok(());
    }
    canopy_store::treeio::build(root, &mut [(rel.to_vec(), Some(d))], 0, &mut String::new(), schema)
}

/// The relative key of the node `path` names in `tree` (positions resolved
/// through the tree's lists). `None` when the path crosses a missing node or
/// names a leaf-list entry.
pub(crate) fn node_key(tree: &Container, path: &Path) -> Option<Vec<u8>> {
    node_key_of(tree, &path.segments)
}

/// [`node_key`] of the path made of `segments`.
pub(crate) fn node_key_of(tree: &Container, segments: &[canopy_core::Segment]) -> Option<Vec<u8>> {
    let mut rel = Vec::new();
    let mut cur = Some(tree);
    for seg in segments {
        keys::push_name(&mut rel, &seg.name);
        let node = cur.and_then(|c| c.children.get(&seg.name));
        match &seg.selector {
            Selector::None => {
                cur = match node {
                    Some(Node::Container(c)) => Some(c),
                    _ => None,
                }
            }
            Selector::Keys(kv) => {
                for (_, v) in kv {
                    keycode::push_key_value(&mut rel, v);
                }
                cur = match node {
                    Some(Node::List(l)) => l.find(&seg.selector).map(|(_, e)| e),
                    _ => None,
                };
            }
            Selector::Position(_) => {
                let Some(Node::List(l)) = node else { return None };
                let (pos, e) = l.find(&seg.selector)?;
                keys::push_order(&mut rel, pos);
                cur = Some(e);
            }
            Selector::Value(_) => return None,
        }
    }
    Some(rel)
}
