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
//! (`Pinned::get_each`), each entry written as `serde_json` writes its
//! `data_map` but without building the map (`write_map`). A subtree where
//! two children of a node share a local name (two modules' `x`) is not
//! streamed: `serde_json`'s map keeps one of them, which only the buffered
//! path reproduces.

use std::io::{self, Write};
use std::sync::Arc;

use canopy::{Container, Node, Path, Pinned, ReadOptions, YangSchema};
use canopy_core::path::Selector;
use canopy_core::schema::NodeKind;
use canopy_yang::model::Model;

use super::data::{data_error, data_map, schema_at, At};
use super::path::{local, Chain};
use super::registry::Anchor;
use super::{CpsError, Reply};

fn io_err(e: canopy::Error) -> io::Error {
    io::Error::other(e.to_string())
}

/// Whether the containers from `idx` down (not into list entries) can be
/// written member by member: every list among them keyed and
/// system-ordered, and no two children of one container with the same
/// local name.
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
            NodeKind::List if !unique_locals(model, c) => return false,
            NodeKind::Container if !streamable(model, c) => return false,
            _ => {}
        }
    }
    true
}

/// Whether no two children of a node at or below `idx` share a local name
/// (then `serde_json`'s map keeps every member, and [`write_map`] writes
/// what it would).
fn unique_locals(model: &Model, idx: usize) -> bool {
    let mut seen = std::collections::HashSet::new();
    model.nodes[idx].children.iter().all(|(name, &c)| seen.insert(local(name)) && unique_locals(model, c))
}

/// Appends `data_map(c, None, at)` as `serde_json` serializes it, without
/// building the map (see [`unique_locals`]: every name is kept).
fn write_map(out: &mut Vec<u8>, c: &Container, at: At<'_>) -> io::Result<()> {
    out.push(b'{');
    for (i, (name, node)) in c.children.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut *out, local(name))?;
        out.push(b':');
        let cat = at.child(name);
        match node {
            Node::Leaf { value, .. } => write_value(out, value, cat)?,
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
            Node::AnyData { value, .. } => serde_json::to_writer(&mut *out, &**value)?,
            Node::Container(cc) => write_map(out, cc, cat)?,
            Node::List(l) => {
                out.push(b'[');
                for (j, e) in l.entries().enumerate() {
                    if j > 0 {
                        out.push(b',');
                    }
                    write_map(out, e, cat)?;
                }
                out.push(b']');
            }
        }
    }
    out.push(b'}');
    Ok(())
}

/// A leaf value as `typed_json` gives it, serialized: numbers (and 64-bit
/// integers stored as text) as their text when it is a JSON number.
fn write_value(out: &mut Vec<u8>, v: &canopy::Value, at: At<'_>) -> io::Result<()> {
    use canopy::Value;
    match v {
        Value::Number(n) if json_number(n) => out.extend_from_slice(n.as_bytes()),
        Value::String(s) if at.int64() && json_number(s) => out.extend_from_slice(s.as_bytes()),
        Value::String(s) if !at.int64() => serde_json::to_writer(&mut *out, s)?,
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Empty => out.extend_from_slice(b"null"),
        // Anything else as `typed_json` turns it.
        _ => serde_json::to_writer(&mut *out, &super::data::typed_json(v, at))?,
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
/// as a streamed reply; `None` when the buffered handler should answer (a
/// list entry, a node not stored, a schema `streamable` refuses, v3 of the
/// whole anchor).
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
                holder.children.insert(name.to_string(), node.clone());
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
                let mut open = false;
                let mut failed: Option<io::Error> = None;
                let mut buf = Vec::new();
                let scanned = pinned
                    .get_each(&child.to_string(), ReadOptions::default(), |r| {
                        let Some(entry) = entry_in(&r, &child) else { return Ok(true) };
                        let mut put = || -> io::Result<()> {
                            match open {
                                false => key(w, name, &mut first)?,
                                true => w.write_all(b",")?,
                            }
                            if !std::mem::replace(&mut open, true) {
                                w.write_all(b"[")?;
                            }
                            buf.clear();
                            write_map(&mut buf, entry, cat)?;
                            w.write_all(&buf)
                        };
                        match put() {
                            Ok(()) => Ok(true),
                            Err(e) => {
                                failed = Some(e);
                                Ok(false)
                            }
                        }
                    })
                    .map_err(io_err)?;
                if let Some(e) = failed {
                    return Err(e);
                }
                if !scanned {
                    return Err(io::Error::other(format!("list {child} cannot be read entry by entry")));
                }
                if open {
                    w.write_all(b"]")?;
                }
            }
        }
    }
    w.write_all(b"}")
}

