//! How canopy lays data out in a backend's ordered key space.
//!
//! ```text
//! 0x00 "format"            → format version of the layout (u32 BE)
//! 0x00 "revision"          → u64 BE, maintained by the backend
//! 0x00 "list" <schema path> → learned list info (schemaless keys/ordering)
//! 0x00 "lock" <ds code>     → the connection holding the datastore's lock
//! 0x00 "candidate"         → present while candidate differs from running
//! 0x00 "pusher" <conn>      → a connection that pushed operational state
//!                              (version 1, first push time)
//! 0x00 "pushed" <conn> 0x10 <path key> → fragment of a connection's pushed state
//! 0x00 "pushed" <conn> 0x20 <list key> <order key> 0x00 → its order index
//! 0x00 "yang" <module name>  → a YANG module of the store's schema (JSON:
//!                              revision, implemented, text)
//! 0x00 "validation"        → how much of the schema commits check
//!                              (`structure`; absent: everything)
//! 0x00 "leafrefs" <ds code> → the datastore's leafref index is complete for
//!                              the schema's indexed leafrefs (u64 BE identity)
//! 0x10+ds <path key>        → fragment of one container or list entry
//! 0x20+ds <list key> <order key> 0x00 → entry suffix (user-ordered lists: order index)
//! 0x30 ds 0x01 <leafref schema path> <value> <use key> → instance path (text)
//! 0x30 ds 0x02 <use key>    → the 0x01 record's key (the index by instance)
//! ```
//!
//! A **path key** is the concatenation of its segments:
//! `name 0x00 0x01` for a container; `name 0x00 0x01` + the entry key
//! ([`canopy_core::keycode::entry_key`]) for a keyed list entry; `name 0x00 0x01
//! 0x03 <order key> 0x00` for an entry of a keyless list. Names never contain
//! `0x00`, entry keys start with a tag byte (`0x10`, `0x20`) and the order-key
//! marker is `0x03`, all below the first byte of any name, so keys decode
//! unambiguously, a node's key is a prefix of exactly its descendants' keys, and
//! byte order is document order (children by name, entries by key or order).
//! A node's key depends only on its path, never on its position, except in
//! keyless lists, which have nothing else to identify entries.

use canopy_core::keycode;
use canopy_core::path::{Path, Selector};
use canopy_core::tree::ListInfo;

use crate::error::{Result, StoreError};

/// Version of this layout, stored under [`FORMAT`].
pub const FORMAT_VERSION: u32 = 1;
/// Key of the layout version.
pub const FORMAT: &[u8] = b"\x00format";
/// Key of the store revision (maintained by backends).
pub const REVISION: &[u8] = b"\x00revision";
/// Prefix of learned list info records.
pub const LIST_INFO: &[u8] = b"\x00list";
/// Prefix of datastore lock records (one per locked datastore).
pub const LOCK: &[u8] = b"\x00lock";
/// Present while the candidate datastore holds its own contents; absent, the
/// candidate reads as running (RFC 6241: it starts as a copy of running).
pub const CANDIDATE: &[u8] = b"\x00candidate";
/// Prefix of the records of connections that pushed operational state: one
/// per connection, the connection's identity after the prefix (37 bytes: the
/// version 1, host u64, lease u64, process id u32, process start u64,
/// connection id u64, all BE; records of the first layout have 20 bytes,
/// without the version, host and lease), the value
/// [`PUSHER_VERSION`] then the time of the connection's first push (u64 BE,
/// nanoseconds since the Unix epoch).
pub const PUSHER: &[u8] = b"\x00pusher";
/// Version of the pusher record and of the pushed-state key range layout.
pub const PUSHER_VERSION: u8 = 1;
/// Prefix of the operational state connections pushed: after it, the
/// connection's identity (as in [`PUSHER`]), then a data range (`0x10`) and an order
/// index (`0x20`) laid out as a datastore's.
pub const PUSHED: &[u8] = b"\x00pushed";
/// Prefix of the change log: one record per commit, the revision (u64 BE)
/// after the prefix (see [`crate::changelog`]).
pub const LOG: &[u8] = b"\x00log";
/// Prefix of the YANG modules of the store's schema (one record per module,
/// its name after the prefix). The engine reads them; backends store them as
/// any other record.
pub const YANG: &[u8] = b"\x00yang";
/// Key of the store's validation level: absent, commits are checked against
/// everything the schema says; `structure`, against names, structure and
/// types only (see the engine's `Validation`).
pub const VALIDATION: &[u8] = b"\x00validation";

