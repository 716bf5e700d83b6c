//! The encodings of RESTCONF messages (RFC 8040 section 5.2): JSON always,
//! XML where the store has a YANG schema. `Accept` picks the reply's encoding
//! (q-values honoured; 406 when it allows neither). Data in XML goes through
//! libyang, which knows the types ([`YangSchema::convert`]: identityref
//! prefixes, numbers, the empty type); the protocol's own documents (errors,
//! the API root, `yang-patch-status`, the YANG library, monitoring) have
//! fixed shapes and are written here. XML request bodies are read with
//! roxmltree first (well-formed, no DTD), so that envelopes (`data`,
//! `yang-patch`) are taken apart before libyang sees the data inside.

use std::io::Write as _;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use canopy_core::path::Path;
use canopy_yang::{Encoding, YangSchema};

use crate::error::RestError;
use crate::{YANG_JSON, YANG_XML};

/// The namespaces of the modules whose documents the server writes itself.
const NAMESPACES: &[(&str, &str)] = &[
    ("ietf-restconf", "urn:ietf:params:xml:ns:yang:ietf-restconf"),
    ("ietf-yang-patch", "urn:ietf:params:xml:ns:yang:ietf-yang-patch"),
    ("ietf-restconf-monitoring", "urn:ietf:params:xml:ns:yang:ietf-restconf-monitoring"),
    ("ietf-yang-library", "urn:ietf:params:xml:ns:yang:ietf-yang-library"),
    ("ietf-datastores", "urn:ietf:params:xml:ns:yang:ietf-datastores"),
];

/// The namespace of `ietf-restconf`.
pub const RESTCONF_NS: &str = "urn:ietf:params:xml:ns:yang:ietf-restconf";
/// The namespace of `ietf-yang-patch`.
pub const YANG_PATCH_NS: &str = "urn:ietf:params:xml:ns:yang:ietf-yang-patch";

/// The encoding of a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    Json,
    Xml,
}

impl Enc {
    pub fn media(self) -> &'static str {
        match self {
            Enc::Json => YANG_JSON,
            Enc::Xml => YANG_XML,
        }
    }
}

/// What a media range in `Accept` is to this server.
fn encoding_of(media: &str) -> Option<Enc> {
    match media {
        "application/yang-data+json" | "application/json" => Some(Enc::Json),
        "application/yang-data+xml" | "application/xml" => Some(Enc::Xml),
        _ => None,
    }
}

/// The q-value an `Accept` header gives `enc`: that of the most specific
/// range matching one of its media types (RFC 9110 section 12.5.1).
fn quality(ranges: &[(String, f32)], enc: Enc) -> f32 {
    let mut best: Option<(u8, f32)> = None;
    for (range, q) in ranges {
        let specificity = if encoding_of(range) == Some(enc) {
            3
        } else if range == "application/*" {
            2
        } else if range == "*/*" {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, *q));
        }
    }
    best.map_or(0.0, |(_, q)| q)
}

/// The media ranges of the `Accept` headers, lowercased, with their q-values.
fn accept_ranges(headers: &HeaderMap) -> Vec<(String, f32)> {
    let mut out = Vec::new();
    for v in headers.get_all(header::ACCEPT) {
        for item in v.to_str().unwrap_or_default().split(',') {
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            if range.is_empty() {
                continue;
            }
            let mut q = 1.0;
            for p in parts {
                if let Some((k, v)) = p.split_once('=') {
                    if k.trim().eq_ignore_ascii_case("q") {
                        q = v.trim().parse::<f32>().unwrap_or(0.0).clamp(0.0, 1.0);
                    }
                }
            }
            out.push((range, q));
        }
    }
    out
}

/// The encoding of the request body, by its `Content-Type` (None: not a
/// RESTCONF data encoding).
fn body_encoding(headers: &HeaderMap) -> Option<Enc> {
    let v = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let t = v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match t.as_str() {
        "application/yang-patch+xml" => Some(Enc::Xml),
        "application/yang-patch+json" => Some(Enc::Json),
        other => encoding_of(other),
    }
}

