//! CPS replies written while the anchor is read: GET `node` of a container
//! (or of the whole anchor) with all descendants, and queries whose results
//! lie inside the entries of one list. The bytes are the ones the
//! tree-building handlers give (`data_map`, `node_map`, serialized by
//! `serde_json`), but the server holds one list entry at a time and sends
//! the reply in chunks as it goes (`crate::body`).
//!
//! All reads of one reply are pinned to one snapshot ([`canopy::Pinned`]).
//! What can fail is checked before the reply starts (the node is stored,
//! the schema allows streaming it); anything else is left to the buffered
//! handlers, which give the errors.
//!
//! A container is written member by member in the order `data_map` gives
//! (canonical names): its own leaves from its stored fragment, its child
//! containers the same way, its keyed system-ordered lists entry by entry
//! (`Pinned::each_entry_fragments`), each entry written as `serde_json`
//! writes its `data_map` but straight from the entry's stored fragments,
//! without decoding them into a tree or building the map (`write_entry`):
//! the fragments come in document order, so a stack of open nodes is all
//! it takes. A subtree where
//! two children of a node share a local name (two modules' `x`) is not
//! streamed: `serde_json`'s map keeps one of them, which only the buffered
//! path reproduces.

use std::io::{self, Write};
use std::sync::Arc;

use canopy::{Container, Node, Path, Pinned, ReadOptions, YangSchema};
use canopy_core::path::Selector;
use canopy_core::schema::NodeKind;
use canopy_core::ValueRef;
use canopy_store::{fragment, keys};
use canopy_yang::model::Model;
use serde_json::Value as Json;

use super::data::{data_error, data_map, schema_at, At};
use super::path::{local, Chain};
use super::registry::Anchor;
use super::{CpsError, Reply};

