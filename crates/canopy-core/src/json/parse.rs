//! The RFC 7951 parser: a byte-level tokenizer over a buffered reader, and a
//! recursive-descent builder of [`Container`] trees guided by a [`Schema`].
//!
//! Nothing here reads the whole input at once: the reader keeps one 64 KiB
//! buffer, and only tokens (strings, numbers) are copied out of it.

use std::io::Read;

use crate::children::Children;
use crate::error::{Error, Result};
use crate::path::{self, Path, Selector};
use crate::schema::{NodeKind, Schema};
use crate::tree::{Container, LeafListEntry, List, ListInfo, Name, Node};
use crate::value::{Meta, Value};

use super::view::{Flat, NodeView, Scalar, Target};

/// Size of the read buffer.
const BUF_SIZE: usize = 64 * 1024;

/// Deepest nesting of objects and arrays accepted (the top-level object is
/// level 1); deeper input is an error, never a stack overflow.
///
/// The parser recurses once per level. Measured stack per level: about 1.3 KiB
/// in release builds and 9 KiB in debug builds, so 128 levels stay under
/// 1.2 MiB even in debug, well inside a 2 MiB thread stack. serde_json uses
/// the same limit; configuration data nests far less deeply.
pub const MAX_DEPTH: usize = 128;

/// A 1-based line and column (in characters) of the input.
#[derive(Clone, Copy, Debug)]
struct Pos {
    line: usize,
    column: usize,
}

/// Bytes that end the fast scan of a string: quote, backslash, control characters.
const STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Bytes [`Reader::skip_value`] looks at outside strings: brackets, quotes,
/// commas, newlines and bytes outside ASCII (for line and column).
const SKIP_STOP: [bool; 256] = skip_stops(b"\"{}[],\n");

/// Bytes [`Reader::skip_value`] looks at inside strings.
const SKIP_STOP_IN_STRING: [bool; 256] = skip_stops(b"\"\\\n");

const fn skip_stops(bytes: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0x80;
    while i < 256 {
        t[i] = true;
        i += 1;
    }
    let mut j = 0;
    while j < bytes.len() {
        t[bytes[j] as usize] = true;
        j += 1;
    }
    t
}

/// The tokenizer: buffered bytes with line/column tracking.
struct Reader<R> {
    input: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    /// Absolute offset of `buf[0]` in the input.
    base: u64,
    line: usize,
    /// Absolute offset of the first byte of the current line.
    line_start: u64,
    /// UTF-8 continuation bytes consumed on the current line, so that columns
    /// count characters. Newlines only occur in whitespace (strings reject raw
    /// control characters), so this is reset there only.
    cont: u64,
    /// Token text being assembled (a string's unescaped bytes, a number).
    scratch: Vec<u8>,
}

impl<R: Read> Reader<R> {
    /// A reader with a buffer of `capacity` bytes (at least 1).
    fn new(input: R, capacity: usize) -> Reader<R> {
        Reader {
            input,
            buf: vec![0; capacity.clamp(1, BUF_SIZE)],
            pos: 0,
            end: 0,
            eof: false,
            base: 0,
            line: 1,
            line_start: 0,
            cont: 0,
            scratch: Vec::new(),
        }
    }

    fn here(&self) -> Pos {
        let abs = self.base + self.pos as u64;
        let column = abs.saturating_sub(self.line_start).saturating_sub(self.cont) + 1;
        Pos { line: self.line, column: column as usize }
    }

    fn err_at(&self, at: Pos, reason: impl Into<String>) -> Error {
        Error::Json { line: at.line, column: at.column, reason: reason.into() }
    }

    fn err(&self, reason: impl Into<String>) -> Error {
        self.err_at(self.here(), reason)
    }

    /// Makes at least one unread byte available; `false` at the end of input.
    fn fill(&mut self) -> Result<bool> {
        if self.pos < self.end {
            return Ok(true);
        }
        if self.eof {
            return Ok(false);
        }
        loop {
            match self.input.read(&mut self.buf) {
                Ok(n) => {
                    self.base += self.end as u64;
                    self.pos = 0;
                    self.end = n;
                    self.eof = n == 0;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(format!("cannot read the input: {e}"))),
            }
        }
    }

