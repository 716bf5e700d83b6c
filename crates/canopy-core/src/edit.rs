//! Edits: merge, replace, create, delete, remove, with insert positions for
//! user-ordered lists and leaf-lists. [`apply_edit`] changes a tree in place and
//! returns the diff of what it did.
//!
//! The tree an edit runs on may be *partial* (the engine loads only what an edit
//! needs): merge, create and insert look only at the nodes the edit names and
//! their ancestors; replace, delete and remove need the target's whole subtree.

use crate::diff::{self, entry_selector, selector_values, with_selector, Change, Place, Subtree};
use crate::error::{Error, Result};
use crate::path::{Path, Segment, Selector};
use crate::schema::Schema;
use crate::tree::{Children, Container, Insert, LeafListEntry, List, ListInfo, Name, Node};
use crate::value::{Meta, Text, Value};

/// The operation of an edit (RFC 6241 §7.2 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Merge the value into what is there, creating what is missing.
    Merge,
    /// Replace the target with the value, creating it if missing.
    Replace,
    /// Create the target; fails if it exists.
    Create,
    /// Delete the target; fails if it does not exist.
    Delete,
    /// Delete the target if it exists.
    Remove,
}

impl std::str::FromStr for Operation {
    type Err = Error;
    fn from_str(s: &str) -> Result<Operation> {
        Ok(match s {
            "merge" => Operation::Merge,
            "replace" => Operation::Replace,
            "create" => Operation::Create,
            "delete" => Operation::Delete,
            "remove" => Operation::Remove,
            _ => {
                return Err(Error::Invalid {
                    path: String::new(),
                    reason: format!("unknown operation `{s}` (merge, replace, create, delete, remove)"),
                })
            }
        })
    }
}

/// One edit of a transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub op: Operation,
    /// The target node.
    pub path: Path,
    /// The new content, for merge/replace/create: the node itself for a path
    /// ending in a plain name (a `Node::Leaf` for a leaf, a `Node::List` for a
    /// whole list...), a `Node::Container` with the entry's content for a list
    /// entry (key leaves may be left out: the path gives them) or the root. A
    /// leaf-list entry needs no value (`Node::Leaf` to give it metadata).
    pub value: Option<Node>,
    /// Where a new or moved entry of a user-ordered list or leaf-list goes.
    pub insert: Option<Insert>,
}

impl Edit {
    /// A merge of `value` at `path`.
    pub fn merge(path: Path, value: Node) -> Edit {
        Edit { op: Operation::Merge, path, value: Some(value), insert: None }
    }

    /// A delete of `path`.
    pub fn delete(path: Path) -> Edit {
        Edit { op: Operation::Delete, path, value: None, insert: None }
    }
}

/// List info for a list at `schema_path` that does not exist yet: the schema's,
/// else what the selector of the path implies.
fn list_info_for(schema: &dyn Schema, schema_path: &str, sel: &Selector) -> ListInfo {
    schema.list_info(schema_path).unwrap_or_else(|| match sel {
        Selector::Keys(k) => ListInfo::keyed(k.iter().map(|(n, _)| n.clone())),
        _ => ListInfo::keyless(),
    })
}

/// Applies one edit to `root`, returning the changes it made. On error the tree
/// may be partly changed; the engine applies batches to a copy or discards it.
///
/// # Errors
/// [`Error::NotFound`] (delete of a missing node, insert anchor missing),
/// [`Error::Exists`] (create of an existing node), [`Error::Invalid`] (a value that
/// does not fit the path, keys that disagree with the path).
pub fn apply_edit(root: &mut Container, edit: &Edit, schema: &dyn Schema) -> Result<Vec<Change>> {
    apply_edit_owned(root, edit.clone(), schema)
}

/// [`apply_edit`] taking the edit by value, so its value moves into the tree
/// instead of being copied.
///
/// # Errors
/// As [`apply_edit`].
pub fn apply_edit_owned(root: &mut Container, edit: Edit, schema: &dyn Schema) -> Result<Vec<Change>> {
    apply_edit_with(root, edit, schema, None)
}

/// [`apply_edit_owned`] for a caller that fills in the created nodes itself:
/// the list entry or container the edit targets, when it creates it, and the
/// list entries and containers a merge creates below an existing node, are
/// not copied into their [`Change::Created`], which hold empty ones instead,
/// and the changes' indices are returned. The caller fills the changes from the tree
/// ([`fill_created`]) before anything reads the change's node: by a copy
/// while the tree lives on, or by moving the entry out of a tree it is done
/// with. A bulk transaction creating thousands of entries so makes one copy
/// of them instead of two.
///
/// # Errors
/// As [`apply_edit`].
pub fn apply_edit_deferring(
    root: &mut Container,
    edit: Edit,
    schema: &dyn Schema,
) -> Result<(Vec<Change>, Vec<usize>)> {
    let mut deferred = Vec::new();
    let changes = apply_edit_with(root, edit, schema, Some(&mut deferred))?;
    Ok((changes, deferred))
}

/// Fills the node of `change`, a [`Change::Created`] of a list entry or
/// container left empty by [`apply_edit_deferring`], from the node at its
/// path in `root`:
/// moved out of `root` with `take` (the tree is left without the entry's
/// content), else copied.
///
/// # Errors
/// [`Error::NotFound`] when `root` holds no entry at the change's path.
pub fn fill_created(root: &mut Container, change: &mut Change, take: bool) -> Result<()> {
    let (Change::Created { path, node: Subtree::Entry(slot), .. }
    | Change::Created { path, node: Subtree::Node(Node::Container(slot)), .. }) = change
    else {
        return Err(Error::invalid(change.path(), "not the creation of a list entry or container"));
    };
    let entry = diff::container_mut(root, path)?;
    *slot = if take { std::mem::take(entry) } else { entry.clone() };
    Ok(())
}

