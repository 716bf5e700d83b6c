//! canopy's data model, with no I/O: node names and values, paths and the XPath
//! subset for reads, the data tree, edits and diffs, the RFC 7951 JSON codec, and
//! the [`Schema`] trait that decides what a schema would (key order, list
//! ordering, value types).

pub mod children;
pub mod diff;
pub mod edit;
pub mod error;
pub mod json;
pub mod keycode;
pub mod meta;
pub mod path;
pub mod schema;
pub mod scratch;
pub mod tree;
pub mod value;

pub use error::{Error, Result};

/// A hash map for the engine's lookups inside one operation (the keys and
/// paths a transaction or read meets): foldhash, seeded at random per
/// process, several times faster than the standard library's SipHash on
/// short byte keys.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The set of [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
pub use path::eval::{select, select_owned};
pub use path::query::Query;
pub use path::{Path, Segment, Selector};
pub use schema::{Schema, Schemaless, Violation};
pub use tree::{Container, Insert, LeafListEntry, List, ListInfo, Name, Node, NodeRef};
pub use value::{Meta, Value, ValueRef};
