//! The XPath 1.0 subset accepted for reads.
//!
//! Location paths with the child axis (`/a/b`), descendants (`//b`), any name
//! (`*`), parent (`..`) and self (`.`); predicates that combine comparisons with
//! `and`/`or` (and parentheses), comparisons `= != < > <= >=` between a relative
//! path (a child leaf `k`, `@k` as ONAP CPS writes it, `.`, or deeper `a/b`) and a
//! literal or number, existence tests (`[k]`), and positions (`[3]`).
//!
//! Literals take either quote; inside one, the delimiting quote is doubled
//! (`'it''s'`), as [`crate::path::write_literal`] writes it. Whitespace may stand
//! between tokens. `@k` is read as the child `k`. Parsing never panics; errors
//! name the byte offset of the first offending character. `Display` prints a
//! canonical form that parses back to an equal [`Query`].
//!
//! [`Query::evaluate`] runs a query over a tree (`path::eval`),
//! [`Query::to_instance_path`] / [`Query::parse_instance`] turn one into an
//! instance identifier, and [`Query::instance_prefix`] plans which subtree a
//! query needs.

use crate::error::{Error, Result};
use crate::path::{canonical_name, syntax, Path, Segment, Selector};
use crate::tree::{ListInfo, Name};
use crate::value::Text;

/// How a step moves from its context node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    /// `/name`: children.
    Child,
    /// `//name`: descendants (of any depth) named so; XPath's
    /// `descendant-or-self::node()/child::name`.
    Descendant,
    /// `..`
    Parent,
    /// `.`
    SelfNode,
}

/// Which nodes a step keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeTest {
    /// A name as written (prefix kept as written; matching canonicalises).
    Name(Name),
    /// `*`
    Any,
}

/// One location step.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub axis: Axis,
    pub test: NodeTest,
    pub predicates: Vec<Expr>,
}

/// Comparison operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A relative location path from the predicate's context node (`k`, `@k`,
    /// `.`, `a/b`, `../x`).
    Path(Vec<Step>),
    /// A quoted string.
    Literal(String),
    /// A number, as written.
    Number(String),
}

/// A predicate expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Two or more operands, none itself an `Or`: long chains stay flat, so
    /// no code recurses once per operand.
    Or(Vec<Expr>),
    /// Two or more operands, none itself an `And`.
    And(Vec<Expr>),
    Cmp(Operand, CmpOp, Operand),
    /// `[path]`: true when the relative path selects at least one node.
    Exists(Vec<Step>),
    /// `[N]`: the Nth node (1-based) among those the step selected.
    Position(u64),
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// Whether the query starts at the root (`/...` or `//...`).
    pub absolute: bool,
    pub steps: Vec<Step>,
}

impl Query {
    /// Parses a query.
    ///
    /// # Errors
    /// [`crate::Error::Path`] naming the byte position of the first thing that is wrong.
    pub fn parse(input: &str) -> Result<Query> {
        syntax::parse_into(input, None)
    }

    /// Parses an instance identifier (see [`Query::to_instance_path`]); what
    /// `FromStr for Path` does.
    ///
    /// # Errors
    /// [`crate::Error::Path`] naming the byte position of the first thing that is
    /// wrong: a syntax error, or the step or predicate that is query-only (`*`,
    /// `//`, a comparison other than a key equality, ...).
    pub fn parse_instance(input: &str) -> Result<Path> {
        if let Some(p) = plain_instance(input) {
            return Ok(p);
        }
        let (q, spans) = syntax::parse(input)?;
        q.instance_path().map_err(|e| {
            let span = spans.get(e.step).cloned().unwrap_or_default();
            let pos = match e.at {
                At::Sep => span.sep,
                At::Start => span.start,
                At::Pred(j) => span.preds.get(j).copied().unwrap_or(span.start),
            };
            Error::Path { input: input.to_string(), pos, reason: e.reason }
        })
    }

