//! `get_item` of a list entry reads the entry by its key alone when it can
//! (uncached, keyed lists known, stored by key); it must give exactly what
//! the general read gives: the entry with every descendant, `None` for what
//! is not stored, and the same errors, on every store kind and datastore.

use canopy::{Datastore, ListInfo, Store, Subtree, Value};
use canopy_core::NodeRef;

fn leaf(s: &str) -> Value {
    Value::String(s.into())
}

fn filled(url: &str) -> Store {
    let store = Store::open(url).unwrap();
    store.declare_list("/m:c/lst", ListInfo::keyed(["a", "b"])).unwrap();
    store.declare_list("/m:c/lst/sub", ListInfo::keyed(["x"])).unwrap();
    store.declare_list("/m:c/u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    let s = store.running();
    for i in 0..12 {
        let e = format!("/m:c/lst[a='{i}'][b='b{i}']");
        s.set(&format!("{e}/v"), leaf(&format!("v{i}"))).unwrap();
        if i % 3 == 0 {
            s.set(&format!("{e}/deep/inner/w"), leaf("w")).unwrap();
            s.set(&format!("{e}/sub[x='1']/y"), leaf("y1")).unwrap();
            s.set(&format!("{e}/sub[x='10']/y"), leaf("y10")).unwrap();
            s.set(&format!("{e}/tags[.='t']"), Value::Empty).unwrap();
        }
    }
    // Keys that are prefixes of each other's text.
    s.set("/m:c/lst[a='1'][b='b']/v", leaf("short")).unwrap();
    s.set("/m:c/lst[a='1'][b='b1x']/v", leaf("long")).unwrap();
    for k in ["p", "q"] {
        s.set(&format!("/m:c/u[k='{k}']/v"), leaf(k)).unwrap();
    }
    s.set("/m:c/kl/v", leaf("x")).unwrap();
    store
}

/// What the general read (`get`, which loads the tree the query needs)
/// finds at `path`.
fn via_get(store: &Store, ds: Datastore, path: &str) -> Option<Subtree> {
    let tree = store.session(ds).get(path, Default::default()).unwrap();
    let p: canopy::Path = path.parse().unwrap();
    let p = canopy_core::edit::canonical_path(&tree, &p, &canopy_core::Schemaless::default());
    match tree.lookup(&p)? {
        NodeRef::Entry(c) => Some(Subtree::Entry(c.clone())),
        other => panic!("{path}: not an entry: {other:?}"),
    }
}

const PATHS: &[&str] = &[
    "/m:c/lst[a='0'][b='b0']",
    "/m:c/lst[b='b0'][a='0']",
    "/m:c/lst[a='3'][b='b3']",
    "/m:c/lst[a='1'][b='b1']",
    "/m:c/lst[a='1'][b='b']",
    "/m:c/lst[a='1'][b='b1x']",
    "/m:c/lst[a='3'][b='b3']/sub[x='1']",
    "/m:c/lst[a='3'][b='b3']/sub[x='10']",
    "/m:c/lst[a='3'][b='b3']/sub[x='2']",
    "/m:c/lst[a='99'][b='b99']",
    "/m:c/lst[a='99'][b='b99']/sub[x='1']",
    "/m:c/u[k='p']",
    "/m:c/u[k='zz']",
    "/m:x/lst[a='0'][b='b0']",
];

#[test]
fn entry_reads_match_the_general_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec!["memory:points".to_string(), "memory:points-c?cache=on".to_string()];
    for (n, cache) in ["", "?cache=on"].into_iter().enumerate() {
        urls.push(format!("lmdb:{}/l{n}{cache}", dir.path().display()));
        if cfg!(feature = "backend-sqlite") {
            urls.push(format!("sqlite:{}/s{n}.db{cache}", dir.path().display()));
        }
        if cfg!(feature = "backend-file") {
            urls.push(format!("snapshot:{}/f{n}.snap{cache}", dir.path().display()));
        }
    }
    for url in urls {
        let store = filled(&url);
        // The candidate reads running until it is edited, then its own copy.
        store.session(Datastore::Candidate).set("/m:c/lst[a='0'][b='b0']/v", leaf("cand")).unwrap();
        for ds in [Datastore::Running, Datastore::Candidate, Datastore::Startup] {
            for path in PATHS {
                let got = store.session(ds).get_item(path).unwrap();
                assert_eq!(got, via_get(&store, ds, path), "{url} {ds:?} {path}");
            }
        }
        let cand = store.session(Datastore::Candidate).get_item("/m:c/lst[a='0'][b='b0']/v").unwrap();
        assert_eq!(cand, Some(Subtree::Node(canopy::Node::leaf(leaf("cand")))), "{url}");
        assert!(store.running().get_item("/m:c/lst[a='0'][b=").is_err(), "{url}: a malformed path is refused");
    }
}
