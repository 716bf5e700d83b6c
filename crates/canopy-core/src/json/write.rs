//! The RFC 7951 writer: [`JsonWriter`] turns events in document order into
//! text through one buffer; [`write_container`] walks a tree and drives it.

use std::io::{self, Write};

use super::escape_pieces;
use crate::tree::{Container, LeafListEntry, Node};
use crate::value::{Meta, Value, ValueRef};

/// Bytes gathered before they are handed to the output.
const FLUSH_AT: usize = 64 * 1024;

/// How [`write_container`] writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Two-space indentation and one member per line; otherwise no whitespace.
    pub pretty: bool,
    /// Levels of data nodes below the written node to include; `None` for all.
    ///
    /// The written node's children are level 1, their children level 2, and
    /// so on; leaf-list entries are at their leaf-list's level, list entries at
    /// their list's. Nodes up to level `depth` are written; a container or list
    /// entry at level `depth` is written without its children, except that a
    /// list entry keeps its key leaves so that it stays identifiable. So
    /// `Some(0)` writes `{}`, and `Some(1)` writes the top-level leaves,
    /// leaf-lists and anydata, top-level containers as `{}`, and top-level list
    /// entries with their keys only. Metadata of written nodes is always written.
    pub depth: Option<usize>,
}

/// One open object or array.
#[derive(Clone, Copy, Debug)]
struct Frame {
    array: bool,
    /// Whether a member or element was written (so the next needs a comma).
    filled: bool,
}

/// A streaming RFC 7951 writer, driven by events in document order.
///
/// [`JsonWriter::new`] opens the document's top-level object; members are then
/// written into the innermost open object ([`begin_container`](Self::begin_container),
/// [`begin_list`](Self::begin_list), [`leaf`](Self::leaf), [`leaf_list`](Self::leaf_list),
/// [`anydata`](Self::anydata), [`meta`](Self::meta)), entries into the innermost
/// open list ([`begin_entry`](Self::begin_entry)), and [`end`](Self::end) closes
/// the innermost open container, entry or list. [`finish`](Self::finish)
/// closes what is still open and flushes. Names are written as given: they must
/// be canonical (prefixed only where the module changes), which RFC 7951 requires
/// of member names too. Commas, indentation and escaping are the writer's.
///
/// Output is gathered in a buffer of about 64 KiB and handed to the writer in
/// large pieces; a writer dropped without `finish` may not have written all.
#[derive(Debug)]
pub struct JsonWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    pretty: bool,
    stack: Vec<Frame>,
}

impl<W: Write> JsonWriter<W> {
    /// A writer whose document starts with `{` (the top-level object).
    pub fn new(out: W, pretty: bool) -> JsonWriter<W> {
        let mut w = JsonWriter { out, buf: Vec::with_capacity(FLUSH_AT + 1024), pretty, stack: Vec::new() };
        w.open(b'{');
        w
    }

    /// Opens container `name`: following members go into it until [`end`](Self::end).
    ///
    /// # Errors
    /// An I/O error of the output, or [`io::ErrorKind::InvalidInput`] when the
    /// innermost open thing is a list (events out of order).
    pub fn begin_container(&mut self, name: &str) -> io::Result<()> {
        self.key(name)?;
        self.open(b'{');
        Ok(())
    }

    /// Opens list `name`: following entries go into it until [`end`](Self::end).
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn begin_list(&mut self, name: &str) -> io::Result<()> {
        self.key(name)?;
        self.open(b'[');
        Ok(())
    }

    /// Opens an entry of the innermost open list.
    ///
    /// # Errors
    /// An I/O error, or [`io::ErrorKind::InvalidInput`] when no list is the
    /// innermost open thing.
    pub fn begin_entry(&mut self) -> io::Result<()> {
        self.element()?;
        self.open(b'{');
        Ok(())
    }

    /// Writes leaf `name` and, when `meta` is not empty, its annotation `@name`.
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn leaf(&mut self, name: &str, value: &Value, meta: &Meta) -> io::Result<()> {
        self.key(name)?;
        self.value(value);
        self.node_meta(name, meta)
    }

    /// Writes leaf `name` from a borrowed value (see [`leaf`](Self::leaf)).
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn leaf_ref(&mut self, name: &str, value: ValueRef<'_>, meta: &Meta) -> io::Result<()> {
        self.key(name)?;
        match value {
            ValueRef::String(s) => self.string(s),
            ValueRef::Number(n) => self.buf.extend_from_slice(n.as_bytes()),
            ValueRef::Bool(true) => self.buf.extend_from_slice(b"true"),
            ValueRef::Bool(false) => self.buf.extend_from_slice(b"false"),
            ValueRef::Empty => self.buf.extend_from_slice(b"[null]"),
        }
        self.node_meta(name, meta)
    }

