//! The leafrefs a store indexes by value: configuration leafrefs that
//! require their target. With the index, removing or changing a target
//! checks only the leafrefs holding its value ([`DataAccess::referrers`]),
//! not every instance of every leafref that can point at it.
//!
//! This module says which leaf instances the index holds and how a
//! transaction's changes move them; the engine stores the records.

use canopy_core::diff::{Change, Subtree};
use canopy_core::path::{Path, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::{Container, Node};

use crate::validate::DataAccess;
use crate::YangSchema;

type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// One indexed leafref instance: a leaf, or one value of a leaf-list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafrefUse {
    /// The leafref's schema path (its identity in the index).
    pub referrer: String,
    /// The instance path of the leaf or leaf-list (without a value selector).
    pub path: Path,
    /// The value held, canonical text.
    pub value: String,
    /// Whether `path` is a leaf-list (`value` is one of its entries).
    pub leaf_list: bool,
}

/// How one change moves the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexChange {
    /// An instance set (created, or changed from `old`).
    Set { now: LeafrefUse, old: Option<String> },
    /// An instance removed.
    Remove(LeafrefUse),
    /// Everything at or below the instance path went (a deleted or erased
    /// container, entry, list or leaf-list): the index's records under it go.
    Clear(Path),
}

impl YangSchema {
    /// An identity of the set of indexed leafrefs (configuration leafrefs
    /// that require their target), stable across compilations of the same
    /// modules; `None` when the schema has none (nothing to index). An index
    /// built for another identity is stale.
    pub fn leafref_index_id(&self) -> Option<u64> {
        self.model.leafref_index
    }

    /// Every indexed leafref instance of the data `data` gives (loading each
    /// leafref's lists whole): what an index is built from.
    ///
    /// # Errors
    /// Errors loading data.
    pub fn leafref_uses(&self, data: &mut dyn DataAccess) -> Result<Vec<LeafrefUse>, LoadError> {
        let mut out = Vec::new();
        for (r, n) in self.model.nodes.iter().enumerate() {
            if !indexed(n) {
                continue;
            }
            for (path, value) in self.instances(&Path::root(), r, data)? {
                let Some(value) = value else { continue };
                out.push(self.use_at(r, path, value.as_text().into_owned()));
            }
        }
        Ok(out)
    }

    /// How `changes` (a transaction's diff, in order) move the index, given
    /// to `f` in the same order.
    pub fn leafref_index_changes(&self, changes: &[Change], f: &mut dyn FnMut(IndexChange)) {
        for c in changes {
            let path = c.path();
            let Some(idx) = self.model.index_of(path) else { continue };
            if !self.model.nodes[idx].indexed_below {
                continue;
            }
            match c {
                Change::Created { node, .. } => match node {
                    Subtree::Node(Node::Container(cc)) | Subtree::Entry(cc) => self.uses_in(path, idx, cc, f),
                    Subtree::Node(Node::List(l)) => {
                        for (i, e) in l.entries().enumerate() {
                            let ep = canopy_core::diff::with_selector(path, canopy_core::diff::entry_selector(l, e, i));
                            self.uses_in(&ep, idx, e, f);
                        }
                    }
                    Subtree::Node(Node::Leaf { value, .. }) => f(IndexChange::Set {
                        now: self.use_at(idx, path.clone(), value.as_text().into_owned()),
                        old: None,
                    }),
                    Subtree::Node(Node::LeafList(v)) => {
                        for e in v {
                            let now = self.use_at(idx, path.clone(), e.value.as_text().into_owned());
                            f(IndexChange::Set { now, old: None });
                        }
                    }
                    Subtree::Value(e) => {
                        let now = self.use_at(idx, without_value(path), e.value.as_text().into_owned());
                        f(IndexChange::Set { now, old: None });
                    }
                    Subtree::Node(Node::AnyData { .. }) => {}
                },
                Change::Deleted { node: Subtree::Node(Node::Leaf { value, .. }), .. } => {
                    f(IndexChange::Remove(self.use_at(idx, path.clone(), value.as_text().into_owned())));
                }
                Change::Deleted { node: Subtree::Value(e), .. } => {
                    f(IndexChange::Remove(self.use_at(idx, without_value(path), e.value.as_text().into_owned())));
                }
                Change::Deleted { .. } | Change::Erased { .. } => f(IndexChange::Clear(path.clone())),
                Change::Modified { old: Node::Leaf { value: ov, .. }, new: Node::Leaf { value: nv, .. }, .. } => {
                    let now = self.use_at(idx, path.clone(), nv.as_text().into_owned());
                    f(IndexChange::Set { now, old: Some(ov.as_text().into_owned()) });
                }
                Change::Modified { .. } | Change::Meta { .. } | Change::Moved { .. } => {}
            }
        }
    }

    /// The indexed leafref instances in a created container or entry.
    fn uses_in(&self, path: &Path, idx: usize, c: &Container, f: &mut dyn FnMut(IndexChange)) {
        let n = &self.model.nodes[idx];
        for (name, child) in &c.children {
            let Some(&ci) = n.children.get(name) else { continue };
            if !self.model.nodes[ci].indexed_below {
                continue;
            }
            let cp = path.child(name.clone(), Selector::None);
            match child {
                Node::Container(cc) => self.uses_in(&cp, ci, cc, f),
                Node::List(l) => {
                    for (i, e) in l.entries().enumerate() {
                        let ep = canopy_core::diff::with_selector(&cp, canopy_core::diff::entry_selector(l, e, i));
                        self.uses_in(&ep, ci, e, f);
                    }
                }
                Node::Leaf { value, .. } => {
                    f(IndexChange::Set { now: self.use_at(ci, cp, value.as_text().into_owned()), old: None })
                }
                Node::LeafList(v) => {
                    for e in v {
                        let now = self.use_at(ci, cp.clone(), e.value.as_text().into_owned());
                        f(IndexChange::Set { now, old: None });
                    }
                }
                Node::AnyData { .. } => {}
            }
        }
    }

    fn use_at(&self, idx: usize, path: Path, value: String) -> LeafrefUse {
        let n = &self.model.nodes[idx];
        LeafrefUse {
            referrer: n.path.clone(),
            path: without_value(&path),
            value,
            leaf_list: n.kind == NodeKind::LeafList,
        }
    }
}

/// The identity of the set of indexed leafrefs of `model` (see
/// [`YangSchema::leafref_index_id`]), computed once when the schema is built.
pub(crate) fn index_id(model: &crate::model::Model) -> Option<u64> {
    let mut paths: Vec<&str> = model.nodes.iter().filter(|n| indexed(n)).map(|n| n.path.as_str()).collect();
    if paths.is_empty() {
        return None;
    }
    paths.sort_unstable();
    // FNV-1a, version 1 of the index's layout folded in.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ 1;
    for p in paths {
        for b in p.bytes().chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    Some(h)
}

/// Whether the schema node is an indexed leafref.
fn indexed(n: &crate::model::SNode) -> bool {
    n.config && n.leafref.is_some_and(|(_, required)| required) && matches!(n.kind, NodeKind::Leaf | NodeKind::LeafList)
}

/// A leaf-list entry's path without its value selector.
fn without_value(path: &Path) -> Path {
    match path.last().map(|s| &s.selector) {
        Some(Selector::Value(_)) => canopy_core::diff::with_selector(path, Selector::None),
        _ => path.clone(),
    }
}
