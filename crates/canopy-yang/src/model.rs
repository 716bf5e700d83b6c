//! The compiled schema as plain Rust data: one [`SNode`] per data node, found
//! by canopy schema path (`/m:cont/lst/l`, RFC 7951 names) or by walking names
//! from the top. Built once per schema from libyang's compiled tree; the
//! engine's questions (kinds, keys, ordering, defaults, constraints) are
//! answered from here without calling libyang.

use std::collections::BTreeMap;

use canopy_core::FastMap as HashMap;

use canopy_core::schema::NodeKind;
use canopy_core::Value;
use yang3::schema::{SchemaNode, SchemaNodeKind};

use crate::ly::{Ctx, Expr};

/// One data node of the schema.
#[derive(Debug)]
pub struct SNode {
    /// Its name under its parent, RFC 7951 style (`m:x` at the top and where
    /// the module changes, `x` otherwise).
    pub name: canopy_core::tree::Name,
    pub module: String,
    pub kind: NodeKind,
    /// `config true` (false: state data).
    pub config: bool,
    pub parent: Option<usize>,
    /// Children by their canonical name.
    pub children: BTreeMap<canopy_core::tree::Name, usize>,
    /// List keys in schema order.
    pub keys: Vec<canopy_core::tree::Name>,
    pub user_ordered: bool,
    /// A presence container.
    pub presence: bool,
    pub mandatory: bool,
    pub min: u32,
    pub max: Option<u32>,
    /// Default values, canonical (one for a leaf, any number for a leaf-list).
    pub defaults: Vec<Value>,
    /// The canopy schema path.
    pub path: String,
    pub(crate) musts: Vec<Expr>,
    pub(crate) whens: Vec<Expr>,
    /// Leafref: the target node and whether an instance is required.
    pub leafref: Option<(usize, bool)>,
    /// `unique` statements: each a list of descendant paths (names from the list).
    pub uniques: Vec<Vec<Vec<canopy_core::tree::Name>>>,
    /// Nearest enclosing choice and case (libyang node addresses), for
    /// defaults of non-default cases and mandatory choices.
    pub(crate) case: Option<(usize, usize)>,
    pub(crate) raw: usize,
    /// Creating this node or anything below it asks for a check (mandatory
    /// children, element counts, unique, leafref, must, when): `false` lets
    /// validation skip a created subtree without walking it.
    pub checked_on_create: bool,
    /// The node has mandatory children (leaves, choices, lists with
    /// min-elements), directly or in non-presence containers.
    pub has_mandatory: bool,
    /// How values are checked without libyang, where they can be.
    pub(crate) fast: crate::values::Fast,
    /// A leaf or leaf-list of a 64-bit integer type (through typedefs), which
    /// RFC 7951 writes as a JSON string; APIs that print it as a number
    /// (ONAP CPS's) need to know.
    pub int64: bool,
    /// Some leaf or leaf-list child is a 64-bit integer (`int64` of a child).
    pub int64_children: bool,
    /// The JSON kind RFC 7951 writes a leaf's or leaf-list's values in
    /// (`None` for other nodes and for unions).
    pub(crate) json_kind: Option<crate::values::JsonKind>,
    /// An instance-identifier whose target must exist.
    pub instance_required: bool,
    /// Data nodes from the top down to this one (1 for a top-level node).
    pub depth: usize,
    /// A leafref's path resolved against the schema, with its predicates;
    /// `None` for other nodes and for paths this crate cannot follow (then
    /// any instance of the target with the value satisfies the leafref).
    pub leafref_path: Option<LeafrefPath>,
    /// What this node's must and when expressions read.
    pub(crate) reads: Option<ExprReads>,
    /// The nodes whose must or when expressions read this node.
    pub readers: Vec<usize>,
    /// A change of this node or of anything below it matters to a check
    /// elsewhere (a leafref target, a leafref predicate's key, a node some
    /// must or when reads): `false` lets validation skip a deleted subtree.
    pub watched_below: bool,
    /// As `watched_below`, counting only checks of configuration nodes (what
    /// a configuration datastore can hold).
    pub watched_below_config: bool,
    /// This node or one below it is a configuration leafref that requires
    /// its target: the leafrefs a store indexes by value (see
    /// [`crate::YangSchema::leafref_index_id`]).
    pub indexed_below: bool,
}

