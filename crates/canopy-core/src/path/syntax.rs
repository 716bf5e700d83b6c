//! Text syntax of queries: a recursive-descent parser with byte positions in
//! its errors, and the canonical printer (`Display for Query`).
//!
//! Grammar (whitespace may stand between any two tokens):
//! ```text
//! query     = "/" | "/" steps | "//" steps | steps
//! steps     = step (("/" | "//") step)*
//! step      = "." | ".." | ("@"? (name | "*")) predicate*
//! predicate = "[" or "]"
//! or        = and ("or" and)*
//! and       = primary ("and" primary)*
//! primary   = "(" or ")" | operand (cmp operand)?
//! operand   = literal | number | steps        (relative only)
//! ```
//! A bare number as a primary is a position (`[3]`); a bare path is an existence
//! test (`[k]`).

use std::fmt;

use super::query::{Axis, CmpOp, Expr, NodeTest, Operand, Query, Step};
use crate::error::{Error, Result};

/// Byte positions of one top-level step, for errors about a parsed query (see
/// [`Query::parse_instance`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct StepSpan {
    /// Where the separator (`/`, `//`) starts, or the step when it has none.
    pub sep: usize,
    /// Where the step itself (name, `*`, `.`, `..`, `@`) starts.
    pub start: usize,
    /// Where each predicate's `[` is.
    pub preds: Vec<usize>,
}

/// Deeper nesting of predicates and parentheses is refused, so that no input
/// can exhaust the stack.
const MAX_DEPTH: usize = 64;

/// Parses `input`, returning the top-level steps' positions beside the query.
pub(crate) fn parse(input: &str) -> Result<(Query, Vec<StepSpan>)> {
    let mut spans = Vec::new();
    let q = parse_into(input, Some(&mut spans))?;
    Ok((q, spans))
}

/// Parses `input`, noting the top-level steps' positions in `spans` when
/// given (a query read for its results needs none).
pub(crate) fn parse_into(input: &str, spans: Option<&mut Vec<StepSpan>>) -> Result<Query> {
    let mut p = Parser { s: input, b: input.as_bytes(), pos: 0, depth: 0 };
    p.ws();
    if p.pos == p.b.len() {
        return p.err(p.pos, "empty query");
    }
    let absolute = p.peek() == Some(b'/');
    let steps = if absolute && p.peek_at(1) != Some(b'/') && p.rest_is_blank(1) {
        // `/` alone: the root.
        p.pos = p.b.len();
        Vec::new()
    } else {
        p.steps(absolute, spans)?
    };
    p.ws();
    if p.pos < p.b.len() {
        let what = p.describe(p.pos);
        return p.err(p.pos, format!("unexpected {what} after the path"));
    }
    Ok(Query { absolute, steps })
}

/// One operand alone, else the operator over all of them.
fn flat(mut operands: Vec<Expr>, op: fn(Vec<Expr>) -> Expr) -> Expr {
    if operands.len() == 1 {
        operands.pop().expect("one operand")
    } else {
        op(operands)
    }
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
}

