//! CPS path (ONAP CPS `docs/cps-path.rst`): parsing, planning and evaluation.
//!
//! `( /absolute | //descendant ) steps [leaf-conditions] [/leaf[text()='v']]
//! [/ancestor::steps] [/@leaf]`. A step is a name with predicates: `@leaf op
//! literal` (`= != < > <= >=`) and `contains(@leaf, 'text')`, combined with
//! `and` (binding tighter) and `or`. Literals are quoted with `'` or `"`, a
//! doubled quote standing for itself, or numbers.
//!
//! Conditions on the last step are *leaf conditions* and compare as CPS
//! does: a quoted literal never equals an integer leaf (`[@code='1']` selects
//! nothing when `code` is a `uint16`). Predicates of the steps above it address
//! list entries and compare by text, so `[@code='1']` and `[@code=1]` are the
//! same entry there.
//!
//! [`plan`] turns a path into the deepest instance path every result lies
//! under, through the schema: a `//name` step is resolved to the schema nodes
//! of that name, and a list whose keys are all pinned by `=` becomes a key
//! lookup, so `//device[@id='x']` reads one device.

use canopy::{Container, Node, Path, Value};
use canopy_core::path::{Segment, Selector};
use canopy_yang::model::Model;

/// Nesting of steps a path may have.
const MAX_STEPS: usize = 128;

#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Str(String),
    Num(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Cmp { leaf: String, op: Op, lit: Lit },
    Contains { leaf: String, text: String },
}

/// A step: a name and its predicates, an OR of ANDs (empty: no predicate).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub name: String,
    pub any: Vec<Vec<Cond>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CpsPath {
    pub descendant: bool,
    pub steps: Vec<Step>,
    /// `leaf[text()='v']` after the steps: the nodes that have it.
    pub text: Option<(String, String)>,
    pub ancestor: Option<Vec<Step>>,
    pub attribute: Option<String>,
}

/// A parse error: the reason and the byte offset.
#[derive(Debug)]
pub struct PathError(pub String);

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

struct Parser<'a> {
    s: &'a str,
    pos: usize,
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')
}

impl<'a> Parser<'a> {
    fn err<T>(&self, what: &str) -> Result<T, PathError> {
        Err(PathError(format!("failed to parse at position {}: {what} in `{}`", self.pos, self.s)))
    }

    fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    fn eat(&mut self, t: &str) -> bool {
        if self.rest().starts_with(t) {
            self.pos += t.len();
            true
        } else {
            false
        }
    }

    fn ws(&mut self) {
        while self.rest().starts_with(' ') {
            self.pos += 1;
        }
    }

    fn word(&mut self, w: &str) -> bool {
        let r = self.rest();
        if r.starts_with(w) && !r[w.len()..].chars().next().is_some_and(is_name_char) {
            self.pos += w.len();
            true
        } else {
            false
        }
    }

    fn name(&mut self) -> Result<String, PathError> {
        let n: usize = self.rest().chars().take_while(|c| is_name_char(*c)).map(char::len_utf8).sum();
        if n == 0 {
            return self.err("expected a name");
        }
        let name = &self.s[self.pos..self.pos + n];
        self.pos += n;
        Ok(local(name).to_string())
    }

    /// A literal as text, string or number alike (`contains()`, `text()=`).
    fn literal_text(&mut self) -> Result<String, PathError> {
        Ok(match self.literal()? {
            Lit::Str(s) | Lit::Num(s) => s,
        })
    }

    fn literal(&mut self) -> Result<Lit, PathError> {
        self.ws();
        let Some(q) = self.rest().chars().next() else { return self.err("expected a value") };
        if q == '\'' || q == '"' {
            self.pos += 1;
            let mut out = String::new();
            loop {
                let Some(c) = self.rest().chars().next() else { return self.err("unterminated string") };
                self.pos += c.len_utf8();
                if c == q {
                    if self.rest().starts_with(q) {
                        self.pos += 1;
                        out.push(q);
                    } else {
                        return Ok(Lit::Str(out));
                    }
                } else {
                    out.push(c);
                }
            }
        }
        let n: usize = self.rest().chars().take_while(|c| c.is_ascii_digit() || matches!(c, '-' | '.')).count();
        let num = &self.s[self.pos..self.pos + n];
        if n == 0 || num.parse::<f64>().is_err() {
            return self.err("expected a quoted string or a number");
        }
        self.pos += n;
        Ok(Lit::Num(num.to_string()))
    }

