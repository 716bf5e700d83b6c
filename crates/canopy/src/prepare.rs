//! What an edit needs before it is applied: the stored nodes it meets loaded
//! into a sparse tree, the lists it teaches, and deletes that can be erased
//! unread (one range delete).

use std::borrow::Cow;

use canopy_core::diff::Change;
use canopy_core::edit::{canonical_path, canonical_path_cow, Edit, Operation};
use canopy_core::keycode;
use canopy_core::path::{Path, Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::scratch::Scratch;
use canopy_core::tree::{Container, Insert, List, ListInfo, Node, NodeRef};
use canopy_core::{Schema, Schemaless, Value};
use canopy_store::keys::{self, Datastore};
use canopy_yang::YangSchema;

use crate::error::Result;
use crate::hub::Hub;
use crate::load::{container_at, node_key, node_key_of, Loader};

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

    fn keyed_in_order(&self, schema_path: &str, kv: &[(canopy_core::Name, canopy_core::value::Text)]) -> bool {
        self.lists.keyed_in_order(schema_path, kv)
    }

    fn lists_below(&self, schema_path: &str) -> bool {
        // With YANG, normalisation has typed every node of a value already.
        self.yang.is_none() && self.lists.lists_below(schema_path)
    }

    fn path_value(&self, at: &Path, key: Option<&str>, text: &str) -> Value {
        match self.yang {
            Some(y) => y.path_value(at, key, text),
            None => Value::String(text.into()),
        }
    }
}