/// Prefix of the records saying a datastore's leafref index is complete (one
/// per datastore, its code after the prefix; the value the identity of the
/// indexed leafrefs, u64 BE).
pub const LEAFREFS: &[u8] = b"\x00leafrefs";

const DATA: u8 = 0x10;
const LEAFREF_INDEX: u8 = 0x30;
const ORDER: u8 = 0x20;
pub(crate) const ORDER_MARK: u8 = 0x03;

/// The NMDA datastores (RFC 8342).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Datastore {
    Running,
    Startup,
    Candidate,
    Operational,
}

impl Datastore {
    pub const ALL: [Datastore; 4] =
        [Datastore::Running, Datastore::Startup, Datastore::Candidate, Datastore::Operational];

    /// The byte that stands for the datastore in keys.
    pub fn code(self) -> u8 {
        match self {
            Datastore::Running => 1,
            Datastore::Startup => 2,
            Datastore::Candidate => 3,
            Datastore::Operational => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Datastore::Running => "running",
            Datastore::Startup => "startup",
            Datastore::Candidate => "candidate",
            Datastore::Operational => "operational",
        }
    }
}

impl std::str::FromStr for Datastore {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Datastore, String> {
        Datastore::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown datastore `{s}` (running, startup, candidate, operational)"))
    }
}

impl Datastore {
    /// The datastore a key byte stands for.
    pub fn from_code(code: u8) -> Option<Datastore> {
        Datastore::ALL.into_iter().find(|d| d.code() == code)
    }
}

/// The key of a datastore's lock record.
pub fn lock_key(ds: Datastore) -> Vec<u8> {
    let mut k = LOCK.to_vec();
    k.push(ds.code());
    k
}

/// The key of a connection's pusher record.
pub fn pusher_key(conn: &[u8]) -> Vec<u8> {
    let mut k = PUSHER.to_vec();
    k.extend_from_slice(conn);
    k
}

/// The prefix of everything a connection pushed (its data and order index).
pub fn pushed_prefix(conn: &[u8]) -> Vec<u8> {
    let mut k = PUSHED.to_vec();
    k.extend_from_slice(conn);
    k
}

/// Where the fragments and the order index of one tree live: a datastore's
/// ranges, or those of one connection's pushed state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Space {
    /// Prefix of the fragments; the key of the root fragment.
    pub data: Vec<u8>,
    /// Prefix of the order index.
    pub order: Vec<u8>,
}

impl Space {
    /// A datastore's ranges.
    pub fn datastore(ds: Datastore) -> Space {
        Space { data: data_prefix(ds), order: order_prefix(ds) }
    }

    /// The ranges of the state the connection `conn` pushed.
    pub fn pushed(conn: &[u8]) -> Space {
        let base = pushed_prefix(conn);
        let mut data = base.clone();
        data.push(DATA);
        let mut order = base;
        order.push(ORDER);
        Space { data, order }
    }
}

/// The prefix of all fragments of a datastore; the key of its root fragment.
pub fn data_prefix(ds: Datastore) -> Vec<u8> {
    vec![DATA, ds.code()]
}

/// The prefix of a datastore's order index.
pub fn order_prefix(ds: Datastore) -> Vec<u8> {
    vec![ORDER, ds.code()]
}

/// The key of the record saying `ds`'s leafref index is complete.
pub fn leafrefs_key(ds: Datastore) -> Vec<u8> {
    let mut k = LEAFREFS.to_vec();
    k.push(ds.code());
    k
}