    fn leaf_ref(&mut self) -> Result<String, PathError> {
        self.ws();
        self.eat("@");
        self.name()
    }

    fn cond(&mut self) -> Result<Cond, PathError> {
        self.ws();
        if self.word("contains") {
            self.ws();
            if !self.eat("(") {
                return self.err("expected `(`");
            }
            let leaf = self.leaf_ref()?;
            self.ws();
            if !self.eat(",") {
                return self.err("expected `,`");
            }
            let text = self.literal_text()?;
            self.ws();
            if !self.eat(")") {
                return self.err("expected `)`");
            }
            return Ok(Cond::Contains { leaf, text });
        }
        let leaf = self.leaf_ref()?;
        self.ws();
        let op = if self.eat("!=") {
            Op::Ne
        } else if self.eat("<=") {
            Op::Le
        } else if self.eat(">=") {
            Op::Ge
        } else if self.eat("=") {
            Op::Eq
        } else if self.eat("<") {
            Op::Lt
        } else if self.eat(">") {
            Op::Gt
        } else {
            return self.err("expected a comparison (= != < > <= >=)");
        };
        let lit = self.literal()?;
        if matches!(lit, Lit::Str(_)) && !matches!(op, Op::Eq | Op::Ne) {
            return self.err("a comparison of order needs a number, not a string");
        }
        Ok(Cond::Cmp { leaf, op, lit })
    }

    /// The inside of `[...]`: conditions with and/or, or `text()='v'`.
    fn predicate(&mut self) -> Result<Result<Vec<Vec<Cond>>, String>, PathError> {
        self.ws();
        if self.eat("text()") {
            self.ws();
            if !self.eat("=") {
                return self.err("expected `=` after text()");
            }
            let v = self.literal_text()?;
            self.ws();
            return Ok(Err(v));
        }
        let mut any = vec![vec![self.cond()?]];
        loop {
            self.ws();
            if self.word("and") {
                let c = self.cond()?;
                any.last_mut().expect("one group at least").push(c);
            } else if self.word("or") {
                any.push(vec![self.cond()?]);
            } else {
                return Ok(Ok(any));
            }
        }
    }

    /// A step with its predicates; `Some(text)` when the predicate was text().
    fn step(&mut self) -> Result<(Step, Option<String>), PathError> {
        let name = self.name()?;
        let mut step = Step { name, any: Vec::new() };
        let mut text = None;
        while self.eat("[") {
            match self.predicate()? {
                Ok(any) => {
                    // Two predicates: both hold.
                    step.any = match std::mem::take(&mut step.any) {
                        prev if prev.is_empty() => any,
                        prev => prev
                            .iter()
                            .flat_map(|a| any.iter().map(move |b| a.iter().chain(b).cloned().collect()))
                            .collect(),
                    };
                }
                Err(t) => text = Some(t),
            }
            self.ws();
            if !self.eat("]") {
                return self.err("expected `]`");
            }
        }
        Ok((step, text))
    }
}

/// The local name of a name that may carry a module prefix.
pub fn local(name: &str) -> &str {
    // A byte loop: names are short, and this runs for every member written.
    match name.bytes().rposition(|b| b == b':') {
        Some(i) => &name[i + 1..],
        None => name,
    }
}

