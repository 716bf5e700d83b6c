//! Stored fragments and RFC 7951 JSON text, both ways, without building a
//! tree of the whole data.
//!
//! * [`JsonStream`] writes fragments arriving in key order (a range scan) as
//!   JSON. The engine streams `get_json` reads with it; the `json:` file
//!   backend writes its datastores with it.
//! * [`parse_fragments`] parses a JSON document into fragment and order-index
//!   records with canopy-core's own parser ([`canopy_core::json::parse_emit`]),
//!   one container or list entry at a time. The `json:` file backend loads
//!   its datastores with it.
//!
//! Both produce exactly what the tree-based paths produce ([`crate::treeio`]
//! and [`canopy_core::json::write_container`]): the same text, the same
//! records.

use std::collections::BTreeSet;
use std::io::Write;

use canopy_core::json::{self, Emit, JsonWriter, NodeView};
use canopy_core::keycode;
use canopy_core::tree::{Container, List, ListInfo, Node};
use canopy_core::Schema;

use crate::backend::{prefix_end, Snapshot};
use crate::error::{Result, StoreError};
use crate::fragment::{self, Decoded};
use crate::keys::{self, Datastore};
use crate::treeio;

/// Where a [`JsonStream`] reads user-ordered lists in order: the snapshot,
/// the datastore's fragment and order-index prefixes, and the relative key
/// of the subtree the caller scans (`scope`). A user-ordered list inside the
/// scope is written entry after entry as its order index lists them, each
/// entry read by its key; the caller's scan of the list's fragments is then
/// skipped. Lists outside it (the list of a written entry) are gathered.
#[derive(Clone, Copy)]
pub struct OrderSource<'s> {
    pub snap: &'s dyn Snapshot,
    pub data: &'s [u8],
    pub order: &'s [u8],
    pub scope: &'s [u8],
}

/// The metadata of a leaf that has none.
static NO_META: canopy_core::Meta = canopy_core::Meta::new();

/// Entry keys read from an order index at a time: a read's memory stays one
/// batch of keys and one entry, not the list.
const ORDER_BATCH: usize = 256;

/// One open node of the output.
struct Frame {
    /// Relative key of the node (a container or entry), or of the list (its
    /// parent's key and name) for a list frame.
    key: Vec<u8>,
    /// The node's fragment bytes, when they are not all UTF-8; its inline
    /// children not written yet are read from them in place, in name order.
    bytes: Vec<u8>,
    /// The node's fragment bytes as text, when they are all UTF-8 (then
    /// `bytes` is empty): what the inline children are read from then.
    text: String,
    inline: fragment::Inline,
    list: bool,
    /// Length of the schema path before this frame added to it.
    sp_before: usize,
}

/// A user-ordered list being gathered: its key, name, schema path, fragments.
type Gathered = (Vec<u8>, String, String, Vec<(Vec<u8>, Option<Decoded>)>);

fn write_err(e: std::io::Error) -> StoreError {
    StoreError::io("writing JSON", e)
}

fn bad(rel: &[u8]) -> StoreError {
    keys::malformed_key(rel)
}

/// Writes one datastore's fragments (or one subtree's) as an RFC 7951
/// document, from fragments arriving in key order.
///
/// Fragments arrive in document order (children by name, entries by key), so
/// a stack of open nodes is enough: each fragment's own leaves wait in their
/// node's frame and are written in name order between its child containers
/// and lists, which gives exactly the order the tree writer gives. A
/// user-ordered list, whose stored order (by key) is not its document order,
/// is gathered whole, built as a tree and written from it.
///
/// Use: [`root`](Self::root) with the root's fragment, if any, first; then,
/// to write one subtree, its ancestors ([`ancestor_container`](Self::ancestor_container),
/// [`ancestor_entry`](Self::ancestor_entry)); then [`fragment`](Self::fragment)
/// for each fragment in key order; then [`finish`](Self::finish).
pub struct JsonStream<'a, W: Write> {
    w: JsonWriter<W>,
    stack: Vec<Frame>,
    /// Frames popped, kept to reuse their buffers.
    spare: Vec<Frame>,
    /// Schema path of the top frame.
    sp: String,
    schema: &'a dyn Schema,
    gathering: Option<Gathered>,
    /// Frames below this many are the root's and the ancestors': fragments
    /// never close them.
    floor: usize,
    /// 1 when the root's fragment is the base frame, whose leaves come last.
    base: usize,
    source: Option<OrderSource<'a>>,
    /// Relative key of a user-ordered list written from its order index:
    /// the fragments under it that the caller's scan brings are skipped.
    skip: Option<Vec<u8>>,
}

