//! Reads of a whole list stream entry after entry from the stored fragments
//! (uncached) and give the same document as the tree-building read (cached).

use canopy::{ListInfo, ReadOptions, Store};
use canopy_store::memory::MemoryBackend;
use canopy_store::metered::Metered;

fn json(store: &Store, path: &str) -> String {
    let mut out = Vec::new();
    store.running().get_json(path, ReadOptions::default(), false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn fill(store: &Store) {
    store.declare_list("/m:top", ListInfo::keyed(["k"])).unwrap();
    store.declare_list("/m:c/e", ListInfo::keyed(["a", "b"])).unwrap();
    store.declare_list("/m:c/e/lst", ListInfo::keyed(["n"])).unwrap();
    store.declare_list("/m:c/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    let doc = serde_json::json!({
        "m:top": [{"k": "x", "v": 1}, {"k": "y", "sub": {"deep": [1, 2]}}],
        "m:c": {
            "e": [
                {"a": "1", "b": "z", "lst": [{"n": "p", "q": true}, {"n": "o"}]},
                {"a": "10", "b": "a", "lst": [{"n": "only"}], "other": "x"}
            ],
            "u": [{"k": "3"}, {"k": "1", "w": {"x": 1}}, {"k": "2"}],
            "leaf": "l"
        }
    });
    store.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
}

#[test]
fn a_whole_list_streams_as_the_tree_read_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let streamed = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    fill(&streamed);
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    for path in ["/m:top", "/m:c/e", "/m:c/e[a='1'][b='z']/lst", "/m:c/u", "/m:c/missing", "/m:c/e[a='9'][b='z']/lst"] {
        let s = json(&streamed, path);
        assert_eq!(s, json(&built, path), "{path}");
        assert_ne!(s, "", "{path}");
    }
    assert!(json(&streamed, "/m:c/u").contains(r#""u":[{"k":"3"},{"k":"1","#), "user order kept");
}

/// The list read is one range scan: it visits the list's fragments and the
/// ancestors, not the rest of the store.
#[test]
fn a_list_read_scans_the_list_only() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:streamed", canopy::Options::default()).unwrap();
    fill(&store);
    let big: Vec<serde_json::Value> = (0..1000).map(|i| serde_json::json!({"k": format!("k{i}")})).collect();
    store.running().import(serde_json::json!({"m:top": big}).to_string().as_bytes(), canopy::Operation::Merge).unwrap();
    reads.reset();
    let out = json(&store, "/m:c/e");
    assert!(out.contains(r#""other":"x""#), "{out}");
    let read = reads.total();
    assert!(read < 30, "reading a 2-entry list read {read} keys of a store with 1,000 others");
}

/// Writes nothing, noting how many keys the store had read when the first
/// output came.
struct FirstWrite {
    reads: std::sync::Arc<canopy_store::metered::Reads>,
    at: Option<u64>,
    bytes: usize,
}

impl std::io::Write for FirstWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.at.get_or_insert_with(|| self.reads.total());
        self.bytes += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A whole list is written while it is read: output comes long before the
/// scan ends (a read that builds the tree first writes only after it).
#[test]
fn a_list_is_written_while_it_is_read() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:streamed-early", canopy::Options::default()).unwrap();
    store.declare_list("/m:top", ListInfo::keyed(["k"])).unwrap();
    let big: Vec<serde_json::Value> =
        (0..20_000).map(|i| serde_json::json!({"k": format!("k{i:05}"), "v": i})).collect();
    store.running().import(serde_json::json!({"m:top": big}).to_string().as_bytes(), canopy::Operation::Merge).unwrap();
    reads.reset();
    let mut out = FirstWrite { reads: reads.clone(), at: None, bytes: 0 };
    store.running().get_json("/m:top", ReadOptions::default(), false, &mut out).unwrap();
    let (first, total) = (out.at.expect("something written"), reads.total());
    assert!(total >= 20_000, "{total} keys read");
    assert!(first < total / 2, "the first output came after {first} of {total} keys were read");
    assert!(out.bytes > 20_000 * 10);
}

/// Queries that stay inside the entries of one list are read entry by entry
/// (uncached) and give what the tree-building read gives (cached): the JSON,
/// the tree of `get`, the count; with depth limits, ancestors with metadata
/// and key leaves on both sides of the path, nothing selected, and lists
/// below pinned entries.
#[test]
fn a_query_inside_one_list_reads_as_the_tree_read_does() {
    let dir = tempfile::tempdir().unwrap();
    let streamed = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    fill(&streamed);
    streamed.declare_list("/m:d/dev", ListInfo::keyed(["id"])).unwrap();
    streamed.declare_list("/m:d/dev/port", ListInfo::keyed(["p"])).unwrap();
    let devs: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            serde_json::json!({
                "id": format!("d{i:02}"), "state": if i % 3 == 0 { "up" } else { "down" }, "n": i,
                "info": {"type": if i % 2 == 0 { "x" } else { "r" }, "geo": {"lat": i}},
                "port": [{"p": "a", "s": i % 4}, {"p": "b", "s": 1}],
                "@state": {"m:origin": "here"}
            })
        })
        .collect();
    let doc = serde_json::json!({"m:d": {"dev": devs, "aa": "before", "zz": "after", "@": {"m:note": "d"}}});
    streamed.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    let queries = [
        "/m:d/dev[state='up']",
        "/m:d/m:dev[state='up']",
        "/m:d/m:dev[info/type='x' and n>10]",
        "/m:d/m:dev[info/type='x' or port/s=3]/info",
        "/m:d/m:dev[state='none']",
        "/m:d/m:dev/port[s=1]",
        "/m:d/m:dev//lat",
        "/m:d/m:dev[port[p='a']/s=2]/port[p='a']",
        "/m:d/m:dev[info/geo/lat=../n]",
        "/m:c/e[a='1'][b='z']/lst[q='true']",
        "/m:c/e[b='a']",
        "/m:c/m:e[b='a']/lst",
        "/m:top[v=1]",
    ];
    for q in queries {
        for depth in [None, Some(0), Some(1)] {
            let opts = ReadOptions { depth, ..ReadOptions::default() };
            let (mut s, mut b) = (Vec::new(), Vec::new());
            streamed.running().get_json(q, opts, false, &mut s).unwrap();
            built.running().get_json(q, opts, false, &mut b).unwrap();
            assert_eq!(String::from_utf8(s).unwrap(), String::from_utf8(b).unwrap(), "{q} depth {depth:?}");
            assert_eq!(streamed.running().get(q, opts).unwrap(), built.running().get(q, opts).unwrap(), "{q}");
        }
        let (mut s, mut b) = (Vec::new(), Vec::new());
        streamed.running().get_json(q, ReadOptions::default(), true, &mut s).unwrap();
        built.running().get_json(q, ReadOptions::default(), true, &mut b).unwrap();
        assert_eq!(s, b, "{q} pretty");
        assert_eq!(streamed.running().count(q).unwrap(), built.running().count(q).unwrap(), "{q}");
    }
    assert_eq!(streamed.running().count("/m:d/m:dev[state='up']").unwrap(), 10);
}