    /// The path `input` spells when it is an instance identifier written in
    /// the plain canonical form (`/m:a/b[k1='1'][k2='x']/c`: no whitespace,
    /// single-quoted keys without quotes inside, each key once), read
    /// without building a query: what [`Query::parse_instance`] and
    /// `Query::parse(input)?.to_instance_path()` give for it. `None` for any
    /// other spelling (then parse it with those).
    pub fn plain_instance(input: &str) -> Option<Path> {
        plain_instance(input)
    }

    /// The instance identifier this query is, if it is one: absolute, child axis
    /// only, no `*`, and predicates that are only key equalities on child leaves
    /// (`[k='v']`, `[@k="v"]`, `['v'=k]`, several joined by `and`), `.` equality,
    /// or a position. Names are canonicalised (a prefix equal to the parent's
    /// module is dropped); keys stay in the order written.
    pub fn to_instance_path(&self) -> Option<Path> {
        self.instance_path().ok()
    }

    fn instance_path(&self) -> std::result::Result<Path, NotInstance> {
        let fail = |step, at, reason: &str| Err(NotInstance { step, at, reason: reason.to_string() });
        if !self.absolute {
            return fail(0, At::Start, "an instance identifier is absolute: it starts with `/`");
        }
        let mut path = Path::root();
        for (i, step) in self.steps.iter().enumerate() {
            match step.axis {
                Axis::Child => {}
                Axis::Descendant => return fail(i, At::Sep, "`//` is not allowed in an instance identifier"),
                Axis::Parent => return fail(i, At::Start, "`..` is not allowed in an instance identifier"),
                Axis::SelfNode => return fail(i, At::Start, "`.` is not allowed as a step of an instance identifier"),
            }
            let NodeTest::Name(written) = &step.test else {
                return fail(i, At::Start, "`*` is not allowed in an instance identifier");
            };
            let name = canonical_name(written, path.module());
            // Borrowed: the key names below are canonical under it, and the
            // borrow ends before the segment joins the path.
            let module = name.split_once(':').map(|(m, _)| m).or(path.module());
            let mut keys: Vec<(Name, Text)> = Vec::new();
            let mut value = None;
            let mut position = None;
            for (j, pred) in step.predicates.iter().enumerate() {
                let bad = |reason: &str| fail(i, At::Pred(j), reason);
                if position.is_some() || (matches!(pred, Expr::Position(_)) && (!keys.is_empty() || value.is_some())) {
                    return bad("a position `[N]` cannot be combined with other predicates in an instance identifier");
                }
                if let Expr::Position(n) = pred {
                    position = Some(*n);
                    continue;
                }
                for c in conjuncts(pred) {
                    match key_equality(c) {
                        Some((KeyRef::SelfNode, v, _)) if value.is_none() && keys.is_empty() => value = Some(v.to_string()),
                        Some((KeyRef::SelfNode, ..)) => {
                            return bad("`[.='v']` names one leaf-list entry and cannot be combined with keys or another `[.='v']`")
                        }
                        Some((KeyRef::Leaf(_), ..)) if value.is_some() => {
                            return bad("`[.='v']` names one leaf-list entry and cannot be combined with keys")
                        }
                        Some((KeyRef::Leaf(k), v, _)) => {
                            let k = canonical_name(k, module);
                            if keys.iter().any(|(n, _)| *n == k) {
                                return fail(i, At::Pred(j), &format!("key `{k}` is given twice"));
                            }
                            keys.push((k, v.into()));
                        }
                        None => return bad(
                            "only key equalities such as `[k='v']`, `[.='v']` or a position `[N]` are allowed in an instance identifier (use a query for other predicates)",
                        ),
                    }
                }
            }
            let selector = match (position, value) {
                (Some(n), _) => Selector::Position(n),
                (_, Some(v)) => Selector::Value(v),
                _ if !keys.is_empty() => Selector::Keys(keys),
                _ => Selector::None,
            };
            path.segments.push(Segment { name, selector });
        }
        Ok(path)
    }

