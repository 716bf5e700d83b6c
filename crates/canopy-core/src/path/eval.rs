//! Query evaluation over the in-memory tree ([`Query::evaluate`]) and result
//! trees ([`select`]).
//!
//! The XPath data model over a [`Container`]: the root, containers, list
//! entries, leaves, leaf-list entries and anydata are nodes; a list or
//! leaf-list as a whole is not (a step naming it selects its entries).
//! Document order is the tree's order: children by name, entries in list order.

use std::borrow::Cow;
use std::rc::Rc;

use super::query::{Axis, CmpOp, Expr, NodeTest, Operand, Query, Step};
use super::{canonical_name, Path, Segment, Selector};
use crate::tree::{Container, LeafListEntry, List, Node, NodeRef};

/// A node met during evaluation, linked to its parent so that `..` and the
/// final path are cheap to get.
struct Item<'a> {
    node: NodeRef<'a>,
    /// The name of the child of the parent this node is (or belongs to, for
    /// entries); empty for the root.
    name: &'a str,
    /// The list this entry belongs to.
    list: Option<&'a List>,
    /// The 0-based index of an entry in its list or leaf-list (0 for an entry
    /// found by a key lookup in a keyed list, which `pos` orders).
    index: usize,
    /// The position key of a list entry (its document order in the list).
    pos: &'a [u8],
    parent: Option<Rc<Item<'a>>>,
}

type ItemRef<'a> = Rc<Item<'a>>;

impl<'a> Item<'a> {
    /// The module in scope at this node: the prefix of the nearest prefixed name
    /// on the way up.
    fn module(&self) -> Option<&'a str> {
        let mut cur = Some(self);
        while let Some(item) = cur {
            if let Some((m, _)) = item.name.split_once(':') {
                return Some(m);
            }
            cur = item.parent.as_deref();
        }
        None
    }

    /// The position of this node in document order: per level, the child's
    /// name and the entry index. Ancestors sort before their descendants.
    fn order(&self) -> Vec<(&'a str, &'a [u8], usize)> {
        let mut v = Vec::new();
        let mut cur = Some(self);
        while let Some(item) = cur {
            if item.parent.is_some() {
                v.push((item.name, item.pos, item.index));
            }
            cur = item.parent.as_deref();
        }
        v.reverse();
        v
    }

    fn path(&self) -> Path {
        let mut segments = Vec::new();
        let mut cur = Some(self);
        while let Some(item) = cur {
            if item.parent.is_none() {
                break;
            }
            let selector = match (item.node, item.list) {
                (NodeRef::Entry(e), Some(l)) if !l.info.keys.is_empty() => Selector::Keys(
                    // Entries in a list always have their key leaves (List::insert checks).
                    l.info.keys.iter().map(|k| (k.clone(), e.key_text(k).unwrap_or_default())).collect(),
                ),
                (NodeRef::Entry(_), _) => Selector::Position(item.index as u64 + 1),
                (NodeRef::LeafListEntry(e), _) => Selector::Value(e.value.as_text().into_owned()),
                _ => Selector::None,
            };
            segments.push(Segment { name: item.name.into(), selector });
            cur = item.parent.as_deref();
        }
        segments.reverse();
        Path { segments }
    }

    /// XPath's string value: a leaf's text, or the texts of all leaves below a
    /// container, concatenated in document order.
    fn string_value(&self) -> Cow<'a, str> {
        match self.node {
            NodeRef::Leaf(v, _) => v.as_text(),
            NodeRef::LeafListEntry(e) => e.value.as_text(),
            NodeRef::AnyData(serde_json::Value::String(s), _) => Cow::Borrowed(s),
            NodeRef::AnyData(v, _) => Cow::Owned(v.to_string()),
            NodeRef::LeafList(v) => Cow::Owned(v.iter().map(|e| e.value.as_text()).collect()),
            NodeRef::List(l) => {
                let mut s = String::new();
                l.entries().for_each(|e| push_text(&mut s, e));
                Cow::Owned(s)
            }
            NodeRef::Root(c) | NodeRef::Container(c) | NodeRef::Entry(c) => {
                let mut s = String::new();
                push_text(&mut s, c);
                Cow::Owned(s)
            }
        }
    }
}

fn push_text(out: &mut String, c: &Container) {
    for node in c.children.values() {
        match node {
            Node::Leaf { value, .. } => out.push_str(&value.as_text()),
            Node::LeafList(v) => v.iter().for_each(|e| out.push_str(&e.value.as_text())),
            Node::Container(c) => push_text(out, c),
            Node::List(l) => l.entries().for_each(|e| push_text(out, e)),
            Node::AnyData { value, .. } => match &**value {
                serde_json::Value::String(s) => out.push_str(s),
                other => out.push_str(&other.to_string()),
            },
        }
    }
}

