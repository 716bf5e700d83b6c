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

/// The most steps one location path may have (an instance path, a query, or a
/// relative path inside a predicate); a longer one is refused at the byte
/// position of the first step too many. It equals the JSON codec's nesting
/// limit ([`crate::json::MAX_DEPTH`]), so neither paths nor documents build
/// trees deeper than the recursive tree code (building, writing, dropping)
/// handles: at most twice this many levels, a path with a document below it.
pub const MAX_STEPS: usize = 128;

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
    Keys(Vec<(Name, crate::value::Text)>),
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
    /// Whether `self` and `other` name entries of the same list by keys.
    pub fn same_keyed_list(&self, other: &Path) -> bool {
        match (self.segments.split_last(), other.segments.split_last()) {
            (Some((x, xs)), Some((y, ys))) => {
                matches!((&x.selector, &y.selector), (Selector::Keys(_), Selector::Keys(_)))
                    && x.name == y.name
                    && xs == ys
            }
            _ => false,
        }
    }

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

    /// The length of [`Path::schema_path`], to size its buffers.
    pub fn schema_path_len(&self) -> usize {
        self.segments.iter().map(|s| s.name.len() + 1).sum::<usize>().max(1)
    }

    /// The length of this path's storage key (names and key values encoded
    /// as [`crate::keycode`] does), but for escaped NUL bytes: sizes key
    /// buffers so that they are not grown while the key is written.
    pub fn key_len_hint(&self) -> usize {
        self.segments
            .iter()
            .map(|s| {
                s.name.len()
                    + 2
                    + match &s.selector {
                        Selector::Keys(kv) => kv.iter().map(|(_, v)| (v.len() + 3).max(9)).sum(),
                        Selector::None | Selector::Value(_) | Selector::Position(_) => 0,
                    }
            })
            .sum()
    }

    /// The schema path: the names only, without selectors (`/m:cont/lst/l`).
    pub fn schema_path(&self) -> String {
        let mut s = String::with_capacity(self.schema_path_len());
        self.push_schema_path(&mut s);
        s
    }

    /// Appends [`Path::schema_path`] to `s`.
    pub fn push_schema_path(&self, s: &mut String) {
        let start = s.len();
        for seg in &self.segments {
            s.push('/');
            s.push_str(&seg.name);
        }
        if s.len() == start {
            s.push('/');
        }
    }
}