    /// A planning helper for the engine: the deepest instance path `P` such
    /// that every node this query can select, and every node its predicates
    /// look at, lies at or below `P`, so that loading `P`'s subtree (with its
    /// ancestors' key leaves, as [`crate::select`] builds it) suffices to
    /// evaluate the query. Key equalities that a key lookup already guarantees
    /// need no data.
    ///
    /// Leading child steps extend `P`: a plain name without predicates (a
    /// container), or a list (`list_info(schema path)` is `Some`) whose
    /// predicates pin every key by equality to a string literal, in any
    /// spelling (`[k1='5' and k2='a']`, `[k2='a'][k1='5']`, `[@k1='5']...`;
    /// keys come out in [`ListInfo::keys`] order), or a keyless list with a lone
    /// position `[N]`. `//`, `*`, `.`, `..` and any other predicate end `P`, and
    /// `P` is shortened to the least depth that later `..` steps (in the path or
    /// in predicates) climb to.
    ///
    /// Names are resolved as written: an unprefixed name stands for the node in
    /// the parent's module. Evaluation also matches an unprefixed name against
    /// a child of another module by its local part (ONAP CPS spelling); the
    /// engine should qualify such names from its schema before planning.
    pub fn instance_prefix(&self, list_info: &dyn Fn(&str) -> Option<ListInfo>) -> Path {
        let mut p = Path::root();
        // The least depth that a node read by a predicate of the prefix steps lies at.
        let mut least = i64::MAX;
        // `p`'s schema path, grown step by step.
        let mut schema_path = String::new();
        for step in &self.steps {
            let (Axis::Child, NodeTest::Name(written)) = (&step.axis, &step.test) else { break };
            let name = canonical_name(written, p.module());
            schema_path.push('/');
            schema_path.push_str(&name);
            let selector = match list_info(&schema_path) {
                Some(info) => {
                    let module = name.split_once(':').map(|(m, _)| m).or(p.module());
                    let Some(sel) = key_pin(&step.predicates, &info, module) else { break };
                    // Key equalities hold by the key lookup; anything else reads the entry.
                    let depth = p.segments.len() as i64 + 1;
                    for c in step.predicates.iter().flat_map(conjuncts) {
                        if !pins_key(c, &info, module) {
                            least = least.min(expr_min_depth(c, depth));
                        }
                    }
                    sel
                }
                None if step.predicates.is_empty() => Selector::None,
                None => break,
            };
            p.segments.push(Segment { name, selector });
        }
        // Every node reached after the prefix lies below the ancestor at the
        // least depth the rest of the walk (and its predicates) reaches.
        let m = p.segments.len();
        least = least.min(m as i64);
        let mut d = m as i64;
        for step in &self.steps[m..] {
            d = step_depth(step, d);
            least = least.min(d);
            for e in &step.predicates {
                least = least.min(expr_min_depth(e, d));
            }
        }
        p.segments.truncate(least.max(0) as usize);
        p
    }
}

/// A query that can be answered one list entry at a time (see
/// [`Query::entry_scan`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryScan {
    /// The instance path of the list's parent (keys in [`ListInfo::keys`] order).
    pub parent: Path,
    /// The list's name, canonical under `parent`.
    pub list: Name,
    /// Whether the query wrote the list's name without a module prefix (then
    /// evaluation also matches a child of another module by its local name).
    pub unprefixed: bool,
}