/// Whether the child named `child` (canonical) matches a step's name `written`
/// under a parent in module `module`.
fn name_matches(child: &str, written: &str, module: Option<&str>) -> bool {
    if child == canonical_name(written, module) {
        return true;
    }
    // ONAP CPS queries carry no prefixes: an unprefixed name matches any module's node.
    !written.contains(':') && child.split_once(':').is_some_and(|(_, local)| local == written)
}

/// The children of `ctx` that pass `test`, in document order, lists and
/// leaf-lists expanded into their entries.
fn children<'a>(ctx: &ItemRef<'a>, test: &NodeTest) -> Vec<ItemRef<'a>> {
    let mut out = Vec::new();
    let Some(c) = ctx.node.container() else { return out };
    let module = ctx.module();
    let item =
        |node, name, list, index| Rc::new(Item { node, name, list, index, pos: &[], parent: Some(Rc::clone(ctx)) });
    for (name, node) in &c.children {
        if let NodeTest::Name(written) = test {
            if !name_matches(name, written, module) {
                continue;
            }
        }
        match node {
            Node::Container(c) => out.push(item(NodeRef::Container(c), name, None, 0)),
            Node::Leaf { value, meta } => out.push(item(NodeRef::Leaf(value, meta), name, None, 0)),
            Node::AnyData { value, meta } => out.push(item(NodeRef::AnyData(value, meta), name, None, 0)),
            Node::List(l) => {
                out.extend(l.entries_with_pos().enumerate().map(|(i, (pos, e))| {
                    Rc::new(Item {
                        node: NodeRef::Entry(e),
                        name,
                        list: Some(l),
                        index: i,
                        pos,
                        parent: Some(Rc::clone(ctx)),
                    })
                }));
            }
            Node::LeafList(v) => {
                out.extend(v.iter().enumerate().map(|(i, e)| item(NodeRef::LeafListEntry(e), name, None, i)));
            }
        }
    }
    out
}

/// The children a child step selects when every one it names is an entry of
/// a keyed list whose keys its predicates pin by equality: found by key
/// lookup instead of a scan of the list. A superset of what the predicates
/// keep (they are still applied). `None` when the step is not so pinned, or
/// counts positions (which need the whole set).
fn pinned_children<'a>(ctx: &ItemRef<'a>, step: &Step) -> Option<Vec<ItemRef<'a>>> {
    let NodeTest::Name(written) = &step.test else { return None };
    if step.predicates.is_empty() || step.predicates.iter().any(has_position) {
        return None;
    }
    let c = ctx.node.container()?;
    let module = ctx.module();
    let mut out = Vec::new();
    for (name, node) in &c.children {
        if !name_matches(name, written, module) {
            continue;
        }
        let Node::List(l) = node else { return None };
        if l.info.keys.is_empty() {
            return None;
        }
        let list_module = name.split_once(':').map(|(m, _)| m).or(module);
        let Some(Selector::Keys(kv)) = super::query::key_pin(&step.predicates, &l.info, list_module) else {
            return None;
        };
        let vals: Vec<String> = kv.into_iter().map(|(_, v)| v.into()).collect();
        let Some((pos, e)) = l.get_with_pos(&vals) else { continue };
        out.push(Rc::new(Item {
            node: NodeRef::Entry(e),
            name,
            list: Some(l),
            index: 0,
            pos,
            parent: Some(Rc::clone(ctx)),
        }));
    }
    Some(out)
}

/// Whether `e` counts positions.
pub(super) fn has_position(e: &Expr) -> bool {
    match e {
        Expr::Position(_) => true,
        Expr::Or(v) | Expr::And(v) => v.iter().any(has_position),
        Expr::Cmp(..) | Expr::Exists(_) => false,
    }
}

/// `ctx` and all nodes below it, in document order.
fn descendants_or_self<'a>(ctx: &ItemRef<'a>, out: &mut Vec<ItemRef<'a>>) {
    out.push(Rc::clone(ctx));
    for child in children(ctx, &NodeTest::Any) {
        descendants_or_self(&child, out);
    }
}

/// Sorts nodes into document order and drops repeats.
fn sort_unique(nodes: &mut Vec<ItemRef<'_>>) {
    if nodes.len() > 1 {
        // Equal order keys are the same node.
        let mut keyed: Vec<_> = nodes.drain(..).map(|n| (n.order(), n)).collect();
        keyed.sort_by(|a, b| a.0.cmp(&b.0));
        keyed.dedup_by(|a, b| a.0 == b.0);
        nodes.extend(keyed.into_iter().map(|(_, n)| n));
    }
}

/// A comparison operand's values: node string values, or one literal or number.
fn operand_values<'a>(ctx: &ItemRef<'a>, o: &'a Operand) -> Vec<Cow<'a, str>> {
    match o {
        Operand::Path(steps) => walk(ctx, steps).iter().map(|n| n.string_value()).collect(),
        Operand::Literal(s) | Operand::Number(s) => vec![Cow::Borrowed(s.as_str())],
    }
}

