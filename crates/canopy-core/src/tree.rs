//! The in-memory data tree: what JSON import produces, what edits carry, what
//! reads return and what diffs hold as old and new subtrees.
//!
//! Children of a container are kept by name in a `BTreeMap`: without a schema,
//! document order is name order, the same order the storage keys sort in.

use std::collections::{btree_map, BTreeMap};
use std::ops::Bound;

pub use crate::children::Children;
use crate::error::{Error, Result};
use crate::keycode;
use crate::value::{Meta, Text, Value};

/// A node name in its canonical RFC 7951 form: `module:name` where the module
/// differs from the parent's (always on top-level nodes that have a module),
/// plain `name` otherwise.
pub type Name = compact_str::CompactString;

/// How the entries of a list are identified and ordered.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ListInfo {
    /// Key leaf names in key order. Empty for a keyless list, whose entries are
    /// addressed by position (`[3]`, 1-based as in XPath).
    pub keys: Vec<Name>,
    /// `ordered-by user`: entries keep the order edits give them. Keyless lists
    /// are always user-ordered.
    pub user_ordered: bool,
}

impl ListInfo {
    /// A system-ordered list with these keys.
    pub fn keyed<I: IntoIterator<Item = S>, S: Into<Name>>(keys: I) -> ListInfo {
        ListInfo { keys: keys.into_iter().map(Into::into).collect(), user_ordered: false }
    }

    /// A keyless list, addressed by position.
    pub fn keyless() -> ListInfo {
        ListInfo { keys: Vec::new(), user_ordered: true }
    }
}

/// A container, a list entry, or the root of a datastore.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Container {
    /// Metadata annotations on this node.
    pub meta: Meta,
    /// Child nodes by name.
    pub children: Children,
}

/// One leaf-list entry.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafListEntry {
    pub value: Value,
    pub meta: Meta,
}

/// A list with its entries in document order.
///
/// Entries are kept by their *position key*: the entry key of their key values
/// for system-ordered lists, an order key for user-ordered ones (see
/// [`crate::keycode`]). These are the same bytes the storage keys carry, so the
/// in-memory order and the stored order are one order.
#[derive(Clone, Debug, Default)]
pub struct List {
    pub info: ListInfo,
    entries: BTreeMap<Vec<u8>, Container>,
    /// User-ordered keyed lists: entry key → order key.
    by_key: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// Where an entry goes in a user-ordered list. System-ordered lists ignore it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Insert {
    First,
    #[default]
    Last,
    /// Before the entry with these key values (or this 1-based position in a keyless list).
    Before(Vec<String>),
    /// After the entry with these key values (or this 1-based position in a keyless list).
    After(Vec<String>),
}

impl PartialEq for List {
    /// Lists are equal when they hold equal entries in the same order; the
    /// order keys themselves do not matter.
    fn eq(&self, other: &List) -> bool {
        self.info == other.info
            && self.entries.len() == other.entries.len()
            && self.entries.values().zip(other.entries.values()).all(|(a, b)| a == b)
    }
}

