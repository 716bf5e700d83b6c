//! `ietf-restconf-monitoring` (RFC 8040 section 9): the server's
//! capabilities and its event streams, at
//! `/restconf/data/ietf-restconf-monitoring:restconf-state` (and the
//! operational datastore), read-only.

use axum::http::{header, HeaderMap};
use canopy::Datastore;
use percent_encoding::percent_decode_str;
use serde_json::json;

use crate::error::RestError;

/// The module's top-level node.
pub const NODE: &str = "ietf-restconf-monitoring:restconf-state";

/// The capabilities this server has (RFC 8040 section 9.1.1). Reads report
/// what is stored (`explicit`) unless `with-defaults` says otherwise. Not
/// listed: `filter` and `replay`, which RFC 8040 defines for its event
/// streams (an XPath on notifications, `start-time`/`stop-time`); canopy's
/// change streams take a `path` and resume with `Last-Event-ID` instead.
pub const CAPABILITIES: &[&str] = &[
    "urn:ietf:params:restconf:capability:defaults:1.0?basic-mode=explicit",
    "urn:ietf:params:restconf:capability:depth:1.0",
    "urn:ietf:params:restconf:capability:fields:1.0",
    "urn:ietf:params:restconf:capability:with-defaults:1.0",
    "urn:ietf:params:restconf:capability:yang-patch:1.0",
];

/// The `restconf-state` document; stream locations are absolute URIs on the
/// host the client asked (`Host`), `https` when `tls`.
pub fn document(headers: &HeaderMap, tls: bool) -> serde_json::Value {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    let scheme = if tls { "https" } else { "http" };
    let streams: Vec<serde_json::Value> = Datastore::ALL
        .iter()
        .map(|ds| {
            let name = ds.name();
            json!({
                "name": name,
                "description": format!(
                    "Every commit to the {name} datastore, as YANG Patch edits (query parameter `path` selects a subtree; Last-Event-ID resumes)"
                ),
                "replay-support": false,
                "access": [{ "encoding": "json", "location": format!("{scheme}://{host}/restconf/streams/{name}") }],
            })
        })
        .collect();
    json!({ NODE: {
        "capabilities": { "capability": CAPABILITIES },
        "streams": { "stream": streams },
    }})
}

/// [`document`] as a tree, its lists keyed as RFC 8040 keys them: what a
/// read of the whole operational datastore shows beside the stored data.
///
/// # Errors
/// None in practice: the document is the server's own.
pub fn tree(headers: &HeaderMap, tls: bool) -> Result<canopy::Container, RestError> {
    let top = format!("/{NODE}");
    let schema = canopy_core::Schemaless {
        lists: [
            (format!("{top}/streams/stream"), canopy::ListInfo::keyed(["name"])),
            (format!("{top}/streams/stream/access"), canopy::ListInfo::keyed(["encoding"])),
        ]
        .into_iter()
        .collect(),
    };
    canopy_core::json::parse_str(&document(headers, tls).to_string(), &schema)
        .map_err(|e| RestError::internal(format!("the restconf-state document: {e}")))
}

/// Puts the members of a `restconf-state` node in the order of RFC 8040's
/// schema, list keys first, as XML needs them.
pub fn schema_order(v: &mut serde_json::Value) {
    let by = crate::library::in_order;
    by(v, &["capabilities", "streams"], &|k, v| {
        if k == "streams" {
            by(v, &["stream"], &|_, v| {
                by(v, &["name", "description", "replay-support", "replay-log-creation-time", "access"], &|k, v| {
                    if k == "access" {
                        by(v, &["encoding", "location"], &|_, _| {});
                    }
                });
            });
        }
    });
}

/// The part of `doc` an api-path below the top-level node names (`rest`:
/// still percent-encoded, e.g. `/streams/stream=running`), as a reply
/// document, or `None` when there is no such node.
///
/// # Errors
/// 400 for a malformed segment.
pub fn select(doc: &serde_json::Value, rest: &str) -> Result<Option<serde_json::Value>, RestError> {
    let mut name = NODE.to_string();
    let mut at = doc[NODE].clone();
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    for (i, &seg) in segs.iter().enumerate() {
        let (n, key) = match seg.split_once('=') {
            Some((n, k)) => (n, Some(percent_decode_str(k).decode_utf8_lossy().into_owned())),
            None => (seg, None),
        };
        let n = n.strip_prefix("ietf-restconf-monitoring:").unwrap_or(n);
        let Some(next) = at.get(n).cloned() else { return Ok(None) };
        at = match (key, next) {
            (Some(k), serde_json::Value::Array(entries)) => {
                match entries.into_iter().find(|e| e.get("name").and_then(|v| v.as_str()) == Some(&k)) {
                    Some(e) => serde_json::Value::Array(vec![e]),
                    None => return Ok(None),
                }
            }
            (Some(_), _) => {
                return Err(RestError::invalid(format!("`{n}` is not a list: it takes no key value")));
            }
            (None, v) => v,
        };
        // A list entry's children are below the one entry.
        if let serde_json::Value::Array(a) = &at {
            if a.len() == 1 && a[0].is_object() && i + 1 < segs.len() {
                at = a[0].clone();
            }
        }
        name = format!("ietf-restconf-monitoring:{n}");
    }
    Ok(Some(json!({ name: at })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_the_document_by_api_path() {
        let doc = document(&HeaderMap::new(), false);
        let caps = select(&doc, "/capabilities").unwrap().unwrap();
        let caps = caps["ietf-restconf-monitoring:capabilities"]["capability"].as_array().unwrap().clone();
        assert_eq!(caps.iter().filter(|c| c.as_str().unwrap().contains("defaults:1.0?basic-mode=")).count(), 1);
        let s = select(&doc, "/streams/stream=running").unwrap().unwrap();
        assert_eq!(s["ietf-restconf-monitoring:stream"][0]["name"], "running");
        let a = select(&doc, "/streams/stream=running/access").unwrap().unwrap();
        assert_eq!(a["ietf-restconf-monitoring:access"][0]["location"], "http://localhost/restconf/streams/running");
        assert!(select(&doc, "/streams/stream=nowhere").unwrap().is_none());
        assert!(select(&doc, "/nothing").unwrap().is_none());
        assert!(select(&doc, "/capabilities=x").is_err());
    }
}