fn io_err(e: canopy::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// Whether the nodes below `idx` (into list entries too) can be written
/// from their stored fragments in key order: every list among them keyed
/// and system-ordered (their key order is their document order), and no two
/// children of one node with the same local name (then `serde_json`'s map
/// keeps every member, and [`write_entry`] writes what it would).
fn streamable(model: &Model, idx: usize) -> bool {
    let n = &model.nodes[idx];
    let mut seen = std::collections::HashSet::new();
    for (name, &c) in &n.children {
        if !seen.insert(local(name)) {
            return false;
        }
        let child = &model.nodes[c];
        match child.kind {
            NodeKind::List if child.keys.is_empty() || child.user_ordered => return false,
            NodeKind::List | NodeKind::Container if !streamable(model, c) => return false,
            _ => {}
        }
    }
    true
}

/// A leaf value as `typed_json` gives it, serialized: numbers (and 64-bit
/// integers stored as text) as their text when it is a JSON number.
fn write_value(out: &mut Vec<u8>, v: &canopy::Value, at: At<'_>) -> io::Result<()> {
    write_value_ref(out, v.as_ref(), at.int64())
}

/// [`write_value`] of a value read in place, `int64` telling whether its
/// leaf is a 64-bit integer.
fn write_value_ref(out: &mut Vec<u8>, v: ValueRef<'_>, int64: bool) -> io::Result<()> {
    match v {
        ValueRef::Number(n) if json_number(n) => out.extend_from_slice(n.as_bytes()),
        ValueRef::String(s) if int64 && json_number(s) => out.extend_from_slice(s.as_bytes()),
        ValueRef::String(s) if !int64 => write_str(out, s)?,
        ValueRef::Bool(true) => out.extend_from_slice(b"true"),
        ValueRef::Bool(false) => out.extend_from_slice(b"false"),
        ValueRef::Empty => out.extend_from_slice(b"null"),
        // A number `serde_json` rewrites, or not a number: as `typed_json`
        // (through `value_json`) turns it.
        ValueRef::Number(s) | ValueRef::String(s) => {
            let v = serde_json::from_str::<serde_json::Number>(s).map_or_else(|_| Json::String(s.into()), Json::Number);
            serde_json::to_writer(&mut *out, &v)?;
        }
    }
    Ok(())
}

/// A JSON string as `serde_json` writes it: text without quotes,
/// backslashes or control characters as it is, anything else escaped by
/// `serde_json`.
fn write_str(out: &mut Vec<u8>, s: &str) -> io::Result<()> {
    if !canopy_core::json::needs_escape(s) {
        quoted(out, s);
        return Ok(());
    }
    serde_json::to_writer(&mut *out, s).map_err(io::Error::from)
}

/// `s` in quotes, as it is (the caller checked it needs no escape).
fn quoted(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 3);
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

/// Writes `"name":` with the local part of `name` (after a comma when
/// `comma`), as `write_str` would.
fn write_member(out: &mut Vec<u8>, name: &str, comma: bool) -> io::Result<()> {
    if comma {
        out.push(b',');
    }
    // Most names: no module prefix, nothing to escape.
    if canopy_core::json::needs_escape_or_colon(name) {
        write_str(out, local(name))?;
    } else {
        quoted(out, name);
    }
    out.push(b':');
    Ok(())
}

/// One node open while an entry is written from its fragments: a
/// container or entry with its fragment's inline children not written yet,
/// or a list whose entries are being written.
struct Open<'b, 'm> {
    /// Relative key of the node; of a list, its parent's key and its name.
    key: &'b [u8],
    /// The fragment's bytes, and the same as text when they are UTF-8.
    bytes: &'b [u8],
    text: Option<&'b str>,
    inline: fragment::Inline,
    at: At<'m>,
    /// Whether a leaf child may be a 64-bit integer (else no leaf's schema
    /// node is looked up).
    int64: bool,
    list: bool,
    /// Whether a member (an entry, for a list) is written in it yet.
    any: bool,
}

impl<'b, 'm> Open<'b, 'm> {
    fn node(key: &'b [u8], bytes: &'b [u8], at: At<'m>) -> io::Result<Open<'b, 'm>> {
        let (_, _, inline) = fragment::open(bytes).map_err(store_err)?;
        let int64 = at.int64_children();
        Ok(Open { key, bytes, text: std::str::from_utf8(bytes).ok(), inline, at, int64, list: false, any: false })
    }

    /// Writes `"name":`, after a comma when a member came before.
    fn member(&mut self, out: &mut Vec<u8>, name: &str) -> io::Result<()> {
        let comma = std::mem::replace(&mut self.any, true);
        write_member(out, name, comma)
    }

    /// Writes the inline children whose names sort before `before` (all of
    /// them with `None`), as `data_map` gives leaves, leaf-lists and
    /// anydata.
    fn flush(&mut self, out: &mut Vec<u8>, before: Option<&str>) -> io::Result<()> {
        loop {
            // Most children: leaves without metadata, read the short way.
            if let Some(t) = self.text {
                let unread = self.inline;
                if let Some((name, v)) = self.inline.next_plain_leaf(t) {
                    if before.is_some_and(|b| name >= b) {
                        self.inline = unread;
                        return Ok(());
                    }
                    self.member(out, name)?;
                    write_value_ref(out, v, self.int64 && self.at.child(name).int64())?;
                    continue;
                }
            }
            let unread = self.inline;
            let next = match self.text {
                Some(t) => self.inline.next_text(t),
                None => self.inline.next(self.bytes),
            }
            .map_err(store_err)?;
            let Some((name, child)) = next else { return Ok(()) };
            if before.is_some_and(|b| name >= b) {
                self.inline = unread;
                return Ok(());
            }
            self.member(out, name)?;
            let node = match child {
                // The common case: no schema lookup unless a 64-bit integer can be here.
                fragment::ChildRef::Leaf(v, _) => {
                    write_value_ref(out, v, self.int64 && self.at.child(name).int64())?;
                    continue;
                }
                fragment::ChildRef::Other(node) => node,
            };
            let cat = self.at.child(name);
            match node {
                Node::Leaf { value, .. } => write_value(out, &value, cat)?,
                Node::LeafList(v) => {
                    out.push(b'[');
                    for (j, e) in v.iter().enumerate() {
                        if j > 0 {
                            out.push(b',');
                        }
                        write_value(out, &e.value, cat)?;
                    }
                    out.push(b']');
                }
                Node::AnyData { value, .. } => serde_json::to_writer(&mut *out, &*value)?,
                Node::Container(_) | Node::List(_) => {
                    return Err(io::Error::other("a fragment holds a container inline"))
                }
            }
        }
    }

    /// Writes what is left of the node and closes it.
    fn close(mut self, out: &mut Vec<u8>) -> io::Result<()> {
        if self.list {
            out.push(b']');
            return Ok(());
        }
        self.flush(out, None)?;
        out.push(b'}');
        Ok(())
    }
}

fn store_err(e: canopy_store::StoreError) -> io::Error {
    io::Error::other(e.to_string())
}

/// Appends one list entry as `serde_json` writes its `data_map` with all
/// descendants, from the entry's stored
/// fragments (its own first, then its descendants' in key order) without
/// decoding them into a tree: `at` is the list's place in the schema.
/// Only containers and keyed, system-ordered lists may lie below (see
/// [`streamable`]), whose fragments come in document order.
fn write_entry(out: &mut Vec<u8>, frags: &canopy::EntryFragments, at: At<'_>) -> io::Result<()> {
    let mut it = frags.iter();
    let Some((own_key, own)) = it.next() else { return Ok(()) };
    out.push(b'{');
    let mut stack: Vec<Open<'_, '_>> = vec![Open::node(own_key, own, at)?];
    let damaged = |rel: &[u8]| io::Error::other(format!("a fragment out of place: {}", keys::hex(rel)));
    for (rel, v) in it {
        // Close what `rel` is not inside of; a list stays open for its next entry.
        while let Some(top) = stack.last() {
            let inside = rel.starts_with(top.key) && !(top.list && rel.len() == top.key.len());
            if inside || stack.len() == 1 {
                break;
            }
            stack.pop().expect("not empty").close(out)?;
        }
        let top = stack.last_mut().expect("the entry stays open");
        if !rel.starts_with(top.key) {
            return Err(damaged(rel));
        }
        if top.list {
            // The next entry of the open list.
            if std::mem::replace(&mut top.any, true) {
                out.push(b',');
            }
            out.push(b'{');
            let at = top.at;
            stack.push(Open::node(rel, v, at)?);
            continue;
        }
        let seg = &rel[top.key.len()..];
        let seg_len = keys::first_segment_len(seg).map_err(|_| damaged(rel))?;
        if seg_len != seg.len() {
            return Err(damaged(rel));
        }
        let (name, pos) = keys::segment_name(seg).ok_or_else(|| damaged(rel))?;
        top.flush(out, Some(&name))?;
        top.member(out, &name)?;
        let cat = top.at.child(&name);
        if pos == seg.len() {
            out.push(b'{');
            stack.push(Open::node(rel, v, cat)?);
            continue;
        }
        // The first entry of a list: open the list, then the entry.
        let list_key = &rel[..top.key.len() + pos];
        out.extend_from_slice(b"[{");
        stack.push(Open {
            key: list_key,
            bytes: &[],
            text: None,
            inline: fragment::Inline::empty(),
            at: cat,
            int64: false,
            list: true,
            any: true,
        });
        stack.push(Open::node(rel, v, cat)?);
    }
    while let Some(top) = stack.pop() {
        top.close(out)?;
    }
    Ok(())
}

/// Whether `s` is a JSON number (RFC 8259) without an exponent, which
/// `serde_json` (arbitrary precision) prints back as it is (it rewrites
/// exponents: `1e5` as `1e+5`).
fn json_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return false;
        }
    }
    i == b.len()
}

