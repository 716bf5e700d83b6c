//! The stored bytes of one fragment: a container's or list entry's metadata and
//! inline children (leaves, leaf-lists, anydata), and for entries of
//! user-ordered lists their order key.
//!
//! ```text
//! fragment := 0x01 (version) flags:u8 [order:bytes if flags&1] meta count:varint child*
//! child    := name:str kind:u8 body
//! kind 1   leaf      value meta
//! kind 2   leaf-list count:varint (value meta)*
//! kind 3   anydata   json:str meta
//! meta     := count:varint (name:str value:str)*
//! value    := 's' str | 'n' str | 't' | 'f' | 'e'
//! str      := len:varint bytes (UTF-8)      bytes := len:varint bytes
//! ```
//! Child containers and lists are not inside: they are fragments of their own.

use canopy_core::json::{ChildView, NodeView};
use canopy_core::tree::Children;
use canopy_core::{Container, LeafListEntry, Meta, Node, Value, ValueRef};

use crate::error::{Result, StoreError};

const VERSION: u8 = 1;
const HAS_ORDER: u8 = 1;

fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn put_value(out: &mut Vec<u8>, v: ValueRef<'_>) {
    match v {
        ValueRef::String(s) => {
            out.push(b's');
            put_bytes(out, s.as_bytes());
        }
        ValueRef::Number(n) => {
            out.push(b'n');
            put_bytes(out, n.as_bytes());
        }
        ValueRef::Bool(true) => out.push(b't'),
        ValueRef::Bool(false) => out.push(b'f'),
        ValueRef::Empty => out.push(b'e'),
    }
}

fn put_meta(out: &mut Vec<u8>, m: &Meta) {
    put_varint(out, m.len() as u64);
    for (k, v) in m {
        put_bytes(out, k.as_bytes());
        put_bytes(out, v.as_bytes());
    }
}

/// Encodes the fragment of `c`: its metadata and inline children.
pub fn encode(c: &Container, order: Option<&[u8]>) -> Vec<u8> {
    let inline = c.children.iter().filter(|(_, n)| n.is_inline());
    // Room for what is written, so the buffer is allocated once.
    let (count, size) = inline.clone().fold((0, 0), |(n, size), (name, node)| (n + 1, size + inline_size(name, node)));
    let mut out = header(&c.meta, order, count, size);
    for (name, node) in inline {
        put_child(&mut out, name, node);
    }
    out
}

/// Encodes the fragment of a node the parser hands over (what [`encode`]
/// gives for the same node as a [`Container`]).
pub fn encode_view(v: NodeView<'_>, order: Option<&[u8]>) -> Vec<u8> {
    let inline = v.children().filter(|(_, c)| !matches!(c, ChildView::Other(n) if !n.is_inline()));
    let mut out = header(v.meta(), order, inline.clone().count(), 0);
    for (name, child) in inline {
        match child {
            ChildView::Leaf(value, meta) => put_leaf(&mut out, name, value, meta),
            ChildView::Other(node) => put_child(&mut out, name, node),
        }
    }
    out
}

/// About the bytes an inline child takes (no less for leaves and
/// leaf-lists without metadata).
fn inline_size(name: &str, node: &Node) -> usize {
    let value = |v: &canopy_core::Value| v.as_text().len() + 3;
    name.len()
        + 3
        + match node {
            Node::Leaf { value: v, .. } => value(v),
            Node::LeafList(entries) => 3 + entries.iter().map(|e| value(&e.value)).sum::<usize>(),
            _ => 16,
        }
}

/// The fragment's header, in a buffer with room for `body` more bytes.
fn header(meta: &Meta, order: Option<&[u8]>, children: usize, body: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + body);
    out.push(VERSION);
    out.push(if order.is_some() { HAS_ORDER } else { 0 });
    if let Some(o) = order {
        put_bytes(&mut out, o);
    }
    put_meta(&mut out, meta);
    put_varint(&mut out, children as u64);
    out
}

fn put_leaf(out: &mut Vec<u8>, name: &str, value: ValueRef<'_>, meta: &Meta) {
    put_bytes(out, name.as_bytes());
    out.push(1);
    put_value(out, value);
    put_meta(out, meta);
}