impl List {
    /// An empty list.
    pub fn new(info: ListInfo) -> List {
        List { info, entries: BTreeMap::new(), by_key: BTreeMap::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in document order.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = &Container> + ExactSizeIterator {
        self.entries.values()
    }

    /// Rebuilds the list's maps from their sorted contents, which packs the
    /// B-tree nodes full. Entries inserted in order (as loading does) leave the
    /// nodes half full: packing them saves about a third of the list's own
    /// memory in a long-lived tree. Lists inside entries are packed too.
    pub fn pack(&mut self) {
        self.entries = std::mem::take(&mut self.entries).into_iter().collect();
        self.by_key = std::mem::take(&mut self.by_key).into_iter().collect();
        for e in self.entries.values_mut() {
            e.pack_lists();
        }
    }

    /// The entries, in document order, taken out of the list.
    pub fn into_entries(self) -> Vec<Container> {
        self.entries.into_values().collect()
    }

    /// Entries with their position keys, in document order.
    pub fn entries_with_pos(&self) -> impl DoubleEndedIterator<Item = (&[u8], &Container)> {
        self.entries.iter().map(|(k, v)| (k.as_slice(), v))
    }

    /// The entry with these key values and its position key.
    pub fn get_with_pos(&self, keys: &[String]) -> Option<(&[u8], &Container)> {
        self.entries.get_key_value(&self.pos_of(keys)?).map(|(k, v)| (k.as_slice(), v))
    }

    /// Entries mutably, in document order. Callers must not change key leaves.
    pub fn entries_mut(&mut self) -> impl Iterator<Item = &mut Container> {
        self.entries.values_mut()
    }

    /// The key values of `entry` in key order, as text.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the missing key leaf.
    pub fn keys_of(&self, entry: &Container) -> Result<Vec<String>> {
        self.info
            .keys
            .iter()
            .map(|k| {
                entry
                    .key_text(k)
                    .map(String::from)
                    .ok_or_else(|| Error::invalid("list entry", format!("key leaf `{k}` is missing")))
            })
            .collect()
    }

    /// The position key of the entry with these key values (or 1-based position
    /// for a keyless list, as its only element).
    pub fn pos_of(&self, keys: &[String]) -> Option<Vec<u8>> {
        if self.info.keys.is_empty() {
            let n: usize = keys.first()?.parse().ok()?;
            return self.entries.keys().nth(n.checked_sub(1)?).cloned();
        }
        if keys.len() != self.info.keys.len() {
            return None;
        }
        let ek = keycode::entry_key(keys);
        if self.info.user_ordered {
            self.by_key.get(&ek).cloned()
        } else {
            self.entries.contains_key(&ek).then_some(ek)
        }
    }

    /// [`List::pos_of`] of the entry of a keyed list named by `(key name,
    /// value)` pairs (a [`crate::path::Selector::Keys`]), in any order.
    pub fn pos_of_keyed(&self, kv: &[(Name, Text)]) -> Option<Vec<u8>> {
        let ek = self.selector_entry_key(kv)?;
        match self.info.user_ordered {
            true => self.by_key.get(&ek).cloned(),
            false => self.entries.contains_key(&ek).then_some(ek),
        }
    }

    /// The entry of a keyed list named by `(key name, value)` pairs (a
    /// [`crate::path::Selector::Keys`]), in any order.
    pub fn get_keyed(&self, kv: &[(Name, Text)]) -> Option<&Container> {
        let ek = self.selector_entry_key(kv)?;
        match self.info.user_ordered {
            true => self.entries.get(self.by_key.get(&ek)?),
            false => self.entries.get(&ek),
        }
    }

    /// [`List::get_keyed`], mutably. Callers must not change key leaves.
    pub fn get_keyed_mut(&mut self, kv: &[(Name, Text)]) -> Option<&mut Container> {
        let ek = self.selector_entry_key(kv)?;
        match self.info.user_ordered {
            true => self.entries.get_mut(self.by_key.get(&ek)?),
            false => self.entries.get_mut(&ek),
        }
    }

    /// The order key of the entry of a user-ordered keyed list whose entry
    /// key (see [`List::entry_key_of`]) is `ek`.
    pub fn order_of_key(&self, ek: &[u8]) -> Option<&[u8]> {
        self.by_key.get(ek).map(Vec::as_slice)
    }

    /// The entry with these key values (a 1-based position for keyless lists).
    pub fn get(&self, keys: &[String]) -> Option<&Container> {
        self.entries.get(&self.pos_of(keys)?)
    }

    /// The entry with these key values, mutably. Callers must not change key leaves.
    pub fn get_mut(&mut self, keys: &[String]) -> Option<&mut Container> {
        let pos = self.pos_of(keys)?;
        self.entries.get_mut(&pos)
    }

    /// The entry at a position key.
    pub fn get_at(&self, pos: &[u8]) -> Option<&Container> {
        self.entries.get(pos)
    }

    /// Inserts `entry` where `at` says (user-ordered lists) or where its keys
    /// sort (system-ordered). Returns the entry's position key.
    ///
    /// # Errors
    /// [`Error::Exists`] when an entry with the same keys is present, [`Error::Invalid`]
    /// when a key leaf is missing, [`Error::NotFound`] when the anchor of
    /// `Before`/`After` is not in the list.
    pub fn insert(&mut self, entry: Container, at: &Insert) -> Result<Vec<u8>> {
        let ek = self.entry_key_of(&entry)?;
        let n = self.info.keys.len();
        let exists = |ek: &[u8]| {
            let keys = keycode::decode_entry_key(ek, n).unwrap_or_default();
            Error::Exists { path: format!("list entry {keys:?}") }
        };
        if !self.info.user_ordered {
            match self.entries.entry(ek) {
                std::collections::btree_map::Entry::Occupied(o) => return Err(exists(o.key())),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let ek = v.key().clone();
                    v.insert(entry);
                    return Ok(ek);
                }
            }
        }
        let keyed = !self.info.keys.is_empty();
        if keyed && self.by_key.contains_key(&ek) {
            return Err(exists(&ek));
        }
        let pos = self.free_pos(at)?;
        if keyed {
            self.by_key.insert(ek, pos.clone());
        }
        self.entries.insert(pos.clone(), entry);
        Ok(pos)
    }

    /// A list of `entries`, in document order: a system-ordered keyed list
    /// holds them where their keys sort, built in one pass instead of an
    /// insertion each (which searches the list every time); other lists
    /// take them one by one, last.
    ///
    /// # Errors
    /// The index of the first entry that cannot go in, with why:
    /// [`Error::Exists`] for an entry with the keys of one before it,
    /// [`Error::Invalid`] for a missing key leaf.
    pub fn from_entries(info: ListInfo, entries: Vec<Container>) -> std::result::Result<List, (usize, Error)> {
        let mut list = List::new(info);
        if list.info.user_ordered || list.info.keys.is_empty() {
            for (i, e) in entries.into_iter().enumerate() {
                list.insert(e, &Insert::Last).map_err(|e| (i, e))?;
            }
            return Ok(list);
        }
        let mut keyed = Vec::with_capacity(entries.len());
        for (i, e) in entries.into_iter().enumerate() {
            keyed.push((list.entry_key_of(&e).map_err(|e| (i, e))?, e));
        }
        if !keyed.windows(2).all(|w| w[0].0 < w[1].0) {
            // Of equal keys the first in document order sorts first, so the
            // entry at fault is the earliest of the later ones.
            let mut by_key: Vec<usize> = (0..keyed.len()).collect();
            by_key.sort_unstable_by(|&a, &b| keyed[a].0.cmp(&keyed[b].0).then(a.cmp(&b)));
            let dup = by_key.windows(2).filter(|w| keyed[w[0]].0 == keyed[w[1]].0).map(|w| w[1]).min();
            if let Some(i) = dup {
                let keys = keycode::decode_entry_key(&keyed[i].0, list.info.keys.len()).unwrap_or_default();
                return Err((i, Error::Exists { path: format!("list entry {keys:?}") }));
            }
        }
        // Sorted (once more, in one pass when they came sorted) and built
        // bottom up.
        list.entries = keyed.into_iter().collect();
        Ok(list)
    }

    /// The entry key of `entry` (empty for keyless lists), encoded straight from
    /// its key leaves.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming a missing key leaf.
    pub fn entry_key_of(&self, entry: &Container) -> Result<Vec<u8>> {
        let mut ek = Vec::with_capacity(16 * self.info.keys.len());
        for k in &self.info.keys {
            match entry.children.get(k) {
                Some(Node::Leaf { value, .. }) => keycode::push_key_value(&mut ek, &value.as_text()),
                _ => return Err(Error::invalid("list entry", format!("key leaf `{k}` is missing"))),
            }
        }
        Ok(ek)
    }

    /// Inserts `entry` at a given position key (as read back from storage).
    ///
    /// # Errors
    /// [`Error::Invalid`] when a key leaf is missing.
    pub fn insert_at_pos(&mut self, pos: Vec<u8>, entry: Container) -> Result<()> {
        if self.info.user_ordered && !self.info.keys.is_empty() {
            self.by_key.insert(self.entry_key_of(&entry)?, pos.clone());
        }
        self.entries.insert(pos, entry);
        Ok(())
    }

    /// Fills a list that holds no entries with entries read back from
    /// storage, in one bulk build of its maps instead of one insertion each:
    /// `entries` are (position key, entry), in any order (one pass when they
    /// come sorted); for a user-ordered keyed list, `entry_keys[i]` is the
    /// entry key of `entries[i]` (its storage key's selector), otherwise
    /// `entry_keys` is empty. Of entries with equal position keys (a damaged
    /// store) the first is kept, as [`List::insert_at_pos`] after a
    /// [`List::get_at`] keeps it.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the list holds entries already, or
    /// `entry_keys` does not match `entries`.
    pub fn fill_stored(&mut self, entries: Vec<(Vec<u8>, Container)>, entry_keys: Vec<Vec<u8>>) -> Result<()> {
        let with_keys = self.info.user_ordered && !self.info.keys.is_empty();
        if !self.entries.is_empty() || entry_keys.len() != if with_keys { entries.len() } else { 0 } {
            return Err(Error::invalid("list", "stored entries fill only an empty list, with one entry key each"));
        }
        // Entry keys ride with their entries through the sort (none when the list keeps none).
        let keys = entry_keys.into_iter().map(Some).chain(std::iter::repeat_with(|| None));
        let mut rows: Vec<(Vec<u8>, Option<Vec<u8>>, Container)> =
            entries.into_iter().zip(keys).map(|((pos, c), ek)| (pos, ek, c)).collect();
        // Stable, so the first of equal position keys stays first.
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.dedup_by(|later, kept| later.0 == kept.0);
        let mut by_key = Vec::with_capacity(if with_keys { rows.len() } else { 0 });
        let mut sorted = Vec::with_capacity(rows.len());
        for (pos, ek, c) in rows {
            if let Some(ek) = ek {
                by_key.push((ek, pos.clone()));
            }
            sorted.push((pos, c));
        }
        self.by_key = by_key.into_iter().collect();
        self.entries = sorted.into_iter().collect();
        Ok(())
    }

    /// A fresh order key for a new entry placed as `at` says.
    fn free_pos(&self, at: &Insert) -> Result<Vec<u8>> {
        let anchor = |keys: &Vec<String>| {
            self.pos_of(keys).ok_or_else(|| Error::NotFound { path: format!("list entry {keys:?} (insert anchor)") })
        };
        use std::ops::Bound::{Excluded, Unbounded};
        let (a, b) = match at {
            Insert::First => (None, self.entries.keys().next().cloned()),
            Insert::Last => (self.entries.keys().next_back().cloned(), None),
            Insert::Before(keys) => {
                let b = anchor(keys)?;
                (
                    self.entries.range::<Vec<u8>, _>((Unbounded, Excluded(&b))).next_back().map(|(k, _)| k.clone()),
                    Some(b),
                )
            }
            Insert::After(keys) => {
                let a = anchor(keys)?;
                let b = self.entries.range::<Vec<u8>, _>((Excluded(&a), Unbounded)).next().map(|(k, _)| k.clone());
                (Some(a), b)
            }
        };
        keycode::order_between(a.as_deref(), b.as_deref()).ok_or_else(|| {
            let hex = |k: &Option<Vec<u8>>| {
                k.as_ref().map_or("(none)".to_string(), |k| k.iter().map(|x| format!("{x:02x}")).collect())
            };
            Error::invalid(
                "user-ordered list",
                format!(
                    "the stored order keys around the new entry are damaged (before: {}, after: {}); `canopy check` lists them",
                    hex(&a),
                    hex(&b)
                ),
            )
        })
    }

    /// Removes and returns the entry with these key values (1-based position for
    /// keyless lists), with its position key.
    pub fn remove(&mut self, keys: &[String]) -> Option<(Vec<u8>, Container)> {
        let pos = self.pos_of(keys)?;
        if self.info.user_ordered && !self.info.keys.is_empty() {
            self.by_key.remove(&keycode::entry_key(keys));
        }
        let e = self.entries.remove(&pos)?;
        Some((pos, e))
    }

    /// Moves an existing entry of a user-ordered list. Returns the new position key.
    ///
    /// # Errors
    /// [`Error::NotFound`] when the entry or the anchor is missing.
    pub fn move_entry(&mut self, keys: &[String], at: &Insert) -> Result<Vec<u8>> {
        let (_, entry) = self.remove(keys).ok_or_else(|| Error::NotFound { path: format!("list entry {keys:?}") })?;
        self.insert(entry, at)
    }
}

/// Whether `ek` is the entry key of `entry` in a list keyed by `keys` (as
/// [`List::entry_key_of`] encodes it), compared without building that key.
fn entry_key_is(keys: &[Name], entry: &Container, ek: &[u8]) -> Result<bool> {
    let mut pos = 0;
    for k in keys {
        match entry.children.get(k) {
            Some(Node::Leaf { value, .. }) => {
                if !keycode::eat_key_value(ek, &mut pos, &value.as_text()) {
                    return Ok(false);
                }
            }
            _ => return Err(Error::invalid("list entry", format!("key leaf `{k}` is missing"))),
        }
    }
    Ok(pos == ek.len())
}

/// Any data node below a container.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Leaf {
        value: Value,
        meta: Meta,
    },
    LeafList(Vec<LeafListEntry>),
    Container(Container),
    /// Boxed, like anydata's value, so that a `Node` (one per child of every
    /// container) stays the size of a leaf.
    List(Box<List>),
    /// An `anydata`/`anyxml` value, kept as JSON.
    AnyData {
        value: Box<serde_json::Value>,
        meta: Meta,
    },
}

