//! `//name[...]` queries in a store with a YANG schema are planned through
//! the one place the schema has `name`: a key lookup when the predicates pin
//! the keys, an entry-by-entry scan otherwise. They give what the
//! tree-building read of the whole datastore gives (cached store), and what
//! the absolute spelling gives.

use canopy::{ReadOptions, Store};
use canopy_store::memory::MemoryBackend;
use canopy_store::metered::Metered;

const NET: &str = r#"module net {
  yang-version 1.1;
  namespace "urn:net";
  prefix n;
  container devices {
    list device {
      key "id";
      leaf id { type string; }
      leaf state { type string; }
      leaf n { type uint32; }
      container info {
        leaf type { type string; }
        leaf name { type string; }
      }
      list port {
        key "p";
        leaf p { type string; }
        leaf s { type uint32; }
        leaf name { type string; }
      }
    }
    leaf name { type string; }
  }
  container other {
    leaf-list tag { type string; }
  }
}
"#;

fn open(url: &str) -> Store {
    let s = Store::open(url).unwrap();
    s.schema_add_texts(&[("net.yang".to_string(), NET.to_string())], &[]).unwrap();
    s
}

fn doc(devices: usize) -> String {
    let devs: Vec<serde_json::Value> = (0..devices)
        .map(|i| {
            serde_json::json!({
                "id": format!("d{i:03}"), "state": if i % 3 == 0 { "up" } else { "down" }, "n": i,
                "info": {"type": if i % 2 == 0 { "x" } else { "r" }, "name": format!("dev {i}")},
                "port": [{"p": "a", "s": i % 4, "name": "pa"}, {"p": "b", "s": 1}]
            })
        })
        .collect();
    serde_json::json!({"net:devices": {"device": devs, "name": "all"}, "net:other": {"tag": ["t1", "t2"]}}).to_string()
}

