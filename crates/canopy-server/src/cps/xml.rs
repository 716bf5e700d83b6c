//! CPS's XML: data replies (GET `node` v2/v3 and the v2 query on one anchor,
//! when the request's `Content-Type` names `application/xml`), delta reports
//! written and read, and error bodies.
//!
//! A data reply is CPS's data maps written element by element, as CPS
//! writes them: every key an element of that name (a top-level node's
//! `prefix:name` included, no namespace declared), a list one element per
//! entry, an empty list one empty element, a leaf-list one element per
//! value, no root element and no XML declaration (several top-level nodes
//! are sibling elements; no result is an empty body).
//!
//! A delta report is `<deltaReports>` holding one `<deltaReport>` per entry:
//! `action`, `xpath`, and the `sourceData` and `targetData` maps, whose
//! lists are written as repeated elements, as CPS's XML mapper writes them.

use serde_json::{Map, Value as Json};

use super::{Call, CpsError};
use axum::http::header;

/// Whether the reply is to be XML: the request's `Content-Type` names
/// `application/xml` (CPS's rule for the endpoints that answer in XML), or
/// its `Accept` asks for XML and not JSON.
pub fn wanted(call: &Call) -> bool {
    let header = |h: header::HeaderName| {
        call.headers.get(h).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase).unwrap_or_default()
    };
    let accept = header(header::ACCEPT);
    header(header::CONTENT_TYPE).contains("application/xml")
        || (accept.contains("application/xml") && !accept.contains("application/json"))
}

fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