impl Node {
    /// A leaf without metadata.
    pub fn leaf(value: Value) -> Node {
        Node::Leaf { value, meta: Meta::new() }
    }

    /// Whether this node is stored inline in its parent's fragment (leaves,
    /// leaf-lists, anydata) rather than as fragments of its own.
    pub fn is_inline(&self) -> bool {
        matches!(self, Node::Leaf { .. } | Node::LeafList(_) | Node::AnyData { .. })
    }

    /// Number of data nodes in this subtree (leaves, leaf-list entries,
    /// containers, list entries), counting this one.
    pub fn count(&self) -> usize {
        match self {
            Node::Leaf { .. } | Node::AnyData { .. } => 1,
            Node::LeafList(v) => v.len(),
            Node::Container(c) => 1 + c.count_children(),
            Node::List(l) => l.entries().map(|e| 1 + e.count_children()).sum(),
        }
    }
}

impl Container {
    /// Packs every list below this container (see [`List::pack`]).
    pub fn pack_lists(&mut self) {
        for child in self.children.values_mut() {
            match child {
                Node::Container(c) => c.pack_lists(),
                Node::List(l) => l.pack(),
                _ => {}
            }
        }
    }

    /// Number of data nodes below this container.
    pub fn count_children(&self) -> usize {
        self.children.values().map(Node::count).sum()
    }

