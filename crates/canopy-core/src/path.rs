//! Paths: canonical instance identifiers (this module) and the XPath subset for
//! reads ([`query`]).
//!
//! Canonical text form: `/m:cont/lst[k1='1'][k2='a']/l`, leaf-list entries
//! `/m:ll[.='v']`, keyless list entries by 1-based position `/m:lst[3]`. A name
//! carries its module prefix only where the module changes (RFC 7951 §6.11).
//! Literals use single quotes unless the value holds one, then double quotes; a
//! value holding both quote kinds doubles the quote that delimits it (`'it''s'`),
//! as XPath 2.0 does. `Display` and `FromStr` round-trip.

pub mod eval;
pub mod query;
mod syntax;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::tree::Name;

/// What picks one instance among siblings of the same name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Selector {
    /// A container, leaf, leaf-list or list as a whole.
    None,
    /// A list entry by its key values, `(key name, value text)` in key order.
    Keys(Vec<(Name, String)>),
    /// A leaf-list entry by its value: `[.='v']`.
    Value(String),
    /// A keyless list entry by 1-based position: `[3]`.
    Position(u64),
}

/// One step of an instance identifier.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Segment {
    /// Canonical name (module prefix only where the module changes).
    pub name: Name,
    pub selector: Selector,
}

/// An instance identifier: a path from the root to one data node. The empty path
/// (`/`) is the datastore root.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Path {
    pub segments: Vec<Segment>,
}

impl Path {
    /// The datastore root, `/`.
    pub fn root() -> Path {
        Path { segments: Vec::new() }
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The path without its last segment; the root's parent is `None`.
    pub fn parent(&self) -> Option<Path> {
        let n = self.segments.len();
        (n > 0).then(|| Path { segments: self.segments[..n - 1].to_vec() })
    }

    /// The last segment, unless this is the root.
    pub fn last(&self) -> Option<&Segment> {
        self.segments.last()
    }

    /// This path extended by a child segment.
    pub fn child(&self, name: impl Into<Name>, selector: Selector) -> Path {
        let mut segments = self.segments.clone();
        segments.push(Segment { name: name.into(), selector });
        Path { segments }
    }

    /// Whether `self` is `other` or one of its ancestors.
    pub fn is_prefix_of(&self, other: &Path) -> bool {
        self.segments.len() <= other.segments.len() && self.segments[..] == other.segments[..self.segments.len()]
    }

    /// The module of the last segment (inherited from ancestors where the name
    /// has no prefix); `None` for schemaless names without any module.
    pub fn module(&self) -> Option<&str> {
        self.segments.iter().rev().find_map(|s| s.name.split_once(':').map(|(m, _)| m))
    }

    /// The schema path: the names only, without selectors (`/m:cont/lst/l`).
    pub fn schema_path(&self) -> String {
        let mut s = String::new();
        for seg in &self.segments {
            s.push('/');
            s.push_str(&seg.name);
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }
}

/// Canonicalises `name` written under a parent in module `parent_module`: the
/// prefix is dropped when it equals the parent's module.
pub fn canonical_name(name: &str, parent_module: Option<&str>) -> Name {
    match name.split_once(':') {
        Some((m, local)) if Some(m) == parent_module => local.to_string(),
        _ => name.to_string(),
    }
}

/// Whether `s` is a valid node name: `identifier` or `prefix:identifier`, where
/// an identifier is `[A-Za-z_][A-Za-z0-9_.-]*` (YANG's rule).
pub fn is_valid_name(s: &str) -> bool {
    fn ident(s: &str) -> bool {
        let mut c = s.chars();
        matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
            && c.all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-'))
    }
    match s.split_once(':') {
        Some((p, l)) => ident(p) && ident(l),
        None => ident(s),
    }
}

/// Writes `v` as a quoted literal in the canonical way (see the module doc).
pub fn write_literal(out: &mut String, v: &str) {
    let q = if !v.contains('\'') {
        '\''
    } else if !v.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(q);
    for ch in v.chars() {
        if ch == q {
            out.push(q);
        }
        out.push(ch);
    }
    out.push(q);
}

impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(self.name.len() + 16);
        s.push_str(&self.name);
        match &self.selector {
            Selector::None => {}
            Selector::Keys(keys) => {
                for (k, v) in keys {
                    s.push('[');
                    s.push_str(k);
                    s.push('=');
                    write_literal(&mut s, v);
                    s.push(']');
                }
            }
            Selector::Value(v) => {
                s.push_str("[.=");
                write_literal(&mut s, v);
                s.push(']');
            }
            Selector::Position(p) => {
                s.push('[');
                s.push_str(&p.to_string());
                s.push(']');
            }
        }
        f.write_str(&s)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("/");
        }
        for seg in &self.segments {
            write!(f, "/{seg}")?;
        }
        Ok(())
    }
}

impl FromStr for Path {
    type Err = Error;

    /// Parses an instance identifier. Predicates are key equalities
    /// (`[k='v']`, also `[k="v"]`, `[k = 'v']`, CPS-style `[@k='v']`), `[.='v']`
    /// or a position `[N]`. Module prefixes equal to the parent's are dropped.
    ///
    /// # Errors
    /// [`Error::Path`] naming the byte position of the first thing that is wrong.
    fn from_str(s: &str) -> Result<Path> {
        query::Query::parse_instance(s)
    }
}