    /// The next byte that is not whitespace, not consumed; `None` at the end.
    #[inline]
    fn peek(&mut self) -> Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                match self.buf[self.pos] {
                    b' ' | b'\t' | b'\r' => self.pos += 1,
                    b'\n' => {
                        self.pos += 1;
                        self.line += 1;
                        self.line_start = self.base + self.pos as u64;
                        self.cont = 0;
                    }
                    b => return Ok(Some(b)),
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The next byte as it is (whitespace included), consumed.
    fn next_raw(&mut self) -> Result<Option<u8>> {
        if !self.fill()? {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(Some(b))
    }

    /// Consumes one byte that [`Reader::peek`] returned.
    #[inline]
    fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consumes `b` after optional whitespace, or fails saying `expected`.
    fn expect(&mut self, b: u8, expected: &str) -> Result<()> {
        match self.peek()? {
            Some(x) if x == b => {
                self.bump();
                Ok(())
            }
            found => Err(self.err(format!("expected {expected}, found {}", self.describe(found)))),
        }
    }

    /// How to name the byte `b` found where something else was expected.
    fn describe(&self, b: Option<u8>) -> String {
        match b {
            None => "the end of the input".into(),
            Some(b) if b.is_ascii_graphic() => format!("`{}`", b as char),
            Some(b) if b < 0x80 => format!("control character U+{b:04X}"),
            Some(b) => format!("byte 0x{b:02X} (only strings may hold non-ASCII characters)"),
        }
    }

    /// Reads a string whose opening quote is next (after whitespace) into `scratch`.
    fn string_to_scratch(&mut self) -> Result<Pos> {
        let start = self.here();
        self.expect(b'"', "a string")?;
        self.scratch.clear();
        // Whether a raw byte outside ASCII came: only then can the text be
        // invalid UTF-8 (escapes always give valid UTF-8).
        let mut raw_high = false;
        loop {
            let from = self.pos;
            let mut i = from;
            let mut high = 0u8;
            while i < self.end && !STRING_STOP[self.buf[i] as usize] {
                high |= self.buf[i];
                i += 1;
            }
            self.scratch.extend_from_slice(&self.buf[from..i]);
            if high & 0x80 != 0 {
                raw_high = true;
                self.cont += self.buf[from..i].iter().filter(|&&b| b & 0xC0 == 0x80).count() as u64;
            }
            self.pos = i;
            if i == self.end {
                if !self.fill()? {
                    return Err(self.err_at(start, "unterminated string"));
                }
                continue;
            }
            match self.buf[i] {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => self.escape()?,
                b => {
                    let reason = if b == b'\n' {
                        "unterminated string (a newline in a string must be written `\\n`)".to_string()
                    } else {
                        format!("control character U+{b:04X} in a string (write it as `\\u{b:04x}`)")
                    };
                    return Err(self.err(reason));
                }
            }
        }
        if raw_high && std::str::from_utf8(&self.scratch).is_err() {
            return Err(self.err_at(start, "invalid UTF-8 in string"));
        }
        Ok(start)
    }

    /// Reads a string; returns it with the position of its opening quote.
    fn string(&mut self) -> Result<(String, Pos)> {
        let at = self.string_to_scratch()?;
        Ok((self.scratch_str().to_owned(), at))
    }

    /// The token in `scratch`, which [`Reader::string_to_scratch`] and
    /// [`Reader::number_to_scratch`] leave as UTF-8.
    fn scratch_str(&self) -> &str {
        std::str::from_utf8(&self.scratch).unwrap_or_default()
    }

    /// Decodes one escape sequence; the backslash is next.
    fn escape(&mut self) -> Result<()> {
        let at = self.here();
        self.pos += 1;
        let c = match self.next_raw()? {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => {
                let hi = self.hex4(at)?;
                let ch = match hi {
                    0xD800..=0xDBFF => {
                        let lo = match (self.next_raw()?, self.next_raw()?) {
                            (Some(b'\\'), Some(b'u')) => self.hex4(at)?,
                            _ => return Err(self.err_at(at, format!("unpaired surrogate `\\u{hi:04x}` in string"))),
                        };
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return Err(self.err_at(at, format!("unpaired surrogate `\\u{hi:04x}` in string")));
                        }
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                    }
                    _ => char::from_u32(hi),
                };
                let ch = ch.ok_or_else(|| self.err_at(at, format!("unpaired surrogate `\\u{hi:04x}` in string")))?;
                let mut tmp = [0u8; 4];
                self.scratch.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
                return Ok(());
            }
            Some(b) if b.is_ascii_graphic() => {
                return Err(self.err_at(at, format!("invalid escape `\\{}`", b as char)));
            }
            None => return Err(self.err_at(at, "unterminated string")),
            Some(_) => {
                return Err(self.err_at(at, "invalid escape (a backslash must be followed by one of `\"\\/bfnrtu`)"))
            }
        };
        self.scratch.push(c);
        Ok(())
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self, at: Pos) -> Result<u32> {
        let mut v = 0;
        for _ in 0..4 {
            let d = match self.next_raw()? {
                Some(b) => (b as char).to_digit(16),
                None => None,
            };
            v = v * 16 + d.ok_or_else(|| self.err_at(at, "invalid unicode escape (`\\u` needs four hex digits)"))?;
        }
        Ok(v)
    }

    /// Reads a number (first byte `-` or a digit is next); returns its text with
    /// a lower-case exponent.
    fn number(&mut self) -> Result<String> {
        self.number_to_scratch()?;
        Ok(self.scratch_str().to_owned())
    }

    /// Reads a number into `scratch`, as [`Reader::number`].
    fn number_to_scratch(&mut self) -> Result<()> {
        let at = self.here();
        self.scratch.clear();
        loop {
            let from = self.pos;
            let mut i = from;
            while i < self.end && matches!(self.buf[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                i += 1;
            }
            self.scratch.extend_from_slice(&self.buf[from..i]);
            self.pos = i;
            if i < self.end || !self.fill()? {
                break;
            }
        }
        if let Err(why) = check_number(&self.scratch) {
            let text = String::from_utf8_lossy(&self.scratch);
            return Err(self.err_at(at, format!("invalid number `{text}`: {why}")));
        }
        if let Some(e) = self.scratch.iter_mut().find(|b| **b == b'E') {
            *e = b'e';
        }
        Ok(())
    }

    /// Reads `true`, `false` or `null` (a letter is next); anything else is an error.
    fn literal(&mut self) -> Result<Literal> {
        let at = self.here();
        self.scratch.clear();
        while self.fill()? {
            let b = self.buf[self.pos];
            if !(b.is_ascii_alphanumeric() || b == b'_') || self.scratch.len() >= 40 {
                break;
            }
            self.scratch.push(b);
            self.pos += 1;
        }
        match &self.scratch[..] {
            b"true" => Ok(Literal::True),
            b"false" => Ok(Literal::False),
            b"null" => Ok(Literal::Null),
            w => Err(self.err_at(at, format!("expected a value, found `{}`", String::from_utf8_lossy(w)))),
        }
    }
}

impl<R: Read> Reader<R> {
    /// Skips one value (after whitespace) by matching brackets outside
    /// strings, without checking what it holds: whoever parses the value
    /// finds what is wrong with it. Stops before the `,` or `}` that ends it.
    fn skip_value(&mut self) -> Result<()> {
        let start = self.here();
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        while self.fill()? {
            while self.pos < self.end {
                if !escaped {
                    // Runs of bytes that change nothing here (no newline, no
                    // UTF-8 continuation byte) go in one sweep.
                    let stop = if in_string { &SKIP_STOP_IN_STRING } else { &SKIP_STOP };
                    let mut i = self.pos;
                    while i < self.end && !stop[self.buf[i] as usize] {
                        i += 1;
                    }
                    self.pos = i;
                    if i == self.end {
                        break;
                    }
                }
                let b = self.buf[self.pos];
                if in_string {
                    if escaped {
                        escaped = false;
                    } else if b == b'\\' {
                        escaped = true;
                    } else if b == b'"' {
                        in_string = false;
                    }
                } else {
                    match b {
                        b'"' => in_string = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' if depth == 0 => return Ok(()),
                        b'}' | b']' => depth -= 1,
                        b',' if depth == 0 => return Ok(()),
                        _ => {}
                    }
                }
                self.pos += 1;
                if b == b'\n' {
                    self.line += 1;
                    self.line_start = self.base + self.pos as u64;
                    self.cont = 0;
                } else if b & 0xC0 == 0x80 {
                    self.cont += 1;
                }
            }
        }
        if depth == 0 && !in_string {
            return Ok(());
        }
        Err(self.err_at(start, "the value does not end before the end of the input"))
    }

    /// Absolute byte offset of the next unread byte.
    fn offset(&self) -> usize {
        (self.base + self.pos as u64) as usize
    }
}

/// One member of a document's top-level object, found without parsing its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    /// Byte range of the value in the input.
    pub value: std::ops::Range<usize>,
    /// 1-based line and column (in characters) where the value starts.
    pub line: usize,
    pub column: usize,
}

/// Splits the top-level object of `input` into its members: names and the
/// byte ranges of their values, which are found by matching brackets and are
/// not checked (parse each value to check it; [`offset_error`] places the
/// parser's errors in `input`). Cheap: no value is built.
///
/// # Errors
/// [`Error::Json`] with line and column when `input` is not an object, a
/// member name is malformed or repeated, a value is missing or runs past the
/// end, or data follows the object.
pub fn top_level_members(input: &str) -> Result<Vec<Member>> {
    let schema = crate::Schemaless::default();
    let mut p = Parser::new(input.as_bytes(), BUF_SIZE, &schema);
    p.open_document()?;
    let mut out: Vec<Member> = Vec::new();
    if p.rd.peek()? == Some(b'}') {
        p.rd.bump();
    } else {
        loop {
            p.rd.peek()?;
            let (name, at) = p.rd.string()?;
            p.rd.expect(b':', "`:` after the member name")?;
            if out.iter().any(|m| m.name == name) {
                return Err(p.rd.err_at(at, format!("duplicate member `{name}`")));
            }
            p.rd.peek()?;
            let pos = p.rd.here();
            let start = p.rd.offset();
            p.rd.skip_value()?;
            if p.rd.offset() == start {
                let found = p.rd.peek()?;
                return Err(p.rd.err(format!("expected a value, found {}", p.rd.describe(found))));
            }
            let mut end = p.rd.offset();
            while input.as_bytes()[start..end].last().is_some_and(u8::is_ascii_whitespace) {
                end -= 1;
            }
            out.push(Member { name, value: start..end, line: pos.line, column: pos.column });
            if !p.comma_or_close(b'}')? {
                break;
            }
        }
    }
    p.close_document()?;
    Ok(out)
}

/// An error from parsing a member's value on its own, placed in the whole
/// input: its line and column counted from where the value starts.
pub fn offset_error(e: Error, member: &Member) -> Error {
    match e {
        Error::Json { line, column, reason } => Error::Json {
            line: member.line + line - 1,
            column: if line == 1 { member.column + column - 1 } else { column },
            reason,
        },
        e => e,
    }
}

enum Literal {
    True,
    False,
    Null,
}

/// Checks JSON number grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
fn check_number(s: &[u8]) -> std::result::Result<(), &'static str> {
    let mut i = 0;
    let digits = |i: &mut usize| {
        let from = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - from
    };
    if s.first() == Some(&b'-') {
        i += 1;
    }
    let int_start = i;
    match digits(&mut i) {
        0 if int_start == 0 => return Err("expected a digit"),
        0 => return Err("expected a digit after `-`"),
        n if n > 1 && s[int_start] == b'0' => return Err("leading zeros are not allowed"),
        _ => {}
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return Err("expected a digit after `.`");
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return Err("expected a digit in the exponent");
        }
    }
    match s.get(i) {
        None => Ok(()),
        Some(_) => Err("unexpected character after the number"),
    }
}