    /// The value of the key leaf `name` as text, if present.
    pub fn key_text(&self, name: &str) -> Option<Text> {
        match self.children.get(name) {
            Some(Node::Leaf { value, .. }) => Some(value.text()),
            _ => None,
        }
    }

    /// The key values of this entry in `info`'s key order; `None` when a key leaf
    /// is missing.
    pub fn key_values(&self, info: &ListInfo) -> Option<Vec<Text>> {
        info.keys.iter().map(|k| self.key_text(k)).collect()
    }
}

/// A borrowed view of one node of a tree, as [`Container::lookup`] finds it.
///
/// Lists and leaf-lists appear as a whole ([`NodeRef::List`], [`NodeRef::LeafList`])
/// when a path names them without a selector; their entries are separate nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeRef<'a> {
    /// The datastore root (the empty path).
    Root(&'a Container),
    Container(&'a Container),
    /// A list as a whole.
    List(&'a List),
    /// One list entry.
    Entry(&'a Container),
    Leaf(&'a Value, &'a Meta),
    /// A leaf-list as a whole.
    LeafList(&'a [LeafListEntry]),
    /// One leaf-list entry.
    LeafListEntry(&'a LeafListEntry),
    AnyData(&'a serde_json::Value, &'a Meta),
}

impl<'a> NodeRef<'a> {
    /// The container behind the root, a container or a list entry: the nodes
    /// that have children.
    pub fn container(&self) -> Option<&'a Container> {
        match *self {
            NodeRef::Root(c) | NodeRef::Container(c) | NodeRef::Entry(c) => Some(c),
            _ => None,
        }
    }

    /// The value of a leaf or leaf-list entry.
    pub fn value(&self) -> Option<&'a Value> {
        match *self {
            NodeRef::Leaf(v, _) => Some(v),
            NodeRef::LeafListEntry(e) => Some(&e.value),
            _ => None,
        }
    }
}

/// Where the entries named by `Keys` selectors sit in a keyed list, one
/// per selector (see [`List::keyed_positions`]), in one buffer.
#[derive(Clone, Debug, Default)]
pub struct Positions {
    bytes: Vec<u8>,
    /// Per selector, where its entry key ends and its order key (only in a
    /// user-ordered list) starts and ends in `bytes`.
    spans: Vec<Option<(u32, u32, u32)>>,
}

impl Positions {
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The entry key of the `i`-th selector's entry.
    pub fn entry_key(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].map(|(s, m, _)| &self.bytes[s as usize..m as usize])
    }

    /// The order key of the `i`-th selector's entry, in a user-ordered list.
    pub fn order(&self, i: usize) -> Option<&[u8]> {
        self.spans[i].filter(|(_, m, e)| e > m).map(|(_, m, e)| &self.bytes[m as usize..e as usize])
    }

    /// The position key of the `i`-th selector's entry: its order key in a
    /// user-ordered list, else its entry key.
    pub fn pos(&self, i: usize) -> Option<&[u8]> {
        self.order(i).or_else(|| self.entry_key(i))
    }
}

/// What moving a cursor along a list's entries to a position found.
enum Step<V> {
    Found(V),
    Absent,
    /// Not reached in a few steps: search from the root instead.
    Seek,
}

/// Moves `cursor` (a list's entries in position order, not past `pos`) on
/// to `pos`, taking the entry there. A few steps at most: further, a search
/// costs less.
fn step_to<'a, V>(cursor: &mut std::iter::Peekable<impl Iterator<Item = (&'a Vec<u8>, V)>>, pos: &[u8]) -> Step<V> {
    for _ in 0..8 {
        match cursor.peek() {
            None => return Step::Absent,
            Some((k, _)) => match k.as_slice().cmp(pos) {
                std::cmp::Ordering::Less => {
                    cursor.next();
                }
                std::cmp::Ordering::Equal => return cursor.next().map_or(Step::Absent, |(_, v)| Step::Found(v)),
                std::cmp::Ordering::Greater => return Step::Absent,
            },
        }
    }
    Step::Seek
}

/// The first position at or after `at[*i]`, where a cursor starts; `*i`
/// moved to it past selectors without one.
fn seek_from<'p>(at: &'p Positions, i: &mut usize) -> Option<&'p [u8]> {
    while *i < at.len() {
        if let Some(p) = at.pos(*i) {
            return Some(p);
        }
        *i += 1;
    }
    None
}

/// Visits `at[*i..]` with a cursor started at `at[*i]` (`step` moves it),
/// while the positions ascend and the cursor reaches them; `*i` is left at
/// the position to seek next.
fn walk_from<V>(at: &Positions, i: &mut usize, mut step: impl FnMut(&[u8]) -> Step<V>, mut f: impl FnMut(usize, V)) {
    let mut prev: Option<&[u8]> = None;
    while *i < at.len() {
        if let Some(pos) = at.pos(*i) {
            if prev.is_some_and(|q| q >= pos) {
                return;
            }
            match step(pos) {
                Step::Found(e) => f(*i, e),
                Step::Absent => {}
                Step::Seek => return,
            }
            prev = Some(pos);
        }
        *i += 1;
    }
}

