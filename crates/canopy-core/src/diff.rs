//! Diffs: what a transaction changed, as a list of [`Change`]s applied in order.
//!
//! Invariants (property-tested): `apply(old, diff(old, new)) == new` and
//! `apply(new, invert(diff(old, new))) == old`.
//!
//! Granularity: a new or removed container is one change carrying its whole
//! subtree; lists and leaf-lists change entry by entry (a list is not an
//! instance of its own). Entries of user-ordered lists and leaf-lists carry
//! their place (`Place`), so that every change can be undone exactly.

use crate::error::{Error, Result};
use crate::path::{Path, Selector};
use crate::tree::{Container, Insert, LeafListEntry, List, ListInfo, Name, Node};
use crate::value::{Meta, Text};

/// Where an entry of a user-ordered list or leaf-list stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// First in its list.
    First,
    /// Right after the sibling with this selector.
    After(Selector),
}

/// A node as a change carries it.
#[derive(Clone, Debug, PartialEq)]
pub enum Subtree {
    /// A leaf, container or anydata node.
    Node(Node),
    /// A list entry.
    Entry(Container),
    /// A leaf-list entry.
    Value(LeafListEntry),
}

/// One change of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A node was created. `place` is set for user-ordered entries.
    Created { path: Path, node: Subtree, place: Option<Place> },
    /// A node was deleted; `node` is what it was, `place` where it stood.
    Deleted { path: Path, node: Subtree, place: Option<Place> },
    /// A leaf or anydata node changed its value or metadata.
    Modified { path: Path, old: Node, new: Node },
    /// The metadata of a container, list entry or leaf-list entry changed.
    Meta { path: Path, old: Meta, new: Meta },
    /// A user-ordered entry moved. `path` names it as the list stood before
    /// the move; in a keyless list (entries named by position) `new` counts
    /// positions in the list without the entry, as [`apply`] moves it.
    Moved { path: Path, old: Place, new: Place },
    /// A container, a whole list or a list entry was deleted with everything
    /// below it by one range delete, without reading what it held: nobody
    /// asked for it (no subscriber, no validation that reads it). Like
    /// [`Change::Deleted`] but without the old content; it cannot be undone
    /// from the diff ([`Change::inverse`] returns it unchanged), so the engine
    /// never produces it where it undoes from the diff (a cached tree).
    Erased { path: Path },
}

impl Change {
    /// The path of the node this change concerns.
    pub fn path(&self) -> &Path {
        match self {
            Change::Created { path, .. }
            | Change::Deleted { path, .. }
            | Change::Modified { path, .. }
            | Change::Meta { path, .. }
            | Change::Moved { path, .. }
            | Change::Erased { path } => path,
        }
    }

    /// The change that undoes this one.
    pub fn inverse(&self) -> Change {
        match self.clone() {
            Change::Created { path, node, place } => Change::Deleted { path, node, place },
            Change::Deleted { path, node, place } => Change::Created { path, node, place },
            Change::Modified { path, old, new } => Change::Modified { path, old: new, new: old },
            Change::Meta { path, old, new } => Change::Meta { path, old: new, new: old },
            Change::Moved { mut path, old, new } => {
                // A keyless list's entry is named by where it stands: after
                // the move, first or just after the new place's anchor.
                if let Some(seg) = path.segments.last_mut() {
                    if let Selector::Position(_) = seg.selector {
                        seg.selector = Selector::Position(match &new {
                            Place::After(Selector::Position(a)) => a + 1,
                            _ => 1,
                        });
                    }
                }
                Change::Moved { path, old: new, new: old }
            }
            Change::Erased { path } => Change::Erased { path },
        }
    }
}

/// The changes that undo `changes`, in the order to apply them.
pub fn invert(changes: &[Change]) -> Vec<Change> {
    changes.iter().rev().map(Change::inverse).collect()
}

/// The changes that turn `old` into `new` (both datastore roots).
pub fn diff(old: &Container, new: &Container) -> Vec<Change> {
    let mut out = Vec::new();
    diff_container(&Path::root(), old, new, &mut out);
    out
}