/// The encoding of the reply to a request with `headers`: the best of its
/// `Accept` (JSON on a tie); without `Accept`, that of the request body
/// (RFC 8040 section 5.2), else JSON.
///
/// # Errors
/// 406 when `Accept` allows neither encoding.
pub fn negotiate(headers: &HeaderMap) -> Result<Enc, RestError> {
    let ranges = accept_ranges(headers);
    if ranges.is_empty() {
        return Ok(body_encoding(headers).unwrap_or(Enc::Json));
    }
    let (json, xml) = (quality(&ranges, Enc::Json), quality(&ranges, Enc::Xml));
    if json <= 0.0 && xml <= 0.0 {
        let asked: Vec<&str> = ranges.iter().map(|(r, _)| r.as_str()).collect();
        return Err(RestError::new(
            StatusCode::NOT_ACCEPTABLE,
            "application",
            "invalid-value",
            format!("Accept: {} allows neither {YANG_JSON} nor {YANG_XML}", asked.join(", ")),
        ));
    }
    Ok(if xml > json { Enc::Xml } else { Enc::Json })
}

/// The encoding errors are written in for a request: as [`negotiate`], JSON
/// when that fails.
fn error_encoding(headers: &HeaderMap) -> Enc {
    negotiate(headers).unwrap_or(Enc::Json)
}

/// Rewrites JSON error replies in XML for clients that asked for XML: errors
/// are made in many places, all as `ietf-restconf:errors` in JSON.
pub async fn errors_as_requested(req: Request, next: Next) -> Response {
    let enc = error_encoding(req.headers());
    let r = next.run(req).await;
    let json = r.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(YANG_JSON.as_bytes()));
    if enc != Enc::Xml || r.status().as_u16() < 400 || !json {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return (parts.status, "").into_response();
    };
    let xml = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(doc) => protocol_xml(&doc),
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(YANG_XML));
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(xml))
}

/// A reply body in `enc` from a protocol document in JSON (errors, the API
/// root, `yang-patch-status`...).
pub fn protocol_reply(status: StatusCode, doc: &serde_json::Value, enc: Enc) -> Response {
    let body = match enc {
        Enc::Json => serde_json::to_string_pretty(doc).unwrap_or_default(),
        Enc::Xml => protocol_xml(doc),
    };
    (status, [(header::CONTENT_TYPE, enc.media())], body).into_response()
}

fn escape(out: &mut String, text: &str, attr: bool) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' if attr => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// A protocol document, `{"module:name": value}`, in XML: objects are
/// elements, arrays repeat their element, `null` and `[null]` are empty
/// elements, metadata (`@…`) is left out. A value naming an identity of
/// ietf-datastores (the YANG library's `datastore`) gets its prefix bound.
pub fn protocol_xml(doc: &serde_json::Value) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if let Some(obj) = doc.as_object() {
        for (name, value) in obj {
            if !name.starts_with('@') {
                member(&mut out, name, value, None);
            }
        }
    }
    out.push('\n');
    out
}

fn namespace(module: &str) -> &str {
    NAMESPACES.iter().find(|(m, _)| *m == module).map_or(module, |(_, ns)| ns)
}

fn member(out: &mut String, name: &str, value: &serde_json::Value, module: Option<&str>) {
    let (module, local, ns) = match name.split_once(':') {
        Some((m, l)) if Some(m) != module => (Some(m), l, Some(namespace(m))),
        Some((m, l)) => (Some(m), l, None),
        None => (module, name, None),
    };
    match value {
        serde_json::Value::Array(items) => {
            for item in items {
                element(out, local, ns, item, module);
            }
        }
        v => element(out, local, ns, v, module),
    }
}