/// An inline child.
fn put_child(out: &mut Vec<u8>, name: &str, node: &Node) {
    match node {
        Node::Leaf { value, meta } => put_leaf(out, name, value.as_ref(), meta),
        Node::LeafList(entries) => {
            put_bytes(out, name.as_bytes());
            out.push(2);
            put_varint(out, entries.len() as u64);
            for e in entries {
                put_value(out, e.value.as_ref());
                put_meta(out, &e.meta);
            }
        }
        Node::AnyData { value, meta } => {
            put_bytes(out, name.as_bytes());
            out.push(3);
            put_bytes(out, value.to_string().as_bytes());
            put_meta(out, meta);
        }
        Node::Container(_) | Node::List(_) => {} // not inline: callers filter them out
    }
}

/// A decoded fragment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Decoded {
    /// The container with its metadata and inline children only.
    pub container: Container,
    /// The order key, for entries of user-ordered lists.
    pub order: Option<Vec<u8>>,
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    /// `b` as text, when all of it is UTF-8: strings are then cut from it
    /// without checking each one again.
    text: Option<&'a str>,
}

impl<'a> Reader<'a> {
    fn err(&self, what: &str) -> StoreError {
        StoreError::corrupted(format!("fragment damaged at byte {}: {what}", self.pos))
    }

    #[inline]
    fn byte(&mut self) -> Result<u8> {
        let b = *self.b.get(self.pos).ok_or_else(|| self.err("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    fn varint(&mut self) -> Result<u64> {
        // Most lengths and counts take one byte.
        if let Some(&b) = self.b.get(self.pos).filter(|&&b| b < 0x80) {
            self.pos += 1;
            return Ok(u64::from(b));
        }
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7F) << shift;
            if b < 0x80 {
                return Ok(n);
            }
        }
        Err(self.err("varint too long"))
    }

    #[inline]
    fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.varint()? as usize;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| self.err("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// Two strings of under 128 bytes each (an annotation's name and
    /// value, as they mostly are), read at once; `None` (nothing read) for
    /// anything else, which the general way then reads or refuses.
    #[inline]
    fn short_pair(&mut self) -> Option<(&'a str, &'a str)> {
        let b = self.b;
        let k_at = self.pos + 1;
        let k_len = usize::from(*b.get(self.pos).filter(|&&n| n < 0x80)?);
        let v_at = k_at + k_len + 1;
        let v_len = usize::from(*b.get(v_at - 1).filter(|&&n| n < 0x80)?);
        let end = v_at + v_len;
        let (k, v) = (b.get(k_at..v_at - 1)?, b.get(v_at..end)?);
        let (k, v) = match self.text {
            Some(t) => (t.get(k_at..v_at - 1)?, t.get(v_at..end)?),
            None => (std::str::from_utf8(k).ok()?, std::str::from_utf8(v).ok()?),
        };
        self.pos = end;
        Some((k, v))
    }

    fn value(&mut self) -> Result<Value> {
        Ok(match self.byte()? {
            b's' => Value::String(self.str_ref()?.into()),
            b'n' => Value::Number(self.str_ref()?.into()),
            b't' => Value::Bool(true),
            b'f' => Value::Bool(false),
            b'e' => Value::Empty,
            _ => return Err(self.err("unknown value tag")),
        })
    }

    /// Metadata, `None` when there is none (most nodes: no map to make and drop).
    #[inline]
    fn meta_opt(&mut self) -> Result<Option<Meta>> {
        if self.b.get(self.pos) == Some(&0) {
            self.pos += 1;
            return Ok(None);
        }
        self.meta().map(Some)
    }

    fn meta(&mut self) -> Result<Meta> {
        let n = self.varint()?;
        // Each annotation takes at least 2 bytes: do not trust a count the bytes cannot hold.
        let mut m = Meta::with_capacity((n as usize).min(self.b.len().saturating_sub(self.pos) / 2));
        for _ in 0..n {
            let (k, v) = match self.short_pair() {
                Some(kv) => kv,
                None => (self.str_ref()?, self.str_ref()?),
            };
            m.insert(k, v);
        }
        Ok(m)
    }
}

/// A fragment that names child `name` twice.
fn child_twice(name: &str) -> StoreError {
    StoreError::corrupted(format!("fragment damaged: child `{name}` twice"))
}

/// Fragments with at least this many inline children (a key set of
/// hundreds of thousands of leaves) are decoded in two halves on two threads.
const HALVES_FROM: u64 = 32_768;

/// Decodes a fragment.
///
/// # Errors
/// `Corrupted` when the bytes are not a fragment of a known version.
pub fn decode(b: &[u8]) -> Result<Decoded> {
    let (order, meta, inline) = open(b)?;
    let children = match inline.left >= HALVES_FROM {
        true => decode_halves(b, inline)?,
        false => decode_children(b, inline, inline.left)?,
    };
    Ok(Decoded { container: Container { meta, children }, order: order.map(<[u8]>::to_vec) })
}

/// The children `inline` reads from `b`, every one of them (`b` ends where
/// the last one does), in a map with room for `room` children.
fn decode_children(b: &[u8], mut inline: Inline, room: u64) -> Result<Children> {
    // Every child takes at least 3 bytes: do not trust a count the bytes cannot hold.
    let cap = (room as usize).min(b.len().saturating_sub(inline.pos) / 3);
    let mut children = Children::with_capacity(cap);
    let text = std::str::from_utf8(b).ok();
    loop {
        if let Some((name, value)) = text.and_then(|t| inline.next_plain_leaf(t)) {
            if children.insert(name.into(), Node::leaf(value.to_value())).is_some() {
                return Err(child_twice(name));
            }
            continue;
        }
        let next = match text {
            Some(t) => inline.next_text(t)?,
            None => inline.next(b)?,
        };
        let Some((name, child)) = next else { break };
        let node = match child {
            ChildRef::Leaf(value, meta) => Node::Leaf { value: value.to_value(), meta: meta.unwrap_or_default() },
            ChildRef::Other(node) => node,
        };
        if children.insert(name.into(), node).is_some() {
            return Err(child_twice(name));
        }
    }
    Ok(children)
}

/// [`decode_children`] in two halves: the first half's children are
/// skipped over (lengths read, nothing decoded) to find where the second
/// starts, which a second thread decodes meanwhile. Without a thread to be
/// had, the second half is decoded after the first.
fn decode_halves(b: &[u8], inline: Inline) -> Result<Children> {
    let half = inline.left / 2;
    let mut second = Inline { pos: inline.pos, left: inline.left };
    for _ in 0..half {
        second.skip(b)?;
    }
    let mid = second.pos;
    let first = Inline { pos: inline.pos, left: half };
    let (head, tail) = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("canopy-decode".into())
            .spawn_scoped(s, || decode_children(b, Inline { pos: mid, left: second.left }, second.left));
        // The first half's map takes the second's children in without growing.
        let head = decode_children(&b[..mid], first, inline.left);
        let tail = match other {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(_) => decode_children(b, Inline { pos: mid, left: second.left }, second.left),
        };
        (head, tail)
    });
    let mut children = head?;
    children.append(tail?).map_err(|name| child_twice(&name))?;
    Ok(children)
}