/// Whether a key name as written in a path (`k`, or `m:k`) names the key leaf `key`.
fn key_name_matches(written: &str, key: &str) -> bool {
    written == key || written.split_once(':').is_some_and(|(_, local)| local == key)
}

impl List {
    /// The entry a path selector picks, with its position key: `Keys` in any
    /// order (matched by name against [`ListInfo::keys`]), or a 1-based
    /// `Position` among all entries in document order.
    pub fn find(&self, selector: &crate::path::Selector) -> Option<(&[u8], &Container)> {
        use crate::path::Selector;
        match selector {
            Selector::Keys(kv) => {
                let ek = self.selector_entry_key(kv)?;
                let pos = match self.info.user_ordered {
                    true => self.by_key.get(&ek)?,
                    false => &ek,
                };
                self.entries.get_key_value(pos).map(|(p, e)| (p.as_slice(), e))
            }
            Selector::Position(n) => self.entries_with_pos().nth(usize::try_from(*n).ok()?.checked_sub(1)?),
            Selector::None | Selector::Value(_) => None,
        }
    }

    /// The entry key a `Keys` selector names in this keyed list, its values
    /// in key order (names matched as [`List::find`] matches them), appended
    /// to `out`; `false` (and `out` as it was) when the selector does not
    /// name the list's keys.
    fn push_selector_entry_key(&self, kv: &[(Name, Text)], out: &mut Vec<u8>) -> bool {
        if self.info.keys.is_empty() || kv.len() != self.info.keys.len() {
            return false;
        }
        let start = out.len();
        for (i, k) in self.info.keys.iter().enumerate() {
            let v = match kv.get(i) {
                Some((name, v)) if name == k => v,
                _ => match kv.iter().find(|(name, _)| key_name_matches(name, k)) {
                    Some((_, v)) => v,
                    None => {
                        out.truncate(start);
                        return false;
                    }
                },
            };
            keycode::push_key_value(out, v);
        }
        true
    }

    /// [`List::push_selector_entry_key`] into a new buffer.
    fn selector_entry_key(&self, kv: &[(Name, Text)]) -> Option<Vec<u8>> {
        let mut ek = Vec::with_capacity(kv.iter().map(|(_, v)| (v.len() + 3).max(9)).sum());
        self.push_selector_entry_key(kv, &mut ek).then_some(ek)
    }

