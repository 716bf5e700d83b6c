//! Turning a transaction's diff into one backend batch.
//!
//! Work is proportional to the change: a modified leaf rewrites its one
//! fragment; a created subtree writes its fragments; a deleted subtree is one
//! prefix delete (a whole deleted list too); a moved user-ordered entry rewrites
//! its fragment and its order-index record. Keyless lists, whose entries have no
//! identity but their place, are rewritten whole when anything in them changes.

use std::collections::BTreeSet;

use canopy_core::diff::{Change, Subtree};
use canopy_core::keycode;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, List, Node};
use canopy_store::fragment;
use canopy_store::keys::{self, Space};
use canopy_store::treeio::Fragments;
use canopy_store::{Batch, Snapshot};

use crate::error::Result;
use crate::load::node_key;

/// Collects the writes of one commit.
struct Writer<'a> {
    /// Fragments and order-index records to put.
    out: Fragments,
    snap: &'a dyn Snapshot,
    tree: &'a Container,
    prefix_deletes: BTreeSet<Vec<u8>>,
    order_deletes: BTreeSet<Vec<u8>>,
}

/// The path of the outermost keyless list `path` passes through, if any.
fn keyless_list(path: &Path) -> Option<Path> {
    let i = path.segments.iter().position(|s| matches!(s.selector, Selector::Position(_)))?;
    let mut p = Path { segments: path.segments[..=i].to_vec() };
    p.segments[i].selector = Selector::None;
    Some(p)
}

fn is_fragment_node(s: &Subtree) -> bool {
    matches!(s, Subtree::Entry(_) | Subtree::Node(Node::Container(_)))
}

/// The list that the entry at `path` belongs to, in `tree`.
fn list_of<'t>(tree: &'t Container, entry: &Path) -> Option<&'t List> {
    let parent = canopy_core::edit::container_ref(tree, &entry.parent()?)?;
    match parent.children.get(&entry.last()?.name) {
        Some(Node::List(l)) => Some(l),
        _ => None,
    }
}

/// Whether `p` is `w` or lies under it, its last step compared first: the
/// created entries of one list, which follow each other, differ there.
fn under(w: &Path, p: &Path) -> bool {
    let n = w.segments.len();
    n <= p.segments.len() && (n == 0 || w.segments[n - 1] == p.segments[n - 1]) && w.is_prefix_of(p)
}

/// The relative key of the list an entry path belongs to (`parent key + name`).
fn list_key(entry: &Path) -> Option<Vec<u8>> {
    let parent = entry.parent()?;
    let mut k = keys::path_key(&parent).ok()?;
    keys::push_name(&mut k, &entry.last()?.name);
    Some(k)
}

impl Writer<'_> {
    fn delete_prefix(&mut self, rel: Vec<u8>) {
        self.prefix_deletes.insert(rel);
    }

    /// The order key a user-ordered entry had before this commit.
    fn stored_order(&self, rel: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self.snap.get(&self.out.data_key(rel))? {
            Some(v) => fragment::decode(&v).map_err(|e| crate::load::corrupt(rel, e))?.order,
            None => None,
        })
    }

    /// Writes the created containers and entries at `paths` with their
    /// subtrees (and a user-ordered entry's order record). The entries of one
    /// keyed list that follow each other, as an edit creates them, are found
    /// in one pass along the list instead of a walk from the root each.
    fn write_created(&mut self, paths: &[&Path]) {
        let mut i = 0;
        while i < paths.len() {
            let n = 1 + paths[i + 1..].iter().take_while(|p| paths[i].same_keyed_list(p)).count();
            let run = &paths[i..i + n];
            i += n;
            let list = match n {
                1 => None,
                _ => run[0].parent().and_then(|parent| {
                    let at = fragment_at(self.tree, &parent)?;
                    let name = &run[0].last()?.name;
                    match at.node.children.get(name) {
                        Some(Node::List(l)) if !l.info.keys.is_empty() => {
                            let mut rel = at.rel;
                            keys::push_name(&mut rel, name);
                            Some((rel, &**l))
                        }
                        _ => None,
                    }
                }),
            };
            let Some((list_rel, list)) = list else {
                for p in run {
                    if let Some(at) = fragment_at(self.tree, p) {
                        self.write_entry(&at.rel, at.list_len, at.node, at.list.zip(at.order));
                    }
                }
                continue;
            };
            let pos = list.keyed_positions(run.iter().map(|p| match &p.last().expect("an entry").selector {
                Selector::Keys(kv) => kv.as_slice(),
                _ => &[],
            }));
            let mut rel = list_rel.clone();
            list.visit_at(&pos, |k, entry| {
                rel.truncate(list_rel.len());
                rel.extend_from_slice(pos.entry_key(k).expect("visited"));
                self.write_entry(&rel, list_rel.len(), entry, pos.order(k).map(|o| (list, o)));
            });
        }
    }

    /// Writes the created container or entry `node` at `rel` with its
    /// subtree; an entry of a user-ordered list (`ordered`: the list and
    /// the entry's order key) with its order record, the list's key being
    /// `rel[..list_len]`.
    fn write_entry(&mut self, rel: &[u8], list_len: usize, node: &Container, ordered: Option<(&List, &[u8])>) {
        if let Some((l, order)) = ordered {
            let ek = l.entry_key_of(node).unwrap_or_default();
            let ok = self.out.order_key(&rel[..list_len], order);
            self.out.put(ok, ek);
        }
        self.out.write_subtree(rel, node, ordered.map(|(_, o)| o));
    }

    /// Rewrites the one fragment at `path` (its own content, not its children).
    fn write_fragment(&mut self, path: &Path) {
        let Some(at) = fragment_at(self.tree, path) else { return };
        self.out.put(self.out.data_key(&at.rel), fragment::encode(at.node, at.order));
    }
}

