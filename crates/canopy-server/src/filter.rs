//! Read filters applied to the tree a read returns: `content` (configuration,
//! state or both) and the `origin` annotations RFC 8527 shows only when asked.

use canopy::{ORIGIN, ORIGIN_INTENDED};
use canopy_core::tree::{Container, List, Node};
use canopy_core::Insert;
use canopy_yang::model::Model;

/// What a filter keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    Config,
    State,
}

/// Keeps configuration or state nodes of `c` by the YANG schema's `config`
/// statements. `parent`: the schema node of `c` (`None` at the root). Entries
/// and containers left with nothing of what is kept go (entries keep keys).
pub fn by_schema(c: &mut Container, model: &Model, parent: Option<usize>, keep: Keep) {
    c.children.retain(|name, node| {
        let Some(idx) = model.child(parent, name) else { return keep == Keep::Config };
        let config = model.nodes[idx].config;
        if !config {
            return keep == Keep::State;
        }
        match node {
            Node::Container(inner) => {
                by_schema(inner, model, Some(idx), keep);
                keep == Keep::Config || !inner.children.is_empty()
            }
            Node::List(list) => {
                let keys = model.nodes[idx].keys.clone();
                retain_entries(list, |e| {
                    by_schema(e, model, Some(idx), keep);
                    keep == Keep::Config || e.children.iter().any(|(n, _)| !keys.contains(n))
                });
                keep == Keep::Config || !list.is_empty()
            }
            // A key leaf stays with its entry (the entry decides).
            _ => keep == Keep::Config || parent.is_some_and(|p| model.nodes[p].keys.iter().any(|k| k == name.as_str())),
        }
    });
}

/// Keeps configuration or state nodes of an operational tree by their origin
/// (configuration comes from `intended`): for stores without a schema.
/// `inherited`: the origin of `c`'s parent.
pub fn by_origin(c: &mut Container, inherited: Option<&str>, keep: Keep, keys: &[canopy_core::tree::Name]) {
    let here = c.meta.get(ORIGIN).or(inherited).map(str::to_string);
    c.children.retain(|name, node| {
        let is_key = keys.iter().any(|k| k == name.as_str());
        let origin_of = |meta: &canopy::Meta| meta.get(ORIGIN).map(str::to_owned).or_else(|| here.clone());
        let wanted = |o: Option<String>| (o.as_deref() == Some(ORIGIN_INTENDED)) == (keep == Keep::Config);
        match node {
            Node::Container(inner) => {
                by_origin(inner, here.as_deref(), keep, &[]);
                !inner.children.is_empty() || wanted(origin_of(&inner.meta))
            }
            Node::List(list) => {
                let lkeys = list.info.keys.clone();
                retain_entries(list, |e| {
                    let o = origin_of(&e.meta);
                    by_origin(e, o.as_deref(), keep, &lkeys);
                    e.children.iter().any(|(n, _)| !lkeys.contains(n)) || wanted(o)
                });
                !list.is_empty()
            }
            Node::Leaf { meta, .. } | Node::AnyData { meta, .. } => is_key || wanted(origin_of(meta)),
            Node::LeafList(entries) => {
                entries.retain(|e| wanted(origin_of(&e.meta)));
                !entries.is_empty()
            }
        }
    });
}

/// Removes `origin` annotations everywhere below `c`.
pub fn strip_origin(c: &mut Container) {
    c.meta.remove(ORIGIN);
    for (_, node) in c.children.iter_mut() {
        match node {
            Node::Container(inner) => strip_origin(inner),
            Node::List(list) => list.entries_mut().for_each(strip_origin),
            Node::Leaf { meta, .. } | Node::AnyData { meta, .. } => {
                meta.remove(ORIGIN);
            }
            Node::LeafList(entries) => entries.iter_mut().for_each(|e| {
                e.meta.remove(ORIGIN);
            }),
        }
    }
}

/// Keeps the entries of `list` that `keep` accepts (it may change them,
/// but not their keys), in their order.
pub(crate) fn retain_entries(list: &mut List, mut keep: impl FnMut(&mut Container) -> bool) {
    let info = list.info.clone();
    let mut kept = List::new(info.clone());
    for mut e in std::mem::replace(list, List::new(info)).into_entries() {
        if keep(&mut e) {
            let _ = kept.insert(e, &Insert::Last);
        }
    }
    *list = kept;
}
