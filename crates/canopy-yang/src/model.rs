//! The compiled schema as plain Rust data: one [`SNode`] per data node, found
//! by canopy schema path (`/m:cont/lst/l`, RFC 7951 names) or by walking names
//! from the top. Built once per schema from libyang's compiled tree; the
//! engine's questions (kinds, keys, ordering, defaults, constraints) are
//! answered from here without calling libyang.

use std::collections::{BTreeMap, HashMap};

use canopy_core::schema::NodeKind;
use canopy_core::Value;
use yang3::schema::{SchemaNode, SchemaNodeKind};

use crate::ly::{Ctx, Expr};

/// One data node of the schema.
#[derive(Debug)]
pub struct SNode {
    /// Its name under its parent, RFC 7951 style (`m:x` at the top and where
    /// the module changes, `x` otherwise).
    pub name: String,
    pub module: String,
    pub kind: NodeKind,
    /// `config true` (false: state data).
    pub config: bool,
    pub parent: Option<usize>,
    /// Children by their canonical name.
    pub children: BTreeMap<String, usize>,
    /// List keys in schema order.
    pub keys: Vec<String>,
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
    pub uniques: Vec<Vec<Vec<String>>>,
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
    /// An instance-identifier whose target must exist.
    pub instance_required: bool,
}

/// All data nodes of a schema.
#[derive(Debug, Default)]
pub struct Model {
    pub nodes: Vec<SNode>,
    /// Top-level nodes by canonical name (`m:x`).
    pub top: BTreeMap<String, usize>,
    pub by_path: HashMap<String, usize>,
    pub(crate) by_raw: HashMap<usize, usize>,
    /// Leafref target node → the leafref nodes pointing at it.
    pub referrers: HashMap<usize, Vec<usize>>,
    /// Mandatory choices: (choice address, enclosing data node or None at the top, choice name).
    pub(crate) mandatory_choices: Vec<(usize, Option<usize>, String)>,
    /// Case address → its choice's address and whether it is the default case.
    pub(crate) cases: HashMap<usize, (usize, bool)>,
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
                }
            }
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
                || !n.uniques.is_empty();
            for &c in n.children.values() {
                let cn = &m.nodes[c];
                mandatory |= cn.config
                    && ((cn.mandatory && matches!(cn.kind, NodeKind::Leaf | NodeKind::AnyData))
                        || (cn.min > 0 && matches!(cn.kind, NodeKind::List | NodeKind::LeafList))
                        || (cn.kind == NodeKind::Container && !cn.presence && cn.has_mandatory));
                checked |= cn.checked_on_create;
            }
            m.nodes[i].has_mandatory = mandatory;
            m.nodes[i].checked_on_create = checked || mandatory;
        }
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
        self.nodes.push(SNode {
            name: name.clone(),
            module,
            kind,
            config: !node.is_state(),
            parent,
            children: BTreeMap::new(),
            keys: node.list_keys().map(|k| k.name().to_string()).collect(),
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
                self.top.insert(name, idx);
            }
            Some(p) => {
                self.nodes[p].children.insert(name, idx);
            }
        }
        if matches!(kind, NodeKind::Container | NodeKind::List) {
            for c in node.children() {
                self.add(ctx, &c, Some(idx), None);
            }
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

    /// The names a parent's children may be given, for error messages.
    pub fn child_names(&self, parent: Option<usize>) -> Vec<&str> {
        match parent {
            None => self.top.keys().map(String::as_str).collect(),
            Some(p) => self.nodes[p].children.keys().map(String::as_str).collect(),
        }
    }
}