/// The prefix of a datastore's leafref index: records by (leafref, value)
/// after it with byte `0x01`, by instance with `0x02`. A leafref instance's
/// *use key* is its parent's path key, its name ([`push_name`]) and for a
/// leaf-list entry its value (escaped as names are), so the uses under a
/// node's path key share it as prefix.
pub fn leafref_index_prefix(ds: Datastore) -> Vec<u8> {
    vec![LEAFREF_INDEX, ds.code()]
}

/// Appends a name segment.
pub fn push_name(out: &mut Vec<u8>, name: &str) {
    keycode::push_escaped(out, name.as_bytes());
}

/// Appends the selector of a keyless-list entry.
pub fn push_order(out: &mut Vec<u8>, order: &[u8]) {
    out.push(ORDER_MARK);
    out.extend_from_slice(order);
    out.push(0);
}

/// The path key of `path` (relative: no datastore prefix). Keys must be in the
/// list's key order. Keyless entries (positions) and leaf-list entries have no
/// path key of their own.
///
/// # Errors
/// `Unsupported` for a path with a position or leaf-list selector.
pub fn path_key(path: &Path) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(path.key_len_hint());
    for seg in &path.segments {
        push_name(&mut out, &seg.name);
        match &seg.selector {
            Selector::None => {}
            Selector::Keys(keys) => {
                for (_, v) in keys {
                    keycode::push_key_value(&mut out, v);
                }
            }
            Selector::Position(_) | Selector::Value(_) => {
                return Err(StoreError::new(
                    crate::ErrorKind::Unsupported,
                    format!("{path}: positions and leaf-list entries have no storage key of their own"),
                ))
            }
        }
    }
    Ok(out)
}

/// One decoded segment of a path key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawSelector {
    None,
    /// Key values, in stored (key) order.
    Keys(Vec<String>),
    /// Order key of a keyless-list entry.
    Order(Vec<u8>),
}

/// One decoded segment of a path key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSegment {
    pub name: String,
    pub selector: RawSelector,
}

/// Decodes a path key into its segments.
///
/// # Errors
/// `Corrupted` when the bytes are not a path key.
pub fn decode_path_key(key: &[u8]) -> Result<Vec<RawSegment>> {
    let bad = || malformed_key(key);
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < key.len() {
        let name = String::from_utf8(keycode::read_escaped(key, &mut pos).ok_or_else(bad)?).map_err(|_| bad())?;
        let selector = match key.get(pos) {
            Some(0x10) | Some(0x20) => {
                let mut vals = Vec::new();
                while matches!(key.get(pos), Some(0x10) | Some(0x20)) {
                    vals.push(keycode::read_key_value(key, &mut pos).ok_or_else(bad)?);
                }
                RawSelector::Keys(vals)
            }
            Some(&ORDER_MARK) => {
                let end = key[pos + 1..].iter().position(|&b| b == 0).ok_or_else(bad)? + pos + 1;
                let order = key[pos + 1..end].to_vec();
                if !keycode::is_order_key(&order) {
                    return Err(bad());
                }
                pos = end + 1;
                RawSelector::Order(order)
            }
            _ => RawSelector::None,
        };
        out.push(RawSegment { name, selector });
    }
    Ok(out)
}

/// The node name a key segment starts with, and where the name's part of
/// the segment ends (the segment's length for a container; its entry key
/// follows for a list entry). Borrowed from the key unless the name holds
/// an escaped NUL. `None` when the bytes are not an escaped UTF-8 name.
pub fn segment_name(seg: &[u8]) -> Option<(std::borrow::Cow<'_, str>, usize)> {
    match keycode::plain_escaped(seg, 0) {
        Some(end) => Some((std::str::from_utf8(&seg[..end]).ok()?.into(), end + 2)),
        None => {
            let mut pos = 0;
            let name = keycode::read_escaped(seg, &mut pos)?;
            Some((String::from_utf8(name).ok()?.into(), pos))
        }
    }
}