/// A leafref path (RFC 7950 `path-arg`) resolved against the schema.
#[derive(Clone, Debug)]
pub struct LeafrefPath {
    /// The `..` steps from the leafref node before the path descends;
    /// `None` for an absolute path.
    pub up: Option<usize>,
    /// The nodes the path descends through, the target last, each with its
    /// predicates.
    pub steps: Vec<(usize, Vec<KeyPredicate>)>,
}

/// One `[key = current()/../x]` predicate of a leafref path.
#[derive(Clone, Debug)]
pub struct KeyPredicate {
    /// The child of the list step compared (its canonical name).
    pub key: canopy_core::tree::Name,
    /// The `..` steps from the leafref node to the ancestor the key
    /// expression descends from.
    pub up: usize,
    /// The canonical names from that ancestor down to the leaf holding the
    /// value.
    pub down: Vec<canopy_core::tree::Name>,
    /// That leaf.
    pub source: usize,
}

/// The schema nodes a node's must and when expressions read (libyang's atoms).
#[derive(Clone, Debug, Default)]
pub(crate) struct ExprReads {
    pub atoms: Vec<usize>,
    /// The depth of the highest node the expressions reach (0: the root,
    /// for absolute paths or paths into another top-level tree).
    pub reach: usize,
    /// Lists on the node's own branch that the expressions name by a step
    /// (so they may read other entries than the node's own).
    pub named: Vec<usize>,
    /// The expressions navigate in ways the names do not show (`//`, `*`,
    /// axes, `deref()`): every list on the way may be crossed.
    pub wild: bool,
}

/// All data nodes of a schema.
#[derive(Debug, Default)]
pub struct Model {
    pub nodes: Vec<SNode>,
    /// Top-level nodes by canonical name (`m:x`).
    pub top: BTreeMap<canopy_core::tree::Name, usize>,
    pub by_path: HashMap<String, usize>,
    pub(crate) by_raw: HashMap<usize, usize>,
    /// Leafref target node → the leafref nodes pointing at it.
    pub referrers: HashMap<usize, Vec<usize>>,
    /// Instance-identifier leaves that require their target.
    pub instance_ids: Vec<usize>,
    /// A leaf some leafref predicate reads its key from → (leafref node,
    /// `..` steps from the leafref to the common ancestor, names from there
    /// down to the leaf).
    pub key_sources: HashMap<usize, Vec<(usize, usize, usize)>>,
    /// Mandatory choices: (choice address, enclosing data node or None at the top, choice name).
    pub(crate) mandatory_choices: Vec<(usize, Option<usize>, String)>,
    /// Case address → its choice's address and whether it is the default case.
    pub(crate) cases: HashMap<usize, (usize, bool)>,
    /// The identity of the set of indexed leafrefs (`None`: there are none).
    pub(crate) leafref_index: Option<u64>,
}