/// Appends the changes that turn container `old` at `path` into `new`.
pub fn diff_container(path: &Path, old: &Container, new: &Container, out: &mut Vec<Change>) {
    if old.meta != new.meta {
        out.push(Change::Meta { path: path.clone(), old: old.meta.clone(), new: new.meta.clone() });
    }
    for (name, o) in &old.children {
        if !new.children.contains_key(name) {
            removed_node(&path.child(name.clone(), Selector::None), o, out);
        }
    }
    for (name, n) in &new.children {
        let child = path.child(name.clone(), Selector::None);
        match old.children.get(name) {
            None => added_node(&child, n, out),
            Some(o) => diff_node(&child, o, n, out),
        }
    }
}

/// Appends the changes for a node that exists on both sides (`path` names it
/// with `Selector::None`).
pub fn diff_node(path: &Path, old: &Node, new: &Node, out: &mut Vec<Change>) {
    match (old, new) {
        (Node::Container(o), Node::Container(n)) => diff_container(path, o, n, out),
        (Node::List(o), Node::List(n)) if o.info == n.info => diff_list(path, o, n, out),
        (Node::LeafList(o), Node::LeafList(n)) => diff_leaf_list(path, o, n, out),
        (Node::Leaf { .. }, Node::Leaf { .. }) | (Node::AnyData { .. }, Node::AnyData { .. }) => {
            if old != new {
                out.push(Change::Modified { path: path.clone(), old: old.clone(), new: new.clone() });
            }
        }
        _ => {
            // The node changed kind (possible without a schema): remove, then add.
            removed_node(path, old, out);
            added_node(path, new, out);
        }
    }
}

/// The selector of `entry` in `list` (keys, or 1-based position `index + 1` in a keyless list).
pub fn entry_selector(list: &List, entry: &Container, index: usize) -> Selector {
    if list.info.keys.is_empty() {
        Selector::Position(index as u64 + 1)
    } else {
        Selector::Keys(list.info.keys.iter().map(|k| (k.clone(), entry.key_text(k).unwrap_or_default())).collect())
    }
}

fn place_after(info: &ListInfo, prev: Option<Selector>) -> Option<Place> {
    info.user_ordered.then(|| prev.map_or(Place::First, Place::After))
}

/// Whether a created entry or container is small enough that copying it
/// into its change now costs less than finding it in the tree again to move
/// it there (the deferred move): a few leaves with little text.
fn cheap_to_copy(c: &Container) -> bool {
    let mut text = 0;
    c.children.len() <= 4
        && c.children.iter().all(|(_, n)| match n {
            Node::Leaf { value, meta } if meta.is_empty() => {
                text += value.as_text().len();
                text <= 64
            }
            _ => false,
        })
}

/// What the change that creates `c`, about to be pushed on `out`, holds: a
/// copy of `c`; or, with `deferred` and unless `c` is cheap to copy, an
/// empty container, its index put in `deferred` for the caller to fill from
/// the tree ([`crate::edit::fill_created`]).
pub(crate) fn created_content(c: &Container, out: &[Change], deferred: Option<&mut Vec<usize>>) -> Container {
    match deferred {
        Some(d) if !cheap_to_copy(c) => {
            d.push(out.len());
            Container::default()
        }
        _ => c.clone(),
    }
}

/// Appends the changes that create list `l`'s entries at `path`, each
/// holding its entry as [`created_content`] says (with `deferred`, entries
/// but small ones are filled from the tree later).
pub fn added_entries(path: &Path, l: &List, out: &mut Vec<Change>, mut deferred: Option<&mut Vec<usize>>) {
    let mut prev = None;
    out.reserve(l.len());
    for (i, e) in l.entries().enumerate() {
        let sel = entry_selector(l, e, i);
        let node = Subtree::Entry(created_content(e, out, deferred.as_deref_mut()));
        // Only user-ordered entries carry their place (and so need the
        // selector of the one before).
        let place = match l.info.user_ordered {
            true => place_after(&l.info, prev.replace(sel.clone())),
            false => None,
        };
        out.push(Change::Created { path: with_selector(path, sel), node, place });
    }
}