/// [`fill_created`] of each change at `at` (indices into `changes`, in
/// change order): the entries of one keyed list that follow each other, as
/// an edit creates them, are found in one pass along the list instead of a
/// walk from the root each.
///
/// # Errors
/// As [`fill_created`].
pub fn fill_created_all(root: &mut Container, changes: &mut [Change], at: &[usize], take: bool) -> Result<()> {
    let mut i = 0;
    while i < at.len() {
        let n = 1 + at[i + 1..].iter().take_while(|&&j| same_list(&changes[at[i]], &changes[j])).count();
        let run = &at[i..i + n];
        i += n;
        let first = changes[run[0]].path();
        let list = match (n, first.parent(), first.last()) {
            (2.., Some(parent), Some(seg)) => match diff::container_mut(root, &parent)?.children.get_mut(&seg.name) {
                Some(Node::List(l)) if !l.info.keys.is_empty() => Some(l),
                _ => None,
            },
            _ => None,
        };
        let Some(list) = list else {
            for &j in run {
                fill_created(root, &mut changes[j], take)?;
            }
            continue;
        };
        let sels = run.iter().map(|&j| match &changes[j].path().last().expect("an entry").selector {
            Selector::Keys(kv) => kv.as_slice(),
            _ => &[],
        });
        let pos = list.keyed_positions(sels);
        let mut filled = vec![false; n];
        list.visit_at_mut(&pos, |k, entry| {
            if let Change::Created { node: Subtree::Entry(slot), .. } = &mut changes[run[k]] {
                *slot = if take { std::mem::take(entry) } else { entry.clone() };
                filled[k] = true;
            }
        });
        if let Some(k) = filled.iter().position(|f| !f) {
            return Err(Error::NotFound { path: changes[run[k]].path().to_string() });
        }
    }
    Ok(())
}

/// Whether `b` creates an entry of the same keyed list as `a` does, by keys.
fn same_list(a: &Change, b: &Change) -> bool {
    let entry = |c: &Change| matches!(c, Change::Created { node: Subtree::Entry(_), .. });
    entry(a) && entry(b) && a.path().same_keyed_list(b.path())
}

fn apply_edit_with(
    root: &mut Container,
    mut edit: Edit,
    schema: &dyn Schema,
    deferred: Option<&mut Vec<usize>>,
) -> Result<Vec<Change>> {
    let path = match canonical_path_cow(root, &edit.path, schema) {
        std::borrow::Cow::Borrowed(_) => std::mem::take(&mut edit.path),
        std::borrow::Cow::Owned(p) => p,
    };
    let mut out = Vec::new();
    let mut slot = None;
    match apply_inner(root, edit, &path, schema, &mut out, &mut slot, deferred) {
        Ok(()) => {
            // The change that created the target takes the edit's path
            // instead of a copy of it.
            if let Some(i) = slot {
                set_path(&mut out[i], path);
            }
            Ok(out)
        }
        Err(e) => {
            // Undo what the edit did before it failed, then drop lists and
            // leaf-lists it created empty on the way.
            diff::apply(root, &diff::invert(&out)).expect("undoing an edit's own changes");
            prune_empty(root, &path);
            Err(e)
        }
    }
}

/// Removes empty lists and leaf-lists along `path` (they carry no data).
fn prune_empty(root: &mut Container, path: &Path) {
    let mut cur = root;
    for seg in &path.segments {
        if matches!(cur.children.get(&seg.name), Some(Node::List(l)) if l.is_empty())
            || matches!(cur.children.get(&seg.name), Some(Node::LeafList(v)) if v.is_empty())
        {
            cur.children.remove(&seg.name);
            return;
        }
        cur = match (cur.children.get_mut(&seg.name), &seg.selector) {
            (Some(Node::Container(c)), Selector::None) => c,
            (Some(Node::List(l)), sel) => match selector_values(&l.info, sel).and_then(|v| l.get_mut(&v)) {
                Some(c) => c,
                None => return,
            },
            _ => return,
        };
    }
}

/// Gives a change its path (one left empty by a [`put_child`] told to leave
/// it to its caller).
fn set_path(c: &mut Change, p: Path) {
    match c {
        Change::Created { path, .. }
        | Change::Deleted { path, .. }
        | Change::Modified { path, .. }
        | Change::Meta { path, .. }
        | Change::Moved { path, .. }
        | Change::Erased { path } => *path = p,
    }
}

/// Applies `edit` at `path` (canonical). When it creates the target as one
/// change, that change's path is left empty and its index put in `slot`, for
/// the caller, who owns the path, to move it in ([`set_path`]). With
/// `deferred`, a list entry the edit creates is left out of its change (see
/// [`apply_edit_deferring`]).
fn apply_inner(
    root: &mut Container,
    edit: Edit,
    path: &Path,
    schema: &dyn Schema,
    out: &mut Vec<Change>,
    slot: &mut Option<usize>,
    deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    match edit.op {
        Operation::Delete | Operation::Remove => {
            if !exists(root, path) {
                return if edit.op == Operation::Delete {
                    Err(Error::NotFound { path: path.to_string() })
                } else {
                    Ok(())
                };
            }
            remove_node(root, path, out)?;
        }
        Operation::Create | Operation::Merge | Operation::Replace => {
            if edit.op == Operation::Create && exists(root, path) {
                return Err(Error::Exists { path: path.to_string() });
            }
            let value = edit_value(edit.value, path)?;
            if path.is_root() {
                let Node::Container(c) = value else {
                    return Err(Error::invalid("/", "the root takes an object"));
                };
                if edit.op == Operation::Replace {
                    container_list_names(&Path::root(), &c, &mut String::new(), schema)?;
                    diff::diff_container(&Path::root(), root, &c, out);
                    *root = c;
                } else {
                    merge_container(&Path::root(), root, c, out, schema, deferred)?;
                }
                return Ok(());
            }
            let parent = ensure_container(root, &path.segments[..path.segments.len() - 1], out, schema)?;
            let seg = path.last().expect("not root");
            let replace = edit.op == Operation::Replace;
            let insert = edit.insert.as_ref();
            put_child(parent, path, &seg.selector, value, replace, insert, out, schema, Some(slot), deferred)?;
        }
    }
    Ok(())
}

