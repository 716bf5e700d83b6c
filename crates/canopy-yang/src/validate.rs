//! Commit validation scoped to a transaction's changes.
//!
//! Values were checked when edits were normalised; here the constraints that
//! involve other nodes are checked, each only where the changes can affect it:
//! - mandatory nodes in created containers and entries, and in the parent of a
//!   deleted node;
//! - min/max-elements and unique of a list or leaf-list an entry was created in
//!   or deleted from (or, for unique, a leaf of an entry was changed in): the
//!   list is loaded whole, only for lists that have such a constraint;
//! - leafrefs whose leaf was set or whose path predicates' key changed (the
//!   predicates select the target's entry, read by key when they pin it), and
//!   those pointing at a deleted or changed target (those the store's index
//!   lists with the target's value, each read by its fragment, or without an
//!   index the referring list loaded; each hit re-checked with its predicates);
//! - instance-identifiers set, and, when the transaction deletes something,
//!   those whose target lay in a deleted subtree;
//! - must and when of created and changed nodes and of every node whose
//!   expressions read a changed node (libyang's atoms of each expression,
//!   mapped in reverse when the schema is loaded), evaluated by libyang on a
//!   small data tree made of the node, its ancestors and the instances of
//!   what its expressions read that it can see.

use std::collections::{BTreeMap, BTreeSet};

