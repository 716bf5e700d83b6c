//! The YANG library (RFC 8525) of the store's schema, at
//! `/restconf/data/ietf-yang-library:yang-library`, and the modules' text at
//! `/restconf/yang/NAME[@REVISION]` (the `location` the library gives).

use std::sync::Arc;

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use canopy::YangModule;
use serde_json::json;

use crate::error::RestError;
use crate::restconf::blocking;
use crate::App;

/// The top-level node this module serves.
pub const NODE: &str = "ietf-yang-library:yang-library";

/// The `namespace` statement of a module's text.
pub(crate) fn namespace_of(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find("namespace") {
        let before = rest[..i].chars().last();
        let after = &rest[i + "namespace".len()..];
        rest = after;
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            continue;
        }
        let arg = after.trim_start();
        if arg.len() == after.len() {
            continue; // `namespace` must be followed by whitespace
        }
        let value = match arg.chars().next()? {
            q @ ('"' | '\'') => arg[1..].split(q).next()?.to_string(),
            _ => arg.split(|c: char| c == ';' || c.is_whitespace()).next()?.to_string(),
        };
        return Some(value);
    }
    None
}

fn file_name(m: &YangModule) -> String {
    match &m.revision {
        Some(r) => format!("{}@{r}", m.name),
        None => m.name.clone(),
    }
}

/// The `ietf-yang-library:yang-library` document of `modules`.
pub fn document(modules: &[YangModule]) -> serde_json::Value {
    let entry = |m: &YangModule| {
        let mut e = serde_json::Map::new();
        e.insert("name".into(), m.name.clone().into());
        if let Some(r) = &m.revision {
            e.insert("revision".into(), r.clone().into());
        }
        e.insert("namespace".into(), namespace_of(&m.text).unwrap_or_default().into());
        e.insert("location".into(), json!([format!("/restconf/yang/{}", file_name(m))]));
        serde_json::Value::Object(e)
    };
    let implemented: Vec<_> = modules.iter().filter(|m| m.implemented).map(entry).collect();
    let imported: Vec<_> = modules.iter().filter(|m| !m.implemented).map(entry).collect();
    // The content id changes whenever a module or revision does.
    let mut id: u64 = 0xcbf2_9ce4_8422_2325;
    for m in modules {
        for b in file_name(m).bytes().chain(std::iter::once(0)) {
            id = (id ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    let datastores: Vec<_> = ["running", "candidate", "startup", "operational"]
        .iter()
        .map(|d| json!({ "name": format!("ietf-datastores:{d}"), "schema": "canopy" }))
        .collect();
    json!({
        NODE: {
            "module-set": [{ "name": "canopy", "module": implemented, "import-only-module": imported }],
            "schema": [{ "name": "canopy", "module-set": ["canopy"] }],
            "datastore": datastores,
            "content-id": format!("{id:016x}"),
        }
    })
}

/// The `ietf-yang-library:yang-library` node of `modules` as data, with its
/// lists keyed as RFC 8525 keys them: what a read of the whole operational
/// datastore shows beside the stored data.
///
/// # Errors
/// None in practice: the document is the server's own.
pub fn tree(modules: &[YangModule]) -> Result<canopy::Container, RestError> {
    let top = format!("/{NODE}");
    let keyed = |rel: &str, keys: &[&str]| (format!("{top}/{rel}"), canopy::ListInfo::keyed(keys.iter().copied()));
    let schema = canopy_core::Schemaless {
        lists: [
            keyed("module-set", &["name"]),
            keyed("module-set/module", &["name"]),
            keyed("module-set/import-only-module", &["name", "revision"]),
            keyed("schema", &["name"]),
            keyed("datastore", &["name"]),
        ]
        .into_iter()
        .collect(),
    };
    canopy_core::json::parse_str(&document(modules).to_string(), &schema)
        .map_err(|e| RestError::internal(format!("the YANG library document: {e}")))
}

/// Puts the members of `v` (an object, or each object of an array) in
/// `order` (others after them), calling `inner` on each member.
pub(crate) fn in_order(v: &mut serde_json::Value, order: &[&str], inner: &dyn Fn(&str, &mut serde_json::Value)) {
    let entries: Vec<&mut serde_json::Value> = match v {
        serde_json::Value::Array(a) => a.iter_mut().collect(),
        other => vec![other],
    };
    for e in entries {
        let Some(o) = e.as_object_mut() else { continue };
        let mut taken: Vec<(String, serde_json::Value)> = std::mem::take(o).into_iter().collect();
        taken.sort_by_key(|(k, _)| order.iter().position(|n| n == k).unwrap_or(order.len()));
        for (k, mut val) in taken {
            inner(&k, &mut val);
            o.insert(k, val);
        }
    }
}

/// Puts the members of a `yang-library` node (as [`tree`] holds it, in name
/// order) in the order of RFC 8525's schema, list keys first, as XML needs
/// them (RFC 7950 section 7.8.5).
pub fn schema_order(v: &mut serde_json::Value) {
    let by = in_order;
    let module = ["name", "revision", "namespace", "location", "submodule", "feature", "deviation"];
    by(v, &["module-set", "schema", "datastore", "content-id"], &|k, v| match k {
        "module-set" => by(v, &["name", "module", "import-only-module"], &|k, v| {
            if k == "module" || k == "import-only-module" {
                by(v, &module, &|_, _| {});
            }
        }),
        "schema" => by(v, &["name", "module-set"], &|_, _| {}),
        "datastore" => by(v, &["name", "schema"], &|_, _| {}),
        _ => {}
    });
}

/// `GET /restconf/yang/NAME[@REVISION]`.
pub async fn module(State(app): State<Arc<App>>, method: Method, UrlPath(file): UrlPath<String>) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return RestError::method_not_allowed(method.as_str(), "GET, HEAD").into_response();
    }
    let file = file.strip_suffix(".yang").unwrap_or(&file).to_string();
    let found = blocking(app, move |app| {
        let modules = app.store.schema_modules()?;
        let (name, rev) = file.split_once('@').map_or((file.as_str(), None), |(n, r)| (n, Some(r)));
        modules.into_iter().find(|m| m.name == name && (rev.is_none() || m.revision.as_deref() == rev)).ok_or_else(
            || {
                RestError::new(
                    StatusCode::NOT_FOUND,
                    "protocol",
                    "invalid-value",
                    format!("no module {file} in the schema"),
                )
            },
        )
    })
    .await;
    match found {
        Ok(_) if method == Method::HEAD => {
            ([(header::CONTENT_TYPE, "application/yang")], String::new()).into_response()
        }
        Ok(m) => ([(header::CONTENT_TYPE, "application/yang")], m.text).into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_read_from_the_module_text() {
        assert_eq!(namespace_of("module m { namespace \"urn:m\"; prefix m; }").as_deref(), Some("urn:m"));
        assert_eq!(
            namespace_of("module m {\n  yang-version 1.1;\n  namespace urn:x:y;\n}").as_deref(),
            Some("urn:x:y")
        );
        assert_eq!(namespace_of("module m { // no-namespace here\n namespace 'urn:q'; }").as_deref(), Some("urn:q"));
        assert_eq!(namespace_of("submodule s { belongs-to m; }"), None);
    }
}