impl Model {
    pub(crate) fn build(ctx: &Ctx) -> Model {
        let mut m = Model::default();
        for module in ctx.ctx.modules(true) {
            if !module.is_implemented() {
                continue;
            }
            for node in module.data() {
                m.add(ctx, &node, None, None);
            }
        }
        // Leafrefs point at nodes anywhere; resolve once all exist.
        for i in 0..m.nodes.len() {
            let raw = m.nodes[i].raw;
            if !matches!(m.nodes[i].kind, NodeKind::Leaf | NodeKind::LeafList) {
                continue;
            }
            let node = ctx.node_at(raw);
            let Some(t) = node.leaf_type() else { continue };
            if t.base_type() != yang3::schema::DataValueType::LeafRef {
                continue;
            }
            let require = ctx.leafref_requires_instance(&node);
            if let Some(target) = ctx.leafref_target(&node) {
                if let Some(&ti) = m.by_raw.get(&(target.as_raw() as usize)) {
                    m.nodes[i].leafref = Some((ti, require));
                    m.referrers.entry(ti).or_default().push(i);
                    let lp = ctx.leafref_path(&node).and_then(|t| m.resolve_leafref(i, ti, &t));
                    if let Some(lp) = &lp {
                        for (_, preds) in &lp.steps {
                            for p in preds {
                                let list = m.key_sources.entry(p.source).or_default();
                                if !list.iter().any(|&(l, _, _)| l == i) {
                                    list.push((i, p.up, p.down.len()));
                                }
                            }
                        }
                    }
                    m.nodes[i].leafref_path = lp;
                }
            }
        }
        m.instance_ids = (0..m.nodes.len()).filter(|&i| m.nodes[i].instance_required).collect();
        // What each must and when reads, and the reverse: who reads each node.
        for i in 0..m.nodes.len() {
            if m.nodes[i].musts.is_empty() && m.nodes[i].whens.is_empty() {
                continue;
            }
            let reads = m.expr_reads(ctx, i);
            for &a in &reads.atoms {
                if !m.nodes[a].readers.contains(&i) {
                    m.nodes[a].readers.push(i);
                }
            }
            m.nodes[i].reads = Some(reads);
        }
        // Uniques name leaves by address; turn them into relative names.
        for i in 0..m.nodes.len() {
            if m.nodes[i].kind != NodeKind::List {
                continue;
            }
            let node = ctx.node_at(m.nodes[i].raw);
            let mut uniques = Vec::new();
            for set in ctx.uniques(&node) {
                let mut paths = Vec::new();
                for leaf in set {
                    let Some(&li) = m.by_raw.get(&(leaf.as_raw() as usize)) else { continue };
                    let mut names = Vec::new();
                    let mut at = li;
                    while at != i {
                        names.push(m.nodes[at].name.clone());
                        match m.nodes[at].parent {
                            Some(p) => at = p,
                            None => break,
                        }
                    }
                    names.reverse();
                    paths.push(names);
                }
                uniques.push(paths);
            }
            m.nodes[i].uniques = uniques;
        }
        // Children come after their parent: fill the flags bottom-up.
        let choice_parents: Vec<Option<usize>> = m.mandatory_choices.iter().map(|(_, p, _)| *p).collect();
        for i in (0..m.nodes.len()).rev() {
            let n = &m.nodes[i];
            let mut mandatory = choice_parents.contains(&Some(i));
            let mut checked = !n.musts.is_empty()
                || !n.whens.is_empty()
                || n.leafref.is_some()
                || n.instance_required
                || n.min > 0
                || n.max.is_some()
                || !n.uniques.is_empty()
                || !n.readers.is_empty()
                || m.key_sources.contains_key(&i);
            let mut watched = !n.readers.is_empty() || m.referrers.contains_key(&i) || m.key_sources.contains_key(&i);
            let config = |j: &usize| m.nodes[*j].config;
            let mut watched_config = n.readers.iter().any(config)
                || m.referrers.get(&i).is_some_and(|r| r.iter().any(config))
                || m.key_sources.get(&i).is_some_and(|s| s.iter().any(|(lr, _, _)| config(lr)));
            let mut indexed = n.config && n.leafref.is_some_and(|(_, required)| required);
            for &c in n.children.values() {
                let cn = &m.nodes[c];
                indexed |= cn.indexed_below;
                mandatory |= cn.config
                    && ((cn.mandatory && matches!(cn.kind, NodeKind::Leaf | NodeKind::AnyData))
                        || (cn.min > 0 && matches!(cn.kind, NodeKind::List | NodeKind::LeafList))
                        || (cn.kind == NodeKind::Container && !cn.presence && cn.has_mandatory));
                checked |= cn.checked_on_create;
                watched |= cn.watched_below;
                watched_config |= cn.watched_below_config;
            }
            m.nodes[i].watched_below = watched;
            m.nodes[i].watched_below_config = watched_config;
            m.nodes[i].indexed_below = indexed;
            m.nodes[i].has_mandatory = mandatory;
            m.nodes[i].checked_on_create = checked || mandatory;
        }
        m.leafref_index = crate::leafrefs::index_id(&m);
        m
    }