    /// Where the entries that `Keys` selectors name would sit in this keyed
    /// list, one per selector, for [`List::visit_at`] and
    /// [`List::visit_at_mut`]; none for a selector that does not name the
    /// list's keys, or in a user-ordered list an entry it does not hold.
    pub fn keyed_positions<'s>(&self, sels: impl IntoIterator<Item = &'s [(Name, Text)]>) -> Positions {
        let sels = sels.into_iter();
        let mut at = Positions { bytes: Vec::with_capacity(sels.size_hint().0 * 16), spans: Vec::new() };
        at.spans.reserve(sels.size_hint().0);
        for kv in sels {
            let start = at.bytes.len();
            let span = self.push_selector_entry_key(kv, &mut at.bytes).then(|| {
                let mid = at.bytes.len();
                if self.info.user_ordered {
                    match self.by_key.get(&at.bytes[start..mid]) {
                        Some(order) => at.bytes.extend_from_slice(order),
                        None => {
                            at.bytes.truncate(start);
                            return None;
                        }
                    }
                }
                Some((start as u32, mid as u32, at.bytes.len() as u32))
            });
            at.spans.push(span.flatten());
        }
        at
    }

    /// Calls `f(i, entry)` for each `at[i]` this list holds an entry at, in
    /// turn. Positions that ascend are found in one pass along the list, as
    /// a transaction's changes to one list come; others by a search each.
    pub fn visit_at<'a>(&'a self, at: &Positions, mut f: impl FnMut(usize, &'a Container)) {
        let mut i = 0;
        while let Some(from) = seek_from(at, &mut i) {
            let mut cursor = self.entries.range::<[u8], _>((Bound::Included(from), Bound::Unbounded)).peekable();
            walk_from(at, &mut i, |pos| step_to(&mut cursor, pos), &mut f);
        }
    }

    /// [`List::visit_at`], mutably. Callers must not change key leaves.
    pub fn visit_at_mut(&mut self, at: &Positions, mut f: impl FnMut(usize, &mut Container)) {
        let mut i = 0;
        while let Some(from) = seek_from(at, &mut i) {
            let mut cursor = self.entries.range_mut::<[u8], _>((Bound::Included(from), Bound::Unbounded)).peekable();
            walk_from(at, &mut i, |pos| step_to(&mut cursor, pos), &mut f);
        }
    }

    /// The entry at a position key, mutably. Callers must not change key leaves.
    pub fn get_at_mut(&mut self, pos: &[u8]) -> Option<&mut Container> {
        self.entries.get_mut(pos)
    }

    /// In a system-ordered keyed list, the entry named by `(key name, value)`
    /// pairs (in any order), or the one `make` builds when there is none,
    /// placed where its keys sort; with whether it was made. `None` when
    /// the list is user-ordered or keyless, or the pairs do not name its keys.
    /// Callers must not change key leaves.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the entry `make` builds lacks a key leaf, or
    /// its typed key values encode otherwise than the pairs' text (a path
    /// not in canonical form: schemas put paths in it before edits apply).
    pub fn get_or_insert_sorted(
        &mut self,
        kv: &[(Name, Text)],
        make: impl FnOnce() -> Container,
    ) -> Result<Option<(&mut Container, bool)>> {
        let Some((keys, slot)) = self.sorted_slot(kv) else { return Ok(None) };
        match slot {
            btree_map::Entry::Occupied(o) => Ok(Some((o.into_mut(), false))),
            btree_map::Entry::Vacant(v) => {
                let entry = make();
                // Placed by its own key leaves, which must encode as the
                // pairs did (the map's key is the entry's).
                if !entry_key_is(keys, &entry, v.key())? {
                    return Err(Error::invalid(
                        "list entry",
                        format!("its key values {kv:?} are not in their type's canonical form"),
                    ));
                }
                Ok(Some((v.insert(entry), true)))
            }
        }
    }

    /// In a user-ordered keyed list, the entry `kv` names (all keys, in any
    /// order) or, when none has them, `make()`'s entry placed last, with
    /// whether it was made: one key encoding, and for a new entry no search
    /// but the insertions'. `None` when the list is system-ordered or keyless,
    /// or `kv` does not name its keys.
    ///
    /// # Errors
    /// As [`List::get_or_insert_sorted`]: the new entry's key leaves missing
    /// or not encoding as the pairs do; [`Error::Invalid`] when the order keys
    /// around the list's end are damaged. `make` sees the list as it is before
    /// the new entry goes in.
    pub fn get_or_push_ordered(
        &mut self,
        kv: &[(Name, Text)],
        make: impl FnOnce(&List) -> Container,
    ) -> Result<Option<(&mut Container, bool)>> {
        if !self.info.user_ordered {
            return Ok(None);
        }
        let Some(ek) = self.selector_entry_key(kv) else { return Ok(None) };
        if let Some(pos) = self.by_key.get(&ek) {
            return Ok(self.entries.get_mut(pos).map(|e| (e, false)));
        }
        let entry = make(self);
        if !entry_key_is(&self.info.keys, &entry, &ek)? {
            return Err(Error::invalid(
                "list entry",
                format!("its key values {kv:?} are not in their type's canonical form"),
            ));
        }
        let pos = self.free_pos(&Insert::Last)?;
        self.by_key.insert(ek, pos.clone());
        match self.entries.entry(pos) {
            btree_map::Entry::Vacant(v) => Ok(Some((v.insert(entry), true))),
            // `free_pos` gives a key after every entry's.
            btree_map::Entry::Occupied(o) => {
                Err(Error::invalid("user-ordered list", format!("a new entry's order key {:?} is taken", o.key())))
            }
        }
    }

    /// Inserts `entry` into a system-ordered keyed list when `kv` names the
    /// list's keys, no entry has them yet, and `entry`'s key leaves encode as
    /// `kv` does: one key encoding and one search. Returns the entry placed,
    /// or `entry` back (not placed) in every other case, for the caller's
    /// general path.
    ///
    /// # Errors
    /// A key leaf missing from `entry`.
    pub fn insert_new_sorted(
        &mut self,
        kv: &[(Name, Text)],
        entry: Container,
    ) -> Result<std::result::Result<&mut Container, Container>> {
        let Some((keys, btree_map::Entry::Vacant(v))) = self.sorted_slot(kv) else { return Ok(Err(entry)) };
        match entry_key_is(keys, &entry, v.key())? {
            true => Ok(Ok(v.insert(entry))),
            false => Ok(Err(entry)),
        }
    }

    /// In a system-ordered keyed list, the list's keys and the map slot of
    /// the entry `kv` names (one key encoding, one search); `None` when the
    /// list is user-ordered or keyless, or `kv` does not name its keys.
    fn sorted_slot(&mut self, kv: &[(Name, Text)]) -> Option<(&[Name], EntrySlot<'_>)> {
        if self.info.user_ordered {
            return None;
        }
        let ek = self.selector_entry_key(kv)?;
        Some((&self.info.keys, self.entries.entry(ek)))
    }
}

/// A system-ordered list's map slot of one entry key.
type EntrySlot<'l> = btree_map::Entry<'l, Vec<u8>, Container>;

impl Container {
    /// The node at `path` below this container (taken as the root), if present.
    /// Key selectors may list the keys in any order; a `Position` selects the
    /// Nth entry of a list or leaf-list in document order.
    pub fn lookup(&self, path: &crate::path::Path) -> Option<NodeRef<'_>> {
        use crate::path::Selector;
        let mut cur = NodeRef::Root(self);
        for seg in &path.segments {
            let node = cur.container()?.children.get(&seg.name)?;
            cur = match (node, &seg.selector) {
                (Node::Container(c), Selector::None) => NodeRef::Container(c),
                (Node::Leaf { value, meta }, Selector::None) => NodeRef::Leaf(value, meta),
                (Node::AnyData { value, meta }, Selector::None) => NodeRef::AnyData(value, meta),
                (Node::List(l), Selector::None) => NodeRef::List(l),
                (Node::LeafList(v), Selector::None) => NodeRef::LeafList(v),
                (Node::List(l), sel) => NodeRef::Entry(l.find(sel)?.1),
                (Node::LeafList(v), Selector::Value(s)) => {
                    NodeRef::LeafListEntry(v.iter().find(|e| e.value.as_text() == *s)?)
                }
                (Node::LeafList(v), Selector::Position(n)) => {
                    NodeRef::LeafListEntry(v.get(usize::try_from(*n).ok()?.checked_sub(1)?)?)
                }
                _ => return None,
            };
        }
        Some(cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Path;

    fn leaf(v: &str) -> Node {
        Node::leaf(Value::String(v.into()))
    }

    /// `get_or_push_ordered` places new entries last, in the order they come,
    /// finds an entry already there without making one, refuses a made entry
    /// whose key leaves do not encode as the pairs do, and leaves
    /// system-ordered lists to the caller's other path.
    #[test]
    fn pushing_ordered_entries_places_them_last_once() {
        let mut l = List::new(ListInfo { keys: vec!["k".into()], user_ordered: true });
        let kv = |k: &str| vec![(Name::from("k"), Text::from(k))];
        let make = |k: &'static str| {
            move |_: &List| {
                let mut c = Container::default();
                c.children.insert("k".into(), leaf(k));
                c
            }
        };
        for k in ["b", "a", "c"] {
            let (_, created) = l.get_or_push_ordered(&kv(k), make(k)).unwrap().unwrap();
            assert!(created);
        }
        let (e, created) = l.get_or_push_ordered(&kv("a"), |_: &List| panic!("a is there")).unwrap().unwrap();
        assert!(!created);
        e.children.insert("l".into(), leaf("x"));
        let order: Vec<String> = l.entries().map(|e| e.key_text("k").unwrap().to_string()).collect();
        assert_eq!(order, ["b", "a", "c"]);
        assert!(l.get_keyed(&kv("a")).is_some_and(|e| e.children.contains_key("l")));
        // The made entry says `z` where the path says `d`.
        assert!(l.get_or_push_ordered(&kv("d"), make("z")).is_err());
        assert_eq!(l.len(), 3);
        let mut sorted = List::new(ListInfo::keyed(["k"]));
        assert!(sorted.get_or_push_ordered(&kv("a"), make("a")).unwrap().is_none());
    }