/// The value of a merge/replace/create edit, with a leaf-list entry's default.
fn edit_value(value: Option<Node>, path: &Path) -> Result<Node> {
    match (value, &path.last().map(|s| &s.selector)) {
        (Some(v), _) => Ok(v),
        (None, Some(Selector::Value(v))) => Ok(Node::leaf(Value::String(v.as_str().into()))),
        (None, _) => Err(Error::invalid(path, "this edit needs a value")),
    }
}

/// Whether the node `path` names exists in `root`.
pub fn exists(root: &Container, path: &Path) -> bool {
    let Some(parent_path) = path.parent() else { return true };
    let Some(parent) = container_ref(root, &parent_path) else { return false };
    let seg = path.last().expect("not root");
    match (&seg.selector, parent.children.get(&seg.name)) {
        (_, None) => false,
        (Selector::None, Some(_)) => true,
        (Selector::Value(v), Some(Node::LeafList(ll))) => ll.iter().any(|e| e.value.as_text() == v.as_str()),
        (sel, Some(Node::List(l))) => list_entry(l, sel).is_some(),
        _ => false,
    }
}

/// The container at `path` (the root, a container, or a list entry).
pub fn container_ref<'a>(root: &'a Container, path: &Path) -> Option<&'a Container> {
    let mut cur = root;
    for seg in &path.segments {
        cur = match (cur.children.get(&seg.name)?, &seg.selector) {
            (Node::Container(c), Selector::None) => c,
            (Node::List(l), sel) => list_entry(l, sel)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Makes sure every node on the path of `segments` exists as a container or
/// list entry, creating what is missing (with its key leaves), and returns
/// the last.
fn ensure_container<'a>(
    root: &'a mut Container,
    segments: &[Segment],
    out: &mut Vec<Change>,
    schema: &dyn Schema,
) -> Result<&'a mut Container> {
    let mut cur = root;
    for (i, seg) in segments.iter().enumerate() {
        // Built only when something is created or wrong.
        let here = || Path { segments: segments[..=i].to_vec() };
        let create_node = !cur.children.contains_key(&seg.name);
        match &seg.selector {
            Selector::None => {
                if create_node {
                    refuse_list_name(&here(), schema)?;
                    out.push(Change::Created {
                        path: here(),
                        node: Subtree::Node(Node::Container(Container::default())),
                        place: None,
                    });
                    cur.children.insert(seg.name.clone(), Node::Container(Container::default()));
                }
                cur = match cur.children.get_mut(&seg.name) {
                    Some(Node::Container(c)) => c,
                    _ => return Err(Error::invalid(here(), "not a container")),
                };
            }
            Selector::Keys(keys) => {
                if create_node {
                    let info = list_info_for(schema, &here().schema_path(), &seg.selector);
                    cur.children.insert(seg.name.clone(), Node::List(Box::new(List::new(info))));
                }
                let Some(Node::List(list)) = cur.children.get_mut(&seg.name) else {
                    return Err(Error::invalid(here(), "not a list"));
                };
                if list.info.keys.is_empty() {
                    // canonical_path turns a single match into a position, but
                    // a path the schema declares keyed is taken as written,
                    // and an earlier edit of the transaction may have made
                    // this list keyless from its value: its one match is the
                    // entry. No match: add one.
                    if let [i] = keyless_matches(list, keys).as_slice() {
                        let at = [(i + 1).to_string()];
                        cur = list.get_mut(&at).expect("matched");
                        continue;
                    }
                    let n = append_keyless(list, &here(), keys, Container::default(), out)?;
                    cur = list.get_mut(&[n.to_string()]).expect("just added");
                    continue;
                }
                // The path names each key once (checked without copying them).
                let names_keys = keys.len() == list.info.keys.len()
                    && list.info.keys.iter().all(|k| keys.iter().any(|(n, _)| n == k));
                if !names_keys {
                    return Err(Error::invalid(here(), format!("the list's keys are {:?}", list.info.keys)));
                }
                // One key encoding finds the entry or where a new one goes:
                // by its key (system-ordered), or last (user-ordered).
                let mut made = None;
                let (entry, created) = if list.info.user_ordered {
                    let make = |list: &List| {
                        let here = here();
                        let entry = key_entry(&here, keys, schema);
                        made = Some((here, Some(last_place(list))));
                        entry
                    };
                    list.get_or_push_ordered(keys, make)?.expect("a user-ordered list's keys")
                } else {
                    let make = || {
                        let here = here();
                        let entry = key_entry(&here, keys, schema);
                        made = Some((here, None));
                        entry
                    };
                    list.get_or_insert_sorted(keys, make)?.expect("a sorted list's keys")
                };
                if created {
                    let (path, place) = made.take().expect("made");
                    out.push(Change::Created { path, node: Subtree::Entry(entry.clone()), place });
                }
                cur = entry;
            }
            Selector::Position(p) => {
                let Some(Node::List(list)) = cur.children.get_mut(&seg.name) else {
                    return Err(Error::NotFound { path: here().to_string() });
                };
                cur = list.get_mut(&[p.to_string()]).ok_or_else(|| Error::NotFound { path: here().to_string() })?;
            }
            Selector::Value(_) => return Err(Error::invalid(here(), "a leaf-list entry has no children")),
        }
    }
    Ok(cur)
}

