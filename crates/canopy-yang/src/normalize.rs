//! Paths, edits and values checked against the schema and put in canonical
//! form; defaults added to or trimmed from read results.

use canopy_core::edit::{Edit, Operation};
use canopy_core::path::{Path, Segment, Selector};
use canopy_core::schema::NodeKind;
use canopy_core::tree::{Container, Insert, LeafListEntry, List, ListInfo, Node};
use canopy_core::{Value, Violation};

use crate::ly::Checked;
use crate::YangSchema;

/// How a read reports default values (RFC 6243).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WithDefaults {
    /// Only what is stored (set explicitly), defaults or not.
    #[default]
    Explicit,
    /// Stored values, plus the default of every leaf and leaf-list that is
    /// not set, in every container and entry that exists.
    ReportAll,
    /// Stored values except those equal to their default.
    Trim,
}

/// What a pass over a tree does with default values: a with-defaults mode, or
/// tagging the values `trim` would leave out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    Mode(WithDefaults),
    Tag,
}

impl std::str::FromStr for WithDefaults {
    type Err = String;
    fn from_str(s: &str) -> Result<WithDefaults, String> {
        match s {
            "explicit" => Ok(WithDefaults::Explicit),
            "report-all" => Ok(WithDefaults::ReportAll),
            "trim" => Ok(WithDefaults::Trim),
            _ => Err(format!("unknown with-defaults mode `{s}` (explicit, report-all, trim)")),
        }
    }
}

fn kind_name(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Container => "a container",
        NodeKind::List => "a list",
        NodeKind::Leaf => "a leaf",
        NodeKind::LeafList => "a leaf-list",
        NodeKind::AnyData => "an anydata node",
    }
}

fn node_name(n: &Node) -> &'static str {
    match n {
        Node::Container(_) => "a container",
        Node::List(_) => "a list",
        Node::Leaf { .. } => "a leaf value",
        Node::LeafList(_) => "a leaf-list",
        Node::AnyData { .. } => "anydata",
    }
}

impl YangSchema {
    /// Checks `value` against the type of the leaf or leaf-list at schema node
    /// `idx` and returns it canonical, typed as RFC 7951 encodes it.
    pub(crate) fn check_value(&self, idx: usize, value: &Value) -> Result<Value, String> {
        if let Some(r) = crate::values::fast_check(self.model.nodes[idx].fast, value) {
            return r;
        }
        let ctx = self.ctx.lock().map_err(|_| "schema lock poisoned".to_string())?;
        let node = ctx.node_at(self.model.nodes[idx].raw);
        match ctx.check_value(&node, &crate::values::text(value)) {
            Checked::Ok { canonical, base } => Ok(crate::values::typed(base, canonical)),
            Checked::Invalid(reason) => Err(reason),
        }
    }

    /// [`YangSchema::check_value`] in place: `value` becomes its canonical
    /// form where that differs; whether it did. A string of a string type is
    /// left as it is, without a copy.
    fn check_value_mut(&self, idx: usize, value: &mut Value) -> Result<bool, String> {
        if let (crate::values::Fast::String, Value::String(_)) = (self.model.nodes[idx].fast, &*value) {
            return Ok(false);
        }
        let v = self.check_value(idx, value)?;
        if *value == v {
            return Ok(false);
        }
        *value = v;
        Ok(true)
    }

    /// The typed value of a key (`key` of the entry at `at`) or leaf-list
    /// entry (`at` itself) given as path text; a string when the schema does
    /// not know the node or the text does not fit (edits are checked before).
    pub fn path_value(&self, at: &Path, key: Option<&str>, text: &str) -> Value {
        let idx = self.model.index_of(at).and_then(|i| match key {
            Some(k) => self.model.nodes[i].children.get(k).copied(),
            None => Some(i),
        });
        match idx {
            Some(i) => self.check_text(i, text).unwrap_or_else(|_| Value::String(text.into())),
            None => Value::String(text.into()),
        }
    }

    /// [`YangSchema::check_value`] of a value given as text.
    fn check_text(&self, idx: usize, text: &str) -> Result<Value, String> {
        match self.model.nodes[idx].fast {
            crate::values::Fast::String => Ok(Value::String(text.into())),
            _ => self.check_value(idx, &Value::String(text.into())),
        }
    }