    /// Writes leaf-list `name` and, when an entry has metadata, its annotation
    /// `@name` (an array with one object or `null` per entry).
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn leaf_list(&mut self, name: &str, entries: &[LeafListEntry]) -> io::Result<()> {
        self.key(name)?;
        self.open(b'[');
        for e in entries {
            self.element()?;
            self.value(&e.value);
        }
        self.close()?;
        if entries.iter().any(|e| !e.meta.is_empty()) {
            self.annotation_key(name)?;
            self.open(b'[');
            for e in entries {
                self.element()?;
                if e.meta.is_empty() {
                    self.buf.extend_from_slice(b"null");
                } else {
                    self.meta_object(&e.meta)?;
                }
            }
            self.close()?;
        }
        self.maybe_flush()
    }

    /// Writes anydata `name` (any JSON value) and its annotation.
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn anydata(&mut self, name: &str, value: &serde_json::Value, meta: &Meta) -> io::Result<()> {
        self.key(name)?;
        self.any(value)?;
        self.node_meta(name, meta)
    }

    /// Writes the metadata of the innermost open container or entry (member
    /// `"@"`); nothing when `meta` is empty. Call it at most once per object.
    ///
    /// # Errors
    /// As [`begin_container`](Self::begin_container).
    pub fn meta(&mut self, meta: &Meta) -> io::Result<()> {
        if meta.is_empty() {
            return Ok(());
        }
        self.key("@")?;
        self.meta_object(meta)
    }

    /// Closes the innermost open container, entry or list.
    ///
    /// # Errors
    /// An I/O error, or [`io::ErrorKind::InvalidInput`] when only the
    /// top-level object is open (close it with [`finish`](Self::finish)).
    pub fn end(&mut self) -> io::Result<()> {
        if self.stack.len() <= 1 {
            return Err(misuse("end() without an open container, entry or list"));
        }
        self.close()?;
        self.maybe_flush()
    }

    /// Closes everything still open, including the top-level object, flushes
    /// and returns the output.
    ///
    /// # Errors
    /// An I/O error of the output.
    pub fn finish(mut self) -> io::Result<W> {
        while !self.stack.is_empty() {
            self.close()?;
        }
        if self.pretty {
            self.buf.push(b'\n');
        }
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()?;
        Ok(self.out)
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    fn open(&mut self, b: u8) {
        self.buf.push(b);
        self.stack.push(Frame { array: b == b'[', filled: false });
    }

    fn close(&mut self) -> io::Result<()> {
        let f = self.stack.pop().ok_or_else(|| misuse("nothing is open"))?;
        if f.filled {
            self.newline();
        }
        self.buf.push(if f.array { b']' } else { b'}' });
        Ok(())
    }

    fn newline(&mut self) {
        if self.pretty {
            self.buf.push(b'\n');
            for _ in 0..self.stack.len() {
                self.buf.extend_from_slice(b"  ");
            }
        }
    }

    /// Starts the next member or element of the innermost frame, which must be
    /// an array when `array` and an object otherwise.
    fn item(&mut self, array: bool) -> io::Result<()> {
        let f = self.stack.last_mut().ok_or_else(|| misuse("the document is finished"))?;
        if f.array != array {
            return Err(misuse(if array {
                "an entry or element must go into a list"
            } else {
                "a member must go into a container or entry, not directly into a list"
            }));
        }
        let comma = std::mem::replace(&mut f.filled, true);
        if comma {
            self.buf.push(b',');
        }
        self.newline();
        Ok(())
    }

    fn element(&mut self) -> io::Result<()> {
        self.item(true)
    }

    fn key(&mut self, name: &str) -> io::Result<()> {
        self.item(false)?;
        self.string(name);
        self.colon();
        Ok(())
    }

    fn annotation_key(&mut self, name: &str) -> io::Result<()> {
        self.item(false)?;
        self.buf.extend_from_slice(b"\"@");
        escape_pieces(name, |p| self.buf.extend_from_slice(p.as_bytes()));
        self.buf.push(b'"');
        self.colon();
        Ok(())
    }

    fn colon(&mut self) {
        if self.pretty {
            self.buf.extend_from_slice(b": ");
        } else {
            self.buf.push(b':');
        }
    }

    fn string(&mut self, s: &str) {
        self.buf.push(b'"');
        escape_pieces(s, |p| self.buf.extend_from_slice(p.as_bytes()));
        self.buf.push(b'"');
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::String(s) => self.string(s),
            Value::Number(n) => self.buf.extend_from_slice(n.as_bytes()),
            Value::Bool(true) => self.buf.extend_from_slice(b"true"),
            Value::Bool(false) => self.buf.extend_from_slice(b"false"),
            Value::Empty => self.buf.extend_from_slice(b"[null]"),
        }
    }

