//! Model test: random transactions against a store and against an in-memory
//! reference tree (canopy-core's `apply_edit`); after each transaction the
//! stored datastore equals the reference, and a failed transaction changes
//! nothing. Runs uncached and cached, on the memory backend, on LMDB, SQLite, the
//! snapshot and JSON files, and on the database servers the environment names
//! (`CANOPY_POSTGRES_URL`, ...).

use canopy::{Container, Datastore, Edit, Insert, ListInfo, Node, Operation, Store, Value};
use canopy_core::edit::apply_edit;
use canopy_core::{Path, Schemaless};
use proptest::prelude::*;

fn user_list() -> ListInfo {
    ListInfo { keys: vec!["k".into()], user_ordered: true }
}

fn entry(k: u8, v: Option<&str>) -> Node {
    let mut c = Container::default();
    c.children.insert("k".into(), Node::leaf(Value::Number(k.to_string().into())));
    if let Some(v) = v {
        c.children.insert("v".into(), Node::leaf(Value::String(v.into())));
    }
    Node::Container(c)
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    let k = 0u8..6;
    let val = prop::sample::select(vec!["a", "b", "c"]);
    let op = prop::sample::select(vec![
        Operation::Merge,
        Operation::Replace,
        Operation::Create,
        Operation::Delete,
        Operation::Remove,
    ]);
    prop_oneof![
        (val.clone(), op.clone()).prop_map(|(v, op)| Edit {
            op,
            path: "/m:c/x".parse().unwrap(),
            value: Some(Node::leaf(Value::String(v.into()))),
            insert: None
        }),
        (k.clone(), val.clone(), op.clone()).prop_map(|(k, v, op)| Edit {
            op,
            path: format!("/m:c/lst[k='{k}']").parse().unwrap(),
            value: Some(entry(k, Some(v))),
            insert: None
        }),
        (k.clone(), val.clone()).prop_map(|(k, v)| Edit::merge(
            format!("/m:c/lst[k='{k}']/sub/y").parse().unwrap(),
            Node::leaf(Value::String(v.into()))
        )),
        // A merge below a user-ordered entry creates the entry too.
        (k.clone(), val.clone()).prop_map(|(k, v)| Edit::merge(
            format!("/m:c/u[k='{k}']/v").parse().unwrap(),
            Node::leaf(Value::String(v.into()))
        )),
        (k.clone(), op.clone()).prop_map(|(k, op)| Edit {
            op,
            path: format!("/m:c/lst[k='{k}']/sub").parse().unwrap(),
            value: Some(Node::Container(Container::default())),
            insert: None
        }),
        (val.clone(), op.clone()).prop_map(|(v, op)| Edit {
            op,
            path: format!("/m:c/ll[.='{v}']").parse().unwrap(),
            value: None,
            insert: None
        }),
        (k.clone(), k.clone(), 0u8..4, op.clone()).prop_map(|(k, anchor, at, op)| {
            let insert = match at {
                0 => Insert::First,
                1 => Insert::Last,
                2 => Insert::Before(vec![anchor.to_string()]),
                _ => Insert::After(vec![anchor.to_string()]),
            };
            Edit {
                op,
                path: format!("/m:c/u[k='{k}']").parse().unwrap(),
                value: Some(entry(k, None)),
                insert: Some(insert),
            }
        }),
        (prop::collection::vec((k.clone(), val.clone()), 0..4), op.clone()).prop_map(|(items, op)| {
            // A whole container value with a list inside.
            let mut l = canopy::List::new(ListInfo::keyed(["k"]));
            for (k, v) in items {
                let Node::Container(e) = entry(k, Some(v)) else { unreachable!() };
                let _ = l.insert(e, &Insert::Last);
            }
            let mut c = Container::default();
            if !l.is_empty() {
                c.children.insert("lst".into(), Node::List(Box::new(l)));
            }
            c.children.insert("x".into(), Node::leaf(Value::String("w".into())));
            Edit { op, path: "/m:c".parse().unwrap(), value: Some(Node::Container(c)), insert: None }
        }),
        // A list's name used as a container or a leaf: always refused.
        (prop::sample::select(vec!["/m:c/lst", "/m:c/lst/y", "/m:c/u/v"]), op.clone()).prop_map(|(p, op)| Edit {
            op,
            path: p.parse().unwrap(),
            value: Some(Node::leaf(Value::String("z".into()))),
            insert: None
        }),
        op.prop_map(|op| Edit {
            op: if op == Operation::Create { Operation::Remove } else { op },
            path: Path::root(),
            value: Some(Node::Container(Container::default())),
            insert: None
        }),
    ]
}