/// GET `node` with all descendants of a container or of the whole anchor,
/// as a streamed reply, or of one list entry, written from its fragments;
/// `None` when the buffered handler should answer (a node not stored, a
/// schema `streamable` refuses, v3 of the whole anchor).
pub(super) fn get_node(
    anchor: &Arc<Anchor>,
    yang: &Arc<YangSchema>,
    at: &Path,
    version: u8,
) -> Result<Option<Reply>, CpsError> {
    let model = yang.model();
    let pinned = anchor.store.running().pin().map_err(|e| data_error(anchor, e, true))?;
    let mut tops: Vec<(Path, usize)> = Vec::new();
    if at.is_root() {
        if version == 3 {
            return Ok(None);
        }
        for (name, &i) in &model.top {
            match model.nodes[i].kind {
                NodeKind::Container => {
                    let p = Path::root().child(name.clone(), Selector::None);
                    if pinned.stored_node(&p.to_string()).map_err(|e| data_error(anchor, e, true))?.is_some() {
                        tops.push((p, i));
                    }
                }
                NodeKind::List => return Ok(None),
                _ => {}
            }
        }
        if version == 1 {
            tops.truncate(1);
        }
    } else {
        let Some(i) = schema_at(model, at) else { return Ok(None) };
        if model.nodes[i].kind == NodeKind::List {
            return entry(anchor, &pinned, model, at, i, version);
        }
        if model.nodes[i].kind != NodeKind::Container
            || at.segments.iter().any(|s| !matches!(s.selector, Selector::None | Selector::Keys(_)))
            || pinned.stored_node(&at.to_string()).map_err(|e| data_error(anchor, e, true))?.is_none()
        {
            return Ok(None);
        }
        tops.push((at.clone(), i));
    }
    if tops.is_empty() || !tops.iter().all(|&(_, i)| streamable(model, i)) {
        return Ok(None);
    }
    drop(pinned);
    let (anchor, yang) = (anchor.clone(), yang.clone());
    let body = crate::body::streamed(move |w| {
        let model = yang.model();
        // The reply's own snapshot: what was checked above may have changed
        // since (then the body is cut off rather than made up).
        let pinned = anchor.store.running().pin().map_err(io_err)?;
        let array = version == 2;
        w.write_all(if array { b"[" } else { b"{" })?;
        for (n, (p, _)) in tops.iter().enumerate() {
            if n > 0 {
                w.write_all(b",")?;
            }
            if array {
                w.write_all(b"{")?;
            }
            let chain: Vec<&str> = p.segments.iter().map(|s| s.name.as_str()).collect();
            let top = chain.first().copied().unwrap_or("");
            let module = top.split_once(':').map_or("", |(m, _)| m);
            let name = format!("{}:{}", anchor.set.prefix_of(module), local(chain.last().copied().unwrap_or("")));
            serde_json::to_writer(&mut *w, &name)?;
            w.write_all(b":")?;
            let at = chain.iter().fold(At::top(model), |a, n| a.child(n));
            let Some(own) = pinned.stored_node(&p.to_string()).map_err(io_err)? else {
                return Err(io::Error::other(format!("{p} was deleted as the reply started")));
            };
            write_container(w, &pinned, model, p, own, at)?;
            if array {
                w.write_all(b"}")?;
            }
        }
        w.write_all(if array { b"]" } else { b"}" })
    });
    Ok(Some(Reply::Stream(body)))
}

