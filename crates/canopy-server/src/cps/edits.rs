//! CPS write bodies in JSON read straight into canopy edits.
//!
//! A bulk POST of a thousand devices is 27 MB of JSON. Read as `serde_json`
//! values, copied entry by entry into JSON text and parsed again into trees,
//! it was held in memory three times over and parsed twice. Here the body is
//! parsed once, by canopy's RFC 7951 parser, below the node it is written to;
//! the parsed nodes become the edits by value (a list's entries one edit
//! each, as [`super::data::writes`] makes them).
//!
//! What this reader does not take — an entry as the parent, a list given as
//! one object, anything the parser refuses — is left to the `serde_json`
//! reading (`None`), whose checks and messages are CPS's.

use canopy::{Container, Edit, Node, Operation, Path, Store};
use canopy_core::path::Selector;
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
    let lists = store.known_lists().map_err(|e| CpsError::internal(e.to_string()))?;
    let pidx = schema_at(model, at);
    // (the member's name in the schema model, its node)
    let mut members: Vec<(String, Node)> = Vec::new();
    match at.last() {
        None => {
            // The top-level members are named without their module: each is
            // parsed alone under its qualified name.
            let Some(raw) = top_members(body) else { return Ok(None) };
            for (name, value) in raw {
                let canon = schema_name(model, pidx, at, &name)?;
                let path = Path::root().child(canon.clone(), Selector::None);
                let text = format!("{{\"{canon}\":{}}}", value.get());
                match canopy_core::json::parse_subtree_str(&text, &*lists, &path) {
                    Ok(node) => members.push((canon, node)),
                    Err(_) => return Ok(None),
                }
            }
        }
        Some(last) if last.selector == Selector::None => {
            let head = format!("{{\"{}\":", last.name);
            let input = std::io::Read::chain(std::io::Read::chain(head.as_bytes(), body), &b"}"[..]);
            let container = match canopy_core::json::parse_subtree(input, &*lists, at) {
                Ok(Node::Container(c)) => c,
                _ => return Ok(None),
            };
            let Container { meta, children } = container;
            if !meta.is_empty() {
                return Ok(None);
            }
            for (name, node) in children {
                members.push((schema_name(model, pidx, at, &name)?, node));
            }
        }
        Some(_) => return Ok(None),
    }
    let mut edits = Vec::new();
    for (canon, node) in members {
        let idx = child_schema(model, pidx, &canon).expect("the member was found in the schema");
        let is_list = model.nodes[idx].kind == canopy_core::schema::NodeKind::List;
        match node {
            Node::List(list) if is_list && !whole_lists => {
                let info = list.info.clone();
                for entry in list.into_entries() {
                    let Some(values) = entry.key_values(&info) else { return Ok(None) };
                    let keys = info.keys.iter().cloned().zip(values).collect();
                    let path = at.child(canon.clone(), Selector::Keys(keys));
                    edits.push(Edit { op, path, value: Some(Node::Container(entry)), insert: None });
                }
            }
            // A list given otherwise than as an array of entries.
            _ if is_list && !whole_lists => return Ok(None),
            node => {
                let path = at.child(canon, Selector::None);
                edits.push(Edit { op, path, value: Some(node), insert: None });
            }
        }
    }
    Ok(Some(edits))
}

/// The name of the schema node `name` (with or without its module) below
/// `at` (schema node `pidx`), as paths name it.
fn schema_name(model: &Model, pidx: Option<usize>, at: &Path, name: &str) -> Result<String, CpsError> {
    let idx = child_schema(model, pidx, name).ok_or_else(|| {
        CpsError::bad("Data Validation Failed", format!("no data node `{name}` under {}", xpath_text(at)))
    })?;
    Ok(model.nodes[idx].name.clone())
}

/// The members of a JSON object, in order, their values as unparsed text;
/// `None` when `body` is not one JSON object.
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
    Some(members)
}