/// A query with a predicate on a non-key leaf reads the list it filters and
/// nothing else, and writes each matching entry while the scan goes on.
#[test]
fn a_query_reads_the_list_it_filters_entry_by_entry() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:scanned", canopy::Options::default()).unwrap();
    store.declare_list("/m:top", ListInfo::keyed(["k"])).unwrap();
    store.declare_list("/m:other", ListInfo::keyed(["k"])).unwrap();
    let big: Vec<serde_json::Value> =
        (0..20_000).map(|i| serde_json::json!({"k": format!("k{i:05}"), "v": i % 2, "c": {"x": i}})).collect();
    store
        .running()
        .import(
            serde_json::json!({"m:top": big.clone(), "m:other": big}).to_string().as_bytes(),
            canopy::Operation::Merge,
        )
        .unwrap();
    reads.reset();
    let mut out = FirstWrite { reads: reads.clone(), at: None, bytes: 0 };
    store.running().get_json("/m:top[v=1]", ReadOptions::default(), false, &mut out).unwrap();
    let (first, total) = (out.at.expect("something written"), reads.total());
    assert!((40_000..40_100).contains(&total), "{total} keys read for a 20,000-entry list of 40,000 fragments");
    assert!(first < total / 2, "the first output came after {first} of {total} keys were read");
    assert!(out.bytes > 10_000 * 10);
    assert_eq!(store.running().count("/m:top[c/x>=19990]").unwrap(), 10);
}