    /// Resolves an instance path against the schema: every name must be a
    /// data node of its parent (module prefixes where RFC 7951 puts them),
    /// list entries carry exactly their keys (put in schema order, values
    /// canonical), leaf-list entries canonical values. Entries on the way to
    /// the last segment must have all keys. Returns the canonical path and
    /// the schema node of each segment.
    ///
    /// # Errors
    /// [`canopy_core::Error::Path`] naming the position of the first segment
    /// that does not fit, and why.
    pub fn resolve_path(&self, path: &Path) -> Result<(Path, Vec<usize>), canopy_core::Error> {
        let (idxs, changed) = self.resolve_segments(path)?;
        let mut out = path.clone();
        for (i, seg) in changed {
            out.segments[i] = seg;
        }
        Ok((out, idxs))
    }

    /// [`YangSchema::resolve_path`] taking the path by value: a path that is
    /// canonical already (the common case) is returned as it is, not copied.
    ///
    /// # Errors
    /// As [`YangSchema::resolve_path`].
    pub fn resolve_path_owned(&self, mut path: Path) -> Result<(Path, Vec<usize>), canopy_core::Error> {
        let (idxs, changed) = self.resolve_segments(&path)?;
        for (i, seg) in changed {
            path.segments[i] = seg;
        }
        Ok((path, idxs))
    }

    /// The schema node of each segment of `path`, and the segments whose
    /// canonical form differs from the written one (by index).
    #[allow(clippy::type_complexity)]
    fn resolve_segments(&self, path: &Path) -> Result<(Vec<usize>, Vec<(usize, Segment)>), canopy_core::Error> {
        let mut changed = Vec::new();
        let mut idxs = Vec::with_capacity(path.segments.len());
        let mut parent = None;
        let last = path.segments.len().saturating_sub(1);
        for (i, seg) in path.segments.iter().enumerate() {
            let err = |reason: String| {
                let pos = 1 + path.segments[..i].iter().map(|s| s.to_string().len() + 1).sum::<usize>();
                canopy_core::Error::Path { input: path.to_string(), pos, reason }
            };
            let Some(ci) = self.model.child(parent, &seg.name) else {
                let at = match parent {
                    None => "at the top level".to_string(),
                    Some(p) => {
                        let pn = &self.model.nodes[p];
                        if matches!(pn.kind, NodeKind::Leaf | NodeKind::LeafList | NodeKind::AnyData) {
                            return Err(err(format!("{} is {}: it has no children", pn.path, kind_name(pn.kind))));
                        }
                        format!("in {}", pn.path)
                    }
                };
                let mut names = self.model.child_names(parent);
                let more = names.len() > 12;
                names.truncate(12);
                return Err(err(format!(
                    "no schema node `{}` {at} (there: {}{})",
                    seg.name,
                    if names.is_empty() { "nothing".to_string() } else { names.join(", ") },
                    if more { ", …" } else { "" }
                )));
            };
            let n = &self.model.nodes[ci];
            let selector = match (&seg.selector, n.kind) {
                (Selector::None, NodeKind::List) if i < last => {
                    return Err(err(format!("list {} needs its keys [{}] here", n.path, n.keys.join(", "))))
                }
                (Selector::None, _) => Selector::None,
                // Every key in schema order, each value canonical already (a
                // bulk edit's path as a program writes it): checked in place.
                (Selector::Keys(kv), NodeKind::List)
                    if !n.keys.is_empty()
                        && kv.len() == n.keys.len()
                        && kv.iter().zip(&n.keys).all(|((k, _), key)| k == key)
                        && kv.iter().zip(&n.keys).all(|((_, v), key)| {
                            self.check_text(n.children[key], v).is_ok_and(|c| c.as_text() == v.as_str())
                        }) =>
                {
                    if n.name != seg.name {
                        changed.push((i, Segment { name: n.name.clone(), selector: seg.selector.clone() }));
                    }
                    idxs.push(ci);
                    parent = Some(ci);
                    continue;
                }
                (Selector::Keys(kv), NodeKind::List) if !n.keys.is_empty() => {
                    let mut vals: Vec<Option<String>> = vec![None; n.keys.len()];
                    for (k, v) in kv {
                        let local = k.split_once(':').filter(|(m, _)| *m == n.module).map_or(k.as_str(), |(_, l)| l);
                        let Some(ki) = n.keys.iter().position(|key| key == local) else {
                            return Err(err(format!(
                                "`{k}` is not a key of list {} (keys: {})",
                                n.path,
                                n.keys.join(", ")
                            )));
                        };
                        let key_idx = n.children[&n.keys[ki]];
                        let canon = self.check_text(key_idx, v).map_err(|r| err(format!("key {k}='{v}': {r}")))?;
                        vals[ki] = Some(canon.as_text().into_owned());
                    }
                    if vals.iter().any(Option::is_none) {
                        return Err(err(format!("list {} needs all its keys: {}", n.path, n.keys.join(", "))));
                    }
                    let same = kv.len() == n.keys.len()
                        && kv
                            .iter()
                            .zip(&n.keys)
                            .zip(&vals)
                            .all(|(((k, v), key), c)| k == key && c.as_deref() == Some(v));
                    match same {
                        true => seg.selector.clone(),
                        false => Selector::Keys(
                            n.keys
                                .iter()
                                .cloned()
                                .zip(vals.into_iter().map(|v| v.unwrap_or_default().into()))
                                .collect(),
                        ),
                    }
                }
                (Selector::Keys(_), NodeKind::List) => {
                    return Err(err(format!("list {} has no keys: address its entries by position", n.path)))
                }
                (Selector::Position(p), NodeKind::List) if n.keys.is_empty() => Selector::Position(*p),
                (Selector::Value(v), NodeKind::LeafList) => {
                    let canon = self
                        .check_value(ci, &Value::String(v.as_str().into()))
                        .map_err(|r| err(format!("value '{v}': {r}")))?;
                    Selector::Value(canon.as_text().into_owned())
                }
                (sel, kind) => {
                    return Err(err(format!(
                        "{} is {}: it takes no `{}` predicate",
                        n.path,
                        kind_name(kind),
                        Segment { name: Default::default(), selector: sel.clone() }
                    )))
                }
            };
            if n.name != seg.name || selector != seg.selector {
                changed.push((i, Segment { name: n.name.clone(), selector }));
            }
            idxs.push(ci);
            parent = Some(ci);
        }
        Ok((idxs, changed))
    }