impl<'a> Reader<'a> {
    #[inline]
    fn str_ref(&mut self) -> Result<&'a str> {
        let b = self.bytes()?;
        // A piece of valid text between two character boundaries is text.
        if let Some(s) = self.text.and_then(|t| t.get(self.pos - b.len()..self.pos)) {
            return Ok(s);
        }
        std::str::from_utf8(b).map_err(|_| self.err("invalid UTF-8"))
    }

    #[inline]
    fn value_ref(&mut self) -> Result<ValueRef<'a>> {
        Ok(match self.byte()? {
            b's' => ValueRef::String(self.str_ref()?),
            b'n' => ValueRef::Number(self.str_ref()?),
            b't' => ValueRef::Bool(true),
            b'f' => ValueRef::Bool(false),
            b'e' => ValueRef::Empty,
            _ => return Err(self.err("unknown value tag")),
        })
    }

    fn child(&mut self) -> Result<Node> {
        Ok(match self.byte()? {
            1 => {
                let value = self.value()?;
                Node::Leaf { value, meta: self.meta()? }
            }
            2 => {
                let count = self.varint()?;
                let mut v = Vec::with_capacity(count.min(1024) as usize);
                for _ in 0..count {
                    let value = self.value()?;
                    v.push(LeafListEntry { value, meta: self.meta()? });
                }
                Node::LeafList(v)
            }
            3 => {
                let text = self.bytes()?;
                let value = serde_json::from_slice(text).map_err(|_| self.err("anydata is not JSON"))?;
                Node::AnyData { value: Box::new(value), meta: self.meta()? }
            }
            _ => return Err(self.err("unknown child kind")),
        })
    }
}