    fn add(&mut self, ctx: &Ctx, node: &SchemaNode<'_>, parent: Option<usize>, case: Option<(usize, usize)>) {
        let kind = match node.kind() {
            SchemaNodeKind::Container => NodeKind::Container,
            SchemaNodeKind::List => NodeKind::List,
            SchemaNodeKind::Leaf => NodeKind::Leaf,
            SchemaNodeKind::LeafList => NodeKind::LeafList,
            SchemaNodeKind::AnyData | SchemaNodeKind::AnyXml => NodeKind::AnyData,
            SchemaNodeKind::Choice => {
                let choice = node.as_raw() as usize;
                if node.is_mandatory() {
                    self.mandatory_choices.push((choice, parent, node.name().to_string()));
                }
                let default = node.default_case().map(|c| c.as_raw() as usize);
                for c in node.children() {
                    let cid = c.as_raw() as usize;
                    self.cases.insert(cid, (choice, Some(cid) == default));
                    if c.kind() == SchemaNodeKind::Case {
                        for cc in c.children() {
                            self.add(ctx, &cc, parent, Some((choice, cid)));
                        }
                    } else {
                        // A shorthand case: the node is its own case.
                        self.add(ctx, &c, parent, Some((choice, cid)));
                    }
                }
                return;
            }
            _ => return,
        };
        let module = node.module().name().to_string();
        let (name, path) = match parent {
            None => {
                let n = format!("{module}:{}", node.name());
                (n.clone(), format!("/{n}"))
            }
            Some(p) => {
                let n = if self.nodes[p].module == module {
                    node.name().to_string()
                } else {
                    format!("{module}:{}", node.name())
                };
                (n.clone(), format!("{}/{n}", self.nodes[p].path))
            }
        };
        let mut defaults = Vec::new();
        if matches!(kind, NodeKind::Leaf | NodeKind::LeafList) {
            let texts = if kind == NodeKind::Leaf {
                ctx.leaf_default(node).into_iter().collect()
            } else {
                ctx.leaflist_defaults(node)
            };
            for t in texts {
                if let crate::ly::Checked::Ok { canonical, base } = ctx.check_value(node, &t) {
                    defaults.push(crate::values::typed(base, canonical));
                }
            }
        }
        let idx = self.nodes.len();
        let depth = parent.map_or(1, |p| self.nodes[p].depth + 1);
        self.nodes.push(SNode {
            name: name.as_str().into(),
            module,
            kind,
            config: !node.is_state(),
            parent,
            children: BTreeMap::new(),
            keys: node.list_keys().map(|k| k.name().into()).collect(),
            user_ordered: matches!(kind, NodeKind::List | NodeKind::LeafList) && node.is_user_ordered(),
            presence: kind == NodeKind::Container && !node.is_np_container(),
            mandatory: node.is_mandatory(),
            min: node.min_elements().unwrap_or(0),
            max: node.max_elements().filter(|&m| m != 0 && m != u32::MAX),
            defaults,
            path: path.clone(),
            musts: Ctx::musts(node),
            whens: Ctx::whens(node),
            leafref: None,
            uniques: Vec::new(),
            case,
            raw: node.as_raw() as usize,
            checked_on_create: false,
            has_mandatory: false,
            instance_required: matches!(kind, NodeKind::Leaf | NodeKind::LeafList)
                && ctx.instance_id_requires_instance(node),
            depth,
            leafref_path: None,
            reads: None,
            readers: Vec::new(),
            watched_below: false,
            watched_below_config: false,
            indexed_below: false,
            int64: matches!(kind, NodeKind::Leaf | NodeKind::LeafList) && ctx.is_int64(node),
            int64_children: false,
            json_kind: match kind {
                NodeKind::Leaf | NodeKind::LeafList => ctx.json_base(node).map(crate::values::JsonKind::of),
                _ => None,
            },
            fast: if matches!(kind, NodeKind::Leaf | NodeKind::LeafList) {
                ctx.fast_type(node)
            } else {
                crate::values::Fast::None
            },
        });
        self.by_path.insert(path, idx);
        self.by_raw.insert(node.as_raw() as usize, idx);
        match parent {
            None => {
                self.top.insert(name.into(), idx);
            }
            Some(p) => {
                self.nodes[p].children.insert(name.into(), idx);
            }
        }
        if matches!(kind, NodeKind::Container | NodeKind::List) {
            for c in node.children() {
                self.add(ctx, &c, Some(idx), None);
            }
            let any = self.nodes[idx].children.values().any(|&c| self.nodes[c].int64);
            self.nodes[idx].int64_children = any;
        }
    }