/// Length of the first segment of a path key (name and selector), so callers can
/// walk keys segment by segment.
///
/// # Errors
/// `Corrupted` when the bytes are not a path key.
pub fn first_segment_len(key: &[u8]) -> Result<usize> {
    let bad = || malformed_key(key);
    let mut pos = 0;
    keycode::skip_escaped(key, &mut pos).ok_or_else(bad)?;
    match key.get(pos) {
        Some(0x10) | Some(0x20) => {
            while matches!(key.get(pos), Some(0x10) | Some(0x20)) {
                keycode::skip_key_value(key, &mut pos).ok_or_else(bad)?;
            }
        }
        Some(&ORDER_MARK) => {
            let end = key[pos + 1..].iter().position(|&b| b == 0).ok_or_else(bad)? + pos + 1;
            if !keycode::is_order_key(&key[pos + 1..end]) {
                return Err(bad());
            }
            pos = end + 1;
        }
        _ => {}
    }
    Ok(pos)
}

/// The `Corrupted` error for a path key that does not decode: the path
/// decoded up to the problem, the byte where it is, and what stands there.
pub fn malformed_key(key: &[u8]) -> StoreError {
    let (path, pos, what) = diagnose_key(key);
    let at = if path.is_empty() { String::new() } else { format!(" after `{path}`") };
    StoreError::corrupted(format!(
        "malformed fragment key{at}: at byte {pos} of {}, {what} (key {})",
        key.len(),
        hex(key)
    ))
}

/// Walks `key` as [`decode_path_key`] does, stopping at the first problem.
fn diagnose_key(key: &[u8]) -> (String, usize, String) {
    let mut path = String::new();
    let mut pos = 0;
    let byte = |at: usize| key.get(at).map_or("the end of the key".to_string(), |b| format!("byte 0x{b:02x}"));
    while pos < key.len() {
        let start = pos;
        let Some(name) = keycode::read_escaped(key, &mut pos) else {
            let end = key[start..].windows(2).position(|w| w[0] == 0 && w[1] != 0xFF).map(|i| start + i);
            return match end {
                Some(z) => (path, z + 1, format!("a name ends in 0x00 then {}, not 0x01", byte(z + 1))),
                None => (path, key.len(), "a name runs to the end of the key without its 0x00 0x01 end".into()),
            };
        };
        let Ok(name) = String::from_utf8(name) else {
            return (path, start, "a name that is not UTF-8".into());
        };
        path.push('/');
        path.push_str(&name);
        match key.get(pos) {
            Some(0x10) | Some(0x20) => {
                let mut vals = Vec::new();
                while matches!(key.get(pos), Some(0x10) | Some(0x20)) {
                    let at = pos;
                    match keycode::read_key_value(key, &mut pos) {
                        Some(v) => vals.push(v),
                        None if key[at] == 0x10 => {
                            return (path, at, "an integer key value cut short (it takes 8 bytes)".into())
                        }
                        None => {
                            return (path, at, "a text key value that is not escaped UTF-8 ending in 0x00 0x01".into())
                        }
                    }
                }
                path.push_str(&format!("{vals:?}"));
            }
            Some(&ORDER_MARK) => {
                let Some(end) = key[pos + 1..].iter().position(|&b| b == 0).map(|i| pos + 1 + i) else {
                    return (path, pos, "an order key without its 0x00 end".into());
                };
                if !keycode::is_order_key(&key[pos + 1..end]) {
                    return (path, pos + 1, format!("a malformed order key `{}`", hex(&key[pos + 1..end])));
                }
                path.push_str(&format!("[order {}]", hex(&key[pos + 1..end])));
                pos = end + 1;
            }
            _ => {}
        }
    }
    (path, pos, "nothing wrong".into())
}

/// The stored form of a list's info: `{"keys":[...],"user-ordered":bool}`.
pub fn encode_list_info(info: &ListInfo) -> Vec<u8> {
    serde_json::json!({"keys": info.keys, "user-ordered": info.user_ordered}).to_string().into_bytes()
}