impl<'a, W: Write> JsonStream<'a, W> {
    /// A stream writing to `out`, opening the document's top-level object.
    pub fn new(out: W, pretty: bool, schema: &'a dyn Schema) -> JsonStream<'a, W> {
        JsonStream {
            w: JsonWriter::new(out, pretty),
            stack: Vec::new(),
            spare: Vec::new(),
            sp: String::new(),
            schema,
            gathering: None,
            floor: 0,
            base: 0,
            source: None,
            skip: None,
        }
    }

    /// A stream writing entries of one list into `w`, whose innermost open
    /// thing is that list: `list` is the list's key relative to the
    /// datastore (its parent's key and name), `schema_path` its schema path.
    /// Give it an entry's fragments (the entry's own first) with
    /// [`fragment`](Self::fragment), then take the writer back with
    /// [`into_writer`](Self::into_writer), the list still open.
    pub fn in_list(w: JsonWriter<W>, list: &[u8], schema_path: &str, schema: &'a dyn Schema) -> JsonStream<'a, W> {
        let mut s = JsonStream {
            w,
            stack: Vec::new(),
            spare: Vec::new(),
            sp: schema_path.to_string(),
            schema,
            gathering: None,
            floor: 1,
            base: 0,
            source: None,
            skip: None,
        };
        s.push(list, &[], fragment::Inline::empty(), true, 0);
        s
    }

    /// Closes what the fragments opened (the list of
    /// [`in_list`](Self::in_list) stays open) and returns the writer.
    ///
    /// # Errors
    /// As [`fragment`](Self::fragment).
    pub fn into_writer(mut self) -> Result<JsonWriter<W>> {
        self.write_gathered()?;
        self.close_until(&[], self.floor)?;
        Ok(self.w)
    }

    /// Reads user-ordered lists inside `source`'s scope in order from their
    /// order index instead of gathering them.
    #[must_use]
    pub fn with_order_source(mut self, source: OrderSource<'a>) -> JsonStream<'a, W> {
        self.source = Some(source);
        self
    }

    /// A frame, reusing a popped one's buffers. `inline` is the cursor over
    /// `bytes`' inline children.
    fn frame(&mut self, key: &[u8], bytes: &[u8], inline: fragment::Inline, list: bool, sp_before: usize) -> Frame {
        let mut f = self.spare.pop().unwrap_or_else(|| Frame {
            key: Vec::new(),
            bytes: Vec::new(),
            text: String::new(),
            inline: fragment::Inline::empty(),
            list,
            sp_before,
        });
        f.key.clear();
        f.key.extend_from_slice(key);
        f.bytes.clear();
        f.text.clear();
        match std::str::from_utf8(bytes) {
            Ok(t) => f.text.push_str(t),
            Err(_) => f.bytes.extend_from_slice(bytes),
        }
        f.inline = inline;
        f.list = list;
        f.sp_before = sp_before;
        f
    }

    fn push(&mut self, key: &[u8], bytes: &[u8], inline: fragment::Inline, list: bool, sp_before: usize) {
        let f = self.frame(key, bytes, inline, list, sp_before);
        self.stack.push(f);
    }

    fn pop(&mut self) {
        if let Some(f) = self.stack.pop() {
            self.sp.truncate(f.sp_before);
            self.spare.push(f);
        }
    }

    /// The root's fragment (the datastore's metadata and top-level leaves):
    /// the first call, when there is one.
    ///
    /// # Errors
    /// `Corrupted` for a damaged fragment; write errors.
    pub fn root(&mut self, bytes: &[u8]) -> Result<()> {
        let (_, meta, inline) = fragment::open(bytes)?;
        self.w.meta(&meta).map_err(write_err)?;
        self.push(&[], bytes, inline, false, 0);
        self.base = 1;
        self.floor = 1;
        Ok(())
    }

    /// Opens ancestor container `name` (relative key `rel`) of the written subtree.
    ///
    /// # Errors
    /// Write errors.
    pub fn ancestor_container(&mut self, name: &str, rel: &[u8]) -> Result<()> {
        self.w.begin_container(name).map_err(write_err)?;
        let before = self.sp.len();
        self.sp.push('/');
        self.sp.push_str(name);
        self.push(rel, &[], fragment::Inline::empty(), false, before);
        self.floor = self.stack.len();
        Ok(())
    }

    /// Opens ancestor entry `rel` of list `name` of the written subtree, with
    /// `keys_only` (its key leaves) as its content.
    ///
    /// # Errors
    /// Write errors.
    pub fn ancestor_entry(&mut self, name: &str, rel: &[u8], keys_only: &Container) -> Result<()> {
        self.w.begin_list(name).map_err(write_err)?;
        self.w.begin_entry().map_err(write_err)?;
        let before = self.sp.len();
        self.sp.push('/');
        self.sp.push_str(name);
        let bytes = fragment::encode(keys_only, None);
        let (_, _, inline) = fragment::open(&bytes)?;
        self.push(rel, &bytes, inline, false, before);
        self.floor = self.stack.len();
        Ok(())
    }

    /// Writes the pending inline children of the top frame whose names sort
    /// before `before` (all of them with `None`).
    fn flush_pending(&mut self, before: Option<&str>) -> Result<()> {
        let JsonStream { w, stack, .. } = self;
        let Some(top) = stack.last_mut() else { return Ok(()) };
        loop {
            let unread = top.inline;
            let next = match top.bytes.is_empty() {
                true => top.inline.next_text(&top.text)?,
                false => top.inline.next(&top.bytes)?,
            };
            let Some((name, child)) = next else { break };
            if before.is_some_and(|b| name >= b) {
                top.inline = unread;
                break;
            }
            match child {
                fragment::ChildRef::Leaf(v, meta) => w.leaf_ref(name, v, meta.as_ref().unwrap_or(&NO_META)),
                fragment::ChildRef::Other(Node::LeafList(v)) => w.leaf_list(name, &v),
                fragment::ChildRef::Other(Node::AnyData { value, meta }) => w.anydata(name, &value, &meta),
                fragment::ChildRef::Other(Node::Leaf { value, meta }) => w.leaf(name, &value, &meta),
                fragment::ChildRef::Other(Node::Container(_) | Node::List(_)) => Ok(()),
            }
            .map_err(write_err)?;
        }
        Ok(())
    }

    /// Closes frames until the top one holds `key` (or the stack is at `floor`).
    fn close_until(&mut self, key: &[u8], floor: usize) -> Result<()> {
        while self.stack.len() > floor {
            let top = self.stack.last().expect("non-empty");
            if key.starts_with(&top.key) && !(top.list && key.len() == top.key.len()) {
                break;
            }
            self.flush_pending(None)?;
            self.pop();
            self.w.end().map_err(write_err)?;
        }
        Ok(())
    }

    /// Writes one fragment: `rel` its key relative to the datastore, `v` its
    /// stored bytes. Fragments must come in key order, below the ancestors.
    ///
    /// # Errors
    /// `Corrupted` for a damaged fragment or one whose parent fragment did
    /// not come before it; write errors.
    pub fn fragment(&mut self, rel: &[u8], v: &[u8]) -> Result<()> {
        if let Some(lk) = &self.skip {
            if rel.starts_with(lk) {
                return Ok(());
            }
            self.skip = None;
        }
        if let Some((lk, ..)) = &self.gathering {
            if rel.starts_with(lk) {
                let d = fragment::decode(v)?;
                self.gathering.as_mut().expect("gathering").3.push((rel.to_vec(), Some(d)));
                return Ok(());
            }
            self.write_gathered()?;
        }
        self.close_until(rel, self.floor)?;
        let (_, meta, inline) = fragment::open(v)?;
        if self.stack.last().is_some_and(|f| f.list) {
            // The next entry of the open list.
            self.w.begin_entry().map_err(write_err)?;
            self.w.meta(&meta).map_err(write_err)?;
            let before = self.sp.len();
            self.push(rel, v, inline, false, before);
            return Ok(());
        }
        let parent_len = self.stack.last().map_or(0, |f| f.key.len());
        let seg = rel.get(parent_len..).ok_or_else(|| bad(rel))?;
        let seg_len = keys::first_segment_len(seg).map_err(|_| bad(rel))?;
        if seg_len != seg.len() {
            return Err(StoreError::corrupted(format!(
                "fragment {} has no parent fragment",
                treeio::describe_key(rel)
            )));
        }
        let (name, pos) = keys::segment_name(seg).ok_or_else(|| bad(rel))?;
        let before = self.sp.len();
        self.sp.push('/');
        self.sp.push_str(&name);
        if pos == seg.len() {
            // A container.
            self.flush_pending(Some(&*name))?;
            self.w.begin_container(&name).map_err(write_err)?;
            self.w.meta(&meta).map_err(write_err)?;
            self.push(rel, v, inline, false, before);
            return Ok(());
        }
        // A list entry: open its list (the top frame is not that list).
        let list_key = &rel[..parent_len + pos];
        if self.schema.list_info(&self.sp).is_some_and(|i| i.user_ordered) {
            if let Some(src) = self.source.filter(|s| list_key.starts_with(s.scope)) {
                let list_key = list_key.to_vec();
                self.flush_pending(Some(&*name))?;
                self.w.begin_list(&name).map_err(write_err)?;
                self.push(&list_key, &[], fragment::Inline::empty(), true, before);
                self.write_ordered(src, &list_key)?;
                self.skip = Some(list_key);
                return Ok(());
            }
            let d = fragment::decode(v)?;
            let sp = self.sp.clone();
            self.sp.truncate(before);
            self.gathering = Some((list_key.to_vec(), name.into_owned(), sp, vec![(rel.to_vec(), Some(d))]));
            return Ok(());
        }
        self.flush_pending(Some(&*name))?;
        self.w.begin_list(&name).map_err(write_err)?;
        // The list's name stays on the schema path while its frame is open.
        self.push(list_key, &[], fragment::Inline::empty(), true, before);
        self.w.begin_entry().map_err(write_err)?;
        self.w.meta(&meta).map_err(write_err)?;
        let sp_list = self.sp.len();
        self.push(rel, v, inline, false, sp_list);
        Ok(())
    }

    /// Writes the entries of the user-ordered list at `list_key` (its frame
    /// open on top) in the order its order index gives, each entry with its
    /// descendants read by one range scan of its key. An index record whose
    /// entry is not stored is passed over (`canopy check` reports it).
    fn write_ordered(&mut self, src: OrderSource<'a>, list_key: &[u8]) -> Result<()> {
        let mut prefix = src.order.to_vec();
        prefix.extend_from_slice(list_key);
        let end = prefix_end(&prefix);
        let mut start = prefix.clone();
        // Entry keys of a batch, and one entry's fragments, each in one
        // buffer with their bounds: no allocation per record.
        let (mut suffixes, mut bounds) = (Vec::new(), Vec::with_capacity(ORDER_BATCH));
        let (mut frags, mut spans) = (Vec::new(), Vec::new());
        let mut ek = src.data.to_vec();
        ek.extend_from_slice(list_key);
        let (dl, el) = (src.data.len(), ek.len());
        loop {
            suffixes.clear();
            bounds.clear();
            let mut last = None;
            src.snap.scan(&start, end.as_deref(), false, &mut |k, v| {
                if crate::keys::own_order_record(&k[prefix.len()..]) {
                    suffixes.extend_from_slice(v);
                    bounds.push(suffixes.len());
                }
                if bounds.len() == ORDER_BATCH {
                    last = Some(k.to_vec());
                    return Ok(false);
                }
                Ok(true)
            })?;
            let mut from = 0;
            for &to in &bounds {
                ek.truncate(el);
                ek.extend_from_slice(&suffixes[from..to]);
                from = to;
                frags.clear();
                spans.clear();
                src.snap.scan_prefix(&ek, false, &mut |k, v| {
                    frags.extend_from_slice(&k[dl..]);
                    let mid = frags.len();
                    frags.extend_from_slice(v);
                    spans.push((mid - (k.len() - dl), mid, frags.len()));
                    Ok(true)
                })?;
                // An index record whose entry is not stored is passed over.
                if spans.first().is_none_or(|&(a, b, _)| b - a + dl != ek.len()) {
                    continue;
                }
                for &(a, b, c) in &spans {
                    self.fragment(&frags[a..b], &frags[b..c])?;
                }
            }
            match last {
                Some(mut k) => {
                    k.push(0);
                    start = k;
                }
                None => return Ok(()),
            }
        }
    }

    /// Builds the gathered user-ordered list and writes it.
    fn write_gathered(&mut self) -> Result<()> {
        let Some((list_key, name, sp, mut items)) = self.gathering.take() else { return Ok(()) };
        self.close_until(&list_key, 0)?;
        self.flush_pending(Some(&name))?;
        let info = self.schema.list_info(&sp).unwrap_or_default();
        let parent_len = self.stack.last().map_or(0, |f| f.key.len());
        let mut holder = Container::default();
        holder.children.insert(name.as_str().into(), Node::List(Box::new(List::new(info))));
        let mut parent_sp = sp.clone();
        parent_sp.truncate(sp.len() - name.len() - 1);
        treeio::build(&mut holder, &mut items, parent_len, &mut parent_sp, self.schema)?;
        if let Some(Node::List(l)) = holder.children.get(&name) {
            self.w.begin_list(&name).map_err(write_err)?;
            for e in l.entries() {
                self.w.begin_entry().map_err(write_err)?;
                json::write_members(&mut self.w, e, None).map_err(write_err)?;
                self.w.end().map_err(write_err)?;
            }
            self.w.end().map_err(write_err)?;
        }
        Ok(())
    }

    /// Closes everything, the document included, and returns the output.
    ///
    /// # Errors
    /// As [`fragment`](Self::fragment).
    pub fn finish(mut self) -> Result<W> {
        self.write_gathered()?;
        // Close everything but the root's base frame, whose leaves come last.
        while self.stack.len() > self.base {
            self.flush_pending(None)?;
            self.pop();
            self.w.end().map_err(write_err)?;
        }
        self.flush_pending(None)?;
        self.w.finish().map_err(write_err)
    }
}

/// One node open while parsing.
enum Open {
    /// A container or list entry: key and schema path lengths before it, its
    /// record's index, and whether it is an entry.
    Node {
        key_before: usize,
        sp_before: usize,
        slot: usize,
        entry: bool,
    },
    List(ListState),
}

/// A list open while parsing.
struct ListState {
    key_before: usize,
    sp_before: usize,
    info: ListInfo,
    /// Order key of the last entry (keyless and user-ordered lists).
    last_order: Option<Vec<u8>>,
    /// The entry keys of the entries read (keyed lists), one after another,
    /// and where each ends: to find repeated keys once the entries' records
    /// are gone to the sink.
    entry_keys: Vec<u8>,
    entry_ends: Vec<usize>,
    /// Entry keys seen, once entries stopped arriving in key order.
    seen: Option<BTreeSet<Vec<u8>>>,
}

impl ListState {
    fn entry_key(&self, i: usize) -> &[u8] {
        let from = if i == 0 { 0 } else { self.entry_ends[i - 1] };
        &self.entry_keys[from..self.entry_ends[i]]
    }
}

/// Where [`stream_fragments`] hands the records that are final.
pub type Sink<'a> = dyn FnMut(Vec<u8>, Vec<u8>) -> Result<()> + 'a;

/// Records gathered before they go to the sink at once (a bound on memory).
const SINK_BATCH: usize = 256;

/// The [`Emit`] receiver of [`parse_fragments`] and [`stream_fragments`].
struct Records<'a> {
    /// The key of the innermost open node: the datastore's prefix and path
    /// key, except the entry keys of open list entries, which are known only
    /// when the entry ends and are inserted then into every record after it.
    key: Vec<u8>,
    stack: Vec<Open>,
    /// Fragment records in document order (one slot per node, filled when
    /// the node ends) and order-index records. With a sink, only those not
    /// handed to it yet: the records of open entries and the slots of open
    /// containers.
    out: Vec<(Vec<u8>, Vec<u8>)>,
    /// List entries open: while there is none, every record in `out` but the
    /// slots of open containers is final.
    open_entries: usize,
    sink: Option<&'a mut Sink<'a>>,
    /// What the sink failed with (the parse is stopped by a reason then).
    failed: Option<StoreError>,
    /// The schema path of the innermost open node, and the lists met, each
    /// once, as the parser read them.
    sp: String,
    lists: Vec<(String, ListInfo)>,
    /// Containers and lists begun at the top level.
    top_level: u64,
}

/// The order key after `last` for the next entry of a list being read.
fn next_order(last: Option<&[u8]>) -> std::result::Result<Vec<u8>, String> {
    keycode::order_between(last, None).ok_or_else(|| "no order key follows the previous entry's".to_string())
}

impl Records<'_> {
    fn open_node(&mut self, entry: bool) {
        self.stack.push(Open::Node {
            key_before: self.key.len(),
            sp_before: self.sp.len(),
            slot: self.out.len(),
            entry,
        });
        self.out.push((Vec::new(), Vec::new()));
        self.open_entries += usize::from(entry);
    }

    /// Hands the final records to the sink, keeping the slots of open
    /// containers (renumbered). Only while no entry is open.
    fn drain(&mut self) -> std::result::Result<(), String> {
        let Some(sink) = self.sink.as_mut() else { return Ok(()) };
        if self.open_entries > 0 || self.out.len() < SINK_BATCH {
            return Ok(());
        }
        let mut open = self.stack.iter().filter_map(|o| match o {
            Open::Node { slot, .. } => Some(*slot),
            Open::List(_) => None,
        });
        let mut next_open = open.next();
        let mut kept = Vec::new();
        let mut out = std::mem::take(&mut self.out);
        for (i, rec) in out.drain(..).enumerate() {
            if next_open == Some(i) {
                kept.push(rec);
                next_open = open.next();
            } else if self.failed.is_none() {
                if let Err(e) = sink(rec.0, rec.1) {
                    self.failed = Some(e);
                }
            }
        }
        out.extend(kept);
        self.out = out;
        let mut n = 0;
        for o in &mut self.stack {
            if let Open::Node { slot, .. } = o {
                *slot = n;
                n += 1;
            }
        }
        match self.failed {
            Some(_) => Err("storing the document failed".into()),
            None => Ok(()),
        }
    }
}

impl Emit for Records<'_> {
    fn begin_container(&mut self, name: &str) {
        self.top_level += u64::from(self.stack.is_empty());
        self.open_node(false);
        keys::push_name(&mut self.key, name);
        self.sp.push('/');
        self.sp.push_str(name);
    }

