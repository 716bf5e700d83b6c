//! Trees and the fragments that store them: the one implementation both ways.
//!
//! * [`build`] turns fragments in key order (a range scan) into a tree.
//! * [`Fragments`] turns a tree into fragment records and, for user-ordered
//!   lists, order-index records, exactly as `docs/design.md` ("Storage layout")
//!   lays them out.
//!
//! The engine (`canopy`) loads and commits through them; the `json:` file
//! backend converts whole datastores with them.

use canopy_core::keycode;
use canopy_core::tree::{Container, List, ListInfo, Node};
use canopy_core::Schema;

use crate::error::StoreError;
use crate::fragment::{self, Decoded};
use crate::keys::{self, Datastore, RawSelector, Space};

/// Fragment and order-index records of one datastore (or other key
/// [`Space`]), by full key.
pub struct Fragments {
    pub space: Space,
    /// Records in the order they were written (a key written again is
    /// replaced in [`Fragments::into_records`]): appending is cheaper than
    /// keeping a map in order while a commit writes thousands.
    puts: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Fragments {
    pub fn new(ds: Datastore) -> Fragments {
        Fragments::in_space(Space::datastore(ds))
    }

    /// Records laid out in `space`.
    pub fn in_space(space: Space) -> Fragments {
        Fragments { space, puts: Vec::new() }
    }

    /// Writes record `value` at full key `key`, replacing what was written
    /// there before.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.puts.push((key, value));
    }

    /// The records by key, the last written of each key.
    pub fn into_records(self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut puts = self.puts;
        // Stable: records of one key stay in the order they were written.
        puts.sort_by(|a, b| a.0.cmp(&b.0));
        puts.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(later, kept);
            }
            same
        });
        puts
    }

    /// The full key of the fragment at relative key `rel`.
    pub fn data_key(&self, rel: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.space.data.len() + rel.len());
        k.extend_from_slice(&self.space.data);
        k.extend_from_slice(rel);
        k
    }

    /// The full key of the order-index record of the entry at `order` in the
    /// user-ordered list at `list_rel`.
    pub fn order_key(&self, list_rel: &[u8], order: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.space.order.len() + list_rel.len() + order.len() + 1);
        k.extend_from_slice(&self.space.order);
        k.extend_from_slice(list_rel);
        k.extend_from_slice(order);
        k.push(0);
        k
    }

    /// Writes container `c` at `rel` and everything below it.
    pub fn write_subtree(&mut self, rel: &[u8], c: &Container, order: Option<&[u8]>) {
        self.put(self.data_key(rel), fragment::encode(c, order));
        // Allocated at the first child with a fragment of its own (most
        // entries have none).
        let mut child_rel = Vec::new();
        for (name, child) in &c.children {
            if child.is_inline() {
                continue;
            }
            child_rel.clear();
            child_rel.reserve(rel.len() + name.len() + 32);
            child_rel.extend_from_slice(rel);
            keys::push_name(&mut child_rel, name);
            match child {
                Node::Container(cc) => self.write_subtree(&child_rel, cc, None),
                Node::List(l) => self.write_list_entries(&child_rel, l),
                _ => {}
            }
        }
    }

    pub fn write_list_entries(&mut self, list_rel: &[u8], l: &List) {
        let mut er = Vec::with_capacity(list_rel.len() + 32);
        for (pos, e) in l.entries_with_pos() {
            er.clear();
            er.extend_from_slice(list_rel);
            if l.info.keys.is_empty() {
                keys::push_order(&mut er, pos);
                self.write_subtree(&er, e, None);
            } else if l.info.user_ordered {
                let suffix = l.entry_key_of(e).unwrap_or_default();
                er.extend_from_slice(&suffix);
                self.put(self.order_key(list_rel, pos), suffix);
                self.write_subtree(&er, e, Some(pos));
            } else {
                // A system-ordered entry's position key is its entry key.
                er.extend_from_slice(pos);
                self.write_subtree(&er, e, None);
            }
        }
    }
}

/// One segment of a key: the name, and the raw selector bytes.
enum RawSel<'k> {
    None,
    /// Entry key bytes of a keyed entry.
    Keys(&'k [u8]),
    /// Order key of a keyless entry.
    Order(&'k [u8]),
}

/// Splits the first segment off `key`: (name, selector, segment length).
/// `whole` is the node's relative key, of which `key` is the rest, for errors.
fn split_segment<'k>(key: &'k [u8], whole: &[u8]) -> crate::Result<(String, RawSel<'k>, usize)> {
    let bad = || keys::malformed_key(whole);
    let mut pos = 0;
    let name = String::from_utf8(keycode::read_escaped(key, &mut pos).ok_or_else(bad)?).map_err(|_| bad())?;
    let total = keys::first_segment_len(key).map_err(|_| bad())?;
    let sel = match key.get(pos) {
        Some(0x10) | Some(0x20) => RawSel::Keys(&key[pos..total]),
        Some(0x03) => RawSel::Order(&key[pos + 1..total - 1]),
        _ => RawSel::None,
    };
    Ok((name, sel, total))
}