/// Appends the changes that create `node` at `path` (a plain-name path).
pub fn added_node(path: &Path, node: &Node, out: &mut Vec<Change>) {
    match node {
        Node::List(l) => added_entries(path, l, out, None),
        Node::LeafList(v) => {
            let mut prev = None;
            for e in v {
                let sel = Selector::Value(e.value.as_text().into_owned());
                let place = Some(prev.clone().map_or(Place::First, Place::After));
                out.push(Change::Created {
                    path: with_selector(path, sel.clone()),
                    node: Subtree::Value(e.clone()),
                    place,
                });
                prev = Some(sel);
            }
        }
        n => out.push(Change::Created { path: path.clone(), node: Subtree::Node(n.clone()), place: None }),
    }
}

fn removed_node(path: &Path, node: &Node, out: &mut Vec<Change>) {
    removed_node_owned(path, node.clone(), out);
}

/// Appends the changes that delete `node` at `path` (a plain-name path),
/// moving its data into them.
pub fn removed_node_owned(path: &Path, node: Node, out: &mut Vec<Change>) {
    match node {
        Node::List(l) => {
            // Last first, so that positions and places stay valid as entries go.
            let mut sels: Vec<Selector> = l.entries().enumerate().map(|(i, e)| entry_selector(&l, e, i)).collect();
            let info = l.info.clone();
            let mut entries = l.into_entries();
            out.reserve(sels.len());
            while let Some(sel) = sels.pop() {
                // Only user-ordered entries carry their place.
                let prev = if info.user_ordered { sels.last().cloned() } else { None };
                let entry = entries.pop().expect("one entry per selector");
                out.push(Change::Deleted {
                    path: with_selector(path, sel),
                    node: Subtree::Entry(entry),
                    place: place_after(&info, prev),
                });
            }
        }
        Node::LeafList(mut v) => {
            for i in (0..v.len()).rev() {
                let prev = (i > 0).then(|| Selector::Value(v[i - 1].value.as_text().into_owned()));
                let e = v.pop().expect("in range");
                out.push(Change::Deleted {
                    path: with_selector(path, Selector::Value(e.value.as_text().into_owned())),
                    node: Subtree::Value(e),
                    place: Some(prev.map_or(Place::First, Place::After)),
                });
            }
        }
        n => out.push(Change::Deleted { path: path.clone(), node: Subtree::Node(n), place: None }),
    }
}

/// `path` (naming a list or leaf-list) with its last selector set.
pub fn with_selector(path: &Path, sel: Selector) -> Path {
    let mut p = path.clone();
    if let Some(last) = p.segments.last_mut() {
        last.selector = sel;
    }
    p
}

