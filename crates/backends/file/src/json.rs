//! The `json:` format, version 1: the whole store as one RFC 7951 JSON file
//! (`docs/formats/json-store.md`).
//!
//! ```text
//! {"canopy:store": {"format": 1, "revision": N, "lists": {"<schema path>": {"keys": [..], "user-ordered": b}}},
//!  "canopy:running": <RFC 7951 document>, ... one member per non-empty datastore,
//!  "canopy:raw": {"<hex key>": "<hex value>"}}      only when the store holds other records
//! ```
//! Datastores stream both ways without a tree ([`canopy_store::stream`], the
//! engine's own code): fragments in key order to JSON text on write, JSON text
//! to fragments on read. Order-index records are not written; reading rebuilds
//! them with fresh order keys in document order, as the engine writes them.

use canopy_core::json::{self, Member};
use canopy_core::tree::ListInfo;
use canopy_core::Schemaless;
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::keys::{self, Datastore};
use canopy_store::stream::{self, JsonStream};

use crate::{Format, Map};

pub const VERSION: u64 = 1;
const STORE: &str = "canopy:store";
const RAW: &str = "canopy:raw";

/// The `json:` format.
pub struct JsonFormat;

impl Format for JsonFormat {
    fn name(&self) -> &'static str {
        "json"
    }

    fn encode(&self, map: &Map, revision: u64) -> Result<Vec<u8>> {
        encode(map, revision)
    }

    fn decode(&self, bytes: &[u8]) -> Result<(Map, u64)> {
        decode(bytes)
    }
}

fn member_name(ds: Datastore) -> String {
    format!("canopy:{}", ds.name())
}

/// The datastore whose fragments or order index a key belongs to, if any.
fn keyspace(k: &[u8]) -> Option<(bool, Datastore)> {
    let ds = Datastore::ALL.into_iter().find(|&ds| k.get(1) == Some(&ds.code()))?;
    match k.first() {
        Some(0x10) => Some((true, ds)),
        Some(0x20) => Some((false, ds)),
        _ => None,
    }
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    let mut t = String::with_capacity(s.len() + 2);
    json::write_json_string(&mut t, s);
    out.extend_from_slice(t.as_bytes());
}

/// The JSON file holding `map` at `revision`.
///
/// # Errors
/// `Unsupported` when a datastore's records are not canopy fragments that
/// form a tree (the file could not hold them).
pub fn encode(map: &Map, revision: u64) -> Result<Vec<u8>> {
    let mut lists = Schemaless::default();
    let mut raw: Vec<(&[u8], &[u8])> = Vec::new();
    let mut data_len = [0usize; Datastore::ALL.len()];
    let mut raw_len = 0;
    for (k, v) in map {
        raw_len += k.len() + v.len();
        if k == keys::FORMAT {
            if *v == keys::FORMAT_VERSION.to_be_bytes() {
                continue; // implied by the file
            }
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!(
                    "the layout record holds {}; a JSON store file holds layout {}",
                    keys::hex(v),
                    keys::FORMAT_VERSION
                ),
            ));
        }
        if k == keys::REVISION {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                "a revision record: the JSON store file keeps the revision in `canopy:store`",
            ));
        }
        if let Some(path) = k.strip_prefix(keys::LIST_INFO) {
            let known = std::str::from_utf8(path)
                .ok()
                .and_then(|p| keys::decode_list_info(p, v).ok().map(|i| (p, i)))
                .filter(|(_, i)| keys::encode_list_info(i) == *v);
            if let Some((p, info)) = known {
                lists.lists.insert(p.to_string(), info);
                continue;
            }
        }
        match keyspace(k) {
            Some((true, ds)) => data_len[ds as usize] += k.len() + v.len(),
            Some((false, _)) => {} // order index: rebuilt on load
            None => raw.push((k, v)),
        }
    }
    let mut out = Vec::with_capacity(raw_len + raw_len / 2 + 256);
    out.extend_from_slice(
        format!("{{\"{STORE}\":{{\"format\":{VERSION},\"revision\":{revision},\"lists\":{{").as_bytes(),
    );
    for (i, (path, info)) in lists.lists.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_str(&mut out, path);
        out.extend_from_slice(b":{\"keys\":[");
        for (j, k) in info.keys.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            push_str(&mut out, k);
        }
        out.extend_from_slice(format!("],\"user-ordered\":{}}}", info.user_ordered).as_bytes());
    }
    out.extend_from_slice(b"}}");
    for ds in Datastore::ALL {
        if data_len[ds as usize] == 0 {
            continue;
        }
        out.extend_from_slice(b",\n");
        push_str(&mut out, &member_name(ds));
        out.push(b':');
        out = write_datastore(map, ds, &lists, out).map_err(|e| unholdable(ds, e))?;
    }
    if !raw.is_empty() {
        out.extend_from_slice(format!(",\n\"{RAW}\":{{").as_bytes());
        for (i, (k, v)) in raw.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'"');
            push_hex(&mut out, k);
            out.extend_from_slice(b"\":\"");
            push_hex(&mut out, v);
            out.push(b'"');
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"}\n");
    Ok(out)
}