    /// `"@name": {...}` after a leaf or anydata with metadata.
    fn node_meta(&mut self, name: &str, meta: &Meta) -> io::Result<()> {
        if !meta.is_empty() {
            self.annotation_key(name)?;
            self.meta_object(meta)?;
        }
        self.maybe_flush()
    }

    fn meta_object(&mut self, meta: &Meta) -> io::Result<()> {
        self.open(b'{');
        for (k, v) in meta {
            self.key(k)?;
            // A YANG boolean (RFC 6243 section 6): a JSON literal (RFC 7951).
            if k == super::DEFAULT_TAG && (v == "true" || v == "false") {
                self.buf.extend_from_slice(v.as_bytes());
            } else {
                self.string(v);
            }
        }
        self.close()
    }

    fn any(&mut self, v: &serde_json::Value) -> io::Result<()> {
        use serde_json::Value as J;
        match v {
            J::Null => self.buf.extend_from_slice(b"null"),
            J::Bool(b) => self.buf.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Number(n) => self.buf.extend_from_slice(n.to_string().as_bytes()),
            J::String(s) => self.string(s),
            J::Array(a) => {
                self.open(b'[');
                for x in a {
                    self.element()?;
                    self.any(x)?;
                }
                self.close()?;
            }
            J::Object(o) => {
                self.open(b'{');
                for (k, x) in o {
                    self.key(k)?;
                    self.any(x)?;
                }
                self.close()?;
            }
        }
        Ok(())
    }
}

fn misuse(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("JsonWriter: {what}"))
}

/// Writes `root` as an RFC 7951 document: its members in the container's
/// (name) order, list entries in list order, metadata as annotations, limited
/// to `opts.depth` levels (see [`WriteOptions::depth`]).
///
/// # Errors
/// An I/O error of `out`.
pub fn write_container<W: Write>(out: W, root: &Container, opts: &WriteOptions) -> io::Result<()> {
    let mut w = JsonWriter::new(out, opts.pretty);
    write_members(&mut w, root, opts.depth)?;
    w.finish()?;
    Ok(())
}

/// [`write_container`] into a `String`.
pub fn to_string(root: &Container, opts: &WriteOptions) -> String {
    let mut out = Vec::new();
    // A Vec never fails to take bytes, and the tree-walk drives the writer in
    // order, so this cannot fail.
    write_container(&mut out, root, opts).expect("writing a tree to a Vec cannot fail");
    // Only `&str` pieces are written, so the bytes are UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Writes the metadata and children of `c` into the innermost open container
/// or entry of `w`, with `depth` levels of data nodes below it (see
/// [`WriteOptions::depth`]).
///
/// # Errors
/// As [`JsonWriter::begin_container`].
pub fn write_members<W: Write>(w: &mut JsonWriter<W>, c: &Container, depth: Option<usize>) -> io::Result<()> {
    w.meta(&c.meta)?;
    let below = match depth {
        Some(0) => return Ok(()),
        d => d.map(|d| d - 1),
    };
    for (name, node) in &c.children {
        match node {
            Node::Leaf { value, meta } => w.leaf(name, value, meta)?,
            Node::LeafList(entries) => w.leaf_list(name, entries)?,
            Node::AnyData { value, meta } => w.anydata(name, value, meta)?,
            Node::Container(c) => {
                w.begin_container(name)?;
                write_members(w, c, below)?;
                w.end()?;
            }
            Node::List(list) => {
                w.begin_list(name)?;
                for e in list.entries() {
                    w.begin_entry()?;
                    if below == Some(0) {
                        // Cut here, but an entry without its keys could not be told apart.
                        w.meta(&e.meta)?;
                        for k in &list.info.keys {
                            if let Some(Node::Leaf { value, meta }) = e.children.get(k) {
                                w.leaf(k, value, meta)?;
                            }
                        }
                    } else {
                        write_members(w, e, below)?;
                    }
                    w.end()?;
                }
                w.end()?;
            }
        }
    }
    Ok(())
}