fn diff_list(path: &Path, old: &List, new: &List, out: &mut Vec<Change>) {
    if old.info.keys.is_empty() {
        // Keyless: entries are matched by position.
        let common = old.len().min(new.len());
        let olds: Vec<&Container> = old.entries().collect();
        let news: Vec<&Container> = new.entries().collect();
        for i in 0..common {
            diff_container(&with_selector(path, Selector::Position(i as u64 + 1)), olds[i], news[i], out);
        }
        for i in (common..old.len()).rev() {
            out.push(Change::Deleted {
                path: with_selector(path, Selector::Position(i as u64 + 1)),
                node: Subtree::Entry(olds[i].clone()),
                place: Some(if i == 0 { Place::First } else { Place::After(Selector::Position(i as u64)) }),
            });
        }
        for (i, e) in news.iter().enumerate().skip(common) {
            out.push(Change::Created {
                path: with_selector(path, Selector::Position(i as u64 + 1)),
                node: Subtree::Entry((*e).clone()),
                place: Some(if i == 0 { Place::First } else { Place::After(Selector::Position(i as u64)) }),
            });
        }
        return;
    }
    let key_of = |l: &List, e: &Container| l.keys_of(e).unwrap_or_default();
    // Deleted entries, last first.
    let old_entries: Vec<&Container> = old.entries().collect();
    for i in (0..old_entries.len()).rev() {
        let e = old_entries[i];
        let keys = key_of(old, e);
        if new.get(&keys).is_none() {
            let prev = (i > 0).then(|| entry_selector(old, old_entries[i - 1], i - 1));
            out.push(Change::Deleted {
                path: with_selector(path, entry_selector(old, e, i)),
                node: Subtree::Entry(e.clone()),
                place: place_after(&old.info, prev),
            });
        }
    }
    if !old.info.user_ordered {
        for (i, e) in new.entries().enumerate() {
            let keys = key_of(new, e);
            let p = with_selector(path, entry_selector(new, e, i));
            match old.get(&keys) {
                None => out.push(Change::Created { path: p, node: Subtree::Entry(e.clone()), place: None }),
                Some(o) => diff_container(&p, o, e, out),
            }
        }
        return;
    }
    let old_ids: Vec<Vec<String>> =
        old_entries.iter().map(|e| key_of(old, e)).filter(|k| new.get(k).is_some()).collect();
    let news: Vec<&Container> = new.entries().collect();
    let new_ids: Vec<Vec<String>> = news.iter().map(|e| key_of(new, e)).collect();
    let moves = plan_moves(&old_ids, &new_ids);
    let sel_of = |keys: &[String]| {
        Selector::Keys(new.info.keys.iter().cloned().zip(keys.iter().map(|v| Text::from(v.as_str()))).collect())
    };
    for (i, e) in news.iter().enumerate() {
        let p = with_selector(path, sel_of(&new_ids[i]));
        let here = if i == 0 { Place::First } else { Place::After(sel_of(&new_ids[i - 1])) };
        match old.get(&new_ids[i]) {
            None => out.push(Change::Created { path: p, node: Subtree::Entry((*e).clone()), place: Some(here) }),
            Some(o) => {
                if let Some(before) = &moves[i] {
                    let old_place = before.as_ref().map_or(Place::First, |b| Place::After(sel_of(b)));
                    out.push(Change::Moved { path: p.clone(), old: old_place, new: here });
                }
                diff_container(&p, o, e, out);
            }
        }
    }
}

/// Plans the moves that turn the order of `old` (ids of entries present on both
/// sides, in old order) into `new` (all ids in new order; ids not in `old` are
/// created in place). Returns, for each index of `new`, `Some(pred)` when that
/// entry must move, `pred` being the id it stood after just before the move
/// (`None`: it was first). Entries handled so far stand, in new order, before
/// all others, which keep their old relative order; a linked list over `old`
/// finds each entry's predecessor in O(1).
fn plan_moves<T: Eq + std::hash::Hash + Clone>(old: &[T], new: &[T]) -> Vec<Option<Option<T>>> {
    let index: std::collections::HashMap<&T, usize> = old.iter().enumerate().map(|(i, t)| (t, i)).collect();
    let n = old.len();
    let mut prev: Vec<Option<usize>> = (0..n).map(|i| i.checked_sub(1)).collect();
    let mut next: Vec<Option<usize>> = (0..n).map(|i| (i + 1 < n).then_some(i + 1)).collect();
    let mut head = (n > 0).then_some(0);
    let mut out = Vec::with_capacity(new.len());
    for (i, id) in new.iter().enumerate() {
        let Some(&k) = index.get(id) else {
            out.push(None);
            continue;
        };
        let moved = if head == Some(k) {
            None
        } else {
            let before = match prev[k] {
                Some(p) => Some(old[p].clone()),
                None => i.checked_sub(1).map(|j| new[j].clone()),
            };
            Some(before)
        };
        // Unlink k: it is handled.
        if let Some(p) = prev[k] {
            next[p] = next[k];
        }
        if let Some(x) = next[k] {
            prev[x] = prev[k];
        }
        if head == Some(k) {
            head = next[k];
        }
        out.push(moved);
    }
    out
}

