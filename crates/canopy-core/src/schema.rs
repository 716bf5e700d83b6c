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
}