    fn begin_list(&mut self, name: &str, info: &ListInfo) {
        self.top_level += u64::from(self.stack.is_empty());
        self.stack.push(Open::List(ListState {
            key_before: self.key.len(),
            sp_before: self.sp.len(),
            info: info.clone(),
            last_order: None,
            entry_keys: Vec::new(),
            entry_ends: Vec::new(),
            seen: None,
        }));
        keys::push_name(&mut self.key, name);
        self.sp.push('/');
        self.sp.push_str(name);
        if !self.lists.iter().any(|(sp, _)| *sp == self.sp) {
            self.lists.push((self.sp.clone(), info.clone()));
        }
    }

    fn begin_entry(&mut self) {
        self.open_node(true);
    }

    fn end(&mut self, node: NodeView<'_>) -> std::result::Result<(), String> {
        let Some(Open::Node { key_before, sp_before, slot, entry }) = self.stack.pop() else {
            return Err("a node ends that did not begin".into());
        };
        self.sp.truncate(sp_before);
        if !entry {
            // A container.
            self.out[slot] = (self.key.clone(), fragment::encode_view(node, None));
            self.key.truncate(key_before);
            return self.drain();
        }
        self.open_entries -= 1;
        let Some(Open::List(list)) = self.stack.last_mut() else {
            return Err("a list entry ends outside a list".into());
        };
        // An entry: `self.key` is its list's key; `k` becomes the entry's.
        let at = self.key.len();
        let mut k = Vec::with_capacity(at + 64);
        k.extend_from_slice(&self.key);
        let mut order = None;
        if list.info.keys.is_empty() {
            let o = next_order(list.last_order.as_deref())?;
            keys::push_order(&mut k, &o);
            list.last_order = Some(o);
        } else {
            for name in &list.info.keys {
                match node.leaf(name) {
                    Some(value) => keycode::push_key_value(&mut k, &value.as_text()),
                    None => return Err(format!("list entry is missing key leaf `{name}`")),
                }
            }
            // Entries usually come in key order: then comparing with the
            // last one finds repeats; otherwise a set of all of them does.
            let n = list.entry_ends.len();
            let last = (n > 0).then(|| list.entry_key(n - 1));
            let repeated = if list.seen.is_none() && last.is_none_or(|last| last < &k[at..]) {
                false
            } else {
                if list.seen.is_none() {
                    list.seen = Some((0..n).map(|i| list.entry_key(i).to_vec()).collect());
                }
                !list.seen.as_mut().expect("seen").insert(k[at..].to_vec())
            };
            if repeated {
                let keys = keycode::decode_entry_key(&k[at..], list.info.keys.len()).unwrap_or_default();
                return Err(format!("duplicate list entry with keys {keys:?}"));
            }
            list.entry_keys.extend_from_slice(&k[at..]);
            list.entry_ends.push(list.entry_keys.len());
            if list.info.user_ordered {
                let o = next_order(list.last_order.as_deref())?;
                list.last_order = Some(o.clone());
                order = Some(o);
            }
        }
        let suffix = &k[at..];
        // The records of the entry's descendants lack its entry key.
        for (d, _) in &mut self.out[slot + 1..] {
            d.splice(at..at, suffix.iter().copied());
        }
        if let Some(o) = &order {
            // The order index: list key, order key, 0 → entry key.
            let mut ok = Vec::with_capacity(at + o.len() + 1);
            ok.push(0x20);
            ok.extend_from_slice(&self.key[1..]);
            ok.extend_from_slice(o);
            ok.push(0);
            self.out.push((ok, suffix.to_vec()));
        }
        let value = fragment::encode_view(node, order.as_deref());
        self.out[slot] = (k, value);
        self.drain()
    }