/// Appends datastore `ds` of `map` to `out` as an RFC 7951 document, streamed
/// from its fragments in key order.
fn write_datastore(map: &Map, ds: Datastore, lists: &Schemaless, out: Vec<u8>) -> Result<Vec<u8>> {
    let prefix = keys::data_prefix(ds);
    let mut s = JsonStream::new(out, false, lists);
    for (k, v) in map.range(prefix.clone()..).take_while(|(k, _)| k.starts_with(&prefix)) {
        match &k[prefix.len()..] {
            [] => s.root(v)?,
            rel => s.fragment(rel, v)?,
        }
    }
    s.finish()
}

fn unholdable(ds: Datastore, e: StoreError) -> StoreError {
    StoreError::new(
        ErrorKind::Unsupported,
        format!("datastore {} is not canopy data a JSON file can hold: {e}", ds.name()),
    )
}

fn corrupted(why: impl std::fmt::Display) -> StoreError {
    StoreError::corrupted(format!("not a canopy JSON store file: {why}"))
}

/// The map and revision a JSON file holds. Nothing is returned unless the
/// whole file checks out.
///
/// # Errors
/// `Corrupted` for a file that is not JSON, not an object, has no
/// `canopy:store` member first or an unknown member, or holds data that is not
/// RFC 7951 (the message names the line and column in the file); `Unsupported`
/// for a newer format version.
pub fn decode(bytes: &[u8]) -> Result<(Map, u64)> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| corrupted(format!("not UTF-8 text (at byte {})", e.valid_up_to())))?;
    let members = json::top_level_members(text).map_err(corrupted)?;
    let Some((store, rest)) = members.split_first().filter(|(m, _)| m.name == STORE) else {
        return Err(corrupted(format!("the first member of the object must be `{STORE}`")));
    };
    let (revision, schema) = decode_store(text, store)?;
    let mut records = vec![(keys::FORMAT.to_vec(), keys::FORMAT_VERSION.to_be_bytes().to_vec())];
    for (path, info) in &schema.lists {
        let mut k = keys::LIST_INFO.to_vec();
        k.extend_from_slice(path.as_bytes());
        records.push((k, keys::encode_list_info(info)));
    }
    let mut raw = Map::new();
    for m in rest {
        let value = &text[m.value.clone()];
        if m.name == RAW {
            decode_raw(value, m, &schema, &mut raw)?;
            continue;
        }
        let Some(ds) = Datastore::ALL.into_iter().find(|&ds| member_name(ds) == m.name) else {
            return Err(corrupted(format!("unknown member `{}` at line {}, column {}", m.name, m.line, m.column)));
        };
        let mut data = stream::parse_fragments(value, &schema, ds)
            .map_err(|e| corrupted(format!("{}: {}", m.name, json::offset_error(e, m))))?;
        if data.len() > records.len() {
            std::mem::swap(&mut records, &mut data); // append the shorter one
        }
        records.append(&mut data);
    }
    // Records are nearly sorted (fragments in document order): the sort that
    // builds the map finds the runs. Raw records hold no key the rest of the
    // file holds (`decode_raw` refuses those), so nothing is overridden.
    records.extend(raw);
    Ok((records.into_iter().collect(), revision))
}