impl Query {
    /// A planning helper for streamed reads: when every node this query
    /// selects, and every node its predicates look at, lies inside one entry
    /// of one keyed, system-ordered list, that list. Then the query can be
    /// evaluated entry by entry, each entry with its ancestors, and the
    /// results put together in key order are the results over the whole tree.
    ///
    /// The steps before the list are child steps naming containers
    /// (no predicates) or entries of keyed lists whose predicates only pin
    /// every key by equality to a string literal; the first name carries a
    /// module. The list's own step is a child step whose predicates count no
    /// positions (they count among all entries) and do not climb above the
    /// entry; the steps after it never climb above the entry either.
    /// `list_info` gives the list declarations by schema path.
    pub fn entry_scan(&self, list_info: &dyn Fn(&str) -> Option<ListInfo>) -> Option<EntryScan> {
        if !self.absolute {
            return None;
        }
        let mut p = Path::root();
        // `p`'s schema path, grown step by step.
        let mut schema_path = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let (Axis::Child, NodeTest::Name(written)) = (&step.axis, &step.test) else { return None };
            if p.is_root() && !written.contains(':') {
                return None;
            }
            let name = canonical_name(written, p.module());
            schema_path.push('/');
            schema_path.push_str(&name);
            match list_info(&schema_path) {
                Some(info) if !info.keys.is_empty() && !info.user_ordered => {
                    let module = name.split_once(':').map(|(m, _)| m).or(p.module());
                    let all_pin = step.predicates.iter().flat_map(conjuncts).all(|c| pins_key(c, &info, module));
                    if let (true, Some(sel)) = (all_pin, key_pin(&step.predicates, &info, module)) {
                        p.segments.push(Segment { name, selector: sel });
                        continue;
                    }
                    let entry = i as i64 + 1;
                    let local = |e: &Expr, d: i64| expr_min_depth(e, d) >= entry;
                    if step.predicates.iter().any(|e| super::eval::has_position(e) || !local(e, entry)) {
                        return None;
                    }
                    let mut d = entry;
                    for s in &self.steps[i + 1..] {
                        d = step_depth(s, d);
                        if d < entry || !s.predicates.iter().all(|e| local(e, d)) {
                            return None;
                        }
                    }
                    return Some(EntryScan { parent: p, list: name, unprefixed: !written.contains(':') });
                }
                Some(_) => return None,
                None if step.predicates.is_empty() => p.segments.push(Segment { name, selector: Selector::None }),
                None => return None,
            }
        }
        None
    }
}

/// Why a query is not an instance identifier, and where.
struct NotInstance {
    step: usize,
    at: At,
    reason: String,
}

/// Which part of a step an error points at.
enum At {
    /// The `/` or `//` before it.
    Sep,
    /// The step itself.
    Start,
    /// Its predicate with this index.
    Pred(usize),
}

/// The left side of a key equality.
enum KeyRef<'a> {
    /// A child leaf by name (as written).
    Leaf(&'a str),
    /// `.`
    SelfNode,
}

/// The operands of a conjunction (`a and (b and c)` → `a`, `b`, `c`: the
/// parser keeps them flat).
fn conjuncts(e: &Expr) -> &[Expr] {
    match e {
        Expr::And(v) => v,
        _ => std::slice::from_ref(e),
    }
}

/// `k='v'`, `'v'=k`, `.='v'` and the same with a number: the key, the value
/// text, and whether the value was a string literal (a number compares
/// numerically, so `[k=5]` also matches `k='05'`).
/// The path `input` spells when it is written in the plain canonical form
/// (`/m:a/b[k1='1'][k2='x']/c`: no whitespace, single-quoted keys without
/// quotes inside, each key once): what [`Query::parse_instance`] returns for
/// it, without building the query. `None` for any other spelling, which the
/// full parser then reads (and reports errors of).
fn plain_instance(input: &str) -> Option<Path> {
    let b = input.as_bytes();
    let name_end = |mut i: usize| -> Option<usize> {
        let ident = |i: usize| -> Option<usize> {
            let first = *b.get(i)?;
            (first.is_ascii_alphabetic() || first == b'_').then_some(())?;
            Some(
                i + 1
                    + b[i + 1..]
                        .iter()
                        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
                        .count(),
            )
        };
        i = ident(i)?;
        if b.get(i) == Some(&b':') {
            i = ident(i + 1)?;
        }
        Some(i)
    };
    let mut path = Path { segments: Vec::with_capacity(4) };
    let mut i = 0;
    if b.len() < 2 {
        return None;
    }
    while i < b.len() {
        if b[i] != b'/' || path.segments.len() == crate::path::MAX_STEPS {
            return None;
        }
        let end = name_end(i + 1)?;
        let name = canonical_name(&input[i + 1..end], path.module());
        i = end;
        let mut keys: Vec<(Name, Text)> = Vec::new();
        while b.get(i) == Some(&b'[') {
            let k_end = name_end(i + 1)?;
            if b.get(k_end) != Some(&b'=') || b.get(k_end + 1) != Some(&b'\'') {
                return None;
            }
            let v_start = k_end + 2;
            let v_end = v_start + b[v_start..].iter().position(|&c| c == b'\'')?;
            if b.get(v_end + 1) != Some(&b']') {
                return None;
            }
            let module = name.split_once(':').map(|(m, _)| m).or(path.module());
            let k = canonical_name(&input[i + 1..k_end], module);
            if keys.iter().any(|(n, _)| *n == k) {
                return None;
            }
            keys.push((k, Text::from(&input[v_start..v_end])));
            i = v_end + 2;
        }
        let selector = if keys.is_empty() { Selector::None } else { Selector::Keys(keys) };
        path.segments.push(Segment { name, selector });
    }
    Some(path)
}

