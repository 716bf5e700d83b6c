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
        let j = subtree_end(items, i, end);
        let sp_len = schema_path.len();
        schema_path.push('/');
        schema_path.push_str(&name);
        let own = items[i].0.len() == end;
        let keyed = matches!(sel, RawSel::Keys(_));
        let sel_bytes: Option<Vec<u8>> = match sel {
            RawSel::None => None,
            RawSel::Keys(b) | RawSel::Order(b) => Some(b.to_vec()),
        };
        if own && sel_bytes.is_some() {
            if let Some(next) = build_run(parent, items, i, j, &name, parent_len, schema_path, schema)? {
                schema_path.truncate(sp_len);
                i = next;
                continue;
            }
        }
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

/// The end of the subtree of `items[i]`, whose own key has `end` bytes: the
/// first item after it that is not below it.
fn subtree_end(items: &[(Vec<u8>, Option<Decoded>)], i: usize, end: usize) -> usize {
    let own = &items[i].0[..end];
    let mut j = i + 1;
    while j < items.len() && items[j].0.len() > end && &items[j].0[..end] == own {
        j += 1;
    }
    j
}

/// Builds the run of stored entries of list `name` that starts at
/// `items[i]` (an entry with its own fragment, its subtree ending at `j`)
/// into `parent`, when `parent` holds no entries of that list yet (what a
/// read builds): every entry of the run, each with its own fragment, goes
/// into the list in one bulk build ([`List::fill_stored`]) instead of a
/// search and an insertion each. Returns where the run ends, or `None`
/// (nothing done) when the tree holds entries of the list already, for the
/// general path of [`build`].
#[allow(clippy::too_many_arguments)]
fn build_run(
    parent: &mut Container,
    items: &mut [(Vec<u8>, Option<Decoded>)],
    mut i: usize,
    mut j: usize,
    name: &str,
    parent_len: usize,
    schema_path: &mut String,
    schema: &dyn Schema,
) -> crate::Result<Option<usize>> {
    // One entry alone goes the general way, which is cheaper for one (an
    // entry-by-entry scan builds each entry so).
    if j >= items.len() {
        return Ok(None);
    }
    // The segment's name as stored (escaped, with its terminator), and the
    // kind of selector of the run's entries.
    let mut name_len = 0;
    keycode::skip_escaped(&items[i].0[parent_len..], &mut name_len).ok_or_else(|| keys::malformed_key(&items[i].0))?;
    let keyed = items[i].0[parent_len + name_len] != keys::ORDER_MARK;
    let raw = &items[i].0[parent_len..parent_len + name_len];
    if !items.get(j).is_some_and(|(next, _)| same_list(&next[parent_len..], raw, keyed)) {
        return Ok(None);
    }
    let raw_name = raw.to_vec();
    let info = match parent.children.get(name) {
        Some(Node::List(l)) if l.is_empty() => l.info.clone(),
        Some(_) => return Ok(None),
        None => stored_list_info(keyed, schema, schema_path)?,
    };
    // Where entries are held by order, not by their selector; and whether
    // the list also maps entry keys to orders (as `List::insert_at_pos`).
    let by_order = keyed && info.user_ordered;
    let with_keys = info.user_ordered && !info.keys.is_empty();
    let mut entries = Vec::new();
    let mut entry_keys = Vec::new();
    loop {
        let own_len = items[i].0.len();
        let sel = &items[i].0[parent_len + name_len..own_len];
        let sel = if keyed { sel.to_vec() } else { sel[1..sel.len() - 1].to_vec() };
        let d = items[i].1.take().expect("each item is built once");
        let mut c = d.container;
        build(&mut c, &mut items[i + 1..j], own_len, schema_path, schema)?;
        let rel = &items[i].0;
        if with_keys {
            if let Some(k) = info.keys.iter().find(|k| !matches!(c.children.get(k), Some(Node::Leaf { .. }))) {
                return Err(StoreError::corrupted(format!(
                    "entry {}: list entry is invalid: key leaf `{k}` is missing",
                    describe_key(rel)
                )));
            }
        }
        let pos = match by_order {
            true => d.order.ok_or_else(|| {
                StoreError::corrupted(format!("entry {} of a user-ordered list has no order", describe_key(rel)))
            })?,
            false => sel.clone(),
        };
        if with_keys {
            entry_keys.push(sel);
        }
        entries.push((pos, c));
        i = j;
        // The next item: another entry of the same list, with its own fragment?
        let Some((next, _)) = items.get(i) else { break };
        let rest = &next[parent_len..];
        if !same_list(rest, &raw_name, keyed) {
            break;
        }
        let seg_len = keys::first_segment_len(rest).map_err(|_| keys::malformed_key(next))?;
        if next.len() != parent_len + seg_len {
            break;
        }
        j = subtree_end(items, i, parent_len + seg_len);
    }
    let mut list = List::new(info);
    list.fill_stored(entries, entry_keys).map_err(|e| StoreError::corrupted(format!("list {schema_path}: {e}")))?;
    parent.children.insert(name.into(), Node::List(Box::new(list)));
    Ok(Some(i))
}

