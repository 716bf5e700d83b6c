//! CPS write bodies in JSON read straight into canopy edits.
//!
//! A bulk POST of a thousand devices is 27 MB of JSON. Read as `serde_json`
//! values, copied entry by entry into JSON text and parsed again into trees,
//! it was held in memory three times over and parsed twice. Here the body's
//! members are found without being parsed (`serde_json`'s `RawValue`) and
//! each is parsed once, by canopy's RFC 7951 parser, below the node it is
//! written to: a list's entries one by one, each one edit, by value (as
//! [`super::data::writes`] makes them), on two threads for a big body.
//!
//! What this reader does not take — an entry as the parent, a list given as
//! one object, a member named twice, anything the parser refuses — is left
//! to the `serde_json` reading (`None`), whose checks and messages are CPS's.

use canopy::{Container, Edit, Insert, List, ListInfo, Node, Operation, Path, Store};
use canopy_core::path::Selector;
use canopy_core::schema::{NodeKind, Schema};
use canopy_core::Schemaless;
use canopy_yang::model::Model;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::data::{child_schema, schema_at, xpath_text};
use super::CpsError;

/// The edits of the JSON body `body` written below `at` with `op`: its
/// members as nodes under `at`, lists entry by entry (whole with
/// `whole_lists`). `None` when the body is not one this reader takes.
///
/// # Errors
/// A member that names no schema node under `at` (as CPS refuses it);
/// reading the store's lists.
pub(super) fn json_edits(
    store: &Store,
    model: &Model,
    at: &Path,
    body: &[u8],
    op: Operation,
    whole_lists: bool,
) -> Result<Option<Vec<Edit>>, CpsError> {
    if at.last().is_some_and(|last| last.selector != Selector::None) {
        return Ok(None);
    }
    let lists = store.known_lists().map_err(|e| CpsError::internal(e.to_string()))?;
    let pidx = schema_at(model, at);
    // The members, named as CPS names them (top-level ones without their
    // module): each is parsed alone under its name in the schema.
    let Some(members) = top_members(body) else { return Ok(None) };
    let big = body.len() >= PARALLEL_FROM && two_cores();
    let mut edits = Vec::new();
    for (name, value) in members {
        let (canon, idx) = schema_name(model, pidx, at, &name)?;
        let path = at.child(canon.clone(), Selector::None);
        if model.nodes[idx].kind == NodeKind::List && !whole_lists {
            // A list's entries, one edit each.
            let Ok(raws) = serde_json::from_str::<Vec<&RawValue>>(value.get()) else { return Ok(None) };
            let Some((info, entries)) = parse_entries(&raws, &lists, &path, &canon, big) else { return Ok(None) };
            for entry in entries {
                let Some(values) = entry.key_values(&info) else { return Ok(None) };
                let keys = info.keys.iter().cloned().zip(values).collect();
                let path = with_keys(&path, keys);
                edits.push(Edit { op, path, value: Some(Node::Container(entry)), insert: None });
            }
            continue;
        }
        match parse_node(&lists, model, idx, &path, &canon, value, big) {
            Some(node) => edits.push(Edit { op, path, value: Some(node), insert: None }),
            None => return Ok(None),
        }
    }
    Ok(Some(edits))
}

/// Bodies of this size or more have their list entries parsed on two threads.
const PARALLEL_FROM: usize = 1 << 20;

fn two_cores() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
}

