//! YANG Patch (RFC 8072): an ordered list of edits, relative to the target
//! resource, applied as one transaction; the reply is a `yang-patch-status`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use canopy::Subtree;
use canopy::{Edit, Insert, Operation, Session};
use canopy_core::path::{Path, Selector};

use crate::encoding::{self, Enc};
use crate::error::{ErrorEntry, RestError};
use crate::restconf::{exists, json_error, Target};
use crate::uri::Resolver;
use crate::{App, REVISION_HEADER};

/// One edit as the request gave it.
struct Given {
    id: String,
    path: Path,
}

/// A failed patch: the status and the errors, each with the edit it belongs
/// to when that is known.
struct Failed {
    status: StatusCode,
    errors: Vec<(Option<String>, ErrorEntry)>,
}

impl Failed {
    fn of(e: RestError, edit: Option<&str>) -> Failed {
        Failed { status: e.status, errors: e.errors.into_iter().map(|x| (edit.map(str::to_string), x)).collect() }
    }
}

/// The resource an edit's `target` names below the patch's target.
fn edit_path(resolver: &Resolver, target: &Target, rel: &str) -> Result<Path, RestError> {
    let rel = if rel == "/" { "" } else { rel };
    let base = target.rest.trim_end_matches('/');
    resolver.to_path(&format!("{base}{rel}"))
}

/// A YANG Patch in XML (`application/yang-patch+xml`) as the JSON document
/// [`run`] reads: the envelope is taken apart here, each edit's `value`
/// (the target node itself) read by libyang below the target's parent.
///
/// # Errors
/// 400 for XML that is not well-formed, not a `yang-patch`, or data that
/// does not fit the schema.
pub(crate) fn xml_to_json(
    yang: &canopy_yang::YangSchema,
    resolver: &Resolver,
    target: &Target,
    text: &str,
) -> Result<String, RestError> {
    let doc = encoding::parse_xml(text)?;
    let top = doc.root_element();
    let in_ns = |n: &roxmltree::Node<'_, '_>| n.tag_name().namespace() == Some(encoding::YANG_PATCH_NS);
    if top.tag_name().name() != "yang-patch" || !in_ns(&top) {
        return Err(RestError::malformed(format!(
            "a YANG Patch in XML is a `yang-patch` element in namespace {}",
            encoding::YANG_PATCH_NS
        )));
    }
    let unknown = |n: &roxmltree::Node<'_, '_>, within: &str| {
        RestError::new(
            StatusCode::BAD_REQUEST,
            "protocol",
            "unknown-element",
            format!(
                "`{}` (namespace {}) is no member of {within}",
                n.tag_name().name(),
                n.tag_name().namespace().unwrap_or("none")
            ),
        )
    };
    let text_of =
        |n: &roxmltree::Node<'_, '_>| serde_json::Value::String(n.text().unwrap_or_default().trim().to_string());
    let mut patch = serde_json::Map::new();
    let mut edits = Vec::new();
    for c in top.children().filter(roxmltree::Node::is_element) {
        match c.tag_name().name() {
            "patch-id" | "comment" if in_ns(&c) => {
                patch.insert(c.tag_name().name().into(), text_of(&c));
            }
            "edit" if in_ns(&c) => {
                let mut edit = serde_json::Map::new();
                let mut value = None;
                for f in c.children().filter(roxmltree::Node::is_element) {
                    match f.tag_name().name() {
                        "edit-id" | "operation" | "target" | "point" | "where" if in_ns(&f) => {
                            edit.insert(f.tag_name().name().into(), text_of(&f));
                        }
                        "value" if in_ns(&f) => value = Some(f),
                        _ => return Err(unknown(&f, "a YANG Patch edit")),
                    }
                }
                if let Some(v) = value {
                    let rel = edit.get("target").and_then(|t| t.as_str()).unwrap_or_default();
                    let path = edit_path(resolver, target, rel)?;
                    let parent = path.parent().unwrap_or_default();
                    let elements: Vec<String> =
                        v.children().filter(roxmltree::Node::is_element).map(encoding::standalone).collect();
                    let json = encoding::data_to_json(yang, &parent, &elements)?;
                    let json: serde_json::Value = serde_json::from_str(&json).map_err(|e| json_error(&e))?;
                    edit.insert("value".into(), json);
                }
                edits.push(serde_json::Value::Object(edit));
            }
            _ => return Err(unknown(&c, "a YANG Patch")),
        }
    }
    patch.insert("edit".into(), serde_json::Value::Array(edits));
    Ok(serde_json::json!({ "ietf-yang-patch:yang-patch": patch }).to_string())
}

