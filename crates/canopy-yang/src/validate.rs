//! Commit validation scoped to a transaction's changes.
//!
//! Values were checked when edits were normalised; here the constraints that
//! involve other nodes are checked, each only where the changes can affect it:
//! - mandatory nodes in created containers and entries, and in the parent of a
//!   deleted node;
//! - min/max-elements and unique of a list or leaf-list an entry was created in
//!   or deleted from (or, for unique, a leaf of an entry was changed in): the
//!   list is loaded whole, only for lists that have such a constraint;
//! - leafrefs whose leaf was set (the target is looked up: one point read when
//!   it is a list's only key) and those pointing at a deleted or changed
//!   target (the referring list is loaded);
//! - must and when on created nodes, changed leaves, their ancestors and their
//!   siblings, evaluated by libyang on a small data tree made of the enclosing
//!   list entry (or top-level node) and whatever the expression names by
//!   absolute path.

use std::collections::{BTreeMap, BTreeSet};

use canopy_core::diff::{Change, Subtree};
use canopy_core::path::{Path, Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::{Container, Node, NodeRef};
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
        let mut plan = Plan::default();
        for c in changes {
            self.plan_change(c, data.tree(), &mut plan);
        }
        let mut out = std::mem::take(&mut plan.found);
        for (_, path, idx) in std::mem::take(&mut plan.mandatory) {
            self.check_mandatory(&path, idx, data, &mut out)?;
        }
        for (_, (path, idx)) in std::mem::take(&mut plan.lists) {
            self.check_list(&path, idx, data, &mut out)?;
        }
        for (path, idx, value) in std::mem::take(&mut plan.leafrefs) {
            self.check_leafref(&path, idx, &value, data, &mut out)?;
        }
        for (path, value) in std::mem::take(&mut plan.instances) {
            self.check_instance(&path, &value, data, &mut out)?;
        }
        for (path, idx, value) in std::mem::take(&mut plan.targets) {
            self.check_target_gone(&path, idx, &value, data, &mut out)?;
        }
        self.check_exprs(&plan.exprs, data, &mut out)?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn idx_of(&self, path: &Path) -> Option<usize> {
        self.model.by_path.get(&path.schema_path()).copied()
    }

    fn plan_change(&self, c: &Change, tree: &Container, plan: &mut Plan) {
        let path = c.path();
        let Some(idx) = self.idx_of(path) else { return };
        let n = &self.model.nodes[idx];
        match c {
            Change::Created { node, .. } => {
                if matches!(n.kind, NodeKind::List | NodeKind::LeafList) {
                    let lp = canopy_core::diff::with_selector(path, Selector::None);
                    if n.min > 0 || n.max.is_some() || !n.uniques.is_empty() {
                        plan.lists.insert(lp.to_string(), (lp, idx));
                    }
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
                    Subtree::Node(Node::AnyData { .. }) => {}
                }
                self.plan_context(path, idx, plan);
            }
            Change::Deleted { node, .. } => {
                if matches!(n.kind, NodeKind::List | NodeKind::LeafList) {
                    let lp = canopy_core::diff::with_selector(path, Selector::None);
                    if n.min > 0 || n.max.is_some() {
                        plan.lists.insert(lp.to_string(), (lp, idx));
                    }
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
                // Targets that went away with the subtree.
                self.plan_removed(path, idx, node, plan);
                self.plan_context(path, idx, plan);
            }
            Change::Modified { old, new, .. } => {
                let (Node::Leaf { value: ov, .. }, Node::Leaf { value: nv, .. }) = (old, new) else { return };
                self.plan_leaf(path, idx, Some(ov), Some(nv), plan);
                self.plan_context(path, idx, plan);
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
        if new.is_some() && n.kind == NodeKind::Leaf && !path.segments.is_empty() {
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

    /// Leafref targets inside a deleted subtree.
    fn plan_removed(&self, path: &Path, idx: usize, node: &Subtree, plan: &mut Plan) {
        let n = &self.model.nodes[idx];
        match node {
            Subtree::Node(Node::Leaf { value, .. }) | Subtree::Value(canopy_core::LeafListEntry { value, .. }) => {
                if self.model.referrers.contains_key(&idx) {
                    plan.targets.push((path.clone(), idx, value.clone()));
                }
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
                                self.plan_removed(&cp, ci, &Subtree::Value(e.clone()), plan);
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
                    self.plan_removed(path, idx, &Subtree::Value(e.clone()), plan);
                }
            }
            Subtree::Node(Node::AnyData { .. }) => {}
        }
    }

    /// Must/when of the ancestors and siblings of a changed node: their
    /// expressions are the ones that can name it.
    fn plan_context(&self, path: &Path, idx: usize, plan: &mut Plan) {
        let has_expr = |i: usize| !self.model.nodes[i].musts.is_empty() || !self.model.nodes[i].whens.is_empty();
        let parent = self.model.nodes[idx].parent;
        // Siblings with expressions (they exist when the parent does).
        if let Some(p) = parent {
            for (name, &si) in &self.model.nodes[p].children {
                if si != idx && has_expr(si) {
                    if let Some(pp) = path.parent() {
                        let sp = pp.child(name.clone(), Selector::None);
                        plan.exprs.insert(sp.to_string(), (sp, si));
                    }
                }
            }
        }
        // Ancestors with expressions: the schema chain is walked first, paths
        // are built only for those that have some.
        let mut ai = parent;
        let mut depth = path.segments.len();
        while let Some(i) = ai {
            depth = depth.saturating_sub(1);
            if has_expr(i) {
                let p = Path { segments: path.segments[..depth].to_vec() };
                plan.exprs.insert(p.to_string(), (p, i));
            }
            ai = self.model.nodes[i].parent;
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
    /// whose schema path is `from_idx`'s); other lists are left open.
    fn pattern(&self, target: usize, from: &Path) -> Vec<Segment> {
        let mut chain = Vec::new();
        let mut at = Some(target);
        while let Some(i) = at {
            chain.push(i);
            at = self.model.nodes[i].parent;
        }
        chain.reverse();
        let mut segs = Vec::new();
        let mut shared = true;
        for (d, &i) in chain.iter().enumerate() {
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
        let Some((target, _)) = self.model.nodes[idx].leafref else { return Ok(()) };
        let segs = self.pattern(target, path);
        if !self.find_value(&segs, value, data)? {
            out.push(Violation {
                path: path.to_string(),
                reason: format!("leafref: no {} with value '{value}'", self.model.nodes[target].path),
            });
        }
        Ok(())
    }

    /// Whether an instance of the leaf at `segs` (its last segment) holds
    /// `value`, loading what is needed: a point read when the leaf is the only
    /// key of a list whose ancestors are all pinned, else the first open list.
    fn find_value(&self, segs: &[Segment], value: &Value, data: &mut dyn DataAccess) -> Result<bool, LoadError> {
        let n = segs.len();
        let text = value.as_text().into_owned();
        let pinned = segs[..n.saturating_sub(2)]
            .iter()
            .zip(self.chain(segs))
            .all(|(s, i)| self.model.nodes[i].kind != NodeKind::List || s.selector != Selector::None);
        let target = *self.chain(segs).last().expect("a leaf");
        let list = self.model.nodes[target].parent.map(|p| &self.model.nodes[p]);
        if let (true, Some(l)) = (pinned && n >= 2, list) {
            if l.kind == NodeKind::List && l.keys.len() == 1 && l.keys[0] == segs[n - 1].name {
                let mut ep = Path { segments: segs[..n - 1].to_vec() };
                ep.segments[n - 2].selector = Selector::Keys(vec![(l.keys[0].clone(), text.clone())]);
                data.load(&ep, false)?;
                return Ok(data.tree().lookup(&ep).is_some());
            }
        }
        // Load from the first open list (or the top node) and scan.
        let open = segs.iter().position(|s| s.selector == Selector::None).unwrap_or(0);
        let load = Path { segments: segs[..=open.min(n - 1)].to_vec() };
        data.load(&load, true)?;
        let mut found = false;
        visit(data.tree(), segs, &mut |v| found |= v.as_text() == text);
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

    /// A leafref target at `path` lost value `value`: every leafref pointing
    /// at it with that value is now dangling, unless another target instance
    /// still holds the value.
    fn check_target_gone(
        &self,
        path: &Path,
        target: usize,
        value: &Value,
        data: &mut dyn DataAccess,
        out: &mut Vec<Violation>,
    ) -> Result<(), LoadError> {
        let text = value.as_text().into_owned();
        for &r in self.model.referrers.get(&target).map(Vec::as_slice).unwrap_or_default() {
            if !self.model.nodes[r].leafref.is_some_and(|(_, req)| req) {
                continue;
            }
            let segs = self.pattern(r, path);
            let open = segs.iter().position(|s| s.selector == Selector::None).unwrap_or(0);
            let load = Path { segments: segs[..=open.min(segs.len() - 1)].to_vec() };
            data.load(&load, true)?;
            let mut hits = Vec::new();
            visit_paths(data.tree(), &segs, &mut Path::root(), &mut |p, v| {
                if v.as_text() == text {
                    hits.push(p.clone());
                }
            });
            if hits.is_empty() {
                continue;
            }
            // Does another instance of the target still hold the value?
            for hit in hits {
                let tsegs = self.pattern(target, &hit);
                if !self.find_value(&tsegs, value, data)? {
                    out.push(Violation {
                        path: hit.to_string(),
                        reason: format!(
                            "leafref: no {} with value '{value}' (it was removed)",
                            self.model.nodes[target].path
                        ),
                    });
                }
            }
        }
        Ok(())
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
        // Group by scope: each group is evaluated on one libyang tree.
        let mut scopes: BTreeMap<String, (Path, Vec<(Path, usize)>)> = BTreeMap::new();
        let mut absolute: BTreeSet<String> = BTreeSet::new();
        for (path, idx) in exprs.values() {
            let n = &self.model.nodes[*idx];
            let mut up = 0;
            for e in n.musts.iter().chain(&n.whens) {
                up = up.max(e.text.matches("..").count());
                for name in absolute_tops(&e.text) {
                    absolute.insert(name);
                }
            }
            let scope = scope_of(path, up);
            scopes.entry(scope.to_string()).or_insert_with(|| (scope, Vec::new())).1.push((path.clone(), *idx));
        }
        let mut paths: Vec<Path> = scopes.values().map(|(s, _)| s.clone()).collect();
        for top in &absolute {
            let local = top.split_once(':').map_or(top.as_str(), |(_, l)| l);
            if let Some(name) = self.model.top.keys().find(|k| k.split_once(':').is_some_and(|(_, l)| l == local)) {
                paths.push(Path::root().child(name.clone(), Selector::None));
            }
        }
        for p in &paths {
            data.load(p, true)?;
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
        for (_, (_, nodes)) in scopes {
            for (path, idx) in nodes {
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
fn value_at(e: &Container, names: &[String]) -> Option<String> {
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

/// Calls `f` with every value of the leaf (or leaf-list) at `segs` in `tree`;
/// segments without selector on lists visit every entry.
fn visit(tree: &Container, segs: &[Segment], f: &mut dyn FnMut(&Value)) {
    visit_paths(tree, segs, &mut Path::root(), &mut |_, v| f(v));
}

fn visit_paths(c: &Container, segs: &[Segment], at: &mut Path, f: &mut dyn FnMut(&Path, &Value)) {
    let Some((seg, rest)) = segs.split_first() else { return };
    let Some(node) = c.children.get(&seg.name) else { return };
    match node {
        Node::Container(cc) => {
            at.segments.push(Segment { name: seg.name.clone(), selector: Selector::None });
            visit_paths(cc, rest, at, f);
            at.segments.pop();
        }
        Node::List(l) => {
            for (i, e) in l.entries().enumerate() {
                let sel = canopy_core::diff::entry_selector(l, e, i);
                if seg.selector != Selector::None && seg.selector != sel {
                    continue;
                }
                at.segments.push(Segment { name: seg.name.clone(), selector: sel });
                visit_paths(e, rest, at, f);
                at.segments.pop();
            }
        }
        Node::Leaf { value, .. } if rest.is_empty() => {
            at.segments.push(Segment { name: seg.name.clone(), selector: Selector::None });
            f(at, value);
            at.segments.pop();
        }
        Node::LeafList(v) if rest.is_empty() => {
            for e in v {
                at.segments.push(Segment {
                    name: seg.name.clone(),
                    selector: Selector::Value(e.value.as_text().into_owned()),
                });
                f(at, &e.value);
                at.segments.pop();
            }
        }
        _ => {}
    }
}

/// The subtree a node's expressions are evaluated in: its nearest list entry
/// ancestor (or the top-level node), raised `up` levels for expressions that
/// climb with `..`.
fn scope_of(path: &Path, up: usize) -> Path {
    let n = path.segments.len();
    let mut depth = n.saturating_sub(up + 1).max(1);
    while depth > 1 && !matches!(path.segments[depth - 1].selector, Selector::Keys(_) | Selector::Position(_)) {
        depth -= 1;
    }
    Path { segments: path.segments[..depth.min(n)].to_vec() }
}

/// Top-level names an expression reaches by absolute path (`/m:x/...`).
fn absolute_tops(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    for (i, &c) in b.iter().enumerate() {
        if c != b'/' {
            continue;
        }
        let prev = if i == 0 { b' ' } else { b[i - 1] };
        if prev == b'/' || prev == b'.' || prev.is_ascii_alphanumeric() || prev == b']' || prev == b')' || prev == b'*'
        {
            continue;
        }
        let name: String = expr[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}