/// Teaches `schema` what `edit` says about lists it does not know: keyed paths
/// through a new list give its keys (user-ordered when the edit inserts at a
/// position); lists in the edit's value give theirs. A list that `tree` holds
/// as keyless (imported without declared keys) is not taught keys: key
/// predicates select among its entries instead. New lists go to `learned`.
pub(crate) fn learn_edit(
    schema: &mut Cow<'_, Schemaless>,
    learned: &mut Vec<(String, ListInfo)>,
    edit: &Edit,
    tree: &Container,
) {
    // The lists are copied only when an edit teaches one.
    let mut teach = |schema: &mut Cow<'_, Schemaless>, sp: String, info: ListInfo| {
        if !schema.lists.contains_key(sp.as_str()) {
            schema.to_mut().lists.insert(sp.clone(), info.clone());
            learned.push((sp, info));
        }
    };
    pub(crate) fn walk<'s>(
        schema: &mut Cow<'s, Schemaless>,
        sp: &str,
        c: &Container,
        teach: &mut dyn FnMut(&mut Cow<'s, Schemaless>, String, ListInfo),
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
    let mut sp = Scratch::take();
    let known = edit.path.segments.iter().all(|seg| {
        sp.push('/');
        sp.push_str(&seg.name);
        !matches!(seg.selector, Selector::Keys(_)) || schema.lists.contains_key(sp.as_str())
    });
    let path = match known {
        true => Path::root(),
        false => canonical_path(tree, &edit.path, &**schema),
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
        // Only containers and lists below can teach (an entry's leaves cannot).
        Some(Node::Container(c)) if c.children.values().any(|n| !n.is_inline()) => {
            walk(schema, &edit.path.schema_path(), c, &mut teach)
        }
        Some(Node::List(l)) => {
            teach(schema, edit.path.schema_path(), l.info.clone());
            for entry in l.entries() {
                walk(schema, &edit.path.schema_path(), entry, &mut teach);
            }
        }
        _ => {}
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
            // A leaf, leaf-list or anydata came whole with its parent's fragment.
            let inline = container_at(root, &parent.segments)
                .and_then(|c| c.children.get(&last.name))
                .is_some_and(Node::is_inline);
            if inline {
                return Ok(());
            }
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

/// Transactions of up to this many edits check each delete against every
/// other edit (see [`erasable`]); longer ones erase only when no edit lies at
/// or under another.
const PAIRWISE_MAX_EDITS: usize = 64;

/// Which of a transaction's edits delete a container, a whole list or a list
/// entry that can be erased unread (one range delete, [`Change::Erased`]):
/// a delete or remove of such a node whose lists are all known with keys
/// (each named by all of them), that no other edit of the transaction
/// touches, that no subscriber of the datastore is told about with old
/// values, and whose content no YANG check reads (`validated`: the store
/// checks the constraints between nodes, [`crate::Validation::Full`]).
/// Whether another edit touches a delete is checked pair by pair in short
/// transactions; in long ones (an rpm erase of hundreds of edits) `apart`
/// says whether any edit lies at or under another, in one pass.
pub(crate) fn erasable(
    edits: &[Edit],
    ds: Datastore,
    schema: &Schemaless,
    yang: Option<&YangSchema>,
    validated: bool,
    hub: &Hub,
    apart: &dyn Fn() -> bool,
) -> Vec<Erase> {
    let mut out = vec![Erase::No; edits.len()];
    if !edits.iter().any(|e| matches!(e.op, Operation::Delete | Operation::Remove))
        || hub.subscribers().iter().any(|s| s.ds == ds && s.subscriber.wants_old_values())
    {
        return out;
    }
    let pairwise = edits.len() <= PAIRWISE_MAX_EDITS;
    if !pairwise && !apart() {
        return out;
    }
    // An entry placed before or after another reads that one, which may be
    // an entry deleted before it: such transactions load what they delete.
    let relative = edits
        .iter()
        .any(|o| matches!(o.insert, Some(canopy_core::tree::Insert::Before(_) | canopy_core::tree::Insert::After(_))));
    for (i, e) in edits.iter().enumerate() {
        if !matches!(e.op, Operation::Delete | Operation::Remove) || e.path.is_root() {
            continue;
        }
        let mut sp = String::with_capacity(e.path.schema_path_len());
        let keyed = e.path.segments.iter().all(|seg| {
            sp.push('/');
            sp.push_str(&seg.name);
            match &seg.selector {
                Selector::None => true,
                Selector::Keys(k) => names_one_entry(k, schema.lists.get(sp.as_str())),
                Selector::Position(_) | Selector::Value(_) => false,
            }
        });
        if !keyed {
            continue;
        }
        let last_keyed = matches!(e.path.last().map(|s| &s.selector), Some(Selector::Keys(_)));
        let erase = match yang {
            Some(y)
                if matches!(y.kind(&sp), Some(NodeKind::Container | NodeKind::List))
                    && !(validated && y.erase_needs_content(&sp, ds != Datastore::Operational)) =>
            {
                Erase::Yes
            }
            Some(_) => Erase::No,
            None if last_keyed || schema.lists.contains_key(sp.as_str()) => Erase::Yes,
            // Without a schema a name without keys may be a leaf (stored in
            // its parent's fragment) or a container (a fragment of its own).
            None => Erase::IfStored,
        };
        let alone = !pairwise || edits.iter().enumerate().all(|(j, o)| j == i || !overlap(&o.path, &e.path));
        if alone && !relative {
            out[i] = erase;
        }
    }
    out
}

/// Whether a delete is erased unread (see [`erasable`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Erase {
    /// Loaded and deleted from the tree, its content in the diff.
    No,
    /// Erased: a container, a list or a list entry.
    Yes,
    /// Erased if stored as fragments of its own (a container or list met
    /// without a schema); otherwise (a leaf or leaf-list in its parent's
    /// fragment, or nothing) loaded and deleted as [`Erase::No`].
    IfStored,
}

/// Whether keys `k` of a step through list `info` name one entry: the list
/// is keyed and every one of its keys is given, once.
pub(crate) fn names_one_entry(
    k: &[(canopy_core::Name, canopy_core::value::Text)],
    info: Option<&canopy_core::tree::ListInfo>,
) -> bool {
    info.is_some_and(|l| {
        !l.keys.is_empty()
            && k.len() == l.keys.len()
            && l.keys.iter().all(|n| k.iter().filter(|(m, _)| m.as_str() == n.as_str()).count() == 1)
    })
}

/// Whether one of two paths may lie at or under the other: their common
/// steps name the same nodes, a step without a selector standing for any
/// entry of its list.
pub(crate) fn overlap(a: &Path, b: &Path) -> bool {
    a.segments.iter().zip(&b.segments).all(|(x, y)| {
        x.name == y.name
            && (matches!(x.selector, Selector::None)
                || matches!(y.selector, Selector::None)
                || may_be_same_entry(&x.selector, &y.selector))
    })
}

/// Whether two selectors may name the same entry: keys given in another
/// order name the same one, keys by other names (some of a list's keys) may
/// too, and a position may name any.
fn may_be_same_entry(x: &Selector, y: &Selector) -> bool {
    match (x, y) {
        (Selector::Keys(a), Selector::Keys(b)) => {
            let same_names = a.len() == b.len() && a.iter().all(|(n, _)| b.iter().any(|(m, _)| m == n));
            !same_names || a.iter().all(|kv| b.contains(kv))
        }
        (Selector::Position(_), _) | (_, Selector::Position(_)) => true,
        _ => x == y,
    }
}

/// Applies an edit [`erasable`] chose: checks that the node is stored (a
/// delete of an absent node fails), loads its ancestors (validation checks
/// what their losing a child means) and records [`Change::Erased`]. `false`
/// when the edit was [`Erase::IfStored`] and nothing is stored under its
/// path: it goes the loading way then.
pub(crate) fn erase_edit(
    loader: &mut Loader,
    root: &mut Container,
    edit: &Edit,
    erase: Erase,
    schema: &Schemaless,
    changes: &mut Vec<Change>,
) -> Result<bool> {
    let path = canonical_path_cow(root, &edit.path, schema).into_owned();
    let rel = keys::path_key(&path)?;
    // A list entry is stored when its own fragment is (every stored entry has
    // one); anything else may be a whole list, or schemaless, and is looked
    // for under its key.
    let stored = match path.last().map(|s| &s.selector) {
        Some(Selector::Keys(_)) => loader.stored_at(&rel)?,
        _ => loader.any_under(&rel)?,
    };
    if !stored {
        return match (erase, &edit.op) {
            (Erase::IfStored, _) => Ok(false),
            (_, Operation::Delete) => Err(canopy_core::Error::NotFound { path: edit.path.to_string() }.into()),
            _ => Ok(true),
        };
    }
    if let Some(parent) = path.parent() {
        loader.parent(root, &parent)?;
    }
    changes.push(Change::Erased { path });
    Ok(true)
}

/// Loads what `edit` needs into the sparse tree `root`.
pub(crate) fn prepare(loader: &mut Loader, root: &mut Container, edit: &Edit, schema: &Schemaless) -> Result<()> {
    // A keyless list (imported without declared keys), or one the schema does
    // not know yet: read it whole, so that key predicates can pick among its
    // entries (see `canonical_path`).
    let mut sp = Scratch::take();
    // Whether a key step names an entry of a user-ordered list (below).
    let mut ordered = false;
    for (i, seg) in edit.path.segments.iter().enumerate() {
        sp.push('/');
        sp.push_str(&seg.name);
        if !matches!(seg.selector, Selector::Keys(_)) {
            continue;
        }
        let info = schema.lists.get(sp.as_str());
        ordered |= info.is_some_and(|i| i.user_ordered);
        if info.is_some_and(|i| !i.keys.is_empty()) {
            continue;
        }
        let parent = canonical_path(root, &Path { segments: edit.path.segments[..i].to_vec() }, schema);
        loader.parent(root, &parent)?;
        if let Some(mut rel) = node_key(root, &parent) {
            keys::push_name(&mut rel, &seg.name);
            loader.range(root, &rel)?;
        }
    }
    let path = canonical_path_cow(root, &edit.path, schema);
    let path = &*path;
    // Below a node found missing nothing is stored: what the edit's value
    // names need not be looked for. A whole list has no fragment of its
    // own (its entries have): the walk takes it for missing.
    let (_, missing) = loader.reach(root, path)?;
    let whole_list = matches!(edit.value, Some(Node::List(_)));
    match edit.op {
        Operation::Delete | Operation::Remove | Operation::Replace => load_whole(loader, root, path)?,
        Operation::Merge | Operation::Create if missing && !whole_list => {}
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
    if !ordered {
        return Ok(());
    }
    sp.clear();
    for depth in 1..=path.segments.len() {
        sp.push('/');
        sp.push_str(&path.segments[depth - 1].name);
        let Selector::Keys(kv) = &path.segments[depth - 1].selector else { continue };
        if !schema.lists.get(sp.as_str()).is_some_and(|i| i.user_ordered) {
            continue;
        }
        // The list's parent and name, looked up in place: no path is built
        // (this runs for every edit of a bulk create).
        let (parent, name) = (&path.segments[..depth - 1], path.segments[depth - 1].name.as_str());
        let Some(parent_rel) = node_key_of(root, parent) else { break };
        if !parent_rel.is_empty() && loader.known_absent(&parent_rel) {
            // Nothing of the list is stored.
            break;
        }
        let mut list_rel = parent_rel;
        keys::push_name(&mut list_rel, name);
        let around = list_at(root, parent, name).and_then(|l| l.pos_of_keyed(kv));
        loader.order_edges(root, &list_rel, around.as_deref())?;
        if depth < path.segments.len() {
            continue;
        }
        if let Some(Insert::Before(anchor) | Insert::After(anchor)) = &edit.insert {
            let mut arel = list_rel.clone();
            arel.extend_from_slice(&keycode::entry_key(anchor));
            loader.fragment(root, &arel)?;
            let around = list_at(root, parent, name).and_then(|l| l.pos_of(anchor));
            loader.order_edges(root, &list_rel, around.as_deref())?;
        }
    }
    Ok(())
}

/// The list `name` in the container or entry at `parent` in `root`.
fn list_at<'t>(root: &'t Container, parent: &[Segment], name: &str) -> Option<&'t List> {
    match container_at(root, parent)?.children.get(name) {
        Some(Node::List(l)) => Some(l),
        _ => None,
    }
}