/// XPath's `number()` of a string: decimal text (an exponent is accepted, as
/// JSON numbers may carry one); `None` where XPath gives NaN.
fn number(s: &str) -> Option<f64> {
    let t = s.trim_matches([' ', '\t', '\n', '\r']);
    let ok = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    ok.then(|| t.parse().ok()).flatten()
}

fn compare(ctx: &ItemRef<'_>, a: &Operand, op: CmpOp, b: &Operand) -> bool {
    // XPath 1.0: compare as numbers under < > <= >= or when a number takes part,
    // as strings otherwise; a node-set compares true when any of its nodes does.
    let numeric =
        !matches!(op, CmpOp::Eq | CmpOp::Ne) || matches!(a, Operand::Number(_)) || matches!(b, Operand::Number(_));
    let (left, right) = (operand_values(ctx, a), operand_values(ctx, b));
    let test = |x: &str, y: &str| {
        if numeric {
            let (Some(x), Some(y)) = (number(x), number(y)) else { return false };
            match op {
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
                CmpOp::Lt => x < y,
                CmpOp::Gt => x > y,
                CmpOp::Le => x <= y,
                CmpOp::Ge => x >= y,
            }
        } else {
            (x == y) == (op == CmpOp::Eq)
        }
    };
    left.iter().any(|x| right.iter().any(|y| test(x, y)))
}

/// Whether predicate `e` holds for `ctx`, the `pos`th (1-based) node of its set.
fn holds(ctx: &ItemRef<'_>, e: &Expr, pos: usize) -> bool {
    match e {
        Expr::Or(v) => v.iter().any(|e| holds(ctx, e, pos)),
        Expr::And(v) => v.iter().all(|e| holds(ctx, e, pos)),
        Expr::Cmp(a, op, b) => compare(ctx, a, *op, b),
        Expr::Exists(steps) => !walk(ctx, steps).is_empty(),
        Expr::Position(n) => pos as u64 == *n,
    }
}

/// Applies predicates in turn; positions count within what the previous ones kept.
fn filter<'a>(mut nodes: Vec<ItemRef<'a>>, predicates: &[Expr]) -> Vec<ItemRef<'a>> {
    for p in predicates {
        let mut pos = 0;
        nodes.retain(|n| {
            pos += 1;
            holds(n, p, pos)
        });
    }
    nodes
}

/// The nodes one step selects from one context node.
fn step<'a>(ctx: &ItemRef<'a>, step: &Step) -> Vec<ItemRef<'a>> {
    match step.axis {
        Axis::Child => match pinned_children(ctx, step) {
            Some(nodes) => filter(nodes, &step.predicates),
            None => filter(children(ctx, &step.test), &step.predicates),
        },
        Axis::Descendant => {
            // descendant-or-self::node()/child::test[p]: positions count per parent.
            let mut all = Vec::new();
            descendants_or_self(ctx, &mut all);
            all.iter().flat_map(|d| filter(children(d, &step.test), &step.predicates)).collect()
        }
        Axis::Parent => filter(ctx.parent.iter().cloned().collect(), &step.predicates),
        Axis::SelfNode => filter(vec![Rc::clone(ctx)], &step.predicates),
    }
}

/// The nodes a location path selects from `ctx`, in document order.
fn walk<'a>(ctx: &ItemRef<'a>, steps: &[Step]) -> Vec<ItemRef<'a>> {
    let mut set = vec![Rc::clone(ctx)];
    for s in steps {
        set = set.iter().flat_map(|n| step(n, s)).collect();
        sort_unique(&mut set);
    }
    set
}

impl Query {
    /// The instance paths of every node this query selects in the tree under
    /// `root`, in document order, without repeats. A relative query starts at the
    /// root too. List entries come with their keys in the list's key order (or a
    /// position, for keyless lists), leaf-list entries as `[.='v']`.
    pub fn evaluate(&self, root: &Container) -> Vec<Path> {
        if let Some(p) = self.found_as_instance(root) {
            return vec![p];
        }
        let root = Rc::new(Item { node: NodeRef::Root(root), name: "", list: None, index: 0, pos: &[], parent: None });
        walk(&root, &self.steps).iter().map(|n| n.path()).collect()
    }

