//! Conditional requests (RFC 9110, section 13): `If-Match`, `If-None-Match`,
//! `If-Unmodified-Since` and `If-Modified-Since` against a resource's stamp.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, StatusCode};

use crate::error::RestError;
use crate::track::Stamp;

/// What the conditions of a request decide.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Proceed,
    /// A read whose copy is current: 304.
    NotModified,
}

/// Whether a request has any condition (so the resource's existence and
/// stamp must be known before it runs).
pub fn any(headers: &HeaderMap) -> bool {
    ["if-match", "if-none-match", "if-unmodified-since", "if-modified-since"].iter().any(|h| headers.contains_key(*h))
}

/// Evaluates the conditions of a request on a resource with `stamp` that
/// `exists` (or not). `read`: a GET or HEAD.
///
/// # Errors
/// 412 `operation-failed`… a failed condition of a write (or of a read's
/// `If-Match`/`If-Unmodified-Since`); 400 for a malformed header.
pub fn evaluate(headers: &HeaderMap, stamp: Stamp, exists: bool, read: bool) -> Result<Outcome, RestError> {
    let failed = |why: String| RestError::new(StatusCode::PRECONDITION_FAILED, "protocol", "operation-failed", why);
    let etag = stamp.etag();
    if let Some(v) = header(headers, "if-match")? {
        if !matches_list(&v, &etag, exists) {
            return Err(failed(format!("If-Match {v} does not match: the resource is {}", describe(exists, &etag))));
        }
    } else if let Some(v) = header(headers, "if-unmodified-since")? {
        if let Ok(since) = httpdate::parse_http_date(&v) {
            if exists && seconds(stamp.time) > seconds(since) {
                return Err(failed(format!(
                    "If-Unmodified-Since {v}: the resource changed at {}",
                    httpdate::fmt_http_date(stamp.time)
                )));
            }
        }
    }
    if let Some(v) = header(headers, "if-none-match")? {
        if matches_list(&v, &etag, exists) {
            return match read {
                true => Ok(Outcome::NotModified),
                false => Err(failed(format!("If-None-Match {v} matches: the resource is {}", describe(exists, &etag)))),
            };
        }
    } else if let (true, Some(v)) = (read, header(headers, "if-modified-since")?) {
        if let Ok(since) = httpdate::parse_http_date(&v) {
            if exists && seconds(stamp.time) <= seconds(since) {
                return Ok(Outcome::NotModified);
            }
        }
    }
    Ok(Outcome::Proceed)
}

fn describe(exists: bool, etag: &str) -> String {
    match exists {
        true => format!("at {etag}"),
        false => "absent".to_string(),
    }
}

/// Whether a list of entity tags (`*`, or `"a", W/"b"`) matches.
fn matches_list(list: &str, etag: &str, exists: bool) -> bool {
    if list.trim() == "*" {
        return exists;
    }
    exists && list.split(',').map(|t| t.trim().trim_start_matches("W/")).any(|t| t == etag)
}

fn header(headers: &HeaderMap, name: &str) -> Result<Option<String>, RestError> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.to_string()))
            .map_err(|_| RestError::invalid(format!("header {name} is not text"))),
    }
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: &'static str, v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, v.parse().unwrap());
        h
    }

    #[test]
    fn entity_tags_decide() {
        let stamp = Stamp { revision: 7, time: SystemTime::now() };
        assert_eq!(evaluate(&with("if-match", "\"7\""), stamp, true, false).unwrap(), Outcome::Proceed);
        assert_eq!(evaluate(&with("if-match", "\"6\", \"7\""), stamp, true, false).unwrap(), Outcome::Proceed);
        assert_eq!(evaluate(&with("if-match", "\"6\""), stamp, true, false).unwrap_err().status, 412);
        assert_eq!(evaluate(&with("if-match", "*"), stamp, false, false).unwrap_err().status, 412);
        assert_eq!(evaluate(&with("if-none-match", "*"), stamp, true, false).unwrap_err().status, 412);
        assert_eq!(evaluate(&with("if-none-match", "*"), stamp, false, false).unwrap(), Outcome::Proceed);
        assert_eq!(evaluate(&with("if-none-match", "\"7\""), stamp, true, true).unwrap(), Outcome::NotModified);
        let old = httpdate::fmt_http_date(SystemTime::now() - Duration::from_secs(3600));
        assert_eq!(evaluate(&with("if-unmodified-since", &old), stamp, true, false).unwrap_err().status, 412);
        assert_eq!(evaluate(&with("if-modified-since", &old), stamp, true, true).unwrap(), Outcome::Proceed);
    }
}