fn element(out: &mut String, local: &str, ns: Option<&str>, value: &serde_json::Value, module: Option<&str>) {
    out.push('<');
    out.push_str(local);
    if let Some(ns) = ns {
        out.push_str(" xmlns=\"");
        escape(out, ns, true);
        out.push('"');
    }
    let text = match value {
        serde_json::Value::Null => None,
        serde_json::Value::Array(a) if a.len() == 1 && a[0].is_null() => None,
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Object(_) | serde_json::Value::Array(_) => {
            out.push('>');
            if let Some(o) = value.as_object() {
                for (n, v) in o {
                    if !n.starts_with('@') {
                        member(out, n, v, module);
                    }
                }
            }
            out.push_str("</");
            out.push_str(local);
            out.push('>');
            return;
        }
        other => Some(other.to_string()),
    };
    match text {
        None => out.push_str("/>"),
        Some(t) => {
            let t = match t.strip_prefix("ietf-datastores:") {
                Some(id) if !id.contains(':') => {
                    out.push_str(" xmlns:ds=\"urn:ietf:params:xml:ns:yang:ietf-datastores\"");
                    format!("ds:{id}")
                }
                _ => t,
            };
            out.push('>');
            escape(out, &t, false);
            out.push_str("</");
            out.push_str(local);
            out.push('>');
        }
    }
}

/// The schema XML data needs, or 415/406 naming why there is none.
pub fn schema_for_xml(yang: Option<&std::sync::Arc<YangSchema>>, reply: bool) -> Result<&YangSchema, RestError> {
    yang.map(|y| &**y).ok_or_else(|| {
        let (status, what) = if reply {
            (StatusCode::NOT_ACCEPTABLE, "replies")
        } else {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, "request bodies")
        };
        RestError::new(
            status,
            "application",
            "invalid-value",
            format!("{YANG_XML} {what} need a YANG schema, and this store has none: use {YANG_JSON}"),
        )
    })
}

/// Writes a data reply in XML: `json` is the reply canopy wrote in JSON for
/// the node at `path` (at the root, `ietf-restconf:data`).
///
/// # Errors
/// 500 when libyang cannot read canopy's own JSON.
pub fn data_reply_xml(yang: &YangSchema, path: &Path, json: &[u8]) -> Result<String, RestError> {
    let mut doc: serde_json::Value = serde_json::from_slice(json)
        .map_err(|e| RestError::internal(format!("re-reading the reply to write it in XML: {e}")))?;
    // Annotations are put back as attributes once libyang has written the
    // rest of the whole reply. Without them the reply is written as a
    // streamed read writes it (the same writer), so that both give the same
    // bytes.
    let annotated = crate::xml_meta::has_meta(&doc).then(|| doc.clone());
    if annotated.is_none() {
        let mut x = crate::xml_stream::XmlStream::new(Vec::new(), yang, path);
        let written = x.write_all(json).and_then(|()| x.finish());
        let bytes = written.map_err(|e| RestError::internal(format!("writing the reply in XML: {e}")))?;
        return String::from_utf8(bytes).map_err(|e| RestError::internal(format!("writing the reply in XML: {e}")));
    }
    strip_meta(&mut doc);
    let internal = |e: canopy_yang::ConvertError| RestError::internal(format!("writing the reply in XML: {e}"));
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    if path.is_root() {
        let mut inner = doc.get("ietf-restconf:data").cloned().unwrap_or_default();
        // The server's own nodes (the YANG library) are no data of the
        // store's schema: written here, after the data.
        let mut own = String::new();
        if let Some(o) = inner.as_object_mut() {
            let names: Vec<String> = o.keys().filter(|k| is_own_node(k)).cloned().collect();
            for name in names {
                if let Some(v) = o.shift_remove(&name) {
                    own.push_str(&own_node_xml(&name, v));
                }
            }
        }
        let nodes = yang.convert(path, &inner.to_string(), Encoding::Json, Encoding::Xml).map_err(internal)?;
        let body: String = nodes.concat() + &own;
        let data = if body.is_empty() {
            format!("<data xmlns=\"{RESTCONF_NS}\"/>")
        } else {
            format!("<data xmlns=\"{RESTCONF_NS}\">{body}</data>")
        };
        match &annotated {
            Some(a) => out.push_str(&crate::xml_meta::annotate(&data, a).map_err(RestError::internal)?),
            None => out.push_str(&data),
        }
    } else {
        let parent = path.parent().unwrap_or_default();
        let nodes = yang.convert(&parent, &doc.to_string(), Encoding::Json, Encoding::Xml).map_err(internal)?;
        match &annotated {
            Some(a) => out.push_str(&crate::xml_meta::annotate(&nodes.concat(), a).map_err(RestError::internal)?),
            None => out.push_str(&nodes.concat()),
        }
    }
    out.push('\n');
    Ok(out)
}