    /// The query as an instance path, when it is one naming one node of
    /// `root` exactly as [`Query::evaluate`] gives it (a point read, without
    /// the general walk): every step a container, a list entry by all its
    /// keys in the list's key order, or a last leaf, anydata or leaf-list
    /// entry by value. `None` otherwise (a whole list or leaf-list, which the
    /// walk gives entry by entry; keys in another order; a position; nothing
    /// there): the walk decides.
    fn found_as_instance(&self, root: &Container) -> Option<Path> {
        // A number compares as a number (`[id=2]` selects "02" too): the walk.
        fn numeric(e: &Expr) -> bool {
            match e {
                Expr::Cmp(a, _, b) => matches!(a, Operand::Number(_)) || matches!(b, Operand::Number(_)),
                Expr::And(v) => v.iter().any(numeric),
                _ => true,
            }
        }
        if self.steps.iter().any(|s| s.predicates.iter().any(numeric)) {
            return None;
        }
        let p = self.to_instance_path()?;
        let last = p.segments.len().checked_sub(1)?;
        let mut cur = root;
        for (i, seg) in p.segments.iter().enumerate() {
            // An unprefixed name also matches other modules' nodes of that
            // local name (ONAP CPS spelling): the walk, when there are any.
            if !seg.name.contains(':')
                && cur.children.iter().any(|(n, _)| n.split_once(':').is_some_and(|(_, l)| l == seg.name.as_str()))
            {
                return None;
            }
            match (cur.children.get(&seg.name)?, &seg.selector) {
                (Node::Container(c), Selector::None) => cur = c,
                (Node::Leaf { .. } | Node::AnyData { .. }, Selector::None) if i == last => {}
                (Node::List(l), Selector::Keys(kv))
                    if l.info.keys.len() == kv.len() && l.info.keys.iter().zip(kv).all(|(k, (n, _))| k == n) =>
                {
                    cur = l.find(&seg.selector)?.1;
                }
                // One entry of that value (state leaf-lists may repeat values).
                (Node::LeafList(v), Selector::Value(s)) if i == last => {
                    if v.iter().filter(|e| e.value.as_text() == s.as_str()).count() != 1 {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        Some(p)
    }
}

/// A new tree holding each node of `paths` (as [`Query::evaluate`] gives them)
/// with its whole subtree, plus its ancestors. Ancestors that are list entries
/// carry their key leaves and nothing else unless selected; leaf-list entries
/// selected one by one form a leaf-list of just those values, in their order.
/// Paths that name nothing in `root` are skipped. This is how a query result
/// becomes one document.
pub fn select(root: &Container, paths: &[Path]) -> Container {
    let mut out = Container::default();
    // One path (a point read) is copied at once, and dropped whole when it
    // names nothing: `copy_path` finds a node exactly when `lookup` does.
    if let [p] = paths {
        return match copy_path(root, &mut out, &p.segments) {
            true => out,
            false => Container::default(),
        };
    }
    // Checked first, so that a missing node leaves no empty ancestors behind.
    for p in paths.iter().filter(|p| root.lookup(p).is_some()) {
        copy_path(root, &mut out, &p.segments);
    }
    out
}

/// [`select`] of one path from a tree that is given away: the selected
/// subtree moves into the result instead of being copied.
pub fn select_owned(mut root: Container, path: &Path) -> Container {
    let mut out = Container::default();
    // One walk, as `select` of one path: dropped whole when it names nothing.
    match move_path(&mut root, &mut out, &path.segments) {
        true => out,
        false => Container::default(),
    }
}

/// [`copy_path`], moving the selected subtree out of `src`; whether it found
/// the node (as `lookup` would).
fn move_path(src: &mut Container, out: &mut Container, segs: &[Segment]) -> bool {
    let Some((seg, rest)) = segs.split_first() else {
        *out = std::mem::take(src);
        return true;
    };
    match (src.children.get_mut(&seg.name), &seg.selector) {
        (Some(Node::LeafList(_)), _) => copy_path(src, out, segs),
        (Some(_), Selector::None) if rest.is_empty() => {
            let node = src.children.remove(&seg.name).expect("present");
            out.children.insert(seg.name.clone(), node);
            true
        }
        (Some(Node::Container(c)), Selector::None) => {
            let mut oc = Container { meta: c.meta.clone(), ..Default::default() };
            let found = move_path(c, &mut oc, rest);
            out.children.insert(seg.name.clone(), Node::Container(oc));
            found
        }
        (Some(Node::List(l)), sel) => {
            let Some((pos, _)) = l.find(sel) else { return false };
            let pos = pos.to_vec();
            let mut ol = List::new(l.info.clone());
            let keys = l.info.keys.clone();
            let Some(entry) = l.get_at_mut(&pos) else { return false };
            let (moved, found) = match rest.is_empty() {
                true => (std::mem::take(entry), true),
                false => {
                    let mut oe = Container {
                        meta: entry.meta.clone(),
                        children: keys
                            .iter()
                            .filter_map(|k| entry.children.get(k).map(|n| (k.clone(), n.clone())))
                            .collect(),
                    };
                    let found = move_path(entry, &mut oe, rest);
                    (oe, found)
                }
            };
            let _ = ol.insert_at_pos(pos, moved);
            out.children.insert(seg.name.clone(), Node::List(Box::new(ol)));
            found
        }
        _ => false,
    }
}

/// Copies the node at `segs` below `src` into `out` (the same place in the
/// result), with the ancestors it needs. Copying a whole subtree replaces what
/// is there: it holds all of it.
fn copy_path(src: &Container, out: &mut Container, segs: &[Segment]) -> bool {
    let Some((seg, rest)) = segs.split_first() else {
        *out = src.clone();
        return true;
    };
    let Some(node) = src.children.get(&seg.name) else { return false };
    match (node, &seg.selector) {
        (_, Selector::None) if rest.is_empty() => {
            out.children.insert(seg.name.clone(), node.clone());
            true
        }
        (Node::Container(c), Selector::None) => {
            // Ancestors keep their own metadata (origin, annotations), not their other children.
            let o = out
                .children
                .entry(seg.name.clone())
                .or_insert_with(|| Node::Container(Container { meta: c.meta.clone(), ..Default::default() }));
            match o {
                Node::Container(oc) => copy_path(c, oc, rest),
                _ => false,
            }
        }
        (Node::List(l), sel) => {
            let Some((pos, entry)) = l.find(sel) else { return false };
            let o =
                out.children.entry(seg.name.clone()).or_insert_with(|| Node::List(Box::new(List::new(l.info.clone()))));
            let Node::List(ol) = o else { return false };
            // The source's position keys keep the result in the source's order.
            if rest.is_empty() {
                let _ = ol.insert_at_pos(pos.to_vec(), entry.clone());
                return true;
            }
            if ol.get_at(pos).is_none() {
                let keys_only = Container {
                    meta: entry.meta.clone(),
                    children: l
                        .info
                        .keys
                        .iter()
                        .filter_map(|k| entry.children.get(k).map(|n| (k.clone(), n.clone())))
                        .collect(),
                };
                let _ = ol.insert_at_pos(pos.to_vec(), keys_only);
            }
            match ol.get_at_mut(pos) {
                Some(oe) => copy_path(entry, oe, rest),
                None => false,
            }
        }
        (Node::LeafList(v), sel) if rest.is_empty() => {
            let picked = match sel {
                Selector::Value(s) => v.iter().position(|e| e.value.as_text() == *s),
                Selector::Position(n) => {
                    usize::try_from(*n).ok().and_then(|n| n.checked_sub(1)).filter(|&i| i < v.len())
                }
                _ => None,
            };
            let Some(picked) = picked else { return false };
            let o = out.children.entry(seg.name.clone()).or_insert_with(|| Node::LeafList(Vec::new()));
            if let Node::LeafList(ov) = o {
                let kept: Vec<LeafListEntry> = v
                    .iter()
                    .enumerate()
                    .filter(|(i, e)| *i == picked || ov.contains(e))
                    .map(|(_, e)| e.clone())
                    .collect();
                *ov = kept;
            }
            true
        }
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::tree::{Insert, ListInfo};
    use crate::value::Value;

    fn s(v: &str) -> Node {
        Node::leaf(Value::String(v.into()))
    }

    fn n(v: &str) -> Node {
        Node::leaf(Value::Number(v.into()))
    }

    pub(crate) fn cont(children: Vec<(&str, Node)>) -> Container {
        Container { meta: Default::default(), children: children.into_iter().map(|(k, v)| (k.into(), v)).collect() }
    }

    fn list(info: ListInfo, entries: Vec<Container>) -> Node {
        let mut l = List::new(info);
        for e in entries {
            l.insert(e, &Insert::Last).unwrap();
        }
        Node::List(Box::new(l))
    }

    fn leaf_list(values: &[&str]) -> Node {
        Node::LeafList(
            values
                .iter()
                .map(|v| LeafListEntry { value: Value::String((*v).into()), meta: Default::default() })
                .collect(),
        )
    }

    /// `m:top` holds a keyed list `dev` (entries 1, 2, 10 in that order: integer
    /// keys sort numerically), a leaf-list, a keyless list and a two-key list;
    /// `other:top2` holds another `dev` list.
    pub(crate) fn sample() -> Container {
        let dev = |id: &str, name: &str, extra: Vec<(&str, Node)>| {
            let mut c = cont(vec![("id", s(id)), ("name", s(name))]);
            c.children.extend(extra.into_iter().map(|(k, v)| (k.into(), v)));
            c
        };
        let top = cont(vec![
            (
                "dev",
                list(
                    ListInfo::keyed(["id"]),
                    vec![
                        dev("10", "c", vec![("sub", Node::Container(cont(vec![("x", s("1"))])))]),
                        dev("1", "a", vec![("mtu", n("1500"))]),
                        dev("2", "b", vec![("mtu", n("9000"))]),
                    ],
                ),
            ),
            ("ll", leaf_list(&["x", "y", "z"])),
            (
                "log",
                list(
                    ListInfo::keyless(),
                    vec![cont(vec![("msg", s("m1"))]), cont(vec![("msg", s("m2"))]), cont(vec![("msg", s("m3"))])],
                ),
            ),
            (
                "pair",
                list(ListInfo::keyed(["k1", "k2"]), vec![cont(vec![("k1", s("5")), ("k2", s("a")), ("v", s("five"))])]),
            ),
        ]);
        let top2 = cont(vec![("dev", list(ListInfo::keyed(["id"]), vec![dev("7", "q", vec![])]))]);
        cont(vec![("m:top", Node::Container(top)), ("other:top2", Node::Container(top2)), ("plain", s("p"))])
    }

    fn eval(query: &str) -> Vec<String> {
        let q = Query::parse(query).unwrap();
        q.evaluate(&sample()).iter().map(ToString::to_string).collect()
    }

    /// What the general walk selects, without the point-read path.
    fn walked(query: &str) -> Vec<String> {
        let q = Query::parse(query).unwrap();
        let tree = sample();
        let root = Rc::new(Item { node: NodeRef::Root(&tree), name: "", list: None, index: 0, pos: &[], parent: None });
        walk(&root, &q.steps).iter().map(|n| n.path().to_string()).collect()
    }

    #[test]
    fn point_reads_select_what_the_walk_selects() {
        // (query, found without the walk). Left to the walk: whole lists and
        // leaf-lists, keys in another order, numbers (compared as numbers),
        // positions, absent nodes, partial keys, `//`, the root.
        let cases = [
            ("/m:top", true),
            ("/m:top/dev[id='2']", true),
            ("/m:top/dev[id='2']/name", true),
            ("/m:top/m:dev[id='10']/sub/x", true),
            ("/m:top/pair[k1='5'][k2='a']/v", true),
            ("/m:top/ll[.='y']", true),
            ("/plain", true),
            ("/m:top/dev", false),
            ("/m:top/ll", false),
            ("/m:top/dev[id=2]/name", false),
            ("//top2/dev[id='7']", false),
            ("/m:top/pair[k2='a'][k1='5']/v", false),
            ("/m:top/log[2]/msg", false),
            ("/m:top/dev[id='3']", false),
            ("/m:top/pair[k1='5']", false),
            ("/m:top/nothing", false),
            ("/", false),
        ];
        for (q, fast) in cases {
            assert_eq!(Query::parse(q).unwrap().found_as_instance(&sample()).is_some(), fast, "{q}");
            assert_eq!(eval(q), walked(q), "{q}");
        }
    }

    #[test]
    fn select_owned_moves_what_select_copies() {
        let queries = [
            "/m:top",
            "/m:top/dev[id='2']",
            "/m:top/dev[id='10']/sub/x",
            "/m:top/ll[.='y']",
            "/m:top/log[2]/msg",
            "/plain",
            "/m:top/nothing",
            "/m:top/dev[id='2']/id",
            // Nothing there, below nodes that are: no ancestors left behind.
            "/m:top/dev[id='99']/name",
            "/m:top/dev[id='2']/nothing",
            "/m:top/dev[id='10']/sub/nothing",
            "/m:top/log[2]/nothing",
            "/m:top/ll[.='nope']",
        ];
        for q in queries {
            let p: Path = q.parse().unwrap();
            assert_eq!(select_owned(sample(), &p), select(&sample(), std::slice::from_ref(&p)), "{q}");
            assert_eq!(select_owned(sample(), &p) == Container::default(), sample().lookup(&p).is_none(), "{q}");
        }
    }

    #[test]
    fn key_pinned_steps_select_what_a_scan_selects() {
        // Found by key lookup; the other predicates still apply.
        assert_eq!(eval("/m:top/pair[k2='a'][k1='5']/v"), ["/m:top/pair[k1='5'][k2='a']/v"]);
        assert_eq!(eval("/m:top/pair[k1='5' and k2='a' and v='five']"), ["/m:top/pair[k1='5'][k2='a']"]);
        assert!(eval("/m:top/pair[k1='5' and k2='a' and v='six']").is_empty());
        assert!(eval("/m:top/pair[k1='5'][k2='b']").is_empty());
        assert_eq!(eval("/m:top/dev[id='10']/sub/x"), ["/m:top/dev[id='10']/sub/x"]);
        // Unprefixed names match lists of every module.
        assert_eq!(eval("//top2/dev[id='7']"), ["/other:top2/dev[id='7']"]);
        assert_eq!(eval("/m:top/dev[id='2']/../dev[id='1']/name"), ["/m:top/dev[id='1']/name"]);
        // Positions count within the set: no lookup.
        assert!(eval("/m:top/dev[2][id='10']").is_empty());
        assert_eq!(eval("/m:top/dev[id='1'][1]/name"), ["/m:top/dev[id='1']/name"]);
        // Entries found from several contexts come in document order.
        assert_eq!(eval("/m:top/dev/../dev[id='2']/name"), ["/m:top/dev[id='2']/name"]);
    }

    #[test]
    fn selects_in_document_order() {
        assert_eq!(eval("/m:top/dev"), ["/m:top/dev[id='1']", "/m:top/dev[id='2']", "/m:top/dev[id='10']"]);
        assert_eq!(eval("/m:top/ll"), ["/m:top/ll[.='x']", "/m:top/ll[.='y']", "/m:top/ll[.='z']"]);
        assert_eq!(eval("/m:top/log"), ["/m:top/log[1]", "/m:top/log[2]", "/m:top/log[3]"]);
        assert_eq!(eval("/m:top/pair"), ["/m:top/pair[k1='5'][k2='a']"]);
        assert_eq!(eval("/plain"), ["/plain"]);
        assert_eq!(eval("/"), ["/"]);
        assert_eq!(
            eval("//dev"),
            ["/m:top/dev[id='1']", "/m:top/dev[id='2']", "/m:top/dev[id='10']", "/other:top2/dev[id='7']"]
        );
        assert_eq!(eval("/m:top/*").len(), 3 + 3 + 3 + 1);
        assert_eq!(eval("/m:top/*")[3], "/m:top/ll[.='x']");
    }

    #[test]
    fn predicates_filter() {
        assert_eq!(eval("//dev[@id='7']"), ["/other:top2/dev[id='7']"]);
        assert_eq!(eval("/m:top/dev[name='a' or name='c']/id"), ["/m:top/dev[id='1']/id", "/m:top/dev[id='10']/id"]);
        assert_eq!(eval("/m:top/dev[name!='a']/name"), ["/m:top/dev[id='2']/name", "/m:top/dev[id='10']/name"]);
        assert_eq!(eval("/m:top/dev[sub]"), ["/m:top/dev[id='10']"]);
        assert_eq!(eval("/m:top/dev[sub/x='1']"), ["/m:top/dev[id='10']"]);
        assert_eq!(eval("/m:top/dev[nothing]"), Vec::<String>::new());
        assert_eq!(eval("/m:top/ll[.='y']"), ["/m:top/ll[.='y']"]);
        assert_eq!(eval("/m:top/log[msg='m3']"), ["/m:top/log[3]"]);
        assert_eq!(eval("/m:top/pair[k2='a' and k1='5']/v"), ["/m:top/pair[k1='5'][k2='a']/v"]);
        assert_eq!(eval("//*[x='1']"), ["/m:top/dev[id='10']/sub"]);
        assert_eq!(eval("/m:top/dev[name=../ll]"), Vec::<String>::new());
        assert_eq!(eval("/m:top/dev[sub/x=../pair/k1 or id=../ll]"), Vec::<String>::new());
        assert_eq!(eval("/m:top/dev[id=../log/msg or ../ll='z']").len(), 3);
    }

    #[test]
    fn comparisons_follow_xpath() {
        assert_eq!(eval("/m:top/dev[mtu > 1000]/id").len(), 2);
        assert_eq!(eval("/m:top/dev[mtu >= 9000]"), ["/m:top/dev[id='2']"]);
        assert_eq!(eval("/m:top/dev[2000 > mtu]"), ["/m:top/dev[id='1']"]);
        // A number makes `=` numeric; a string literal keeps it textual.
        assert_eq!(eval("/m:top/dev[mtu = 1500.0]"), ["/m:top/dev[id='1']"]);
        assert_eq!(eval("/m:top/dev[mtu = '1500.0']"), Vec::<String>::new());
        assert_eq!(eval("/m:top/dev[id < 3]").len(), 2);
        // Text that is not a number never compares as one.
        assert_eq!(eval("/m:top/dev[name > 0]"), Vec::<String>::new());
        assert_eq!(eval("/m:top/dev[name < 'b']"), Vec::<String>::new());
    }

    #[test]
    fn positions_count_per_context_and_after_earlier_predicates() {
        assert_eq!(eval("/m:top/ll[2]"), ["/m:top/ll[.='y']"]);
        assert_eq!(eval("/m:top/log[2]"), ["/m:top/log[2]"]);
        assert_eq!(eval("//dev[1]"), ["/m:top/dev[id='1']", "/other:top2/dev[id='7']"]);
        assert_eq!(eval("/m:top/dev[name!='a'][1]"), ["/m:top/dev[id='2']"]);
        assert_eq!(eval("/m:top/dev[1][name='b']"), Vec::<String>::new());
        assert_eq!(eval("/m:top/dev[3]/name"), ["/m:top/dev[id='10']/name"]);
    }

    #[test]
    fn parent_self_and_duplicates() {
        assert_eq!(eval("/m:top/dev[id='1']/.."), ["/m:top"]);
        assert_eq!(eval("/m:top/dev/.."), ["/m:top"]);
        assert_eq!(eval("/m:top/.."), ["/"]);
        assert_eq!(eval("/.."), Vec::<String>::new());
        assert_eq!(eval("/m:top/./ll/./.[.='z']"), ["/m:top/ll[.='z']"]);
        assert_eq!(eval("//dev/../dev[id='7']"), ["/other:top2/dev[id='7']"]);
        assert_eq!(eval("m:top/ll[.='z']"), ["/m:top/ll[.='z']"]);
    }

    #[test]
    fn names_match_canonically_and_by_local_name() {
        assert_eq!(eval("/m:top/m:dev[m:id='2']"), ["/m:top/dev[id='2']"]);
        assert_eq!(eval("/top/dev[@id='2']"), ["/m:top/dev[id='2']"]);
        assert_eq!(eval("/x:top"), Vec::<String>::new());
        assert_eq!(eval("/m:top/x:dev"), Vec::<String>::new());
    }

    #[test]
    fn evaluated_paths_look_up_the_selected_nodes() {
        let tree = sample();
        let q = Query::parse("//*").unwrap();
        let all = q.evaluate(&tree);
        assert!(all.len() > 20);
        for p in &all {
            let node = tree.lookup(p).unwrap_or_else(|| panic!("{p}"));
            let want_entry = matches!(p.last().map(|s| &s.selector), Some(Selector::Keys(_) | Selector::Position(_)));
            match node {
                NodeRef::Entry(_) => assert!(want_entry, "{p}"),
                NodeRef::LeafListEntry(e) => {
                    assert_eq!(p.last().unwrap().selector, Selector::Value(e.value.to_string()))
                }
                NodeRef::Container(_) | NodeRef::Leaf(..) => assert_eq!(p.last().unwrap().selector, Selector::None),
                other => panic!("{p}: {other:?}"),
            }
        }
    }

    fn paths(list: &[&str]) -> Vec<Path> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    #[test]
    fn select_keeps_ancestors_and_keys() {
        let tree = sample();
        let got = select(&tree, &paths(&["/m:top/dev[id='2']/name"]));
        let want = cont(vec![(
            "m:top",
            Node::Container(cont(vec![(
                "dev",
                list(ListInfo::keyed(["id"]), vec![cont(vec![("id", s("2")), ("name", s("b"))])]),
            )])),
        )]);
        assert_eq!(got, want);
        // A selected entry comes whole, also when a deeper path follows it.
        let got = select(&tree, &paths(&["/m:top/dev[id='10']", "/m:top/dev[id='10']/sub/x"]));
        let Some(Node::Container(top)) = got.children.get("m:top") else { panic!("{got:?}") };
        let Some(Node::List(dev)) = top.children.get("dev") else { panic!() };
        assert_eq!(dev.len(), 1);
        assert_eq!(dev.entries().next().unwrap().children.len(), 3);
        // The root selects everything.
        assert_eq!(select(&tree, &[Path::root()]), tree);
        assert_eq!(select(&tree, &paths(&["/nothing", "/m:top/dev[id='99']"])), Container::default());
    }

    /// One path is selected in one walk (no lookup first): the same tree as
    /// the general way, which looks each path up before copying it, and no
    /// empty ancestors when it names nothing at any depth.
    #[test]
    fn one_path_selects_what_the_general_way_selects() {
        let tree = sample();
        let present = [
            "/",
            "/m:top",
            "/m:top/dev[id='2']",
            "/m:top/dev[id='2']/name",
            "/m:top/dev[id='10']/sub/x",
            "/m:top/ll",
            "/m:top/ll[.='y']",
            "/m:top/log[2]/msg",
            "/plain",
        ];
        let missing = [
            "/nothing",
            "/m:top/nothing",
            "/m:top/dev[id='99']",
            "/m:top/dev[id='99']/name",
            "/m:top/dev[id='2']/nothing",
            "/m:top/dev[id='2']/name/below",
            "/m:top/dev[id='10']/sub/nothing",
            "/m:top/ll[.='nope']",
            "/m:top/log[9]",
            "/m:top/log[2]/nothing",
        ];
        for q in present.iter().chain(&missing) {
            let p: Path = q.parse().unwrap();
            let one = select(&tree, std::slice::from_ref(&p));
            assert_eq!(one, select(&tree, &[p.clone(), p.clone()]), "{q}");
            assert_eq!(one == Container::default(), missing.contains(q), "{q}");
        }
    }

    #[test]
    fn select_gathers_leaf_list_values_and_keyless_entries_in_source_order() {
        let tree = sample();
        let got =
            select(&tree, &paths(&["/m:top/ll[.='z']", "/m:top/ll[.='x']", "/m:top/log[3]/msg", "/m:top/log[1]"]));
        let Some(Node::Container(top)) = got.children.get("m:top") else { panic!("{got:?}") };
        assert_eq!(top.children["ll"], leaf_list(&["x", "z"]));
        let Some(Node::List(log)) = top.children.get("log") else { panic!() };
        let msgs: Vec<String> = log.entries().map(|e| e.key_text("msg").unwrap().into()).collect();
        assert_eq!(msgs, ["m1", "m3"]);
        // A result tree holds what the query selected (predicates on keys still hold).
        let q = Query::parse("/m:top/dev[id > 1]/name").unwrap();
        assert_eq!(q.evaluate(&tree).len(), 2);
        let sel = select(&tree, &q.evaluate(&tree));
        assert_eq!(q.evaluate(&sel), q.evaluate(&tree));
    }
}
