//! Streaming reads: a subtree written as RFC 7951 JSON straight from the
//! stored fragments, in one range scan, without building the tree.
//!
//! Fragments arrive in document order (children by name, entries by key), so
//! a stack of open nodes is enough: each fragment's own leaves wait in their
//! node's frame and are written in name order between its child containers
//! and lists, which gives exactly the order the tree writer gives. A
//! user-ordered list, whose stored order (by key) is not its document order,
//! is gathered whole, built as a tree and written from it.

use std::io::Write;

use canopy_core::json::JsonWriter;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::{Container, List, Node};
use canopy_core::{Schema, Schemaless};
use canopy_store::fragment::{self, Decoded};
use canopy_store::keys::{self, Datastore};
use canopy_store::{Snapshot, StoreError};

use crate::error::{Error, Result};

/// One open node of the output.
struct Frame {
    /// Relative key of the node (a container or entry), or of the list (its
    /// parent's key and name) for a list frame.
    key: Vec<u8>,
    /// The node's fragment bytes; its inline children not written yet are
    /// read from them in place, in name order.
    bytes: Vec<u8>,
    inline: fragment::Inline,
    list: bool,
    schema_path: String,
}

impl Frame {
    /// A frame for a container or entry whose fragment is `bytes`.
    fn node(key: Vec<u8>, bytes: Vec<u8>, inline: fragment::Inline, schema_path: String) -> Frame {
        Frame { key, bytes, inline, list: false, schema_path }
    }

    /// A frame for a built container (ancestors' key leaves).
    fn built(key: Vec<u8>, c: &Container, schema_path: String) -> Result<Frame> {
        let bytes = fragment::encode(c, None);
        let (_, _, inline) = fragment::open(&bytes)?;
        Ok(Frame::node(key, bytes, inline, schema_path))
    }

    fn list(key: Vec<u8>, schema_path: String) -> Frame {
        Frame { key, bytes: Vec::new(), inline: fragment::Inline::empty(), list: true, schema_path }
    }
}

fn io(e: std::io::Error) -> Error {
    Error::Usage(format!("writing the output: {e}"))
}

/// A user-ordered list being gathered: its key, name, schema path, fragments.
type Gathered = (Vec<u8>, String, String, Vec<(Vec<u8>, Option<Decoded>)>);

struct Streamer<'a, W: Write> {
    w: JsonWriter<W>,
    stack: Vec<Frame>,
    schema: &'a Schemaless,
    /// A user-ordered list being gathered.
    gathering: Option<Gathered>,
}

