//! Reads from a tree: what a query selects with its ancestors, depth limits,
//! with-defaults, and the sparse tree a query needs loaded.

use std::borrow::Cow;

use canopy_core::diff::{self, Subtree};
use canopy_core::path::query::Query;
use canopy_core::path::{Path, Selector};
use canopy_core::select;
use canopy_core::tree::{Container, Node, NodeRef};
use canopy_core::{Schema, Schemaless};
use canopy_store::keys::{self};
use canopy_store::Snapshot;
use canopy_yang::{WithDefaults, YangSchema};

use crate::error::Result;
use crate::load::Loader;
use crate::prepare::load_whole;

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

/// What a query selects from `tree`, as one tree (see [`Session::get`]).
pub(crate) fn selection(
    tree: Cow<'_, Container>,
    query: &Query,
    opts: ReadOptions,
    yang: Option<&YangSchema>,
) -> Container {
    let paths = query.evaluate(&tree);
    // Only asked for when nothing was selected: building the instance path
    // costs about as much again as evaluating a plain path.
    if let (Some(y), true, WithDefaults::ReportAll) = (yang, paths.is_empty(), opts.with_defaults) {
        if let Some(p) = query.to_instance_path() {
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
pub(crate) fn default_only(y: &YangSchema, tree: &Container, p: &Path) -> Container {
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

/// The deepest path every node `query` can select lies under. An unprefixed
/// first name may match a top-level node of any module: then the whole
/// datastore is the prefix.
pub(crate) fn read_prefix(query: &Query, schema: &Schemaless) -> Path {
    let prefix = query.instance_prefix(&|sp| schema.list_info(sp));
    match prefix.segments.first() {
        Some(seg) if !seg.name.contains(':') && schema.lists.keys().any(|k| k.contains(':')) => Path::root(),
        _ => prefix,
    }
}

/// An owned copy of a looked-up node.
pub(crate) fn owned(r: NodeRef<'_>) -> Subtree {
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

pub(crate) fn trim_entry(e: &mut Container, keys: &[canopy_core::tree::Name], depth: usize) {
    if depth == 0 {
        e.children.retain(|name, _| keys.contains(name));
    } else {
        trim(e, depth);
    }
}

/// Keeps `depth` levels of children (0: none); list entries keep their keys.
pub fn trim(c: &mut Container, depth: usize) {
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