/// What an object being parsed remembers besides its container.
#[derive(Default)]
struct ObjectState {
    /// Annotations, applied at the end of the object.
    pending: Vec<PendingMeta>,
    /// The members the pending annotations name, once there are many (a
    /// linear check per annotation would make large objects quadratic).
    pending_targets: std::collections::HashSet<Name>,
    /// Whether the object's own `"@"` member was seen.
    seen_meta: bool,
    /// Members dropped because they held no data (empty arrays), still names
    /// that may not appear twice.
    dropped: Vec<Name>,
    /// Containers and lists handed to the [`Emit`] receiver instead of the
    /// object's container, sorted (so checks stay cheap on large objects).
    emitted: Vec<Name>,
}

impl ObjectState {
    fn emitted(&self, name: &str) -> bool {
        self.emitted.binary_search_by(|n| n.as_str().cmp(name)).is_ok()
    }
}

/// What one member's value became.
enum Parsed {
    Node(Node),
    /// A leaf, its text (strings and numbers) in the reader's `scratch`.
    Scalar(Scalar),
    /// An empty array the schema does not know as a list: no data.
    Dropped,
    /// A container or list handed to the [`Emit`] receiver.
    Emitted,
}

/// Receives a document from [`parse_emit`] one container or list entry at a
/// time, in document order, so that no tree of the whole document is built.
///
/// Calls nest: [`begin_container`](Emit::begin_container) or
/// [`begin_entry`](Emit::begin_entry) (inside [`begin_list`](Emit::begin_list)
/// … [`end_list`](Emit::end_list)) opens a node, and [`end`](Emit::end) closes
/// the node opened last, handing over its metadata and inline children
/// (leaves, leaf-lists, anydata). Its containers and lists were emitted in
/// between, so `end` comes after its descendants'. List entries arrive with
/// their key leaves checked.
pub trait Emit {
    /// Container `name` (canonical) begins.
    fn begin_container(&mut self, name: &str);
    /// List `name` (canonical), of the kind `info` says, begins; its entries follow.
    fn begin_list(&mut self, name: &str, info: &ListInfo);
    /// An entry of the list begun last begins.
    fn begin_entry(&mut self);
    /// The container or entry begun last ends with its metadata and inline
    /// children, borrowed from the parser for the call.
    ///
    /// # Errors
    /// A reason the node is refused (a list entry whose keys repeat an
    /// earlier entry's, say); the parser fails with it, placed where the
    /// node starts.
    fn end(&mut self, node: NodeView<'_>) -> std::result::Result<(), String>;
    /// The list begun last ends.
    fn end_list(&mut self);
}

/// Where the members of an object go: a [`Container`] when building a tree,
/// a reused [`Flat`] when emitting.
trait Sink {
    fn contains(&self, name: &str) -> bool;
    fn meta_mut(&mut self) -> &mut Meta;
    /// Adds leaf `name` (not present yet) holding scalar `s` with text `text`.
    fn put_scalar(&mut self, name: &str, s: Scalar, text: &str);
    /// Adds member `name` (not present yet).
    fn put_node(&mut self, name: &str, node: Node);
    fn target(&mut self, name: &str) -> Option<Target<'_>>;
}

impl Sink for Container {
    fn contains(&self, name: &str) -> bool {
        self.children.contains_key(name)
    }

    fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }

    fn put_scalar(&mut self, name: &str, s: Scalar, text: &str) {
        self.children.insert(name.into(), Node::leaf(scalar_value(s, text)));
    }