fn key_equality(e: &Expr) -> Option<(KeyRef<'_>, &str, bool)> {
    let Expr::Cmp(a, CmpOp::Eq, b) = e else { return None };
    let (steps, value) = match (a, b) {
        (Operand::Path(s), v) | (v, Operand::Path(s)) if !matches!(v, Operand::Path(_)) => (s, v),
        _ => return None,
    };
    let key = match steps.as_slice() {
        [Step { axis: Axis::Child, test: NodeTest::Name(n), predicates }] if predicates.is_empty() => KeyRef::Leaf(n),
        [Step { axis: Axis::SelfNode, predicates, .. }] if predicates.is_empty() => KeyRef::SelfNode,
        _ => return None,
    };
    match value {
        Operand::Literal(v) => Some((key, v.as_str(), true)),
        Operand::Number(v) => Some((key, v.as_str(), false)),
        Operand::Path(_) => None,
    }
}

/// The selector of the one entry of a list that `preds` pin, if they do.
pub(super) fn key_pin(preds: &[Expr], info: &ListInfo, module: Option<&str>) -> Option<Selector> {
    if info.keys.is_empty() {
        return match preds {
            [Expr::Position(n)] => Some(Selector::Position(*n)),
            _ => None,
        };
    }
    let mut values: Vec<Option<String>> = vec![None; info.keys.len()];
    for c in preds.iter().flat_map(conjuncts) {
        if let Some((KeyRef::Leaf(k), v, true)) = key_equality(c) {
            let k = canonical_name(k, module);
            if let Some(i) = info.keys.iter().position(|x| *x == k) {
                // Two different values for one key select nothing; any prefix is sound then.
                values[i].get_or_insert_with(|| v.to_string());
            }
        }
    }
    let values: Option<Vec<String>> = values.into_iter().collect();
    Some(Selector::Keys(info.keys.iter().cloned().zip(values?.into_iter().map(Text::from)).collect()))
}

/// Whether conjunct `c` is one that [`key_pin`] took as pinning a key of `info`.
fn pins_key(c: &Expr, info: &ListInfo, module: Option<&str>) -> bool {
    if info.keys.is_empty() {
        // A keyless list is pinned only by a lone `[N]`.
        return matches!(c, Expr::Position(_));
    }
    matches!(key_equality(c), Some((KeyRef::Leaf(k), _, true)) if info.keys.contains(&canonical_name(k, module)))
}

/// The depth after `step` from depth `d`; a lower bound for `//`.
fn step_depth(step: &Step, d: i64) -> i64 {
    match step.axis {
        Axis::Child | Axis::Descendant => d + 1,
        Axis::Parent => d - 1,
        Axis::SelfNode => d,
    }
}