/// Whether `name` (`module:name`) is a node of the server's own modules
/// (the YANG library, restconf-state), which the store's schema does not hold.
pub fn is_own_node(name: &str) -> bool {
    name.split_once(':').is_some_and(|(m, _)| NAMESPACES.iter().any(|(n, _)| *n == m))
}

/// A node of the server's own modules in XML.
pub fn own_node_xml(name: &str, mut value: serde_json::Value) -> String {
    if name == crate::library::NODE {
        crate::library::schema_order(&mut value);
    }
    if name == crate::monitoring::NODE {
        crate::monitoring::schema_order(&mut value);
    }
    let mut out = String::new();
    member(&mut out, name, &value, None);
    out
}

/// Removes RFC 7952 metadata members (`@`, `@name`) everywhere in `v`.
pub(crate) fn strip_meta(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.retain(|k, _| !k.starts_with('@'));
            for x in o.values_mut() {
                strip_meta(x);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_meta),
        _ => {}
    }
}

/// An XML request body, well-formed and without DTD.
///
/// # Errors
/// 400 `malformed-message` naming where the text breaks.
pub fn parse_xml(text: &str) -> Result<roxmltree::Document<'_>, RestError> {
    roxmltree::Document::parse(text).map_err(|e| RestError::malformed(format!("the XML body is not well-formed: {e}")))
}

/// `node` as a standalone XML text: its namespace declared on it, and every
/// prefix in scope (values such as identityrefs use them).
pub fn standalone(node: roxmltree::Node<'_, '_>) -> String {
    let mut out = String::new();
    write_element(&mut out, node, None, true);
    out
}

fn write_element(out: &mut String, node: roxmltree::Node<'_, '_>, parent_ns: Option<&str>, top: bool) {
    let tag = node.tag_name();
    out.push('<');
    out.push_str(tag.name());
    match tag.namespace() {
        Some(ns) if top || parent_ns != Some(ns) => {
            out.push_str(" xmlns=\"");
            escape(out, ns, true);
            out.push('"');
        }
        None if !top && parent_ns.is_some() => out.push_str(" xmlns=\"\""),
        _ => {}
    }
    let inherited: Vec<(Option<&str>, &str)> = match node.parent_element() {
        Some(p) if !top => p.namespaces().map(|n| (n.name(), n.uri())).collect(),
        _ => Vec::new(),
    };
    for n in node.namespaces() {
        let Some(prefix) = n.name() else { continue };
        if prefix == "xml" || inherited.contains(&(Some(prefix), n.uri())) {
            continue;
        }
        out.push_str(&format!(" xmlns:{prefix}=\""));
        escape(out, n.uri(), true);
        out.push('"');
    }
    for a in node.attributes() {
        out.push(' ');
        if let Some(prefix) = a.namespace().and_then(|ns| node.lookup_prefix(ns)) {
            out.push_str(prefix);
            out.push(':');
        }
        out.push_str(a.name());
        out.push_str("=\"");
        escape(out, a.value(), true);
        out.push('"');
    }
    out.push('>');
    for c in node.children() {
        if c.is_element() {
            write_element(out, c, tag.namespace(), false);
        } else if c.is_text() {
            escape(out, c.text().unwrap_or_default(), false);
        }
    }
    out.push_str("</");
    out.push_str(tag.name());
    out.push('>');
}