impl<W: Write> Streamer<'_, W> {
    /// Writes the pending inline children of the top frame whose names sort
    /// before `before` (all of them with `None`).
    fn flush_pending(&mut self, before: Option<&str>) -> Result<()> {
        let Streamer { w, stack, .. } = self;
        let Some(top) = stack.last_mut() else { return Ok(()) };
        while let Some(name) = top.inline.peek_name(&top.bytes)? {
            if before.is_some_and(|b| name >= b) {
                break;
            }
            let (name, child) = top.inline.next(&top.bytes)?.expect("peeked");
            match child {
                fragment::ChildRef::Leaf(v, meta) => w.leaf_ref(name, v, &meta).map_err(io)?,
                fragment::ChildRef::Other(Node::LeafList(v)) => w.leaf_list(name, &v).map_err(io)?,
                fragment::ChildRef::Other(Node::AnyData { value, meta }) => {
                    w.anydata(name, &value, &meta).map_err(io)?
                }
                fragment::ChildRef::Other(Node::Leaf { value, meta }) => w.leaf(name, &value, &meta).map_err(io)?,
                fragment::ChildRef::Other(Node::Container(_) | Node::List(_)) => {}
            }
        }
        Ok(())
    }

    /// Closes frames until the top one holds `key` (or the stack is at `floor`).
    fn close_until(&mut self, key: &[u8], floor: usize) -> Result<()> {
        while self.stack.len() > floor {
            let top = self.stack.last().expect("non-empty");
            if key.starts_with(&top.key) && !(top.list && key.len() == top.key.len()) {
                break;
            }
            self.flush_pending(None)?;
            self.stack.pop();
            self.w.end().map_err(io)?;
        }
        Ok(())
    }

    /// Writes one fragment (`v`, its stored bytes) arriving in document order.
    fn fragment(&mut self, rel: &[u8], v: &[u8], floor: usize) -> Result<()> {
        if let Some((lk, ..)) = &self.gathering {
            if rel.starts_with(lk) {
                let d = fragment::decode(v)?;
                self.gathering.as_mut().expect("gathering").3.push((rel.to_vec(), Some(d)));
                return Ok(());
            }
            self.write_gathered()?;
        }
        self.close_until(rel, floor)?;
        let (_, meta, inline) = fragment::open(v)?;
        if let Some(top) = self.stack.last().filter(|f| f.list) {
            // The next entry of the open list.
            let sp = top.schema_path.clone();
            self.w.begin_entry().map_err(io)?;
            self.w.meta(&meta).map_err(io)?;
            self.stack.push(Frame::node(rel.to_vec(), v.to_vec(), inline, sp));
            return Ok(());
        }
        let parent_len = self.stack.last().map_or(0, |f| f.key.len());
        let seg = &rel[parent_len..];
        let seg_len = keys::first_segment_len(seg)?;
        if seg_len != seg.len() {
            return Err(StoreError::corrupted(format!(
                "fragment {} has no parent fragment",
                canopy_store::treeio::describe_key(rel)
            ))
            .into());
        }
        let mut pos = 0;
        let name = String::from_utf8(canopy_core::keycode::read_escaped(seg, &mut pos).ok_or_else(|| bad(rel))?)
            .map_err(|_| bad(rel))?;
        let parent_sp = self.stack.last().map_or(String::new(), |f| f.schema_path.clone());
        let sp = format!("{parent_sp}/{name}");
        if pos == seg.len() {
            // A container.
            self.flush_pending(Some(&name))?;
            self.w.begin_container(&name).map_err(io)?;
            self.w.meta(&meta).map_err(io)?;
            self.stack.push(Frame::node(rel.to_vec(), v.to_vec(), inline, sp));
            return Ok(());
        }
        // A list entry: open its list unless the top frame is that list.
        let list_key = &rel[..parent_len + pos];
        if self.schema.list_info(&sp).is_some_and(|i| i.user_ordered) {
            let d = fragment::decode(v)?;
            self.gathering = Some((list_key.to_vec(), name, sp, vec![(rel.to_vec(), Some(d))]));
            return Ok(());
        }
        self.flush_pending(Some(&name))?;
        self.w.begin_list(&name).map_err(io)?;
        self.stack.push(Frame::list(list_key.to_vec(), sp.clone()));
        self.w.begin_entry().map_err(io)?;
        self.w.meta(&meta).map_err(io)?;
        self.stack.push(Frame::node(rel.to_vec(), v.to_vec(), inline, sp));
        Ok(())
    }

    /// Builds the gathered user-ordered list and writes it.
    fn write_gathered(&mut self) -> Result<()> {
        let Some((list_key, name, sp, mut items)) = self.gathering.take() else { return Ok(()) };
        self.close_until(&list_key, 0)?;
        self.flush_pending(Some(&name))?;
        let info = self.schema.list_info(&sp).unwrap_or_default();
        let parent_len = self.stack.last().map_or(0, |f| f.key.len());
        let mut holder = Container::default();
        holder.children.insert(name.clone(), Node::List(Box::new(List::new(info))));
        let mut parent_sp = sp.clone();
        parent_sp.truncate(sp.len() - name.len() - 1);
        canopy_store::treeio::build(&mut holder, &mut items, parent_len, &mut parent_sp, self.schema)?;
        if let Some(Node::List(l)) = holder.children.get(&name) {
            self.w.begin_list(&name).map_err(io)?;
            for e in l.entries() {
                self.w.begin_entry().map_err(io)?;
                write_members(&mut self.w, e)?;
                self.w.end().map_err(io)?;
            }
            self.w.end().map_err(io)?;
        }
        Ok(())
    }
}

fn bad(rel: &[u8]) -> Error {
    StoreError::corrupted(format!("malformed fragment key {}", keys::hex(rel))).into()
}

/// Writes a built container's members (metadata, then children in name order).
fn write_members<W: Write>(w: &mut JsonWriter<W>, c: &Container) -> Result<()> {
    w.meta(&c.meta).map_err(io)?;
    for (name, node) in &c.children {
        match node {
            Node::Leaf { value, meta } => w.leaf(name, value, meta).map_err(io)?,
            Node::LeafList(v) => w.leaf_list(name, v).map_err(io)?,
            Node::AnyData { value, meta } => w.anydata(name, value, meta).map_err(io)?,
            Node::Container(cc) => {
                w.begin_container(name).map_err(io)?;
                write_members(w, cc)?;
                w.end().map_err(io)?;
            }
            Node::List(l) => {
                w.begin_list(name).map_err(io)?;
                for e in l.entries() {
                    w.begin_entry().map_err(io)?;
                    write_members(w, e)?;
                    w.end().map_err(io)?;
                }
                w.end().map_err(io)?;
            }
        }
    }
    Ok(())
}

