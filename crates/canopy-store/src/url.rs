//! Store URLs: `scheme:location?key=value&...`, e.g. `lmdb:./data?sync=off`,
//! `postgres://user@127.0.0.1/db`. A bare path (no scheme) means the default
//! embedded backend.

use std::collections::BTreeMap;

use crate::error::{ErrorKind, Result, StoreError};

/// A parsed store URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreUrl {
    /// The scheme, lower case (`lmdb`, `json`, ...); `None` for a bare path.
    pub scheme: Option<String>,
    /// What follows the scheme, before `?`: a path or `//host:port/...`.
    pub location: String,
    /// Query parameters.
    pub params: BTreeMap<String, String>,
    text: String,
}

impl StoreUrl {
    /// Parses a store URL.
    ///
    /// # Errors
    /// `InvalidUrl` naming what is wrong: empty, an empty location, a bad scheme,
    /// a parameter without `=`, a repeated parameter.
    pub fn parse(text: &str) -> Result<StoreUrl> {
        let bad = |why: &str| StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{text}`: {why}"));
        if text.trim().is_empty() {
            return Err(bad("it is empty"));
        }
        let (main, query) = match text.split_once('?') {
            Some((m, q)) => (m, Some(q)),
            None => (text, None),
        };
        let (scheme, location) = match main.split_once(':') {
            Some((s, rest)) if !s.contains('/') && !s.is_empty() => {
                if !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
                    || !s.starts_with(|c: char| c.is_ascii_alphabetic())
                {
                    return Err(bad(&format!("`{s}` is not a scheme")));
                }
                (Some(s.to_ascii_lowercase()), rest.to_string())
            }
            _ => (None, main.to_string()),
        };
        if location.is_empty() {
            return Err(bad("no location after the scheme"));
        }
        let mut params = BTreeMap::new();
        if let Some(q) = query {
            for pair in q.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').ok_or_else(|| bad(&format!("parameter `{pair}` has no `=`")))?;
                if params.insert(k.to_string(), v.to_string()).is_some() {
                    return Err(bad(&format!("parameter `{k}` given twice")));
                }
            }
        }
        Ok(StoreUrl { scheme, location, params, text: text.to_string() })
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Fails when a parameter outside `known` is present.
    ///
    /// # Errors
    /// `InvalidUrl` naming the unknown parameter and the known ones.
    pub fn check_params(&self, known: &[&str]) -> Result<()> {
        for k in self.params.keys() {
            if !known.contains(&k.as_str()) {
                return Err(StoreError::new(
                    ErrorKind::InvalidUrl,
                    format!("invalid store URL `{}`: unknown parameter `{k}` (known: {})", self.text, known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// The `sync` parameter (default `commit`).
    ///
    /// # Errors
    /// `InvalidUrl` when it is neither `commit` nor `off`.
    pub fn sync_mode(&self) -> Result<crate::SyncMode> {
        match self.params.get("sync") {
            None => Ok(crate::SyncMode::Commit),
            Some(s) => s.parse().map_err(|e: String| {
                StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {e}", self.text))
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let u = StoreUrl::parse("lmdb:./data?sync=off").unwrap();
        assert_eq!(u.scheme.as_deref(), Some("lmdb"));
        assert_eq!(u.location, "./data");
        assert_eq!(u.sync_mode().unwrap(), crate::SyncMode::Off);
        let bare = StoreUrl::parse("./canopy-data").unwrap();
        assert_eq!(bare.scheme, None);
        let pg = StoreUrl::parse("postgres://u@127.0.0.1:5432/db").unwrap();
        assert_eq!(pg.location, "//u@127.0.0.1:5432/db");
        for bad in ["", "lmdb:", "lmdb:x?sync", "lmdb:x?a=1&a=2", "1x:foo", "lm db:x"] {
            let e = StoreUrl::parse(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{bad}");
        }
        assert!(StoreUrl::parse("lmdb:x?sync=maybe").unwrap().sync_mode().is_err());
        assert!(StoreUrl::parse("lmdb:x?syncc=off").unwrap().check_params(&["sync"]).is_err());
    }
}