/// Runs a YANG Patch document on `session`'s datastore at `target_path`,
/// with `at` committed only at that revision (see
/// [`crate::restconf::commit`]).
///
/// # Errors
/// None of its own: a failed patch is a `yang-patch-status` reply.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    app: &App,
    session: &Session<'_>,
    resolver: &Resolver,
    target: &Target,
    target_path: &Path,
    text: &str,
    enc: Enc,
    at: Option<u64>,
) -> Result<Response, RestError> {
    let stamps = crate::restconf::stamps_of(session.datastore());
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| json_error(&e))?;
    let Some(patch) = doc.get("ietf-yang-patch:yang-patch").and_then(|p| p.as_object()) else {
        return Err(RestError::malformed("a YANG Patch is an object with the member `ietf-yang-patch:yang-patch`"));
    };
    let patch_id = match patch.get("patch-id").and_then(|v| v.as_str()) {
        Some(id) => id.to_string(),
        None => {
            return Err(RestError::new(
                StatusCode::BAD_REQUEST,
                "application",
                "missing-element",
                "the YANG Patch has no `patch-id`",
            ))
        }
    };
    let edits = patch.get("edit").and_then(|e| e.as_array()).cloned().unwrap_or_default();
    let mut given = Vec::new();
    let mut built = Vec::new();
    for e in &edits {
        match build(session, resolver, target, e, &given) {
            Ok((g, edit)) => {
                given.push(g);
                built.push(edit);
            }
            Err((id, err)) => return Ok(status_reply(enc, &patch_id, Err(Failed::of(err, id.as_deref())))),
        }
    }
    match crate::restconf::commit(session, &built, at)? {
        Ok(commit) => {
            let mut r = status_reply(enc, &patch_id, Ok(()));
            r.headers_mut().insert(REVISION_HEADER, HeaderValue::from(commit.revision));
            let stamp = app.tracker.stamp(stamps, target_path);
            if let Ok(v) = HeaderValue::from_str(&stamp.etag()) {
                r.headers_mut().insert(header::ETAG, v);
            }
            Ok(r)
        }
        Err(e) => {
            let err = RestError::from(e);
            // The edit an error belongs to: the last one at or above its path.
            let owner = err.errors.first().and_then(|x| x.path.clone()).and_then(|p| {
                let p: Path = p.parse().ok()?;
                given.iter().rev().find(|g| g.path.is_prefix_of(&p)).map(|g| g.id.clone())
            });
            Ok(status_reply(enc, &patch_id, Err(Failed::of(err, owner.as_deref()))))
        }
    }
}