    /// `visit_at` and `visit_at_mut` visit, for each selector, the entry
    /// `find` finds, and only those: selectors in order, out of order,
    /// repeated, far apart (past the cursor's few steps), naming absent
    /// entries or not the list's keys, in system- and user-ordered lists.
    #[test]
    fn visiting_by_positions_finds_what_search_finds() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for user_ordered in [false, true] {
            let mut l = List::new(ListInfo { keys: vec!["k".into()], user_ordered });
            // Every other key of 0..200, user-ordered ones in reverse.
            let mut held: Vec<u64> = (0..200).filter(|k| k % 2 == 0).collect();
            if user_ordered {
                held.reverse();
            }
            for k in &held {
                let mut c = Container::default();
                c.children.insert("k".into(), leaf(&format!("{k:03}")));
                l.insert(c, &Insert::Last).unwrap();
            }
            for round in 0..300 {
                let count = 1 + next(40) as usize;
                let mut keys: Vec<u64> = (0..count).map(|_| next(210)).collect();
                if round % 3 == 0 {
                    keys.sort_unstable();
                }
                let sels: Vec<Vec<(Name, Text)>> = keys
                    .iter()
                    .map(|k| match k {
                        205.. => vec![(Name::from("other"), Text::from("000"))],
                        _ => vec![(Name::from("k"), Text::from(format!("{k:03}")))],
                    })
                    .collect();
                let expected: Vec<(usize, String)> = sels
                    .iter()
                    .enumerate()
                    .filter_map(|(i, kv)| {
                        let e = l.find(&crate::path::Selector::Keys(kv.clone()))?.1;
                        Some((i, e.key_text("k")?.to_string()))
                    })
                    .collect();
                let pos = l.keyed_positions(sels.iter().map(Vec::as_slice));
                assert_eq!(pos.len(), sels.len());
                let mut seen = Vec::new();
                l.visit_at(&pos, |i, e| seen.push((i, e.key_text("k").unwrap().to_string())));
                assert_eq!(seen, expected, "{keys:?}");
                let mut seen = Vec::new();
                l.visit_at_mut(&pos, |i, e| seen.push((i, e.key_text("k").unwrap().to_string())));
                assert_eq!(seen, expected, "{keys:?}");
            }
        }
    }

    /// `from_entries` gives the list that inserting the entries one by one
    /// gives, in every kind of list and in any order of keys; it names the
    /// first entry that repeats keys, or lacks a key leaf, by its index.
    #[test]
    fn building_from_entries_matches_inserting_one_by_one() {
        let entry = |k: &str| {
            let mut c = Container::default();
            c.children.insert("k".into(), leaf(k));
            c.children.insert("v".into(), leaf(&format!("v{k}")));
            c
        };
        let infos =
            [ListInfo::keyed(["k"]), ListInfo { keys: vec!["k".into()], user_ordered: true }, ListInfo::keyless()];
        for info in infos {
            for keys in [vec!["a", "b", "c"], vec!["c", "a", "b", "d"], vec![], vec!["x"]] {
                let mut one = List::new(info.clone());
                for k in &keys {
                    one.insert(entry(k), &Insert::Last).unwrap();
                }
                let bulk = List::from_entries(info.clone(), keys.iter().map(|k| entry(k)).collect()).unwrap();
                assert_eq!(bulk, one, "{info:?} {keys:?}");
                let order = |l: &List| l.entries().map(|e| e.key_text("k").unwrap().to_string()).collect::<Vec<_>>();
                assert_eq!(order(&bulk), order(&one));
            }
        }
        let keyed = ListInfo::keyed(["k"]);
        let dup = List::from_entries(keyed.clone(), ["d", "b", "d", "a", "b"].map(entry).to_vec());
        assert!(matches!(dup, Err((2, Error::Exists { .. }))), "{dup:?}");
        let dup = List::from_entries(keyed.clone(), ["a", "b", "b"].map(entry).to_vec());
        assert!(matches!(dup, Err((2, Error::Exists { .. }))), "{dup:?}");
        let mut keyless = Container::default();
        keyless.children.insert("v".into(), leaf("x"));
        let missing = List::from_entries(keyed, vec![entry("a"), keyless]);
        assert!(matches!(missing, Err((1, Error::Invalid { .. }))), "{missing:?}");
    }

    /// A bulk fill from storage gives the list an insertion one by one
    /// gives: entries by position, user-ordered entries found by key, the
    /// first of equal positions kept; a list with entries is not filled.
    #[test]
    fn filling_from_storage_matches_inserting_one_by_one() {
        let info = ListInfo { keys: vec!["k".into()], user_ordered: true };
        let entry = |k: &str, l: &str| {
            let mut c = Container::default();
            c.children.insert("k".into(), leaf(k));
            c.children.insert("l".into(), leaf(l));
            c
        };
        let ek = |k: &str| {
            let mut v = Vec::new();
            keycode::push_key_value(&mut v, k);
            v
        };
        let rows = [("b", "2", "x"), ("a", "9", "y"), ("c", "1", "z"), ("a", "5", "dup")];
        let mut one = List::new(info.clone());
        for (pos, k, l) in rows {
            if one.get_at(pos.as_bytes()).is_none() {
                one.insert_at_pos(pos.as_bytes().to_vec(), entry(k, l)).unwrap();
            }
        }
        let mut bulk = List::new(info);
        let entries = rows.iter().map(|(pos, k, l)| (pos.as_bytes().to_vec(), entry(k, l))).collect();
        bulk.fill_stored(entries, rows.iter().map(|(_, k, _)| ek(k)).collect()).unwrap();
        assert_eq!(bulk, one);
        let order: Vec<_> = bulk.entries().map(|e| e.children.get("l").cloned()).collect();
        assert_eq!(order, [Some(leaf("y")), Some(leaf("x")), Some(leaf("z"))]);
        assert_eq!(bulk.get(&["1".into()]), one.get(&["1".into()]));
        assert!(bulk.get(&["9".into()]).is_some() && bulk.get(&["5".into()]).is_none());
        assert!(bulk.fill_stored(vec![(b"d".to_vec(), entry("7", "w"))], vec![ek("7")]).is_err());
        assert!(List::new(ListInfo::keyed(["k"])).fill_stored(Vec::new(), vec![ek("7")]).is_err());
    }

    fn tree() -> Container {
        let mut pair = List::new(ListInfo::keyed(["k1", "k2"]));
        for (k1, k2) in [("5", "a"), ("5", "b")] {
            let e =
                Container { meta: Meta::new(), children: [("k1".into(), leaf(k1)), ("k2".into(), leaf(k2))].into() };
            pair.insert(e, &Insert::Last).unwrap();
        }
        let ll = Node::LeafList(
            ["x", "y"].map(|v| LeafListEntry { value: Value::String(v.into()), meta: Meta::new() }).to_vec(),
        );
        let top = Container {
            meta: Meta::new(),
            children: [("pair".into(), Node::List(Box::new(pair))), ("ll".into(), ll)].into(),
        };
        Container { meta: Meta::new(), children: [("m:top".into(), Node::Container(top))].into() }
    }

    fn at<'a>(t: &'a Container, p: &str) -> Option<NodeRef<'a>> {
        t.lookup(&p.parse::<Path>().unwrap())
    }

    #[test]
    fn lookup_finds_each_kind_of_node() {
        let t = tree();
        assert!(matches!(at(&t, "/"), Some(NodeRef::Root(_))));
        assert!(matches!(at(&t, "/m:top"), Some(NodeRef::Container(_))));
        assert!(matches!(at(&t, "/m:top/pair"), Some(NodeRef::List(l)) if l.len() == 2));
        assert!(matches!(at(&t, "/m:top/ll"), Some(NodeRef::LeafList(v)) if v.len() == 2));
        let Some(NodeRef::Entry(e)) = at(&t, "/m:top/pair[k1='5'][k2='b']") else { panic!() };
        assert_eq!(e.key_text("k2").as_deref(), Some("b"));
        // Keys in another order, or prefixed, find the same entry.
        assert_eq!(at(&t, "/m:top/pair[k2='b'][m:k1='5']"), Some(NodeRef::Entry(e)));
        assert_eq!(at(&t, "/m:top/pair[2]"), Some(NodeRef::Entry(e)));
        let Some(NodeRef::Leaf(v, _)) = at(&t, "/m:top/pair[k1='5'][k2='a']/k2") else { panic!() };
        assert_eq!(v.as_text(), "a");
        assert_eq!(at(&t, "/m:top/ll[.='y']").and_then(|n| n.value().cloned()), Some(Value::String("y".into())));
        assert_eq!(at(&t, "/m:top/ll[1]").and_then(|n| n.value().cloned()), Some(Value::String("x".into())));
    }

    #[test]
    fn lookup_misses_are_none() {
        let t = tree();
        for p in [
            "/top",
            "/m:top/pair[k1='5']",
            "/m:top/pair[k1='5'][k2='c']",
            "/m:top/pair[k1='5'][k3='a']",
            "/m:top/pair[3]",
            "/m:top/pair[k1='5'][k2='a']/nothing",
            "/m:top/ll[.='z']",
            "/m:top/ll[3]",
            "/m:top/ll/x",
            "/m:top[k='1']",
        ] {
            assert_eq!(at(&t, p), None, "{p}");
        }
    }

    /// A new entry is placed once; an entry with those keys, a user-ordered
    /// list, and key leaves that encode otherwise than the path's text give
    /// the entry back untouched.
    #[test]
    fn new_entries_go_in_sorted_lists_only_when_new() {
        let entry = |k: Value| {
            let mut e = Container::default();
            e.children.insert("k".into(), Node::leaf(k));
            e
        };
        let kv = |v: &str| vec![(Name::from("k"), Text::from(v))];
        let mut l = List::new(ListInfo::keyed(["k"]));
        assert!(l.insert_new_sorted(&kv("b"), entry(Value::String("b".into()))).unwrap().is_ok());
        assert!(l.insert_new_sorted(&kv("a"), entry(Value::String("a".into()))).unwrap().is_ok());
        let keys: Vec<_> = l.entries().map(|e| e.key_text("k").unwrap()).collect();
        assert_eq!(keys, ["a", "b"]);
        let mut again = entry(Value::String("a".into()));
        again.children.insert("x".into(), Node::leaf(Value::Bool(true)));
        assert_eq!(l.insert_new_sorted(&kv("a"), again.clone()).unwrap().err(), Some(again));
        // The leaf says 7, the path `007`: not the same key.
        let typed = entry(Value::Number("7".into()));
        assert_eq!(l.insert_new_sorted(&kv("007"), typed.clone()).unwrap().err(), Some(typed));
        assert_eq!(l.len(), 2);
        let mut u = List::new(ListInfo { keys: vec!["k".into()], user_ordered: true });
        let e = entry(Value::String("a".into()));
        assert_eq!(u.insert_new_sorted(&kv("a"), e.clone()).unwrap().err(), Some(e));
        assert_eq!(u.len(), 0);
    }
}