    /// The child of `parent` (the top when `None`) a path segment's name
    /// names, with its canonical name. Unprefixed top-level names are found
    /// in any module when only one module has them.
    pub fn child(&self, parent: Option<usize>, name: &str) -> Option<usize> {
        match parent {
            None => match name.split_once(':') {
                Some(_) => self.top.get(name).copied(),
                None => {
                    let mut found = self.top.iter().filter(|(n, _)| n.split_once(':').is_some_and(|(_, l)| l == name));
                    let first = found.next().map(|(_, &i)| i);
                    if found.next().is_some() {
                        None
                    } else {
                        first
                    }
                }
            },
            Some(p) => {
                let pn = &self.nodes[p];
                match name.split_once(':') {
                    Some((m, local)) if m == pn.module => pn.children.get(local).copied(),
                    _ => pn.children.get(name).copied(),
                }
            }
        }
    }

    /// The schema node of a canonical path's last segment (the node its
    /// schema path names in [`Model::by_path`]), found by walking the
    /// children instead of building the schema path.
    pub fn index_of(&self, path: &canopy_core::Path) -> Option<usize> {
        let mut at: Option<usize> = None;
        for seg in &path.segments {
            at = Some(match at {
                None => *self.top.get(&seg.name)?,
                Some(p) => *self.nodes[p].children.get(&seg.name)?,
            });
        }
        at
    }