/// An inline child read in place: a leaf borrows its value from the bytes
/// (its metadata `None` when it has none); leaf-lists and anydata (rarer)
/// are decoded.
pub enum ChildRef<'a> {
    Leaf(ValueRef<'a>, Option<Meta>),
    Other(Node),
}

/// A cursor over the inline children of a fragment's bytes, so a reader can
/// take them one at a time (in name order) without decoding them all first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inline {
    pos: usize,
    left: u64,
}

/// Opens a fragment: its order key, its metadata, and a cursor over its
/// inline children.
///
/// # Errors
/// `Corrupted` when the bytes are not a fragment of a known version.
pub fn open(b: &[u8]) -> Result<(Option<&[u8]>, Meta, Inline)> {
    let mut r = Reader { b, pos: 0, text: None };
    let version = r.byte()?;
    if version != VERSION {
        return Err(r.err(&format!("unknown fragment version {version}")));
    }
    let flags = r.byte()?;
    if flags & !HAS_ORDER != 0 {
        return Err(r.err("unknown flags"));
    }
    let order = if flags & HAS_ORDER != 0 {
        let at = r.pos;
        let o = r.bytes()?;
        if !canopy_core::keycode::is_order_key(o) {
            r.pos = at;
            return Err(r.err(&format!("malformed order key `{}`", crate::keys::hex(o))));
        }
        Some(o)
    } else {
        None
    };
    let meta = r.meta()?;
    let left = r.varint()?;
    if left == 0 && r.pos != b.len() {
        return Err(r.err("trailing bytes"));
    }
    Ok((order, meta, Inline { pos: r.pos, left }))
}

impl Inline {
    /// No children.
    pub fn empty() -> Inline {
        Inline::default()
    }