/// GET `node` of the entry `at` (schema node `i`) of a keyed,
/// system-ordered list with all descendants, written from its stored
/// fragments into one reply (an entry's size, not the store's) without
/// building it; `None` when the buffered handler should answer (the entry
/// is not stored, or a schema `streamable` refuses).
fn entry(
    anchor: &Anchor,
    pinned: &Pinned,
    model: &Model,
    at: &Path,
    i: usize,
    version: u8,
) -> Result<Option<Reply>, CpsError> {
    let n = &model.nodes[i];
    let keyed = at.segments.last().is_some_and(|s| matches!(s.selector, Selector::Keys(_)));
    if !keyed
        || n.keys.is_empty()
        || n.user_ordered
        || !streamable(model, i)
        || at.segments.iter().any(|s| !matches!(s.selector, Selector::None | Selector::Keys(_)))
    {
        return Ok(None);
    }
    let text = at.to_string();
    let chain: Vec<&str> = at.segments.iter().map(|s| s.name.as_str()).collect();
    let list_at = chain.iter().fold(At::top(model), |a, n| a.child(n));
    let module = chain.first().and_then(|t| t.split_once(':')).map_or("", |(m, _)| m);
    let name = format!("{}:{}", anchor.set.prefix_of(module), local(chain.last().copied().unwrap_or("")));
    let mut out = Vec::new();
    out.extend_from_slice(if version == 2 { b"[{" } else { b"{" });
    write_str(&mut out, &name).map_err(|e| CpsError::internal(e.to_string()))?;
    out.extend_from_slice(if version == 3 { b":[" } else { b":" });
    let (mut found, mut failed) = (false, None);
    pinned
        .each_entry_fragments(&text, |frags| {
            found = true;
            if let Err(e) = write_entry(&mut out, frags, list_at) {
                failed = Some(e);
            }
            // The prefix scan of one entry's key brings that entry only.
            Ok(false)
        })
        .map_err(|e| data_error(anchor, e, true))?;
    if let Some(e) = failed {
        return Err(CpsError::internal(e.to_string()));
    }
    if !found {
        // Not stored: the buffered handler says 404.
        return Ok(None);
    }
    out.extend_from_slice(match version {
        2 => b"}]",
        3 => b"]}",
        _ => b"}",
    });
    Ok(Some(Reply::Stream(axum::body::Body::from(out))))
}