/// The fragment of the container or entry at some path in a tree, found by
/// [`fragment_at`].
struct At<'t> {
    /// Its key, relative to the datastore's data.
    rel: Vec<u8>,
    node: &'t Container,
    /// For an entry, its list, the length of the list's key (a prefix of
    /// `rel`) and, in a keyed user-ordered list, the entry's order key.
    list: Option<&'t List>,
    list_len: usize,
    order: Option<&'t [u8]>,
}

/// The fragment at `path` in `tree`, in one walk (positions resolved as
/// [`node_key`] does).
fn fragment_at<'t>(tree: &'t Container, path: &Path) -> Option<At<'t>> {
    let mut rel = Vec::with_capacity(64);
    let mut cur = tree;
    let mut list = None;
    let mut list_len = 0;
    let mut order = None;
    for seg in &path.segments {
        keys::push_name(&mut rel, &seg.name);
        list_len = rel.len();
        order = None;
        (cur, list) = match (cur.children.get(&seg.name)?, &seg.selector) {
            (Node::Container(c), Selector::None) => (c, None),
            (Node::List(l), Selector::Keys(kv)) => {
                for (_, v) in kv {
                    keycode::push_key_value(&mut rel, v);
                }
                // A keyed list holds its entries by their entry key (a
                // user-ordered one through its order key), which a path in
                // key order has just encoded.
                let entry = match canopy_core::schema::keys_in_order(&l.info, kv) {
                    false => None,
                    true if l.info.user_ordered => l.order_of_key(&rel[list_len..]).and_then(|o| {
                        order = Some(o);
                        l.get_at(o)
                    }),
                    true => l.get_at(&rel[list_len..]),
                };
                match entry {
                    Some(e) => (e, Some(&**l)),
                    None => {
                        let e = l.find(&seg.selector)?.1;
                        if l.info.user_ordered {
                            order = l.entry_key_of(e).ok().and_then(|ek| l.order_of_key(&ek));
                        }
                        (e, Some(&**l))
                    }
                }
            }
            (Node::List(l), Selector::Position(_)) => {
                let (pos, e) = l.find(&seg.selector)?;
                keys::push_order(&mut rel, pos);
                (e, Some(&**l))
            }
            _ => return None,
        };
    }
    Some(At { rel, node: cur, list, list_len, order })
}

