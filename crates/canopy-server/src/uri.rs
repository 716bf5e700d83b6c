//! RESTCONF resource paths (RFC 8040, section 3.5.3) to canopy paths and back.
//!
//! An api-path is `/` or segments `/name` and `/name=v1,v2` (list entries by
//! their key values in key order, leaf-list entries by value), each value
//! percent-encoded; a name carries its module (`mod:name`) where the module
//! changes, as canopy's canonical paths do.

use std::sync::Arc;

use canopy_core::path::{canonical_name, is_valid_name, Path, Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::Schemaless;
use canopy_store::keys::Datastore;
use canopy_yang::YangSchema;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};

use crate::error::RestError;

/// Characters percent-encoded in a key value: the reserved ones of RFC 3986
/// and those that are not allowed in a URI at all.
const VALUE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b',')
    .add(b'/')
    .add(b':')
    .add(b';')
    .add(b'<')
    .add(b'=')
    .add(b'>')
    .add(b'?')
    .add(b'@')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}')
    .add(b'&')
    .add(b'+')
    .add(b'\'');

/// What the store knows about node kinds and list keys, for resolving paths.
pub struct Resolver {
    pub yang: Option<Arc<YangSchema>>,
    pub lists: Arc<Schemaless>,
}

impl Resolver {
    /// Refuses an edit made from a JSON body whose values are not written
    /// in the JSON kinds RFC 7951 gives their types (a `uint16` as `"2011"`,
    /// an `int64` as a number): 400 `invalid-value`, as libyang-based
    /// servers answer. Without a schema every kind is taken.
    pub(crate) fn check_json_kinds(&self, edit: &canopy::Edit) -> Result<(), RestError> {
        match &self.yang {
            Some(y) => {
                let v = y.check_json_kinds(edit);
                match v.is_empty() {
                    true => Ok(()),
                    false => Err(canopy::Error::Invalid(v).into()),
                }
            }
            None => Ok(()),
        }
    }

    /// The canopy path an api-path names (`raw`: the part after the datastore
    /// resource, still percent-encoded, with or without a leading `/`).
    ///
    /// # Errors
    /// 400 `invalid-value` naming the segment that does not fit: a name that is
    /// no data node, a list entry without all its keys, a bad encoding.
    pub fn to_path(&self, raw: &str) -> Result<Path, RestError> {
        let raw = raw.strip_prefix('/').unwrap_or(raw);
        let mut path = Path::root();
        if raw.is_empty() {
            return Ok(path);
        }
        let mut parent_node: Option<usize> = None;
        for (i, seg) in raw.split('/').enumerate() {
            let bad = |why: String| RestError::bad_path(raw, why);
            let (ident, values) = match seg.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (seg, None),
            };
            let ident = decode(ident).map_err(&bad)?;
            if ident.is_empty() {
                return Err(bad(format!("segment {} is empty", i + 1)));
            }
            if !is_valid_name(&ident) {
                return Err(bad(format!("`{ident}` is not a node name (`name` or `module:name`)")));
            }
            if i == 0 && self.yang.is_some() && !ident.contains(':') {
                return Err(bad(format!("`{ident}`: a top-level node is named with its module (`module:{ident}`)")));
            }
            let name = canonical_name(&ident, path.module());
            let sp = match path.is_root() {
                true => format!("/{name}"),
                false => format!("{}/{name}", path.schema_path()),
            };
            // Kind and keys, from the YANG schema when there is one.
            let (kind, keys) = match &self.yang {
                Some(y) => {
                    let model = y.model();
                    let Some(idx) = model.child(parent_node, &name) else {
                        return Err(RestError::unknown_node(raw, &sp));
                    };
                    parent_node = Some(idx);
                    let n = &model.nodes[idx];
                    (Some(n.kind), n.keys.clone())
                }
                None => match self.lists.lists.get(&sp) {
                    Some(info) => (Some(NodeKind::List), info.keys.clone()),
                    None => (None, Vec::new()),
                },
            };
            let selector = match values {
                None => Selector::None,
                Some(v) => {
                    let vals = v.split(',').map(decode).collect::<Result<Vec<_>, _>>().map_err(&bad)?;
                    match kind {
                        Some(NodeKind::List) if keys.is_empty() => {
                            return Err(bad(format!("{sp} is a list without keys: its entries have no api-path")))
                        }
                        Some(NodeKind::List) if vals.len() != keys.len() => {
                            return Err(bad(format!(
                                "{sp} has {} key{} ({}); {} value{} given",
                                keys.len(),
                                if keys.len() == 1 { "" } else { "s" },
                                keys.join(", "),
                                vals.len(),
                                if vals.len() == 1 { " is" } else { "s are" }
                            )))
                        }
                        Some(NodeKind::List) => {
                            Selector::Keys(keys.iter().cloned().zip(vals.into_iter().map(Into::into)).collect())
                        }
                        Some(NodeKind::LeafList) | None if vals.len() == 1 => {
                            Selector::Value(vals.into_iter().next().unwrap_or_default())
                        }
                        None => return Err(bad(format!("{sp} is not a known list: its keys are unknown"))),
                        _ => return Err(bad(format!("{sp} is not a list or leaf-list: `=` does not apply"))),
                    }
                }
            };
            if matches!(kind, Some(NodeKind::List)) && matches!(selector, Selector::None) && self.yang.is_some() {
                // RFC 8040 3.5.3: a list is addressed by entry; the whole list
                // is no resource. Reads of it are still useful: allowed, but
                // nothing may follow.
                if raw.split('/').count() > i + 1 {
                    return Err(bad(format!("{sp} is a list: give the keys of an entry (`{ident}=...`)")));
                }
            }
            path.segments.push(Segment { name, selector });
        }
        match &self.yang {
            Some(y) => y.resolve_path(&path).map(|(p, _)| p).map_err(|e| RestError::bad_path(raw, e.to_string())),
            None => Ok(path),
        }
    }

    /// The kind of node a path names, where the schema says.
    pub fn kind(&self, path: &Path) -> Option<NodeKind> {
        let sp = path.schema_path();
        match &self.yang {
            Some(y) => y.kind(&sp),
            None => self.lists.lists.contains_key(&sp).then_some(NodeKind::List),
        }
    }

    /// Whether the list or leaf-list at `path` is ordered by the user, if known.
    pub fn user_ordered(&self, path: &Path) -> Option<bool> {
        let sp = path.schema_path();
        match &self.yang {
            Some(y) => y.model().by_path.get(&sp).map(|&i| y.model().nodes[i].user_ordered),
            None => self.lists.lists.get(&sp).map(|l| l.user_ordered),
        }
    }

    /// Key names of the list at `path` (its last segment), if known.
    pub fn keys(&self, path: &Path) -> Option<Vec<canopy_core::tree::Name>> {
        let sp = path.schema_path();
        match &self.yang {
            Some(y) => y.model().by_path.get(&sp).map(|&i| y.model().nodes[i].keys.clone()),
            None => self.lists.lists.get(&sp).map(|l| l.keys.clone()),
        }
    }
}