use canopy_core::diff::{Change, Subtree};
use canopy_core::path::{Path, Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::{Container, Name, Node, NodeRef};
use canopy_core::value::Text;
use canopy_core::{Value, Violation};

use crate::YangSchema;

/// Access to the datastore a transaction works on: the tree the engine
/// built (the transaction's result, possibly sparse) and a way to load more
/// of it from the same snapshot.
pub trait DataAccess {
    /// The tree after the transaction's edits.
    fn tree(&self) -> &Container;
    /// Makes sure the node at `path` (a container or list entry) is in the
    /// tree with its leaves; with `whole`, its entire subtree (for a list
    /// path without selector: every entry).
    ///
    /// # Errors
    /// Backend read errors.
    fn load(&mut self, path: &Path, whole: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;

    /// The instances of the leafref at `referrer` (a schema path; see
    /// [`YangSchema::leafref_index_id`] for the leafrefs indexed) that held
    /// `value` before the transaction, from the store's index of them: a
    /// superset (an instance since removed or changed may be listed; those
    /// set by the transaction need not be). `None` when the store keeps no
    /// such index: then every instance is read.
    ///
    /// # Errors
    /// Backend read errors.
    fn referrers(
        &mut self,
        referrer: &str,
        value: &str,
    ) -> Result<Option<Vec<Path>>, Box<dyn std::error::Error + Send + Sync>> {
        let _ = (referrer, value);
        Ok(None)
    }
}

type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// What the changes ask to check, collected first so that each list, scope
/// and target is handled once.
#[derive(Default)]
struct Plan {
    /// Containers / entries (instance path, schema node) whose mandatory
    /// children must be present.
    mandatory: BTreeSet<(String, Path, Option<usize>)>,
    /// Lists and leaf-lists (instance path of the list, schema node) for
    /// min/max-elements and unique.
    lists: BTreeMap<String, (Path, usize)>,
    /// Leafref leaves set: (instance path, schema node, value).
    leafrefs: Vec<(Path, usize, Value)>,
    /// Instance-identifier leaves set: (instance path, value).
    instances: Vec<(Path, Value)>,
    /// Leafref targets removed or changed: (target instance path, schema node, old value).
    targets: Vec<(Path, usize, Value)>,
    /// Nodes whose must/when are to be evaluated.
    exprs: BTreeMap<String, (Path, usize)>,
    /// Nodes whose must/when read a changed node: (instance path under which
    /// their instances are re-evaluated, schema node).
    readers: BTreeMap<(String, usize), Path>,
    /// Leafref predicate keys changed: (the leafrefs' common ancestor with
    /// the key, leafref schema node).
    key_changes: BTreeMap<(String, usize), Path>,
    /// Deleted nodes (for instance-identifiers pointing into them).
    deleted: Vec<Path>,
    /// Violations found while planning (mandatory nodes of created subtrees).
    found: Vec<Violation>,
}

impl YangSchema {
    /// Validates a transaction's `changes` (already applied to `data`'s tree).
    /// Returns every violation found; empty when the transaction is valid.
    ///
    /// # Errors
    /// Errors loading data.
    pub fn validate(&self, changes: &[Change], data: &mut dyn DataAccess) -> Result<Vec<Violation>, LoadError> {
        self.validate_in(changes, data, false)
    }

    /// [`YangSchema::validate`] in a datastore that holds configuration only
    /// (`config_only`: running, startup, candidate): state nodes cannot be
    /// there, so leafrefs, instance-identifiers and must/when expressions of
    /// state nodes are not looked for (deleting an interface does not read
    /// every interface for state leafrefs such as `higher-layer-if`).
    ///
    /// # Errors
    /// Errors loading data.
    pub fn validate_in(
        &self,
        changes: &[Change],
        data: &mut dyn DataAccess,
        config_only: bool,
    ) -> Result<Vec<Violation>, LoadError> {
        // Whether instances of schema node `i` can be in this datastore.
        let present = |i: usize| !config_only || self.model.nodes[i].config;
        let mut plan = Plan::default();
        for c in changes {
            self.plan_change(c, data.tree(), &mut plan);
        }
        let mut out = std::mem::take(&mut plan.found);
        // Leafrefs whose predicate keys changed are checked like those set.
        for ((_, lr), base) in std::mem::take(&mut plan.key_changes) {
            if !self.model.nodes[lr].leafref.is_some_and(|(_, required)| required) || !present(lr) {
                continue;
            }
            for (path, value) in self.instances(&base, lr, data)? {
                if let Some(v) = value {
                    plan.leafrefs.push((path, lr, v));
                }
            }
        }
        // Must/when of nodes that read a changed node.
        for ((_, owner), scope) in std::mem::take(&mut plan.readers) {
            if !present(owner) {
                continue;
            }
            for (path, _) in self.instances(&scope, owner, data)? {
                plan.exprs.entry(path.to_string()).or_insert((path, owner));
            }
        }
        // Instance-identifiers pointing into a deleted subtree.
        if !plan.deleted.is_empty() && !self.model.instance_ids.is_empty() {
            let set: BTreeSet<String> = plan.instances.iter().map(|(p, _)| p.to_string()).collect();
            for &ii in self.model.instance_ids.iter().filter(|&&ii| present(ii)) {
                for (path, value) in self.instances(&Path::root(), ii, data)? {
                    let Some(v) = value else { continue };
                    if set.contains(&path.to_string()) {
                        continue;
                    }
                    let target = v.as_text().parse::<Path>().ok().and_then(|p| self.resolve_path(&p).ok());
                    if target.is_some_and(|(t, _)| plan.deleted.iter().any(|d| under(&t, d))) {
                        plan.instances.push((path, v));
                    }
                }
            }
        }
        let leafref_paths: BTreeSet<String> = plan.leafrefs.iter().map(|(p, _, _)| p.to_string()).collect();
        for (_, path, idx) in std::mem::take(&mut plan.mandatory) {
            self.check_mandatory(&path, idx, data, &mut out)?;
        }
        for (_, (path, idx)) in std::mem::take(&mut plan.lists) {
            self.check_list(&path, idx, data, &mut out)?;
        }
        let mut seen = BTreeSet::new();
        for (path, idx, value) in std::mem::take(&mut plan.leafrefs) {
            if seen.insert(path.to_string()) {
                self.check_leafref(&path, idx, &value, data, &mut out)?;
            }
        }
        for (path, value) in std::mem::take(&mut plan.instances) {
            self.check_instance(&path, &value, data, &mut out)?;
        }
        for gone in std::mem::take(&mut plan.targets) {
            self.check_target_gone(&gone, &leafref_paths, &present, data, &mut out)?;
        }
        self.check_exprs(&plan.exprs, data, &mut out)?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Whether validating the deletion of the node at `schema_path` (with
    /// everything below it) reads what it held: a leafref target, a leafref
    /// predicate's key or a node some must/when reads is at or below it
    /// (counting only checks of configuration nodes when `config_only`). When
    /// not, the engine may erase the subtree unread ([`Change::Erased`]).
    pub fn erase_needs_content(&self, schema_path: &str, config_only: bool) -> bool {
        match self.model.by_path.get(schema_path) {
            Some(&i) if config_only => self.model.nodes[i].watched_below_config,
            Some(&i) => self.model.nodes[i].watched_below,
            None => true,
        }
    }

    fn idx_of(&self, path: &Path) -> Option<usize> {
        self.model.index_of(path)
    }

    fn plan_change(&self, c: &Change, tree: &Container, plan: &mut Plan) {
        let path = c.path();
        let Some(idx) = self.idx_of(path) else { return };
        let n = &self.model.nodes[idx];
        match c {
            Change::Created { node, .. } => {
                // The list's own checks, when it has any (the path built only then).
                if matches!(n.kind, NodeKind::List | NodeKind::LeafList)
                    && (n.min > 0 || n.max.is_some() || !n.uniques.is_empty())
                {
                    let lp = canopy_core::diff::with_selector(path, Selector::None);
                    plan.lists.insert(lp.to_string(), (lp, idx));
                }
                match node {
                    Subtree::Node(Node::Container(cc)) | Subtree::Entry(cc) => {
                        self.plan_subtree(path, idx, cc, plan);
                    }
                    Subtree::Node(Node::List(l)) => {
                        for (i, e) in l.entries().enumerate() {
                            let ep = canopy_core::diff::with_selector(path, canopy_core::diff::entry_selector(l, e, i));
                            self.plan_subtree(&ep, idx, e, plan);
                        }
                    }
                    Subtree::Node(Node::Leaf { value, .. }) => self.plan_leaf(path, idx, None, Some(value), plan),
                    Subtree::Value(e) => self.plan_leaf(path, idx, None, Some(&e.value), plan),
                    Subtree::Node(Node::LeafList(v)) => {
                        for e in v {
                            let ep =
                                canopy_core::diff::with_selector(path, Selector::Value(e.value.as_text().into_owned()));
                            self.plan_leaf(&ep, idx, None, Some(&e.value), plan);
                        }
                    }
                    Subtree::Node(Node::AnyData { .. }) => {
                        self.plan_readers(path, idx, plan);
                        if !n.musts.is_empty() || !n.whens.is_empty() {
                            plan.exprs.insert(path.to_string(), (path.clone(), idx));
                        }
                    }
                }
            }
            Change::Deleted { .. } | Change::Erased { .. } => {
                if matches!(n.kind, NodeKind::List | NodeKind::LeafList) && (n.min > 0 || n.max.is_some()) {
                    let lp = canopy_core::diff::with_selector(path, Selector::None);
                    plan.lists.insert(lp.to_string(), (lp, idx));
                }
                // The parent lost a child: its mandatory nodes.
                if let Some(parent) = path.parent() {
                    if tree.lookup(&parent).is_some() || parent.is_root() {
                        let pidx = self.idx_of(&parent);
                        if !parent.is_root() {
                            plan.mandatory.insert((parent.to_string(), parent, pidx));
                        }
                    }
                }
                // Targets that went away with the subtree, and what read it.
                // An erased subtree was not read: the engine erases only what
                // nothing watches ([`YangSchema::erase_needs_content`]).
                if let Change::Deleted { node, .. } = c {
                    self.plan_removed(path, idx, node, plan);
                }
                plan.deleted.push(path.clone());
            }
            Change::Modified { old, new, .. } => {
                let (Node::Leaf { value: ov, .. }, Node::Leaf { value: nv, .. }) = (old, new) else {
                    // Anydata: only what reads it.
                    self.plan_readers(path, idx, plan);
                    return;
                };
                self.plan_leaf(path, idx, Some(ov), Some(nv), plan);
            }
            Change::Meta { .. } | Change::Moved { .. } => {}
        }
    }

    /// A created container or entry: its mandatory nodes, and everything in it.
    fn plan_subtree(&self, path: &Path, idx: usize, c: &Container, plan: &mut Plan) {
        let n = &self.model.nodes[idx];
        if !n.checked_on_create {
            return;
        }
        // The created subtree is complete (nothing of it was stored before):
        // its mandatory nodes are checked on it directly.
        if n.has_mandatory {
            self.mandatory_in(path, idx, c, &mut plan.found);
        }
        self.plan_readers(path, idx, plan);
        if !n.musts.is_empty() || !n.whens.is_empty() {
            plan.exprs.insert(path.to_string(), (path.clone(), idx));
        }
        for (name, child) in &c.children {
            let Some(&ci) = n.children.get(name) else { continue };
            let cn = &self.model.nodes[ci];
            if !cn.checked_on_create {
                continue;
            }
            let cp = path.child(name.clone(), Selector::None);
            match child {
                Node::Container(cc) => self.plan_subtree(&cp, ci, cc, plan),
                Node::List(l) => {
                    if cn.min > 0 || cn.max.is_some() || !cn.uniques.is_empty() {
                        plan.lists.insert(cp.to_string(), (cp.clone(), ci));
                    }
                    for (i, e) in l.entries().enumerate() {
                        let ep = canopy_core::diff::with_selector(&cp, canopy_core::diff::entry_selector(l, e, i));
                        self.plan_subtree(&ep, ci, e, plan);
                    }
                }
                Node::Leaf { value, .. } => self.plan_leaf(&cp, ci, None, Some(value), plan),
                Node::LeafList(v) => {
                    if cn.min > 0 || cn.max.is_some() {
                        plan.lists.insert(cp.to_string(), (cp.clone(), ci));
                    }
                    for e in v {
                        let ep = canopy_core::diff::with_selector(&cp, Selector::Value(e.value.as_text().into_owned()));
                        self.plan_leaf(&ep, ci, None, Some(&e.value), plan);
                    }
                }
                Node::AnyData { .. } => {
                    self.plan_readers(&cp, ci, plan);
                    if !cn.musts.is_empty() || !cn.whens.is_empty() {
                        plan.exprs.insert(cp.to_string(), (cp.clone(), ci));
                    }
                }
            }
        }
    }

    /// A leaf or leaf-list entry set (`new`) or changed from `old`.
    fn plan_leaf(&self, path: &Path, idx: usize, old: Option<&Value>, new: Option<&Value>, plan: &mut Plan) {
        let n = &self.model.nodes[idx];
        if let (Some((_, true)), Some(v)) = (n.leafref, new) {
            plan.leafrefs.push((path.clone(), idx, v.clone()));
        }
        if let (true, Some(v)) = (n.instance_required, new) {
            plan.instances.push((path.clone(), v.clone()));
        }
        if let Some(ov) = old {
            if self.model.referrers.contains_key(&idx) {
                plan.targets.push((path.clone(), idx, ov.clone()));
            }
        }
        self.plan_readers(path, idx, plan);
        self.plan_key_source(path, idx, plan);
        if new.is_some() && n.kind == NodeKind::Leaf && !path.segments.is_empty() && self.in_unique_list(idx) {
            // A leaf set or changed that a unique statement of its list names.
            let mut names = vec![n.name.clone()];
            let mut at = n.parent;
            let mut depth = path.segments.len() - 1;
            while let Some(p) = at {
                let pn = &self.model.nodes[p];
                if pn.kind == NodeKind::List {
                    names.reverse();
                    if pn.uniques.iter().any(|u| u.contains(&names)) {
                        let lp = Path {
                            segments: path.segments[..depth]
                                .iter()
                                .cloned()
                                .enumerate()
                                .map(|(d, mut s)| {
                                    if d + 1 == depth {
                                        s.selector = Selector::None;
                                    }
                                    s
                                })
                                .collect(),
                        };
                        plan.lists.insert(lp.to_string(), (lp, p));
                    }
                    break;
                }
                names.push(pn.name.clone());
                at = pn.parent;
                depth = depth.saturating_sub(1);
            }
        }
        if !n.musts.is_empty() || !n.whens.is_empty() {
            plan.exprs.insert(path.to_string(), (path.clone(), idx));
        }
    }

    /// Whether the nearest list above schema node `idx` has unique statements.
    fn in_unique_list(&self, idx: usize) -> bool {
        let mut at = self.model.nodes[idx].parent;
        while let Some(p) = at {
            let pn = &self.model.nodes[p];
            if pn.kind == NodeKind::List {
                return !pn.uniques.is_empty();
            }
            at = pn.parent;
        }
        false
    }

    /// Leafref targets inside a deleted subtree.
    fn plan_removed(&self, path: &Path, idx: usize, node: &Subtree, plan: &mut Plan) {
        let n = &self.model.nodes[idx];
        if !n.watched_below {
            return;
        }
        if !matches!(node, Subtree::Node(Node::List(_) | Node::LeafList(_))) {
            self.plan_readers(path, idx, plan);
        }
        match node {
            Subtree::Node(Node::Leaf { value, .. }) | Subtree::Value(canopy_core::LeafListEntry { value, .. }) => {
                if self.model.referrers.contains_key(&idx) {
                    plan.targets.push((path.clone(), idx, value.clone()));
                }
                self.plan_key_source(path, idx, plan);
            }
            Subtree::Node(Node::Container(c)) | Subtree::Entry(c) => {
                for (name, child) in &c.children {
                    let Some(&ci) = n.children.get(name) else { continue };
                    let cp = path.child(name.clone(), Selector::None);
                    match child {
                        Node::List(l) => {
                            for (i, e) in l.entries().enumerate() {
                                let ep =
                                    canopy_core::diff::with_selector(&cp, canopy_core::diff::entry_selector(l, e, i));
                                self.plan_removed(&ep, ci, &Subtree::Entry(e.clone()), plan);
                            }
                        }
                        Node::LeafList(v) => {
                            for e in v {
                                let ep = canopy_core::diff::with_selector(
                                    &cp,
                                    Selector::Value(e.value.as_text().into_owned()),
                                );
                                self.plan_removed(&ep, ci, &Subtree::Value(e.clone()), plan);
                            }
                        }
                        other => self.plan_removed(&cp, ci, &Subtree::Node(other.clone()), plan),
                    }
                }
            }
            Subtree::Node(Node::List(l)) => {
                for (i, e) in l.entries().enumerate() {
                    let ep = canopy_core::diff::with_selector(path, canopy_core::diff::entry_selector(l, e, i));
                    self.plan_removed(&ep, idx, &Subtree::Entry(e.clone()), plan);
                }
            }
            Subtree::Node(Node::LeafList(v)) => {
                for e in v {
                    let ep = canopy_core::diff::with_selector(path, Selector::Value(e.value.as_text().into_owned()));
                    self.plan_removed(&ep, idx, &Subtree::Value(e.clone()), plan);
                }
            }
            Subtree::Node(Node::AnyData { .. }) => {}
        }
    }

    /// The nodes whose must/when read schema node `idx`, changed at `path`:
    /// their instances that can see this instance are re-evaluated. Those
    /// under the node's list entries the expressions cannot leave (they
    /// climb no higher than `reach`, and a list they do not name by a step
    /// is only crossed upwards, within one entry) are the ones in the same
    /// entries; otherwise all of them.
    fn plan_readers(&self, path: &Path, idx: usize, plan: &mut Plan) {
        for &owner in &self.model.nodes[idx].readers {
            let Some(reads) = &self.model.nodes[owner].reads else { continue };
            let shared = self.shared_depth(reads, owner, idx).min(path.segments.len());
            let scope = Path { segments: path.segments[..shared].to_vec() };
            plan.readers.entry((scope.to_string(), owner)).or_insert(scope);
        }
    }

    /// How deep the instance paths of `owner` (whose expressions read as
    /// `reads` says) and of a node `other` they read share their list
    /// entries.
    fn shared_depth(&self, reads: &crate::model::ExprReads, owner: usize, other: usize) -> usize {
        let common = self.model.common_depth(owner, other);
        let chain = self.model.chain(owner);
        let mut s = reads.reach.min(common);
        while s < common {
            let n = chain[s];
            if self.model.nodes[n].kind == NodeKind::List && (reads.wild || reads.named.contains(&n)) {
                break;
            }
            s += 1;
        }
        s
    }

    /// A leaf that leafref predicates read their key from changed at `path`:
    /// the leafrefs reading it are checked again.
    fn plan_key_source(&self, path: &Path, idx: usize, plan: &mut Plan) {
        let Some(list) = self.model.key_sources.get(&idx) else { return };
        for &(lr, up, down) in list {
            let n = path.segments.len();
            if n < down || n - down + up != self.model.nodes[lr].depth {
                continue;
            }
            let base = Path { segments: path.segments[..n - down].to_vec() };
            plan.key_changes.entry((base.to_string(), lr)).or_insert(base);
        }
    }

    fn check_mandatory(
        &self,
        path: &Path,
        idx: Option<usize>,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        let Some(idx) = idx.filter(|&i| self.model.nodes[i].has_mandatory) else { return Ok(()) };
        if !path.is_root() {
            data.load(path, false)?;
        }
        let c = match data.tree().lookup(path) {
            Some(NodeRef::Container(c) | NodeRef::Entry(c) | NodeRef::Root(c)) => c.clone(),
            _ => return Ok(()),
        };
        // Child containers are fragments of their own: load those the check descends into.
        for &ci in self.model.nodes[idx].children.values() {
            let cn = &self.model.nodes[ci];
            if cn.kind == NodeKind::Container && c.children.contains_key(&cn.name) {
                data.load(&path.child(cn.name.clone(), Selector::None), false)?;
            }
        }
        let c = match data.tree().lookup(path) {
            Some(NodeRef::Container(c) | NodeRef::Entry(c) | NodeRef::Root(c)) => c,
            _ => return Ok(()),
        };
        self.mandatory_in(path, idx, c, out);
        Ok(())
    }

    /// The mandatory leaves, choices and min-elements of `c` (data of schema
    /// node `idx`), descending into non-presence containers.
    fn mandatory_in(&self, path: &Path, idx: usize, c: &Container, out: &mut Vec<Violation>) {
        let n = &self.model.nodes[idx];
        for (name, &ci) in &n.children {
            let cn = &self.model.nodes[ci];
            if !cn.config {
                continue;
            }
            let present = c.children.get(name);
            if cn.case.is_some() && !self.case_active(c, ci) {
                continue;
            }
            match (cn.kind, present) {
                (NodeKind::Leaf | NodeKind::AnyData, None) if cn.mandatory && cn.whens.is_empty() => {
                    out.push(Violation {
                        path: path.child(name.clone(), Selector::None).to_string(),
                        reason: "mandatory node is missing".into(),
                    })
                }
                (NodeKind::Container, Some(Node::Container(cc))) => {
                    self.mandatory_in(&path.child(name.clone(), Selector::None), ci, cc, out)
                }
                (NodeKind::Container, None) if !cn.presence && cn.whens.is_empty() => {
                    self.mandatory_in(&path.child(name.clone(), Selector::None), ci, &Container::default(), out)
                }
                (NodeKind::List | NodeKind::LeafList, None) if cn.min > 0 && cn.whens.is_empty() => {
                    out.push(Violation {
                        path: path.child(name.clone(), Selector::None).to_string(),
                        reason: format!("at least {} entries are required (min-elements), there are none", cn.min),
                    })
                }
                _ => {}
            }
        }
        for (choice, parent, cname) in &self.model.mandatory_choices {
            if *parent != Some(idx) {
                continue;
            }
            let used = c.children.keys().any(|name| {
                n.children.get(name).is_some_and(|&ci| self.model.nodes[ci].case.is_some_and(|(ch, _)| ch == *choice))
            });
            if !used {
                out.push(Violation {
                    path: path.to_string(),
                    reason: format!("mandatory choice `{cname}` has no case set"),
                });
            }
        }
    }

    fn check_list(
        &self,
        path: &Path,
        idx: usize,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        data.load(path, true)?;
        let n = &self.model.nodes[idx];
        let (count, entries): (usize, Vec<(Path, &Container)>) = match data.tree().lookup(path) {
            Some(NodeRef::List(l)) => (
                l.len(),
                l.entries()
                    .enumerate()
                    .map(|(i, e)| {
                        (canopy_core::diff::with_selector(path, canopy_core::diff::entry_selector(l, e, i)), e)
                    })
                    .collect(),
            ),
            Some(NodeRef::LeafList(v)) => (v.len(), Vec::new()),
            _ => (0, Vec::new()),
        };
        // An absent list in an absent parent is not a violation of min-elements
        // (the parent's mandatory check covers present parents).
        let parent_present = path.parent().is_none_or(|p| p.is_root() || data.tree().lookup(&p).is_some());
        // No entries at all: the list is absent, which the mandatory check of
        // its parent reports (a parent that lost children is checked).
        if parent_present && count > 0 && (count as u32) < n.min {
            out.push(Violation {
                path: path.to_string(),
                reason: format!("at least {} entries are required (min-elements), there are {count}", n.min),
            });
        }
        if let Some(max) = n.max {
            if count as u32 > max {
                out.push(Violation {
                    path: path.to_string(),
                    reason: format!("at most {max} entries are allowed (max-elements), there are {count}"),
                });
            }
        }
        for unique in &n.uniques {
            let mut seen: BTreeMap<Vec<String>, &Path> = BTreeMap::new();
            for (ep, e) in &entries {
                let mut vals = Vec::new();
                let mut all = true;
                for leaf in unique {
                    match value_at(e, leaf) {
                        Some(v) => vals.push(v),
                        None => all = false,
                    }
                }
                if !all {
                    continue; // RFC 7950: entries lacking a unique leaf are not compared
                }
                if let Some(first) = seen.get(&vals) {
                    out.push(Violation {
                        path: ep.to_string(),
                        reason: format!(
                            "unique ({}) = ({}) is also used by {first}",
                            unique.iter().map(|l| l.join("/")).collect::<Vec<_>>().join(", "),
                            vals.join(", ")
                        ),
                    });
                } else {
                    seen.insert(vals, ep);
                }
            }
        }
        Ok(())
    }

    /// The instance path pattern of schema node `target`, with the selectors
    /// of the list entries it shares with `from` (an instance path of a node
    /// whose schema path is `from_idx`'s); other lists are left open. Used for
    /// leafref paths this crate does not follow step by step.
    fn pattern(&self, target: usize, from: &Path) -> Vec<Segment> {
        let mut segs = Vec::new();
        let mut shared = true;
        for (d, i) in self.model.chain(target).into_iter().enumerate() {
            let name = self.model.nodes[i].name.clone();
            let sel = match from.segments.get(d) {
                Some(s) if shared && s.name == name => s.selector.clone(),
                _ => {
                    shared = false;
                    Selector::None
                }
            };
            segs.push(Segment { name, selector: sel });
        }
        segs
    }

    /// The instance path pattern of schema node `node` below `base` (an
    /// instance of one of its ancestors, or the root): `base`'s selectors,
    /// then the node's names with its lists left open.
    fn pattern_under(&self, base: &Path, node: usize) -> Vec<Segment> {
        let mut segs = base.segments.clone();
        for i in self.model.chain(node).into_iter().skip(base.segments.len()) {
            segs.push(Segment { name: self.model.nodes[i].name.clone(), selector: Selector::None });
        }
        segs
    }

    /// Every instance of schema node `node` under `base` (an instance of an
    /// ancestor, or the root), with its value for leaves and leaf-list
    /// entries. Loads the first list left open on the way whole, or just the
    /// node (its parent's fragment for a leaf) when every list is pinned.
    pub(crate) fn instances(
        &self,
        base: &Path,
        node: usize,
        data: &mut dyn DataAccess,
    ) -> Result<Vec<(Path, Option<Value>)>, LoadError> {
        if base.segments.len() > self.model.nodes[node].depth {
            return Ok(Vec::new());
        }
        let segs = self.pattern_under(base, node);
        self.load_pattern(&segs, data)?;
        let mut out = Vec::new();
        visit_nodes(data.tree(), &segs, &[], &mut Path::root(), &mut |p, v| out.push((p.clone(), v.cloned())));
        Ok(out)
    }

    /// Loads what instance path pattern `segs` can match: its first open
    /// list whole, or the node it names (a leaf: its parent's fragment).
    fn load_pattern(&self, segs: &[Segment], data: &mut dyn DataAccess) -> Result<(), LoadError> {
        let chain = self.chain(segs);
        let Some(&last) = chain.last() else { return Ok(()) };
        if chain.len() != segs.len() {
            return Ok(());
        }
        let open = segs
            .iter()
            .zip(&chain)
            .position(|(s, &i)| self.model.nodes[i].kind == NodeKind::List && s.selector == Selector::None);
        if let Some(o) = open {
            return data.load(&Path { segments: segs[..=o].to_vec() }, true);
        }
        let path = Path { segments: segs.to_vec() };
        match self.model.nodes[last].kind {
            NodeKind::Leaf | NodeKind::LeafList | NodeKind::AnyData => match path.parent() {
                Some(p) if !p.is_root() => data.load(&p, false),
                _ => Ok(()),
            },
            _ => data.load(&path, false),
        }
    }

    fn check_leafref(
        &self,
        path: &Path,
        idx: usize,
        value: &Value,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        // Still there? (a later edit of the transaction may have removed it)
        if data.tree().lookup(path).is_none() {
            return Ok(());
        }
        if let Err(reason) = self.leafref_holds(path, idx, value, data)? {
            out.push(Violation { path: path.to_string(), reason });
        }
        Ok(())
    }

    /// Whether the leafref leaf at `path` (schema node `idx`) with `value`
    /// finds its target: the target's instances that the path's predicates
    /// select, with the predicates' keys read from this leaf's own data.
    /// `Err` holds the reason it does not.
    fn leafref_holds(
        &self,
        path: &Path,
        idx: usize,
        value: &Value,
        data: &mut dyn DataAccess,
    ) -> Result<Result<(), String>, LoadError> {
        let Some((target, _)) = self.model.nodes[idx].leafref else { return Ok(Ok(())) };
        let (segs, filters, pinned) = match &self.model.nodes[idx].leafref_path {
            None => (self.pattern(target, path), Vec::new(), false),
            Some(lp) => {
                let n = path.segments.len();
                let mut segs = match lp.up {
                    None => Vec::new(),
                    Some(u) if u <= n => path.segments[..n - u].to_vec(),
                    Some(_) => return Ok(Err(format!("leafref: the path of {} leaves the data tree", path))),
                };
                let mut filters: Vec<Vec<(Name, Text)>> = vec![Vec::new(); segs.len()];
                let mut pinned = false;
                for (node, preds) in &lp.steps {
                    let sn = &self.model.nodes[*node];
                    let mut f = Vec::new();
                    for p in preds {
                        match self.key_value(path, p, data)? {
                            Ok(v) => f.push((p.key.clone(), v.into())),
                            Err(source) => {
                                return Ok(Err(format!(
                                    "leafref: {source}, which the predicate [{} = current()/{}] of its path reads, is not set",
                                    p.key,
                                    std::iter::repeat_n("..", p.up).chain(p.down.iter().map(|d| d.as_str())).collect::<Vec<_>>().join("/")
                                )))
                            }
                        }
                    }
                    pinned |= !f.is_empty();
                    let mut selector = Selector::None;
                    if let Some(kv) = keys_of(sn, &f) {
                        selector = Selector::Keys(kv);
                        f.clear();
                    }
                    segs.push(Segment { name: sn.name.clone(), selector });
                    filters.push(f);
                }
                (segs, filters, pinned)
            }
        };
        if self.find(&segs, &filters, value, data)? {
            return Ok(Ok(()));
        }
        let what = if pinned {
            let mut p = Path { segments: segs.clone() }.to_string();
            for (d, f) in filters.iter().enumerate() {
                for (k, v) in f {
                    p.push_str(&format!(" ({}/{k} = '{v}')", segs[d].name));
                }
            }
            p
        } else {
            self.model.nodes[target].path.clone()
        };
        Ok(Err(format!("leafref: no {what} with value '{value}'")))
    }

    /// The value a leafref predicate compares with, read from the leafref
    /// leaf at `path`'s own data (`Err`: the instance path of the leaf that
    /// should hold it).
    fn key_value(
        &self,
        path: &Path,
        pred: &crate::model::KeyPredicate,
        data: &mut dyn DataAccess,
    ) -> Result<Result<String, String>, LoadError> {
        let n = path.segments.len();
        if pred.up > n {
            return Ok(Err(format!("{path}/{}", pred.down.join("/"))));
        }
        let mut p = Path { segments: path.segments[..n - pred.up].to_vec() };
        for name in &pred.down {
            p = p.child(name.clone(), Selector::None);
        }
        if let Some(parent) = p.parent().filter(|p| !p.is_root()) {
            data.load(&parent, false)?;
        }
        Ok(match data.tree().lookup(&p) {
            Some(NodeRef::Leaf(v, _)) => Ok(v.as_text().into_owned()),
            _ => Err(p.to_string()),
        })
    }

    /// Whether an instance of the leaf at `segs` (its last segment) that
    /// passes `filters` (per segment: child leaf = value, for predicates that
    /// do not pin every key) holds `value`, loading what is needed: a point
    /// read when the leaf is a key of a list whose other keys and ancestors
    /// are pinned, else the first open list (or the leaf's fragment).
    fn find(
        &self,
        segs: &[Segment],
        filters: &[Vec<(Name, Text)>],
        value: &Value,
        data: &mut dyn DataAccess,
    ) -> Result<bool, LoadError> {
        let n = segs.len();
        let chain = self.chain(segs);
        if n == 0 || chain.len() != n {
            return Ok(false);
        }
        let text = value.as_text().into_owned();
        let open = |d: usize| self.model.nodes[chain[d]].kind == NodeKind::List && segs[d].selector == Selector::None;
        if n >= 2 && !(0..n - 2).any(open) && open(n - 2) {
            let l = &self.model.nodes[chain[n - 2]];
            let mut kv = filters.get(n - 2).cloned().unwrap_or_default();
            kv.push((segs[n - 1].name.clone(), text.as_str().into()));
            if let Some(keys) = keys_of(l, &kv) {
                let mut ep = Path { segments: segs[..n - 1].to_vec() };
                ep.segments[n - 2].selector = Selector::Keys(keys);
                data.load(&ep, false)?;
                return Ok(data.tree().lookup(&ep).is_some());
            }
        }
        self.load_pattern(segs, data)?;
        let mut found = false;
        visit_nodes(data.tree(), segs, filters, &mut Path::root(), &mut |_, v| {
            found |= v.is_some_and(|v| v.as_text() == text);
        });
        Ok(found)
    }

    fn chain(&self, segs: &[Segment]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut parent = None;
        for s in segs {
            match self.model.child(parent, &s.name) {
                Some(i) => {
                    out.push(i);
                    parent = Some(i);
                }
                None => break,
            }
        }
        out
    }

    /// A leafref target at `path` lost value `value` (removed or changed):
    /// every leafref with that value that could point at this instance is
    /// checked again, with its predicates (another instance may satisfy
    /// it). Those at `skip` were checked as set in this transaction.
    fn check_target_gone(
        &self,
        (path, target, value): &(Path, usize, Value),
        skip: &BTreeSet<String>,
        present: &dyn Fn(usize) -> bool,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        let text = value.as_text().into_owned();
        let target = *target;
        for &r in self.model.referrers.get(&target).map(Vec::as_slice).unwrap_or_default() {
            if !self.model.nodes[r].leafref.is_some_and(|(_, req)| req) || !present(r) {
                continue;
            }
            // A relative path climbs to a common ancestor: the referrers that
            // can reach this instance are under the same instance of it.
            let shared = match &self.model.nodes[r].leafref_path {
                Some(crate::model::LeafrefPath { up: Some(u), .. }) => {
                    self.model.nodes[r].depth.saturating_sub(*u).min(self.model.common_depth(r, target))
                }
                _ => 0,
            };
            let base = Path { segments: path.segments[..shared.min(path.segments.len())].to_vec() };
            let hits = match data.referrers(&self.model.nodes[r].path, &text)? {
                Some(listed) => self.still_holding(listed, &base, &text, data)?,
                None => self.instances(&base, r, data)?,
            };
            for (hit, v) in hits {
                let Some(v) = v.filter(|v| v.as_text() == text) else { continue };
                if skip.contains(&hit.to_string()) {
                    continue;
                }
                if let Err(why) = self.leafref_holds(&hit, r, &v, data)? {
                    out.push(Violation { path: hit.to_string(), reason: format!("{why} (it was removed)") });
                }
            }
        }
        Ok(())
    }

    /// Of the leafref instances an index lists for value `text` (leaves and
    /// leaf-lists), those under `base` that hold it after the transaction,
    /// each read by its own fragment: (instance path, value).
    fn still_holding(
        &self,
        listed: Vec<Path>,
        base: &Path,
        text: &str,
        data: &mut dyn DataAccess,
    ) -> Result<Vec<(Path, Option<Value>)>, LoadError> {
        let mut out = Vec::new();
        for p in listed {
            if !p.segments.starts_with(&base.segments) {
                continue;
            }
            if let Some(parent) = p.parent().filter(|p| !p.is_root()) {
                data.load(&parent, false)?;
            }
            match data.tree().lookup(&p) {
                Some(NodeRef::Leaf(v, _)) if v.as_text() == text => out.push((p, Some(v.clone()))),
                Some(NodeRef::LeafList(vs)) => {
                    if let Some(e) = vs.iter().find(|e| e.value.as_text() == text) {
                        let ep = canopy_core::diff::with_selector(&p, Selector::Value(text.to_string()));
                        out.push((ep, Some(e.value.clone())));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// An instance-identifier's target must exist (it is loaded: its parent's
    /// fragment for a leaf, the node's own otherwise).
    fn check_instance(
        &self,
        path: &Path,
        value: &Value,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        if data.tree().lookup(path).is_none() {
            return Ok(());
        }
        let text = value.as_text();
        let target = text.parse::<Path>().ok().and_then(|p| self.resolve_path(&p).ok());
        let Some((target, idxs)) = target else {
            out.push(Violation {
                path: path.to_string(),
                reason: format!("instance-identifier '{text}' names no data node"),
            });
            return Ok(());
        };
        let kind = idxs.last().map(|&i| self.model.nodes[i].kind);
        let load = match kind {
            Some(NodeKind::Leaf | NodeKind::LeafList | NodeKind::AnyData) => target.parent().unwrap_or_default(),
            _ => target.clone(),
        };
        if !load.is_root() {
            data.load(&load, false)?;
        }
        if data.tree().lookup(&target).is_none() {
            out.push(Violation {
                path: path.to_string(),
                reason: format!("instance-identifier: {target} does not exist"),
            });
        }
        Ok(())
    }

    fn check_exprs(
        &self,
        exprs: &BTreeMap<String, (Path, usize)>,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        if exprs.is_empty() {
            return Ok(());
        }
        // One libyang tree for all: each node with its ancestors, and the
        // instances of every node its expressions read that it can see.
        let mut paths: Vec<Path> = Vec::new();
        let mut chosen = BTreeSet::new();
        for (path, idx) in exprs.values() {
            let n = &self.model.nodes[*idx];
            let own = match n.kind {
                NodeKind::Leaf | NodeKind::LeafList | NodeKind::AnyData => path.parent().unwrap_or_default(),
                _ => path.clone(),
            };
            if !own.is_root() {
                data.load(&own, false)?;
            }
            if chosen.insert(path.to_string()) {
                paths.push(path.clone());
            }
            let Some(reads) = &n.reads else { continue };
            for &atom in &reads.atoms {
                let shared = self.shared_depth(reads, *idx, atom).min(path.segments.len());
                let base = Path { segments: path.segments[..shared].to_vec() };
                let segs = self.pattern_under(&base, atom);
                // The node's own ancestors, crossed upwards only: already there.
                if segs.len() <= path.segments.len() && segs[..] == path.segments[..segs.len()] {
                    continue;
                }
                let chain = self.chain(&segs);
                if chain.len() != segs.len() {
                    continue;
                }
                let open = segs
                    .iter()
                    .zip(&chain)
                    .position(|(s, &i)| self.model.nodes[i].kind == NodeKind::List && s.selector == Selector::None);
                let pick = Path { segments: segs[..open.map_or(segs.len(), |o| o + 1)].to_vec() };
                if chosen.insert(pick.to_string()) {
                    self.load_pattern(&segs, data)?;
                    paths.push(pick);
                }
            }
        }
        let small = canopy_core::select(data.tree(), &paths);
        let mut json = Vec::new();
        canopy_core::json::write_container(&mut json, &small, &canopy_core::json::WriteOptions::default())
            .map_err(|e| -> LoadError { e.to_string().into() })?;
        let json = String::from_utf8(json).map_err(|e| -> LoadError { e.to_string().into() })?;
        let ctx = self.ctx.lock().map_err(|_| -> LoadError { "schema lock poisoned".into() })?;
        let tree = match ctx.parse_data(&json) {
            Ok(t) => t,
            Err(e) => {
                out.push(Violation {
                    path: "/".into(),
                    reason: format!("libyang could not read the data to evaluate must/when: {e}"),
                });
                return Ok(());
            }
        };
        use yang3::data::Data;
        {
            for (path, idx) in exprs.values().map(|(p, i)| (p.clone(), *i)) {
                let n = &self.model.nodes[idx];
                if data.tree().lookup(&path).is_none() {
                    continue;
                }
                let Ok(dnode) = tree.find_path(&path.to_string()) else { continue };
                for w in &n.whens {
                    // The context of a when is the node itself or an ancestor.
                    let ctx_node = match w.context {
                        Some(c) if c != n.raw && c != 0 => {
                            let mut d = Some(dnode.clone());
                            while let Some(x) = &d {
                                if x.schema().as_raw() as usize == c {
                                    break;
                                }
                                d = yang3::iter::NodeIterable::parent(x);
                            }
                            d
                        }
                        Some(0) => None,
                        _ => Some(dnode.clone()),
                    };
                    match ctx.eval(&tree, ctx_node.as_ref(), w) {
                        Ok(true) => {}
                        Ok(false) => out.push(Violation {
                            path: path.to_string(),
                            reason: format!("when condition `{}` is not satisfied", w.text),
                        }),
                        Err(e) => {
                            out.push(Violation { path: path.to_string(), reason: format!("when `{}`: {e}", w.text) })
                        }
                    }
                }
                for m in &n.musts {
                    match ctx.eval(&tree, Some(&dnode), m) {
                        Ok(true) => {}
                        Ok(false) => out.push(Violation {
                            path: path.to_string(),
                            reason: match &m.message {
                                Some(msg) => format!("{msg} (must `{}`)", m.text),
                                None => format!("must condition `{}` is not satisfied", m.text),
                            },
                        }),
                        Err(e) => {
                            out.push(Violation { path: path.to_string(), reason: format!("must `{}`: {e}", m.text) })
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The text of the leaf at relative name path `names` in entry `e`.
fn value_at(e: &Container, names: &[Name]) -> Option<String> {
    let (last, dirs) = names.split_last()?;
    let mut c = e;
    for d in dirs {
        match c.children.get(d) {
            Some(Node::Container(cc)) => c = cc,
            _ => return None,
        }
    }
    match c.children.get(last) {
        Some(Node::Leaf { value, .. }) => Some(value.as_text().into_owned()),
        _ => None,
    }
}

/// The key selector of list `l` when `kv` (name = value pairs) gives each
/// of its keys exactly once and nothing else.
fn keys_of(l: &crate::model::SNode, kv: &[(Name, Text)]) -> Option<Vec<(Name, Text)>> {
    if l.kind != NodeKind::List || l.keys.is_empty() || kv.len() != l.keys.len() {
        return None;
    }
    l.keys
        .iter()
        .map(|k| {
            let mut vals = kv.iter().filter(|(n, _)| n == k);
            match (vals.next(), vals.next()) {
                (Some((_, v)), None) => Some((k.clone(), v.clone())),
                _ => None,
            }
        })
        .collect()
}

/// Calls `f` with the instance path of every node `segs` matches in `c`
/// (segments without selector on lists match every entry, and a leaf-list
/// every value) and its value for leaves and leaf-list entries. `filters`,
/// per segment, are child leaf values the entries must have.
fn visit_nodes(
    c: &Container,
    segs: &[Segment],
    filters: &[Vec<(Name, Text)>],
    at: &mut Path,
    f: &mut dyn FnMut(&Path, Option<&Value>),
) {
    let Some((seg, rest)) = segs.split_first() else { return };
    let Some(node) = c.children.get(&seg.name) else { return };
    let depth = at.segments.len();
    match node {
        Node::Container(cc) => {
            at.segments.push(Segment { name: seg.name.clone(), selector: Selector::None });
            if rest.is_empty() {
                f(at, None);
            } else {
                visit_nodes(cc, rest, filters, at, f);
            }
            at.segments.pop();
        }
        Node::List(l) => {
            let conds = filters.get(depth).map(Vec::as_slice).unwrap_or_default();
            for (i, e) in l.entries().enumerate() {
                let sel = canopy_core::diff::entry_selector(l, e, i);
                if seg.selector != Selector::None && seg.selector != sel {
                    continue;
                }
                if !conds.iter().all(|(k, v)| value_at(e, std::slice::from_ref(k)).is_some_and(|x| x == *v)) {
                    continue;
                }
                at.segments.push(Segment { name: seg.name.clone(), selector: sel });
                if rest.is_empty() {
                    f(at, None);
                } else {
                    visit_nodes(e, rest, filters, at, f);
                }
                at.segments.pop();
            }
        }
        Node::Leaf { value, .. } if rest.is_empty() => {
            at.segments.push(Segment { name: seg.name.clone(), selector: Selector::None });
            f(at, Some(value));
            at.segments.pop();
        }
        Node::LeafList(v) if rest.is_empty() => {
            for e in v {
                let sel = Selector::Value(e.value.as_text().into_owned());
                if seg.selector != Selector::None && seg.selector != sel {
                    continue;
                }
                at.segments.push(Segment { name: seg.name.clone(), selector: sel });
                f(at, Some(&e.value));
                at.segments.pop();
            }
        }
        Node::AnyData { .. } if rest.is_empty() => {
            at.segments.push(Segment { name: seg.name.clone(), selector: Selector::None });
            f(at, None);
            at.segments.pop();
        }
        _ => {}
    }
}

/// Whether instance path `p` lies in or under `deleted` (whose last segment
/// without selector stands for a whole list or leaf-list).
fn under(p: &Path, deleted: &Path) -> bool {
    let n = deleted.segments.len();
    if n == 0 || p.segments.len() < n {
        return n == 0;
    }
    p.segments[..n - 1] == deleted.segments[..n - 1] && {
        let (a, b) = (&p.segments[n - 1], &deleted.segments[n - 1]);
        a.name == b.name && (b.selector == Selector::None || a.selector == b.selector)
    }
}
