//! RFC 7952 metadata in XML replies: the `origin` annotation of `with-origin`
//! (RFC 8527, ietf-origin) and the `default` annotation of
//! `with-defaults=report-all-tagged` (RFC 6243 section 6), which canopy's
//! JSON carries as `@` members, as XML attributes:
//! `or:origin="or:intended"` and `wd:default="true"`.
//!
//! libyang writes the XML from the JSON without metadata (the store's schema
//! need not hold ietf-origin or ietf-netconf-with-defaults); this module then
//! walks the XML beside the JSON it came from (same nodes, same list order)
//! and puts each node's annotations into its start tag.

use serde_json::{Map, Value};

/// The namespace of ietf-origin (RFC 8342).
pub const ORIGIN_NS: &str = "urn:ietf:params:xml:ns:yang:ietf-origin";
/// The namespace of the `default` attribute (RFC 6243 section 6).
pub const DEFAULT_NS: &str = "urn:ietf:params:xml:ns:netconf:default:1.0";

const ORIGIN: &str = "ietf-origin:origin";
const DEFAULT: &str = "ietf-netconf-with-defaults:default";

/// Whether `v` holds any annotation this module writes.
pub fn has_meta(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, x)| (k.starts_with('@') && mentions(x)) || has_meta(x)),
        Value::Array(a) => a.iter().any(has_meta),
        _ => false,
    }
}

fn mentions(meta: &Value) -> bool {
    match meta {
        Value::Object(o) => o.contains_key(ORIGIN) || o.contains_key(DEFAULT),
        Value::Array(a) => a.iter().any(mentions),
        _ => false,
    }
}