impl Parser<'_> {
    fn err<T>(&self, pos: usize, reason: impl Into<String>) -> Result<T> {
        Err(Error::Path { input: self.s.to_string(), pos, reason: reason.into() })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn peek_at(&self, off: usize) -> Option<u8> {
        self.b.get(self.pos + off).copied()
    }

    /// Whether only whitespace follows `off` bytes after the current position.
    fn rest_is_blank(&self, off: usize) -> bool {
        self.b[self.pos + off..].iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// The character at `pos` for a message: "character `#`" or "end of input".
    /// `pos` is always on a character boundary: the parser only steps over
    /// ASCII bytes and whole literals.
    fn describe(&self, pos: usize) -> String {
        match self.s.get(pos..).and_then(|r| r.chars().next()) {
            Some(c) => format!("character `{c}`"),
            None => "end of input".into(),
        }
    }

    /// Whether the keyword `kw` (`and`, `or`) stands at the current position as
    /// a whole word.
    fn at_keyword(&self, kw: &str) -> bool {
        self.b[self.pos..].starts_with(kw.as_bytes())
            && !self.b.get(self.pos + kw.len()).is_some_and(|&b| is_ident_char(b))
    }

    /// A location path: `absolute` ones start with `/` or `//`; relative ones
    /// start with a step and end before the first character that cannot continue
    /// them.
    fn steps(&mut self, absolute: bool, mut spans: Option<&mut Vec<StepSpan>>) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        loop {
            self.ws();
            let sep = self.pos;
            let (descendant, after) = match (self.peek(), self.peek_at(1)) {
                (Some(b'/'), Some(b'/')) => {
                    self.pos += 2;
                    (true, "`//`")
                }
                (Some(b'/'), _) => {
                    self.pos += 1;
                    (false, "`/`")
                }
                _ if steps.is_empty() && !absolute => (false, ""),
                _ => break,
            };
            if steps.len() == super::MAX_STEPS {
                return self.err(sep, format!("a path has at most {} steps", super::MAX_STEPS));
            }
            self.ws();
            let start = self.pos;
            let step = self.step(descendant, after)?;
            if let Some(spans) = spans.as_deref_mut() {
                spans.push(StepSpan { sep, start, preds: Vec::new() });
            }
            let step = self.predicates(step, spans.as_deref_mut().and_then(|s| s.last_mut()))?;
            steps.push(step);
        }
        Ok(steps)
    }

    /// One step without its predicates.
    /// `after` names the separator before the step, for messages ("" for none).
    fn step(&mut self, descendant: bool, after: &str) -> Result<Step> {
        // Written only into errors: a step that parses builds no text.
        let after = || if after.is_empty() { String::new() } else { format!(" after {after}") };
        let axis = if descendant { Axis::Descendant } else { Axis::Child };
        let start = self.pos;
        match self.peek() {
            None if descendant => self.err(start, "`//` must be followed by a name or `*`"),
            None => self.err(start, format!("expected a name{}", after())),
            Some(b'.') if descendant => self.err(start, "`//` must be followed by a name or `*`, not `.` or `..`"),
            Some(b'.') if self.peek_at(1) == Some(b'.') => {
                self.pos += 2;
                Ok(Step { axis: Axis::Parent, test: NodeTest::Any, predicates: Vec::new() })
            }
            Some(b'.') => {
                self.pos += 1;
                Ok(Step { axis: Axis::SelfNode, test: NodeTest::Any, predicates: Vec::new() })
            }
            Some(b'@') => {
                // ONAP CPS spelling: `@k` is the child leaf `k`.
                self.pos += 1;
                match self.peek() {
                    Some(b'*') => {
                        self.pos += 1;
                        Ok(Step { axis, test: NodeTest::Any, predicates: Vec::new() })
                    }
                    Some(b) if is_ident_start(b) => {
                        Ok(Step { axis, test: NodeTest::Name(self.name()?), predicates: Vec::new() })
                    }
                    _ => {
                        let what = self.describe(self.pos);
                        self.err(self.pos, format!("expected a name after `@`, found {what}"))
                    }
                }
            }
            Some(b'*') => {
                self.pos += 1;
                Ok(Step { axis, test: NodeTest::Any, predicates: Vec::new() })
            }
            Some(b':') => self.err(start, "empty name: a prefix needs a name before `:`"),
            Some(b) if is_ident_start(b) => {
                Ok(Step { axis, test: NodeTest::Name(self.name()?), predicates: Vec::new() })
            }
            Some(b'/') => self.err(start, format!("empty name{}", after())),
            Some(_) => {
                let what = self.describe(start);
                self.err(start, format!("unexpected {what}{}: expected a name, `*`, `.` or `..`", after()))
            }
        }
    }

    /// A name `identifier` or `prefix:identifier`; the current byte starts an identifier.
    fn name(&mut self) -> Result<crate::tree::Name> {
        let start = self.pos;
        self.ident();
        if self.peek() == Some(b':') {
            self.pos += 1;
            match self.peek() {
                Some(b) if is_ident_start(b) => self.ident(),
                _ => {
                    let prefix = &self.s[start..self.pos];
                    return self.err(self.pos, format!("empty name after the prefix `{prefix}`"));
                }
            }
        }
        Ok(self.s[start..self.pos].into())
    }

    fn ident(&mut self) {
        self.pos += 1;
        while self.peek().is_some_and(is_ident_char) {
            self.pos += 1;
        }
    }

    /// The predicates following a step, appended to it.
    fn predicates(&mut self, mut step: Step, mut span: Option<&mut StepSpan>) -> Result<Step> {
        loop {
            self.ws();
            if self.peek() != Some(b'[') {
                return Ok(step);
            }
            let open = self.pos;
            if let Some(span) = span.as_deref_mut() {
                span.preds.push(open);
            }
            self.pos += 1;
            self.enter(open)?;
            self.ws();
            if self.peek() == Some(b']') {
                return self.err(open, "empty predicate `[]`");
            }
            let e = self.or_expr("a condition after `[`")?;
            self.ws();
            match self.peek() {
                Some(b']') => self.pos += 1,
                None => return self.err(self.pos, format!("expected `]` to close the `[` at position {open}")),
                Some(_) => {
                    let what = self.describe(self.pos);
                    return self.err(self.pos, format!("expected `]`, found {what}"));
                }
            }
            self.depth -= 1;
            step.predicates.push(e);
        }
    }

    fn enter(&mut self, pos: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(pos, format!("predicates and parentheses nested deeper than {MAX_DEPTH}"));
        }
        Ok(())
    }

    /// `and ("or" and)*`, as one flat [`Expr::Or`] (a parenthesized `or`
    /// among the operands is spliced in: the meaning is the same).
    fn or_expr(&mut self, what: &str) -> Result<Expr> {
        let mut e = self.and_expr(what)?;
        // One operand (most predicates) needs no list.
        self.ws();
        if !self.at_keyword("or") {
            return Ok(e);
        }
        let mut operands = Vec::new();
        loop {
            match e {
                Expr::Or(v) => operands.extend(v),
                e => operands.push(e),
            }
            self.ws();
            if !self.at_keyword("or") {
                break;
            }
            self.pos += 2;
            e = self.and_expr("a condition after `or`")?;
        }
        Ok(flat(operands, Expr::Or))
    }

    /// `primary ("and" primary)*`, as one flat [`Expr::And`].
    fn and_expr(&mut self, what: &str) -> Result<Expr> {
        let mut e = self.primary(what)?;
        self.ws();
        if !self.at_keyword("and") {
            return Ok(e);
        }
        let mut operands = Vec::new();
        loop {
            match e {
                Expr::And(v) => operands.extend(v),
                e => operands.push(e),
            }
            self.ws();
            if !self.at_keyword("and") {
                break;
            }
            self.pos += 3;
            e = self.primary("a condition after `and`")?;
        }
        Ok(flat(operands, Expr::And))
    }

    fn primary(&mut self, what: &str) -> Result<Expr> {
        self.ws();
        if self.peek() == Some(b'(') {
            let open = self.pos;
            self.pos += 1;
            self.enter(open)?;
            let e = self.or_expr("a condition after `(`")?;
            self.ws();
            if self.peek() != Some(b')') {
                let found = self.describe(self.pos);
                return self.err(self.pos, format!("expected `)` to close the `(` at position {open}, found {found}"));
            }
            self.pos += 1;
            self.depth -= 1;
            return Ok(e);
        }
        let start = self.pos;
        let lhs = self.operand(what)?;
        self.ws();
        let op_pos = self.pos;
        if let Some(op) = self.cmp_op()? {
            let op_text = &self.s[op_pos..self.pos];
            let rhs = self.operand(&format!("a value after `{op_text}`"))?;
            return Ok(Expr::Cmp(lhs, op, rhs));
        }
        match lhs {
            Operand::Path(steps) => Ok(Expr::Exists(steps)),
            Operand::Number(n) => match n.parse::<u64>() {
                Ok(p) if p >= 1 => Ok(Expr::Position(p)),
                _ => self.err(start, format!("a position must be a whole number from 1 up, not `{n}`")),
            },
            Operand::Literal(_) => {
                self.err(start, "a string alone is not a condition: compare it, as in `[name='value']`")
            }
        }
    }

    fn cmp_op(&mut self) -> Result<Option<CmpOp>> {
        let (op, len) = match (self.peek(), self.peek_at(1)) {
            (Some(b'='), _) => (CmpOp::Eq, 1),
            (Some(b'!'), Some(b'=')) => (CmpOp::Ne, 2),
            (Some(b'!'), _) => return self.err(self.pos, "expected `=` after `!`"),
            (Some(b'<'), Some(b'=')) => (CmpOp::Le, 2),
            (Some(b'<'), _) => (CmpOp::Lt, 1),
            (Some(b'>'), Some(b'=')) => (CmpOp::Ge, 2),
            (Some(b'>'), _) => (CmpOp::Gt, 1),
            _ => return Ok(None),
        };
        self.pos += len;
        Ok(Some(op))
    }

    fn operand(&mut self, what: &str) -> Result<Operand> {
        self.ws();
        let digit_at = |off: usize| self.peek_at(off).is_some_and(|b| b.is_ascii_digit());
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => self.literal(q).map(Operand::Literal),
            Some(b) if b.is_ascii_digit() => Ok(Operand::Number(self.number())),
            Some(b'.') if digit_at(1) => Ok(Operand::Number(self.number())),
            Some(b'-') if digit_at(1) || (self.peek_at(1) == Some(b'.') && digit_at(2)) => {
                Ok(Operand::Number(self.number()))
            }
            Some(b'/') => self.err(
                self.pos,
                "absolute paths are not supported inside predicates: use a relative path such as `../x`",
            ),
            Some(b) if is_ident_start(b) || matches!(b, b'.' | b'@' | b'*') => {
                Ok(Operand::Path(self.steps(false, None)?))
            }
            _ => {
                let found = self.describe(self.pos);
                self.err(self.pos, format!("expected {what}, found {found}"))
            }
        }
    }

    /// A quoted literal; the delimiting quote doubled stands for itself.
    fn literal(&mut self, q: u8) -> Result<String> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Quotes are ASCII, so every index found is a character boundary.
            let Some(i) = self.b[self.pos..].iter().position(|&b| b == q).map(|i| i + self.pos) else {
                return self.err(open, "unterminated string literal");
            };
            out.push_str(&self.s[self.pos..i]);
            if self.b.get(i + 1) == Some(&q) {
                out.push(q as char);
                self.pos = i + 2;
            } else {
                self.pos = i + 1;
                return Ok(out);
            }
        }
    }

    /// `-? (digits (. digits*)? | . digits)`, as written; the caller has checked
    /// that one is here.
    fn number(&mut self) -> String {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.peek() == Some(b'.') && self.peek_at(1) != Some(b'.') {
            self.pos += 1;
            while self.peek().is_some_and(|b| b.is_ascii_digit()) {
                self.pos += 1;
            }
        }
        self.s[start..self.pos].to_string()
    }
}