    /// Checks an edit against the schema and returns it canonical: its path
    /// (see [`YangSchema::resolve_path`]), every node of its value (names,
    /// kinds, value types), and its insert anchor. State data (`config
    /// false`) may be edited only when `state` is true.
    ///
    /// # Errors
    /// Every problem found, each with its path.
    pub fn normalize_edit(&self, edit: Edit, state: bool) -> Result<Edit, Vec<Violation>> {
        let (idxs, changed) = self.resolve_segments(&edit.path).map_err(|e| {
            let reason = match e {
                canopy_core::Error::Path { pos, reason, .. } => format!("at position {pos}: {reason}"),
                other => other.to_string(),
            };
            vec![Violation { path: edit.path.to_string(), reason }]
        })?;
        let mut path = edit.path;
        for (i, seg) in changed {
            path.segments[i] = seg;
        }
        let mut errs = Vec::new();
        let at = idxs.last().copied();
        if let Some(i) = at {
            let n = &self.model.nodes[i];
            if !state && !n.config && !matches!(edit.op, Operation::Delete | Operation::Remove) {
                errs.push(Violation {
                    path: path.to_string(),
                    reason: format!("{} is state data (config false): it cannot be edited in this datastore", n.path),
                });
            }
        }
        let value = match edit.value {
            None => None,
            Some(mut v) => {
                let entry = matches!(
                    path.last().map(|s| &s.selector),
                    Some(Selector::Keys(_) | Selector::Position(_) | Selector::Value(_))
                );
                // Extended while descending and restored.
                self.normalize_node(at, entry, &mut path, &mut v, state, &mut errs);
                Some(v)
            }
        };
        let insert = match (edit.insert, at) {
            (Some(Insert::Before(vals)), Some(i)) => Some(Insert::Before(self.anchor(i, vals, &path, &mut errs))),
            (Some(Insert::After(vals)), Some(i)) => Some(Insert::After(self.anchor(i, vals, &path, &mut errs))),
            (ins, _) => ins,
        };
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Edit { op: edit.op, path, value, insert })
    }

    /// The anchor of an insert before/after, canonical: key values of a
    /// keyed list entry, the value of a leaf-list entry.
    fn anchor(&self, idx: usize, vals: Vec<String>, path: &Path, errs: &mut Vec<Violation>) -> Vec<String> {
        let n = &self.model.nodes[idx];
        let leaves: Vec<usize> = match n.kind {
            NodeKind::List if !n.keys.is_empty() => n.keys.iter().map(|k| n.children[k]).collect(),
            NodeKind::LeafList => vec![idx],
            _ => return vals,
        };
        if leaves.len() != vals.len() {
            errs.push(Violation {
                path: path.to_string(),
                reason: format!("the insert anchor needs {} value(s), got {}", leaves.len(), vals.len()),
            });
            return vals;
        }
        vals.into_iter()
            .zip(leaves)
            .map(|(v, li)| match self.check_value(li, &Value::String(v.as_str().into())) {
                Ok(c) => c.as_text().into_owned(),
                Err(r) => {
                    errs.push(Violation { path: path.to_string(), reason: format!("insert anchor '{v}': {r}") });
                    v
                }
            })
            .collect()
    }

    /// `node`, given for the schema node `at` (the root when `None`; a list
    /// entry's content when `entry`), checked and made canonical in place.
    /// `path` is where it is; it is extended while descending and restored.
    fn normalize_node(
        &self,
        at: Option<usize>,
        entry: bool,
        path: &mut Path,
        node: &mut Node,
        state: bool,
        errs: &mut Vec<Violation>,
    ) {
        let kind = at.map(|i| self.model.nodes[i].kind);
        match (kind, node) {
            (None, Node::Container(c)) | (Some(NodeKind::Container), Node::Container(c)) => {
                self.normalize_children(at, path, c, state, errs);
            }
            (Some(NodeKind::List), Node::Container(c)) if entry => {
                self.normalize_children(at, path, c, state, errs);
            }
            (Some(NodeKind::List), Node::List(l)) => {
                let i = at.expect("list");
                let n = &self.model.nodes[i];
                let info = if n.keys.is_empty() {
                    ListInfo::keyless()
                } else {
                    ListInfo { keys: n.keys.clone(), user_ordered: n.user_ordered }
                };
                let mut keys_changed = l.info != info;
                for (pos, e) in l.entries_mut().enumerate() {
                    let before = errs.len();
                    let sel = Selector::Position(pos as u64 + 1);
                    let saved = std::mem::replace(&mut path.segments.last_mut().expect("list segment").selector, sel);
                    let mut changed = self.normalize_children(at, path, e, state, errs);
                    if errs.len() > before {
                        // Messages name the entry by its keys when it has them:
                        // again with them (normalising twice changes nothing).
                        if let Some(vals) = e.key_values(&info).filter(|v| !v.is_empty()) {
                            errs.truncate(before);
                            path.segments.last_mut().expect("list segment").selector =
                                Selector::Keys(info.keys.iter().cloned().zip(vals).collect());
                            changed |= self.normalize_children(at, path, e, state, errs);
                        }
                    }
                    path.segments.last_mut().expect("list segment").selector = saved;
                    keys_changed |= changed;
                }
                if keys_changed {
                    // Canonical key values (or the schema's keys): the
                    // entries' places change, rebuild the list.
                    let old = std::mem::replace(l.as_mut(), List::new(info));
                    for e in old.into_entries() {
                        if let Err(err) = l.insert(e, &Insert::Last) {
                            errs.push(Violation { path: path.to_string(), reason: err.to_string() });
                        }
                    }
                }
            }
            (Some(NodeKind::Leaf), Node::Leaf { value, .. }) => {
                self.normalize_value(at.expect("leaf"), path, value, errs)
            }
            (Some(NodeKind::LeafList), Node::Leaf { value, .. }) if entry => {
                // The value of one entry (its path names it).
                self.normalize_value(at.expect("leaf-list"), path, value, errs)
            }
            (Some(NodeKind::LeafList), Node::LeafList(entries)) => {
                let i = at.expect("leaf-list");
                for e in entries.iter_mut() {
                    self.normalize_value(i, path, &mut e.value, errs);
                }
                let mut seen = std::collections::HashSet::new();
                for e in entries.iter() {
                    if !seen.insert(e.value.as_text()) {
                        errs.push(Violation {
                            path: path.to_string(),
                            reason: format!("value '{}' appears twice (leaf-list values are unique)", e.value),
                        });
                    }
                }
            }
            (Some(NodeKind::AnyData), Node::AnyData { .. } | Node::Leaf { .. } | Node::Container(_)) => {}
            (kind, node) => errs.push(Violation {
                path: path.to_string(),
                reason: format!(
                    "{} is {} in the schema, not {}",
                    at.map_or("/", |i| self.model.nodes[i].path.as_str()),
                    kind.map_or("the root", kind_name),
                    node_name(node)
                ),
            }),
        }
    }

    fn normalize_value(&self, idx: usize, path: &Path, value: &mut Value, errs: &mut Vec<Violation>) {
        match self.check_value(idx, value) {
            Ok(v) => *value = v,
            Err(r) => errs.push(Violation { path: path.to_string(), reason: format!("invalid value '{value}': {r}") }),
        }
    }

    /// Returns whether a key leaf of `c` (an entry of list `parent`) changed
    /// its value (made canonical).
    fn normalize_children(
        &self,
        parent: Option<usize>,
        path: &mut Path,
        c: &mut Container,
        state: bool,
        errs: &mut Vec<Violation>,
    ) -> bool {
        let keys: &[canopy_core::tree::Name] = match parent {
            Some(p) if self.model.nodes[p].kind == NodeKind::List => &self.model.nodes[p].keys,
            _ => &[],
        };
        let mut key_changed = false;
        let mut renames: Vec<(canopy_core::tree::Name, canopy_core::tree::Name)> = Vec::new();
        for (name, child) in c.children.iter_mut() {
            let Some(ci) = self.model.child(parent, name) else {
                let mut names = self.model.child_names(parent);
                names.truncate(12);
                errs.push(Violation {
                    path: path.child(name.clone(), Selector::None).to_string(),
                    reason: format!(
                        "no schema node `{name}` {} (there: {})",
                        parent.map_or("at the top level".to_string(), |p| format!("in {}", self.model.nodes[p].path)),
                        if names.is_empty() { "nothing".to_string() } else { names.join(", ") }
                    ),
                });
                continue;
            };
            let n = &self.model.nodes[ci];
            if !state && !n.config {
                errs.push(Violation {
                    path: path.child(n.name.clone(), Selector::None).to_string(),
                    reason: format!("{} is state data (config false): it cannot be edited in this datastore", n.path),
                });
                continue;
            }
            if *name != n.name {
                renames.push((name.clone(), n.name.clone()));
            }
            if let (NodeKind::Leaf, Node::Leaf { value, .. }) = (n.kind, &mut *child) {
                // The common case, without extending the path.
                match self.check_value_mut(ci, value) {
                    Ok(changed) => {
                        if changed && !keys.is_empty() && keys.contains(&n.name) {
                            key_changed = true;
                        }
                    }
                    Err(r) => errs.push(Violation {
                        path: path.child(n.name.clone(), Selector::None).to_string(),
                        reason: format!("invalid value '{value}': {r}"),
                    }),
                }
                continue;
            }
            path.segments.push(Segment { name: n.name.clone(), selector: Selector::None });
            self.normalize_node(Some(ci), false, path, child, state, errs);
            path.segments.pop();
        }
        for (old, new) in renames {
            if let Some(node) = c.children.remove(&old) {
                c.children.insert(new, node);
            }
        }
        key_changed
    }

    /// Applies a with-defaults mode to the node at `path` in `tree` (a read
    /// result) and everything below it.
    pub fn with_defaults(&self, tree: &mut Container, path: &Path, mode: WithDefaults) {
        if mode != WithDefaults::Explicit {
            self.defaults_pass(tree, path, Pass::Mode(mode));
        }
    }

    fn defaults_pass(&self, tree: &mut Container, path: &Path, mode: Pass) {
        let Ok((_, idxs)) = self.resolve_path(path) else { return };
        let at = idxs.last().copied();
        let Ok(target) = canopy_core::diff::container_mut(tree, path) else {
            // A list (all entries), a leaf or a leaf-list: the defaults of
            // what is selected.
            if let (Some(i), Some(parent)) = (at, path.parent()) {
                let n = &self.model.nodes[i];
                if let Ok(pc) = canopy_core::diff::container_mut(tree, &parent) {
                    match n.kind {
                        NodeKind::List => {
                            if let Some(Node::List(l)) = pc.children.get_mut(&n.name) {
                                for e in l.entries_mut() {
                                    self.defaults_in(e, Some(i), mode);
                                }
                            }
                        }
                        NodeKind::Leaf | NodeKind::LeafList => self.default_leaf(pc, i, mode, true),
                        _ => {}
                    }
                }
            }
            return;
        };
        self.defaults_in(target, at, mode);
    }

    /// Tags every leaf and leaf-list at or below `path` in `tree` whose value
    /// is its schema default (what `trim` would leave out) with the
    /// `ietf-netconf-with-defaults:default` annotation: `report-all-tagged`
    /// (RFC 6243 section 3.4) on a tree read with `report-all`.
    pub fn tag_defaults(&self, tree: &mut Container, path: &Path) {
        self.defaults_pass(tree, path, Pass::Tag);
    }

    /// Adds (report-all) or removes (trim) default values in `c`, the data of
    /// schema node `at`, recursively; or tags them.
    fn defaults_in(&self, c: &mut Container, at: Option<usize>, mode: Pass) {
        let kids: Vec<usize> = match at {
            None => self.model.top.values().copied().collect(),
            Some(i) => self.model.nodes[i].children.values().copied().collect(),
        };
        for ci in kids {
            let n = &self.model.nodes[ci];
            match n.kind {
                NodeKind::Leaf | NodeKind::LeafList => self.default_leaf(c, ci, mode, false),
                NodeKind::Container => {
                    if let Some(Node::Container(cc)) = c.children.get_mut(&n.name) {
                        self.defaults_in(cc, Some(ci), mode);
                    } else if !c.children.contains_key(&n.name)
                        && mode == Pass::Mode(WithDefaults::ReportAll)
                        && !n.presence
                        && self.case_active(c, ci)
                    {
                        let mut cc = Container::default();
                        self.defaults_in(&mut cc, Some(ci), mode);
                        if !cc.children.is_empty() {
                            c.children.insert(n.name.clone(), Node::Container(cc));
                        }
                    }
                }
                NodeKind::List => {
                    if let Some(Node::List(l)) = c.children.get_mut(&n.name) {
                        for e in l.entries_mut() {
                            self.defaults_in(e, Some(ci), mode);
                        }
                    }
                }
                NodeKind::AnyData => {}
            }
        }
    }

    fn default_leaf(&self, c: &mut Container, i: usize, mode: Pass, selected: bool) {
        let n = &self.model.nodes[i];
        if n.defaults.is_empty() {
            return;
        }
        match mode {
            Pass::Mode(WithDefaults::Explicit) => {}
            Pass::Mode(WithDefaults::ReportAll) => {
                if !c.children.contains_key(&n.name) && (selected || self.case_active(c, i)) {
                    let node = if n.kind == NodeKind::Leaf {
                        Node::leaf(n.defaults[0].clone())
                    } else {
                        Node::LeafList(
                            n.defaults
                                .iter()
                                .map(|v| LeafListEntry { value: v.clone(), meta: Default::default() })
                                .collect(),
                        )
                    };
                    c.children.insert(n.name.clone(), node);
                }
            }
            Pass::Mode(WithDefaults::Trim) | Pass::Tag => {
                let is_default = match c.children.get(&n.name) {
                    Some(Node::Leaf { value, .. }) => n.kind == NodeKind::Leaf && *value == n.defaults[0],
                    Some(Node::LeafList(v)) => {
                        v.len() == n.defaults.len() && v.iter().zip(&n.defaults).all(|(e, d)| e.value == *d)
                    }
                    _ => false,
                };
                if !is_default {
                    return;
                }
                let tag = |meta: &mut canopy_core::Meta| {
                    meta.insert(canopy_core::json::DEFAULT_TAG.to_string(), "true".to_string());
                };
                match (mode, c.children.get_mut(&n.name)) {
                    (Pass::Mode(_), _) => {
                        c.children.remove(&n.name);
                    }
                    (_, Some(Node::Leaf { meta, .. })) => tag(meta),
                    (_, Some(Node::LeafList(v))) => v.iter_mut().for_each(|e| tag(&mut e.meta)),
                    _ => {}
                }
            }
        }
    }

    /// Whether the case schema node `i` lies in is the one in use in `c`: a
    /// node outside any choice always is; a case is when data of it exists,
    /// or when it is the default case and no other case has data.
    pub(crate) fn case_active(&self, c: &Container, i: usize) -> bool {
        let Some((choice, case)) = self.model.nodes[i].case else { return true };
        let parent = self.model.nodes[i].parent;
        let mut other_case_used = false;
        for name in c.children.keys() {
            let Some(si) = self.model.child(parent, name) else { continue };
            if let Some((ch, cs)) = self.model.nodes[si].case {
                if ch == choice {
                    if cs == case {
                        return true;
                    }
                    other_case_used = true;
                }
            }
        }
        !other_case_used && self.model.cases.get(&case).is_some_and(|&(_, default)| default)
    }
}