/// Whether [`write_path`] can stream `path`: the root, or a path of
/// containers and keyed entries (no positions, leaves or leaf-list entries).
pub(crate) fn streamable(path: &Path) -> bool {
    path.segments.iter().all(|s| matches!(s.selector, Selector::None | Selector::Keys(_)))
}

/// Writes the node at `path` (canonical; see [`streamable`]) with its
/// ancestors as one RFC 7951 document. Returns `Ok(false)`, having written
/// nothing, when the path names something that is not a stored container or
/// entry (a leaf, say): the caller then reads it the general way.
pub(crate) fn write_path<W: Write>(
    snap: &dyn Snapshot,
    ds: Datastore,
    schema: &Schemaless,
    path: &Path,
    pretty: bool,
    out: W,
) -> Result<bool> {
    let data = keys::data_prefix(ds);
    let rel = keys::path_key(path)?;
    let mut key = data.clone();
    key.extend_from_slice(&rel);
    // The target must be a stored container or entry; for the root, anything goes.
    let target = if path.is_root() {
        None
    } else {
        match snap.get(&key)? {
            Some(v) => Some(v),
            None => return Ok(false),
        }
    };
    let mut s = Streamer { w: JsonWriter::new(out, pretty), stack: Vec::new(), schema, gathering: None };
    // The root's own fragment (top-level leaves, root metadata) is the base frame.
    let mut base = 0;
    if path.is_root() {
        if let Some(v) = snap.get(&data)? {
            let (_, meta, inline) = fragment::open(&v)?;
            s.w.meta(&meta).map_err(io)?;
            s.stack.push(Frame::node(Vec::new(), v, inline, String::new()));
            base = 1;
        }
    }
    // Ancestors: containers by name, entries with their key leaves only.
    let mut anc_rel = Vec::new();
    for (i, seg) in path.segments.iter().enumerate() {
        let last = i + 1 == path.segments.len();
        keys::push_name(&mut anc_rel, &seg.name);
        let sp = format!("{}/{}", s.stack.last().map_or("", |f| f.schema_path.as_str()), seg.name);
        match &seg.selector {
            Selector::None if !last => {
                s.w.begin_container(&seg.name).map_err(io)?;
                s.stack.push(Frame::built(anc_rel.clone(), &Container::default(), sp)?);
            }
            Selector::Keys(kv) if !last => {
                for (_, v) in kv {
                    canopy_core::keycode::push_key_value(&mut anc_rel, v);
                }
                let mut akey = data.clone();
                akey.extend_from_slice(&anc_rel);
                let Some(v) = snap.get(&akey)? else { return Ok(false) };
                let d = fragment::decode(&v)?;
                let mut keys_only = Container::default();
                for (k, _) in kv {
                    if let Some(n) = d.container.children.get(k) {
                        keys_only.children.insert(k.clone(), n.clone());
                    }
                }
                s.w.begin_list(&seg.name).map_err(io)?;
                s.w.begin_entry().map_err(io)?;
                s.stack.push(Frame::built(anc_rel.clone(), &keys_only, sp)?);
            }
            _ => {}
        }
    }
    let floor = s.stack.len();
    // The target itself, then everything below it.
    if let Some(v) = target {
        s.fragment(&rel, &v, floor)?;
    }
    let dl = data.len();
    let mut err = None;
    let mut scan_prefix = data.clone();
    scan_prefix.extend_from_slice(&rel);
    snap.scan_prefix(&scan_prefix, false, &mut |k, v| {
        let r = &k[dl..];
        if r == rel.as_slice() {
            return Ok(true);
        }
        let step = s.fragment(r, v, floor);
        match step {
            Ok(()) => Ok(true),
            Err(e) => {
                err = Some(e);
                Ok(false)
            }
        }
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    s.write_gathered()?;
    // Close everything but the root's base frame, whose leaves come last.
    while s.stack.len() > base {
        s.flush_pending(None)?;
        s.stack.pop();
        s.w.end().map_err(io)?;
    }
    s.flush_pending(None)?;
    s.w.finish().map_err(io)?;
    Ok(true)
}