/// Writes the container or entry at `path` (its stored fragment `own`) as
/// `data_map` writes it with all descendants.
fn write_container(
    w: &mut dyn Write,
    pinned: &Pinned,
    model: &Model,
    path: &Path,
    own: Container,
    at: At<'_>,
) -> io::Result<()> {
    let Some(idx) = schema_at(model, path) else { return Err(io::Error::other("a node without a schema node")) };
    // Members in canonical name order: the fragment's own nodes and the
    // schema's containers and lists (stored as fragments of their own).
    let mut names: Vec<(&str, Option<&Node>)> = own.children.iter().map(|(n, node)| (n.as_str(), Some(node))).collect();
    for (name, &c) in &model.nodes[idx].children {
        if matches!(model.nodes[c].kind, NodeKind::Container | NodeKind::List) && own.children.get(name).is_none() {
            names.push((name.as_str(), None));
        }
    }
    names.sort_by(|a, b| a.0.cmp(b.0));
    w.write_all(b"{")?;
    let mut first = true;
    let key = |w: &mut dyn Write, name: &str, first: &mut bool| -> io::Result<()> {
        if !std::mem::take(first) {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, local(name))?;
        w.write_all(b":")
    };
    for (name, node) in names {
        let cat = at.child(name);
        match node {
            Some(node) => {
                // As data_map writes it: through data_map of a holder of just it.
                let mut holder = Container::default();
                holder.children.insert(name.into(), node.clone());
                if let Some(v) = data_map(&holder, None, at).into_iter().next().map(|(_, v)| v) {
                    key(w, name, &mut first)?;
                    serde_json::to_writer(&mut *w, &v)?;
                }
            }
            None => {
                let Some(&c) = model.nodes[idx].children.get(name) else { continue };
                let child = path.child(name.to_string(), Selector::None);
                if model.nodes[c].kind == NodeKind::Container {
                    if let Some(o) = pinned.stored_node(&child.to_string()).map_err(io_err)? {
                        key(w, name, &mut first)?;
                        write_container(w, pinned, model, &child, o, cat)?;
                    }
                    continue;
                }
                let list = child.to_string();
                let written = super::parallel::write_list(
                    w,
                    |f| pinned.each_entry_fragments(&list, |frags| Ok(f(frags))).map_err(io_err),
                    &|out, frags| write_entry(out, frags, cat),
                    &mut |w| {
                        key(w, name, &mut first)?;
                        w.write_all(b"[")
                    },
                )?;
                if written {
                    w.write_all(b"]")?;
                }
            }
        }
    }
    w.write_all(b"}")
}