fn reference_schema() -> Schemaless {
    let mut s = Schemaless::default();
    s.lists.insert("/m:c/u".into(), user_list());
    s.lists.insert("/m:c/lst".into(), ListInfo::keyed(["k"]));
    s
}

fn whole(store: &Store) -> Container {
    store.session(Datastore::Running).get("/", Default::default()).unwrap()
}

fn run(store: &Store, txs: Vec<Vec<Edit>>) -> Result<(), TestCaseError> {
    store.declare_list("/m:c/u", user_list()).unwrap();
    store.declare_list("/m:c/lst", ListInfo::keyed(["k"])).unwrap();
    let schema = reference_schema();
    let mut reference = Container::default();
    for tx in txs {
        let mut next = reference.clone();
        let expected: Result<(), String> =
            tx.iter().try_for_each(|e| apply_edit(&mut next, e, &schema).map(|_| ()).map_err(|e| e.to_string()));
        let got = store.session(Datastore::Running).apply(&tx);
        match (&expected, &got) {
            (Ok(()), Ok(_)) => reference = next,
            (Err(_), Err(_)) => {}
            _ => return Err(TestCaseError::fail(format!("tx {tx:?}: reference {expected:?}, store {got:?}"))),
        }
        prop_assert_eq!(&whole(store), &reference, "after {:?}", tx);
        check_json_reads(store)?;
    }
    let problems = store.check().unwrap();
    prop_assert!(problems.is_empty(), "{:?}", problems);
    Ok(())
}

/// `get_json` (which streams from storage when it can) writes exactly what
/// `get` followed by the tree writer writes.
fn check_json_reads(store: &Store) -> Result<(), TestCaseError> {
    let session = store.session(Datastore::Running);
    for q in ["/", "/m:c", "/m:c/lst[k='1']", "/m:c/lst[k='2']/sub", "/m:c/u[k='3']", "/m:c/u", "/m:c/x"] {
        for pretty in [false, true] {
            let mut streamed = Vec::new();
            session.get_json(q, Default::default(), pretty, &mut streamed).unwrap();
            let tree = session.get(q, Default::default()).unwrap();
            let expected = canopy::json::to_string(&tree, &canopy::json::WriteOptions { pretty, depth: None });
            prop_assert_eq!(String::from_utf8(streamed).unwrap(), expected, "query {}", q);
        }
    }
    Ok(())
}

/// Runs the transactions on a persistent store, then checks that a reopened
/// store, and a cached one, hold the same.
fn uncached_then_reopened(url: &str, txs: Vec<Vec<Edit>>) -> Result<(), TestCaseError> {
    let expected = {
        let store = Store::open(url).unwrap();
        run(&store, txs)?;
        whole(&store)
    };
    let again = Store::open(url).unwrap();
    prop_assert_eq!(whole(&again), expected);
    let cached = Store::open(&format!("{url}&cache=on")).unwrap();
    drop(again);
    prop_assert!(cached.check().unwrap().is_empty());
    Ok(())
}

fn txs() -> impl Strategy<Value = Vec<Vec<Edit>>> {
    prop::collection::vec(prop::collection::vec(edit_strategy(), 1..4), 1..12)
}

