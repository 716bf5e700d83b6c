//! The change log: what each commit changed, kept in the store for the other
//! processes attached to it (a commit announced by the backend is read back
//! from here and handed to their subscribers).
//!
//! One record per commit under [`crate::keys::LOG`], keyed by the revision
//! (u64 big-endian), so a process behind by several commits reads them in one
//! range scan; records older than the kept window are deleted by the commit
//! that goes past it. The value is a JSON document (`docs/design.md`, "Change
//! log"):
//!
//! ```text
//! {"v":1, "ds":"running", "by":"<committer>", "changes":[change...]}
//! change  := {"op":"created"|"deleted", "path":P, "node":subtree, "place"?:place}
//!          | {"op":"modified", "path":P, "old":node, "new":node}
//!          | {"op":"meta", "path":P, "old":meta, "new":meta}
//!          | {"op":"moved", "path":P, "old":place, "new":place}
//!          | {"op":"erased", "path":P}
//! subtree := {"node":node} | {"entry":container} | {"value":entry}
//! node    := {"leaf":value, "meta"?:meta} | {"leaf-list":[entry...]} | {"container":container}
//!          | {"list":{"keys":[..], "user-ordered":b, "entries":[[pos-hex, container]...]}}
//!          | {"anydata":json, "meta"?:meta}
//! container := {"meta"?:meta, "children":[[name, node]...]}
//! entry   := {"value":value, "meta"?:meta}
//! value   := ["s", text] | ["n", text] | true | false | null
//! place   := "first" | {"after":P-selector}
//! ```
//! Paths are instance identifiers as canopy prints them; a place's selector is
//! written as the last segment of a path (`/x[k='v']`).

use canopy_core::diff::{Change, Place, Subtree};
use canopy_core::path::Path;
use canopy_core::tree::{Container, LeafListEntry, List, ListInfo, Node};
use canopy_core::value::{Meta, Value};
use serde_json::Value as Json;

use crate::error::{Result, StoreError};
use crate::keys::{self, Datastore};

/// The version of the record layout.
const VERSION: u64 = 1;

/// The key of the change log record of `revision`.
pub fn key(revision: u64) -> Vec<u8> {
    let mut k = keys::LOG.to_vec();
    k.extend_from_slice(&revision.to_be_bytes());
    k
}

/// The revision a change log key names, `None` for another key.
pub fn revision_of(key: &[u8]) -> Option<u64> {
    key.strip_prefix(keys::LOG).and_then(|r| r.try_into().ok()).map(u64::from_be_bytes)
}

/// One commit as the log keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub datastore: Datastore,
    /// Who committed: the committing process's token, so that it does not
    /// hand its own commits to its subscribers twice.
    pub by: String,
    pub changes: Vec<Change>,
}

/// The record of a commit of `changes` to `ds` by `by`.
///
/// Written straight into the record's text (a commit of thousands of changes
/// made a tree of JSON values first, and that was most of its cost on a
/// server backend).
pub fn encode(ds: Datastore, by: &str, changes: &[Change]) -> Vec<u8> {
    let mut w = String::with_capacity(64 + 96 * changes.len());
    w.push_str(&format!("{{\"v\":{VERSION},\"ds\":"));
    text(&mut w, ds.name());
    w.push_str(",\"by\":");
    text(&mut w, by);
    w.push_str(",\"changes\":");
    array(&mut w, changes, change);
    w.push('}');
    w.into_bytes()
}

fn text(w: &mut String, s: &str) {
    canopy_core::json::write_json_string(w, s);
}

/// `[item,item,…]`, each item as `put` writes it.
fn array<T>(w: &mut String, items: impl IntoIterator<Item = T>, mut put: impl FnMut(&mut String, T)) {
    w.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            w.push(',');
        }
        put(w, item);
    }
    w.push(']');
}