    fn put_node(&mut self, name: &str, node: Node) {
        self.children.insert(name.into(), node);
    }

    fn target(&mut self, name: &str) -> Option<Target<'_>> {
        Some(match self.children.get_mut(name)? {
            Node::Leaf { meta, .. } | Node::AnyData { meta, .. } => Target::Node(meta),
            Node::LeafList(entries) => Target::LeafList(entries),
            Node::Container(_) | Node::List(_) => Target::Branch,
        })
    }
}

impl Sink for Flat {
    fn contains(&self, name: &str) -> bool {
        Flat::contains(self, name)
    }

    fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }

    fn put_scalar(&mut self, name: &str, s: Scalar, text: &str) {
        self.push_scalar(name, s, text);
    }

    fn put_node(&mut self, name: &str, node: Node) {
        self.push_node(name, node);
    }

    fn target(&mut self, name: &str) -> Option<Target<'_>> {
        Flat::target(self, name)
    }
}

fn scalar_value(s: Scalar, text: &str) -> Value {
    match s {
        Scalar::String => Value::String(text.into()),
        Scalar::Number => Value::Number(text.into()),
        Scalar::True => Value::Bool(true),
        Scalar::False => Value::Bool(false),
        Scalar::Empty => Value::Empty,
    }
}

/// An annotation member (`"@name": ...`) waiting for the end of its object,
/// since it may come before the member it annotates.
struct PendingMeta {
    target: Name,
    at: Pos,
    meta: AnnotationValue,
}

enum AnnotationValue {
    /// `"@leaf": {...}` for a leaf or anydata.
    Node(Meta),
    /// `"@leaf-list": [{...} | null, ...]`, by entry index.
    Entries(Vec<Option<Meta>>),
}

/// The builder: tokens to tree, with the schema's view of each member.
struct Parser<'s, R> {
    rd: Reader<R>,
    schema: &'s dyn Schema,
    /// Schema path of the node being parsed (`/m:cont/lst`), empty at the root.
    sp: String,
    depth: usize,
    /// Where containers and lists go instead of into the tree, if anywhere.
    emit: Option<&'s mut dyn Emit>,
    /// Emitting: buffers of the objects being parsed, reused.
    flats: Vec<Flat>,
}

impl<'s, R: Read> Parser<'s, R> {
    fn new(input: R, capacity: usize, schema: &'s dyn Schema) -> Self {
        Parser { rd: Reader::new(input, capacity), schema, sp: String::new(), depth: 0, emit: None, flats: Vec::new() }
    }

    /// The local name of the member being parsed and the receiver, if any.
    fn emitting(&mut self) -> Option<(&mut dyn Emit, &str)> {
        let name = self.sp.rsplit('/').next().unwrap_or("");
        Some((&mut **self.emit.as_mut()?, name))
    }

    /// Counts one more level of nesting; fails beyond [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.rd.err(format!("nesting too deep (more than {MAX_DEPTH} levels)")));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// The local name of the node being parsed, for messages.
    fn cur_name(&self) -> &str {
        self.sp.rsplit('/').next().unwrap_or("")
    }

    /// The opening `{` of a document.
    fn open_document(&mut self) -> Result<()> {
        match self.rd.peek()? {
            Some(b'{') => {
                self.rd.bump();
                Ok(())
            }
            found => Err(self.rd.err(format!(
                "expected `{{` (an RFC 7951 document is a JSON object), found {}",
                self.rd.describe(found)
            ))),
        }
    }

    /// Nothing but whitespace may follow the document.
    fn close_document(&mut self) -> Result<()> {
        match self.rd.peek()? {
            None => Ok(()),
            Some(_) => Err(self.rd.err("trailing data after the document")),
        }
    }

    /// Parses the members of an object whose `{` was consumed, up to and
    /// including its `}`, into `out`. `module` is the module of the object's node.
    /// With `only`, the object must hold just that member (and its annotation).
    fn object_into<S: Sink>(&mut self, out: &mut S, module: Option<&str>, only: Option<&str>) -> Result<()> {
        self.enter()?;
        let mut state = ObjectState::default();
        if self.rd.peek()? == Some(b'}') {
            self.rd.bump();
        } else {
            loop {
                if self.rd.peek()? != Some(b'"') {
                    let found = self.rd.peek()?;
                    let reason = if found == Some(b'}') {
                        "trailing comma before `}`".to_string()
                    } else {
                        format!("expected a member name (a string), found {}", self.rd.describe(found))
                    };
                    return Err(self.rd.err(reason));
                }
                self.member(out, module, only, &mut state)?;
                if !self.comma_or_close(b'}')? {
                    break;
                }
            }
        }
        self.leave();
        for p in std::mem::take(&mut state.pending) {
            if state.emitted(&p.target) {
                return Err(self.rd.err_at(p.at, container_annotation(&p.target)));
            }
            self.apply_meta(out, p)?;
        }
        Ok(())
    }

    /// One `"name": value` member of an object.
    fn member<S: Sink>(
        &mut self,
        out: &mut S,
        module: Option<&str>,
        only: Option<&str>,
        state: &mut ObjectState,
    ) -> Result<()> {
        let at = self.rd.string_to_scratch()?;
        self.rd.expect(b':', "`:` after the member name")?;
        if self.rd.scratch.first() == Some(&b'@') {
            let raw = self.rd.scratch_str().to_owned();
            return self.annotation_member(out, module, state, raw, at);
        }
        let raw = self.rd.scratch_str();
        if !path::is_valid_name(raw) {
            return Err(self.rd.err_at(at, format!("invalid member name `{raw}`")));
        }
        // Canonical: without the prefix when it is the parent's module.
        let name = match raw.split_once(':') {
            Some((m, local)) if Some(m) == module => local,
            _ => raw,
        };
        if let Some(only) = only {
            if name != only {
                return Err(self.rd.err_at(at, format!("expected only member `{only}`, found `{name}`")));
            }
        }
        if out.contains(name) || state.dropped.iter().any(|d| d == name) || state.emitted(name) {
            return Err(self.rd.err_at(at, format!("duplicate member `{name}`")));
        }
        // The module changes only where a name has a prefix: rare.
        let own_module = name.split_once(':').map(|(m, _)| m.to_owned());
        let sp_len = self.sp.len();
        self.sp.push('/');
        self.sp.push_str(name);
        let node = self.value(own_module.as_deref().or(module))?;
        let name = &self.sp[sp_len + 1..];
        match node {
            Parsed::Scalar(s) => out.put_scalar(name, s, self.rd.scratch_str()),
            Parsed::Node(node) => out.put_node(name, node),
            Parsed::Dropped => state.dropped.push(name.into()),
            Parsed::Emitted => {
                let at = state.emitted.partition_point(|n| n.as_str() < name);
                state.emitted.insert(at, name.into());
            }
        }
        self.sp.truncate(sp_len);
        Ok(())
    }