fn diff_leaf_list(path: &Path, old: &[LeafListEntry], new: &[LeafListEntry], out: &mut Vec<Change>) {
    let text = |e: &LeafListEntry| e.value.as_text().into_owned();
    let new_set: std::collections::HashMap<String, &LeafListEntry> = new.iter().map(|e| (text(e), e)).collect();
    let old_set: std::collections::HashMap<String, &LeafListEntry> = old.iter().map(|e| (text(e), e)).collect();
    for i in (0..old.len()).rev() {
        if !new_set.contains_key(&text(&old[i])) {
            let prev = (i > 0).then(|| Selector::Value(text(&old[i - 1])));
            out.push(Change::Deleted {
                path: with_selector(path, Selector::Value(text(&old[i]))),
                node: Subtree::Value(old[i].clone()),
                place: Some(prev.map_or(Place::First, Place::After)),
            });
        }
    }
    let old_ids: Vec<String> = old.iter().map(text).filter(|t| new_set.contains_key(t)).collect();
    let new_ids: Vec<String> = new.iter().map(text).collect();
    let moves = plan_moves(&old_ids, &new_ids);
    for (i, e) in new.iter().enumerate() {
        let p = with_selector(path, Selector::Value(new_ids[i].clone()));
        let here = if i == 0 { Place::First } else { Place::After(Selector::Value(new_ids[i - 1].clone())) };
        match old_set.get(&new_ids[i]) {
            None => out.push(Change::Created { path: p, node: Subtree::Value(e.clone()), place: Some(here) }),
            Some(o) => {
                if let Some(before) = &moves[i] {
                    let old_place = before.clone().map_or(Place::First, |b| Place::After(Selector::Value(b)));
                    out.push(Change::Moved { path: p.clone(), old: old_place, new: here });
                }
                if o.meta != e.meta {
                    out.push(Change::Meta { path: p, old: o.meta.clone(), new: e.meta.clone() });
                }
            }
        }
    }
}

/// Applies `changes` in order to the tree rooted at `root`.
///
/// # Errors
/// [`Error::NotFound`] / [`Error::Exists`] / [`Error::Invalid`] when a change does
/// not fit the tree (the tree may then be partly changed: apply to a copy when
/// that matters).
pub fn apply(root: &mut Container, changes: &[Change]) -> Result<()> {
    apply_keeping_removed(root, changes, &mut Removed::default())
}

/// [`apply`], handing what deletes take out of the tree to `removed`
/// instead of freeing it, so that the caller frees it where that costs it
/// nothing (freeing a big subtree is most of the time of removing it).
///
/// # Errors
/// As [`apply`].
pub fn apply_keeping_removed(root: &mut Container, changes: &[Change], removed: &mut Removed) -> Result<()> {
    for c in changes {
        apply_one(root, c, removed)?;
    }
    Ok(())
}

/// What deletes took out of a tree (see [`apply_keeping_removed`]).
#[derive(Debug, Default)]
pub struct Removed {
    nodes: Vec<Node>,
    entries: Vec<Container>,
}

impl Removed {
    /// Whether it holds at least `n` nodes, counting a list as its entries
    /// and a container as its children (counted no further than `n`).
    pub fn at_least(&self, n: usize) -> bool {
        fn weight(node: &Node, left: usize) -> usize {
            match node {
                Node::List(l) => l.len(),
                Node::LeafList(ll) => ll.len(),
                Node::Container(c) => children_weight(c, left),
                _ => 1,
            }
        }
        fn children_weight(c: &Container, left: usize) -> usize {
            let mut total = 1;
            for child in c.children.values() {
                if total >= left {
                    break;
                }
                total += weight(child, left - total);
            }
            total
        }
        let mut total = 0;
        for node in &self.nodes {
            if total >= n {
                return true;
            }
            total += weight(node, n - total);
        }
        for entry in &self.entries {
            if total >= n {
                return true;
            }
            total += children_weight(entry, n - total);
        }
        total >= n
    }
}

/// The container at `path`, following list entries by selector.
pub fn container_mut<'a>(root: &'a mut Container, path: &Path) -> Result<&'a mut Container> {
    let mut cur = root;
    for seg in &path.segments {
        let missing = || Error::NotFound { path: path.to_string() };
        let node = cur.children.get_mut(&seg.name).ok_or_else(missing)?;
        cur = match (node, &seg.selector) {
            (Node::Container(c), Selector::None) => c,
            (Node::List(l), Selector::Keys(keys)) => match l.info.keys.is_empty() {
                false => l.get_keyed_mut(keys).ok_or_else(missing)?,
                true => {
                    let vals: Vec<String> = ordered_key_values(&l.info, keys).ok_or_else(missing)?;
                    l.get_mut(&vals).ok_or_else(missing)?
                }
            },
            (Node::List(l), Selector::Position(p)) => l.get_mut(&[p.to_string()]).ok_or_else(missing)?,
            _ => return Err(missing()),
        };
    }
    Ok(cur)
}

