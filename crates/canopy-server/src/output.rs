//! RESTCONF message bodies in JSON: the target node as the one member of the
//! top-level object, named with its module (`{"example-jukebox:album":[…]}`);
//! a datastore as `ietf-restconf:data`. Changes as YANG Patch edits.

use std::io;

use canopy::{Change, Path, Place, Subtree};
use canopy_core::json::{write_members, JsonWriter};
use canopy_core::tree::{Container, NodeRef};

use crate::uri::{api_path, qualified_name};

/// Writes the node `n` found at `path` as a RESTCONF message.
///
/// # Errors
/// Write errors of `out`.
pub fn write_target<W: io::Write>(out: W, path: &Path, n: NodeRef<'_>, pretty: bool) -> io::Result<()> {
    let mut w = JsonWriter::new(out, pretty);
    let name = qualified_name(path).unwrap_or_else(|| "ietf-restconf:data".to_string());
    write_named(&mut w, &name, n)?;
    w.finish()?;
    Ok(())
}

/// Writes `n` as member `name` of the innermost open object of `w`.
///
/// # Errors
/// Write errors.
pub fn write_named<W: io::Write>(w: &mut JsonWriter<W>, name: &str, n: NodeRef<'_>) -> io::Result<()> {
    match n {
        NodeRef::Root(c) | NodeRef::Container(c) => {
            w.begin_container(name)?;
            write_members(w, c, None)?;
            w.end()
        }
        NodeRef::Entry(c) => {
            w.begin_list(name)?;
            w.begin_entry()?;
            write_members(w, c, None)?;
            w.end()?;
            w.end()
        }
        NodeRef::List(l) => {
            w.begin_list(name)?;
            for e in l.entries() {
                w.begin_entry()?;
                write_members(w, e, None)?;
                w.end()?;
            }
            w.end()
        }
        NodeRef::Leaf(v, meta) => w.leaf(name, v, meta),
        NodeRef::LeafList(entries) => w.leaf_list(name, entries),
        NodeRef::LeafListEntry(e) => w.leaf_list(name, std::slice::from_ref(e)),
        NodeRef::AnyData(v, meta) => w.anydata(name, v, meta),
    }
}

/// The node a change carries, as a [`NodeRef`].
fn subtree_ref(s: &Subtree) -> NodeRef<'_> {
    match s {
        Subtree::Entry(c) => NodeRef::Entry(c),
        Subtree::Value(e) => NodeRef::LeafListEntry(e),
        Subtree::Node(n) => node_ref(n),
    }
}

fn node_ref(n: &canopy::Node) -> NodeRef<'_> {
    use canopy::Node;
    match n {
        Node::Container(c) => NodeRef::Container(c),
        Node::List(l) => NodeRef::List(l),
        Node::Leaf { value, meta } => NodeRef::Leaf(value, meta),
        Node::LeafList(v) => NodeRef::LeafList(v),
        Node::AnyData { value, meta } => NodeRef::AnyData(value, meta),
    }
}

/// Writes `changes` as the edits of an `ietf-yang-patch:yang-patch`
/// (RFC 8072): targets are api-paths from the datastore root.
///
/// # Errors
/// Write errors.
pub fn write_patch<W: io::Write>(w: &mut JsonWriter<W>, patch_id: &str, changes: &[&Change]) -> io::Result<()> {
    w.begin_container("ietf-yang-patch:yang-patch")?;
    w.leaf("patch-id", &canopy::Value::String(patch_id.into()), &Default::default())?;
    w.begin_list("edit")?;
    for (i, c) in changes.iter().enumerate() {
        w.begin_entry()?;
        let s = |t: &str| canopy::Value::String(t.into());
        let none = Default::default();
        w.leaf("edit-id", &s(&format!("edit-{}", i + 1)), &none)?;
        let path = c.path();
        let (op, value) = match c {
            Change::Created { node, .. } => ("create", Some(subtree_ref(node))),
            Change::Deleted { .. } | Change::Erased { .. } => ("delete", None),
            Change::Modified { new, .. } => ("replace", Some(node_ref(new))),
            Change::Meta { .. } => ("merge", None),
            Change::Moved { .. } => ("move", None),
        };
        w.leaf("operation", &s(op), &none)?;
        w.leaf("target", &s(&api_path(path)), &none)?;
        let place = match c {
            Change::Created { place, .. } => place.as_ref(),
            Change::Moved { new, .. } => Some(new),
            _ => None,
        };
        if let Some(place) = place {
            match place {
                Place::First => w.leaf("where", &s("first"), &none)?,
                Place::After(sel) => {
                    w.leaf("where", &s("after"), &none)?;
                    let sibling = canopy_core::diff::with_selector(path, sel.clone());
                    w.leaf("point", &s(&api_path(&sibling)), &none)?;
                }
            }
        }
        if let Change::Meta { new, .. } = c {
            let holder = Container { meta: new.clone(), ..Default::default() };
            w.begin_container("value")?;
            write_members(w, &holder, Some(0))?;
            w.end()?;
        }
        if let (Some(v), Some(name)) = (value, qualified_name(path)) {
            w.begin_container("value")?;
            write_named(w, &name, v)?;
            w.end()?;
        }
        w.end()?;
    }
    w.end()?;
    w.end()
}