fn json(s: &Store, q: &str, opts: ReadOptions) -> String {
    let mut out = Vec::new();
    s.running().get_json(q, opts, false, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn descendant_queries_read_as_the_whole_tree_read_does() {
    let dir = tempfile::tempdir().unwrap();
    let planned = open(&format!("lmdb:{}?sync=off", dir.path().display()));
    planned.running().import(doc(30).as_bytes(), canopy::Operation::Merge).unwrap();
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    let same = [
        ("//device[@id='d007']", "/net:devices/net:device[id='d007']"),
        ("//device[id='d007']", "/net:devices/device[id='d007']"),
        ("//net:device[id='d007']/info", "/net:devices/device[id='d007']/info"),
        ("//device[info/type='x']", "/net:devices/net:device[info/type='x']"),
        ("//device[state='up' and n>10]/port[s=1]", "/net:devices/net:device[state='up' and n>10]/port[s=1]"),
        ("//port[s=3]", "/net:devices/device/port[s=3]"),
        ("//info[type='r']", "/net:devices/device/info[type='r']"),
        ("//device[id='nope']", "/net:devices/device[id='nope']"),
        // The absolute spelling is an instance path a keyed list refuses; `//` is a query.
        ("//device[2]", ""),
        ("//tag", "/net:other/tag"),
    ];
    for (q, absolute) in same {
        for depth in [None, Some(1)] {
            let opts = ReadOptions { depth, ..ReadOptions::default() };
            let want = json(&built, q, opts);
            assert_eq!(json(&planned, q, opts), want, "{q} depth {depth:?}");
            if !absolute.is_empty() {
                assert_eq!(json(&planned, absolute, opts), want, "{absolute} depth {depth:?}");
            }
            assert_eq!(planned.running().get(q, opts).unwrap(), built.running().get(q, opts).unwrap(), "{q}");
        }
        assert_eq!(planned.running().count(q).unwrap(), built.running().count(q).unwrap(), "{q}");
    }
    // `name` is in three places: read the general way, with the same result.
    for q in [
        "//name",
        "//name[.='pa']",
        "//*[id='d001']",
        "//n:name",
        "//net:name",
        "//nosuch",
        "//other:device[id='d001']",
    ] {
        assert_eq!(json(&planned, q, ReadOptions::default()), json(&built, q, ReadOptions::default()), "{q}");
        assert_eq!(planned.running().count(q).unwrap(), built.running().count(q).unwrap(), "{q}");
    }
    assert_eq!(planned.running().count("//device[info/type='x']").unwrap(), 15);
    assert_eq!(planned.running().count("//name").unwrap(), 30 + 30 + 1);
}

/// `//device[@id='x']` reads one device, as the absolute path does; a
/// non-key predicate reads the device list and nothing else.
#[test]
fn a_descendant_key_query_is_a_lookup() {
    let (backend, reads) = Metered::new(MemoryBackend::new());
    let store = Store::from_backend(Box::new(backend), "memory:rooted", canopy::Options::default()).unwrap();
    store.schema_add_texts(&[("net.yang".to_string(), NET.to_string())], &[]).unwrap();
    store.running().import(doc(500).as_bytes(), canopy::Operation::Merge).unwrap();
    for q in ["//device[@id='d250']", "//device[id='d250']/info", "/net:devices/net:device[id='d250']"] {
        reads.reset();
        let out = json(&store, q, ReadOptions::default());
        assert!(out.contains("d250"), "{q}: {out}");
        assert!(reads.total() < 20, "{q} read {} keys of a 500-device store", reads.total());
        reads.reset();
        assert_eq!(store.running().count(q).unwrap(), 1);
        assert!(reads.total() < 20, "{q} counted reading {} keys", reads.total());
    }
    reads.reset();
    assert_eq!(store.running().count("//device[info/type='x']").unwrap(), 250);
    // 500 devices of 5 fragments (entry, info, 2 ports... as stored) and the catalog.
    let total = reads.total();
    assert!(total < 3_000, "a scan of the device list read {total} keys");
}

/// An absolute query whose predicate names a leaf other than the list's
/// keys (`/net:devices/device[state='up']`) is an XPath filter, not an
/// entry's keys: it selects the entries that match, as its `//` spelling
/// does, uncached and cached.
#[test]
fn absolute_predicates_on_other_leaves_filter_entries() {
    let dir = tempfile::tempdir().unwrap();
    let planned = open(&format!("lmdb:{}?sync=off", dir.path().display()));
    planned.running().import(doc(30).as_bytes(), canopy::Operation::Merge).unwrap();
    let built = Store::open(&format!("lmdb:{}?sync=off&cache=on", dir.path().display())).unwrap();
    for (q, like, n) in [
        ("/net:devices/device[state='up']", "//device[state='up']", 10),
        ("/net:devices/device[n=7]", "//device[n=7]", 1),
        ("/net:devices/device[id='d003']/port[s=3]", "//device[id='d003']/port[s=3]", 1),
        ("/net:devices/device[id='d003'][state='up']", "//device[id='d003' and state='up']", 1),
        ("/net:devices/device[state='nope']", "//device[state='nope']", 0),
        // A value that is some entry's key selects nothing through another leaf.
        ("/net:devices/device[state='d003']", "//device[state='d003']", 0),
        ("/net:devices/device[id='d003']/port[name='a']", "//device[id='d003']/port[name='a']", 0),
        ("/net:devices/device[id='d003']/port[name='pa']", "//device[id='d003']/port[name='pa']", 1),
    ] {
        let opts = ReadOptions::default();
        let want = json(&built, like, opts);
        assert_eq!(json(&planned, q, opts), want, "{q}");
        assert_eq!(json(&planned, like, opts), want, "{like}");
        assert_eq!(json(&built, q, opts), want, "{q}");
        assert_eq!(planned.running().get(q, opts).unwrap(), built.running().get(like, opts).unwrap(), "{q}");
        assert_eq!(planned.running().count(q).unwrap(), n, "{q}");
        assert_eq!(built.running().count(q).unwrap(), n, "{q}");
        // The operational view merges running with state: the same selection.
        let oper = planned.session(canopy::Datastore::Operational);
        assert_eq!(oper.count(q).unwrap(), n, "{q} on operational");
    }
    // A step below the filtered one, in running and in the operational view
    // (which merges what the predicate reads, not only what it selects).
    let below = "/net:devices/device[state='up']/info/name";
    for s in [planned.running(), planned.session(canopy::Datastore::Operational), built.running()] {
        assert_eq!(s.count(below).unwrap(), 10, "{below}");
    }
    // A name the schema does not have is still refused.
    assert!(planned.running().get("/net:devices/nosuch[state='up']", ReadOptions::default()).is_err());
}
