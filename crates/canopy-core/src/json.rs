//! RFC 7951 JSON: parsing documents into trees and writing trees as text.
//!
//! * [`parse_document`] / [`parse_str`] read a whole document through a buffer
//!   into a [`crate::Container`]; [`parse_subtree`] reads the value of one node.
//! * [`JsonWriter`] writes a document from events in document order (what the
//!   storage engine drives); [`write_container`] and [`to_string`] write a tree
//!   through it.
//!
//! Both sides use the same conventions: member names carry a module prefix
//! only where the module changes, lists and leaf-lists are arrays, `[null]` is
//! the empty value, numbers keep their text, and metadata is written as RFC 7952
//! annotations (`"@"` inside containers and list entries, `"@leaf"` beside a
//! leaf or anydata, `"@leaf-list": [{..} | null, ...]` beside a leaf-list).
//!
//! Choices worth knowing:
//! * An empty array carries no data unless the schema knows a list there: it
//!   parses to an empty list then and is dropped otherwise, so an empty
//!   leaf-list, written as `[]`, does not come back.
//! * Annotation values are text (`2.4` and `true` become `"2.4"`, `"true"`);
//!   annotation names may be any non-empty string (RFC 7952 would require
//!   `module:name`; schemaless metadata is freer).
//! * Anydata is opaque JSON, `null` included; its numbers go through
//!   `serde_json::Number`, which writes exponents with a sign (`1e+5`).
//! * Nesting is limited to [`MAX_DEPTH`] levels; a byte-order mark is not accepted.

mod parse;
mod view;
mod write;

#[cfg(test)]
mod tests;

pub use parse::{
    offset_error, parse_document, parse_emit, parse_emit_reader, parse_str, parse_subtree, parse_subtree_str,
    top_level_members, Emit, Member, MAX_DEPTH,
};
pub use view::{ChildView, NodeView};
pub use write::{to_string, write_container, write_members, JsonWriter, WriteOptions};

/// The annotation that marks a default value in `report-all-tagged` replies
/// (RFC 6243 section 6, RFC 8040 section 4.8.9); written as a JSON boolean.
pub const DEFAULT_TAG: &str = "ietf-netconf-with-defaults:default";

/// `\u00XX` escapes of the control characters without a short escape.
const CONTROL_ESCAPES: [&str; 32] = [
    "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007", "\\u0008", "\\t", "\\n",
    "\\u000b", "\\u000c", "\\r", "\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014",
    "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e",
    "\\u001f",
];

/// Calls `emit` with the pieces of the escaped content of `s` (without the
/// quotes), in order: runs of `s` that need no escaping and escape sequences.
#[inline]
fn escape_pieces(s: &str, mut emit: impl FnMut(&str)) {
    if !needs_escape(s) {
        emit(s);
        return;
    }
    let bytes = s.as_bytes();
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0..=0x1F => CONTROL_ESCAPES[b as usize],
            _ => continue,
        };
        // `i` is at an ASCII byte, so both slices fall on char boundaries.
        emit(&s[run..i]);
        emit(esc);
        run = i + 1;
    }
    emit(&s[run..]);
}

/// Whether `s` holds a character a JSON string must escape (a quote, a
/// backslash or a control character), checked eight bytes at a time: most
/// names and values hold none, and are then copied as they are.
pub fn needs_escape(s: &str) -> bool {
    any_special(s.as_bytes(), false)
}

/// [`needs_escape`], or `s` holds a colon: a name that is written as it is
/// when it has no module prefix.
pub fn needs_escape_or_colon(s: &str) -> bool {
    any_special(s.as_bytes(), true)
}

/// Bytes a JSON string escapes, and (in the second table) the colon too.
static SPECIAL: [[bool; 256]; 2] = {
    let mut t = [[false; 256]; 2];
    let mut b = 0;
    while b < 256 {
        let escaped = b < 0x20 || b == b'"' as usize || b == b'\\' as usize;
        t[0][b] = escaped;
        t[1][b] = escaped || b == b':' as usize;
        b += 1;
    }
    t
};

#[inline]
fn any_special(b: &[u8], colon: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Nonzero when some byte of `x` is zero (exact as a yes/no answer).
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let hit = |c: &[u8]| {
        let x = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        // Some byte below 0x20 (exact for bounds up to 0x80), a quote, a backslash.
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let mut h = control | zero_byte(x ^ (ONES * u64::from(b'"'))) | zero_byte(x ^ (ONES * u64::from(b'\\')));
        if colon {
            h |= zero_byte(x ^ (ONES * u64::from(b':')));
        }
        h != 0
    };
    if b.len() < 8 {
        let t = &SPECIAL[usize::from(colon)];
        return b.iter().any(|&c| t[usize::from(c)]);
    }
    let mut chunks = b.chunks_exact(8);
    if chunks.any(hit) {
        return true;
    }
    // The last bytes as the last eight, which overlap the chunks before.
    !chunks.remainder().is_empty() && hit(&b[b.len() - 8..])
}

/// Appends `s` as a JSON string literal.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    escape_pieces(s, |p| out.push_str(p));
    out.push('"');
}
