//! A name is one kind of node: once a list holds entries under a name (or the
//! name is a declared or learned list), no edit may store a container or a
//! leaf of that name beside them, and a container's name cannot take list
//! entries. Stored data stays readable and `check` stays clean on every
//! backend, cached and not.

use canopy::{Edit, ListInfo, Node, Operation, Store, Value};

fn urls(dir: &std::path::Path) -> Vec<String> {
    let d = dir.display();
    let mut v = Vec::new();
    for (n, cache) in ["", "?cache=on"].into_iter().enumerate() {
        v.push(format!("lmdb:{d}/lmdb{n}{cache}"));
        if cfg!(feature = "backend-sqlite") {
            v.push(format!("sqlite:{d}/db{n}.sqlite{cache}"));
        }
        if cfg!(feature = "backend-file") {
            v.push(format!("json:{d}/store{n}.json{cache}"));
            v.push(format!("snapshot:{d}/store{n}.snap{cache}"));
        }
        v.push(format!("memory:kinds{cache}"));
    }
    v
}

/// Runs `case` on a fresh store of every kind (`tag` keeps memory stores apart).
fn each_store(tag: &str, case: impl Fn(&str, Store)) {
    let dir = tempfile::tempdir().unwrap();
    for (i, url) in urls(dir.path()).into_iter().enumerate() {
        let url = url.replace("kinds", &format!("kinds{tag}{i}"));
        let store = Store::open(&url).unwrap();
        case(&url, store);
    }
}

fn leaf(s: &str) -> Value {
    Value::String(s.into())
}

/// Everything reads, `check` is clean, and the store reopens with the same data.
fn healthy(url: &str, store: Store) {
    let before = store.running().get("/", Default::default()).unwrap_or_else(|e| panic!("{url}: get /: {e}"));
    assert!(store.check().unwrap().is_empty(), "{url}: {:?}", store.check());
    drop(store);
    if !url.starts_with("memory:") {
        let again = Store::open(url).unwrap_or_else(|e| panic!("{url}: reopen: {e}"));
        assert_eq!(again.running().get("/", Default::default()).unwrap(), before, "{url}");
    }
}

fn refused(url: &str, what: &str, r: canopy::Result<canopy::Commit>) {
    let e = r.err().unwrap_or_else(|| panic!("{url}: {what} was accepted"));
    assert!(matches!(e, canopy::Error::Data(_)), "{url}: {what}: {e:?}");
}

#[test]
fn a_list_name_is_not_a_container_or_leaf() {
    each_store("", |url, store| {
        let s = store.running();
        s.set("/m:c/l[k='1']/v", leaf("a")).unwrap();
        refused(url, "a container step through the list", s.set("/m:c/l/v", leaf("b")));
        refused(url, "a leaf named like the list", s.set("/m:c/l", leaf("5")));
        let replace = Edit {
            op: Operation::Replace,
            path: "/m:c/l".parse().unwrap(),
            value: Some(Node::leaf(leaf("5"))),
            insert: None,
        };
        refused(url, "a leaf replacing the list", s.apply(&[replace]));
        let e = s.get_item("/m:c/l[k='1']/v").unwrap();
        assert!(e.is_some(), "{url}: the entry survived");
        healthy(url, store);
    });
}

#[test]
fn a_declared_list_without_entries_is_still_a_list() {
    each_store("d", |url, store| {
        store.declare_list("/m:c/l", ListInfo::keyed(["k"])).unwrap();
        let s = store.running();
        s.set("/m:c/x", leaf("x")).unwrap();
        refused(url, "a container named like a declared list", s.set("/m:c/l/v", leaf("b")));
        refused(url, "a leaf named like a declared list", s.set("/m:c/l", leaf("5")));
        // The same, inside a value written higher up.
        let mut c = canopy::Container::default();
        c.children.insert("l".into(), Node::leaf(leaf("5")));
        let mut top = canopy::Container::default();
        top.children.insert("m:c".into(), Node::Container(c.clone()));
        for (what, op, at, value) in [
            ("a merge of a container holding it", Operation::Merge, "/m:c", Node::Container(c.clone())),
            ("a replace of a container holding it", Operation::Replace, "/m:c", Node::Container(c)),
            ("a replace of the whole datastore holding it", Operation::Replace, "/", Node::Container(top)),
        ] {
            let e = Edit { op, path: at.parse().unwrap(), value: Some(value), insert: None };
            refused(url, what, s.apply(&[e]));
        }
        s.set("/m:c/l[k='1']/v", leaf("a")).unwrap();
        healthy(url, store);
    });
}

#[test]
fn a_container_name_does_not_take_entries() {
    each_store("c", |url, store| {
        let s = store.running();
        s.set("/m:c/l/v", leaf("a")).unwrap();
        refused(url, "an entry under a container's name", s.set("/m:c/l[k='1']/v", leaf("b")));
        s.set("/m:c/n", leaf("n")).unwrap();
        refused(url, "an entry under a leaf's name", s.set("/m:c/n[k='1']/v", leaf("b")));
        assert!(s.get_item("/m:c/l/v").unwrap().is_some(), "{url}");
        healthy(url, store);
    });
}

#[test]
fn a_keyless_list_from_plain_json_is_still_a_list() {
    each_store("k", |url, store| {
        let s = store.running();
        s.import(r#"{"m:c":{"l":[{"k":"1"},{"k":"2"}]}}"#.as_bytes(), Operation::Merge).unwrap();
        refused(url, "a container step through a keyless list", s.set("/m:c/l/v", leaf("b")));
        refused(url, "a leaf named like a keyless list", s.set("/m:c/l", leaf("5")));
        assert_eq!(s.count("/m:c/l").unwrap(), 2, "{url}");
        healthy(url, store);
    });
}