/// Key values of a `Keys` selector in `info`'s key order; `None` when the
/// selector does not name exactly the list's keys.
pub fn ordered_key_values(info: &ListInfo, keys: &[(Name, Text)]) -> Option<Vec<String>> {
    if keys.len() != info.keys.len() {
        return None;
    }
    info.keys.iter().map(|k| keys.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string())).collect()
}

/// The values of a selector as `List` methods take them.
pub fn selector_values(info: &ListInfo, sel: &Selector) -> Option<Vec<String>> {
    match sel {
        Selector::Keys(k) => ordered_key_values(info, k),
        Selector::Position(p) => Some(vec![p.to_string()]),
        _ => None,
    }
}

fn insert_of(place: &Option<Place>, info: Option<&ListInfo>) -> Result<Insert> {
    let bad = |s: &Selector| Error::invalid(format!("{s:?}"), "bad insert anchor");
    Ok(match place {
        None => Insert::Last,
        Some(Place::First) => Insert::First,
        Some(Place::After(Selector::Value(v))) => Insert::After(vec![v.clone()]),
        Some(Place::After(s)) => Insert::After(info.and_then(|i| selector_values(i, s)).ok_or_else(|| bad(s))?),
    })
}

fn apply_one(root: &mut Container, change: &Change, removed: &mut Removed) -> Result<()> {
    let path = change.path();
    if let (true, Change::Meta { new, .. }) = (path.is_root(), change) {
        root.meta = new.clone();
        return Ok(());
    }
    let parent_path = path.parent().ok_or_else(|| Error::invalid("/", "only metadata changes can name the root"))?;
    let seg = path.last().expect("non-root path has a last segment");
    let parent = container_mut(root, &parent_path)?;
    match change {
        Change::Created { node, place, .. } => match node {
            Subtree::Node(n) => {
                if parent.children.contains_key(&seg.name) {
                    return Err(Error::Exists { path: path.to_string() });
                }
                parent.children.insert(seg.name.clone(), n.clone());
            }
            Subtree::Entry(e) => {
                let list = match parent.children.get_mut(&seg.name) {
                    Some(Node::List(l)) => l,
                    Some(_) => return Err(Error::invalid(path, "not a list")),
                    None => {
                        let info = entry_list_info(&seg.selector, place);
                        parent.children.insert(seg.name.clone(), Node::List(Box::new(List::new(info))));
                        match parent.children.get_mut(&seg.name) {
                            Some(Node::List(l)) => l,
                            _ => unreachable!("just inserted"),
                        }
                    }
                };
                let at = insert_of(place, Some(&list.info.clone()))?;
                let at = if list.info.keys.is_empty() {
                    // Keyless: a position selector says where the new entry lands.
                    match &seg.selector {
                        Selector::Position(p) if *p > 1 => Insert::After(vec![(p - 1).to_string()]),
                        Selector::Position(_) => Insert::First,
                        _ => at,
                    }
                } else {
                    at
                };
                list.insert(e.clone(), &at).map_err(|_| Error::Exists { path: path.to_string() })?;
            }
            Subtree::Value(v) => {
                let ll = match parent.children.entry(seg.name.clone()).or_insert_with(|| Node::LeafList(Vec::new())) {
                    Node::LeafList(ll) => ll,
                    _ => return Err(Error::invalid(path, "not a leaf-list")),
                };
                if ll.iter().any(|x| x.value == v.value) {
                    return Err(Error::Exists { path: path.to_string() });
                }
                let idx = match place {
                    None => ll.len(),
                    Some(Place::First) => 0,
                    Some(Place::After(Selector::Value(a))) => {
                        ll.iter().position(|x| x.value.as_text() == a.as_str()).map(|i| i + 1).ok_or_else(|| {
                            Error::NotFound {
                                path: format!("{} (insert anchor)", with_selector(path, Selector::Value(a.clone()))),
                            }
                        })?
                    }
                    Some(_) => return Err(Error::invalid(path, "bad leaf-list anchor")),
                };
                ll.insert(idx, v.clone());
            }
        },
        Change::Deleted { .. } | Change::Erased { .. } => take_at(parent, path, removed)?,
        Change::Modified { new, .. } => match parent.children.get_mut(&seg.name) {
            Some(n) if !matches!(n, Node::Container(_) | Node::List(_) | Node::LeafList(_)) => *n = new.clone(),
            _ => return Err(Error::NotFound { path: path.to_string() }),
        },
        Change::Meta { new, .. } => match (&seg.selector, parent.children.get_mut(&seg.name)) {
            (Selector::Value(v), Some(Node::LeafList(ll))) => {
                let e = ll
                    .iter_mut()
                    .find(|x| x.value.as_text() == v.as_str())
                    .ok_or_else(|| Error::NotFound { path: path.to_string() })?;
                e.meta = new.clone();
            }
            _ => container_mut(parent, &Path { segments: vec![seg.clone()] })?.meta = new.clone(),
        },
        Change::Moved { new, .. } => match (&seg.selector, parent.children.get_mut(&seg.name)) {
            (Selector::Value(v), Some(Node::LeafList(ll))) => {
                let i = ll
                    .iter()
                    .position(|x| x.value.as_text() == v.as_str())
                    .ok_or_else(|| Error::NotFound { path: path.to_string() })?;
                let e = ll.remove(i);
                let idx = match new {
                    Place::First => 0,
                    Place::After(Selector::Value(a)) => ll
                        .iter()
                        .position(|x| x.value.as_text() == a.as_str())
                        .map(|i| i + 1)
                        .ok_or_else(|| Error::NotFound { path: format!("{path} (move anchor)") })?,
                    Place::After(_) => return Err(Error::invalid(path, "bad leaf-list anchor")),
                };
                ll.insert(idx, e);
            }
            (sel, Some(Node::List(l))) => {
                let keys = selector_values(&l.info, sel).ok_or_else(|| Error::NotFound { path: path.to_string() })?;
                let at = insert_of(&Some(new.clone()), Some(&l.info.clone()))?;
                l.move_entry(&keys, &at)?;
            }
            _ => return Err(Error::NotFound { path: path.to_string() }),
        },
    }
    Ok(())
}