/// Builds one edit; on error, the edit's id (when it has one) and the error.
fn build(
    session: &Session<'_>,
    resolver: &Resolver,
    target: &Target,
    e: &serde_json::Value,
    before: &[Given],
) -> Result<(Given, Edit), (Option<String>, RestError)> {
    let id = e.get("edit-id").and_then(|v| v.as_str()).map(str::to_string);
    let fail = |err: RestError| (id.clone(), err);
    let Some(id_text) = id.clone() else {
        return Err(fail(RestError::new(
            StatusCode::BAD_REQUEST,
            "application",
            "missing-element",
            "an edit has no `edit-id`",
        )));
    };
    if before.iter().any(|g| g.id == id_text) {
        return Err(fail(RestError::invalid(format!("edit-id `{id_text}` is used twice"))));
    }
    let op = e.get("operation").and_then(|v| v.as_str()).unwrap_or_default();
    let rel = e.get("target").and_then(|v| v.as_str()).ok_or_else(|| {
        fail(RestError::new(StatusCode::BAD_REQUEST, "application", "missing-element", "the edit has no `target`"))
    })?;
    let resolve = |rel: &str| edit_path(resolver, target, rel);
    let path = resolve(rel).map_err(fail)?;
    let value = e.get("value").map(|v| v.to_string());
    let position = || -> Result<Option<Insert>, RestError> {
        let at = e.get("where").and_then(|v| v.as_str()).unwrap_or("last");
        Ok(Some(match at {
            "first" => Insert::First,
            "last" => Insert::Last,
            "before" | "after" => {
                let point = e
                    .get("point")
                    .and_then(|v| v.as_str())
                    .ok_or_else(|| RestError::invalid(format!("`where: {at}` needs `point`")))?;
                let p = resolve(point)?;
                let values = match p.last().map(|s| &s.selector) {
                    Some(Selector::Keys(kv)) => kv.iter().map(|(_, v)| v.to_string()).collect(),
                    Some(Selector::Value(v)) => vec![v.clone()],
                    _ => return Err(RestError::invalid(format!("point `{point}` is not a list or leaf-list entry"))),
                };
                if at == "before" {
                    Insert::Before(values)
                } else {
                    Insert::After(values)
                }
            }
            other => return Err(RestError::invalid(format!("`where: {other}` is not before, after, first or last"))),
        }))
    };
    let needs_value = |v: Option<String>| {
        v.ok_or_else(|| {
            RestError::new(
                StatusCode::BAD_REQUEST,
                "application",
                "missing-element",
                format!("operation `{op}` needs a `value`"),
            )
        })
    };
    let edit = match op {
        "create" | "merge" | "replace" => {
            let o = match op {
                "create" => Operation::Create,
                "merge" => Operation::Merge,
                _ => Operation::Replace,
            };
            let v = needs_value(value).map_err(fail)?;
            session.parse_edit(o, path.clone(), Some(&v), None).map_err(|x| fail(x.into()))?
        }
        "insert" | "move" if resolver.user_ordered(&path) == Some(false) => {
            return Err(fail(RestError::invalid(format!(
                "operation `{op}` applies to entries of lists and leaf-lists ordered by the user; {} is ordered by the system",
                path.schema_path()
            ))));
        }
        "insert" => {
            let v = needs_value(value).map_err(fail)?;
            let at = position().map_err(fail)?;
            session.parse_edit(Operation::Create, path.clone(), Some(&v), at).map_err(|x| fail(x.into()))?
        }
        "move" => {
            let at = position().map_err(fail)?;
            if !exists(session, &path).map_err(fail)? {
                return Err(fail(
                    RestError::new(
                        StatusCode::NOT_FOUND,
                        "protocol",
                        "invalid-value",
                        format!("{path}: does not exist"),
                    )
                    .at(path.to_string()),
                ));
            }
            match session.get_item(&path.to_string()).map_err(|x| fail(x.into()))? {
                Some(Subtree::Entry(entry)) => Edit {
                    op: Operation::Merge,
                    path: path.clone(),
                    value: Some(canopy::Node::Container(entry)),
                    insert: at,
                },
                Some(Subtree::Value(_)) => {
                    session.parse_edit(Operation::Merge, path.clone(), None, at).map_err(|x| fail(x.into()))?
                }
                _ => return Err(fail(RestError::invalid(format!("{path}: only list and leaf-list entries move")))),
            }
        }
        "delete" => Edit { op: Operation::Delete, path: path.clone(), value: None, insert: None },
        "remove" => Edit { op: Operation::Remove, path: path.clone(), value: None, insert: None },
        other => {
            return Err(fail(RestError::invalid(format!(
                "operation `{other}` is not create, delete, insert, merge, move, replace or remove"
            ))))
        }
    };
    resolver.check_json_kinds(&edit).map_err(fail)?;
    Ok((Given { id: id_text, path }, edit))
}

fn status_reply(enc: Enc, patch_id: &str, result: Result<(), Failed>) -> Response {
    let mut status = serde_json::Map::new();
    status.insert("patch-id".into(), patch_id.into());
    let code = match result {
        Ok(()) => {
            status.insert("ok".into(), serde_json::json!([null]));
            StatusCode::OK
        }
        Err(f) => {
            let entry = ErrorEntry::to_json;
            let mut global = Vec::new();
            let mut per_edit: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
            for (edit, x) in &f.errors {
                match edit {
                    None => global.push(entry(x)),
                    Some(id) => match per_edit.iter_mut().find(|(i, _)| i == id) {
                        Some((_, v)) => v.push(entry(x)),
                        None => per_edit.push((id.clone(), vec![entry(x)])),
                    },
                }
            }
            if !global.is_empty() {
                status.insert("errors".into(), serde_json::json!({ "error": global }));
            }
            if !per_edit.is_empty() {
                let edits: Vec<serde_json::Value> = per_edit
                    .into_iter()
                    .map(|(id, errs)| serde_json::json!({ "edit-id": id, "errors": { "error": errs } }))
                    .collect();
                status.insert("edit-status".into(), serde_json::json!({ "edit": edits }));
            }
            f.status
        }
    };
    let body = serde_json::json!({ "ietf-yang-patch:yang-patch-status": status });
    encoding::protocol_reply(code, &body, enc)
}