/// The least depth the paths in `e` reach from a context node at depth `d`.
fn expr_min_depth(e: &Expr, d: i64) -> i64 {
    let path_min = |steps: &[Step]| {
        let (mut least, mut depth) = (d, d);
        for step in steps {
            depth = step_depth(step, depth);
            least = least.min(depth);
            for p in &step.predicates {
                least = least.min(expr_min_depth(p, depth));
            }
        }
        least
    };
    let operand_min = |o: &Operand| match o {
        Operand::Path(steps) => path_min(steps),
        _ => d,
    };
    match e {
        Expr::Or(v) | Expr::And(v) => v.iter().map(|e| expr_min_depth(e, d)).min().unwrap_or(d),
        Expr::Cmp(a, _, b) => operand_min(a).min(operand_min(b)),
        Expr::Exists(steps) => path_min(steps),
        Expr::Position(_) => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::eval::tests::sample;

    fn lists(schema_path: &str) -> Option<ListInfo> {
        match schema_path {
            "/m:top/dev" | "/other:top2/dev" => Some(ListInfo::keyed(["id"])),
            "/m:top/pair" => Some(ListInfo::keyed(["k1", "k2"])),
            "/m:top/log" => Some(ListInfo::keyless()),
            _ => None,
        }
    }

    fn prefix(query: &str) -> String {
        let q = Query::parse(query).unwrap();
        let p = q.instance_prefix(&lists);
        // Sound on the sample tree: everything selected lies below the prefix.
        for r in q.evaluate(&sample()) {
            assert!(p.is_prefix_of(&r), "{query}: {r} is not below {p}");
        }
        p.to_string()
    }

    #[test]
    fn plain_paths_parse_as_the_full_parser_reads_them() {
        let full = |s: &str| syntax::parse(s).ok().and_then(|(q, _)| q.instance_path().ok());
        for s in [
            "/m:a",
            "/m:a/b",
            "/m:a/m:b/x:c/c",
            "/m:cont/lst[k1='1'][k2='str1']/l",
            "/m:cont/m:lst[m:k1='1'][x:k2='']/l",
            "/m:l[b='2'][a='1']",
            "/a/and[or='x y']/_b.c-d",
            "/m:l[k='é/]['][k2='a']",
        ] {
            let plain = plain_instance(s);
            assert!(plain.is_some(), "{s}");
            assert_eq!(plain, full(s), "{s}");
        }
        // Every other spelling is left to the full parser.
        for s in [
            "/",
            "",
            "a",
            "/a/",
            "/a//b",
            "/a[k='1'][k='2']",
            "/a[k='it''s']",
            "/a[k=\"1\"]",
            "/a[k=1]",
            "/a[ k='1']",
            "/a[@k='1']",
            "/a[3]",
            "/a[.='v']",
            "/a[k='1']x",
            "/a/*",
            "/a/..",
            "/m:",
            "/a[k='1' and j='2']",
        ] {
            assert_eq!(plain_instance(s), None, "{s}");
        }
        let deep = "/a".repeat(crate::path::MAX_STEPS + 1);
        assert_eq!(plain_instance(&deep), None);
        assert!(plain_instance(&deep[2..]).is_some());
    }

    #[test]
    fn instance_prefix_pins_keys_in_any_spelling() {
        let pinned = "/m:top/pair[k1='5'][k2='a']/v";
        for q in [
            "/m:top/pair[k1='5' and k2='a']/v",
            "/m:top/pair[k2='a'][k1='5']/v",
            "/m:top/pair[@k1='5'][k2='a']/v",
            "/m:top/m:pair['a'=k2][m:k1=\"5\"]/v",
        ] {
            assert_eq!(prefix(q), pinned, "{q}");
        }
        assert_eq!(prefix("/m:top/dev[id='10']/sub/x"), "/m:top/dev[id='10']/sub/x");
        assert_eq!(prefix("/m:top/log[2]/msg"), "/m:top/log[2]/msg");
    }

    #[test]
    fn instance_prefix_stops_where_the_query_fans_out() {
        for (q, want) in [
            ("/m:top/pair[k1='5']/v", "/m:top"),
            ("/m:top/pair[k1='5' or k2='a']/v", "/m:top"),
            ("/m:top/pair[k1=5][k2='a']/v", "/m:top"),
            ("/m:top/pair/v", "/m:top"),
            ("/m:top/dev[id='1' and id!='2']/name", "/m:top/dev[id='1']"),
            ("/m:top/pair[ (k2='a' and v) and @k1 = '5' ]/v", "/m:top/pair[k1='5'][k2='a']"),
            ("/m:top/pair[k1='5'][1][k2='a']/v", "/m:top/pair[k1='5'][k2='a']"),
            ("/m:top/dev[name='a']/id", "/m:top"),
            ("/m:top/ll[.='x']", "/m:top"),
            ("/m:top/log[msg='m1']", "/m:top"),
            ("//dev[@id='7']", "/"),
            ("/m:top/*/name", "/m:top"),
            ("/m:top/./dev", "/m:top"),
            ("m:top/dev[id='1']", "/m:top/dev[id='1']"),
            ("/", "/"),
        ] {
            assert_eq!(prefix(q), want, "{q}");
        }
    }

    #[test]
    fn instance_prefix_climbs_with_parent_steps() {
        for (q, want) in [
            ("/m:top/dev[id='1']/../ll", "/m:top"),
            ("/m:top/dev[id='10']/sub/../name", "/m:top/dev[id='10']"),
            ("/m:top/dev[id='1']/name[../../ll='x']", "/m:top"),
            ("/m:top/dev[id='1'][../ll='x']/name", "/m:top"),
            ("/m:top/dev[id='10']/sub[x=../../../plain]", "/"),
            ("/m:top/dev[id='10']/sub/x[.=../../name]", "/m:top/dev[id='10']"),
            ("/m:top/..", "/"),
        ] {
            assert_eq!(prefix(q), want, "{q}");
        }
    }

    #[test]
    fn entry_scan_finds_the_list_a_query_stays_inside() {
        let scan =
            |q: &str| Query::parse(q).unwrap().entry_scan(&lists).map(|s| (s.parent.to_string(), s.list, s.unprefixed));
        let top = |list: &str, unprefixed| Some(("/m:top".to_string(), crate::tree::Name::from(list), unprefixed));
        assert_eq!(scan("/m:top/dev[name='a']"), top("dev", true));
        assert_eq!(scan("/m:top/m:dev[name='a' or sub/x>3]/sub"), top("dev", false));
        assert_eq!(scan("/m:top/dev[sub]/sub/x[.=../../name]"), top("dev", true));
        assert_eq!(scan("/m:top/dev//x"), top("dev", true));
        assert_eq!(scan("/m:top/pair[k1='5']"), top("pair", true));
        assert_eq!(scan("/m:top/dev[id='1']/../pair[v='x']"), None, "a parent step above the first list");
        for q in [
            "/m:top/dev[2]",
            "/m:top/dev[name='a'][1]",
            "/m:top/dev[../ll='x']",
            "/m:top/dev/..",
            "/m:top/dev/sub[../../ll]",
            "/m:top/dev[id='10']",
            "//dev[name='a']",
            "m:top/dev[name='a']",
            "/top/dev[name='a']",
            "/m:top/log[msg='m1']",
            "/m:top[x]/dev[name='a']",
            "/m:top/*[name='a']",
            "/m:top",
        ] {
            assert_eq!(scan(q), None, "{q}");
        }
        assert_eq!(
            Query::parse("/m:top/pair[k1='5'][k2='a']/sub[v='1']")
                .unwrap()
                .entry_scan(&|sp| match sp {
                    "/m:top/pair" => Some(ListInfo::keyed(["k1", "k2"])),
                    "/m:top/pair/sub" => Some(ListInfo::keyed(["n"])),
                    _ => None,
                })
                .map(|s| s.parent.to_string()),
            Some("/m:top/pair[k1='5'][k2='a']".to_string())
        );
    }

    #[test]
    fn to_instance_path_accepts_only_instance_identifiers() {
        let ok = Query::parse("/m:top/m:pair[k2='a' and k1='5']/v").unwrap().to_instance_path().unwrap();
        assert_eq!(ok.to_string(), "/m:top/pair[k2='a'][k1='5']/v");
        for q in ["//dev", "/m:top/*", "/m:top/dev[id>'1']", "m:top", "/m:top/.."] {
            assert_eq!(Query::parse(q).unwrap().to_instance_path(), None, "{q}");
        }
    }
}