/// The node at `path` (schema node `idx`, named `canon`) whose JSON is
/// `raw`. With `big`, a container is put together from its members, so that
/// the entries of its lists are parsed on two threads; otherwise it is
/// parsed whole. `None` when it does not parse, or holds what only the
/// whole-node parser takes (annotations, members named twice).
fn parse_node(
    lists: &Schemaless,
    model: &Model,
    idx: usize,
    path: &Path,
    canon: &str,
    raw: &RawValue,
    big: bool,
) -> Option<Node> {
    if !big || model.nodes[idx].kind != NodeKind::Container {
        let text = format!("{{\"{canon}\":{}}}", raw.get());
        return canopy_core::json::parse_subtree_str(&text, lists, path).ok();
    }
    let members = top_members(raw.get().as_bytes())?;
    let mut c = Container::default();
    for (name, value) in members {
        let (sub_canon, sub_idx) = schema_name(model, Some(idx), path, &name).ok()?;
        let sub = path.child(sub_canon.clone(), Selector::None);
        let node = match model.nodes[sub_idx].kind {
            NodeKind::List => {
                let raws = serde_json::from_str::<Vec<&RawValue>>(value.get()).ok()?;
                let (info, entries) = parse_entries(&raws, lists, &sub, &sub_canon, big)?;
                let mut list = List::new(info);
                for e in entries {
                    // A key repeated: the whole-node parser says so.
                    list.insert(e, &Insert::Last).ok()?;
                }
                Node::List(Box::new(list))
            }
            _ => parse_node(lists, model, sub_idx, &sub, &sub_canon, value, big)?,
        };
        if c.children.insert(sub_canon, node).is_some() {
            return None;
        }
    }
    Some(Node::Container(c))
}

/// The entries `raws` of the list at `list` (named `canon`), parsed one by
/// one (with `big`, on two threads: the other core is idle meanwhile), with
/// the list's keys and ordering; `None` when one of them does not parse.
fn parse_entries(
    raws: &[&RawValue],
    lists: &Schemaless,
    list: &Path,
    canon: &str,
    big: bool,
) -> Option<(ListInfo, Vec<Container>)> {
    let info = lists.list_info(&list.schema_path()).unwrap_or_else(ListInfo::keyless);
    let parse = |raws: &[&RawValue]| entries_of(raws, lists, list, canon);
    let entries = match big && raws.len() > 1 {
        false => parse(raws)?,
        true => {
            let (a, b) = raws.split_at(raws.len() / 2);
            std::thread::scope(|s| {
                // No thread to be had: one does it all.
                let Ok(second) = std::thread::Builder::new().spawn_scoped(s, || parse(b)) else {
                    return parse(raws);
                };
                let first = parse(a);
                match (first, second.join()) {
                    (Some(mut first), Ok(Some(second))) => {
                        first.extend(second);
                        Some(first)
                    }
                    _ => None,
                }
            })?
        }
    };
    Some((info, entries))
}

/// [`parse_entries`] on this thread.
fn entries_of(raws: &[&RawValue], lists: &Schemaless, list: &Path, canon: &str) -> Option<Vec<Container>> {
    let mut out = Vec::with_capacity(raws.len());
    let mut text = String::new();
    for raw in raws {
        text.clear();
        text.push_str("{\"");
        text.push_str(canon);
        text.push_str("\":[");
        text.push_str(raw.get());
        text.push_str("]}");
        let Ok(Node::List(parsed)) = canopy_core::json::parse_subtree_str(&text, lists, list) else { return None };
        out.extend(parsed.into_entries());
    }
    Some(out)
}

/// The entry path of list path `list` with `keys`.
fn with_keys(list: &Path, keys: Vec<(canopy_core::tree::Name, canopy_core::value::Text)>) -> Path {
    let mut p = list.clone();
    if let Some(last) = p.segments.last_mut() {
        last.selector = Selector::Keys(keys);
    }
    p
}

/// The name of the schema node `name` (with or without its module) below
/// `at` (schema node `pidx`), as paths name it, and its index in `model`.
fn schema_name(
    model: &Model,
    pidx: Option<usize>,
    at: &Path,
    name: &str,
) -> Result<(canopy_core::tree::Name, usize), CpsError> {
    let idx = child_schema(model, pidx, name).ok_or_else(|| {
        CpsError::bad("Data Validation Failed", format!("no data node `{name}` under {}", xpath_text(at)))
    })?;
    Ok((model.nodes[idx].name.clone(), idx))
}

/// The members of a JSON object, in order, their values as unparsed text;
/// `None` when `body` is not one JSON object or names a member twice (the
/// whole-body readers say how they take that).
fn top_members(body: &[u8]) -> Option<Vec<(String, &RawValue)>> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(String, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let members = de.deserialize_map(Members).ok()?;
    de.end().ok()?;
    let twice = (1..members.len()).any(|i| members[..i].iter().any(|(n, _)| *n == members[i].0));
    (!twice).then_some(members)
}