/// The commit a record holds.
///
/// # Errors
/// `Corrupted` naming what is wrong, for a record this canopy did not write.
pub fn decode(bytes: &[u8]) -> Result<Entry> {
    let v: Json = serde_json::from_slice(bytes).map_err(|e| bad(format!("not JSON: {e}")))?;
    let version = v.get("v").and_then(Json::as_u64).ok_or_else(|| bad("no version".into()))?;
    if version != VERSION {
        return Err(bad(format!("version {version}, this canopy reads {VERSION}")));
    }
    let ds = v.get("ds").and_then(Json::as_str).ok_or_else(|| bad("no datastore".into()))?;
    let datastore =
        Datastore::ALL.into_iter().find(|d| d.name() == ds).ok_or_else(|| bad(format!("unknown datastore `{ds}`")))?;
    let by = v.get("by").and_then(Json::as_str).ok_or_else(|| bad("no committer".into()))?.to_owned();
    let changes = v
        .get("changes")
        .and_then(Json::as_array)
        .ok_or_else(|| bad("no changes".into()))?
        .iter()
        .enumerate()
        .map(|(i, c)| un_change(c).map_err(|e| bad(format!("change {i}: {e}"))))
        .collect::<Result<Vec<_>>>()?;
    Ok(Entry { datastore, by, changes })
}

fn bad(why: String) -> StoreError {
    StoreError::corrupted(format!("change log record: {why}"))
}

type R<T> = std::result::Result<T, String>;

fn change(w: &mut String, c: &Change) {
    let head = |w: &mut String, op: &str, path: &Path| {
        w.push_str("{\"op\":\"");
        w.push_str(op);
        w.push_str("\",\"path\":");
        text(w, &path.to_string());
    };
    match c {
        Change::Created { path, node: n, place: p } | Change::Deleted { path, node: n, place: p } => {
            head(w, if matches!(c, Change::Created { .. }) { "created" } else { "deleted" }, path);
            w.push_str(",\"node\":");
            subtree(w, n);
            if let Some(p) = p {
                w.push_str(",\"place\":");
                place(w, p);
            }
        }
        Change::Modified { path, old, new } => {
            head(w, "modified", path);
            w.push_str(",\"old\":");
            node(w, old);
            w.push_str(",\"new\":");
            node(w, new);
        }
        Change::Meta { path, old, new } => {
            head(w, "meta", path);
            w.push_str(",\"old\":");
            meta(w, old);
            w.push_str(",\"new\":");
            meta(w, new);
        }
        Change::Moved { path, old, new } => {
            head(w, "moved", path);
            w.push_str(",\"old\":");
            place(w, old);
            w.push_str(",\"new\":");
            place(w, new);
        }
        Change::Erased { path } => head(w, "erased", path),
    }
    w.push('}');
}

fn un_change(v: &Json) -> R<Change> {
    let op = v.get("op").and_then(Json::as_str).ok_or("no op")?;
    let path = un_path(v.get("path").ok_or("no path")?)?;
    let field = |name: &str| v.get(name).ok_or_else(|| format!("`{op}` without `{name}`"));
    let opt_place = || v.get("place").map(un_place).transpose();
    Ok(match op {
        "created" => Change::Created { node: un_subtree(field("node")?)?, place: opt_place()?, path },
        "deleted" => Change::Deleted { node: un_subtree(field("node")?)?, place: opt_place()?, path },
        "modified" => Change::Modified { old: un_node(field("old")?)?, new: un_node(field("new")?)?, path },
        "meta" => Change::Meta { old: un_meta(Some(field("old")?))?, new: un_meta(Some(field("new")?))?, path },
        "moved" => Change::Moved { old: un_place(field("old")?)?, new: un_place(field("new")?)?, path },
        "erased" => Change::Erased { path },
        other => return Err(format!("unknown op `{other}`")),
    })
}

fn un_path(v: &Json) -> R<Path> {
    let s = v.as_str().ok_or("a path is not a string")?;
    s.parse().map_err(|e| format!("path `{s}`: {e}"))
}

fn place(w: &mut String, p: &Place) {
    match p {
        Place::First => w.push_str("\"first\""),
        Place::After(sel) => {
            w.push_str("{\"after\":");
            text(w, &Path::root().child("x", sel.clone()).to_string());
            w.push('}');
        }
    }
}

fn un_place(v: &Json) -> R<Place> {
    if v.as_str() == Some("first") {
        return Ok(Place::First);
    }
    let after = un_path(v.get("after").ok_or("a place is neither `first` nor `after`")?)?;
    let sel = after.segments.last().map(|s| s.selector.clone()).ok_or("an empty `after` path")?;
    Ok(Place::After(sel))
}

