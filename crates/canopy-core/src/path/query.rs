//! The XPath 1.0 subset accepted for reads.
//!
//! Location paths with the child axis (`/a/b`), descendants (`//b`), any name
//! (`*`), parent (`..`) and self (`.`); predicates that combine comparisons with
//! `and`/`or` (and parentheses), comparisons `= != < > <= >=` between a relative
//! path (a child leaf `k`, `@k` as ONAP CPS writes it, `.`, or deeper `a/b`) and a
//! literal or number, existence tests (`[k]`), and positions (`[3]`).

use crate::error::Result;
use crate::path::Path;
use crate::tree::Name;

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
    Or(Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
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
    pub fn parse(_input: &str) -> Result<Query> {
        todo!("query parser")
    }

    /// The instance identifier this query is, if it is one: absolute, child axis
    /// only, no `*`, and predicates that are only key equalities on child leaves,
    /// `.` equality, or a position.
    pub fn to_instance_path(&self) -> Option<Path> {
        todo!("to_instance_path")
    }
}