/// The place after the current last entry of a user-ordered list.
/// A new entry at `here` holding its key leaves, typed by `schema`, with room
/// for the child a path goes on to.
fn key_entry(here: &Path, keys: &[(Name, Text)], schema: &dyn Schema) -> Container {
    let mut entry = Container { meta: Meta::default(), children: Children::with_capacity(keys.len() + 1) };
    for (k, v) in keys {
        entry.children.insert(k.clone(), Node::leaf(schema.path_value(here, Some(k), v)));
    }
    entry
}

fn last_place(list: &List) -> Place {
    match list.entries().next_back() {
        None => Place::First,
        Some(e) => Place::After(entry_selector(list, e, list.len() - 1)),
    }
}

/// Where an insert puts an entry, as a [`Place`], given the list before insertion.
fn place_of_insert(list: &List, at: &Insert) -> Result<Place> {
    let sel = |keys: &Vec<String>| -> Result<Selector> {
        let e = list.get(keys).ok_or_else(|| Error::NotFound { path: format!("insert anchor {keys:?}") })?;
        let idx = list.entries().position(|x| std::ptr::eq(x, e)).unwrap_or(0);
        Ok(entry_selector(list, e, idx))
    };
    Ok(match at {
        Insert::First => Place::First,
        Insert::Last => last_place(list),
        Insert::After(k) => Place::After(sel(k)?),
        Insert::Before(k) => {
            let anchor = list.get(k).ok_or_else(|| Error::NotFound { path: format!("insert anchor {k:?}") })?;
            let mut prev: Option<Selector> = None;
            for (i, e) in list.entries().enumerate() {
                if std::ptr::eq(e, anchor) {
                    break;
                }
                prev = Some(entry_selector(list, e, i));
            }
            prev.map_or(Place::First, Place::After)
        }
    })
}

/// Puts `value` as the child `path` names under `parent` (merge or replace).
/// With `slot`, a node created as one change leaves that change's path empty
/// and its index in `slot`: the caller moves its own `path` in. With
/// `deferred`, a list entry created is left out of its change, whose index
/// goes in `deferred` (see [`apply_edit_deferring`]).
#[allow(clippy::too_many_arguments)]
fn put_child(
    parent: &mut Container,
    path: &Path,
    sel: &Selector,
    value: Node,
    replace: bool,
    insert: Option<&Insert>,
    out: &mut Vec<Change>,
    schema: &dyn Schema,
    slot: Option<&mut Option<usize>>,
    deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    let name = &path.last().expect("not root").name;
    match sel {
        Selector::None => {
            match parent.children.get_mut(name) {
                None => {
                    let value = normalise_new(path, value, schema)?;
                    match (slot, &value) {
                        (Some(slot), Node::Leaf { .. } | Node::Container(_) | Node::AnyData { .. }) => {
                            *slot = Some(out.len());
                            let node = match &value {
                                // A container the edit creates, its copy deferred (as a list entry's).
                                Node::Container(c) => Node::Container(diff::created_content(c, out, deferred)),
                                _ => value.clone(),
                            };
                            out.push(Change::Created { path: Path::root(), node: Subtree::Node(node), place: None });
                        }
                        // A list the edit creates whole: its entries' copies deferred too.
                        (_, Node::List(l)) if deferred.is_some() => diff::added_entries(path, l, out, deferred),
                        _ => diff::added_node(path, &value, out),
                    }
                    parent.children.insert(name.clone(), value);
                }
                Some(existing) if replace => {
                    refuse_list_names_in(path, &value, schema)?;
                    let value = normalise_like(path, existing, value)?;
                    diff::diff_node(path, existing, &value, out);
                    *existing = value;
                }
                Some(existing) => merge_node(path, existing, value, out, schema, deferred)?,
            }
            Ok(())
        }
        Selector::Keys(_) | Selector::Position(_) => {
            let Node::Container(mut entry) = value else {
                return Err(Error::invalid(path, "a list entry takes an object"));
            };
            if !parent.children.contains_key(name) {
                let info = list_info_for(schema, &path.schema_path(), sel);
                parent.children.insert(name.clone(), Node::List(Box::new(List::new(info))));
            }
            let Some(Node::List(list)) = parent.children.get_mut(name) else {
                return Err(Error::invalid(path, "not a list"));
            };
            if let (Selector::Keys(keys), true) = (sel, list.info.keys.is_empty()) {
                // As in `ensure_container`: the one entry matching is the one named.
                if let [i] = keyless_matches(list, keys).as_slice() {
                    let at = [(i + 1).to_string()];
                    let entry_path = with_selector(path, Selector::Position(*i as u64 + 1));
                    return put_entry(list, entry_path, &at, entry, replace, insert, out, schema, deferred);
                }
                append_keyless(list, path, keys, entry, out)?;
                return Ok(());
            }
            if let Selector::Keys(keys) = sel {
                for (k, v) in keys {
                    match entry.children.get(k) {
                        None => {
                            entry.children.insert(k.clone(), Node::leaf(schema.path_value(path, Some(k), v)));
                        }
                        Some(Node::Leaf { value, .. }) if value.as_text() == v.as_str() => {}
                        Some(_) => return Err(Error::invalid(path, format!("key leaf `{k}` disagrees with the path"))),
                    }
                }
            }
            // A new entry of a system-ordered list named by its keys in key
            // order (its path canonical as written): placed with one search.
            if let Selector::Keys(kv) = sel {
                if !list.info.user_ordered && crate::schema::keys_in_order(&list.info, kv) {
                    match list.insert_new_sorted(kv, entry)? {
                        Ok(placed) => {
                            let node = Subtree::Entry(diff::created_content(placed, out, deferred));
                            // The edit's own path, as the leaf case above takes it.
                            let path = match slot {
                                Some(slot) => {
                                    *slot = Some(out.len());
                                    Path::root()
                                }
                                None => path.clone(),
                            };
                            out.push(Change::Created { path, node, place: None });
                            return Ok(());
                        }
                        Err(back) => entry = back,
                    }
                }
            }
            let vals = selector_values(&list.info, sel)
                .ok_or_else(|| Error::invalid(path, format!("the list's keys are {:?}", list.info.keys)))?;
            let entry_path =
                if list.info.keys.is_empty() { path.clone() } else { canonical_entry_path(path, list, &vals) };
            put_entry(list, entry_path, &vals, entry, replace, insert, out, schema, deferred)
        }
        Selector::Value(v) => {
            let (typed, meta) = match value {
                Node::Leaf { value: val, meta } => {
                    if val.as_text() != v.as_str() {
                        return Err(Error::invalid(path, "the value disagrees with the path"));
                    }
                    (schema.path_value(path, None, v), meta)
                }
                _ => return Err(Error::invalid(path, "a leaf-list entry takes a scalar")),
            };
            let ll = match parent.children.entry(name.clone()).or_insert_with(|| Node::LeafList(Vec::new())) {
                Node::LeafList(ll) => ll,
                _ => return Err(Error::invalid(path, "not a leaf-list")),
            };
            put_leaf_list_entry(ll, path, typed, meta, replace, insert, out)
        }
    }
}

