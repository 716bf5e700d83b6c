//! `//name...` queries planned through the YANG schema: when the schema has
//! exactly one data node that a leading `//name` step can match, the query is
//! the same as the absolute one through that node's ancestors
//! (`//dev[id='x']` is `/m:top/m:dev[id='x']`), which the planner turns into
//! a key lookup or an entry-by-entry scan.
//!
//! Why the two select the same nodes: `//name[p]` is
//! `descendant-or-self::node()/child::name[p]` from the root; in data that
//! follows the schema, the nodes with a child that matches `name` are exactly
//! the instances of that node's parent, which the absolute child steps
//! select; predicates are evaluated per parent in both (positions count the
//! same way). Without a schema the store does not know where containers and
//! leaves of a name are, so the query is left as written; so is a name the
//! schema has in several places.

use std::borrow::Cow;

use canopy_core::path::query::{Axis, NodeTest, Query, Step};
use canopy_yang::YangSchema;

/// `q` with a leading `//name` rewritten from the root, when the schema
/// says where every node `name` can match is (see the module's comment);
/// `q` itself otherwise.
pub(crate) fn rooted<'q>(q: &'q Query, yang: Option<&YangSchema>) -> Cow<'q, Query> {
    match (yang, q.steps.first()) {
        (Some(y), Some(first)) if q.absolute && first.axis == Axis::Descendant => {
            let NodeTest::Name(written) = &first.test else { return Cow::Borrowed(q) };
            let Some(names) = only_place(y, written) else { return Cow::Borrowed(q) };
            let mut steps: Vec<Step> = names
                .into_iter()
                .map(|name| Step { axis: Axis::Child, test: NodeTest::Name(name.into()), predicates: Vec::new() })
                .collect();
            if let Some(own) = steps.last_mut() {
                own.predicates = first.predicates.clone();
            }
            steps.extend(q.steps[1..].iter().cloned());
            Cow::Owned(Query { absolute: true, steps })
        }
        _ => Cow::Borrowed(q),
    }
}

/// The module-qualified names from the top down to the one schema data node
/// a step name `written` matches (as evaluation matches names: `m:x` the
/// node `x` of module `m`, `x` a node of any module with that local name);
/// `None` when there are none or several.
fn only_place(y: &YangSchema, written: &str) -> Option<Vec<String>> {
    let model = y.model();
    let local = |n: &str| n.rsplit_once(':').map_or(n, |(_, l)| l).to_string();
    let (module, want) = match written.split_once(':') {
        Some((m, l)) => (Some(m), l),
        None => (None, written),
    };
    let mut found = None;
    for (i, n) in model.nodes.iter().enumerate() {
        if local(&n.name) == want && module.is_none_or(|m| m == n.module) {
            if found.is_some() {
                return None;
            }
            found = Some(i);
        }
    }
    found?;
    let mut names = Vec::new();
    let mut at = found;
    while let Some(i) = at {
        let n = &model.nodes[i];
        names.push(format!("{}:{}", n.module, local(&n.name)));
        at = n.parent;
    }
    names.reverse();
    Some(names)
}