    /// The name of the next child, without taking it.
    ///
    /// # Errors
    /// `Corrupted` when the bytes are damaged.
    pub fn peek_name<'a>(&self, b: &'a [u8]) -> Result<Option<&'a str>> {
        if self.left == 0 {
            return Ok(None);
        }
        Reader { b, pos: self.pos, text: None }.str_ref().map(Some)
    }

    /// Moves past the next child, reading only lengths where it can (a
    /// leaf's name, value and metadata are not decoded, nor checked as text).
    fn skip(&mut self, b: &[u8]) -> Result<()> {
        if self.left == 0 {
            return Err(Reader { b, pos: self.pos, text: None }.err("fewer children than counted"));
        }
        let mut r = Reader { b, pos: self.pos, text: None };
        r.bytes()?;
        if r.b.get(r.pos) == Some(&1) {
            r.pos += 1;
            if matches!(r.byte()?, b's' | b'n') {
                r.bytes()?;
            }
            for _ in 0..r.varint()? {
                r.bytes()?;
                r.bytes()?;
            }
        } else {
            r.child()?;
        }
        self.pos = r.pos;
        self.left -= 1;
        Ok(())
    }

    /// Takes the next child.
    ///
    /// # Errors
    /// `Corrupted` when the bytes are damaged (including trailing bytes after
    /// the last child).
    #[inline]
    pub fn next<'a>(&mut self, b: &'a [u8]) -> Result<Option<(&'a str, ChildRef<'a>)>> {
        self.take(Reader { b, pos: self.pos, text: None })
    }

    /// [`next`](Self::next) over a fragment's bytes that are all valid
    /// UTF-8, as one string: names and string values are cut from it without
    /// checking each one again.
    ///
    /// # Errors
    /// As [`next`](Self::next).
    #[inline]
    pub fn next_text<'a>(&mut self, t: &'a str) -> Result<Option<(&'a str, ChildRef<'a>)>> {
        self.take(Reader { b: t.as_bytes(), pos: self.pos, text: Some(t) })
    }

    /// The next child when it is a leaf without metadata whose name and
    /// value are shorter than 128 bytes, read from a fragment that is all
    /// text (as [`next_text`](Self::next_text) takes it): its name and value.
    /// `None` when the next child is anything else, the last one, or damaged;
    /// `next_text` then reads it (and reports the damage). Most children of
    /// most fragments are such leaves: this reads one without building the
    /// general answer.
    #[inline(always)]
    pub fn next_plain_leaf<'a>(&mut self, t: &'a str) -> Option<(&'a str, ValueRef<'a>)> {
        // The last child goes the general way, which checks for trailing bytes.
        if self.left <= 1 {
            return None;
        }
        let b = t.as_bytes();
        let p = self.pos;
        let n = usize::from(*b.get(p)?);
        if n >= 0x80 {
            return None;
        }
        let name_end = p + 1 + n;
        let name = t.get(p + 1..name_end)?;
        if *b.get(name_end)? != 1 {
            return None;
        }
        let tag = *b.get(name_end + 1)?;
        let (value, end) = match tag {
            b's' | b'n' => {
                let m = usize::from(*b.get(name_end + 2)?);
                if m >= 0x80 {
                    return None;
                }
                let at = name_end + 3;
                let s = t.get(at..at + m)?;
                (if tag == b's' { ValueRef::String(s) } else { ValueRef::Number(s) }, at + m)
            }
            b't' => (ValueRef::Bool(true), name_end + 2),
            b'f' => (ValueRef::Bool(false), name_end + 2),
            b'e' => (ValueRef::Empty, name_end + 2),
            _ => return None,
        };
        // No metadata: a count of zero.
        if *b.get(end)? != 0 {
            return None;
        }
        self.pos = end + 1;
        self.left -= 1;
        Some((name, value))
    }

    #[inline]
    fn take<'a>(&mut self, mut r: Reader<'a>) -> Result<Option<(&'a str, ChildRef<'a>)>> {
        if self.left == 0 {
            return Ok(None);
        }
        let name = r.str_ref()?;
        let child = if r.b.get(r.pos) == Some(&1) {
            r.pos += 1;
            let v = r.value_ref()?;
            ChildRef::Leaf(v, r.meta_opt()?)
        } else {
            ChildRef::Other(r.child()?)
        };
        self.pos = r.pos;
        self.left -= 1;
        if self.left == 0 && r.pos != r.b.len() {
            return Err(r.err("trailing bytes"));
        }
        Ok(Some((name, child)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fragment of more children than [`HALVES_FROM`] is decoded in two
    /// halves: the same container as one pass would give, damage anywhere
    /// refused or decoded without a panic, a name in both halves refused,
    /// and names out of order (a damaged or foreign fragment) still sorted.
    #[test]
    fn big_fragments_decode_in_halves() {
        let n = HALVES_FROM as usize + 1001;
        let mut c = Container::default();
        for i in 0..n {
            let meta = match i % 3 {
                0 => Meta::new(),
                _ => [("m:a", format!("v{i}")), ("m:b", "x".to_string())].into(),
            };
            c.children
                .insert(format!("k{i:06}").into(), Node::Leaf { value: Value::String(format!("{i}").into()), meta });
        }
        c.children.insert(
            "k010000x".into(),
            Node::LeafList(vec![LeafListEntry { value: Value::Bool(true), meta: Meta::new() }]),
        );
        let enc = encode(&c, None);
        assert_eq!(decode(&enc).unwrap().container, c);
        for cut in (0..enc.len()).step_by(enc.len() / 23) {
            assert!(decode(&enc[..cut]).is_err(), "truncated at {cut} accepted");
        }
        for i in (0..enc.len()).step_by(enc.len() / 41) {
            let mut bad = enc.clone();
            bad[i] ^= 0xFF;
            let _ = decode(&bad); // must not panic
        }
        let rename = |from: &str, to: &str| {
            let at = enc.windows(from.len()).position(|w| w == from.as_bytes()).unwrap();
            let mut b = enc.clone();
            b[at..at + to.len()].copy_from_slice(to.as_bytes());
            b
        };
        let last = format!("k{:06}", n - 1);
        match decode(&rename(&last, "k000000")) {
            Err(e) => assert!(e.to_string().contains("`k000000` twice"), "{e}"),
            Ok(_) => panic!("a name in both halves accepted"),
        }
        let d = decode(&rename(&last, "a000000")).unwrap().container;
        assert_eq!(d.children.len(), c.children.len());
        assert_eq!(d.children.keys().next().map(|k| k.as_str()), Some("a000000"));
        assert!(d.children.keys().zip(d.children.keys().skip(1)).all(|(a, b)| a < b));
    }

    #[test]
    fn round_trip_and_rejects_damage() {
        let mut c = Container::default();
        c.meta.insert("m:a", "x");
        c.children.insert("l".into(), Node::leaf(Value::String("v".into())));
        c.children.insert("n".into(), Node::leaf(Value::Number("-1.5".into())));
        c.children.insert("e".into(), Node::leaf(Value::Empty));
        c.children.insert(
            "ll".into(),
            Node::LeafList(vec![LeafListEntry { value: Value::Bool(true), meta: [("m:o", "1")].into() }]),
        );
        c.children.insert(
            "any".into(),
            Node::AnyData { value: Box::new(serde_json::json!({"a": [1, 2]})), meta: Meta::new() },
        );
        let enc = encode(&c, Some(&[0x83, 1, 2, 3]));
        let d = decode(&enc).unwrap();
        assert_eq!(d.container, c);
        assert_eq!(d.order.as_deref(), Some(&[0x83, 1, 2, 3][..]));
        for cut in 0..enc.len() {
            assert!(decode(&enc[..cut]).is_err(), "truncated at {cut} accepted");
        }
        let mut extra = enc.clone();
        extra.push(0);
        assert!(decode(&extra).is_err());
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0xFF;
            let _ = decode(&bad); // must not panic
            let _ = read_in_place(&bad);
        }
        // Read in place, the same children in the same order.
        let (order, meta, _) = open(&enc).unwrap();
        assert_eq!((order, &meta), (Some(&[0x83, 1, 2, 3][..]), &c.meta));
        let names: Vec<String> = read_in_place(&enc).unwrap();
        assert_eq!(names, c.children.keys().cloned().collect::<Vec<_>>());
        for cut in 0..enc.len() {
            assert!(read_in_place(&enc[..cut]).is_err(), "truncated at {cut} accepted in place");
        }
    }

    /// The short way for plain leaves reads what the general way reads, and
    /// leaves to it what it does not take, damaged bytes included.
    #[test]
    fn plain_leaves_read_as_the_general_way_reads_them() {
        let mut c = Container::default();
        c.children.insert("a".into(), Node::leaf(Value::String("x".into())));
        c.children.insert("b".into(), Node::leaf(Value::Number("12".into())));
        c.children.insert("c".into(), Node::leaf(Value::Bool(true)));
        c.children.insert("d".into(), Node::leaf(Value::Bool(false)));
        c.children.insert("e".into(), Node::leaf(Value::Empty));
        c.children.insert("g".into(), Node::Leaf { value: Value::String("m".into()), meta: [("m:o", "1")].into() });
        c.children.insert("i".into(), Node::leaf(Value::String("é".into())));
        c.children.insert("z".into(), Node::leaf(Value::String("last".into())));
        let enc = encode(&c, None);
        let t = std::str::from_utf8(&enc).unwrap();
        let (_, _, mut fast) = open(&enc).unwrap();
        let (_, _, mut general) = open(&enc).unwrap();
        let mut short = Vec::new();
        loop {
            let mut probe = fast;
            let quick = probe.next_plain_leaf(t).map(|(n, v)| (n.to_string(), v.to_value()));
            let Some((name, child)) = general.next_text(t).unwrap() else {
                assert!(quick.is_none());
                break;
            };
            let ChildRef::Leaf(value, meta) = child else { panic!("only leaves here") };
            match quick {
                Some(q) => {
                    assert_eq!(q, (name.to_string(), value.to_value()));
                    assert!(meta.is_none());
                    short.push(q.0);
                    fast = probe;
                }
                None => {
                    fast.next_text(t).unwrap();
                }
            }
            assert_eq!((fast.pos, fast.left), (general.pos, general.left));
        }
        // The leaf with metadata and the last leaf go the general way. (A
        // length over 127 takes two bytes that are not UTF-8: a fragment
        // holding one is not text, and is read the general way.)
        assert_eq!(short, ["a", "b", "c", "d", "e", "i"]);
        assert_eq!(decode(&enc).unwrap().container, c);
        for i in 0..enc.len() {
            for bad_byte in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
                let mut bad = enc.clone();
                bad[i] = bad_byte;
                let _ = decode(&bad); // must not panic
                if let (Ok(t), Ok((_, _, mut inline))) = (std::str::from_utf8(&bad), open(&bad)) {
                    while inline.next_plain_leaf(t).is_some() {}
                }
            }
        }
    }

    fn read_in_place(b: &[u8]) -> Result<Vec<String>> {
        let (_, _, mut inline) = open(b)?;
        let mut names = Vec::new();
        while let Some(name) = inline.peek_name(b)? {
            let (n, child) = inline.next(b)?.expect("peeked");
            assert_eq!(n, name);
            if let ChildRef::Leaf(v, _) = child {
                let _ = v.to_value();
            }
            names.push(n.to_string());
        }
        Ok(names)
    }
}