/// Parses a CPS path.
///
/// # Errors
/// What is wrong and where.
pub fn parse(s: &str) -> Result<CpsPath, PathError> {
    let mut p = Parser { s, pos: 0 };
    let descendant = if p.eat("//") {
        true
    } else if p.eat("/") {
        false
    } else {
        return p.err("a cps path starts with `/` or `//`");
    };
    let mut q = CpsPath { descendant, steps: Vec::new(), text: None, ancestor: None, attribute: None };
    if !descendant && p.rest().is_empty() {
        return Ok(q);
    }
    loop {
        if p.steps_full(&q) {
            return p.err("too many steps");
        }
        if p.eat("@") {
            q.attribute = Some(p.name()?);
            if !p.rest().is_empty() {
                return p.err("the attribute axis must come last");
            }
            break;
        }
        if p.eat("ancestor::") {
            let mut steps = Vec::new();
            loop {
                let (step, text) = p.step()?;
                if text.is_some() {
                    return p.err("text() is not allowed in the ancestor axis");
                }
                steps.push(step);
                if p.rest().starts_with("/@") {
                    p.pos += 1;
                    break;
                }
                if !p.eat("/") {
                    break;
                }
                if steps.len() > MAX_STEPS {
                    return p.err("too many steps");
                }
            }
            q.ancestor = Some(steps);
            if p.eat("@") {
                q.attribute = Some(p.name()?);
            }
            if !p.rest().is_empty() {
                return p.err("unexpected text after the ancestor axis");
            }
            break;
        }
        if q.text.is_some() {
            return p.err("only the ancestor axis or an attribute may follow a text() condition");
        }
        let (step, text) = p.step()?;
        match text {
            Some(t) => {
                if !step.any.is_empty() {
                    return p.err("text() takes no other condition");
                }
                q.text = Some((step.name, t));
            }
            None => q.steps.push(step),
        }
        if p.rest().is_empty() {
            break;
        }
        if p.rest().starts_with("//") {
            return p.err("`//` is only allowed at the start");
        }
        if !p.eat("/") {
            return p.err("expected `/` or the end");
        }
        if p.rest().is_empty() {
            return p.err("a path does not end with `/`");
        }
    }
    if q.steps.is_empty() && q.text.is_some() {
        // `//leaf[text()='v']`: any node with that leaf.
        q.steps.push(Step { name: "*".into(), any: Vec::new() });
    }
    if q.steps.is_empty() && (q.ancestor.is_some() || q.attribute.is_some() || q.descendant) {
        return p.err("a path needs a node before its axis");
    }
    Ok(q)
}

impl Parser<'_> {
    fn steps_full(&self, q: &CpsPath) -> bool {
        q.steps.len() >= MAX_STEPS
    }
}

// --- evaluation -------------------------------------------------------------------

/// One node on the way to a result: its canonical name, key values and node.
#[derive(Clone)]
pub struct Loc<'a> {
    pub name: &'a str,
    pub keys: Vec<(canopy_core::tree::Name, canopy_core::value::Text)>,
    pub node: &'a Container,
}

/// A result: the chain from the top-level node down to it.
pub type Chain<'a> = Vec<Loc<'a>>;

/// The CPS xpath of a chain: `/shops/bookstore/categories[@code='1']`.
pub fn xpath_of(chain: &[Loc<'_>]) -> String {
    let mut s = String::new();
    for l in chain {
        s.push('/');
        s.push_str(local(l.name));
        if !l.keys.is_empty() {
            s.push('[');
            for (i, (k, v)) in l.keys.iter().enumerate() {
                if i > 0 {
                    s.push_str(" and ");
                }
                s.push('@');
                s.push_str(local(k));
                s.push('=');
                push_quoted(&mut s, v);
            }
            s.push(']');
        }
    }
    if s.is_empty() {
        s.push('/');
    }
    s
}

fn push_quoted(s: &mut String, v: &str) {
    s.push('\'');
    for c in v.chars() {
        if c == '\'' {
            s.push('\'');
        }
        s.push(c);
    }
    s.push('\'');
}

/// The child containers and list entries of a node.
pub fn children(c: &Container) -> Vec<Loc<'_>> {
    let mut out = Vec::new();
    for (name, node) in c.children.iter() {
        match node {
            Node::Container(cc) => out.push(Loc { name: name.as_str(), keys: Vec::new(), node: cc }),
            Node::List(l) => {
                for e in l.entries() {
                    let keys = l
                        .info
                        .keys
                        .iter()
                        .map(|k| (k.clone(), e.children.get(k).map(value_text).unwrap_or_default().into()))
                        .collect();
                    out.push(Loc { name: name.as_str(), keys, node: e });
                }
            }
            _ => {}
        }
    }
    out
}

fn value_text(n: &Node) -> String {
    match n {
        Node::Leaf { value, .. } => value.as_text().into_owned(),
        _ => String::new(),
    }
}

