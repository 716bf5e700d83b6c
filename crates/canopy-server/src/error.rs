//! RESTCONF errors (RFC 8040, section 7): one place maps the library's errors
//! to an HTTP status and `error-tag`, by variant and storage kind, never by
//! message text; the body is `ietf-restconf:errors`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use canopy_store::ErrorKind;

/// One `error` entry of `ietf-restconf:errors`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorEntry {
    /// `transport`, `rpc`, `protocol` or `application`.
    pub etype: &'static str,
    pub tag: &'static str,
    /// An instance identifier (`/mod:a/b[k='1']`), when the error has a place.
    pub path: Option<String>,
    pub message: String,
}

impl ErrorEntry {
    /// The entry as `ietf-restconf:errors` and `yang-patch-status` carry it.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("error-type".into(), self.etype.into());
        m.insert("error-tag".into(), self.tag.into());
        if let Some(p) = &self.path {
            m.insert("error-path".into(), p.clone().into());
        }
        m.insert("error-message".into(), self.message.clone().into());
        serde_json::Value::Object(m)
    }
}

/// An error reply: a status and one or more errors.
#[derive(Clone, Debug)]
pub struct RestError {
    pub status: StatusCode,
    pub errors: Vec<ErrorEntry>,
    /// The first error's message (for logs and tests).
    pub message: String,
    /// `Allow` for 405 replies.
    pub allow: Option<&'static str>,
    /// A write found the store moved on from the revision it was checked
    /// at (its preconditions, the tracker's account): it is tried again.
    pub(crate) moved: bool,
}

impl RestError {
    pub fn new(status: StatusCode, etype: &'static str, tag: &'static str, message: impl Into<String>) -> RestError {
        let message = message.into();
        RestError {
            status,
            errors: vec![ErrorEntry { etype, tag, path: None, message: message.clone() }],
            message,
            allow: None,
            moved: false,
        }
    }

    /// A write's commit found the store moved on from the revision it was
    /// checked at (`e`, a conflict).
    pub(crate) fn moved(e: canopy::Error) -> RestError {
        RestError { moved: true, ..RestError::from(e) }
    }

    /// Attaches an `error-path` to the (first) error.
    pub fn at(mut self, path: impl Into<String>) -> RestError {
        if let Some(e) = self.errors.first_mut() {
            e.path = Some(path.into());
        }
        self
    }

    pub fn bad_path(raw: &str, why: impl std::fmt::Display) -> RestError {
        RestError::new(
            StatusCode::BAD_REQUEST,
            "protocol",
            "invalid-value",
            format!("invalid resource path `/{raw}`: {why}"),
        )
    }

    pub fn unknown_node(raw: &str, schema_path: &str) -> RestError {
        RestError::new(
            StatusCode::BAD_REQUEST,
            "protocol",
            "unknown-element",
            format!("invalid resource path `/{raw}`: the schema has no data node {schema_path}"),
        )
    }

    pub fn malformed(message: impl Into<String>) -> RestError {
        RestError::new(StatusCode::BAD_REQUEST, "protocol", "malformed-message", message)
    }

    pub fn invalid(message: impl Into<String>) -> RestError {
        RestError::new(StatusCode::BAD_REQUEST, "protocol", "invalid-value", message)
    }

    pub fn not_found(path: &str) -> RestError {
        RestError::new(StatusCode::NOT_FOUND, "protocol", "invalid-value", format!("no data at {path}")).at(path)
    }

    pub fn method_not_allowed(method: &str, allow: &'static str) -> RestError {
        let mut e = RestError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "protocol",
            "operation-not-supported",
            format!("{method} is not allowed on this resource (allowed: {allow})"),
        );
        e.allow = Some(allow);
        e
    }

    pub fn internal(message: impl Into<String>) -> RestError {
        RestError::new(StatusCode::INTERNAL_SERVER_ERROR, "application", "operation-failed", message)
    }

    /// The reply to a library error.
    pub fn from_canopy(e: canopy::Error) -> RestError {
        use canopy::Error as E;
        use canopy_core::Error as D;
        let msg = e.to_string();
        let app = "application";
        match e {
            E::Data(D::Path { .. }) => RestError::new(StatusCode::BAD_REQUEST, "protocol", "invalid-value", msg),
            E::Data(D::Json { .. }) => RestError::malformed(msg),
            // RFC 8040 section 7 pairs data-missing with 409; a missing
            // target is 404, which goes with invalid-value (as for GET).
            E::Data(D::NotFound { path }) => {
                RestError::new(StatusCode::NOT_FOUND, "protocol", "invalid-value", msg).at(path)
            }
            E::Data(D::Exists { path }) => RestError::new(StatusCode::CONFLICT, app, "data-exists", msg).at(path),
            E::Data(D::Value { path, .. } | D::Invalid { path, .. }) => {
                RestError::new(StatusCode::BAD_REQUEST, app, "invalid-value", msg).at(path)
            }
            E::Invalid(violations) => {
                let errors: Vec<ErrorEntry> = violations
                    .iter()
                    .map(|v| ErrorEntry {
                        etype: app,
                        tag: "invalid-value",
                        path: Some(v.path.clone()),
                        message: v.reason.clone(),
                    })
                    .collect();
                RestError { status: StatusCode::BAD_REQUEST, errors, message: msg, allow: None, moved: false }
            }
            E::Rejected { .. } => RestError::new(StatusCode::BAD_REQUEST, app, "operation-failed", msg),
            E::Locked(_) => RestError::new(StatusCode::CONFLICT, "protocol", "lock-denied", msg),
            E::Usage(_) | E::Schema(_) => RestError::new(StatusCode::BAD_REQUEST, app, "invalid-value", msg),
            E::Output(_) => RestError::internal(msg),
            E::Store(s) => match s.kind() {
                ErrorKind::Conflict => RestError::new(StatusCode::CONFLICT, app, "in-use", msg),
                ErrorKind::Unavailable => RestError::new(StatusCode::SERVICE_UNAVAILABLE, app, "resource-denied", msg),
                ErrorKind::NoSpace => RestError::new(StatusCode::INSUFFICIENT_STORAGE, app, "resource-denied", msg),
                ErrorKind::NotFound => RestError::new(StatusCode::NOT_FOUND, "protocol", "invalid-value", msg),
                _ => RestError::internal(msg),
            },
            _ => RestError::internal(msg),
        }
    }

    /// The `ietf-restconf:errors` document.
    pub fn body(&self) -> String {
        let errors: Vec<serde_json::Value> = self.errors.iter().map(ErrorEntry::to_json).collect();
        let doc = serde_json::json!({ "ietf-restconf:errors": { "error": errors } });
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    }
}

impl From<canopy::Error> for RestError {
    fn from(e: canopy::Error) -> RestError {
        RestError::from_canopy(e)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let mut r = (self.status, self.body()).into_response();
        r.headers_mut().insert("content-type", HeaderValue::from_static(crate::YANG_JSON));
        if let Some(a) = self.allow {
            r.headers_mut().insert("allow", HeaderValue::from_static(a));
        }
        r
    }
}
