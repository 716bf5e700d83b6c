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

/// A backend whose brief snapshots' reads fail with `Conflict` while
/// `failing` is above zero (as Redis's do once another writer commits).
mod moving {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use canopy_store::backend::{Backend, Batch, Snapshot, Visit};
    use canopy_store::error::{ErrorKind, Result, StoreError};
    use canopy_store::memory::MemoryBackend;

    #[derive(Default)]
    pub struct Counts {
        /// Brief snapshots still to fail.
        pub failing: AtomicUsize,
        pub brief: AtomicUsize,
        pub registered: AtomicUsize,
    }

    pub struct Moving {
        pub inner: MemoryBackend,
        pub counts: Arc<Counts>,
    }

    struct Brief<'a> {
        inner: Box<dyn Snapshot + 'a>,
        fails: bool,
    }

    impl Brief<'_> {
        fn check(&self) -> Result<()> {
            match self.fails {
                true => Err(StoreError::new(ErrorKind::Conflict, "the store moved on while it was read")),
                false => Ok(()),
            }
        }
    }

    impl Snapshot for Brief<'_> {
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.check()?;
            self.inner.get(key)
        }
        fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
            self.check()?;
            self.inner.scan(start, end, reverse, visit)
        }
    }

    impl Backend for Moving {
        fn kind(&self) -> &'static str {
            "moving"
        }
        fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
            self.counts.registered.fetch_add(1, Ordering::Relaxed);
            self.inner.snapshot()
        }
        /// Offered the revision the store knows of (and asking anyway).
        fn takes_revisions(&self) -> bool {
            true
        }
        fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
            self.counts.brief.fetch_add(1, Ordering::Relaxed);
            let fails = self.counts.failing.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            Ok(Box::new(Brief { inner: self.inner.snapshot()?, fails: fails.is_ok() }))
        }
        fn apply(&self, batch: &Batch) -> Result<u64> {
            self.inner.apply(batch)
        }
    }
}

/// Reads on brief snapshots (`get`, `get_item`, `count`) that meet another
/// writer's commit are read again (first at the revision the store knows
/// of, then twice at the one the backend says), and then on a snapshot whose
/// reads do not fail: the reply is always the data, never the conflict.
#[test]
fn reads_that_meet_a_commit_are_read_again() {
    use std::sync::atomic::Ordering;
    let counts = std::sync::Arc::new(moving::Counts::default());
    let backend = moving::Moving { inner: canopy_store::memory::MemoryBackend::new(), counts: counts.clone() };
    let store = Store::from_backend(Box::new(backend), "moving:", canopy::Options::default()).unwrap();
    store.declare_list("/m:c/lst", ListInfo::keyed(["a"])).unwrap();
    store.running().set("/m:c/lst[a='1']/v", leaf("one")).unwrap();
    store.running().set("/m:c/lst[a='2']/v", leaf("two")).unwrap();
    let s = store.running();
    let reads: [(&str, &dyn Fn() -> String); 4] = [
        ("get", &|| format!("{:?}", s.get("/m:c/lst[a='1']/v", canopy::ReadOptions::default()).unwrap())),
        ("get_item of an entry", &|| format!("{:?}", s.get_item("/m:c/lst[a='2']").unwrap())),
        ("get_item of a leaf", &|| format!("{:?}", s.get_item("/m:c/lst[a='2']/v").unwrap())),
        ("count", &|| s.count("/m:c/lst").unwrap().to_string()),
    ];
    for (what, read) in reads {
        let want = read();
        for (failing, brief, registered) in [(0, 1, 0), (1, 2, 0), (2, 3, 0), (3, 3, 1), (5, 3, 1)] {
            counts.failing.store(failing, Ordering::Relaxed);
            counts.brief.store(0, Ordering::Relaxed);
            counts.registered.store(0, Ordering::Relaxed);
            assert_eq!(read(), want, "{what}, {failing} failing");
            assert_eq!(counts.brief.load(Ordering::Relaxed), brief, "{what}, {failing} failing");
            assert_eq!(counts.registered.load(Ordering::Relaxed), registered, "{what}, {failing} failing");
        }
    }
}