fn scalar_text(v: &Json) -> Option<String> {
    match v {
        Json::Null => None,
        Json::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// `<name>` holding `v`: a map's members as elements, a scalar as text,
/// nothing for null.
fn element(out: &mut String, name: &str, v: &Json) {
    let mut inner = String::new();
    match v {
        Json::Object(m) => members(&mut inner, m),
        v => {
            if let Some(t) = scalar_text(v) {
                escape(&mut inner, &t);
            }
        }
    }
    out.push('<');
    out.push_str(name);
    if inner.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    out.push_str(&inner);
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

fn members(out: &mut String, m: &Map<String, Json>) {
    for (name, v) in m {
        match v {
            Json::Array(items) if items.is_empty() => element(out, name, &Json::Null),
            Json::Array(items) => items.iter().for_each(|i| element(out, name, i)),
            v => element(out, name, v),
        }
    }
}

/// CPS's data maps (one map, or a list of them) as XML.
pub fn data_maps(v: &Json) -> String {
    let mut out = String::new();
    match v {
        Json::Object(m) => members(&mut out, m),
        Json::Array(items) => {
            for i in items {
                match i {
                    Json::Object(m) => members(&mut out, m),
                    // An attribute-axis result is a map too; nothing else is
                    // a data map.
                    other => element(&mut out, "value", other),
                }
            }
        }
        other => element(&mut out, "value", other),
    }
    out
}

/// A delta report (the JSON array the JSON reply is) as CPS's XML.
pub fn delta_report(report: &Json) -> String {
    let mut out = String::from("<deltaReports>");
    for e in report.as_array().map(Vec::as_slice).unwrap_or_default() {
        out.push_str("<deltaReport>");
        for field in ["action", "xpath", "sourceData", "targetData"] {
            match e.get(field) {
                Some(Json::Object(m)) => {
                    let mut inner = String::new();
                    members(&mut inner, m);
                    out.push_str(&format!("<{field}>{inner}</{field}>"));
                }
                Some(v @ Json::String(_)) => element(&mut out, field, v),
                _ => {}
            }
        }
        out.push_str("</deltaReport>");
    }
    out.push_str("</deltaReports>");
    out
}

/// CPS's error body in XML.
pub fn error(e: &CpsError, status_text: &str) -> String {
    let mut out = String::from("<ErrorMessage><status>");
    escape(&mut out, status_text);
    out.push_str("</status><message>");
    escape(&mut out, &e.message);
    out.push_str("</message><details>");
    escape(&mut out, &e.details);
    out.push_str("</details></ErrorMessage>");
    out
}

/// One entry of a delta report in XML: its action and xpath, and the data
/// elements of each side, each written standalone in `namespace` where it
/// has none of its own.
pub struct XmlEntry {
    pub action: String,
    pub xpath: Option<String>,
    pub source: Option<Vec<roxmltree::NodeId>>,
    pub target: Option<Vec<roxmltree::NodeId>>,
}

fn bad(message: impl Into<String>, details: impl Into<String>) -> CpsError {
    CpsError::bad(message, details)
}

/// The document of an XML delta report: its root holds the entries (CPS
/// reads it as a list whatever the element names), each entry `action`,
/// `xpath`, `sourceData`, `targetData`.
pub fn parse(text: &str) -> Result<roxmltree::Document<'_>, CpsError> {
    roxmltree::Document::parse(text).map_err(|e| {
        let p = e.pos();
        bad(format!("XML parsing error at line: {}, column: {}", p.row, p.col), e.to_string())
    })
}

pub fn entries(doc: &roxmltree::Document<'_>) -> Vec<XmlEntry> {
    let mut out = Vec::new();
    for entry in doc.root_element().children().filter(roxmltree::Node::is_element) {
        let field = |name: &str| entry.children().find(|c| c.is_element() && c.tag_name().name() == name);
        let text = |name: &str| field(name).map(|n| n.text().unwrap_or_default().trim().to_string());
        let side = |name: &str| {
            field(name).map(|n| n.children().filter(roxmltree::Node::is_element).map(|c| c.id()).collect())
        };
        out.push(XmlEntry {
            action: text("action").unwrap_or_default(),
            xpath: text("xpath"),
            source: side("sourceData"),
            target: side("targetData"),
        });
    }
    out
}

/// `node` as a standalone element in `namespace` where neither it nor an
/// ancestor in the document declares one (CPS's XML names nodes without
/// namespaces), with the prefixes in scope declared.
pub fn in_namespace(node: roxmltree::Node<'_, '_>, namespace: &str) -> String {
    let mut out = String::new();
    write(&mut out, node, None, Some(namespace), true);
    out
}

fn write(out: &mut String, node: roxmltree::Node<'_, '_>, parent_ns: Option<&str>, fallback: Option<&str>, top: bool) {
    let tag = node.tag_name();
    let ns = tag.namespace().or(fallback);
    out.push('<');
    out.push_str(tag.name());
    if let Some(ns) = ns.filter(|ns| top || parent_ns != Some(*ns)) {
        out.push_str(" xmlns=\"");
        escape_attr(out, ns);
        out.push('"');
    }
    if top {
        for n in node.namespaces() {
            let Some(prefix) = n.name() else { continue };
            if prefix == "xml" {
                continue;
            }
            out.push_str(&format!(" xmlns:{prefix}=\""));
            escape_attr(out, n.uri());
            out.push('"');
        }
    }
    out.push('>');
    for c in node.children() {
        if c.is_element() {
            write(out, c, ns, ns, false);
        } else if c.is_text() {
            escape(out, c.text().unwrap_or_default());
        }
    }
    out.push_str("</");
    out.push_str(tag.name());
    out.push('>');
}

fn escape_attr(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("&quot;"),
            c => escape(out, &c.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_maps_as_cps_writes_them() {
        let v = json!([{"shop:bookstore": {"name": "a<b", "categories": [{"code": 1}, {"code": 2}],
            "tags": [], "flag": null, "ok": true}}]);
        assert_eq!(
            data_maps(&v),
            "<shop:bookstore><name>a&lt;b</name><categories><code>1</code></categories>\
             <categories><code>2</code></categories><tags/><flag/><ok>true</ok></shop:bookstore>"
        );
        assert_eq!(data_maps(&json!([])), "");
    }

    #[test]
    fn delta_reports_both_ways() {
        let r = json!([{"action": "create", "xpath": "/b/c[@code='3']",
            "targetData": {"c": [{"code": "3", "name": "x"}]}}]);
        let xml = delta_report(&r);
        assert_eq!(
            xml,
            "<deltaReports><deltaReport><action>create</action><xpath>/b/c[@code='3']</xpath>\
             <targetData><c><code>3</code><name>x</name></c></targetData></deltaReport></deltaReports>"
        );
        let doc = parse(&xml).unwrap();
        let e = entries(&doc);
        assert_eq!((e[0].action.as_str(), e[0].xpath.as_deref()), ("create", Some("/b/c[@code='3']")));
        let target = e[0].target.as_ref().unwrap();
        assert_eq!(
            in_namespace(doc.get_node(target[0]).unwrap(), "urn:x"),
            "<c xmlns=\"urn:x\"><code>3</code><name>x</name></c>"
        );
        assert!(e[0].source.is_none());
        assert!(parse("<a>").is_err());
    }
}