/// How many entries of one list a merged value must name before which of
/// them are stored is found by seeking instead of a read each.
const SEEK_FROM: usize = 8;

/// Loads the stored nodes a merge of `node` at `path` meets: point reads of
/// each container and entry the value names (of many entries of one list,
/// seeks through it: [`Loader::entries_stored`]), skipping whatever lies
/// below a node that is not stored.
pub(crate) fn load_value(
    loader: &mut Loader,
    root: &mut Container,
    path: &Path,
    node: &Node,
    schema: &Schemaless,
) -> Result<()> {
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
            let key_values = |e: &Container| info.keys.iter().map(|k| e.key_text(k)).collect::<Option<Vec<_>>>();
            // Each entry with its entry key: a system-ordered value list keyed
            // as the schema's holds its entries by that very key, in order.
            let mut named: Vec<(std::borrow::Cow<[u8]>, &Container)> = match !l.info.user_ordered
                && l.info.keys == info.keys
            {
                true => l.entries_with_pos().map(|(ek, e)| (ek.into(), e)).collect(),
                false => l.entries().filter_map(|e| Some((keycode::entry_key(&key_values(e)?).into(), e))).collect(),
            };
            // Many entries (a bulk merge): which are stored is found by
            // seeking through the list in key order, one read for each run
            // of entries not stored; a few are read one by one.
            let stored = match named.len() >= SEEK_FROM && !loader.has_range(&list_rel) {
                true => {
                    if !named.is_sorted_by(|a, b| a.0 <= b.0) {
                        named.sort_by(|a, b| a.0.cmp(&b.0));
                    }
                    loader.entries_stored(&list_rel, named.iter().map(|(ek, _)| &ek[..]))?
                }
                false => vec![true; named.len()],
            };
            for ((ek, e), maybe) in named.into_iter().zip(stored) {
                if !maybe {
                    continue;
                }
                let mut rel = Vec::with_capacity(list_rel.len() + ek.len());
                rel.extend_from_slice(&list_rel);
                rel.extend_from_slice(&ek);
                if loader.fragment(root, &rel)? {
                    let Some(vals) = key_values(e) else { continue };
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