    /// The data nodes from the top down to `idx`.
    pub fn chain(&self, idx: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.nodes[idx].depth);
        let mut at = Some(idx);
        while let Some(i) = at {
            out.push(i);
            at = self.nodes[i].parent;
        }
        out.reverse();
        out
    }

    /// The depth of the deepest node that is an ancestor-or-self of both
    /// `a` and `b` (0: only the root).
    pub fn common_depth(&self, a: usize, b: usize) -> usize {
        let (mut a, mut b) = (Some(a), Some(b));
        loop {
            match (a, b) {
                (Some(x), Some(y)) if x == y => return self.nodes[x].depth,
                (Some(x), Some(y)) => {
                    if self.nodes[x].depth >= self.nodes[y].depth {
                        a = self.nodes[x].parent;
                    } else {
                        b = self.nodes[y].parent;
                    }
                }
                _ => return 0,
            }
        }
    }

    /// The child of `parent` (the top when `None`) named `ident` in a YANG
    /// expression (`prefix:name` with the prefix of the module that wrote it,
    /// or `name`): found by its local name; among several, the one whose
    /// module is named like the prefix.
    fn child_by_local(&self, parent: Option<usize>, ident: &str) -> Option<usize> {
        let (prefix, local) = match ident.split_once(':') {
            Some((p, l)) => (Some(p), l),
            None => (None, ident),
        };
        let names: Box<dyn Iterator<Item = (&canopy_core::tree::Name, &usize)>> = match parent {
            None => Box::new(self.top.iter()),
            Some(p) => Box::new(self.nodes[p].children.iter()),
        };
        let found: Vec<usize> = names
            .filter(|(n, _)| n.rsplit_once(':').map_or(n.as_str(), |(_, l)| l) == local)
            .map(|(_, &i)| i)
            .collect();
        match found.as_slice() {
            [one] => Some(*one),
            [] => None,
            many => many.iter().copied().find(|&i| Some(self.nodes[i].module.as_str()) == prefix).or(Some(many[0])),
        }
    }

    /// The ancestor `up` data nodes above `idx` (`Some(None)`: the root).
    fn ancestor(&self, idx: usize, up: usize) -> Option<Option<usize>> {
        let mut at = Some(idx);
        for _ in 0..up {
            at = self.nodes[at?].parent;
        }
        Some(at)
    }

    /// The leafref path `text` of leaf `idx`, whose target libyang resolved
    /// to `target`, as schema steps with predicates; `None` when the text is
    /// not a `path-arg` this function follows to that target.
    fn resolve_leafref(&self, idx: usize, target: usize, text: &str) -> Option<LeafrefPath> {
        let parsed = parse_path_arg(text)?;
        let mut at = match parsed.up {
            None => None,
            Some(u) => {
                if u > self.nodes[idx].depth {
                    return None;
                }
                self.ancestor(idx, u)?
            }
        };
        let mut steps = Vec::new();
        for (ident, preds) in parsed.steps {
            let node = self.child_by_local(at, &ident)?;
            let mut out = Vec::new();
            for (key, up, down) in preds {
                let k = self.child_by_local(Some(node), &key)?;
                if up > self.nodes[idx].depth {
                    return None;
                }
                let mut from = self.ancestor(idx, up)?;
                let mut names = Vec::new();
                for d in &down {
                    let c = self.child_by_local(from, d)?;
                    names.push(self.nodes[c].name.clone());
                    from = Some(c);
                }
                let source = from?;
                if self.nodes[source].kind != NodeKind::Leaf {
                    return None;
                }
                out.push(KeyPredicate { key: self.nodes[k].name.clone(), up, down: names, source });
            }
            steps.push((node, out));
            at = Some(node);
        }
        (at == Some(target)).then_some(LeafrefPath { up: parsed.up, steps })
    }

    /// What the must and when expressions of node `idx` read.
    fn expr_reads(&self, ctx: &Ctx, idx: usize) -> ExprReads {
        let n = &self.nodes[idx];
        let mut atoms = Vec::new();
        let mut known = true;
        for e in n.musts.iter().chain(&n.whens) {
            match ctx.expr_atoms(e) {
                Some(raw) => {
                    for r in raw {
                        if let Some(&a) = self.by_raw.get(&r) {
                            if !atoms.contains(&a) {
                                atoms.push(a);
                            }
                        }
                    }
                }
                None => known = false,
            }
        }
        if !known {
            // libyang could not tell: the node's siblings and itself, as
            // expressions mostly read them.
            let siblings: Vec<usize> = match n.parent {
                Some(p) => self.nodes[p].children.values().copied().collect(),
                None => self.top.values().copied().collect(),
            };
            for s in siblings {
                if !atoms.contains(&s) {
                    atoms.push(s);
                }
            }
        }
        let mut reach = n.depth;
        for &a in &atoms {
            reach = reach.min(self.common_depth(a, idx));
        }
        let texts: Vec<&str> = n.musts.iter().chain(&n.whens).map(|e| e.text.as_str()).collect();
        let wild = texts.iter().any(|t| t.contains("//") || t.contains('*') || t.contains("::") || t.contains("deref"));
        let named = self
            .chain(idx)
            .into_iter()
            .filter(|&i| self.nodes[i].kind == NodeKind::List)
            .filter(|&i| {
                let local = self.nodes[i].name.rsplit_once(':').map_or(self.nodes[i].name.as_str(), |(_, l)| l);
                texts.iter().any(|t| names_step(t, local))
            })
            .collect();
        ExprReads { atoms, reach, named, wild }
    }

    /// The names a parent's children may be given, for error messages.
    pub fn child_names(&self, parent: Option<usize>) -> Vec<&str> {
        match parent {
            None => self.top.keys().map(|k| k.as_str()).collect(),
            Some(p) => self.nodes[p].children.keys().map(|k| k.as_str()).collect(),
        }
    }
}