// ---- printing ----

impl fmt::Display for Query {
    /// The canonical text: no whitespace except around `and`/`or` and nowhere
    /// else, `@k` written `k`, literals as [`super::write_literal`] writes them,
    /// parentheses only where the structure needs them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        if self.absolute && self.steps.is_empty() {
            s.push('/');
        }
        write_steps(&mut s, &self.steps, self.absolute);
        f.write_str(&s)
    }
}

fn write_steps(out: &mut String, steps: &[Step], absolute: bool) {
    for (i, step) in steps.iter().enumerate() {
        match step.axis {
            Axis::Descendant if i == 0 && !absolute => out.push_str(".//"),
            Axis::Descendant => out.push_str("//"),
            _ if i == 0 && !absolute => {}
            _ => out.push('/'),
        }
        match (&step.axis, &step.test) {
            (Axis::Parent, _) => out.push_str(".."),
            (Axis::SelfNode, _) => out.push('.'),
            (_, NodeTest::Any) => out.push('*'),
            (_, NodeTest::Name(n)) => out.push_str(n),
        }
        for p in &step.predicates {
            out.push('[');
            write_expr(out, p);
            out.push(']');
        }
    }
}

/// Writes `e`; `and` binds tighter than `or`, so parentheses go around an
/// `Or` among the operands of an `And` (the operands of a flat `Or` or `And`
/// are never of the same operator).
fn write_expr(out: &mut String, e: &Expr) {
    let operands = |out: &mut String, v: &[Expr], sep: &str| {
        for (i, e) in v.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            if matches!(e, Expr::Or(_)) && sep == " and " {
                out.push('(');
                write_expr(out, e);
                out.push(')');
            } else {
                write_expr(out, e);
            }
        }
    };
    match e {
        Expr::Or(v) => operands(out, v, " or "),
        Expr::And(v) => operands(out, v, " and "),
        Expr::Cmp(l, op, r) => {
            write_operand(out, l);
            out.push_str(match op {
                CmpOp::Eq => "=",
                CmpOp::Ne => "!=",
                CmpOp::Lt => "<",
                CmpOp::Gt => ">",
                CmpOp::Le => "<=",
                CmpOp::Ge => ">=",
            });
            write_operand(out, r);
        }
        Expr::Exists(steps) => write_steps(out, steps, false),
        Expr::Position(n) => out.push_str(&n.to_string()),
    }
}