/// A CPS path query that selects one list entry by its keys (see
/// `super::path::entry_of`), with all descendants: the entry written from
/// its fragments as GET `node` v2 writes it, which is the query's one
/// result. `None` when the buffered handler should answer (other queries,
/// key values given in another spelling than the stored one, an entry not
/// stored, a schema `streamable` refuses).
pub(super) fn query_entry(
    anchor: &Arc<Anchor>,
    yang: &Arc<YangSchema>,
    q: &super::path::CpsPath,
    depth: Option<usize>,
) -> Result<Option<Reply>, CpsError> {
    let model = yang.model();
    if depth.is_some() {
        return Ok(None);
    }
    let Some(at) = super::path::entry_of(q, model) else { return Ok(None) };
    // The query compares texts: a key value the schema would rewrite ('01'
    // for 1) matches nothing stored, which the buffered handler shows.
    match yang.resolve_path(&at) {
        Ok((canonical, _)) if canonical == at => {}
        _ => return Ok(None),
    }
    let Some(i) = schema_at(model, &at) else { return Ok(None) };
    let pinned = anchor.store.running().pin().map_err(|e| data_error(anchor, e, true))?;
    entry(anchor, &pinned, model, &at, i, 2)
}

/// The results of a CPS path read entry by entry: each result chain of
/// each entry of the list the query stays inside, in document order, as
/// `node_map` gives it. `None` when the query does not stay inside one
/// list's entries (see `super::path::plan_list`).
pub(super) fn query_reply(
    anchor: &Arc<Anchor>,
    yang: &Arc<YangSchema>,
    q: super::path::CpsPath,
    depth: Option<usize>,
) -> Result<Option<Reply>, CpsError> {
    let model = yang.model();
    if q.attribute.is_some() {
        return Ok(None);
    }
    let Some(list) = super::path::plan_list(&q, model) else { return Ok(None) };
    let (anchor, yang) = (anchor.clone(), yang.clone());
    let body = crate::body::streamed(move |w| {
        let model = yang.model();
        let pinned = anchor.store.running().pin().map_err(io_err)?;
        w.write_all(b"[")?;
        let mut first = true;
        let mut failed: Option<io::Error> = None;
        let scanned = pinned
            .get_each(&list.to_string(), ReadOptions::default(), |r| {
                let found: Vec<Chain<'_>> = super::path::evaluate(&q, &r);
                for chain in &found {
                    let v = super::data::node_map(&anchor, model, chain, depth);
                    let res = (|| -> io::Result<()> {
                        if !std::mem::take(&mut first) {
                            w.write_all(b",")?;
                        }
                        serde_json::to_writer(&mut *w, &v)?;
                        Ok(())
                    })();
                    if let Err(e) = res {
                        failed = Some(e);
                        return Ok(false);
                    }
                }
                Ok(true)
            })
            .map_err(io_err)?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !scanned {
            return Err(io::Error::other(format!("list {list} cannot be read entry by entry")));
        }
        w.write_all(b"]")
    });
    Ok(Some(Reply::Stream(body)))
}

#[cfg(test)]
mod tests {
    use super::super::data::{get_node_buffered, query_buffered};
    use super::super::registry::{ModuleRef, SchemaSet};
    use super::super::Call;
    use super::*;
    use axum::response::IntoResponse;
    use serde_json::Value as Json;