    /// An annotation member, `"@": {...}` or `"@name": ...`; `raw` is its name.
    fn annotation_member<S: Sink>(
        &mut self,
        out: &mut S,
        module: Option<&str>,
        state: &mut ObjectState,
        raw: String,
        at: Pos,
    ) -> Result<()> {
        if raw == "@" {
            if std::mem::replace(&mut state.seen_meta, true) {
                return Err(self.rd.err_at(at, "duplicate member `@`"));
            }
            let meta = self.annotations()?;
            out.meta_mut().extend(meta);
            return Ok(());
        }
        if let Some(target) = raw.strip_prefix('@') {
            if !path::is_valid_name(target) {
                return Err(self.rd.err_at(at, format!("invalid member name `{raw}`")));
            }
            let target = canonical(target.into(), module);
            let duplicate = match state.pending.len() {
                0..16 => state.pending.iter().any(|p| p.target == target),
                16 => {
                    state.pending_targets.extend(state.pending.iter().map(|p| p.target.clone()));
                    !state.pending_targets.insert(target.clone())
                }
                _ => !state.pending_targets.insert(target.clone()),
            };
            if duplicate {
                return Err(self.rd.err_at(at, format!("duplicate member `{raw}`")));
            }
            let meta = match self.rd.peek()? {
                Some(b'{') => AnnotationValue::Node(self.annotations()?),
                Some(b'[') => AnnotationValue::Entries(self.entry_annotations()?),
                _ => {
                    return Err(self.rd.err(format!(
                        "annotation `{raw}` must be an object (or, for a leaf-list, an array of objects and nulls)"
                    )));
                }
            };
            state.pending.push(PendingMeta { target, at, meta });
        }
        Ok(())
    }

    /// Attaches a pending annotation to the member it names.
    fn apply_meta<S: Sink>(&self, out: &mut S, p: PendingMeta) -> Result<()> {
        let err = |reason: String| Err(self.rd.err_at(p.at, reason));
        match (out.target(&p.target), p.meta) {
            (None, _) => err(format!("annotation `@{}` for a member that does not exist", p.target)),
            (Some(Target::Node(meta)), AnnotationValue::Node(m)) => {
                *meta = m;
                Ok(())
            }
            (Some(Target::LeafList(entries)), AnnotationValue::Entries(ms)) => {
                if ms.len() > entries.len() {
                    return err(format!(
                        "annotation `@{}` has {} entries, the leaf-list has {}",
                        p.target,
                        ms.len(),
                        entries.len()
                    ));
                }
                for (e, m) in entries.iter_mut().zip(ms) {
                    e.meta = m.unwrap_or_default();
                }
                Ok(())
            }
            (Some(Target::LeafList(_)), AnnotationValue::Node(_)) => {
                err(format!("annotation `@{}` of a leaf-list must be an array", p.target))
            }
            (Some(Target::Node(_)), AnnotationValue::Entries(_)) => {
                err(format!("annotation `@{}` of a leaf must be an object", p.target))
            }
            (Some(Target::Branch), _) => err(container_annotation(&p.target)),
        }
    }

    /// An annotation object `{"mod:ann": "v", ...}`; values are kept as text.
    fn annotations(&mut self) -> Result<Meta> {
        self.rd.expect(b'{', "`{`")?;
        self.enter()?;
        let mut meta = Meta::new();
        if self.rd.peek()? == Some(b'}') {
            self.rd.bump();
        } else {
            loop {
                let (name, at) = self.rd.string()?;
                if name.is_empty() {
                    return Err(self.rd.err_at(at, "empty annotation name"));
                }
                self.rd.expect(b':', "`:` after the annotation name")?;
                let value = match self.rd.peek()? {
                    Some(b'{' | b'[') => {
                        return Err(self.rd.err("annotation value must be a string, number or boolean"));
                    }
                    _ => self.scalar()?.as_text().into_owned(),
                };
                if meta.insert(name.clone(), value).is_some() {
                    return Err(self.rd.err_at(at, format!("duplicate member `{name}`")));
                }
                if !self.comma_or_close(b'}')? {
                    break;
                }
            }
        }
        self.leave();
        Ok(meta)
    }

    /// `[{...} | null, ...]`: annotations of leaf-list entries by index.
    fn entry_annotations(&mut self) -> Result<Vec<Option<Meta>>> {
        self.rd.expect(b'[', "`[`")?;
        self.enter()?;
        let mut out = Vec::new();
        if self.rd.peek()? == Some(b']') {
            self.rd.bump();
        } else {
            loop {
                match self.rd.peek()? {
                    Some(b'{') => out.push(Some(self.annotations()?)),
                    Some(b'n') => match self.rd.literal()? {
                        Literal::Null => out.push(None),
                        _ => return Err(self.rd.err("expected an annotation object or `null`")),
                    },
                    found => {
                        return Err(self.rd.err(format!(
                            "expected an annotation object or `null`, found {}",
                            self.rd.describe(found)
                        )));
                    }
                }
                if !self.comma_or_close(b']')? {
                    break;
                }
            }
        }
        self.leave();
        Ok(out)
    }

    /// After an element or member: `true` after `,`, `false` after `close`.
    fn comma_or_close(&mut self, close: u8) -> Result<bool> {
        match self.rd.peek()? {
            Some(b',') => {
                self.rd.bump();
                Ok(true)
            }
            Some(b) if b == close => {
                self.rd.bump();
                Ok(false)
            }
            found => {
                Err(self.rd.err(format!("expected `,` or `{}`, found {}", close as char, self.rd.describe(found))))
            }
        }
    }

    /// A scalar: string, number, `true`/`false`, or `[null]`.
    fn scalar(&mut self) -> Result<Value> {
        let s = self.scalar_token()?;
        Ok(scalar_value(s, self.rd.scratch_str()))
    }

    /// A scalar, its text (strings and numbers) left in the reader's `scratch`.
    fn scalar_token(&mut self) -> Result<Scalar> {
        match self.rd.peek()? {
            Some(b'"') => {
                self.rd.string_to_scratch()?;
                Ok(Scalar::String)
            }
            Some(b'-' | b'0'..=b'9') => {
                self.rd.number_to_scratch()?;
                Ok(Scalar::Number)
            }
            Some(b'[') => {
                self.empty_value()?;
                Ok(Scalar::Empty)
            }
            Some(b) if b.is_ascii_alphabetic() => match self.rd.literal()? {
                Literal::True => Ok(Scalar::True),
                Literal::False => Ok(Scalar::False),
                Literal::Null => Err(self.null_error()),
            },
            found => Err(self.rd.err(format!("expected a value, found {}", self.rd.describe(found)))),
        }
    }