/// The values of a leaf or leaf-list child.
pub fn leaf_values<'a>(c: &'a Container, leaf: &str) -> Vec<&'a Value> {
    let found =
        c.children.get(leaf).or_else(|| c.children.iter().find(|(n, _)| local(n) == leaf).map(|(_, node)| node));
    match found {
        Some(Node::Leaf { value, .. }) => vec![value],
        Some(Node::LeafList(v)) => v.iter().map(|e| &e.value).collect(),
        _ => Vec::new(),
    }
}

fn num(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok()
}

fn compare(v: &Value, op: Op, lit: &Lit, strict: bool) -> bool {
    let text = v.as_text();
    match (op, lit) {
        // A quoted value matches a leaf whose text it is, numbers included
        // (CPS finds `[@code='1']` where `code` is the integer 1, though
        // its documentation says otherwise; `'01'` it does not).
        (Op::Eq | Op::Ne, Lit::Str(s)) => (text == s.as_str()) == (op == Op::Eq),
        (_, Lit::Num(n)) => {
            let (Some(a), Some(b)) = (num(&text), num(n)) else { return op == Op::Ne && !strict };
            match op {
                Op::Eq => a == b,
                Op::Ne => a != b,
                Op::Lt => a < b,
                Op::Gt => a > b,
                Op::Le => a <= b,
                Op::Ge => a >= b,
            }
        }
        _ => false,
    }
}

fn holds(c: &Container, cond: &Cond, strict: bool) -> bool {
    match cond {
        Cond::Cmp { leaf, op, lit } => leaf_values(c, leaf).iter().any(|v| compare(v, *op, lit, strict)),
        Cond::Contains { leaf, text } => leaf_values(c, leaf).iter().any(|v| v.as_text().contains(text.as_str())),
    }
}

fn matches(loc: &Loc<'_>, step: &Step, strict: bool) -> bool {
    (step.name == "*" || local(loc.name) == step.name)
        && (step.any.is_empty() || step.any.iter().any(|all| all.iter().all(|c| holds(loc.node, c, strict))))
}

fn descend<'a>(chain: &Chain<'a>, steps: &[Step], last_strict: bool, out: &mut Vec<Chain<'a>>) {
    let Some((step, rest)) = steps.split_first() else {
        out.push(chain.clone());
        return;
    };
    let strict = rest.is_empty() && last_strict;
    for child in children(chain.last().expect("a chain is never empty").node) {
        if matches(&child, step, strict) {
            let mut c = chain.clone();
            c.push(child);
            descend(&c, rest, last_strict, out);
        }
    }
}

fn everywhere<'a>(chain: &mut Chain<'a>, step: &Step, strict: bool, out: &mut Vec<Chain<'a>>) {
    for child in children(chain.last().expect("a chain is never empty").node) {
        let hit = matches(&child, step, strict);
        chain.push(child);
        if hit {
            out.push(chain.clone());
        }
        everywhere(chain, step, strict, out);
        chain.pop();
    }
}

/// The nodes of `root` (a datastore tree) that `q` selects, in document
/// order, each once (the attribute axis is left to the caller).
pub fn evaluate<'a>(q: &CpsPath, root: &'a Container) -> Vec<Chain<'a>> {
    let top = Loc { name: "", keys: Vec::new(), node: root };
    let last_strict = q.text.is_none() && q.ancestor.is_none();
    let mut found = Vec::new();
    if q.steps.is_empty() {
        for c in children(root) {
            found.push(vec![c]);
        }
        return found;
    }
    if q.descendant {
        let strict = q.steps.len() == 1 && last_strict;
        let mut starts = Vec::new();
        everywhere(&mut vec![top], &q.steps[0], strict, &mut starts);
        for s in starts {
            descend(&s, &q.steps[1..], last_strict, &mut found);
        }
    } else {
        descend(&vec![top], &q.steps, last_strict, &mut found);
    }
    for chain in &mut found {
        chain.remove(0);
    }
    if let Some((leaf, text)) = &q.text {
        found.retain(|c| {
            leaf_values(c.last().expect("a result is a node").node, leaf).iter().any(|v| v.as_text() == text.as_str())
        });
    }
    if let Some(anc) = &q.ancestor {
        let mut out: Vec<Chain<'a>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for chain in &found {
            for i in (0..chain.len().saturating_sub(1)).rev() {
                if matches(&chain[i], &anc[0], false) {
                    let mut with_top = vec![Loc { name: "", keys: Vec::new(), node: root }];
                    with_top.extend(chain[..=i].iter().cloned());
                    let mut res = Vec::new();
                    descend(&with_top, &anc[1..], false, &mut res);
                    for mut r in res {
                        r.remove(0);
                        if seen.insert(xpath_of(&r)) {
                            out.push(r);
                        }
                    }
                }
            }
        }
        out.sort_by_key(order_key);
        return out;
    }
    found
}