/// Merges or replaces one list entry (by `vals`: keys in key order, or a
/// position) at `entry_path` (its keys in the list's key order). With
/// `deferred`, an entry created is left out of its change, whose index goes
/// in `deferred`.
#[allow(clippy::too_many_arguments)]
fn put_entry(
    list: &mut List,
    entry_path: Path,
    vals: &[String],
    entry: Container,
    replace: bool,
    insert: Option<&Insert>,
    out: &mut Vec<Change>,
    schema: &dyn Schema,
    deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    let path = &entry_path;
    match list.get(vals) {
        None => {
            if list.info.keys.is_empty() {
                return Err(Error::NotFound { path: path.to_string() });
            }
            let at = insert.cloned().unwrap_or_default();
            let place = if list.info.user_ordered { Some(place_of_insert(list, &at)?) } else { None };
            let node = Subtree::Entry(diff::created_content(&entry, out, deferred));
            out.push(Change::Created { path: entry_path, node, place });
            list.insert(entry, &at)?;
        }
        Some(_) => {
            if let (Some(at), true) = (insert, list.info.user_ordered) {
                // Check the anchor before taking the entry out, so a failed
                // move leaves the list as it was.
                if let Insert::Before(k) | Insert::After(k) = at {
                    if list.get(k).is_none() {
                        return Err(Error::NotFound { path: format!("{path} (insert anchor {k:?})") });
                    }
                    // A keyless list's positions may be spelled otherwise (`01`).
                    let keyless = list.info.keys.is_empty();
                    if k.as_slice() == vals || (keyless && position_of(k) == position_of(vals)) {
                        return Err(Error::invalid(path, "an entry cannot be moved relative to itself"));
                    }
                }
                let old = place_of_current(list, vals);
                // A keyless list's anchor is a position in the list as it
                // stands, and so is the place a move is recorded with: both
                // counted once the entry is taken out (as `diff::apply` moves).
                let at = match at {
                    Insert::Before(k) | Insert::After(k) if list.info.keys.is_empty() => {
                        let (a, m) = (position_of(k), position_of(vals));
                        let shifted = vec![if a > m { a - 1 } else { a }.to_string()];
                        match at {
                            Insert::Before(_) => Insert::Before(shifted),
                            _ => Insert::After(shifted),
                        }
                    }
                    _ => at.clone(),
                };
                let (new, pos) = {
                    let (_, e) = list.remove(vals).expect("present");
                    let place = place_of_insert(list, &at)?;
                    (place, list.insert(e, &at)?)
                };
                if old != new {
                    out.push(Change::Moved { path: entry_path.clone(), old, new });
                }
                if list.info.keys.is_empty() {
                    // What the edit merges goes into the entry it moved, at
                    // the position it stands at now.
                    let now = list.entries_with_pos().position(|(p, _)| p == pos.as_slice()).expect("just inserted");
                    let entry_path = with_selector(path, Selector::Position(now as u64 + 1));
                    let existing = list.get_at_mut(&pos).expect("just inserted");
                    return put_into(existing, &entry_path, entry, replace, out, schema, deferred);
                }
            }
            let existing = list.get_mut(vals).expect("present");
            put_into(existing, &entry_path, entry, replace, out, schema, deferred)?;
        }
    }
    Ok(())
}

/// Merges `entry` into the entry `existing` at `path`, or replaces it.
fn put_into(
    existing: &mut Container,
    path: &Path,
    entry: Container,
    replace: bool,
    out: &mut Vec<Change>,
    schema: &dyn Schema,
    deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    if replace {
        diff::diff_container(path, existing, &entry, out);
        *existing = entry;
        Ok(())
    } else {
        merge_container(path, existing, entry, out, schema, deferred)
    }
}