    fn end_list(&mut self) {
        if let Some(Open::List(list)) = self.stack.pop() {
            self.key.truncate(list.key_before);
            self.sp.truncate(list.sp_before);
        }
    }
}

impl<'a> Records<'a> {
    fn new(ds: Datastore, out: Vec<(Vec<u8>, Vec<u8>)>, sink: Option<&'a mut Sink<'a>>) -> Records<'a> {
        Records {
            key: keys::data_prefix(ds),
            stack: Vec::new(),
            out,
            open_entries: 0,
            sink,
            failed: None,
            sp: String::new(),
            lists: Vec::new(),
            top_level: 0,
        }
    }
}

/// Parses RFC 7951 document `text` into the fragment and order-index records
/// of datastore `ds`, as [`treeio::Fragments::write_subtree`] would write the
/// tree [`canopy_core::json::parse_str`] gives, with fresh order keys in
/// document order. Records come in no particular order.
///
/// # Errors
/// As [`canopy_core::json::parse_str`] (line and column in `text`).
pub fn parse_fragments(text: &str, schema: &dyn Schema, ds: Datastore) -> canopy_core::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    // About one record per 32 bytes of text or fewer: one allocation for most documents.
    let out = Vec::with_capacity(text.len() / 32);
    let mut r = Records::new(ds, out, None);
    let root = json::parse_emit(text, schema, &mut r)?;
    r.out.push((keys::data_prefix(ds), fragment::encode(&root, None)));
    Ok(r.out)
}