fn subtree(w: &mut String, s: &Subtree) {
    match s {
        Subtree::Node(n) => {
            w.push_str("{\"node\":");
            node(w, n);
        }
        Subtree::Entry(c) => {
            w.push_str("{\"entry\":");
            container(w, c);
        }
        Subtree::Value(e) => {
            w.push_str("{\"value\":");
            ll_entry(w, e);
        }
    }
    w.push('}');
}

fn un_subtree(v: &Json) -> R<Subtree> {
    if let Some(n) = v.get("node") {
        Ok(Subtree::Node(un_node(n)?))
    } else if let Some(c) = v.get("entry") {
        Ok(Subtree::Entry(un_container(c)?))
    } else if let Some(e) = v.get("value") {
        Ok(Subtree::Value(un_ll_entry(e)?))
    } else {
        Err("a subtree is neither `node`, `entry` nor `value`".into())
    }
}

/// `,"meta":{…}` when there is metadata, and the closing brace.
fn close_with_meta(w: &mut String, m: &Meta) {
    if !m.is_empty() {
        w.push_str(",\"meta\":");
        meta(w, m);
    }
    w.push('}');
}

fn node(w: &mut String, n: &Node) {
    match n {
        Node::Leaf { value: v, meta: m } => {
            w.push_str("{\"leaf\":");
            value(w, v);
            close_with_meta(w, m);
        }
        Node::LeafList(entries) => {
            w.push_str("{\"leaf-list\":");
            array(w, entries, ll_entry);
            w.push('}');
        }
        Node::Container(c) => {
            w.push_str("{\"container\":");
            container(w, c);
            w.push('}');
        }
        Node::List(l) => {
            w.push_str("{\"list\":{\"keys\":");
            array(w, &l.info.keys, |w, k| text(w, k));
            w.push_str(if l.info.user_ordered { ",\"user-ordered\":true" } else { ",\"user-ordered\":false" });
            w.push_str(",\"entries\":");
            array(w, l.entries_with_pos(), |w, (pos, e)| {
                w.push('[');
                text(w, &keys::hex(pos));
                w.push(',');
                container(w, e);
                w.push(']');
            });
            w.push_str("}}");
        }
        Node::AnyData { value: v, meta: m } => {
            w.push_str("{\"anydata\":");
            w.push_str(&v.to_string());
            close_with_meta(w, m);
        }
    }
}

fn un_node(v: &Json) -> R<Node> {
    let o = v.as_object().ok_or("a node is not an object")?;
    if let Some(x) = o.get("leaf") {
        return Ok(Node::Leaf { value: un_value(x)?, meta: un_meta(o.get("meta"))? });
    }
    if let Some(x) = o.get("leaf-list") {
        let entries = x.as_array().ok_or("`leaf-list` is not an array")?;
        return Ok(Node::LeafList(entries.iter().map(un_ll_entry).collect::<R<_>>()?));
    }
    if let Some(x) = o.get("container") {
        return Ok(Node::Container(un_container(x)?));
    }
    if let Some(x) = o.get("list") {
        let keys = x
            .get("keys")
            .and_then(Json::as_array)
            .ok_or("a list without `keys`")?
            .iter()
            .map(|k| {
                k.as_str().map(canopy_core::tree::Name::from).ok_or_else(|| "a key name is not a string".to_owned())
            })
            .collect::<R<Vec<_>>>()?;
        let user_ordered = x.get("user-ordered").and_then(Json::as_bool).ok_or("a list without `user-ordered`")?;
        let mut list = List::new(ListInfo { keys, user_ordered });
        for e in x.get("entries").and_then(Json::as_array).ok_or("a list without `entries`")? {
            let pair = e.as_array().filter(|a| a.len() == 2).ok_or("a list entry is not [position, container]")?;
            let pos = un_hex(pair[0].as_str().ok_or("an entry position is not a string")?)?;
            list.insert_at_pos(pos, un_container(&pair[1])?).map_err(|e| e.to_string())?;
        }
        return Ok(Node::List(Box::new(list)));
    }
    if let Some(x) = o.get("anydata") {
        return Ok(Node::AnyData { value: Box::new(x.clone()), meta: un_meta(o.get("meta"))? });
    }
    Err("a node is none of leaf, leaf-list, container, list, anydata".into())
}

fn container(w: &mut String, c: &Container) {
    w.push_str("{\"children\":");
    array(w, c.children.iter(), |w, (name, n)| {
        w.push('[');
        text(w, name);
        w.push(',');
        node(w, n);
        w.push(']');
    });
    close_with_meta(w, &c.meta);
}