/// A store with a user-ordered list of `n` entries whose user order is not
/// their key order, each entry with a
/// container, metadata on some, and a user-ordered list inside some.
fn fill_ordered(store: &Store, n: usize) {
    store.declare_list("/m:c/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    store.declare_list("/m:c/u/inner", ListInfo { keys: vec!["n".into()], user_ordered: true }).unwrap();
    store.declare_list("/m:c/v", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    let entries: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            let k = (i * 7919) % n;
            let mut e = serde_json::json!({"k": format!("k{k}"), "w": {"x": k}, "z": "last"});
            if k.is_multiple_of(5) {
                e["inner"] = serde_json::json!([{"n": "b"}, {"n": "a", "d": {"y": 1}}, {"n": "c"}]);
            }
            if k.is_multiple_of(7) {
                e["@"] = serde_json::json!({"m:note": "seven"});
            }
            e
        })
        .collect();
    let doc = serde_json::json!({"m:c": {"a": 1, "u": entries, "v": [{"k": "2"}, {"k": "1"}], "zz": "end"}});
    store.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
}

/// A user-ordered list is written in order from its order index, across
/// batches of index records, and gives the document the tree read gives:
/// the list, its container, the root, an entry, a list in an entry.
#[test]
fn a_user_ordered_list_streams_in_order_as_the_tree_read_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let streamed = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    fill_ordered(&streamed, 700);
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    for path in ["/m:c/u", "/m:c", "/", "/m:c/u[k='k5']", "/m:c/u[k='k5']/inner", "/m:c/v", "/m:c/u[k='k1']"] {
        for pretty in [false, true] {
            let mut s = Vec::new();
            streamed.running().get_json(path, ReadOptions::default(), pretty, &mut s).unwrap();
            let mut b = Vec::new();
            built.running().get_json(path, ReadOptions::default(), pretty, &mut b).unwrap();
            let at = s.iter().zip(&b).position(|(x, y)| x != y).unwrap_or(s.len().min(b.len()));
            let near =
                |v: &[u8]| String::from_utf8_lossy(&v[at.saturating_sub(80)..(at + 80).min(v.len())]).into_owned();
            assert!(s == b, "{path} pretty={pretty}: streamed {} built {}", near(&s), near(&b));
        }
    }
    let out = json(&streamed, "/m:c/u");
    assert!(out.contains(r#""z":"last"},{"k":"k219","#), "user order kept");
    assert!(out.contains(r#""inner":[{"n":"b"},{"d":{"y":1},"n":"a"},{"n":"c"}]"#));
}

/// A user-ordered list is written while it is read, from its order index:
/// output comes long before the read ends, and the read is proportional to
/// the list (its index records, its fragments twice: by entry and by the
/// subtree's scan), not to the store.
#[test]
fn a_user_ordered_list_is_written_while_it_is_read() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:ordered-early", canopy::Options::default()).unwrap();
    fill_ordered(&store, 5_000);
    store.declare_list("/m:top", ListInfo::keyed(["k"])).unwrap();
    let big: Vec<serde_json::Value> = (0..5_000).map(|i| serde_json::json!({"k": format!("k{i:05}")})).collect();
    store.running().import(serde_json::json!({"m:top": big}).to_string().as_bytes(), canopy::Operation::Merge).unwrap();
    reads.reset();
    let mut out = FirstWrite { reads: reads.clone(), at: None, bytes: 0 };
    store.running().get_json("/m:c/u", ReadOptions::default(), false, &mut out).unwrap();
    let (first, total) = (out.at.expect("something written"), reads.total());
    assert!(total >= 5_000, "{total} keys read");
    // About 2.8 fragments an entry (entry, container, inner lists), each
    // read twice, and 1.6 index records.
    assert!(total < 5_000 * 10, "{total} keys read for a list of 5,000 entries");
    assert!(first < total / 2, "the first output came after {first} of {total} keys were read");
}

/// A query selecting whole entries by predicates on child paths reads each
/// entry's fragments the predicates can reach, and writes a matching entry
/// from all its fragments: the same document as the tree read, whatever the
/// entry holds (containers, lists, a user-ordered list, leaf-lists,
/// metadata, keys to escape) and whatever the predicates compare (a leaf, a
/// leaf two containers down, a container's text, an existence, a leaf of
/// another module, a key and a non-key leaf together).
#[test]
fn entries_selected_by_their_leaves_stream_as_the_tree_read_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    let streamed = Store::open(&format!("lmdb:{}?sync=off", dir.path().display())).unwrap();
    streamed.declare_list("/m:d/dev", ListInfo::keyed(["id"])).unwrap();
    streamed.declare_list("/m:d/dev/port", ListInfo::keyed(["p"])).unwrap();
    streamed.declare_list("/m:d/dev/port/sub", ListInfo::keyed(["s"])).unwrap();
    streamed.declare_list("/m:d/dev/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    streamed.declare_list("/m:e/dev", ListInfo::keyed(["id"])).unwrap();
    let devs: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            let mut d = serde_json::json!({
                "id": format!("d{i:02} \"q\"\u{0}/[x='y']"),
                "state": if i % 3 == 0 { "up" } else { "down" },
                "n": i,
                "tags": ["a", format!("t{}", i % 4)],
                "info": {"type": if i % 2 == 0 { "x" } else { "r" }, "geo": {"lat": i % 5, "lon": "e"}},
                "port": [
                    {"p": "a", "s": i % 4, "sub": [{"s": "1", "v": i}, {"s": "2"}]},
                    {"p": "b\u{0}c", "s": 1}
                ],
                "u": [{"k": "z"}, {"k": "a", "w": i}, {"k": "m"}],
                "z-last": "end",
                "@state": {"m:origin": "here"}
            });
            if i % 7 == 0 {
                d["other:flag"] = serde_json::json!("on");
                d["@"] = serde_json::json!({"m:note": format!("n{i}")});
                d["info"]["@"] = serde_json::json!({"m:note": "i"});
            }
            if i % 5 == 0 {
                d["extra"] = serde_json::json!({"deep": {"x": 1}});
            }
            d
        })
        .collect();
    let doc = serde_json::json!({"m:d": {"dev": devs, "aa": "before", "zz": "after", "@": {"m:note": "d"}}});
    streamed.running().import(doc.to_string().as_bytes(), canopy::Operation::Merge).unwrap();
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    let queries = [
        ("/m:d/m:dev[state='up']", Some(true)),
        ("/m:d/m:dev[m:state='up']", Some(true)),
        ("/m:d/m:dev[info/type='x']", Some(true)),
        ("/m:d/m:dev[info/geo/lat=3]", Some(true)),
        ("/m:d/m:dev[info/geo/lat>=3 and state!='up']", Some(true)),
        ("/m:d/m:dev[info/geo='3e']", Some(true)),
        ("/m:d/m:dev[info='3ex']", Some(true)),
        ("/m:d/m:dev[extra]", Some(true)),
        ("/m:d/m:dev[extra/deep/x=1 or n=1]", Some(true)),
        ("/m:d/m:dev[other:flag='on']", Some(true)),
        ("/m:d/m:dev[flag='on']", None),
        ("/m:d/m:dev[tags='t3']", Some(true)),
        ("/m:d/m:dev[port/s=3]", Some(true)),
        ("/m:d/m:dev[port/sub/v=12]", Some(true)),
        ("/m:d/m:dev[u/w=4]", Some(true)),
        ("/m:d/m:dev[id='d04 \"q\"\u{0}/[x=''y'']' and n=4]", Some(true)),
        ("/m:d/m:dev[state='none']", Some(false)),
        ("/m:d/m:dev[info/type='x'][n<10]", Some(true)),
    ];
    for (q, some) in queries {
        for pretty in [false, true] {
            let (mut s, mut b) = (Vec::new(), Vec::new());
            streamed.running().get_json(q, ReadOptions::default(), pretty, &mut s).unwrap();
            built.running().get_json(q, ReadOptions::default(), pretty, &mut b).unwrap();
            let (s, b) = (String::from_utf8(s).unwrap(), String::from_utf8(b).unwrap());
            assert_eq!(s, b, "{q} pretty {pretty}");
            if let Some(some) = some {
                assert_eq!(s.contains("\"dev\""), some, "{q}: {s}");
            }
        }
    }
    // Nothing stored under the list's parent: `{}`, as the tree read gives.
    assert_eq!(json(&streamed, "/m:e/m:dev[state='up']"), json(&built, "/m:e/m:dev[state='up']"));
}