/// The batch that stores `changes`, given the tree after them (`tree`, which
/// must hold every node the changes touch) and the snapshot they were made on.
/// `complete(list_key)` says whether `tree` held the whole list at that key.
pub(crate) fn batch_for(
    changes: &[Change],
    tree: &Container,
    space: &Space,
    snap: &dyn Snapshot,
    schema: &dyn canopy_core::Schema,
    learned: &[(String, canopy_core::ListInfo)],
    complete: &dyn Fn(&[u8]) -> bool,
) -> Result<Batch> {
    let user_ordered = |entry: &Path| {
        let list = canopy_core::diff::with_selector(entry, Selector::None);
        schema.list_info(&list.schema_path()).is_some_and(|i| i.user_ordered)
    };
    let mut w = Writer {
        out: Fragments::in_space(space.clone()),
        snap,
        tree,
        prefix_deletes: BTreeSet::new(),
        order_deletes: BTreeSet::new(),
    };
    let mut keyless: BTreeSet<Path> = BTreeSet::new();
    let mut created: Vec<&Path> = Vec::new();
    // The last created container or entry: its whole subtree is written, so
    // the changes inside it that follow (its leaves) need no write of their own.
    let mut last_created: Option<&Path> = None;
    let mut dirty: BTreeSet<Path> = BTreeSet::new();
    let mut whole_lists_gone: BTreeSet<Path> = BTreeSet::new();
    for c in changes {
        let p = c.path();
        if let Some(kl) = keyless_list(p) {
            keyless.insert(kl);
            continue;
        }
        match c {
            Change::Created { node, .. } if is_fragment_node(node) => {
                created.push(p);
                last_created = Some(p);
            }
            Change::Deleted { node, .. } if is_fragment_node(node) => {
                let entry = matches!(node, Subtree::Entry(_));
                if entry {
                    let lp = canopy_core::diff::with_selector(p, Selector::None);
                    if whole_lists_gone.contains(&lp) {
                        continue;
                    }
                    // A list gone from the tree is gone from storage only if the
                    // tree held all of it (a sparse tree may hold a few entries).
                    if list_of(tree, p).is_none() && list_key(p).is_some_and(|lk| complete(&lk)) {
                        // The whole list is gone: one prefix delete covers it.
                        whole_lists_gone.insert(lp);
                        continue;
                    }
                }
                let rel = keys::path_key(p)?;
                if entry && user_ordered(p) {
                    if let (Some(order), Some(lk)) = (w.stored_order(&rel)?, list_key(p)) {
                        let ok = w.out.order_key(&lk, &order);
                        w.order_deletes.insert(ok);
                    }
                }
                w.delete_prefix(rel);
            }
            Change::Erased { .. } => {
                // Everything under the node's key, read or not, and the order
                // records of the user-ordered lists below it; an entry's own
                // order record too.
                let rel = keys::path_key(p)?;
                let entry = matches!(p.last().map(|s| &s.selector), Some(Selector::Keys(_)));
                if entry && user_ordered(p) {
                    if let (Some(order), Some(lk)) = (w.stored_order(&rel)?, list_key(p)) {
                        let ok = w.out.order_key(&lk, &order);
                        w.order_deletes.insert(ok);
                    }
                }
                w.delete_prefix(rel);
            }
            Change::Moved { .. } if matches!(p.last().map(|s| &s.selector), Some(Selector::Keys(_))) => {
                let rel = keys::path_key(p)?;
                if let (Some(order), Some(lk)) = (w.stored_order(&rel)?, list_key(p)) {
                    let ok = w.out.order_key(&lk, &order);
                    w.order_deletes.insert(ok);
                }
                if let (Some(l), Some(lk)) = (list_of(tree, p), list_key(p)) {
                    let keys: Vec<String> =
                        canopy_core::diff::selector_values(&l.info, &p.last().expect("entry").selector)
                            .unwrap_or_default();
                    if let Some(pos) = l.pos_of(&keys) {
                        let ok = w.out.order_key(&lk, &pos);
                        w.out.put(ok, keycode::entry_key(&keys));
                    }
                }
                dirty.insert(p.clone());
            }
            Change::Meta { .. } if !matches!(p.last().map(|s| &s.selector), Some(Selector::Value(_))) => {
                dirty.insert(p.clone());
            }
            _ => {
                // A change inside a created subtree is written with it.
                let parent = &p.segments[..p.segments.len().saturating_sub(1)];
                let inside =
                    |c: &Path| c.segments.len() <= parent.len() && c.segments[..] == parent[..c.segments.len()];
                if !last_created.is_some_and(inside) {
                    dirty.insert(Path { segments: parent.to_vec() });
                }
            }
        }
    }
    for lp in &whole_lists_gone {
        let mut rel = keys::path_key(&lp.parent().unwrap_or_default())?;
        keys::push_name(&mut rel, &lp.last().expect("list").name);
        w.delete_prefix(rel);
    }
    for kl in &keyless {
        let parent = kl.parent().unwrap_or_default();
        let Some(mut rel) = node_key(tree, &parent).or_else(|| keys::path_key(&parent).ok()) else { continue };
        keys::push_name(&mut rel, &kl.last().expect("list").name);
        w.delete_prefix(rel.clone());
        if let Some(Node::List(l)) =
            canopy_core::edit::container_ref(tree, &parent).and_then(|c| c.children.get(&kl.last().expect("list").name))
        {
            w.out.write_list_entries(&rel, l);
        }
    }
    // A created node is written with its whole subtree as the tree holds it
    // now, so a node created right after one above it (an entry and the
    // entry of an inner list one edit made) is written with it, not again.
    let mut written: Option<&Path> = None;
    created.retain(|&p| {
        if written.is_some_and(|w| under(w, p)) || keyless.iter().any(|k| k.is_prefix_of(p)) {
            return false;
        }
        written = Some(p);
        true
    });
    w.write_created(&created);
    for p in &dirty {
        w.write_fragment(p);
    }
    let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
    for rel in &w.prefix_deletes {
        batch.delete_prefix(w.out.data_key(rel));
        let mut ok = space.order.clone();
        ok.extend_from_slice(rel);
        batch.delete_prefix(ok);
    }
    for k in w.order_deletes {
        batch.delete(k);
    }
    for (k, v) in w.out.into_records() {
        batch.put(k, v);
    }
    for (schema_path, info) in learned {
        let mut k = keys::LIST_INFO.to_vec();
        k.extend_from_slice(schema_path.as_bytes());
        batch.put(k, keys::encode_list_info(info));
    }
    Ok(batch)
}