/// Document order of chains from one tree: by the positions of their steps.
fn order_key(chain: &Chain<'_>) -> Vec<usize> {
    let mut key = Vec::new();
    let mut parent: Option<&Container> = None;
    for l in chain {
        if let Some(p) = parent {
            let pos = children(p).iter().position(|c| std::ptr::eq(c.node, l.node)).unwrap_or(0);
            key.push(pos);
        }
        parent = Some(l.node);
    }
    key
}

// --- planning ------------------------------------------------------------------------

/// The schema nodes the first step of `q` names: top-level nodes, or with
/// `//` every inner node of that name.
fn starts(q: &CpsPath, model: &Model) -> Vec<usize> {
    if q.descendant {
        model
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| local(&n.name) == q.steps[0].name && is_inner(n))
            .map(|(i, _)| i)
            .collect()
    } else {
        model.top.iter().filter(|(n, _)| local(n) == q.steps[0].name).map(|(_, i)| *i).collect()
    }
}

/// Where a plan from schema node `start` stops.
enum Stop {
    /// At a list (its schema node) above the first step, or at a step that
    /// names a list without pinning its keys.
    List(usize),
    /// At a step that names no node below the last one.
    Mismatch,
    /// After the last step, every list on the way pinned.
    End,
}

/// The instance path `q` pins from `start` down: containers, and lists whose
/// keys its steps give with `=`; and where that stops.
fn walk(q: &CpsPath, model: &Model, start: usize) -> (Path, Stop) {
    let mut above = Vec::new();
    let mut at = model.nodes[start].parent;
    while let Some(i) = at {
        above.push(i);
        at = model.nodes[i].parent;
    }
    above.reverse();
    let mut path = Path::root();
    for i in above {
        let n = &model.nodes[i];
        if is_list(n) {
            return (path, Stop::List(i));
        }
        path = path.child(n.name.clone(), Selector::None);
    }
    let mut node = Some(start);
    for (si, step) in q.steps.iter().enumerate() {
        let Some(i) = node else { return (path, Stop::Mismatch) };
        let n = &model.nodes[i];
        if local(&n.name) != step.name {
            return (path, Stop::Mismatch);
        }
        if is_list(n) {
            match pinned(n, step) {
                Some(keys) => path = path.child(n.name.clone(), Selector::Keys(keys)),
                None => return (path, Stop::List(i)),
            }
        } else {
            path = path.child(n.name.clone(), Selector::None);
        }
        node = q
            .steps
            .get(si + 1)
            .and_then(|next| n.children.iter().find(|(c, _)| local(c) == next.name).map(|(_, j)| *j));
    }
    (path, Stop::End)
}

/// The instance path every result of `q` lies under (the root when nothing
/// narrows it), or `None` when the schema has no node the path can reach.
pub fn plan(q: &CpsPath, model: &Model) -> Option<Path> {
    if q.steps.is_empty() || q.steps[0].name == "*" {
        return Some(Path::root());
    }
    let mut paths: Vec<Path> = starts(q, model).into_iter().map(|start| walk(q, model, start).0).collect();
    if paths.is_empty() {
        return None;
    }
    // An ancestor is printed with its own data: the plan starts at it.
    if let Some(anc) = &q.ancestor {
        for p in &mut paths {
            if let Some(i) = p.segments.iter().position(|s| local(&s.name) == anc[0].name) {
                p.segments.truncate(i + 1);
                p.segments[i].selector = Selector::None;
            }
        }
    }
    let mut common = paths[0].segments.clone();
    for p in &paths[1..] {
        let n = common.iter().zip(&p.segments).take_while(|(a, b)| a == b).count();
        common.truncate(n);
    }
    Some(Path { segments: common })
}