/// Decodes a list info record of the list at schema path `path`.
///
/// # Errors
/// `Corrupted` when the bytes are not a list info record.
pub fn decode_list_info(path: &str, b: &[u8]) -> Result<ListInfo> {
    let bad = || StoreError::corrupted(format!("list info of {path} is damaged"));
    let v: serde_json::Value = serde_json::from_slice(b).map_err(|_| bad())?;
    let keys = v["keys"]
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|k| k.as_str().map(canopy_core::tree::Name::from).ok_or_else(bad))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let user_ordered = v["user-ordered"].as_bool().ok_or_else(bad)?;
    Ok(ListInfo { keys, user_ordered })
}

/// Hex form of bytes for messages.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether an order-index record, given by what follows its list's order
/// prefix, is the list's own (`<order key> 0x00`: an order key holds no
/// 0x00) and not one of a user-ordered list inside one of its entries, whose
/// records share the prefix and are longer.
pub fn own_order_record(rest: &[u8]) -> bool {
    rest.iter().position(|&b| b == 0) == Some(rest.len().wrapping_sub(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_sort_in_document_order() {
        let paths = [
            "/m:c",
            "/m:c/a",
            "/m:c/lst[k='10']",
            "/m:c/lst[k='10']/x",
            "/m:c/lst[k='9']",
            "/m:c/lst[k='a']",
            "/m:c/lst[k='a b']",
            "/m:c/lst2[k1='1'][k2='x']",
            "/m:c/z",
            "/m:d",
        ];
        let mut keys: Vec<(Vec<u8>, &str)> =
            paths.iter().map(|p| (path_key(&p.parse().unwrap()).unwrap(), *p)).collect();
        keys.sort();
        let order: Vec<&str> = keys.iter().map(|k| k.1).collect();
        assert_eq!(
            order,
            [
                "/m:c",
                "/m:c/a",
                "/m:c/lst[k='9']",
                "/m:c/lst[k='10']",
                "/m:c/lst[k='10']/x",
                "/m:c/lst[k='a']",
                "/m:c/lst[k='a b']",
                "/m:c/lst2[k1='1'][k2='x']",
                "/m:c/z",
                "/m:d"
            ]
        );
        let d = decode_path_key(&path_key(&"/m:c/lst2[k1='1'][k2='x']/y".parse().unwrap()).unwrap()).unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[1].selector, RawSelector::Keys(vec!["1".into(), "x".into()]));
        let mut k = b"x\x00\x01".to_vec();
        push_order(&mut k, &[0x83, 0x80, 1, 1]);
        assert_eq!(decode_path_key(&k).unwrap()[0].selector, RawSelector::Order(vec![0x83, 0x80, 1, 1]));
        assert_eq!(first_segment_len(&k).unwrap(), k.len());
    }

    #[test]
    fn garbage_keys_are_errors() {
        for bad in [&b"abc"[..], b"a\x00\x05", b"a\x00\x01\x10\x00", b"a\x00\x01\x03\x01"] {
            assert!(decode_path_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn malformed_keys_say_where_and_what() {
        let good = path_key(&"/m:c/lst[k='5']".parse().unwrap()).unwrap();
        for (key, says) in [
            (b"abc".to_vec(), "at byte 3 of 3, a name runs to the end of the key"),
            (b"m:c\x00\x05".to_vec(), "at byte 4 of 5, a name ends in 0x00 then byte 0x05, not 0x01"),
            ([&good[..], b"\x10\x00"].concat(), "after `/m:c/lst`: at byte 19 of 21, an integer key value cut short"),
            (
                [&good[..10], b"\x03\x01"].concat(),
                "after `/m:c/lst`: at byte 10 of 12, an order key without its 0x00 end",
            ),
            (b"m:c\x00\x01\xff\x00\x01".to_vec(), "after `/m:c`: at byte 5 of 8, a name that is not UTF-8"),
        ] {
            let e = decode_path_key(&key).unwrap_err().to_string();
            assert!(e.contains(says), "{e} lacks {says}");
            assert!(e.contains(&hex(&key)), "{e}");
        }
    }
}