/// The one entry of the list at `list` (a path without the entry's keys) in
/// a per-entry result tree.
fn entry_in<'t>(r: &'t Container, list: &Path) -> Option<&'t Container> {
    let mut c = r;
    let (last, above) = list.segments.split_last()?;
    for seg in above {
        c = match c.children.get(&seg.name)? {
            Node::Container(cc) => cc,
            Node::List(l) => l.entries().next()?,
            _ => return None,
        };
    }
    match c.children.get(&last.name)? {
        Node::List(l) => l.entries().next(),
        _ => None,
    }
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
        let backend = canopy_store::memory::MemoryBackend::new();
        let store =
            canopy::Store::from_backend(Box::new(backend), "memory:cps-stream", canopy::Options::default()).unwrap();
        store.schema_add_texts(&[("net.yang".to_string(), NET.to_string())], &[]).unwrap();
        let devs: Vec<Json> = (0..40)
            .map(|i| {
                serde_json::json!({
                    "id": format!("d{i:02}"), "big": (i as i64) * 1_000_000_007, "small": i, "ratio": "1.50",
                    "on": i % 2 == 0, "tags": ["a", "b\"q"],
                    "info": {"type": if i % 3 == 0 { "xpdr" } else { "rdm" }, "note": "é \\ \n"},
                    "port": [{"p": "a", "s": i}, {"p": "b"}]
                })
            })
            .collect();
        let mut doc = serde_json::json!({
            "net:devices": {"b-count": 40, "device": devs, "settings": {"mode": "m", "deep": {"x": -5}}, "z-last": "z"},
            "net:empty-top": {},
            "net:other": {"a": "x"}
        });
        doc["net:devices"]["device"][1]["flag"] = serde_json::json!([null]);
        store.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
        let module = ModuleRef {
            name: "net".into(),
            revision: None,
            namespace: "urn:net".into(),
            prefix: "nt".into(),
            text: NET.into(),
        };
        let set =
            Arc::new(SchemaSet { name: "s".into(), modules: vec![module], validation: canopy::Validation::Structure });
        Arc::new(Anchor { dataspace: "ds".into(), name: "a".into(), set, store })
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
                ("/devices/device[@id='d07']", false),
            ] {
                let c = call(&[("xpath", xpath), desc]);
                let (streamed, got) = bytes(super::super::data::get_node(&a, &c, version).unwrap()).await;
                let (_, want) = bytes(get_node_buffered(&a, &c, version).unwrap()).await;
                assert_eq!(streamed, streams, "v{version} {xpath}");
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "v{version} {xpath}");
            }
        }
        for (cps_path, streams) in [
            ("//device[@small>30]", true),
            ("//device[@id='d03']", false),
            ("/devices/device[@on='true']/info", true),
            ("//info[@type='xpdr']", true),
            ("//port[@s<3]", true),
            ("//device/info[text()='x']", true),
            ("//device[@small=1]/ancestor::devices", false),
            ("//device/@id", false),
        ] {
            for depth in ["all", "none", "1"] {
                let c = call(&[("cps-path", cps_path), ("descendants", depth)]);
                let (streamed, got) = bytes(super::super::data::query(&a, &c, 2).unwrap()).await;
                let (_, want) = bytes(query_buffered(&a, &c, 2).unwrap()).await;
                assert_eq!(streamed, streams, "{cps_path}");
                assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap(), "{cps_path} {depth}");
            }
        }
    }
}