/// Data in XML (`elements`, each standalone) below `parent`, as one RFC 7951
/// JSON object holding them all.
///
/// # Errors
/// 400 naming what libyang found wrong: an unknown element or namespace, a
/// value of the wrong type.
pub fn data_to_json(yang: &YangSchema, parent: &Path, elements: &[String]) -> Result<String, RestError> {
    let mut merged = serde_json::Map::new();
    if elements.is_empty() {
        return Ok("{}".into());
    }
    let docs = yang
        .convert(parent, &elements.concat(), Encoding::Xml, Encoding::Json)
        .map_err(|e| RestError::invalid(format!("the XML body: {e}")))?;
    for d in docs {
        let v: serde_json::Value = serde_json::from_str(&d)
            .map_err(|e| RestError::internal(format!("re-reading the XML body as JSON: {e}")))?;
        let serde_json::Value::Object(o) = v else { continue };
        for (k, v) in o {
            match (merged.get_mut(&k), v) {
                (Some(serde_json::Value::Array(have)), serde_json::Value::Array(more)) => have.extend(more),
                (_, v) => {
                    merged.insert(k, v);
                }
            }
        }
    }
    Ok(serde_json::Value::Object(merged).to_string())
}

/// A data request body in XML as the JSON canopy reads: the one element of a
/// data resource (below `parent`), or at the datastore root the children of
/// `ietf-restconf:data` (or a single top-level element).
///
/// # Errors
/// 400 for a body that is not well-formed or does not fit the schema.
pub fn body_to_json(yang: &YangSchema, parent: &Path, root: bool, text: &str) -> Result<String, RestError> {
    let doc = parse_xml(text)?;
    let top = doc.root_element();
    let is_data = top.tag_name().name() == "data" && top.tag_name().namespace() == Some(RESTCONF_NS);
    let elements: Vec<String> = if root && is_data {
        top.children().filter(|c| c.is_element()).map(standalone).collect()
    } else {
        vec![standalone(top)]
    };
    data_to_json(yang, parent, &elements)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn accept_picks_by_quality_and_refuses_what_allows_neither() {
        let pick = |accept: &str| negotiate(&with(&[(header::ACCEPT, accept)]));
        assert_eq!(pick(&format!("{YANG_JSON};q=0.4, {YANG_XML}")).unwrap(), Enc::Xml);
        assert_eq!(pick(&format!("{YANG_XML};q=0.5, application/*")).unwrap(), Enc::Json);
        assert_eq!(pick("application/*").unwrap(), Enc::Json);
        assert_eq!(pick("*/*;q=0.1").unwrap(), Enc::Json);
        assert_eq!(pick(&format!("{YANG_JSON};q=0, */*")).unwrap(), Enc::Xml);
        for bad in ["text/csv", "image/*", "application/json-patch+json", &format!("{YANG_JSON};q=0")] {
            assert_eq!(pick(bad).unwrap_err().status, StatusCode::NOT_ACCEPTABLE, "{bad}");
        }
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Enc::Json);
        // No Accept: the reply takes the request body's encoding.
        assert_eq!(negotiate(&with(&[(header::CONTENT_TYPE, "application/yang-patch+xml")])).unwrap(), Enc::Xml);
    }

    #[test]
    fn protocol_documents_in_xml() {
        let doc = serde_json::json!({"ietf-restconf:errors": {"error": [
            {"error-type": "protocol", "error-tag": "invalid-value", "error-message": "a < b & c"}]}});
        let xml = protocol_xml(&doc);
        assert!(
            xml.contains(&format!("<errors xmlns=\"{RESTCONF_NS}\"><error><error-type>protocol</error-type>")),
            "{xml}"
        );
        assert!(xml.contains("<error-message>a &lt; b &amp; c</error-message>"), "{xml}");
        let doc = serde_json::json!({"ietf-yang-patch:yang-patch-status": {"patch-id": "p", "ok": [null]}});
        assert!(protocol_xml(&doc).contains("<patch-id>p</patch-id><ok/></yang-patch-status>"));
    }

    #[test]
    fn standalone_elements_keep_their_namespaces() {
        let doc = parse_xml(r#"<d xmlns="urn:d" xmlns:j="urn:j"><g xmlns="urn:j">j:x</g></d>"#).unwrap();
        let g = doc.root_element().first_element_child().unwrap();
        assert_eq!(standalone(g), r#"<g xmlns="urn:j" xmlns:j="urn:j">j:x</g>"#);
        let e = parse_xml(r#"<!DOCTYPE y [<!ENTITY a "aa">]><y>&a;</y>"#).unwrap_err();
        assert_eq!((e.status, e.errors[0].tag), (StatusCode::BAD_REQUEST, "malformed-message"));
    }
}