    fn null_error(&self) -> Error {
        // The literal was consumed; point at its start.
        let mut at = self.rd.here();
        at.column = at.column.saturating_sub(4).max(1);
        self.rd.err_at(at, "`null` is not a value in RFC 7951 (use [null] for empty)")
    }

    /// `[null]`, the value of type `empty`; `[` is next.
    fn empty_value(&mut self) -> Result<()> {
        self.rd.expect(b'[', "`[`")?;
        let at = self.rd.here();
        let ok = self.rd.peek()? == Some(b'n') && matches!(self.rd.literal()?, Literal::Null);
        if !ok {
            return Err(self.rd.err_at(at, "expected `[null]` (the value of type empty)"));
        }
        match self.rd.peek()? {
            Some(b']') => {
                self.rd.bump();
                Ok(())
            }
            _ => Err(self.rd.err("expected `]`: `[null]` holds exactly one `null`")),
        }
    }

    /// The value of the member whose schema path is `self.sp`: a node,
    /// [`Parsed::Dropped`] for an empty array that the schema does not know as
    /// a list, or [`Parsed::Emitted`] when it went to the [`Emit`] receiver.
    fn value(&mut self, module: Option<&str>) -> Result<Parsed> {
        let kind = self.schema.kind(&self.sp);
        if kind == Some(NodeKind::AnyData) {
            let value = self.any_value()?;
            return Ok(Parsed::Node(Node::AnyData { value: Box::new(value), meta: Meta::new() }));
        }
        match self.rd.peek()? {
            Some(b'{') => {
                if let Some(k @ (NodeKind::List | NodeKind::Leaf | NodeKind::LeafList)) = kind {
                    return Err(self.mismatch(k, "an object"));
                }
                let at = self.rd.here();
                self.rd.bump();
                if let Some((emit, name)) = self.emitting() {
                    emit.begin_container(name);
                    self.emit_object(module, at, &[])?;
                    return Ok(Parsed::Emitted);
                }
                let mut c = Container::default();
                self.object_into(&mut c, module, None)?;
                Ok(Parsed::Node(Node::Container(c)))
            }
            Some(b'[') => self.array(kind, module),
            _ => {
                if let Some(k @ (NodeKind::List | NodeKind::Container | NodeKind::LeafList)) = kind {
                    return Err(self.mismatch(k, "a scalar"));
                }
                Ok(Parsed::Scalar(self.scalar_token()?))
            }
        }
    }

    /// Emitting: parses the members of an object whose `{` was consumed (it
    /// started at `at`) and hands them to the receiver. A list entry must
    /// hold its `keys` as leaves.
    fn emit_object(&mut self, module: Option<&str>, at: Pos, keys: &[Name]) -> Result<()> {
        let mut flat = self.flats.pop().unwrap_or_default();
        flat.clear();
        self.object_into(&mut flat, module, None)?;
        if let Some(k) = keys.iter().find(|k| !flat.is_leaf(k)) {
            return Err(self.rd.err_at(at, format!("list entry is missing key leaf `{k}`")));
        }
        if let Some(emit) = self.emit.as_mut() {
            emit.end(NodeView::new(&flat)).map_err(|reason| self.rd.err_at(at, reason))?;
        }
        self.flats.push(flat);
        Ok(())
    }

    fn mismatch(&self, kind: NodeKind, found: &str) -> Error {
        self.rd.err(self.mismatch_reason(kind, found))
    }

    fn mismatch_reason(&self, kind: NodeKind, found: &str) -> String {
        let want = match kind {
            NodeKind::Container => "a container (an object)",
            NodeKind::List => "a list (an array of objects)",
            NodeKind::Leaf => "a leaf (a scalar)",
            NodeKind::LeafList => "a leaf-list (an array of scalars)",
            NodeKind::AnyData => "anydata",
        };
        format!("`{}` is {want} in the schema, found {found}", self.cur_name())
    }

    /// An array: a list, a leaf-list, `[null]`, or an empty array; `[` is next.
    fn array(&mut self, kind: Option<NodeKind>, module: Option<&str>) -> Result<Parsed> {
        let open = self.rd.here();
        self.rd.bump();
        // Look past `[` to decide what the array is.
        let first = self.rd.peek()?;
        if first == Some(b'n') {
            // Only `[null]` starts so; re-read it as a whole.
            let ok = matches!(self.rd.literal()?, Literal::Null) && self.rd.peek()? == Some(b']');
            if !ok {
                return Err(self.rd.err_at(open, "expected `[null]` (the value of type empty)"));
            }
            self.rd.bump();
            if let Some(k @ (NodeKind::List | NodeKind::Container | NodeKind::LeafList)) = kind {
                return Err(self.rd.err_at(open, self.mismatch_reason(k, "`[null]`")));
            }
            return Ok(Parsed::Node(Node::leaf(Value::Empty)));
        }
        self.enter()?;
        let node = match first {
            Some(b']') => {
                self.rd.bump();
                let info = match (self.schema.list_info(&self.sp), kind) {
                    (Some(info), _) => Some(info),
                    (None, Some(NodeKind::List)) => Some(ListInfo::keyless()),
                    _ => None,
                };
                match (info, self.emitting()) {
                    (None, _) => Parsed::Dropped,
                    (Some(info), Some((emit, name))) => {
                        emit.begin_list(name, &info);
                        emit.end_list();
                        Parsed::Emitted
                    }
                    (Some(info), None) => Parsed::Node(Node::List(Box::new(List::new(info)))),
                }
            }
            Some(b'{') => {
                if let Some(k @ (NodeKind::Container | NodeKind::Leaf | NodeKind::LeafList)) = kind {
                    return Err(self.mismatch(k, "an array of objects"));
                }
                match self.list_entries(module)? {
                    Some(list) => Parsed::Node(Node::List(Box::new(list))),
                    None => Parsed::Emitted,
                }
            }
            _ => {
                if let Some(k @ (NodeKind::Container | NodeKind::Leaf | NodeKind::List)) = kind {
                    return Err(self.mismatch(k, "an array of scalars"));
                }
                Parsed::Node(Node::LeafList(self.leaf_list_entries()?))
            }
        };
        self.leave();
        Ok(node)
    }