/// Builds sorted `items` (relative keys under `parent`, whose own key has
/// `parent_len` bytes) into `parent`. A node whose own fragment is not among
/// the items was read before: its stored descendants go into the tree's
/// version of it, or nowhere when this transaction deleted it.
pub fn build(
    parent: &mut Container,
    items: &mut [(Vec<u8>, Option<Decoded>)],
    parent_len: usize,
    schema_path: &mut String,
    schema: &dyn Schema,
) -> crate::Result<()> {
    let mut i = 0;
    while i < items.len() {
        let (name, sel, seg_len) = split_segment(&items[i].0[parent_len..], &items[i].0)?;
        let end = parent_len + seg_len;
        let mut j = i + 1;
        while j < items.len() && items[j].0.len() > end && items[j].0[..end] == items[i].0[..end] {
            j += 1;
        }
        let sp_len = schema_path.len();
        schema_path.push('/');
        schema_path.push_str(&name);
        let own = items[i].0.len() == end;
        let sel_bytes: Option<Vec<u8>> = match sel {
            RawSel::None => None,
            RawSel::Keys(b) | RawSel::Order(b) => Some(b.to_vec()),
        };
        let keyed = matches!(sel, RawSel::Keys(_));
        if own {
            let d = items[i].1.take().expect("each item is built once");
            let mut c = d.container;
            build(&mut c, &mut items[i + 1..j], end, schema_path, schema)?;
            attach(parent, name, sel_bytes, keyed, c, d.order, schema_path, schema, &items[i].0)?;
        } else if let Some(existing) = child_mut(parent, &name, sel_bytes.as_deref(), keyed) {
            build(existing, &mut items[i..j], end, schema_path, schema)?;
        }
        schema_path.truncate(sp_len);
        i = j;
    }
    Ok(())
}

/// The container or entry a segment names in `parent`, if the tree has it.
fn child_mut<'t>(parent: &'t mut Container, name: &str, sel: Option<&[u8]>, keyed: bool) -> Option<&'t mut Container> {
    match (parent.children.get_mut(name)?, sel) {
        (Node::Container(c), None) => Some(c),
        (Node::List(l), Some(b)) => {
            if keyed && l.info.user_ordered {
                // Stored by key, held in the tree by order.
                let vals = keycode::decode_entry_key(b, l.info.keys.len())?;
                l.get_mut(&vals)
            } else {
                l.get_at_mut(b)
            }
        }
        _ => None,
    }
}

/// Attaches a freshly read node to `parent`, unless the tree has it already.
#[allow(clippy::too_many_arguments)]
fn attach(
    parent: &mut Container,
    name: String,
    sel: Option<Vec<u8>>,
    keyed: bool,
    c: Container,
    order: Option<Vec<u8>>,
    schema_path: &str,
    schema: &dyn Schema,
    rel: &[u8],
) -> crate::Result<()> {
    let Some(sel) = sel else {
        match parent.children.get(&name) {
            None => {
                parent.children.insert(name.into(), Node::Container(c));
            }
            Some(Node::Container(_)) => {}
            Some(_) => {
                return Err(StoreError::corrupted(format!(
                    "fragment {}: a container where another kind of node is stored",
                    describe_key(rel)
                )))
            }
        }
        return Ok(());
    };
    if !parent.children.contains_key(&name) {
        let info = match (keyed, schema.list_info(schema_path)) {
            (_, Some(info)) => info,
            (false, None) => ListInfo::keyless(),
            (true, None) => {
                return Err(StoreError::corrupted(format!("list {schema_path} is stored without its key names")))
            }
        };
        parent.children.insert(name.as_str().into(), Node::List(Box::new(List::new(info))));
    }
    let list = match parent.children.get_mut(&name) {
        Some(Node::List(l)) => l,
        _ => {
            return Err(StoreError::corrupted(format!(
                "fragment {}: a list entry where another kind of node is stored",
                describe_key(rel)
            )))
        }
    };
    let pos = match (keyed, list.info.user_ordered) {
        (true, true) => order.ok_or_else(|| {
            StoreError::corrupted(format!("entry {} of a user-ordered list has no order", describe_key(rel)))
        })?,
        _ => sel,
    };
    if list.get_at(&pos).is_none() {
        list.insert_at_pos(pos, c).map_err(|e| StoreError::corrupted(format!("entry {}: {e}", describe_key(rel))))?;
    }
    Ok(())
}

/// A readable form of a relative key for messages: the path when it decodes.
pub fn describe_key(rel: &[u8]) -> String {
    match keys::decode_path_key(rel) {
        Ok(segs) if !segs.is_empty() => {
            let mut s = String::new();
            for seg in segs {
                s.push('/');
                s.push_str(&seg.name);
                match seg.selector {
                    RawSelector::None => {}
                    RawSelector::Keys(v) => s.push_str(&format!("{v:?}")),
                    RawSelector::Order(o) => s.push_str(&format!("[order {}]", keys::hex(&o))),
                }
            }
            s
        }
        Ok(_) => "/".into(),
        Err(_) => keys::hex(rel),
    }
}

#[cfg(test)]
mod tests {
    use super::Fragments;
    use crate::keys::Datastore;

    /// Records come out by key, one per key: the one written last.
    #[test]
    fn records_come_out_sorted_with_the_last_write_of_each_key() {
        let mut f = Fragments::new(Datastore::Running);
        for (k, v) in [("b", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("a", "5"), ("b", "6"), ("ab", "7")] {
            f.put(k.into(), v.into());
        }
        let records: Vec<(String, String)> = f
            .into_records()
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let want = [("a", "5"), ("ab", "7"), ("b", "6"), ("c", "4")];
        assert_eq!(records, want.map(|(k, v)| (k.to_string(), v.to_string())));
    }
}