    const NET: &str = r#"module net {
  yang-version 1.1;
  namespace "urn:net";
  prefix nt;
  container devices {
    leaf b-count { type int64; }
    list device {
      key "id";
      leaf id { type string; }
      leaf big { type int64; }
      leaf small { type uint16; }
      leaf ratio { type decimal64 { fraction-digits 2; } }
      leaf flag { type empty; }
      leaf on { type boolean; }
      leaf-list tags { type string; }
      container info {
        leaf type { type string; }
        leaf note { type string; }
      }
      list port {
        key "p";
        leaf p { type string; }
        leaf s { type uint32; }
        container st { leaf up { type boolean; } list lane { key "n"; leaf n { type uint8; } } }
      }
      list alarm {
        key "n";
        leaf n { type int64; }
      }
    }
    container settings {
      leaf mode { type string; }
      container deep { leaf x { type int64; } }
    }
    leaf z-last { type string; }
  }
  container empty-top { presence "p"; }
  container other { leaf a { type string; } }
}
"#;

    fn anchor() -> Arc<Anchor> {
        anchor_of(NET, net_document())
    }

    /// An anchor on a memory store with module `text` (named `net`) holding `doc`.
    fn anchor_of(text: &str, doc: Json) -> Arc<Anchor> {
        let backend = canopy_store::memory::MemoryBackend::new();
        let store =
            canopy::Store::from_backend(Box::new(backend), "memory:cps-stream", canopy::Options::default()).unwrap();
        store.schema_add_texts(&[("net.yang".to_string(), text.to_string())], &[]).unwrap();
        store.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
        let module = ModuleRef {
            name: "net".into(),
            revision: None,
            namespace: "urn:net".into(),
            prefix: "nt".into(),
            text: text.into(),
        };
        let set =
            Arc::new(SchemaSet { name: "s".into(), modules: vec![module], validation: canopy::Validation::Structure });
        Arc::new(Anchor { dataspace: "ds".into(), name: "a".into(), set, store })
    }

    fn net_document() -> Json {
        let devs: Vec<Json> = (0..90)
            .map(|i| {
                serde_json::json!({
                    "id": format!("d{i:02}"), "big": (i as i64) * 1_000_000_007, "small": i, "ratio": "1.50",
                    "on": i % 2 == 0, "tags": ["a", "b\"q"],
                    "info": {"type": if i % 3 == 0 { "xpdr" } else { "rdm" }, "note": "é \\ \n"},
                    "port": [{"p": "a", "s": i, "st": {"up": true, "lane": [{"n": 1}, {"n": 2}]}}, {"p": "b", "st": {}}],
                    "alarm": [{"n": -(i as i64)}, {"n": 9_000_000_000i64}]
                })
            })
            .collect();
        let mut doc = serde_json::json!({
            "net:devices": {"b-count": 90, "device": devs, "settings": {"mode": "m", "deep": {"x": -5}}, "z-last": "z"},
            "net:empty-top": {},
            "net:other": {"a": "x"}
        });
        doc["net:devices"]["device"][1]["flag"] = serde_json::json!([null]);
        doc
    }

    fn call(params: &[(&str, &str)]) -> Call {
        Call {
            method: axum::http::Method::GET,
            segments: Vec::new(),
            query: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            headers: Default::default(),
            body: Vec::new(),
        }
    }

    async fn bytes(r: Reply) -> (bool, Vec<u8>) {
        let streamed = matches!(r, Reply::Stream(_));
        let body = r.into_response().into_body();
        (streamed, axum::body::to_bytes(body, usize::MAX).await.unwrap().to_vec())
    }

    /// Leaf values are written as `typed_json` serializes them.
    #[test]
    fn values_are_written_as_typed_json_writes_them() {
        let a = anchor();
        let y = a.store.yang_schema().unwrap().unwrap();
        let top = At::top(y.model());
        let big = top.child("net:devices").child("device").child("big");
        let small = top.child("net:devices").child("device").child("small");
        for text in
            ["0", "-0", "12", "-7", "1.5", "1e5", "1E+05", "2.50", "007", "1.", ".5", " 5", "5 ", "NaN", "", "-", "x"]
        {
            for at in [big, small] {
                for v in [canopy::Value::Number(text.into()), canopy::Value::String(text.into())] {
                    let mut out = Vec::new();
                    write_value(&mut out, &v, at).unwrap();
                    let want = serde_json::to_vec(&super::super::data::typed_json(&v, at)).unwrap();
                    assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(want).unwrap(), "{v:?}");
                }
            }
        }
    }

    /// The streamed replies are byte for byte the buffered ones.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streamed_replies_are_the_buffered_ones() {
        let a = anchor();
        for version in [1u8, 2, 3] {
            let desc = if version == 1 { ("include-descendants", "true") } else { ("descendants", "all") };
            for (xpath, streams) in [
                ("/", version != 3),
                ("/devices", true),
                ("/devices/settings", true),
                ("/other", true),
                ("/devices/device[@id='d07']", true),
                ("/devices/device[@id='d01']", true),
                ("/devices/device[@id='d01']/port[@p='a']", true),
            ] {
                let c = call(&[("xpath", xpath), desc]);
                let (streamed, got) = bytes(super::super::data::get_node(&a, &c, version).unwrap()).await;
                let (_, want) = bytes(get_node_buffered(&a, &c, version).unwrap()).await;
                assert_eq!(streamed, streams, "v{version} {xpath}");
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "v{version} {xpath}");
            }
        }
        // (query, streamed with all descendants, streamed with fewer)
        for (cps_path, streams_all, streams) in [
            ("//device[@small>30]", true, true),
            ("//device[@id='d03']", true, false),
            ("/devices/device[@id='d03']", true, false),
            ("/devices/device[@id=\"d01\"]/port[@p='a']", true, false),
            ("//port[@p='b']", true, true),
            ("/devices/device[@id='d02']/alarm[@n='-2']", true, false),
            ("/devices/device[@id='d02']/alarm[@n='-02']", false, false),
            ("//device[@id='d03' and @small=3]", false, false),
            ("//device[@id='d03' or @id='d04']", true, true),
            ("//device[@id='nope']", false, false),
            ("/devices/device[@on='true']/info", true, true),
            ("//info[@type='xpdr']", true, true),
            ("//port[@s<3]", true, true),
            ("//device/info[text()='x']", true, true),
            ("//device[@small=1]/ancestor::devices", false, false),
            ("//device/@id", false, false),
        ] {
            for depth in ["all", "none", "1"] {
                let c = call(&[("cps-path", cps_path), ("descendants", depth)]);
                let (streamed, got) = bytes(super::super::data::query(&a, &c, 2).unwrap()).await;
                let (_, want) = bytes(query_buffered(&a, &c, 2).unwrap()).await;
                assert_eq!(streamed, if depth == "all" { streams_all } else { streams }, "{cps_path} {depth}");
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{cps_path} {depth}");
            }
        }
    }

    /// Below a user-ordered list, key order is not document order: such a
    /// subtree is answered by the buffered handler (the user's order), and
    /// a missing entry still gets its 404.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn user_ordered_lists_below_are_not_read_in_key_order() {
        const ORDERED: &str = r#"module net {
  yang-version 1.1;
  namespace "urn:net";
  prefix nt;
  container devices {
    list device {
      key "id";
      leaf id { type string; }
      list hop { key "h"; ordered-by user; leaf h { type string; } }
    }
  }
}
"#;
        let doc = serde_json::json!({"net:devices": {"device": [
            {"id": "a", "hop": [{"h": "z"}, {"h": "b"}, {"h": "m"}]},
            {"id": "b", "hop": [{"h": "y"}, {"h": "a"}]}
        ]}});
        let a = anchor_of(ORDERED, doc);
        for xpath in ["/", "/devices", "/devices/device[@id='a']"] {
            let c = call(&[("xpath", xpath), ("descendants", "all")]);
            let (streamed, got) = bytes(super::super::data::get_node(&a, &c, 2).unwrap()).await;
            assert!(!streamed, "{xpath}");
            let got = String::from_utf8(got).unwrap();
            assert!(got.contains(r#"[{"h":"z"},{"h":"b"},{"h":"m"}]"#), "{xpath}: {got}");
        }
        let c = call(&[("xpath", "/devices/device[@id='nope']"), ("descendants", "all")]);
        let e = super::super::data::get_node(&a, &c, 2).err().expect("a missing entry");
        assert_eq!(e.status, axum::http::StatusCode::NOT_FOUND);
    }
}