    /// The entries of a list, from the first `{` to the closing `]`: the
    /// list, or `None` when they went to the [`Emit`] receiver.
    fn list_entries(&mut self, module: Option<&str>) -> Result<Option<List>> {
        let info = self.schema.list_info(&self.sp).unwrap_or_else(ListInfo::keyless);
        if let Some((emit, name)) = self.emitting() {
            emit.begin_list(name, &info);
        }
        // The entries and where each starts, put in the list in one build at
        // the end.
        let mut entries: Vec<Container> = Vec::new();
        let mut starts: Vec<Pos> = Vec::new();
        // Entries of one list have about as many children as the one before:
        // room for them from the start spares the growing.
        let mut room = 0;
        loop {
            let first = self.rd.peek()?;
            let at = self.rd.here();
            match first {
                Some(b'{') => self.rd.bump(),
                Some(b'"' | b'-' | b'0'..=b'9' | b'[' | b't' | b'f' | b'n') => {
                    return Err(self.rd.err("mixed array of objects and scalars"));
                }
                found => {
                    return Err(self
                        .rd
                        .err(format!("expected a list entry (an object), found {}", self.rd.describe(found))));
                }
            }
            if let Some(emit) = self.emit.as_mut() {
                emit.begin_entry();
                self.emit_object(module, at, &info.keys)?;
                if !self.comma_or_close(b']')? {
                    if let Some(emit) = self.emit.as_mut() {
                        emit.end_list();
                    }
                    return Ok(None);
                }
                continue;
            }
            let mut entry = Container { meta: Meta::default(), children: Children::with_capacity(room) };
            self.object_into(&mut entry, module, None)?;
            room = entry.children.len();
            if let Some(k) = info.keys.iter().find(|k| !matches!(entry.children.get(k), Some(Node::Leaf { .. }))) {
                return Err(self.rd.err_at(at, format!("list entry is missing key leaf `{k}`")));
            }
            entries.push(entry);
            starts.push(at);
            if !self.comma_or_close(b']')? {
                // The entries move into the list, so the message takes the key
                // values from the list's error rather than copying them up front.
                return match List::from_entries(info, entries) {
                    Ok(list) => Ok(Some(list)),
                    Err((i, e)) => {
                        let reason = match e {
                            Error::Exists { path } => format!(
                                "duplicate list entry with keys {}",
                                path.strip_prefix("list entry ").unwrap_or(&path)
                            ),
                            e => e.to_string(),
                        };
                        Err(self.rd.err_at(starts[i], reason))
                    }
                };
            }
        }
    }

    /// The entries of a leaf-list, from the first value to the closing `]`.
    fn leaf_list_entries(&mut self) -> Result<Vec<LeafListEntry>> {
        let mut out = Vec::new();
        loop {
            if self.rd.peek()? == Some(b'{') {
                return Err(self.rd.err("mixed array of objects and scalars"));
            }
            out.push(LeafListEntry { value: self.scalar()?, meta: Meta::new() });
            if !self.comma_or_close(b']')? {
                return Ok(out);
            }
        }
    }

    /// Any JSON value, as anydata keeps it.
    fn any_value(&mut self) -> Result<serde_json::Value> {
        use serde_json::Value as J;
        Ok(match self.rd.peek()? {
            Some(b'{') => {
                self.rd.bump();
                self.enter()?;
                let mut map = serde_json::Map::new();
                if self.rd.peek()? == Some(b'}') {
                    self.rd.bump();
                } else {
                    loop {
                        let (k, at) = self.rd.string()?;
                        self.rd.expect(b':', "`:` after the member name")?;
                        if map.contains_key(&k) {
                            return Err(self.rd.err_at(at, format!("duplicate member `{k}`")));
                        }
                        let v = self.any_value()?;
                        map.insert(k, v);
                        if !self.comma_or_close(b'}')? {
                            break;
                        }
                    }
                }
                self.leave();
                J::Object(map)
            }
            Some(b'[') => {
                self.rd.bump();
                self.enter()?;
                let mut v = Vec::new();
                if self.rd.peek()? == Some(b']') {
                    self.rd.bump();
                } else {
                    loop {
                        v.push(self.any_value()?);
                        if !self.comma_or_close(b']')? {
                            break;
                        }
                    }
                }
                self.leave();
                J::Array(v)
            }
            Some(b'"') => J::String(self.rd.string()?.0),
            Some(b'-' | b'0'..=b'9') => {
                let at = self.rd.here();
                let text = self.rd.number()?;
                J::Number(text.parse().map_err(|_| self.rd.err_at(at, format!("invalid number `{text}`")))?)
            }
            Some(b) if b.is_ascii_alphabetic() => match self.rd.literal()? {
                Literal::True => J::Bool(true),
                Literal::False => J::Bool(false),
                // Anydata is opaque JSON: `null` is kept as it is.
                Literal::Null => J::Null,
            },
            found => return Err(self.rd.err(format!("expected a value, found {}", self.rd.describe(found)))),
        })
    }
}

fn container_annotation(target: &str) -> String {
    format!("annotation `@{target}` names a container or list: their annotations go in their own `@` member")
}

/// `name` without its prefix when that is the parent's module (as
/// [`path::canonical_name`]), reusing the allocation when nothing changes.
fn canonical(name: Name, parent_module: Option<&str>) -> Name {
    match name.split_once(':') {
        Some((m, _)) if Some(m) == parent_module => path::canonical_name(&name, parent_module),
        _ => name,
    }
}

/// Parses an RFC 7951 document (a JSON object of top-level members) into a tree.
///
/// Object members become child nodes, objects containers, arrays of objects
/// lists (keys and ordering from [`Schema::list_info`], keyless and
/// user-ordered when the schema does not know the list), arrays of scalars
/// leaf-lists, scalars leaves, `[null]` [`Value::Empty`]; members the schema
/// calls anydata are kept as JSON. An empty array is an empty list when the
/// schema knows a list there and is dropped otherwise (it carries no data).
/// Names are canonicalised: a prefix equal to the parent's module is dropped.
/// Annotations (`"@"`, `"@name"`, RFC 7952) become [`Meta`]; their values are
/// kept as text, and their names may be any non-empty string.
///
/// # Errors
/// [`Error::Json`] with the 1-based line and column (in characters) of the
/// first thing that is wrong: malformed JSON, invalid UTF-8, `null`, invalid or
/// duplicate member names, list entries missing a key or repeating one,
/// mixed arrays, nesting deeper than [`MAX_DEPTH`], trailing data, read errors.
pub fn parse_document<R: Read>(input: R, schema: &dyn Schema) -> Result<Container> {
    document(input, BUF_SIZE, schema)
}