/// The list info a created entry implies when its list does not exist yet.
fn entry_list_info(sel: &Selector, place: &Option<Place>) -> ListInfo {
    match sel {
        Selector::Keys(k) => {
            ListInfo { keys: k.iter().map(|(n, _)| n.clone()).collect(), user_ordered: place.is_some() }
        }
        _ => ListInfo::keyless(),
    }
}

/// Removes the node `path` names from `parent` (its parent container); a list or
/// leaf-list left empty disappears.
pub fn remove_at(parent: &mut Container, path: &Path) -> Result<()> {
    take_at(parent, path, &mut Removed::default())
}

/// [`remove_at`], handing what it takes out to `removed`.
fn take_at(parent: &mut Container, path: &Path, removed: &mut Removed) -> Result<()> {
    let seg = path.last().ok_or_else(|| Error::invalid("/", "cannot remove the root"))?;
    let missing = || Error::NotFound { path: path.to_string() };
    let now_empty = match (&seg.selector, parent.children.get_mut(&seg.name)) {
        (Selector::None, Some(_)) => {
            removed.nodes.extend(parent.children.remove(&seg.name));
            return Ok(());
        }
        (Selector::Value(v), Some(Node::LeafList(ll))) => {
            let i = ll.iter().position(|x| x.value.as_text() == v.as_str()).ok_or_else(missing)?;
            ll.remove(i);
            ll.is_empty()
        }
        (sel, Some(Node::List(l))) => {
            let keys = selector_values(&l.info, sel).ok_or_else(missing)?;
            removed.entries.push(l.remove(&keys).ok_or_else(missing)?.1);
            l.is_empty()
        }
        _ => return Err(missing()),
    };
    if now_empty {
        removed.nodes.extend(parent.children.remove(&seg.name));
    }
    Ok(())
}