/// The keyed, system-ordered list whose entries hold every result of `q`,
/// as a path without the entry's keys (`/m:devices/device`), when there is
/// one: `q` reaches one schema node by its first step (absolute, or `//`
/// with one node of that name), has no ancestor axis, and its plan (see
/// [`plan`]) stops at that list, either on the way down to the first step
/// or at a step naming it without pinning its keys. Then `q` can be
/// evaluated entry by entry, each entry with its ancestors, and the results
/// taken in entry order are the results over the whole tree.
pub fn plan_list(q: &CpsPath, model: &Model) -> Option<Path> {
    if q.ancestor.is_some() || q.steps.is_empty() || q.steps[0].name == "*" {
        return None;
    }
    let [start] = starts(q, model)[..] else { return None };
    match walk(q, model, start) {
        (path, Stop::List(i)) => {
            let n = &model.nodes[i];
            (!n.keys.is_empty() && !n.user_ordered).then(|| path.child(n.name.clone(), Selector::None))
        }
        (_, Stop::Mismatch | Stop::End) => None,
    }
}

/// The one list entry `q` selects, when `q` says no more than "the entry at
/// this instance path": one schema node for its first step (absolute, or
/// `//` with one node of that name), no `text()`, `ancestor::` or `/@leaf`,
/// its last step a list, and its predicates exactly the equalities of each
/// list step's keys to quoted values. Its results are then that entry
/// alone, when one is stored with those key texts (the caller checks that
/// the path's key values are canonical, as stored ones are).
pub fn entry_of(q: &CpsPath, model: &Model) -> Option<Path> {
    if q.ancestor.is_some() || q.attribute.is_some() || q.text.is_some() || q.steps.is_empty() {
        return None;
    }
    let [start] = starts(q, model)[..] else { return None };
    let (path, Stop::End) = walk(q, model, start) else { return None };
    let keys: usize = path
        .segments
        .iter()
        .map(|s| match &s.selector {
            Selector::Keys(k) => k.len(),
            _ => 0,
        })
        .sum();
    let mut conds = 0;
    for step in &q.steps {
        match step.any.as_slice() {
            [] => {}
            [all] if all.iter().all(|c| matches!(c, Cond::Cmp { op: Op::Eq, lit: Lit::Str(_), .. })) => {
                conds += all.len();
            }
            _ => return None,
        }
    }
    let last_is_entry = path.segments.last().is_some_and(|s| matches!(s.selector, Selector::Keys(_)));
    (conds == keys && last_is_entry).then_some(path)
}

fn is_list(n: &canopy_yang::model::SNode) -> bool {
    n.kind == canopy_core::schema::NodeKind::List
}

fn is_inner(n: &canopy_yang::model::SNode) -> bool {
    matches!(n.kind, canopy_core::schema::NodeKind::List | canopy_core::schema::NodeKind::Container)
}

/// The key values of a list step whose predicate pins every key by `=` (in
/// one AND group, the only one).
fn pinned(
    n: &canopy_yang::model::SNode,
    step: &Step,
) -> Option<Vec<(canopy_core::tree::Name, canopy_core::value::Text)>> {
    let [all] = step.any.as_slice() else { return None };
    let mut keys = Vec::new();
    for k in &n.keys {
        let v = all.iter().find_map(|c| match c {
            Cond::Cmp { leaf, op: Op::Eq, lit } if leaf == local(k) => Some(match lit {
                Lit::Str(s) | Lit::Num(s) => s.clone(),
            }),
            _ => None,
        })?;
        keys.push((k.clone(), v.into()));
    }
    Some(keys)
}