/// Whether `name` occurs in expression `text` as a name token (not as part
/// of a longer name).
fn names_step(text: &str, name: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        !before.is_some_and(is_name) && !after.is_some_and(|c| is_name(c) || c == ':' || c == '(')
    })
}

/// A parsed `path-arg`: `..` steps (`None`: absolute), then each step's
/// node identifier with its predicates (key, `..` steps, names down).
struct PathArg {
    up: Option<usize>,
    steps: Vec<(String, Vec<PredicateArg>)>,
}

/// A predicate as written: key, `..` steps after `current()`, names down.
type PredicateArg = (String, usize, Vec<String>);

/// Parses a leafref path (RFC 7950 sec. 14, `path-arg`).
fn parse_path_arg(text: &str) -> Option<PathArg> {
    let mut p = Scan { s: text.as_bytes(), i: 0 };
    p.ws();
    let up = if p.eat(b"/") {
        None
    } else {
        let mut n = 0;
        while p.eat(b"..") {
            p.ws();
            if !p.eat(b"/") {
                return None;
            }
            p.ws();
            n += 1;
        }
        if n == 0 {
            return None;
        }
        Some(n)
    };
    let mut steps = Vec::new();
    loop {
        p.ws();
        let ident = p.ident()?;
        let mut preds = Vec::new();
        loop {
            p.ws();
            if !p.eat(b"[") {
                break;
            }
            p.ws();
            let key = p.ident()?;
            p.ws();
            if !p.eat(b"=") {
                return None;
            }
            p.ws();
            if !p.eat(b"current") {
                return None;
            }
            p.ws();
            if !(p.eat(b"(") && {
                p.ws();
                p.eat(b")")
            }) {
                return None;
            }
            p.ws();
            if !p.eat(b"/") {
                return None;
            }
            let mut kup = 0;
            loop {
                p.ws();
                if !p.eat(b"..") {
                    break;
                }
                p.ws();
                if !p.eat(b"/") {
                    return None;
                }
                kup += 1;
            }
            if kup == 0 {
                return None;
            }
            let mut down = vec![p.ident()?];
            loop {
                p.ws();
                if !p.eat(b"/") {
                    break;
                }
                p.ws();
                down.push(p.ident()?);
            }
            if !p.eat(b"]") {
                return None;
            }
            preds.push((key, kup, down));
        }
        steps.push((ident, preds));
        p.ws();
        if !p.eat(b"/") {
            break;
        }
    }
    p.ws();
    (p.i == p.s.len()).then_some(PathArg { up, steps })
}

struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, t: &[u8]) -> bool {
        if self.s[self.i..].starts_with(t) {
            self.i += t.len();
            true
        } else {
            false
        }
    }

    /// A node identifier: `[prefix:]name`.
    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        let part = |s: &mut Self| {
            let b = s.i;
            if !s.s.get(s.i).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
                return false;
            }
            while s.s.get(s.i).is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')) {
                s.i += 1;
            }
            s.i > b
        };
        if !part(self) {
            return None;
        }
        if self.s.get(self.i) == Some(&b':') {
            self.i += 1;
            if !part(self) {
                return None;
            }
        }
        std::str::from_utf8(&self.s[start..self.i]).ok().map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leafref_paths_parse() {
        let p = parse_path_arg("/if:interfaces/if:interface[if:name = current()/../ifname]/if:enabled").unwrap();
        assert_eq!(p.up, None);
        assert_eq!(p.steps.len(), 3);
        assert_eq!(p.steps[1].1, vec![("if:name".to_string(), 1, vec!["ifname".to_string()])]);
        let p = parse_path_arg("../../nw:node[nw:node-id=current()/../source-node]/termination-point/tp-id").unwrap();
        assert_eq!(p.up, Some(2));
        assert_eq!(p.steps[0].1[0].2, ["source-node"]);
        let p = parse_path_arg("/a/b[x=current()/../../c/d][y = current()/../e]/f").unwrap();
        assert_eq!(p.steps[1].1.len(), 2);
        assert_eq!(p.steps[1].1[0], ("x".to_string(), 2, vec!["c".to_string(), "d".to_string()]));
        for bad in ["", "a/b", "/a[b=c]", "/a[b=current()/c]/d", "/a/", "../", "/a b"] {
            assert!(parse_path_arg(bad).is_none(), "{bad}");
        }
        assert!(names_step("../../other[name=current()/../x]", "other"));
        assert!(!names_step("../../other-list/x", "other"));
        assert!(!names_step("count(x:other)", "x"));
    }
}

#[cfg(test)]
mod atom_tests {
    /// What libyang's atoms say each expression reads, and how far up it
    /// reaches: the basis of the must/when reverse map.
    #[test]
    fn expressions_read_what_they_name() {
        let text = r#"module a { yang-version 1.1; namespace urn:a; prefix a;
          container top {
            list e { key n; leaf n { type string; }
              leaf kind { type string; }
              leaf x { type int8; must ". < 10"; }
              leaf y { type string; when "../kind = 'c'"; }
              leaf z { type uint8; must "count(../../a:e[a:z = current()]) = 1"; }
            }
          }
          container other { leaf on { type boolean; } }
          leaf g { type string; must "/a:other/a:on = 'true'"; } }"#;
        let s = crate::YangSchema::add_texts(&[], &[("a.yang".into(), text.into())], &[]).unwrap();
        let m = s.model();
        let at = |p: &str| m.by_path[p];
        let reads = |p: &str| m.nodes[at(p)].reads.clone().unwrap();
        let names = |p: &str| {
            let mut v: Vec<&str> = reads(p).atoms.iter().map(|&a| m.nodes[a].path.as_str()).collect();
            v.sort_unstable();
            v
        };
        assert_eq!(names("/a:top/e/x"), ["/a:top/e/x"]);
        assert_eq!(reads("/a:top/e/x").reach, 3);
        // `..` crosses the entry: it is read, and the reach stops there.
        assert_eq!(names("/a:top/e/y"), ["/a:top/e", "/a:top/e/kind"]);
        assert_eq!(reads("/a:top/e/y").reach, 2);
        assert!(reads("/a:top/e/y").named.is_empty());
        // Other entries of its own list: named, reached from above.
        assert_eq!(names("/a:top/e/z"), ["/a:top", "/a:top/e", "/a:top/e/z"]);
        assert_eq!(reads("/a:top/e/z").reach, 1);
        assert_eq!(reads("/a:top/e/z").named, [at("/a:top/e")]);
        // Another top-level tree: the reach is the root.
        assert_eq!(names("/a:g"), ["/a:other", "/a:other/on"]);
        assert_eq!(reads("/a:g").reach, 0);
        assert!(m.nodes[at("/a:other/on")].readers.contains(&at("/a:g")));
        assert!(m.nodes[at("/a:top/e/kind")].readers.contains(&at("/a:top/e/y")));
    }
}