fn un_container(v: &Json) -> R<Container> {
    let mut c = Container { meta: un_meta(v.get("meta"))?, ..Container::default() };
    for pair in v.get("children").and_then(Json::as_array).ok_or("a container without `children`")? {
        let pair = pair.as_array().filter(|a| a.len() == 2).ok_or("a child is not [name, node]")?;
        let name = pair[0].as_str().ok_or("a child's name is not a string")?;
        c.children.insert(name.into(), un_node(&pair[1])?);
    }
    Ok(c)
}

fn ll_entry(w: &mut String, e: &LeafListEntry) {
    w.push_str("{\"value\":");
    value(w, &e.value);
    close_with_meta(w, &e.meta);
}

fn un_ll_entry(v: &Json) -> R<LeafListEntry> {
    Ok(LeafListEntry {
        value: un_value(v.get("value").ok_or("a leaf-list entry without `value`")?)?,
        meta: un_meta(v.get("meta"))?,
    })
}

fn value(w: &mut String, v: &Value) {
    match v {
        Value::String(s) => {
            w.push_str("[\"s\",");
            text(w, s);
            w.push(']');
        }
        Value::Number(n) => {
            w.push_str("[\"n\",");
            text(w, n);
            w.push(']');
        }
        Value::Bool(true) => w.push_str("true"),
        Value::Bool(false) => w.push_str("false"),
        Value::Empty => w.push_str("null"),
    }
}

fn un_value(v: &Json) -> R<Value> {
    match v {
        Json::Bool(b) => Ok(Value::Bool(*b)),
        Json::Null => Ok(Value::Empty),
        Json::Array(a) if a.len() == 2 => match (a[0].as_str(), a[1].as_str()) {
            (Some("s"), Some(s)) => Ok(Value::String(s.into())),
            (Some("n"), Some(n)) => Ok(Value::Number(n.into())),
            _ => Err(format!("unknown value {v}")),
        },
        _ => Err(format!("unknown value {v}")),
    }
}

fn meta(w: &mut String, m: &Meta) {
    w.push('{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            w.push(',');
        }
        text(w, k);
        w.push(':');
        text(w, v);
    }
    w.push('}');
}

fn un_meta(v: Option<&Json>) -> R<Meta> {
    let Some(v) = v else { return Ok(Meta::new()) };
    v.as_object()
        .ok_or("`meta` is not an object")?
        .iter()
        .map(|(k, v)| {
            v.as_str().map(|s| (k.clone(), s.to_owned())).ok_or_else(|| format!("meta `{k}` is not a string"))
        })
        .collect()
}