/// The datastore a URI names (`running` or `ietf-datastores:running`,
/// percent-encoded or not).
pub fn datastore_named(name: &str) -> Option<Datastore> {
    let name = percent_decode_str(name).decode_utf8_lossy();
    name.strip_prefix("ietf-datastores:").unwrap_or(&name).parse().ok()
}

fn decode(s: &str) -> Result<String, String> {
    check_percent(s)?;
    percent_decode_str(s).decode_utf8().map(|c| c.into_owned()).map_err(|_| format!("`{s}` is not UTF-8 once decoded"))
}

/// Every `%` in `s` starts a percent-encoding: two hex digits (RFC 3986
/// section 2.1).
///
/// # Errors
/// The place of the first broken one.
pub(crate) fn check_percent(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let ok = b.len() > i + 2 && b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit();
        if !ok {
            let end = (i + 3).min(s.len());
            let bad = s.get(i..end).unwrap_or("%");
            return Err(format!("`{bad}` in `{s}` is no percent-encoding (`%` and two hex digits)"));
        }
    }
    Ok(())
}

/// The api-path of a canopy path (`/mod:a/b=k1,k2/c`), values percent-encoded.
pub fn api_path(path: &Path) -> String {
    let mut out = String::new();
    for seg in &path.segments {
        out.push('/');
        out.push_str(&seg.name);
        match &seg.selector {
            Selector::None | Selector::Position(_) => {}
            Selector::Keys(kv) => {
                out.push('=');
                for (i, (_, v)) in kv.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.extend(utf8_percent_encode(v, VALUE));
                }
            }
            Selector::Value(v) => {
                out.push('=');
                out.extend(utf8_percent_encode(v, VALUE));
            }
        }
    }
    out
}

/// The name of the node at `path` qualified with its module, as the top-level
/// member of a RESTCONF message must be (`example-jukebox:album`).
pub fn qualified_name(path: &Path) -> Option<String> {
    let last = path.last()?;
    if last.name.contains(':') {
        return Some(last.name.to_string());
    }
    Some(match path.module() {
        Some(m) => format!("{m}:{}", last.name),
        None => last.name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_percent_encodings_are_refused() {
        assert!(check_percent("Foo%20Fighters%2f").is_ok());
        for bad in ["Foo%2", "Foo%", "%zz", "a%2g"] {
            assert!(check_percent(bad).unwrap_err().contains("no percent-encoding"), "{bad}");
        }
    }

    fn schemaless() -> Resolver {
        let mut lists = Schemaless::default();
        lists.lists.insert("/m:a/l".into(), canopy_core::tree::ListInfo::keyed(["k1", "k2"]));
        Resolver { yang: None, lists: Arc::new(lists) }
    }

    #[test]
    fn api_paths_round_trip() {
        let r = schemaless();
        let p = r.to_path("/m:a/l=x%2Cy,%2F%20z/leaf").unwrap();
        assert_eq!(p.to_string(), "/m:a/l[k1='x,y'][k2='/ z']/leaf");
        assert_eq!(api_path(&p), "/m:a/l=x%2Cy,%2F%20z/leaf");
        assert_eq!(r.to_path("").unwrap(), Path::root());
    }

    #[test]
    fn bad_api_paths_say_what_is_wrong() {
        let r = schemaless();
        let e = r.to_path("/m:a/l=1").unwrap_err();
        assert!(e.message.contains("2 keys (k1, k2); 1 value is given"), "{}", e.message);
        assert!(r.to_path("/m:a//b").unwrap_err().message.contains("empty"));
        assert!(r.to_path("/m:a/b=1,2").unwrap_err().message.contains("not a known list"));
        assert!(r.to_path("/1bad").unwrap_err().message.contains("not a node name"));
        assert!(r.to_path("/m:a/%FF").unwrap_err().message.contains("UTF-8"));
    }

    #[test]
    fn names_are_qualified_with_the_inherited_module() {
        let p: Path = "/m:a/b/n:c/d".parse().unwrap();
        assert_eq!(qualified_name(&p).as_deref(), Some("n:d"));
        assert_eq!(qualified_name(&"/m:a".parse().unwrap()).as_deref(), Some("m:a"));
    }
}
