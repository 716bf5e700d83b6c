//! RESTCONF query parameters (RFC 8040, section 4.8; `with-origin` of RFC
//! 8527): parsed once, each at most once, refused where they do not apply.

use canopy::WithDefaults;
use percent_encoding::percent_decode_str;

use crate::error::RestError;
use crate::fields::Fields;

/// `content`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Content {
    #[default]
    All,
    Config,
    NonConfig,
}

/// `insert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InsertAt {
    First,
    Last,
    Before,
    After,
}

/// The query parameters of one request.
#[derive(Debug, Default)]
pub struct Params {
    pub content: Content,
    /// `depth`: `None` for unbounded.
    pub depth: Option<usize>,
    pub fields: Option<Fields>,
    pub filter: Option<String>,
    pub insert: Option<InsertAt>,
    /// `point`: an api-path, percent-decoded once (as the URI carried it).
    pub point: Option<String>,
    pub with_defaults: Option<WithDefaults>,
    /// `with-defaults=report-all-tagged`.
    pub tagged: bool,
    pub with_origin: bool,
}

/// Which parameters a request may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    Read,
    Create,
    Replace,
    Other,
}

impl Params {
    /// Parses a query string.
    ///
    /// # Errors
    /// 400 `invalid-value` for an unknown or repeated parameter, a value out
    /// of range, or a parameter the method does not take.
    pub fn parse(query: Option<&str>, using: Use) -> Result<Params, RestError> {
        let mut p = Params::default();
        let mut seen: Vec<String> = Vec::new();
        for pair in query.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let key = decode(k)?;
            let value = decode(v)?;
            if seen.contains(&key) {
                return Err(RestError::invalid(format!("query parameter `{key}` is given more than once")));
            }
            seen.push(key.clone());
            let allowed = match key.as_str() {
                "content" | "depth" | "fields" | "with-defaults" | "with-origin" | "filter" => using == Use::Read,
                "insert" | "point" => matches!(using, Use::Create | Use::Replace),
                _ => return Err(RestError::invalid(format!("unknown query parameter `{key}`"))),
            };
            if !allowed {
                return Err(RestError::invalid(format!("query parameter `{key}` does not apply to this request")));
            }
            let bad = |what: &str| RestError::invalid(format!("query parameter `{key}`: `{value}` {what}"));
            match key.as_str() {
                "content" => {
                    p.content = match value.as_str() {
                        "all" => Content::All,
                        "config" => Content::Config,
                        "nonconfig" => Content::NonConfig,
                        _ => return Err(bad("is not all, config or nonconfig")),
                    }
                }
                "depth" => {
                    p.depth = match value.as_str() {
                        "unbounded" => None,
                        n => match n.parse::<usize>() {
                            Ok(d @ 1..=65535) => Some(d),
                            _ => return Err(bad("is not unbounded or a number from 1 to 65535")),
                        },
                    }
                }
                "fields" => p.fields = Some(Fields::parse(&value).map_err(|e| bad(&e))?),
                "filter" => {
                    if value.is_empty() {
                        return Err(bad("is empty"));
                    }
                    p.filter = Some(value);
                }
                "insert" => {
                    p.insert = Some(match value.as_str() {
                        "first" => InsertAt::First,
                        "last" => InsertAt::Last,
                        "before" => InsertAt::Before,
                        "after" => InsertAt::After,
                        _ => return Err(bad("is not first, last, before or after")),
                    })
                }
                "point" => p.point = Some(value),
                "with-defaults" => match value.as_str() {
                    "report-all" => p.with_defaults = Some(WithDefaults::ReportAll),
                    "trim" => p.with_defaults = Some(WithDefaults::Trim),
                    "explicit" => p.with_defaults = Some(WithDefaults::Explicit),
                    "report-all-tagged" => {
                        p.with_defaults = Some(WithDefaults::ReportAll);
                        p.tagged = true;
                    }
                    _ => return Err(bad("is not report-all, report-all-tagged, trim or explicit")),
                },
                "with-origin" => {
                    if !value.is_empty() {
                        return Err(bad("takes no value"));
                    }
                    p.with_origin = true;
                }
                _ => {}
            }
        }
        match (p.insert, &p.point) {
            (Some(InsertAt::Before | InsertAt::After), None) => {
                Err(RestError::invalid("query parameter `insert=before|after` needs `point`").into_missing())
            }
            (Some(InsertAt::First | InsertAt::Last) | None, Some(_)) => {
                Err(RestError::invalid("query parameter `point` applies only with `insert=before` or `insert=after`"))
            }
            _ => Ok(p),
        }
    }
}

impl RestError {
    /// The error of a missing parameter (`missing-attribute`).
    fn into_missing(mut self) -> RestError {
        if let Some(e) = self.errors.first_mut() {
            e.tag = "missing-attribute";
        }
        self
    }
}

fn decode(s: &str) -> Result<String, RestError> {
    crate::uri::check_percent(s).map_err(|e| RestError::invalid(format!("query: {e}")))?;
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| RestError::invalid(format!("query `{s}` is not UTF-8 once decoded")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_parse_and_bad_ones_are_refused() {
        let p = Params::parse(Some("depth=2&content=config&with-defaults=trim"), Use::Read).unwrap();
        assert_eq!((p.depth, p.content, p.with_defaults), (Some(2), Content::Config, Some(WithDefaults::Trim)));
        for (q, using, why) in [
            ("depth=0", Use::Read, "from 1 to 65535"),
            ("depth=2&depth=3", Use::Read, "more than once"),
            ("frob=1", Use::Read, "unknown query parameter"),
            ("insert=first", Use::Read, "does not apply"),
            ("insert=before", Use::Create, "needs `point`"),
            ("content=some", Use::Read, "not all, config"),
        ] {
            let e = Params::parse(Some(q), using).unwrap_err();
            assert!(e.message.contains(why), "{q}: {}", e.message);
            assert_eq!(e.status, 400);
        }
        assert!(Params::parse(Some("insert=after&point=%2Fm%3Aa%2Fl%3D1"), Use::Create).is_ok());
    }
}