/// [`parse_document`] with a read buffer of `capacity` bytes.
fn document<R: Read>(input: R, capacity: usize, schema: &dyn Schema) -> Result<Container> {
    let mut p = Parser::new(input, capacity, schema);
    p.open_document()?;
    let mut root = Container::default();
    p.object_into(&mut root, None, None)?;
    p.close_document()?;
    Ok(root)
}

/// [`parse_document`] on a string.
///
/// # Errors
/// As [`parse_document`].
pub fn parse_str(input: &str, schema: &dyn Schema) -> Result<Container> {
    // A buffer no larger than the input: small documents (edits) stay cheap.
    document(input.as_bytes(), input.len() + 1, schema)
}

/// Parses an RFC 7951 document as [`parse_str`] does, with the same checks
/// and errors, but hands every container and list entry to `emit` as soon as
/// it is complete instead of building a tree: what is returned is the root's
/// metadata and inline children only.
///
/// # Errors
/// As [`parse_document`], and the reasons `emit` gives, placed where the
/// refused node starts.
pub fn parse_emit(input: &str, schema: &dyn Schema, emit: &mut dyn Emit) -> Result<Container> {
    emit_from(input.as_bytes(), input.len() + 1, schema, emit)
}

/// [`parse_emit`] reading from `input` through a buffer of its own: the
/// document is never held whole, so with an `emit` that keeps nothing the
/// parse needs memory for one open path of nodes, not for the document.
///
/// # Errors
/// As [`parse_emit`], and read errors of `input` (as [`parse_document`]).
pub fn parse_emit_reader<R: Read>(input: R, schema: &dyn Schema, emit: &mut dyn Emit) -> Result<Container> {
    emit_from(input, BUF_SIZE, schema, emit)
}

fn emit_from<R: Read>(input: R, capacity: usize, schema: &dyn Schema, emit: &mut dyn Emit) -> Result<Container> {
    let mut p = Parser::new(input, capacity, schema);
    p.emit = Some(emit);
    p.open_document()?;
    let mut root = Container::default();
    p.object_into(&mut root, None, None)?;
    p.close_document()?;
    Ok(root)
}

/// Parses the value of one node, e.g. the value of an edit at `at`.
///
/// The input is written as RESTCONF (RFC 8040) writes a resource: an object
/// with the node as its only member (plus, for a leaf, its `@name`
/// annotation): `{"m:cont": {...}}` for `/m:cont`, `{"lst": [{...}]}` for a
/// list entry `/m:cont/lst[k='1']`, `{"l": 5}` for a leaf. The member name may
/// carry the module prefix or not where the parent's module is the same. For
/// the root path the input is a whole document and the result a
/// [`Node::Container`].
///
/// The result is the member's node. For a path ending in a list entry
/// (selector with keys or a position) it is a [`Node::List`] with exactly one
/// entry, whose keys must equal the path's; for a leaf-list entry (`[.='v']`)
/// a [`Node::LeafList`] with exactly that value. An empty array that is not a
/// list gives an empty [`Node::LeafList`].
///
/// # Errors
/// As [`parse_document`]; also [`Error::Json`] when the member is not the
/// node's, and [`Error::Invalid`] when an entry does not match the path's selector.
pub fn parse_subtree<R: Read>(input: R, schema: &dyn Schema, at: &Path) -> Result<Node> {
    subtree(input, BUF_SIZE, schema, at)
}

/// [`parse_subtree`] with a read buffer of `capacity` bytes.
fn subtree<R: Read>(input: R, capacity: usize, schema: &dyn Schema, at: &Path) -> Result<Node> {
    let Some(last) = at.last() else {
        return document(input, capacity, schema).map(Node::Container);
    };
    let parent = at.parent().unwrap_or_default();
    let mut p = Parser::new(input, capacity, schema);
    p.sp = if parent.is_root() { String::new() } else { parent.schema_path() };
    p.open_document()?;
    let mut holder = Container::default();
    p.object_into(&mut holder, parent.module(), Some(&last.name))?;
    p.close_document()?;
    if !holder.meta.is_empty() {
        return Err(Error::invalid(at, "a `@` member beside the node annotates nothing (put it inside the node)"));
    }
    let node = holder.children.remove(&last.name).unwrap_or(Node::LeafList(Vec::new()));
    check_selector(node, at, &last.selector)
}

/// [`parse_subtree`] on a string.
///
/// # Errors
/// As [`parse_subtree`].
pub fn parse_subtree_str(input: &str, schema: &dyn Schema, at: &Path) -> Result<Node> {
    subtree(input.as_bytes(), input.len() + 1, schema, at)
}

/// Checks that the node parsed for `at` is the one instance its selector names.
fn check_selector(node: Node, at: &Path, sel: &Selector) -> Result<Node> {
    match (sel, &node) {
        (Selector::None, _) => Ok(node),
        (Selector::Keys(_) | Selector::Position(_), Node::List(l)) if l.len() == 1 => {
            if let Selector::Keys(keys) = sel {
                let want: Vec<&str> = keys.iter().map(|(_, v)| v.as_str()).collect();
                let entry = l.entries().next();
                let got = entry.and_then(|e| e.key_values(&l.info)).unwrap_or_default();
                if got != want {
                    return Err(Error::invalid(at, format!("the entry's keys {got:?} are not the path's {want:?}")));
                }
            }
            Ok(node)
        }
        (Selector::Value(v), Node::LeafList(entries)) if entries.len() == 1 => {
            if entries[0].value.as_text() != v.as_str() {
                return Err(Error::invalid(at, format!("the value `{}` is not the path's `{v}`", entries[0].value)));
            }
            Ok(node)
        }
        (Selector::Value(_), _) => Err(Error::invalid(at, "expected a leaf-list with exactly one entry")),
        _ => Err(Error::invalid(at, "expected a list with exactly one entry")),
    }
}

/// Reads every token of a JSON text without building anything: the tokenizer's
/// own speed, for the throughput test. Returns the number of tokens.
#[cfg(test)]
pub(super) fn skim(input: &[u8]) -> Result<usize> {
    let mut rd = Reader::new(input, BUF_SIZE);
    let mut n = 0;
    while let Some(b) = rd.peek()? {
        match b {
            b'"' => {
                rd.string_to_scratch()?;
            }
            b'-' | b'0'..=b'9' => {
                rd.number()?;
            }
            b'{' | b'}' | b'[' | b']' | b',' | b':' => rd.bump(),
            _ => {
                rd.literal()?;
            }
        }
        n += 1;
    }
    Ok(n)
}