fn write_operand(out: &mut String, o: &Operand) {
    match o {
        Operand::Path(steps) => write_steps(out, steps, false),
        Operand::Literal(v) => super::write_literal(out, v),
        Operand::Number(n) => out.push_str(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn q(s: &str) -> Query {
        Query::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn name(n: &str) -> Step {
        Step { axis: Axis::Child, test: NodeTest::Name(n.into()), predicates: Vec::new() }
    }

    fn eq(k: &str, v: &str) -> Expr {
        Expr::Cmp(Operand::Path(vec![name(k)]), CmpOp::Eq, Operand::Literal(v.into()))
    }

    #[test]
    fn parses_location_paths() {
        assert_eq!(q("/"), Query { absolute: true, steps: vec![] });
        assert_eq!(q("/a/m:b"), Query { absolute: true, steps: vec![name("a"), name("m:b")] });
        let d = q("//b");
        assert_eq!(d.steps.len(), 1);
        assert_eq!(d.steps[0].axis, Axis::Descendant);
        let r = q("a/*/../.");
        assert!(!r.absolute);
        assert_eq!(r.steps[1].test, NodeTest::Any);
        assert_eq!(r.steps[2].axis, Axis::Parent);
        assert_eq!(r.steps[3].axis, Axis::SelfNode);
        assert_eq!(q(" / a / b "), q("/a/b"));
        assert_eq!(q("/a.b-c_d/_x"), Query { absolute: true, steps: vec![name("a.b-c_d"), name("_x")] });
    }

    #[test]
    fn spellings_of_one_predicate_are_equal() {
        let want = q("/l[k='v']");
        assert_eq!(want.steps[0].predicates, vec![eq("k", "v")]);
        for s in ["/l[k=\"v\"]", "/l[ k = 'v' ]", "/l[@k='v']", "/l [k='v']", "/l[(k='v')]"] {
            assert_eq!(q(s), want, "{s}");
        }
    }

    #[test]
    fn literals_double_their_quote() {
        assert_eq!(q("/l[k='it''s']").steps[0].predicates, vec![eq("k", "it's")]);
        assert_eq!(q("/l[k=\"say \"\"hi\"\"\"]").steps[0].predicates, vec![eq("k", "say \"hi\"")]);
        assert_eq!(q("/l[k='a]/b\"c']").steps[0].predicates, vec![eq("k", "a]/b\"c")]);
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let p = &q("/l[a='1' or b='2' and c='3']").steps[0].predicates[0];
        let want = Expr::Or(vec![eq("a", "1"), Expr::And(vec![eq("b", "2"), eq("c", "3")])]);
        assert_eq!(*p, want);
        let p = &q("/l[(a='1' or b='2') and c='3']").steps[0].predicates[0];
        let want = Expr::And(vec![Expr::Or(vec![eq("a", "1"), eq("b", "2")]), eq("c", "3")]);
        assert_eq!(*p, want);
        // Chains are flat, parenthesized or not.
        let p = &q("/l[a='1' and (b='2' and c='3') and d='4']").steps[0].predicates[0];
        assert_eq!(*p, Expr::And(vec![eq("a", "1"), eq("b", "2"), eq("c", "3"), eq("d", "4")]));
    }

    #[test]
    fn long_and_or_chains_parse_flat_and_evaluate_without_deep_recursion() {
        // 20,000 operands each: one level of nesting, whatever the count.
        let and = format!("/l[{}]", vec!["k='1'"; 20_000].join(" and "));
        let or = format!("/l[{}]", vec!["k='1'"; 20_000].join(" or "));
        for text in [and, or] {
            let parsed = q(&text);
            match &parsed.steps[0].predicates[0] {
                Expr::And(v) | Expr::Or(v) => assert_eq!(v.len(), 20_000),
                other => panic!("{other:?}"),
            }
            assert_eq!(Query::parse(&parsed.to_string()).unwrap(), parsed);
        }
        // On a small stack: parsing, printing, evaluating and dropping.
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                // Every operand is false: all of them are evaluated.
                let text = format!("/m:l[{}]", vec!["k='1'"; 20_000].join(" or "));
                let query = Query::parse(&text).unwrap();
                let mut tree = crate::Container::default();
                tree.children.insert("m:l".into(), crate::Node::Container(crate::Container::default()));
                assert!(query.evaluate(&tree).is_empty());
                let _ = query.instance_prefix(&|_| None);
                assert!(query.to_string().len() > text.len() / 2);
                drop(query);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn comparisons_and_other_predicates() {
        let p = &q("/l[k1 > 5]").steps[0].predicates[0];
        assert_eq!(*p, Expr::Cmp(Operand::Path(vec![name("k1")]), CmpOp::Gt, Operand::Number("5".into())));
        let ops = [
            ("=", CmpOp::Eq),
            ("!=", CmpOp::Ne),
            ("<", CmpOp::Lt),
            (">", CmpOp::Gt),
            ("<=", CmpOp::Le),
            (">=", CmpOp::Ge),
        ];
        for (text, op) in ops {
            let p = &q(&format!("/l[a{text}-1.5]")).steps[0].predicates[0];
            assert_eq!(*p, Expr::Cmp(Operand::Path(vec![name("a")]), op, Operand::Number("-1.5".into())), "{text}");
        }
        let p = &q("/l['v' = k]").steps[0].predicates[0];
        assert_eq!(*p, Expr::Cmp(Operand::Literal("v".into()), CmpOp::Eq, Operand::Path(vec![name("k")])));
        let p = &q("/ll[.='v']").steps[0].predicates[0];
        assert!(matches!(p, Expr::Cmp(Operand::Path(s), CmpOp::Eq, _) if s[0].axis == Axis::SelfNode));
        assert_eq!(q("/l[k]").steps[0].predicates, vec![Expr::Exists(vec![name("k")])]);
        assert_eq!(q("/l[3]").steps[0].predicates, vec![Expr::Position(3)]);
        assert_eq!(q("/l[k1='1'][k2='a']").steps[0].predicates, vec![eq("k1", "1"), eq("k2", "a")]);
        let p = &q("/l[../x/y = a//b]").steps[0].predicates[0];
        assert!(
            matches!(p, Expr::Cmp(Operand::Path(l), _, Operand::Path(r)) if l.len() == 3 && r[1].axis == Axis::Descendant)
        );
        // `and`/`or` are keywords only where an operator may stand.
        assert_eq!(q("/l[and='x' and or]").steps[0].predicates.len(), 1);
    }

    #[test]
    fn prints_canonically() {
        for (input, want) in [
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("//m:b [ @k = \"v\" ]", "//m:b[k='v']"),
            ("/l[k=\"it's\"]", "/l[k=\"it's\"]"),
            ("/l[k='a''\"']", "/l[k='a''\"']"),
            ("/l[a='1' or (b='2' and c='3')]", "/l[a='1' or b='2' and c='3']"),
            ("/l[(a='1' or b='2') and c='3']", "/l[(a='1' or b='2') and c='3']"),
            ("/l[a='1' or (b='2' or c='3')]", "/l[a='1' or b='2' or c='3']"),
            ("/l[ 5 <= k ][2]", "/l[5<=k][2]"),
            ("a/../.[x]", "a/../.[x]"),
        ] {
            let parsed = q(input);
            assert_eq!(parsed.to_string(), want, "{input}");
            assert_eq!(q(want), parsed, "{want}");
        }
    }

    #[test]
    fn errors_carry_position_and_reason() {
        for (input, pos, needle) in [
            ("", 0, "empty query"),
            ("/a[k='v]", 5, "unterminated string literal"),
            ("/a[k='v'", 8, "expected `]`"),
            ("/a[k='v' x]", 9, "expected `]`"),
            ("/a/#", 3, "unexpected character `#`"),
            ("/a/é", 3, "unexpected character `é`"),
            ("/a//", 4, "`//` must be followed by a name"),
            ("/a/", 3, "expected a name"),
            ("/a//b]", 5, "unexpected character `]` after the path"),
            ("/a[]", 2, "empty predicate"),
            ("/a[k=]", 5, "expected a value after `=`"),
            ("/a[k='1' and]", 12, "after `and`"),
            ("/a[k='1' or ]", 12, "after `or`"),
            ("/a[(k='1']", 9, "expected `)`"),
            ("/a[k!'1']", 4, "expected `=` after `!`"),
            ("/a[0]", 3, "position"),
            ("/a[1.5]", 3, "position"),
            ("/a['v']", 3, "a string alone"),
            ("/a[/b='1']", 3, "absolute paths"),
            ("/m:", 3, "empty name after the prefix `m:`"),
            ("/:a", 1, "empty name"),
            ("/a//..", 4, "`//` must be followed by a name"),
            ("/@", 2, "expected a name after `@`"),
            ("/a[k='1']]", 9, "unexpected character `]`"),
        ] {
            match Query::parse(input) {
                Err(Error::Path { input: i, pos: p, reason }) => {
                    assert_eq!(i, input);
                    assert_eq!(p, pos, "{input}: {reason}");
                    assert!(reason.contains(needle), "{input}: {reason:?} lacks {needle:?}");
                }
                other => panic!("{input}: {other:?}"),
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!("/a[{}k{}]", "(".repeat(10_000), ")".repeat(10_000));
        assert!(matches!(Query::parse(&deep), Err(Error::Path { reason, .. }) if reason.contains("nested")));
        let deep = format!("/a{}", "[b".repeat(10_000));
        assert!(Query::parse(&deep).is_err());
    }

    #[test]
    fn paths_longer_than_the_step_limit_are_errors_at_the_step_too_many() {
        use crate::path::MAX_STEPS;
        let ok = "/m:a".to_string() + &"/b".repeat(MAX_STEPS - 1);
        assert_eq!(ok.parse::<crate::Path>().unwrap().segments.len(), MAX_STEPS);
        let long = "/m:a".to_string() + &"/b".repeat(60_000);
        let at = ok.len();
        for e in [long.parse::<crate::Path>().unwrap_err(), Query::parse(&long).unwrap_err()] {
            match e {
                Error::Path { pos, reason, .. } => {
                    assert_eq!(pos, at);
                    assert!(reason.contains("at most 128 steps"), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
        // Relative paths in predicates too.
        let rel = format!("/m:a[{}='x']", "b/".repeat(200) + "c");
        assert!(matches!(Query::parse(&rel), Err(Error::Path { pos, .. }) if pos == 5 + 2 * MAX_STEPS - 1));
    }

    proptest! {
        #[test]
        fn never_panics_on_any_string(s in any::<String>()) {
            let _ = Query::parse(&s);
        }

        #[test]
        fn query_syntax_soup_parses_or_errors_and_reprints(s in "[/\\[\\]()'\"=<>!@*. a-c:0-9#é-]{0,30}|(and|or|/|//|\\[|\\]|'x'|k|m:k|\\.|\\.\\.|=|3| ){0,12}") {
            match Query::parse(&s) {
                Ok(parsed) => {
                    let printed = parsed.to_string();
                    prop_assert_eq!(Query::parse(&printed).ok(), Some(parsed), "{} printed as {}", s, printed);
                }
                Err(Error::Path { pos, .. }) => prop_assert!(pos <= s.len() && s.is_char_boundary(pos)),
                Err(e) => prop_assert!(false, "unexpected error kind {e:?}"),
            }
        }
    }
}
