//! What a schema decides, as a trait: node kinds, list keys and ordering, value
//! types. [`Schemaless`] decides from the data itself and what it has learned;
//! the YANG implementation lives in its own crate.

use std::collections::BTreeMap;

use crate::tree::ListInfo;

/// The kind of a schema node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Container,
    List,
    Leaf,
    LeafList,
    AnyData,
}

/// What the engine asks a schema. Schema paths are names only, canonical, e.g.
/// `/m:cont/lst/l` (see [`crate::Path::schema_path`]).
pub trait Schema: Send + Sync {
    /// The kind of node at this schema path, or `None` when the schema does not
    /// say (always, without a schema, except for learned lists).
    fn kind(&self, schema_path: &str) -> Option<NodeKind>;

    /// Keys and ordering of the list at this schema path, if known.
    fn list_info(&self, schema_path: &str) -> Option<ListInfo>;

    /// Whether the list at this schema path is known to be keyed by the
    /// names of `kv`, in that order (a key predicate written in key order).
    fn keyed_in_order(&self, schema_path: &str, kv: &[(crate::tree::Name, crate::value::Text)]) -> bool {
        self.list_info(schema_path).is_some_and(|i| keys_in_order(&i, kv))
    }

    /// Whether a list is known strictly below this schema path, so that a
    /// value written there may hold a node that must be a list. The default
    /// says yes (the value is checked node by node).
    fn lists_below(&self, schema_path: &str) -> bool {
        let _ = schema_path;
        true
    }

    /// The value a path gives as text: key `key` of the entry at `at` (`[k='1']`),
    /// or, with `key` `None`, the leaf-list entry at `at` (`[.='v']`). A schema
    /// types it (a `uint32` key is a number); without one it is a string.
    fn path_value(&self, at: &crate::Path, key: Option<&str>, text: &str) -> crate::Value {
        let _ = (at, key);
        crate::Value::String(text.into())
    }
}

/// Whether `info` is a keyed list's and `kv` names its keys in their order.
pub fn keys_in_order(info: &ListInfo, kv: &[(crate::tree::Name, crate::value::Text)]) -> bool {
    !info.keys.is_empty() && kv.len() == info.keys.len() && kv.iter().zip(&info.keys).all(|((n, _), k)| n == k)
}

/// No schema: kinds come from the data, list keys from what the store has
/// learned (see `docs/design.md`, "Schemaless lists").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schemaless {
    /// Learned list keys by schema path.
    pub lists: BTreeMap<String, ListInfo>,
}

impl Schema for Schemaless {
    fn kind(&self, schema_path: &str) -> Option<NodeKind> {
        self.lists.contains_key(schema_path).then_some(NodeKind::List)
    }

    fn list_info(&self, schema_path: &str) -> Option<ListInfo> {
        self.lists.get(schema_path).cloned()
    }

    fn keyed_in_order(&self, schema_path: &str, kv: &[(crate::tree::Name, crate::value::Text)]) -> bool {
        self.lists.get(schema_path).is_some_and(|i| keys_in_order(i, kv))
    }

    fn lists_below(&self, schema_path: &str) -> bool {
        // The first name after `schema_path` itself: its descendants sort
        // right behind it (`/` follows the end of the string).
        let below = |k: &String| {
            k.len() > schema_path.len() && k.starts_with(schema_path) && k.as_bytes()[schema_path.len()] == b'/'
        };
        use std::ops::Bound;
        self.lists
            .range::<str, _>((Bound::Excluded(schema_path), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(schema_path))
            .any(|(k, _)| below(k))
    }
}

/// One reason a schema rejects data: the instance path and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub path: String,
    pub reason: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

#[cfg(test)]
mod lists_below_tests {
    use super::*;

    #[test]
    fn lists_below_sees_only_descendants() {
        let mut s = Schemaless::default();
        for p in ["/m:c/lst", "/m:c/lst-x", "/m:c/lst/sub", "/m:d"] {
            s.lists.insert(p.into(), ListInfo::keyed(["k"]));
        }
        assert!(s.lists_below(""));
        assert!(s.lists_below("/m:c"));
        assert!(s.lists_below("/m:c/lst"));
        assert!(!s.lists_below("/m:c/lst-x"));
        assert!(!s.lists_below("/m:c/lst/sub"));
        assert!(!s.lists_below("/m:c/ls"));
        assert!(!s.lists_below("/m:d"));
    }
}
