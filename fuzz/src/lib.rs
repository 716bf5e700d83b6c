//! The checks behind canopy's fuzz targets, one function per target.
//!
//! Each takes arbitrary bytes and asserts what must hold for every input:
//! nothing panics, and what parses prints back to something that parses to
//! the same value. `cargo fuzz run TARGET` (nightly, cargo-fuzz) drives them
//! with libFuzzer; `tests/replay.rs` runs them on stable over the seed corpus
//! in `corpus/TARGET/` and deterministic mutations of it, so CI exercises
//! every check without a fuzzer.

use std::collections::BTreeMap;

use canopy_core::json::{parse_str, to_string, WriteOptions};
use canopy_core::{Path, Query, Schemaless};
use canopy_file::{json::JsonFormat, snapshot::SnapshotFormat, Format};
use canopy_store::fragment;
use canopy_store::keys::{self, Datastore};

/// Paths and queries: a canonical path prints to text that parses back to
/// the same path; a query parses or fails, never panics.
pub fn path(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = Query::parse(text);
    let _ = Query::parse_instance(text);
    if let Ok(p) = text.parse::<Path>() {
        let printed = p.to_string();
        let again: Path = printed.parse().unwrap_or_else(|e| panic!("`{printed}` (from `{text}`) does not parse: {e}"));
        assert_eq!(again, p, "`{text}` printed as `{printed}`");
        // Every canonical path has a store key, and the key decodes.
        if let Ok(k) = keys::path_key(&p) {
            keys::decode_path_key(&k).unwrap_or_else(|e| panic!("key of `{printed}` does not decode: {e}"));
        }
    }
}

/// RFC 7951 JSON: a document that parses writes back to JSON that parses to
/// the same tree, the streaming parser that fills stores agrees with the
/// tree parser on whether the document is acceptable, and the reading parser
/// of streamed imports gives the records the streaming parser gives.
pub fn json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let schema = Schemaless::default();
    let tree = parse_str(text, &schema);
    let streamed = canopy_store::stream::parse_fragments(text, &schema, Datastore::Running);
    assert_eq!(
        tree.is_ok(),
        streamed.is_ok(),
        "tree parse {:?}, streamed parse {:?}",
        tree.as_ref().err(),
        streamed.err()
    );
    // The reading parser that streams imports hands on the same records
    // (sorted: it hands them on as entries end), fed a few bytes at a time.
    let mut records = Vec::new();
    let read = canopy_store::stream::stream_fragments(Trickle(data), &schema, Datastore::Running, &mut |k, v| {
        records.push((k, v));
        Ok(())
    });
    match (&streamed, read) {
        (Ok(all), Ok(r)) => {
            let mut all = all.clone();
            all.sort();
            records.sort();
            assert_eq!(records, all, "streamed records of `{text}`");
            assert_eq!(r.records, records.len() as u64);
        }
        (Err(_), Err(canopy_store::stream::StreamError::Json(_))) => {}
        (a, b) => panic!("parse_fragments {:?}, stream_fragments {:?}", a.as_ref().err(), b.err()),
    }
    if let Ok(tree) = tree {
        let written = to_string(&tree, &WriteOptions::default());
        let again = parse_str(&written, &schema).unwrap_or_else(|e| panic!("written `{written}` does not parse: {e}"));
        assert_eq!(again, tree, "`{text}` written as `{written}`");
    }
}

/// A reader that hands out at most 7 bytes a call: reads split tokens and
/// UTF-8 sequences anywhere.
struct Trickle<'a>(&'a [u8]);

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(7);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Stored fragments: bytes that decode re-encode to bytes that decode to the
/// same container and order key.
pub fn fragment(data: &[u8]) {
    let _ = fragment::open(data).map(|(_, _, mut inline)| while let Ok(Some(_)) = inline.next(data) {});
    if let Ok(d) = fragment::decode(data) {
        let bytes = fragment::encode(&d.container, d.order.as_deref());
        let again = fragment::decode(&bytes).unwrap_or_else(|e| panic!("re-encoded fragment does not decode: {e}"));
        assert_eq!(again.container, d.container);
        assert_eq!(again.order, d.order);
    }
}

/// Whole-file stores: a file either is refused or loads into a key map
/// that writes back to a file holding the same map and revision. The first
/// byte picks the format (snapshot, json); the rest is the file.
pub fn store_file(data: &[u8]) {
    let Some((&pick, file)) = data.split_first() else { return };
    let format: &dyn Format = if pick % 2 == 0 { &SnapshotFormat } else { &JsonFormat };
    let Ok((map, revision)) = format.decode(file) else { return };
    // Every fragment a loaded file holds is decoded or refused, never a panic.
    for v in map.values() {
        let _ = fragment::decode(v);
    }
    let Ok(bytes) = format.encode(&map, revision) else { return };
    let (again, rev) = format
        .decode(&bytes)
        .unwrap_or_else(|e| panic!("{} file written from a loaded map does not load: {e}", format.name()));
    assert_eq!(rev, revision);
    assert_eq!(again, map);
}

/// Store keys and control records: decoded or refused, never a panic, and a
/// decoded key's segment lengths stay within the key.
pub fn store_key(data: &[u8]) {
    if let Ok(len) = keys::first_segment_len(data) {
        assert!(len <= data.len(), "segment of {len} bytes in a key of {}", data.len());
    }
    let _ = keys::decode_path_key(data);
    let _ = canopy_store::treeio::describe_key(data);
    let _ = keys::decode_list_info("/fuzz", data);
}

/// The targets by name, for the replay test.
/// The server's request router: a request line (`METHOD URI`) gets a path or
/// a RESTCONF error, never a panic; a path it resolves prints as an
/// api-path that resolves to the same path.
pub fn request(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (method, uri) = text.split_once(' ').unwrap_or(("GET", text));
    let mut lists = Schemaless::default();
    lists.lists.insert("/m:a/l".into(), canopy_core::ListInfo::keyed(["k1", "k2"]));
    lists.lists.insert("/m:a/l/n".into(), canopy_core::ListInfo::keyed(["k"]));
    let resolver = canopy_server::Resolver { yang: None, lists: std::sync::Arc::new(lists) };
    if let Ok(p) = canopy_server::parse_request(uri, method, &resolver) {
        let again = canopy_server::api_path(&p);
        let back = resolver
            .to_path(&again)
            .unwrap_or_else(|e| panic!("`{again}` (from `{text}`) does not resolve: {}", e.message));
        assert_eq!(back, p, "`{text}` printed as `{again}`");
    }
}

pub fn targets() -> BTreeMap<&'static str, fn(&[u8])> {
    BTreeMap::from([
        ("path", path as fn(&[u8])),
        ("json", json),
        ("fragment", fragment),
        ("store_file", store_file),
        ("store_key", store_key),
        ("request", request),
    ])
}