/// An xpath of the data API (a node, not a query): absolute, list entries by
/// their keys (any quoting), as a canopy instance path through the schema.
///
/// # Errors
/// A path that does not parse, is not absolute, names what the schema does not
/// have, or gives predicates other than key equalities.
pub fn to_instance(xpath: &str, model: &Model) -> Result<Path, PathError> {
    let q = parse(xpath)?;
    if q.descendant || q.text.is_some() || q.ancestor.is_some() || q.attribute.is_some() {
        return Err(PathError(format!("`{xpath}` is not an absolute path to a data node")));
    }
    let mut path = Path::root();
    let mut at: Option<usize> = None;
    for step in &q.steps {
        let found = match at {
            None => model.top.iter().find(|(n, _)| local(n) == step.name).map(|(_, i)| *i),
            Some(p) => model.nodes[p].children.iter().find(|(n, _)| local(n) == step.name).map(|(_, i)| *i),
        };
        let Some(i) = found else {
            return Err(PathError(format!("`{xpath}`: no data node `{}` in the schema there", step.name)));
        };
        let n = &model.nodes[i];
        if !is_inner(n) {
            return Err(PathError(format!("`{xpath}`: `{}` is not a container or list", step.name)));
        }
        let selector = if step.any.is_empty() {
            Selector::None
        } else if is_list(n) {
            let keys = pinned(n, step).ok_or_else(|| {
                PathError(format!("`{xpath}`: list `{}` is addressed by all its keys with `=`", step.name))
            })?;
            if step.any[0].len() != keys.len() {
                return Err(PathError(format!("`{xpath}`: list `{}` takes only its keys", step.name)));
            }
            Selector::Keys(keys)
        } else {
            return Err(PathError(format!("`{xpath}`: `{}` is not a list", step.name)));
        };
        path.segments.push(Segment { name: n.name.clone(), selector });
        at = Some(i);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        for ok in [
            "/shops/bookstore",
            "//categories[@code='1']/books/book[@title='Dune' and @price<=5]",
            "//book/label[text()=\"classic\"]/ancestor::shops",
            "//books/ancestor::bookstore/@bookstore-name",
            "//categories[contains(@name,'Sci')]",
            "//book[@title='It''s']",
            "/",
        ] {
            parse(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
        for bad in [
            "",
            "cpsPath that cannot be parsed",
            "//books[@lang>\"German\"]",
            "/a[",
            "/a/",
            "//",
            "/a//b",
            "/a/@",
            "//a/ancestor::",
            "/a[@x='1'",
            "/a[@x=]",
            "/a[@x='1' and]",
            "/\u{e9}",
        ] {
            assert!(parse(bad).is_err(), "{bad} parsed");
        }
    }

    fn deep_network() -> canopy_yang::YangSchema {
        let text = include_str!("../../tests/http/modules/cps/deep-network.yang");
        canopy_yang::YangSchema::add_texts(&[], &[("deep-network.yang".into(), text.into())], &[]).unwrap()
    }

    #[test]
    fn a_pinned_key_is_a_lookup_whether_absolute_or_descendant() {
        let y = deep_network();
        let plan_of = |q: &str| plan(&parse(q).unwrap(), y.model()).map(|p| p.to_string());
        let one = Some("/deep-network:network/device[id='x']".to_string());
        assert_eq!(plan_of("//device[@id='x']"), one);
        assert_eq!(plan_of("/network/device[@id='x']"), one);
        assert_eq!(
            plan_of("//device[@id=\"x\"]/interface[@name='eth0']/unit"),
            Some("/deep-network:network/device[id='x']/interface[name='eth0']".into())
        );
        // Other predicates read the list they filter, and nothing else.
        assert_eq!(plan_of("//device[@vendor='x']"), Some("/deep-network:network".into()));
        // Below an unpinned list, the plan stops above it.
        assert_eq!(plan_of("//unit[@number=1]"), Some("/deep-network:network".into()));
        // A name the schema does not have reads nothing.
        assert_eq!(plan_of("//nothing"), None);
        // An ancestor is read whole.
        assert_eq!(
            plan_of("//device[@id='x']/interface/ancestor::device"),
            Some("/deep-network:network/device".into())
        );
    }

    #[test]
    fn and_binds_tighter() {
        let q = parse("/a[@x=1 or @y=2 and @z=3]").unwrap();
        assert_eq!(q.steps[0].any.len(), 2);
        assert_eq!(q.steps[0].any[1].len(), 2);
    }
}