/// The attributes of one node's annotations.
fn attributes(meta: Option<&Value>) -> String {
    let Some(Value::Object(m)) = meta else { return String::new() };
    let mut out = String::new();
    if let Some(Value::String(o)) = m.get(ORIGIN) {
        // An identity of ietf-origin, or one derived from it in another
        // module, which has no prefix bound here: those keep their name.
        let value = o.strip_prefix("ietf-origin:").map_or_else(|| o.clone(), |id| format!("or:{id}"));
        out.push_str(" or:origin=\"");
        out.push_str(&value.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;"));
        out.push('"');
    }
    if matches!(m.get(DEFAULT), Some(Value::Bool(true))) || m.get(DEFAULT).and_then(Value::as_str) == Some("true") {
        out.push_str(" wd:default=\"true\"");
    }
    out
}

/// `xml`, elements written by libyang from `json` (top-level elements: the
/// members of the object `json`), with the annotations of `json` added as
/// attributes; the namespace prefixes `or` and `wd`, where used, are
/// declared on each top-level element.
///
/// # Errors
/// `xml` does not parse (it comes from libyang: an internal error).
pub fn annotate(xml: &str, json: &Value) -> Result<String, String> {
    let wrapped = format!("<r>{xml}</r>");
    let doc = roxmltree::Document::parse(&wrapped).map_err(|e| format!("re-reading the XML reply: {e}"))?;
    let mut inserts: Vec<(usize, String)> = Vec::new();
    if let Value::Object(top) = json {
        walk(doc.root_element(), top, &wrapped, &mut inserts);
    }
    // The prefixes used, declared on every top-level element.
    let mut declare = String::new();
    if inserts.iter().any(|(_, a)| a.contains(" or:")) {
        declare.push_str(&format!(" xmlns:or=\"{ORIGIN_NS}\""));
    }
    if inserts.iter().any(|(_, a)| a.contains(" wd:")) {
        declare.push_str(&format!(" xmlns:wd=\"{DEFAULT_NS}\""));
    }
    for el in doc.root_element().children().filter(roxmltree::Node::is_element) {
        inserts.push((after_name(&wrapped, el.range().start), declare.clone()));
    }
    // Declarations first where both go into one tag (a stable sort).
    inserts.sort_by_key(|(at, text)| (*at, !text.contains("xmlns:")));
    let mut out = String::with_capacity(wrapped.len() + inserts.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, text) in inserts {
        out.push_str(&wrapped[from..at]);
        out.push_str(&text);
        from = at;
    }
    out.push_str(&wrapped[from..]);
    Ok(out["<r>".len()..out.len() - "</r>".len()].to_string())
}

/// Where the name of the start tag at `start` ends.
fn after_name(text: &str, start: usize) -> usize {
    let rest = &text[start + 1..];
    start + 1 + rest.find(|c: char| c.is_whitespace() || c == '>' || c == '/').unwrap_or(rest.len())
}

fn walk(parent: roxmltree::Node<'_, '_>, obj: &Map<String, Value>, text: &str, inserts: &mut Vec<(usize, String)>) {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for el in parent.children().filter(roxmltree::Node::is_element) {
        let local = el.tag_name().name();
        let index = match seen.iter_mut().find(|(n, _)| *n == local) {
            Some((_, i)) => {
                *i += 1;
                *i
            }
            None => {
                seen.push((local, 0));
                0
            }
        };
        let Some((key, value)) = obj.iter().find(|(k, _)| !k.starts_with('@') && k.rsplit(':').next() == Some(local))
        else {
            continue;
        };
        let (item, meta) = match value {
            Value::Array(items) => {
                let at = position(items, index, el);
                let item = items.get(at);
                let meta = match item {
                    Some(Value::Object(o)) => o.get("@"),
                    _ => obj.get(&format!("@{key}")).and_then(|m| m.get(at)),
                };
                (item, meta)
            }
            Value::Object(o) => (Some(value), o.get("@")),
            _ => (Some(value), obj.get(&format!("@{key}"))),
        };
        let attrs = attributes(meta);
        if !attrs.is_empty() {
            inserts.push((after_name(text, el.range().start), attrs));
        }
        if let Some(Value::Object(inner)) = item {
            walk(el, inner, text, inserts);
        }
    }
}

/// A JSON scalar as XML writes it (strings, numbers, booleans).
fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Which of `items` the element `el` (the `index`th of its name) is: libyang
/// may order the instances of a list or leaf-list ordered by the system
/// otherwise than canopy, so an entry is found by its first child (its first
/// key, which XML writes first) and a leaf-list value by its text; `index`
/// when that finds nothing.
fn position(items: &[Value], index: usize, el: roxmltree::Node<'_, '_>) -> usize {
    let same = |i: usize| match items.get(i) {
        Some(Value::Object(o)) => el.children().find(roxmltree::Node::is_element).is_some_and(|k| {
            let name = k.tag_name().name();
            o.iter().any(|(n, v)| {
                n.rsplit(':').next() == Some(name) && text_of(v).as_deref() == Some(k.text().unwrap_or_default())
            })
        }),
        Some(v) => text_of(v).as_deref() == Some(el.text().unwrap_or_default()),
        None => false,
    };
    if same(index) {
        return index;
    }
    (0..items.len()).find(|i| same(*i)).unwrap_or(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_become_attributes_of_their_nodes() {
        let json: Value = serde_json::from_str(
            r#"{"m:top":{"@":{"ietf-origin:origin":"ietf-origin:intended"},
                "l":[{"k":"a","@":{"ietf-origin:origin":"ietf-origin:learned"}},{"k":"b"}],
                "leaf":1,"@leaf":{"ietf-netconf-with-defaults:default":true},
                "ll":["x","y"],"@ll":[null,{"ietf-origin:origin":"ietf-origin:system"}]}}"#,
        )
        .unwrap();
        assert!(has_meta(&json));
        let xml = "<top xmlns=\"urn:m\"><l><k>a</k></l><l><k>b</k></l><leaf>1</leaf><ll>x</ll><ll>y</ll></top>";
        let out = annotate(xml, &json).unwrap();
        assert_eq!(
            out,
            format!(
                "<top xmlns:or=\"{ORIGIN_NS}\" xmlns:wd=\"{DEFAULT_NS}\" or:origin=\"or:intended\" xmlns=\"urn:m\">\
                 <l or:origin=\"or:learned\"><k>a</k></l><l><k>b</k></l><leaf wd:default=\"true\">1</leaf>\
                 <ll>x</ll><ll or:origin=\"or:system\">y</ll></top>"
            )
        );
        roxmltree::Document::parse(&out).unwrap();
        assert!(!has_meta(&serde_json::json!({"m:a": {"b": 1, "@c": {"other:x": 1}}})));
    }
}