fn un_hex(s: &str) -> R<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("position `{s}` is not hex"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(s.get(i..i + 2).unwrap_or("zz"), 16).map_err(|_| format!("position `{s}` is not hex"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use canopy_core::path::Selector;
    use serde_json::json;

    fn p(s: &str) -> Path {
        s.parse().unwrap()
    }

    fn sample() -> Vec<Change> {
        let mut entry = Container::default();
        entry.children.insert("name".into(), Node::leaf(Value::String("eth0".into())));
        entry.children.insert(
            "mtu".into(),
            Node::Leaf { value: Value::Number("1500".into()), meta: [("m:a".to_owned(), "x".to_owned())].into() },
        );
        entry.children.insert(
            "tags".into(),
            Node::LeafList(vec![
                LeafListEntry { value: Value::Empty, meta: Meta::new() },
                LeafListEntry { value: Value::Bool(true), meta: Meta::new() },
            ]),
        );
        entry
            .children
            .insert("blob".into(), Node::AnyData { value: Box::new(json!({"a": [1, "two"]})), meta: Meta::new() });
        let mut inner = List::new(ListInfo { keys: vec!["k".into()], user_ordered: true });
        let mut e = Container::default();
        e.children.insert("k".into(), Node::leaf(Value::String("q'\"]".into())));
        inner.insert_at_pos(vec![0x80, 0x01], e).unwrap();
        entry.children.insert("inner".into(), Node::List(Box::new(inner)));
        let sel = Selector::Keys(vec![("name".into(), "eth'1\"".into())]);
        vec![
            Change::Created {
                path: p("/m:if/i[name='eth0']"),
                node: Subtree::Entry(entry.clone()),
                place: Some(Place::After(sel)),
            },
            Change::Deleted { path: p("/m:if/i[name='eth2']"), node: Subtree::Entry(entry), place: Some(Place::First) },
            Change::Modified { path: p("/m:c/x"), old: Node::leaf(Value::Bool(false)), new: Node::leaf(Value::Empty) },
            Change::Meta {
                path: p("/m:c"),
                old: Meta::new(),
                new: [("o:origin".to_owned(), "intended".to_owned())].into(),
            },
            Change::Moved { path: p("/m:l[.='a']"), old: Place::First, new: Place::After(Selector::Value("b".into())) },
            Change::Created {
                path: p("/m:l[.='c']"),
                node: Subtree::Value(LeafListEntry { value: Value::String("c".into()), meta: Meta::new() }),
                place: None,
            },
            Change::Erased { path: p("/m:big") },
            Change::Created {
                path: p("/m:k[3]"),
                node: Subtree::Node(Node::Container(Container::default())),
                place: Some(Place::After(Selector::Position(2))),
            },
        ]
    }

    #[test]
    fn a_record_gives_back_the_commit() {
        let changes = sample();
        let bytes = encode(Datastore::Candidate, "p1", &changes);
        let e = decode(&bytes).unwrap();
        assert_eq!(e, Entry { datastore: Datastore::Candidate, by: "p1".into(), changes });
    }

    /// Text that JSON escapes, in every place a record holds text.
    #[test]
    fn escaped_text_comes_back() {
        let odd = "q\"\\ \u{1}\n\t\u{7f}é\u{2028}😀";
        let mut c = Container::default();
        c.meta.insert(format!("m:{odd}"), odd);
        c.children.insert(format!("n{odd}").into(), Node::leaf(Value::String(odd.into())));
        c.children.insert("num".into(), Node::leaf(Value::Number("-1.5e3".into())));
        let changes = vec![
            Change::Created { path: p("/m:c"), node: Subtree::Node(Node::Container(c.clone())), place: None },
            Change::Modified {
                path: p("/m:c/x"),
                old: Node::leaf(Value::String(odd.into())),
                new: Node::AnyData { value: Box::new(json!({"k": odd, "n": [1.25, null]})), meta: c.meta.clone() },
            },
        ];
        let bytes = encode(Datastore::Running, odd, &changes);
        serde_json::from_slice::<Json>(&bytes).expect("the record is JSON");
        let e = decode(&bytes).unwrap();
        assert_eq!(e, Entry { datastore: Datastore::Running, by: odd.into(), changes });
    }

    #[test]
    fn keys_order_by_revision() {
        assert!(key(255) < key(256));
        assert_eq!(revision_of(&key(77)), Some(77));
        assert_eq!(revision_of(b"\x00lock"), None);
    }

    #[test]
    fn damaged_records_are_refused_naming_what_is_wrong() {
        let good = String::from_utf8(encode(Datastore::Running, "p", &sample())).unwrap();
        for (bytes, says) in [
            ("".to_owned(), "not JSON"),
            (r#"{"v":2,"ds":"running","by":"p","changes":[]}"#.to_owned(), "version 2"),
            (r#"{"v":1,"ds":"nowhere","by":"p","changes":[]}"#.to_owned(), "unknown datastore"),
            (r#"{"v":1,"ds":"running","changes":[]}"#.to_owned(), "no committer"),
            (
                r#"{"v":1,"ds":"running","by":"p","changes":[{"op":"created","path":"/m:a"}]}"#.to_owned(),
                "change 0: `created` without `node`",
            ),
            (r#"{"v":1,"ds":"running","by":"p","changes":[{"op":"erased","path":"m:a["}]}"#.to_owned(), "path `m:a[`"),
            (r#"{"v":1,"ds":"running","by":"p","changes":[{"op":"jump","path":"/m:a"}]}"#.to_owned(), "unknown op"),
            (good.replace(r#"["n","1500"]"#, r#"["x","1500"]"#), "unknown value"),
            (good.replace("8001", "8g01"), "not hex"),
        ] {
            let e = decode(bytes.as_bytes()).expect_err(says);
            assert_eq!(e.kind(), crate::ErrorKind::Corrupted);
            assert!(e.to_string().contains(says), "{says}: {e}");
        }
        for len in 0..good.len() {
            assert!(decode(&good.as_bytes()[..len]).is_err(), "length {len}");
        }
    }
}