/// The 1-based position a keyless list's entry is named by (0 when it is
/// not a number: such a name matches no entry and was refused before).
fn position_of(vals: &[String]) -> usize {
    vals.first().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The entry path with its keys in the list's key order.
fn canonical_entry_path(path: &Path, list: &List, vals: &[String]) -> Path {
    with_selector(
        path,
        Selector::Keys(list.info.keys.iter().cloned().zip(vals.iter().map(|v| Text::from(v.as_str()))).collect()),
    )
}

/// Where the entry `vals` stands now.
fn place_of_current(list: &List, vals: &[String]) -> Place {
    let mut prev: Option<Selector> = None;
    let target = list.get(vals).map(|e| e as *const Container);
    for (i, e) in list.entries().enumerate() {
        if Some(e as *const Container) == target {
            break;
        }
        prev = Some(entry_selector(list, e, i));
    }
    prev.map_or(Place::First, Place::After)
}

fn put_leaf_list_entry(
    ll: &mut Vec<LeafListEntry>,
    path: &Path,
    value: Value,
    meta: Meta,
    replace: bool,
    insert: Option<&Insert>,
    out: &mut Vec<Change>,
) -> Result<()> {
    let text = value.as_text().into_owned();
    let v = text.as_str();
    let find = |ll: &[LeafListEntry], t: &str| ll.iter().position(|e| e.value.as_text() == t);
    let place_at = |ll: &[LeafListEntry], i: usize| {
        if i == 0 {
            Place::First
        } else {
            Place::After(Selector::Value(ll[i - 1].value.as_text().into_owned()))
        }
    };
    let target_index = |ll: &[LeafListEntry], at: &Insert| -> Result<usize> {
        Ok(match at {
            Insert::First => 0,
            Insert::Last => ll.len(),
            Insert::Before(k) | Insert::After(k) => {
                let a = k.first().map(String::as_str).unwrap_or("");
                let i = find(ll, a).ok_or_else(|| Error::NotFound { path: format!("{path} (insert anchor `{a}`)") })?;
                if matches!(at, Insert::After(_)) {
                    i + 1
                } else {
                    i
                }
            }
        })
    };
    match find(ll, v) {
        None => {
            let i = target_index(ll, insert.unwrap_or(&Insert::Last))?;
            let entry = LeafListEntry { value, meta };
            out.push(Change::Created {
                path: path.clone(),
                node: Subtree::Value(entry.clone()),
                place: Some(place_at(ll, i)),
            });
            ll.insert(i, entry);
        }
        Some(i) => {
            if let Some(at) = insert {
                if let Insert::Before(k) | Insert::After(k) = at {
                    let a = k.first().map(String::as_str).unwrap_or("");
                    if find(ll, a).is_none() {
                        return Err(Error::NotFound { path: format!("{path} (insert anchor `{a}`)") });
                    }
                    if a == v {
                        return Err(Error::invalid(path, "an entry cannot be moved relative to itself"));
                    }
                }
                let old = place_at(ll, i);
                let e = ll.remove(i);
                let j = target_index(ll, at)?;
                let new = place_at(ll, j);
                ll.insert(j, e);
                if old != new {
                    out.push(Change::Moved { path: path.clone(), old, new });
                }
            }
            let i = find(ll, v).expect("present");
            let new_meta = if replace {
                meta
            } else {
                let mut m = ll[i].meta.clone();
                m.extend(meta);
                m
            };
            if new_meta != ll[i].meta {
                out.push(Change::Meta { path: path.clone(), old: ll[i].meta.clone(), new: new_meta.clone() });
                ll[i].meta = new_meta;
            }
        }
    }
    Ok(())
}

/// Merges `value` into `existing` (both at `path`, a plain-name path). With
/// `deferred`, list entries and containers the merge creates are left out of
/// their changes, whose indices go in `deferred` (see [`apply_edit_deferring`]).
fn merge_node(
    path: &Path,
    existing: &mut Node,
    value: Node,
    out: &mut Vec<Change>,
    schema: &dyn Schema,
    deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    match (existing, value) {
        (Node::Container(c), Node::Container(v)) => merge_container(path, c, v, out, schema, deferred),
        (Node::List(l), Node::List(v)) => {
            // Entries keyed as the existing list keys them are unique: each is
            // met once, and its copy may be deferred. A value list keyed
            // otherwise (keyless, parsed without declared keys) may hold one
            // entry twice by the existing list's keys, the second merged into
            // what the first created: its entries are copied at once.
            let mut deferred = deferred.filter(|_| v.info.keys == l.info.keys);
            for e in v.into_entries() {
                let vals = l.keys_of(&e).map_err(|_| Error::invalid(path, "an entry lacks a key leaf"))?;
                let p = canonical_entry_path(path, l, &vals);
                put_entry(l, p, &vals, e, false, None, out, schema, deferred.as_deref_mut())?;
            }
            Ok(())
        }
        (Node::LeafList(ll), Node::LeafList(v)) => {
            for e in v {
                let p = with_selector(path, Selector::Value(e.value.as_text().into_owned()));
                put_leaf_list_entry(ll, &p, e.value.clone(), e.meta, false, None, out)?;
            }
            Ok(())
        }
        (existing @ Node::Leaf { .. }, Node::Leaf { value, meta }) => {
            let Node::Leaf { value: old_value, meta: old_meta } = &*existing else { unreachable!() };
            let mut new_meta = old_meta.clone();
            new_meta.extend(meta);
            let new = Node::Leaf { value, meta: new_meta };
            if *existing != new {
                out.push(Change::Modified {
                    path: path.clone(),
                    old: Node::Leaf { value: old_value.clone(), meta: old_meta.clone() },
                    new: new.clone(),
                });
                *existing = new;
            }
            Ok(())
        }
        (existing @ Node::AnyData { .. }, new @ Node::AnyData { .. }) => {
            if *existing != new {
                out.push(Change::Modified { path: path.clone(), old: existing.clone(), new: new.clone() });
                *existing = new;
            }
            Ok(())
        }
        (existing, value) => {
            // Without a schema a node may change kind; the merge then replaces
            // it. Not a known list, which stays a list.
            refuse_list_names_in(path, &value, schema)?;
            diff::diff_node(path, existing, &value, out);
            *existing = value;
            Ok(())
        }
    }
}

/// Merges container `value` into `existing` at `path` (`deferred` as for
/// [`merge_node`]).
fn merge_container(
    path: &Path,
    existing: &mut Container,
    value: Container,
    out: &mut Vec<Change>,
    schema: &dyn Schema,
    mut deferred: Option<&mut Vec<usize>>,
) -> Result<()> {
    if !value.meta.is_empty() {
        let mut m = existing.meta.clone();
        m.extend(value.meta);
        if m != existing.meta {
            out.push(Change::Meta { path: path.clone(), old: existing.meta.clone(), new: m.clone() });
            existing.meta = m;
        }
    }
    for (name, child) in value.children {
        let p = path.child(name, Selector::None);
        let mut slot = None;
        put_child(
            existing,
            &p,
            &Selector::None,
            child,
            false,
            None,
            out,
            schema,
            Some(&mut slot),
            deferred.as_deref_mut(),
        )?;
        if let Some(i) = slot {
            set_path(&mut out[i], p);
        }
    }
    Ok(())
}

/// A new node about to be created at `path`: lists take the schema's info when
/// it knows the list.
fn normalise_new(path: &Path, value: Node, schema: &dyn Schema) -> Result<Node> {
    refuse_list_names_in(path, &value, schema)?;
    match value {
        Node::List(l) => match schema.list_info(&path.schema_path()) {
            Some(info) if info != l.info => relist(path, *l, info),
            _ => Ok(Node::List(l)),
        },
        v => Ok(v),
    }
}

/// [`refuse_list_name`] for `value` at `path` and every node inside it.
fn refuse_list_names_in(path: &Path, value: &Node, schema: &dyn Schema) -> Result<()> {
    let mut sp = crate::scratch::Scratch::take();
    path.push_schema_path(&mut sp);
    if !matches!(value, Node::List(_)) && schema.kind(&sp) == Some(crate::schema::NodeKind::List) {
        return Err(Error::invalid(path, "is a list: name an entry with its keys"));
    }
    inner_list_names(path, value, &mut sp, schema)
}

fn inner_list_names(path: &Path, node: &Node, sp: &mut String, schema: &dyn Schema) -> Result<()> {
    match node {
        Node::Container(c) => container_list_names(path, c, sp, schema),
        Node::List(l) if schema.lists_below(sp) => {
            l.entries().try_for_each(|e| container_list_names(path, e, sp, schema))
        }
        _ => Ok(()),
    }
}

/// The children of container or entry `c`, at schema path `sp`, checked as
/// [`refuse_list_names_in`] says.
fn container_list_names(path: &Path, c: &Container, sp: &mut String, schema: &dyn Schema) -> Result<()> {
    if !schema.lists_below(sp) {
        return Ok(());
    }
    for (name, child) in c.children.iter() {
        let len = sp.len();
        sp.push('/');
        sp.push_str(name);
        if !matches!(child, Node::List(_)) && schema.kind(sp) == Some(crate::schema::NodeKind::List) {
            return Err(Error::invalid(path, format!("`{sp}` is a list: the value holds another kind of node there")));
        }
        inner_list_names(path, child, sp, schema)?;
        sp.truncate(len);
    }
    Ok(())
}

/// A node other than a list may not be created where the schema (or a
/// learned or declared list) says a list is: it would be stored beside the
/// list's entries under the same name.
fn refuse_list_name(path: &Path, schema: &dyn Schema) -> Result<()> {
    match schema.kind(&path.schema_path()) {
        Some(crate::schema::NodeKind::List) => Err(Error::invalid(path, "is a list: name an entry with its keys")),
        _ => Ok(()),
    }
}

/// A replacement value shaped like `existing` (a list keeps the existing info).
fn normalise_like(path: &Path, existing: &Node, value: Node) -> Result<Node> {
    match (existing, value) {
        (Node::List(e), Node::List(l)) if e.info != l.info => relist(path, *l, e.info.clone()),
        (_, v) => Ok(v),
    }
}

/// The entries of `l` re-inserted into a list with `info`.
fn relist(path: &Path, l: List, info: ListInfo) -> Result<Node> {
    let mut out = List::new(info);
    for e in l.entries() {
        out.insert(e.clone(), &Insert::Last).map_err(|e| Error::invalid(path, e.to_string()))?;
    }
    Ok(Node::List(Box::new(out)))
}

/// Removes the node at `path` from `root`, recording what was removed.
fn remove_node(root: &mut Container, path: &Path, out: &mut Vec<Change>) -> Result<()> {
    let Some(parent_path) = path.parent() else {
        // The root: delete every top-level node.
        let old = std::mem::take(root);
        diff::diff_container(&Path::root(), &old, root, out);
        return Ok(());
    };
    let parent = diff::container_mut(root, &parent_path)?;
    let seg = path.last().expect("not root");
    let node = parent.children.get(&seg.name).ok_or_else(|| Error::NotFound { path: path.to_string() })?;
    let mut removed = Vec::new();
    match (&seg.selector, node) {
        (Selector::None, _) => {
            let n = parent.children.remove(&seg.name).expect("present");
            diff::removed_node_owned(path, n, out);
            return Ok(());
        }
        (Selector::Value(v), Node::LeafList(ll)) => {
            let i = ll.iter().position(|e| e.value.as_text() == v.as_str()).expect("exists");
            let place = if i == 0 {
                Place::First
            } else {
                Place::After(Selector::Value(ll[i - 1].value.as_text().into_owned()))
            };
            removed.push(Change::Deleted {
                path: path.clone(),
                node: Subtree::Value(ll[i].clone()),
                place: Some(place),
            });
        }
        (sel, Node::List(l)) => {
            let vals = selector_values(&l.info, sel).ok_or_else(|| Error::NotFound { path: path.to_string() })?;
            let e = l.get(&vals).ok_or_else(|| Error::NotFound { path: path.to_string() })?;
            let place = l.info.user_ordered.then(|| place_of_current(l, &vals));
            let p = if l.info.keys.is_empty() { path.clone() } else { canonical_entry_path(path, l, &vals) };
            removed.push(Change::Deleted { path: p, node: Subtree::Entry(e.clone()), place });
        }
        _ => return Err(Error::NotFound { path: path.to_string() }),
    }
    diff::remove_at(parent, path)?;
    out.extend(removed);
    Ok(())
}

/// `path` with the keys of every list entry in its list's key order: the order
/// of the list in `root` if it exists, else the schema's, else as written.
pub fn canonical_path(root: &Container, path: &Path, schema: &dyn Schema) -> Path {
    canonical_path_cow(root, path, schema).into_owned()
}

/// [`canonical_path`], borrowing `path` when it is canonical already (the
/// common case: keys written in key order), so that nothing is copied.
pub fn canonical_path_cow<'p>(root: &Container, path: &'p Path, schema: &dyn Schema) -> std::borrow::Cow<'p, Path> {
    use std::borrow::Cow;
    // Keys written in the order a schema declares are canonical as they
    // stand: a list the schema knows keyed is keyed in the tree too.
    let mut sp = crate::scratch::Scratch::take();
    let declared_order = path.segments.iter().all(|s| {
        sp.push('/');
        sp.push_str(&s.name);
        match &s.selector {
            Selector::Keys(kv) => schema.keyed_in_order(&sp, kv),
            Selector::None | Selector::Value(_) => true,
            Selector::Position(_) => false,
        }
    });
    if declared_order {
        return Cow::Borrowed(path);
    }
    let mut out: Option<Path> = None;
    let mut cur = Some(root);
    // The tree is only walked as far as the last keyed step needs it.
    let walk = path.segments.iter().rposition(|s| matches!(s.selector, Selector::Keys(_))).map_or(0, |i| i + 1);
    for (i, seg) in path.segments.iter().enumerate() {
        if i == walk && out.is_none() {
            break;
        }
        let node = cur.and_then(|c| c.children.get(&seg.name));
        let changed = match &seg.selector {
            // A keyless list (e.g. imported from plain JSON without declared
            // keys): key predicates pick the one entry whose leaves match.
            Selector::Keys(keys) if matches!(node, Some(Node::List(l)) if l.info.keys.is_empty()) => {
                let Some(Node::List(l)) = node else { unreachable!() };
                match keyless_matches(l, keys).as_slice() {
                    [i] => Some(Selector::Position(*i as u64 + 1)),
                    _ => None,
                }
            }
            Selector::Keys(keys) => {
                let reorder = |info: &ListInfo| -> Option<Selector> {
                    match crate::schema::keys_in_order(info, keys) {
                        true => None,
                        false => diff::ordered_key_values(info, keys).map(|vals| {
                            Selector::Keys(info.keys.iter().cloned().zip(vals.into_iter().map(Text::from)).collect())
                        }),
                    }
                };
                match node {
                    Some(Node::List(l)) => reorder(&l.info),
                    _ => {
                        let mut schema_path = String::new();
                        for s in &path.segments[..=i] {
                            schema_path.push('/');
                            schema_path.push_str(&s.name);
                        }
                        schema.list_info(&schema_path).and_then(|i| reorder(&i))
                    }
                }
            }
            _ => None,
        };
        if let Some(sel) = changed {
            let out = out.get_or_insert_with(|| Path { segments: path.segments[..i].to_vec() });
            out.segments.push(crate::path::Segment { name: seg.name.clone(), selector: sel });
        } else if let Some(out) = &mut out {
            out.segments.push(seg.clone());
        }
        let selector = match &out {
            Some(o) => &o.segments[i].selector,
            None => &seg.selector,
        };
        cur = match (node, selector) {
            _ if i + 1 >= walk => None,
            (Some(Node::Container(c)), Selector::None) => Some(c),
            (Some(Node::List(l)), sel) => list_entry(l, sel),
            _ => None,
        };
    }
    match out {
        Some(p) => Cow::Owned(p),
        None => Cow::Borrowed(path),
    }
}