/// What [`stream_fragments`] read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Streamed {
    /// Records handed to the sink.
    pub records: u64,
    /// The lists the document holds (schema path, and the keys the parser
    /// read them with), each once, in the order met.
    pub lists: Vec<(String, ListInfo)>,
    /// The document's top-level nodes (leaves and leaf-lists of the root
    /// included), and whether the root carries metadata.
    pub top_level: u64,
    pub root_meta: bool,
}

/// Why [`stream_fragments`] failed.
#[derive(Debug)]
pub enum StreamError {
    /// The document: malformed, or refused as [`parse_fragments`] refuses it.
    Json(canopy_core::Error),
    /// The sink's own error.
    Sink(StoreError),
}

/// [`parse_fragments`] reading the document from `input` and handing every
/// record to `sink` as soon as it is final: the records of a list entry when
/// no entry around it is open any more, a container's when it ends, the
/// root's last. Neither the document nor its records are held whole: memory
/// is the parser's buffer, the open path and a few hundred records.
///
/// A document refused half way has handed some records to the sink: the
/// caller must drop what it gathered (a batch it does not commit).
///
/// # Errors
/// [`StreamError::Json`] as [`parse_fragments`] (line and column in the
/// input); [`StreamError::Sink`] with the first error of `sink`, after which
/// the sink is not called again.
pub fn stream_fragments<R: std::io::Read>(
    input: R,
    schema: &dyn Schema,
    ds: Datastore,
    sink: &mut Sink<'_>,
) -> std::result::Result<Streamed, StreamError> {
    let mut count = 0u64;
    let mut counted = |k: Vec<u8>, v: Vec<u8>| {
        count += 1;
        sink(k, v)
    };
    let mut r = Records::new(ds, Vec::with_capacity(2 * SINK_BATCH), Some(&mut counted));
    let parsed = json::parse_emit_reader(input, schema, &mut r);
    if let Some(e) = r.failed.take() {
        return Err(StreamError::Sink(e));
    }
    let root = parsed.map_err(StreamError::Json)?;
    let lists = std::mem::take(&mut r.lists);
    let top_level = r.top_level + root.children.len() as u64;
    let root_meta = !root.meta.is_empty();
    let rest = std::mem::take(&mut r.out);
    let sink = r.sink.take().expect("sink");
    for (k, v) in rest {
        sink(k, v).map_err(StreamError::Sink)?;
    }
    sink(keys::data_prefix(ds), fragment::encode(&root, None)).map_err(StreamError::Sink)?;
    drop(r);
    Ok(Streamed { records: count, lists, top_level, root_meta })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use canopy_core::json::{parse_str, to_string, WriteOptions};
    use canopy_core::Schemaless;

    use super::*;
    use crate::treeio::Fragments;

    fn schema() -> Schemaless {
        let mut s = Schemaless::default();
        s.lists.insert("/m:c/lst".into(), ListInfo::keyed(["k"]));
        s.lists.insert("/m:c/lst/sub".into(), ListInfo::keyed(["a", "b"]));
        s.lists.insert("/m:c/lst/uo".into(), ListInfo { keys: vec!["n".into()], user_ordered: true });
        s.lists.insert("/m:c/uo".into(), ListInfo { keys: vec!["n".into()], user_ordered: true });
        s.lists.insert("/m:c/known".into(), ListInfo::keyed(["k"]));
        s
    }

    /// Documents that exercise every path: members out of name order, entries
    /// out of key order, keys after nested lists (entry keys known late),
    /// user-ordered lists nested in entries, keyless lists, metadata, empty values.
    const DOCS: &[&str] = &[
        r#"{}"#,
        r#"{"m:top":1,"@m:top":{"m:a":"x"},"@":{"m:root":"r"}}"#,
        r#"{"m:c":{"z":true,"lst":[{"sub":[{"b":"2","a":1,"x":[null]}],"k":"10","c":{"d":{"e":"f"}}},{"k":"9","@":{"m:m":"1"}},{"k":"a b","uo":[{"n":"z"},{"n":"a","in":{"q":1}},{"n":"m"}]}],"a":"x"}}"#,
        r#"{"m:c":{"uo":[{"n":"3"},{"n":"1"},{"n":"2"}],"free":[{"x":1},{"x":1},{"y":{"z":[1,2]}}],"ll":[1,"2",true],"@ll":[null,{"m:o":"1"}]},"n:d":{"e":[]},"m:e":{}}"#,
        r#"{"m:c":{"known":[],"lst":[{"k":"1"}]}}"#,
        // Annotations inside emitted nodes, `[null]`, escapes, numbers with
        // exponents, members out of order in a large object, module changes.
        r#"{"m:c":{"lst":[{"@l":{"m:x":"y"},"l":[null],"k":"a\"b\u00e9","ll":[1,2E3],"@ll":[{"m:a":"b"}],"n:o":{"p":-0.5e-1}}],"e":[null],"@e":{"m:q":"1"},"@":{"m:w":true}}}"#,
        r#"{"m:c":{"j":1,"i":2,"h":3,"g":4,"f":5,"e":6,"d":7,"c":8,"b":9,"a":10,"k":{"z":"é","y":false}}}"#,
    ];

    fn tree_records(doc: &str, schema: &Schemaless) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let tree = parse_str(doc, schema).unwrap();
        let mut f = Fragments::new(Datastore::Startup);
        f.write_subtree(&[], &tree, None);
        f.into_records().into_iter().collect()
    }

    #[test]
    fn parsing_to_fragments_gives_what_the_tree_gives() {
        let schema = schema();
        for doc in DOCS {
            let streamed: BTreeMap<_, _> =
                parse_fragments(doc, &schema, Datastore::Startup).unwrap().into_iter().collect();
            assert_eq!(streamed, tree_records(doc, &schema), "{doc}");
        }
    }

    /// The tree stored `records` hold, built the way the engine loads it.
    fn stored_tree(records: &BTreeMap<Vec<u8>, Vec<u8>>, schema: &Schemaless) -> Container {
        let prefix = keys::data_prefix(Datastore::Startup);
        let mut items: Vec<(Vec<u8>, Option<Decoded>)> = records
            .iter()
            .filter_map(|(k, v)| {
                Some((k.strip_prefix(prefix.as_slice())?.to_vec(), Some(fragment::decode(v).unwrap())))
            })
            .collect();
        let mut root = items[0].1.take().unwrap().container;
        treeio::build(&mut root, &mut items[1..], 0, &mut String::new(), schema).unwrap();
        root
    }

    #[test]
    fn streaming_fragments_writes_what_the_tree_writer_writes() {
        let schema = schema();
        for doc in DOCS {
            let records = tree_records(doc, &schema);
            let tree = stored_tree(&records, &schema);
            for pretty in [false, true] {
                let mut s = JsonStream::new(Vec::new(), pretty, &schema);
                let prefix = keys::data_prefix(Datastore::Startup);
                for (k, v) in &records {
                    match k.strip_prefix(prefix.as_slice()) {
                        Some([]) => s.root(v).unwrap(),
                        Some(rel) => s.fragment(rel, v).unwrap(),
                        None => {} // order index
                    }
                }
                let text = String::from_utf8(s.finish().unwrap()).unwrap();
                assert_eq!(text, to_string(&tree, &WriteOptions { pretty, depth: None }), "{doc}");
            }
        }
    }

    #[test]
    fn errors_are_the_parsers_with_repeated_entries_placed() {
        let schema = schema();
        for doc in [
            r#"{"m:c":{"lst":[{"k":"1"},{"k":"2"},{"k":"1"}]}}"#,
            r#"{"m:c":{"lst":[{"k":"2"},{"k":"1"},{"k":"2"}]}}"#,
            r#"{"m:c":{"uo":[{"n":"2"},{"n":"1"},{"n":"2"}]}}"#,
            r#"{"m:c":{"lst":[{"k":"1"},{"x":"2"}]}}"#,
            r#"{"m:c":{"lst":[{"k":"1"}],"@lst":{"m:a":"1"}}}"#,
            r#"{"m:c":{"d":{},"d":{}}}"#,
            r#"{"m:c":{"lst":[{"k":"1"}],"lst":[]}}"#,
            r#"{"m:c":{"x":1,"lst":[{"k":"1","k":"2"}]}}"#,
            r#"{"m:c":{"lst":[{"k":"1"}]} x"#,
            r#"{"m:c":{"d":{},"@d":{"m:a":"1"}}}"#,
            r#"{"m:c":{"lst":[{"k":"1","@x":{"m:a":"1"}}]}}"#,
            r#"{"m:c":{"lst":[{"k":"1","l":1,"@l":[{"m:a":"1"}]}]}}"#,
            r#"{"m:c":{"ll":[1],"@ll":{"m:a":"1"}}}"#,
            r#"{"m:c":{"ll":[1],"@ll":[{"m:a":"1"},null]}}"#,
            r#"{"m:c":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"e":10}}"#,
            r#"{"m:c":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"m:j":10,"j":11}}"#,
            r#"{"m:c":{"lst":[{"k":"1","@":{},"@":{}}]}}"#,
            r#"{"m:c":{"lst":[{"k":{}}]}}"#,
            r#"{"m:c":{"lst":[{"k":null}]}}"#,
            r#"{"m:c":{"x":"a\qb"}}"#,
            r#"{"m:c":{"x":01}}"#,
            r#"{"m:c":{"x":"\ud800"}}"#,
            r#"{"m:c":{"lst":[{"k":"1","9x":1}]}}"#,
        ] {
            let tree = parse_str(doc, &schema).unwrap_err().to_string();
            let streamed = parse_fragments(doc, &schema, Datastore::Running).unwrap_err().to_string();
            assert_eq!(streamed, tree, "{doc}");
        }
        let e = parse_fragments(r#"{"m:c":{"lst":[{"k":"2"},{"k":"1"},{"k":"2"}]}}"#, &schema, Datastore::Running)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate list entry") && e.contains("column 36"), "{e}");
    }

    /// Reads one byte at a time: every refill of the parser's buffer.
    struct Trickle<'t>(&'t [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(slot)) => {
                    *slot = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

    fn streamed(doc: &str, schema: &Schemaless) -> std::result::Result<(Pairs, Streamed), StreamError> {
        let mut got = Vec::new();
        let s = stream_fragments(Trickle(doc.as_bytes()), schema, Datastore::Startup, &mut |k, v| {
            got.push((k, v));
            Ok(())
        })?;
        Ok((got, s))
    }

    /// A document of many entries, so that records go to the sink while
    /// containers around them are open: entries with nested keyed, keyless
    /// and user-ordered lists, leaves of the open containers after them, and
    /// a container after the list.
    fn large_doc() -> String {
        let mut d = String::from(r#"{"m:c":{"lst":["#);
        for i in (0..700).rev() {
            if i != 699 {
                d.push(',');
            }
            d.push_str(&format!(
                r#"{{"k":"{i}","sub":[{{"a":{i},"b":"x"}},{{"a":1,"b":"y"}}],"uo":[{{"n":"z{i}"}},{{"n":"a"}}],"free":[{{"x":{i}}}],"c":{{"d":{{"e":{i}}}}}}}"#
            ));
        }
        d.push_str(r#"],"z":1,"uo":[{"n":"2"},{"n":"1"}]},"m:top":true,"n:d":{"e":{"f":[1,2]}}}"#);
        d
    }

    #[test]
    fn streaming_from_a_reader_gives_the_same_records() {
        let schema = schema();
        let large = large_doc();
        for doc in DOCS.iter().copied().chain([large.as_str()]) {
            let (records, s) = streamed(doc, &schema).unwrap();
            let n = records.len();
            let records: BTreeMap<_, _> = records.into_iter().collect();
            assert_eq!(records.len(), n, "a record given twice: {doc}");
            let whole: BTreeMap<_, _> =
                parse_fragments(doc, &schema, Datastore::Startup).unwrap().into_iter().collect();
            assert_eq!(records, whole, "{doc}");
            assert_eq!(s.records, n as u64);
        }
        let (_, s) = streamed(DOCS[2], &schema).unwrap();
        let lists: Vec<&str> = s.lists.iter().map(|(sp, _)| sp.as_str()).collect();
        assert_eq!(lists, ["/m:c/lst", "/m:c/lst/sub", "/m:c/lst/uo"]);
        assert!(s.lists[2].1.user_ordered);
    }

    #[test]
    fn streaming_refuses_what_parsing_refuses_and_stops_at_a_sink_error() {
        let schema = schema();
        let mut large = large_doc();
        // A repeated key after records went to the sink.
        large = large.replace(r#"{"k":"3","#, r#"{"k":"650","#);
        for doc in [r#"{"m:c":{"lst":[{"k":"2"},{"k":"1"},{"k":"2"}]}}"#, r#"{"m:c":{"x":01}}"#, large.as_str()] {
            let whole = parse_fragments(doc, &schema, Datastore::Startup).unwrap_err().to_string();
            match streamed(doc, &schema) {
                Err(StreamError::Json(e)) => assert_eq!(e.to_string(), whole),
                other => panic!("{doc}: {:?}", other.map(|(r, _)| r.len())),
            }
        }
        let mut calls = 0;
        let doc = large_doc();
        let e = stream_fragments(doc.as_bytes(), &schema, Datastore::Startup, &mut |_, _| {
            calls += 1;
            match calls {
                300 => Err(StoreError::new(crate::ErrorKind::Io, "disk full")),
                _ => Ok(()),
            }
        });
        assert!(matches!(e, Err(StreamError::Sink(ref e)) if e.to_string().contains("disk full")), "{e:?}");
        assert_eq!(calls, 300);
    }

    #[test]
    fn a_fragment_without_its_parent_is_refused() {
        let schema = schema();
        let mut rel = Vec::new();
        keys::push_name(&mut rel, "m:c");
        keys::push_name(&mut rel, "x");
        let mut s = JsonStream::new(Vec::new(), false, &schema);
        let e = s.fragment(&rel, &fragment::encode(&Container::default(), None)).unwrap_err();
        assert!(e.to_string().contains("has no parent fragment"), "{e}");
    }
}