/// `canopy:store`: the format version, the revision and the lists.
fn decode_store(text: &str, m: &Member) -> Result<(u64, Schemaless)> {
    let at = format!("`{STORE}` at line {}, column {}", m.line, m.column);
    let v: serde_json::Value =
        serde_json::from_str(&text[m.value.clone()]).map_err(|e| corrupted(format!("{at}: {e}")))?;
    let obj = v.as_object().ok_or_else(|| corrupted(format!("{at}: not an object")))?;
    if let Some(k) = obj.keys().find(|k| !["format", "revision", "lists"].contains(&k.as_str())) {
        return Err(corrupted(format!("{at}: unknown member `{k}`")));
    }
    let format = obj
        .get("format")
        .and_then(|f| f.as_u64())
        .ok_or_else(|| corrupted(format!("{at}: `format` is missing or not a version number")))?;
    if format > VERSION {
        return Err(StoreError::new(
            ErrorKind::Unsupported,
            format!("JSON store format version {format} is newer than this canopy reads ({VERSION})"),
        ));
    }
    if format != VERSION {
        return Err(corrupted(format!("{at}: format version {format} does not exist")));
    }
    let revision = obj
        .get("revision")
        .and_then(|r| r.as_u64())
        .ok_or_else(|| corrupted(format!("{at}: `revision` is missing or not a number")))?;
    let mut schema = Schemaless::default();
    let lists = match obj.get("lists") {
        None => return Err(corrupted(format!("{at}: `lists` is missing"))),
        Some(l) => l.as_object().ok_or_else(|| corrupted(format!("{at}: `lists` is not an object")))?,
    };
    for (path, info) in lists {
        let info: ListInfo = keys::decode_list_info(path, info.to_string().as_bytes()).map_err(|_| {
            corrupted(format!("{at}: list {path} needs `keys` (strings) and `user-ordered` (a boolean)"))
        })?;
        schema.lists.insert(path.clone(), info);
    }
    Ok((revision, schema))
}

/// `canopy:raw`: records that are not canopy data, hex to hex. Keys the rest
/// of the file stands for are refused: fragments and order-index records of a
/// datastore (they would bypass the RFC 7951 checks), the layout and revision
/// records (implied by `canopy:store`), and list records `lists` holds.
fn decode_raw(value: &str, m: &Member, schema: &Schemaless, map: &mut Map) -> Result<()> {
    let at = format!("`{RAW}` at line {}, column {}", m.line, m.column);
    let v: serde_json::Value = serde_json::from_str(value).map_err(|e| corrupted(format!("{at}: {e}")))?;
    let obj = v.as_object().ok_or_else(|| corrupted(format!("{at}: not an object")))?;
    for (k, v) in obj {
        let bad = || corrupted(format!("{at}: `{k}` is not a hex key with a hex string value"));
        let key = unhex(k).ok_or_else(bad)?;
        let value = v.as_str().and_then(unhex).ok_or_else(bad)?;
        if let Some(why) = reserved(&key, schema) {
            return Err(corrupted(format!("{at}: key `{k}` is {why}; raw records may not hold it")));
        }
        map.insert(key, value);
    }
    Ok(())
}

/// What a key stands for when the file holds it outside `canopy:raw`.
fn reserved(key: &[u8], schema: &Schemaless) -> Option<String> {
    if let Some((data, ds)) = keyspace(key) {
        let what = if data { "a fragment" } else { "an order-index record" };
        return Some(format!("{what} of datastore {} (its data belongs in `{}`)", ds.name(), member_name(ds)));
    }
    if key == keys::FORMAT || key == keys::REVISION {
        return Some(format!(
            "the {} record (given by `{STORE}`)",
            if key == keys::FORMAT { "layout" } else { "revision" }
        ));
    }
    let path = key.strip_prefix(keys::LIST_INFO).and_then(|p| std::str::from_utf8(p).ok())?;
    schema.lists.contains_key(path).then(|| format!("the list record of {path} (given in `{STORE}`)"))
}

fn push_hex(out: &mut Vec<u8>, b: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(b.len() * 2);
    for &x in b {
        out.push(DIGITS[usize::from(x >> 4)]);
        out.push(DIGITS[usize::from(x & 15)]);
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}