/// The entry of `l` a selector names.
fn list_entry<'l>(l: &'l List, sel: &Selector) -> Option<&'l Container> {
    match sel {
        Selector::Keys(kv) if !l.info.keys.is_empty() => l.get_keyed(kv),
        sel => selector_values(&l.info, sel).and_then(|v| l.get(&v)),
    }
}

/// Indexes of the entries of a keyless list whose leaves equal every `(name,
/// value)` pair.
fn keyless_matches(l: &List, keys: &[(Name, Text)]) -> Vec<usize> {
    l.entries()
        .enumerate()
        .filter(|(_, e)| keys.iter().all(|(k, v)| e.key_text(k).as_deref() == Some(v.as_str())))
        .map(|(i, _)| i)
        .collect()
}

/// Appends to keyless list `l` a new entry made of `content` and the leaves
/// the key predicates name, recording the creation. Several matching entries
/// make the predicates ambiguous.
fn append_keyless(
    l: &mut List,
    list_path: &Path,
    keys: &[(Name, Text)],
    mut content: Container,
    out: &mut Vec<Change>,
) -> Result<usize> {
    let matches = keyless_matches(l, keys);
    if matches.len() > 1 {
        return Err(Error::invalid(
            list_path,
            format!(
                "{} entries of this list (which has no declared keys) match {keys:?}; declare its keys or address an entry by position",
                matches.len()
            ),
        ));
    }
    for (k, v) in keys {
        content.children.entry(k.clone()).or_insert_with(|| Node::leaf(Value::String(v.as_str().into())));
    }
    let place = last_place(l);
    l.insert(content.clone(), &Insert::Last)?;
    let n = l.len();
    out.push(Change::Created {
        path: with_selector(list_path, Selector::Position(n as u64)),
        node: Subtree::Entry(content),
        place: Some(place),
    });
    Ok(n)
}
