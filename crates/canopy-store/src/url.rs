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
    /// `text` with its password replaced by `***`: what messages show.
    shown: String,
}

impl StoreUrl {
    /// Parses a store URL.
    ///
    /// # Errors
    /// `InvalidUrl` naming what is wrong: empty, an empty location, a bad scheme,
    /// a parameter without `=`, a repeated parameter.
    pub fn parse(text: &str) -> Result<StoreUrl> {
        let shown = redact(text);
        let bad = |why: &str| StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{shown}`: {why}"));
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
        Ok(StoreUrl { scheme, location, params, text: text.to_string(), shown })
    }

    /// The URL as given (with its password, if it has one).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The URL with its password replaced by `***`: the form every message
    /// and every display shows.
    pub fn redacted(&self) -> &str {
        &self.shown
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
                    format!(
                        "invalid store URL `{}`: unknown parameter `{k}` (known: {})",
                        self.shown,
                        known.join(", ")
                    ),
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
                StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {e}", self.shown))
            }),
        }
    }

    /// The `mode` parameter: the permissions of files the store creates
    /// (default `0600`; directories get search bits where the mode reads).
    ///
    /// # Errors
    /// `InvalidUrl` for a mode that is not octal read/write bits with the
    /// owner's read and write.
    pub fn file_mode(&self) -> Result<crate::files::FileMode> {
        match self.params.get("mode") {
            None => Ok(crate::files::FileMode::default()),
            Some(s) => s.parse().map_err(|e: String| {
                StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {e}", self.shown))
            }),
        }
    }

    /// The `lock_timeout` parameter: how long a writer waits for another
    /// process's lock (`5s` by default; `250ms`, `2s`, `0` to not wait).
    ///
    /// # Errors
    /// `InvalidUrl` for a duration that does not parse.
    pub fn lock_timeout(&self, default: std::time::Duration) -> Result<std::time::Duration> {
        self.duration("lock_timeout", default)
    }

    /// The duration parameter `name` (`5s`, `250ms`, `0`), or `default`.
    ///
    /// # Errors
    /// `InvalidUrl` for a duration that does not parse.
    pub fn duration(&self, name: &str, default: std::time::Duration) -> Result<std::time::Duration> {
        let Some(s) = self.params.get(name) else { return Ok(default) };
        parse_duration(s).ok_or_else(|| {
            StoreError::new(
                ErrorKind::InvalidUrl,
                format!("invalid store URL `{}`: {name} `{s}`: expected a duration such as 5s, 250ms or 0", self.shown),
            )
        })
    }
}

/// `text` with the password of its authority (`//user:PASSWORD@host`) and the
/// value of a `password=` parameter replaced by `***`.
fn redact(text: &str) -> String {
    let (main, query) = match text.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (text, None),
    };
    let mut out = String::with_capacity(text.len());
    match main.find("//") {
        Some(at) => {
            let rest = &main[at + 2..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let authority = &rest[..authority_end];
            out.push_str(&main[..at + 2]);
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    match userinfo.split_once(':') {
                        Some((user, _)) => out.push_str(&format!("{user}:***")),
                        None => out.push_str(userinfo),
                    }
                    out.push('@');
                    out.push_str(host);
                }
                None => out.push_str(authority),
            }
            out.push_str(&rest[authority_end..]);
        }
        None => out.push_str(main),
    }
    if let Some(q) = query {
        out.push('?');
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}

/// `250ms`, `5s`, `1.5s` or a bare number of seconds.
fn parse_duration(s: &str) -> Option<std::time::Duration> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0 && v * scale < 86_400.0).then(|| std::time::Duration::from_secs_f64(v * scale))
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
        let d = std::time::Duration::from_secs(5);
        let timeout = |u: &str| StoreUrl::parse(u).unwrap().lock_timeout(d);
        assert_eq!(timeout("json:x").unwrap(), d);
        assert_eq!(timeout("json:x?lock_timeout=250ms").unwrap(), std::time::Duration::from_millis(250));
        assert_eq!(timeout("json:x?lock_timeout=2").unwrap(), std::time::Duration::from_secs(2));
        assert_eq!(timeout("json:x?lock_timeout=0").unwrap(), std::time::Duration::ZERO);
        for bad in ["json:x?lock_timeout=-1s", "json:x?lock_timeout=soon", "json:x?lock_timeout=1e9"] {
            assert_eq!(timeout(bad).unwrap_err().kind(), ErrorKind::InvalidUrl, "{bad}");
        }
        assert_eq!(StoreUrl::parse("lmdb:x?mode=0640").unwrap().file_mode().unwrap().0, 0o640);
        assert!(StoreUrl::parse("lmdb:x?mode=0777").unwrap().file_mode().is_err());
    }

    #[test]
    fn passwords_are_never_shown() {
        let u = StoreUrl::parse("postgres://me:s3cret@127.0.0.1:5432/db?schema=a").unwrap();
        assert_eq!(u.redacted(), "postgres://me:***@127.0.0.1:5432/db?schema=a");
        assert_eq!(u.as_str(), "postgres://me:s3cret@127.0.0.1:5432/db?schema=a");
        assert_eq!(StoreUrl::parse("redis://:pw@h:1/0").unwrap().redacted(), "redis://:***@h:1/0");
        assert_eq!(StoreUrl::parse("redis://u@h/0").unwrap().redacted(), "redis://u@h/0");
        assert_eq!(StoreUrl::parse("lmdb:./a@b:c").unwrap().redacted(), "lmdb:./a@b:c");
        assert_eq!(
            StoreUrl::parse("etcd://h:1?password=x&prefix=p").unwrap().redacted(),
            "etcd://h:1?password=***&prefix=p"
        );
        for bad in ["postgres://me:s3cret@h/db?x", "postgres://me:s3cret@h/db?a=1&a=2"] {
            let e = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("s3cret") && e.contains("me:***@h"), "{e}");
        }
        let e = StoreUrl::parse("postgres://me:s3cret@h/db?sync=no").unwrap().sync_mode().unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
        let e = StoreUrl::parse("postgres://me:s3cret@h/db?z=1").unwrap().check_params(&[]).unwrap_err().to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