/// Canonicalises `name` written under a parent in module `parent_module`: the
/// prefix is dropped when it equals the parent's module.
pub fn canonical_name(name: &str, parent_module: Option<&str>) -> Name {
    match name.split_once(':') {
        Some((m, local)) if Some(m) == parent_module => local.into(),
        _ => name.into(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> Path {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn seg(name: &str, selector: Selector) -> Segment {
        Segment { name: name.into(), selector }
    }

    fn keys(kv: &[(&str, &str)]) -> Selector {
        Selector::Keys(kv.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect())
    }

    #[test]
    fn parses_instance_identifiers() {
        assert_eq!(p("/"), Path::root());
        let want = Path {
            segments: vec![
                seg("m:cont", Selector::None),
                seg("lst", keys(&[("k1", "1"), ("k2", "a")])),
                seg("x:ll", Selector::Value("v".into())),
            ],
        };
        for s in [
            "/m:cont/lst[k1='1'][k2='a']/x:ll[.='v']",
            "/m:cont/m:lst[k1='1' and k2='a']/x:ll[.=\"v\"]",
            "/m:cont/lst[@k1='1'][ @m:k2 = \"a\" ]/x:ll[.='v']",
            "/m:cont/lst[k1='1'][ 'a'=k2 ]/x:ll[ . = 'v' ]",
        ] {
            assert_eq!(p(s), want, "{s}");
        }
        assert_eq!(p("/a/lst[3]/b").segments[1], seg("lst", Selector::Position(3)));
        // Keys stay as written; a prefix equal to the list's module is dropped.
        assert_eq!(p("/m:l[m:b='2'][a='1']").segments[0].selector, keys(&[("b", "2"), ("a", "1")]));
        // The first segment keeps its prefix; unprefixed names are fine anywhere.
        assert_eq!(p("/m:a/m:b/c/x:d/x:e").to_string(), "/m:a/b/c/x:d/e");
        assert_eq!(p("/a/b").to_string(), "/a/b");
        assert_eq!(p("/l[k=5]").segments[0].selector, keys(&[("k", "5")]));
    }

    #[test]
    fn malformed_paths_point_at_the_problem() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 0, "empty"),
            ("a/b", 0, "starts with `/`"),
            ("/a/*", 3, "`*` is not allowed"),
            ("/a/*/b", 3, "`*` is not allowed"),
            ("/a//b", 2, "`//` is not allowed"),
            ("//b", 0, "`//` is not allowed"),
            ("/a/../b", 3, "`..` is not allowed"),
            ("/a/./b", 3, "`.` is not allowed"),
            ("/a/l[k!='v']", 4, "only key equalities"),
            ("/a/l[k>'5']", 4, "only key equalities"),
            ("/a/l[k='1' or k='2']", 4, "only key equalities"),
            ("/a/l[k='1'][k]", 11, "only key equalities"),
            ("/a/l[x/k='1']", 4, "only key equalities"),
            ("/a/l[k=j]", 4, "only key equalities"),
            ("/a/l[k='1'][2]", 11, "position"),
            ("/a/l[2][k='1']", 7, "position"),
            ("/a/l[k='1'][k='2']", 11, "key `k` is given twice"),
            ("/a/ll[.='1'][.='2']", 12, "leaf-list entry"),
            ("/a/l[k='1']/x[.='v'][k='2']", 20, "leaf-list entry"),
            ("/a/l[k='1]", 7, "unterminated string literal"),
            ("/a/l[k='1'", 10, "expected `]`"),
            ("/a/l[k='1' k2='2']", 11, "expected `]`"),
            ("/a/", 3, "expected a name"),
            ("/a/b#", 4, "unexpected character `#`"),
            ("/a/b/", 5, "expected a name"),
            ("/a[k='1']]", 9, "unexpected character `]`"),
            ("/a[]", 2, "empty predicate"),
            ("/a[0]", 3, "position"),
            ("/m:/b", 3, "empty name"),
            ("/a[k= ]", 6, "expected a value"),
            ("/a/ü", 3, "unexpected character `ü`"),
        ];
        assert!(cases.len() >= 20);
        for &(input, pos, needle) in cases {
            match input.parse::<Path>() {
                Err(Error::Path { input: i, pos: got, reason }) => {
                    assert_eq!(i, input);
                    assert_eq!(got, pos, "{input}: {reason}");
                    assert!(reason.contains(needle), "{input}: {reason:?} lacks {needle:?}");
                }
                other => panic!("{input} parsed: {other:?}"),
            }
        }
    }

    fn ident() -> impl Strategy<Value = String> {
        "[A-Za-z_][A-Za-z0-9_.-]{0,6}".prop_filter("not a keyword clash", |s| is_valid_name(s))
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), "[ '\"\\]\\[/=a-c é]{0,8}"]
    }

    /// Arbitrary canonical paths: a prefix is kept only where the module changes.
    fn path() -> impl Strategy<Value = Path> {
        let segment = (
            proptest::option::of(prop_oneof![Just("m".to_string()), Just("x".to_string()), ident()]),
            ident(),
            prop_oneof![
                Just(Selector::None),
                proptest::collection::vec((ident(), value()), 1..4).prop_map(|kv| {
                    // Distinct key names, as a list has.
                    let mut seen = std::collections::BTreeSet::new();
                    Selector::Keys(
                        kv.into_iter()
                            .filter(|(k, _)| seen.insert(k.clone()))
                            .map(|(k, v)| (k.into(), v.into()))
                            .collect(),
                    )
                }),
                value().prop_map(Selector::Value),
                (1u64..u64::MAX).prop_map(Selector::Position),
            ],
        );
        proptest::collection::vec(segment, 0..5).prop_map(|segs| {
            let mut path = Path::root();
            for (prefix, local, selector) in segs {
                let written = match prefix {
                    Some(m) => format!("{m}:{local}"),
                    None => local,
                };
                let name = canonical_name(&written, path.module());
                path.segments.push(Segment { name, selector });
            }
            path
        })
    }

    proptest! {
        #[test]
        fn display_and_from_str_round_trip(path in path()) {
            let text = path.to_string();
            let back: Path = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(back, path);
        }
    }
}