/// Whether the relative key `rest` names an entry of the list whose stored
/// name (escaped, with its terminator) is `raw_name`, with a selector of the
/// same kind (keys when `keyed`, else an order).
fn same_list(rest: &[u8], raw_name: &[u8], keyed: bool) -> bool {
    rest.starts_with(raw_name)
        && match rest.get(raw_name.len()) {
            Some(0x10 | 0x20) => keyed,
            Some(&t) => t == keys::ORDER_MARK && !keyed,
            None => false,
        }
}

/// The list info of a list read back from storage that the tree does not
/// hold yet: the schema's, else keyless for entries stored by order; entries
/// stored by keys need the schema's key names.
fn stored_list_info(keyed: bool, schema: &dyn Schema, schema_path: &str) -> crate::Result<ListInfo> {
    match (keyed, schema.list_info(schema_path)) {
        (_, Some(info)) => Ok(info),
        (false, None) => Ok(ListInfo::keyless()),
        (true, None) => Err(StoreError::corrupted(format!("list {schema_path} is stored without its key names"))),
    }
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
        let info = stored_list_info(keyed, schema, schema_path)?;
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
    use std::collections::BTreeMap;

    use canopy_core::schema::Schemaless;
    use canopy_core::tree::{Container, Insert, List, ListInfo, Node};
    use canopy_core::Value;

    use super::{build, Fragments};
    use crate::fragment;
    use crate::keys::{Datastore, Space};

    fn entry(pairs: &[(&str, &str)]) -> Container {
        let mut c = Container::default();
        for (k, v) in pairs {
            c.children.insert((*k).into(), Node::leaf(Value::String((*v).into())));
        }
        c
    }

    fn leaf(c: &Container, name: &str) -> String {
        match c.children.get(name) {
            Some(Node::Leaf { value, .. }) => value.as_text().into_owned(),
            other => panic!("{name}: {other:?}"),
        }
    }

    /// `root`'s fragments below it as `build` reads them back: sorted
    /// relative keys with their decoded fragments (the root's own fragment
    /// and the order-index records left out).
    fn stored(root: &Container) -> Vec<(Vec<u8>, Option<fragment::Decoded>)> {
        let space = Space::datastore(Datastore::Running);
        let mut f = Fragments::in_space(space.clone());
        f.write_subtree(&[], root, None);
        f.into_records()
            .into_iter()
            .filter(|(k, _)| k.starts_with(&space.data) && k.len() > space.data.len())
            .map(|(k, v)| (k[space.data.len()..].to_vec(), Some(fragment::decode(&v).unwrap())))
            .collect()
    }

    fn schema() -> Schemaless {
        let lists = BTreeMap::from([
            ("/m:c/sys".to_string(), ListInfo::keyed(["k"])),
            ("/m:c/usr".to_string(), ListInfo { keys: vec!["k".into()], user_ordered: true }),
            ("/m:c/sys/in".to_string(), ListInfo::keyed(["n"])),
        ]);
        Schemaless { lists }
    }

    /// A container holding a system-ordered list whose entries hold a list of
    /// their own, a user-ordered list in an order other than its keys', a
    /// keyless list, and a leaf after them: every kind of run.
    fn sample() -> Container {
        let s = schema();
        let mut sys = List::new(s.lists["/m:c/sys"].clone());
        for i in [3, 1, 2] {
            let mut e = entry(&[("k", &i.to_string()), ("v", "x")]);
            if i == 2 {
                let mut inner = List::new(s.lists["/m:c/sys/in"].clone());
                inner.insert(entry(&[("n", "b")]), &Insert::Last).unwrap();
                inner.insert(entry(&[("n", "a")]), &Insert::Last).unwrap();
                e.children.insert("in".into(), Node::List(Box::new(inner)));
            }
            sys.insert(e, &Insert::Last).unwrap();
        }
        let mut usr = List::new(s.lists["/m:c/usr"].clone());
        for i in ["5", "1", "9", "3"] {
            usr.insert(entry(&[("k", i), ("l", "y")]), &Insert::First).unwrap();
        }
        let mut keyless = List::new(ListInfo::keyless());
        for v in ["p", "q"] {
            keyless.insert(entry(&[("v", v)]), &Insert::Last).unwrap();
        }
        let mut c = entry(&[("z", "last")]);
        c.children.insert("sys".into(), Node::List(Box::new(sys)));
        c.children.insert("usr".into(), Node::List(Box::new(usr)));
        c.children.insert("kl".into(), Node::List(Box::new(keyless)));
        let mut root = Container::default();
        root.children.insert("m:c".into(), Node::Container(c));
        root
    }

    /// Lists read back in runs hold what was stored, in the same order, and
    /// take later entries the same way as lists built one entry at a time.
    #[test]
    fn lists_read_back_in_runs_hold_what_was_stored() {
        let root = sample();
        let mut items = stored(&root);
        let mut back = Container::default();
        build(&mut back, &mut items, 0, &mut String::new(), &schema()).unwrap();
        assert_eq!(back, root);
        let usr = |c: &Container| match c.lookup(&"/m:c/usr".parse().unwrap()) {
            Some(canopy_core::tree::NodeRef::List(l)) => l.entries().map(|e| leaf(e, "k")).collect::<Vec<_>>(),
            _ => panic!("no usr list"),
        };
        assert_eq!(usr(&back), ["3", "9", "1", "5"]);
        // The user-ordered list maps keys to orders: an entry found by key
        // and an insertion before it land where the tree built one by one puts them.
        let mut want = root.clone();
        for t in [&mut back, &mut want] {
            let Some(Node::Container(c)) = t.children.get_mut("m:c") else { panic!() };
            let Some(Node::List(l)) = c.children.get_mut("usr") else { panic!() };
            assert!(l.get(&["1".to_string()]).is_some());
            l.insert(entry(&[("k", "7"), ("l", "n")]), &Insert::Before(vec!["1".into()])).unwrap();
        }
        assert_eq!(back, want);
        assert_eq!(usr(&back), ["3", "9", "7", "1", "5"]);
    }

    /// Fragments read below a container the tree holds (read before) keep
    /// the tree's entries of a list it holds (a transaction's edits), add the
    /// stored others, and bring the lists it does not hold whole.
    #[test]
    fn stored_entries_join_a_list_the_tree_holds() {
        let root = sample();
        let mut items = stored(&root);
        // The container's own fragment was read before.
        items.remove(0);
        let mut tree = Container::default();
        let s = schema();
        let mut sys = List::new(s.lists["/m:c/sys"].clone());
        sys.insert(entry(&[("k", "1"), ("v", "edited")]), &Insert::Last).unwrap();
        let mut c = Container::default();
        c.children.insert("sys".into(), Node::List(Box::new(sys)));
        tree.children.insert("m:c".into(), Node::Container(c));
        build(&mut tree, &mut items, 0, &mut String::new(), &s).unwrap();
        let Some(canopy_core::tree::NodeRef::List(l)) = tree.lookup(&"/m:c/sys".parse().unwrap()) else { panic!() };
        let v: Vec<String> = l.entries().map(|e| leaf(e, "v")).collect();
        assert_eq!(v, ["edited", "x", "x"]);
        let Some(canopy_core::tree::NodeRef::List(l)) = tree.lookup(&"/m:c/usr".parse().unwrap()) else { panic!() };
        assert_eq!(l.entries().map(|e| leaf(e, "k")).collect::<Vec<_>>(), ["3", "9", "1", "5"]);
        assert!(tree.lookup(&"/m:c/sys[k='2']/in[n='a']".parse().unwrap()).is_some());
    }

    /// A damaged store: an entry of a user-ordered list stored without its
    /// order, or without its key leaf, is refused naming the entry; of two
    /// entries at one order the first is kept.
    #[test]
    fn damaged_runs_are_refused_or_keep_the_first_entry() {
        let root = sample();
        let usr_at = |items: &[(Vec<u8>, Option<fragment::Decoded>)]| {
            items.iter().position(|(_, d)| d.as_ref().is_some_and(|d| d.order.is_some())).unwrap()
        };
        let mut items = stored(&root);
        let at = usr_at(&items);
        items[at].1.as_mut().unwrap().order = None;
        let e = build(&mut Container::default(), &mut items, 0, &mut String::new(), &schema()).unwrap_err();
        assert!(e.to_string().contains("has no order"), "{e}");

        let mut items = stored(&root);
        let at = usr_at(&items);
        items[at + 1].1.as_mut().unwrap().container.children.remove("k");
        let e = build(&mut Container::default(), &mut items, 0, &mut String::new(), &schema()).unwrap_err();
        assert!(e.to_string().contains("key leaf `k` is missing"), "{e}");

        let mut items = stored(&root);
        let at = usr_at(&items);
        let first = items[at].1.as_ref().unwrap().order.clone();
        items[at + 1].1.as_mut().unwrap().order = first;
        let mut back = Container::default();
        build(&mut back, &mut items, 0, &mut String::new(), &schema()).unwrap();
        let Some(canopy_core::tree::NodeRef::List(l)) = back.lookup(&"/m:c/usr".parse().unwrap()) else { panic!() };
        assert_eq!(l.len(), 3);
    }

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