/// `Pinned::each_entry_fragments` hands over each entry's stored fragments,
/// the entry's own first, entry after entry in key order; the fragments
/// decode to the entry the tree read gives.
#[test]
fn entry_fragments_come_entry_by_entry_in_key_order() {
    let backend = MemoryBackend::new();
    let store = Store::from_backend(Box::new(backend), "memory:entry-fragments", canopy::Options::default()).unwrap();
    fill(&store);
    let pinned = store.running().pin().unwrap();
    let mut seen: Vec<Vec<String>> = Vec::new();
    pinned
        .each_entry_fragments("/m:c/e", |frags| {
            let mut keys = Vec::new();
            for (rel, v) in frags.iter() {
                canopy_store::fragment::decode(v).unwrap();
                keys.push(canopy_store::keys::hex(rel));
            }
            seen.push(keys);
            Ok(true)
        })
        .unwrap();
    // Two entries: (a=1, b=z) with its two `lst` entries, then (a=10, b=a) with one.
    assert_eq!(seen.iter().map(Vec::len).collect::<Vec<_>>(), [3, 2]);
    for entry in &seen {
        assert!(entry.iter().all(|k| k.starts_with(&entry[0])), "an entry's own fragment comes first: {entry:?}");
    }
    // The entry's own fragment holds its leaves: the first entry's keys.
    let mut first = None;
    pinned
        .each_entry_fragments("/m:c/e", |frags| {
            let (_, v) = frags.iter().next().unwrap();
            first = Some(canopy_store::fragment::decode(v).unwrap().container);
            Ok(false)
        })
        .unwrap();
    let first = first.expect("stopped after the first entry");
    assert_eq!(first.children.get("a"), Some(&canopy::Node::leaf(canopy::Value::String("1".into()))));
    // One entry by its keys: that entry alone.
    let mut one = Vec::new();
    pinned
        .each_entry_fragments("/m:c/e[a='10'][b='a']", |frags| {
            one.push(frags.iter().count());
            Ok(true)
        })
        .unwrap();
    assert_eq!(one, [2]);
    // Nothing stored: no call. Not a path of names and keys: refused, naming it.
    pinned.each_entry_fragments("/m:c/missing", |_| panic!("nothing is stored there")).unwrap();
    for bad in ["/", "/m:c/e[1]"] {
        let e = pinned.each_entry_fragments(bad, |_| Ok(true)).unwrap_err().to_string();
        assert!(e.contains("a list path (names and keys"), "{bad}: {e}");
    }
    for bad in ["/m:c/e[", "/m:c/e[a>'1']"] {
        let e = pinned.each_entry_fragments(bad, |_| Ok(true)).unwrap_err();
        assert!(matches!(e, canopy::Error::Data(_)) && e.to_string().contains(bad), "{bad}: {e:?}");
    }
}

/// An entry whose own fragment is missing while its descendants' are stored
/// (a damaged store) is reported as damage, not written from a descendant.
#[test]
fn entry_fragments_of_an_entry_that_is_not_stored_are_damage() {
    use canopy_store::keys::{self, Datastore};
    let store =
        Store::from_backend(Box::new(MemoryBackend::new()), "memory:damaged", canopy::Options::default()).unwrap();
    fill(&store);
    let mut key = keys::data_prefix(Datastore::Running);
    key.extend(keys::path_key(&"/m:c/e[a='1'][b='z']".parse().unwrap()).unwrap());
    let mut batch = canopy_store::Batch::default();
    batch.delete(key);
    store.backend().apply(&batch).unwrap();
    let pinned = store.running().pin().unwrap();
    for path in ["/m:c/e", "/m:c/e[a='1'][b='z']"] {
        let e = pinned.each_entry_fragments(path, |_| Ok(true)).unwrap_err();
        assert!(
            matches!(&e, canopy::Error::Store(s) if s.kind() == canopy_store::ErrorKind::Corrupted),
            "{path}: {e:?}"
        );
        assert!(e.to_string().contains("not stored"), "{path}: {e}");
    }
}