/// Regression: uncached, a merge below a new user-ordered entry gave it the
/// order key of the list's first entry, so the second entry overwrote the
/// first one's order record and `check` found the first missing from it.
#[test]
fn user_ordered_entries_created_below_their_path() {
    for url in ["memory:x", "memory:x?cache=on"] {
        let store = Store::open(url).unwrap();
        store.declare_list("/m:c/u", user_list()).unwrap();
        for k in ["a", "b", "c"] {
            store.running().set(&format!("/m:c/u[k='{k}']/v"), Value::String(k.into())).unwrap();
        }
        assert_eq!(store.check().unwrap(), Vec::<String>::new(), "{url}");
        let tree = whole(&store);
        let Some(canopy_core::NodeRef::List(l)) = tree.lookup(&"/m:c/u".parse().unwrap()) else {
            panic!("{url}: no list")
        };
        let keys: Vec<String> = l.entries().map(|e| e.key_text("k").unwrap().into()).collect();
        assert_eq!(keys, ["a", "b", "c"], "{url}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    #[test]
    fn memory_uncached(t in txs()) {
        run(&Store::open("memory:x").unwrap(), t)?;
    }

    #[test]
    fn memory_cached(t in txs()) {
        run(&Store::open("memory:x?cache=on").unwrap(), t)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn lmdb_uncached_then_reopened(t in txs()) {
        let dir = tempfile::tempdir().unwrap();
        uncached_then_reopened(&format!("lmdb:{}?sync=off", dir.path().display()), t)?;
    }
}

#[cfg(feature = "backend-sqlite")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn sqlite_uncached_then_reopened(t in txs()) {
        let dir = tempfile::tempdir().unwrap();
        uncached_then_reopened(&format!("sqlite:{}?sync=off", dir.path().join("store.db").display()), t)?;
    }
}

/// A namespace no earlier run used: a server outlives test runs.
#[cfg(any(
    feature = "backend-postgres",
    feature = "backend-redis",
    feature = "backend-etcd",
    feature = "backend-mongodb"
))]
fn fresh_namespace() -> String {
    format!("m{}_{:08x}", std::process::id(), rand::random::<u32>())
}

#[cfg(feature = "backend-postgres")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn postgres_uncached_then_reopened(t in txs()) {
        let Some(server) = canopy_store::conformance::server_url("CANOPY_POSTGRES_URL") else { return Ok(()) };
        let params = format!("schema={}&sync=off", fresh_namespace());
        uncached_then_reopened(&canopy_store::conformance::with_params(&server, &params), t)?;
    }
}

#[cfg(feature = "backend-redis")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn redis_uncached_then_reopened(t in txs()) {
        let Some(server) = canopy_store::conformance::server_url("CANOPY_REDIS_URL") else { return Ok(()) };
        let params = format!("prefix={}&sync=off", fresh_namespace());
        uncached_then_reopened(&canopy_store::conformance::with_params(&server, &params), t)?;
    }
}

#[cfg(feature = "backend-etcd")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn etcd_uncached_then_reopened(t in txs()) {
        let Some(server) = canopy_store::conformance::server_url("CANOPY_ETCD_URL") else { return Ok(()) };
        let params = format!("prefix={}&sync=off", fresh_namespace());
        uncached_then_reopened(&canopy_store::conformance::with_params(&server, &params), t)?;
    }
}

#[cfg(feature = "backend-mongodb")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn mongodb_uncached_then_reopened(t in txs()) {
        let Some(server) = canopy_store::conformance::server_url("CANOPY_MONGODB_URL") else { return Ok(()) };
        // The namespace is the database, in the URL's path.
        let url = canopy_store::conformance::with_params(
            &canopy_store::conformance::with_database(&server, &fresh_namespace()),
            "sync=off",
        );
        uncached_then_reopened(&url, t)?;
    }
}

#[cfg(feature = "backend-file")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn snapshot_uncached_then_reopened(t in txs()) {
        let dir = tempfile::tempdir().unwrap();
        uncached_then_reopened(&format!("snapshot:{}?sync=off", dir.path().join("store.snap").display()), t)?;
    }

    #[test]
    fn json_uncached_then_reopened(t in txs()) {
        let dir = tempfile::tempdir().unwrap();
        uncached_then_reopened(&format!("json:{}?sync=off", dir.path().join("store.json").display()), t)?;
    }
}
