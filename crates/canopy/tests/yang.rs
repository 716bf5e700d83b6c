//! Stores with a YANG schema: modules stored in the store, schema-checked
//! paths, typed canonical values, key order and user order from the schema,
//! with-defaults reads, and commit validation (every error listed, nothing
//! stored). The test modules are in `tests/yang/`.

use std::path::PathBuf;

use canopy::{Error, Operation, ReadOptions, Store, Value, WithDefaults};

fn module(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/yang").join(name)
}

fn perf() -> (String, String) {
    ("perf.yang".to_string(), canopy_yang::PERF_YANG.to_string())
}

/// A fresh store (cached or not) with the `types` and `perf` modules.
fn store(dir: &tempfile::TempDir, cache: bool) -> Store {
    let url = format!("lmdb:{}?sync=off&cache={}", dir.path().display(), if cache { "on" } else { "off" });
    let s = Store::open(&url).unwrap();
    s.schema_add(&[module("types.yang")], &[]).unwrap();
    s.schema_add_texts(&[perf()], &[]).unwrap();
    s
}

fn json(s: &Store, path: &str, opts: ReadOptions) -> serde_json::Value {
    let mut out = Vec::new();
    s.running().get_json(path, opts, false, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn leaf(s: &Store, path: &str) -> Option<Value> {
    match s.running().get_item(path).unwrap() {
        Some(canopy::Subtree::Node(canopy::Node::Leaf { value, .. })) => Some(value),
        None => None,
        other => panic!("{path}: not a leaf: {other:?}"),
    }
}

/// The violations of a rejected transaction.
fn rejected(r: canopy::Result<canopy::Commit>) -> Vec<String> {
    match r {
        Err(Error::Invalid(v)) => v.iter().map(ToString::to_string).collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn modules_are_stored_in_the_store_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    {
        let s = store(&dir, false);
        let names: Vec<String> = s.schema_modules().unwrap().into_iter().map(|m| m.name).collect();
        assert_eq!(names, ["perf", "types"]);
    }
    // Another open (another process would do the same) finds the schema.
    let s = Store::open(&url).unwrap();
    assert!(s.yang_schema().unwrap().is_some());
    let e = s.running().set("/types:c/nope", Value::String("x".into())).unwrap_err();
    assert!(e.to_string().contains("no schema node `nope` in /types:c"), "{e}");
    assert!(s.check().unwrap().is_empty());
}

#[test]
fn each_type_is_checked_and_stored_canonical() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    let r = s.running();
    let set = |p: &str, v: &str| r.set(&format!("/types:c/{p}"), Value::from_cli(v));
    // (leaf, input, stored value)
    let ok: &[(&str, &str, Value)] = &[
        ("i8", "-128", Value::Number("-128".into())),
        ("i64", "9007199254740993", Value::String("9007199254740993".into())),
        ("u16", "100", Value::Number("100".into())),
        ("pct", "7", Value::Number("7".into())),
        ("dec", "1.50", Value::String("1.5".into())),
        ("name", "abc", Value::String("abc".into())),
        ("color", "blue", Value::String("blue".into())),
        ("flags", "c a", Value::String("a c".into())),
        ("on", "true", Value::Bool(true)),
        ("marker", "[null]", Value::Empty),
        ("blob", "aGVsbG8=", Value::String("aGVsbG8=".into())),
        ("pet", "types:dog", Value::String("types:dog".into())),
        ("either", "12", Value::Number("12".into())),
        // (`name` was set above: the target exists)
        ("iid", "/types:c/name", Value::String("/types:c/name".into())),
    ];
    for (l, input, want) in ok {
        set(l, input).unwrap_or_else(|e| panic!("{l} = {input}: {e}"));
        assert_eq!(leaf(&s, &format!("/types:c/{l}")).as_ref(), Some(want), "{l}");
    }
    let e = rejected(set("iid", "/types:c/tags[.='zz']"));
    assert_eq!(e, ["/types:c/iid: instance-identifier: /types:c/tags[.='zz'] does not exist"]);
    set("tags[.='zz']", "").unwrap();
    set("iid", "/types:c/tags[.='zz']").unwrap();
    set("either", "none").unwrap();
    assert_eq!(leaf(&s, "/types:c/either"), Some(Value::String("none".into())));
    let bad: &[(&str, &str, &str)] = &[
        ("i8", "128", "out of type int8"),
        ("i8", "x", "Invalid"),
        ("u16", "50", "range"),
        ("pct", "101", "range"),
        ("dec", "10.5", "range"),
        ("dec", "1.234", "fraction"),
        ("name", "toolongname", "length"),
        ("name", "ABC", "pattern"),
        ("color", "purple", "enum"),
        ("flags", "d", "bit"),
        ("on", "yes", "boolean"),
        ("marker", "x", "empty"),
        ("blob", "!!", "base64"),
        ("pet", "types:animal", "identity"),
        ("either", "maybe", "union"),
    ];
    let before = s.revision().unwrap();
    for (l, input, why) in bad {
        let e = set(l, input).unwrap_err().to_string();
        assert!(e.contains(&format!("/types:c/{l}")), "{l} = {input}: {e}");
        assert!(e.to_lowercase().contains(&why.to_lowercase()), "{l} = {input}: {e} (expected `{why}`)");
    }
    assert_eq!(s.revision().unwrap(), before, "rejected edits store nothing");
}

#[test]
fn json_documents_are_checked_and_typed() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    let doc = r#"{"types:c":{"i64":"5","u16":15,"tags":["a","b"],"ports":[8080]},
                  "types:things":{"thing":[{"name":"x","id":1}]}}"#;
    s.running().import(doc.as_bytes(), Operation::Merge).unwrap();
    assert_eq!(leaf(&s, "/types:c/u16"), Some(Value::Number("15".into())));
    assert_eq!(json(&s, "/types:c/ports", ReadOptions::default())["types:c"]["ports"], serde_json::json!([8080]));
    // Key values made canonical move their entries to their places.
    let lst = r#"{"perf:cont":{"lst":[{"k1":"010","k2":"a","l":"x"},{"k1":9,"k2":"a","l":"y"}]}}"#;
    s.running().import(lst.as_bytes(), Operation::Merge).unwrap();
    assert_eq!(leaf(&s, "/perf:cont/lst[k1='10'][k2='a']/l"), Some(Value::String("x".into())));
    let doc = json(&s, "/perf:cont", ReadOptions::default());
    assert_eq!(doc["perf:cont"]["lst"][0]["k1"], 9);
    assert_eq!(doc["perf:cont"]["lst"][1]["k1"], 10);
    let e = rejected(
        s.running().import(r#"{"types:c":{"u16":5,"bogus":1,"tags":"notalist"}}"#.as_bytes(), Operation::Merge),
    );
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e.iter().any(|v| v.starts_with("/types:c/u16: invalid value '5'")), "{e:?}");
    assert!(e.iter().any(|v| v.starts_with("/types:c/bogus: no schema node `bogus`")), "{e:?}");
    assert!(e.iter().any(|v| v.contains("/types:c/tags") && v.contains("is a leaf-list in the schema")), "{e:?}");
}

#[test]
fn paths_are_checked_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    let r = s.running();
    let err = |p: &str| r.set(p, Value::String("v".into())).unwrap_err().to_string();
    let e = err("/perf:cont/lst[k1='1'][k2='a']/nope");
    assert!(e.contains("at position 31") && e.contains("no schema node `nope` in /perf:cont/lst"), "{e}");
    let e = err("/perf:cont/lst[k1='1'][kx='a']/l");
    assert!(e.contains("`kx` is not a key of list /perf:cont/lst (keys: k1, k2)"), "{e}");
    let e = err("/perf:cont/lst[k1='1']/l");
    assert!(e.contains("needs all its keys: k1, k2"), "{e}");
    let e = err("/perf:cont/lst/l");
    assert!(e.contains("needs its keys [k1, k2]"), "{e}");
    let e = err("/types:cont/x");
    assert!(e.contains("at position 1") && e.contains("no schema node `types:cont` at the top level"), "{e}");
    let e = err("/perf:cont/types:lst[k1='1'][k2='a']/l");
    assert!(e.contains("no schema node `types:lst` in /perf:cont"), "{e}");
    let e = err("/types:c/name/x");
    assert!(e.contains("/types:c/name is a leaf: it has no children"), "{e}");
    let e = err("/types:c[x='1']/name");
    assert!(e.contains("/types:c is a container: it takes no"), "{e}");
    // Reads check instance paths too.
    let e = r.get_item("/perf:cont/lstx").unwrap_err().to_string();
    assert!(e.contains("no schema node `lstx`"), "{e}");
    // A prefix naming the parent's own module is the same node.
    r.set("/perf:cont/perf:lst[k1='1'][k2='a']/perf:l", Value::String("v".into())).unwrap();
    assert_eq!(leaf(&s, "/perf:cont/lst[k2='a'][k1='1']/l"), Some(Value::String("v".into())));
}

#[test]
fn keys_come_in_schema_order_and_sort_by_type() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    for k in ["10", "9", "010"] {
        s.running().set(&format!("/perf:cont/lst[k2='s'][k1='{k}']/l"), Value::String(k.into())).unwrap();
    }
    let doc = json(&s, "/perf:cont", ReadOptions::default());
    let keys: Vec<&serde_json::Value> = doc["perf:cont"]["lst"].as_array().unwrap().iter().map(|e| &e["k1"]).collect();
    // `010` is `10`: canonical, the same entry; numbers sort numerically.
    assert_eq!(keys, [&serde_json::json!(9), &serde_json::json!(10)]);
    assert_eq!(leaf(&s, "/perf:cont/lst[k1='10'][k2='s']/l"), Some(Value::String("010".into())));
}

#[test]
fn user_ordered_lists_keep_user_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    let r = s.running();
    for (k, at) in
        [("1", None), ("2", Some(canopy::Insert::First)), ("3", Some(canopy::Insert::After(vec!["2".into()])))]
    {
        let p = format!("/perf:cont/usr-lst[k='{k}']");
        r.edit_json(Operation::Merge, &p, Some(&format!(r#"{{"perf:usr-lst":[{{"k":{k},"l":"x"}}]}}"#)), at).unwrap();
    }
    let doc = json(&s, "/perf:cont/usr-lst", ReadOptions::default());
    let keys: Vec<u64> =
        doc["perf:cont"]["usr-lst"].as_array().unwrap().iter().map(|e| e["k"].as_u64().unwrap()).collect();
    assert_eq!(keys, [2, 3, 1]);
}

#[test]
fn with_defaults_modes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    s.running().set("/types:c/pct", Value::Number("50".into())).unwrap();
    s.running().set("/types:c/name", Value::String("a".into())).unwrap();
    let read = |m| json(&s, "/types:c", ReadOptions { with_defaults: m, ..Default::default() })["types:c"].clone();
    assert_eq!(read(WithDefaults::Explicit), serde_json::json!({"name": "a", "pct": 50}));
    assert_eq!(read(WithDefaults::Trim), serde_json::json!({"name": "a"}));
    assert_eq!(
        read(WithDefaults::ReportAll),
        serde_json::json!({"color": "green", "name": "a", "pct": 50, "ports": [80, 443]})
    );
    let tree =
        s.running().get("/types:c/color", ReadOptions { with_defaults: WithDefaults::ReportAll, ..Default::default() });
    let _ = tree.unwrap();
    assert_eq!(
        json(&s, "/types:c/color", ReadOptions { with_defaults: WithDefaults::ReportAll, ..Default::default() }),
        serde_json::json!({"types:c": {"color": "green"}})
    );
}

fn constraints(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, cache);
    let r = s.running();
    let base = r#"{"types:things":{"thing":[{"name":"a","id":1},{"name":"b","id":2}]},
                   "types:limits":{"few":[{"k":1}]},
                   "types:c":{"ref":"a"},
                   "types:people":{"person":[{"name":"p","age":30,"kind":"child","school":"s","email":"e"}]}}"#;
    r.import(base.as_bytes(), Operation::Merge).unwrap();
    let rev = s.revision().unwrap();
    let before = json(&s, "/", ReadOptions::default());
    // One transaction breaking each constraint: every error is listed.
    let edits = r#"{"types:things":{"thing":[{"name":"c","id":1}]},
                    "types:limits":{"few":[{"k":2},{"k":3},{"k":4}]},
                    "types:c":{"ref":"zzz"},
                    "types:people":{"person":[{"name":"q","kind":"adult","school":"x","salary":2000000}]}}"#;
    let e = rejected(r.import(edits.as_bytes(), Operation::Merge));
    let expect = [
        "/types:things/thing[name='c']: unique (id) = (1) is also used by /types:things/thing[name='a']",
        "/types:limits/few: at most 3 entries are allowed (max-elements), there are 4",
        "/types:c/ref: leafref: no /types:things/thing/name with value 'zzz'",
        "/types:people/person[name='q']/age: mandatory node is missing",
        "/types:people/person[name='q']: mandatory choice `contact` has no case set",
        "/types:people/person[name='q']/school: when condition `../kind = 'child'` is not satisfied",
        "/types:people/person[name='q']/salary: salary too high (must `. < 1000000`)",
    ];
    for x in expect {
        assert!(e.iter().any(|v| v == x), "missing `{x}` in {e:#?}");
    }
    assert_eq!(e.len(), expect.len(), "{e:#?}");
    assert_eq!(s.revision().unwrap(), rev, "nothing stored");
    assert_eq!(json(&s, "/", ReadOptions::default()), before, "nothing changed");

    // Deleting a leafref's target, the last entry under min-elements, a
    // mandatory leaf; changing a when's condition.
    let e = rejected(r.apply(&[
        canopy::Edit::delete("/types:things/thing[name='a']".parse().unwrap()),
        canopy::Edit::delete("/types:limits/few[k='1']".parse().unwrap()),
        canopy::Edit::delete("/types:people/person[name='p']/age".parse().unwrap()),
        canopy::Edit::merge(
            "/types:people/person[name='p']/kind".parse().unwrap(),
            canopy::Node::leaf(Value::String("adult".into())),
        ),
    ]));
    let expect = [
        "/types:c/ref: leafref: no /types:things/thing/name with value 'a' (it was removed)",
        "/types:limits/few: at least 1 entries are required (min-elements), there are none",
        "/types:people/person[name='p']/age: mandatory node is missing",
        "/types:people/person[name='p']/school: when condition `../kind = 'child'` is not satisfied",
    ];
    for x in expect {
        assert!(e.iter().any(|v| v == x), "missing `{x}` in {e:#?}");
    }
    assert_eq!(e.len(), expect.len(), "{e:#?}");
    assert_eq!(json(&s, "/", ReadOptions::default()), before, "nothing changed");

    // Changing a leaf to a value another entry has breaks unique.
    let e = rejected(r.set("/types:things/thing[name='b']/id", Value::Number("1".into())));
    assert_eq!(e, ["/types:things/thing[name='b']: unique (id) = (1) is also used by /types:things/thing[name='a']"]);
    // Valid changes pass.
    r.set("/types:things/thing[name='b']/id", Value::Number("3".into())).unwrap();
    r.set("/types:c/ref", Value::String("b".into())).unwrap();
    r.delete("/types:things/thing[name='a']").unwrap();
    r.set("/types:people/person[name='p']/salary", Value::Number("10".into())).unwrap();
    assert_eq!(leaf(&s, "/types:c/ref"), Some(Value::String("b".into())));
    assert_eq!(s.check().unwrap(), Vec::<String>::new());
}

#[test]
fn constraints_are_validated_uncached() {
    constraints(false);
}

#[test]
fn constraints_are_validated_cached() {
    constraints(true);
}

#[test]
fn state_data_is_refused_in_running() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir, false);
    // `types` has no state data; a module with some does.
    std::fs::write(
        dir.path().join("st.yang"),
        "module st { namespace urn:st; prefix st; container s { config false; leaf n { type uint8; } } }",
    )
    .unwrap();
    s.schema_add(&[dir.path().join("st.yang")], &[]).unwrap();
    let e = rejected(s.running().set("/st:s/n", Value::Number("1".into())));
    assert!(e[0].contains("state data"), "{e:?}");
    s.session(canopy::Datastore::Operational).set("/st:s/n", Value::Number("1".into())).unwrap();
}

#[test]
fn malformed_modules_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&format!("lmdb:{}", dir.path().display())).unwrap();
    let e = s.schema_add(&[module("syntax.yang")], &[]).unwrap_err().to_string();
    assert!(e.contains("syntax.yang:6: Invalid keyword \"}\""), "{e}");
    let e = s.schema_add(&[module("broken.yang")], &[]).unwrap_err().to_string();
    assert!(e.contains("broken.yang:6: Referenced type \"strin\" not found"), "{e}");
    std::fs::write(
        dir.path().join("imp.yang"),
        "module imp { namespace urn:i; prefix i; import missing-mod { prefix m; } }",
    )
    .unwrap();
    let e = s.schema_add(&[dir.path().join("imp.yang")], &[dir.path().to_path_buf()]).unwrap_err().to_string();
    assert!(e.contains("imports module missing-mod"), "{e}");
    let e = s.schema_add(&[dir.path().join("none.yang")], &[]).unwrap_err().to_string();
    assert!(e.contains("none.yang"), "{e}");
    // Nothing was stored.
    assert!(s.schema_modules().unwrap().is_empty());
    assert!(s.yang_schema().unwrap().is_none());
}

#[test]
fn existing_data_must_fit_a_new_schema() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&format!("lmdb:{}", dir.path().display())).unwrap();
    s.running().set("/types:c/u16", Value::Number("5".into())).unwrap();
    let e = s.schema_add(&[module("types.yang")], &[]).unwrap_err().to_string();
    assert!(e.contains("running /types:c/u16: invalid value '5'"), "{e}");
    s.running().set("/types:c/u16", Value::Number("15".into())).unwrap();
    s.schema_add(&[module("types.yang")], &[]).unwrap();
    assert_eq!(leaf(&s, "/types:c/u16"), Some(Value::Number("15".into())));
}

/// A backend that counts the records it reads, to show what validation loads.
mod counting {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use canopy_store::backend::Visit;
    use canopy_store::memory::MemoryBackend;
    use canopy_store::{Backend, Batch, Result, Snapshot};

    pub struct Counting {
        pub inner: MemoryBackend,
        pub reads: Arc<AtomicUsize>,
    }

    struct Snap<'a> {
        inner: Box<dyn Snapshot + 'a>,
        reads: Arc<AtomicUsize>,
    }

    impl Snapshot for Snap<'_> {
        fn revision(&self) -> u64 {
            self.inner.revision()
        }
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            self.inner.get(key)
        }
        fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
            let reads = self.reads.clone();
            self.inner.scan(start, end, reverse, &mut |k, v| {
                reads.fetch_add(1, Ordering::Relaxed);
                visit(k, v)
            })
        }
    }

    impl Backend for Counting {
        fn kind(&self) -> &'static str {
            "counting"
        }
        fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
            Ok(Box::new(Snap { inner: self.inner.snapshot()?, reads: self.reads.clone() }))
        }
        fn apply(&self, batch: &Batch) -> Result<u64> {
            self.inner.apply(batch)
        }
    }
}

#[test]
fn validation_reads_what_the_change_needs() {
    use std::sync::atomic::Ordering;
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let backend = counting::Counting { inner: canopy_store::memory::MemoryBackend::new(), reads: reads.clone() };
    let s = Store::from_backend(Box::new(backend), "counting:", canopy::Options::default()).unwrap();
    s.schema_add(&[module("types.yang")], &[]).unwrap();
    s.schema_add_texts(&[perf()], &[]).unwrap();
    let n = 2000;
    let mut doc = String::from(r#"{"perf:cont":{"lst":["#);
    let mut things = String::from(r#"{"types:things":{"thing":["#);
    for i in 0..n {
        let sep = if i > 0 { "," } else { "" };
        doc.push_str(&format!(r#"{sep}{{"k1":{i},"k2":"str{i}","l":"l{i}"}}"#));
        things.push_str(&format!(r#"{sep}{{"name":"t{i}","id":{i},"size":1}}"#));
    }
    doc.push_str("]}}");
    things.push_str("]}}");
    s.running().import(doc.as_bytes(), Operation::Merge).unwrap();
    s.running().import(things.as_bytes(), Operation::Merge).unwrap();
    let count = |f: &dyn Fn()| {
        reads.store(0, Ordering::Relaxed);
        f();
        reads.load(Ordering::Relaxed)
    };
    // No constraint on `lst`: a one-leaf commit and a new entry read a few records.
    let r = s.running();
    let one = count(&|| {
        r.set("/perf:cont/lst[k1='7'][k2='str7']/l", Value::String("x".into())).unwrap();
    });
    assert!(one < 20, "a one-leaf commit read {one} records");
    let new = count(&|| {
        r.set(&format!("/perf:cont/lst[k1='{n}'][k2='str{n}']/l"), Value::String("x".into())).unwrap();
    });
    assert!(new < 20, "creating an entry read {new} records");
    // `thing` has `unique id`: changing a leaf outside it reads a few records,
    // changing `id` or creating an entry reads the list.
    let size = count(&|| {
        r.set("/types:things/thing[name='t5']/size", Value::Number("2".into())).unwrap();
    });
    assert!(size < 20, "changing a leaf outside the unique read {size} records");
    let id = count(&|| {
        r.set("/types:things/thing[name='t5']/id", Value::Number("99999".into())).unwrap();
    });
    assert!(id >= n, "changing a unique leaf read only {id} records");
    // Setting a unique leaf where it was not set is checked too.
    r.import(r#"{"types:things":{"thing":[{"name":"bare"}]}}"#.as_bytes(), Operation::Merge).unwrap();
    let e = rejected(r.set("/types:things/thing[name='bare']/id", Value::Number("99999".into())));
    assert_eq!(
        e,
        ["/types:things/thing[name='t5']: unique (id) = (99999) is also used by /types:things/thing[name='bare']"]
    );
}

/// A fresh store (cached or not) with the `refs` module.
fn refs_store(dir: &tempfile::TempDir, cache: bool) -> Store {
    let url = format!("lmdb:{}?sync=off&cache={}", dir.path().display(), if cache { "on" } else { "off" });
    let s = Store::open(&url).unwrap();
    s.schema_add(&[module("refs.yang")], &[]).unwrap();
    let base = r#"{"refs:ifs":{"if":[{"name":"eth0","mtu":1500,"addr":[{"ip":"10.0.0.1"}]},
                                     {"name":"eth1","mtu":9000,"addr":[{"ip":"10.0.1.1"}]}]},
                   "refs:nets":{"net":[{"network":"n1","node":"a","port":"p1"},
                                       {"network":"n2","node":"a","port":"p2"}]}}"#;
    s.running().import(base.as_bytes(), Operation::Merge).unwrap();
    s
}

fn edit(path: &str, v: Value) -> canopy::Edit {
    canopy::Edit::merge(path.parse().unwrap(), canopy::Node::leaf(v))
}

fn leafref_predicates(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = refs_store(&dir, cache);
    let r = s.running();
    let st = |v: &str| Value::String(v.into());
    // Valid: the mtu and address of the interface the peer names.
    r.apply(&[
        edit("/refs:peers/peer[id='p']/ifname", st("eth1")),
        edit("/refs:peers/peer[id='p']/mtu", Value::Number("9000".into())),
        edit("/refs:peers/peer[id='p']/addr", st("10.0.1.1")),
        edit("/refs:links/link[id='l']/network", st("n2")),
        edit("/refs:links/link[id='l']/node", st("a")),
        edit("/refs:links/link[id='l']/port", st("p2")),
    ])
    .unwrap();
    let rev = s.revision().unwrap();
    // Values that exist only under another entry than the predicates select
    // (any instance of the target holds them): rejected, each named.
    let e = rejected(r.apply(&[
        edit("/refs:peers/peer[id='p']/mtu", Value::Number("1500".into())),
        edit("/refs:peers/peer[id='p']/addr", st("10.0.0.1")),
        edit("/refs:links/link[id='l']/port", st("p1")),
    ]));
    assert_eq!(
        e,
        [
            "/refs:links/link[id='l']/port: leafref: no /refs:nets/net[network='n2'][node='a']/port with value 'p1'",
            "/refs:peers/peer[id='p']/addr: leafref: no /refs:ifs/if[name='eth1']/addr/ip with value '10.0.0.1'",
            "/refs:peers/peer[id='p']/mtu: leafref: no /refs:ifs/if[name='eth1']/mtu with value '1500'",
        ]
    );
    // Keys with quotes of both kinds select nothing here, and say so.
    let e = rejected(r.set("/refs:links/link[id='l']/network", st("n'2\"")));
    assert_eq!(
        e,
        [
            r#"/refs:links/link[id='l']/port: leafref: no /refs:nets/net[network='n''2"'][node='a']/port with value 'p2'"#
        ]
    );
    // Changing the predicate's key leaf re-checks the leafrefs that read it.
    let e = rejected(r.set("/refs:peers/peer[id='p']/ifname", st("eth0")));
    assert_eq!(
        e,
        [
            "/refs:peers/peer[id='p']/addr: leafref: no /refs:ifs/if[name='eth0']/addr/ip with value '10.0.1.1'",
            "/refs:peers/peer[id='p']/mtu: leafref: no /refs:ifs/if[name='eth0']/mtu with value '9000'",
        ]
    );
    // A key the predicate reads that is not set: nothing is selected.
    let e = rejected(r.delete("/refs:links/link[id='l']/node"));
    assert_eq!(
        e,
        [
            "/refs:links/link[id='l']/port: leafref: /refs:links/link[id='l']/node, which the predicate [node = current()/../node] of its path reads, is not set"
        ]
    );
    // Removing or changing the referenced leaf, or its entry, is rejected
    // even though other entries still hold the value.
    r.set("/refs:ifs/if[name='eth0']/mtu", Value::Number("9000".into())).unwrap();
    let e = rejected(r.set("/refs:ifs/if[name='eth1']/mtu", Value::Number("1500".into())));
    assert_eq!(
        e,
        ["/refs:peers/peer[id='p']/mtu: leafref: no /refs:ifs/if[name='eth1']/mtu with value '9000' (it was removed)"]
    );
    let e = rejected(r.delete("/refs:ifs/if[name='eth1']/addr[ip='10.0.1.1']"));
    assert_eq!(
        e,
        [
            "/refs:peers/peer[id='p']/addr: leafref: no /refs:ifs/if[name='eth1']/addr/ip with value '10.0.1.1' (it was removed)"
        ]
    );
    r.set("/refs:nets/net[network='n1'][node='a']/port", st("p2")).unwrap();
    let e = rejected(r.delete("/refs:nets/net[network='n2'][node='a']"));
    assert_eq!(
        e,
        ["/refs:links/link[id='l']/port: leafref: no /refs:nets/net[network='n2'][node='a']/port with value 'p2' (it was removed)"]
    );
    let e = rejected(r.delete("/refs:ifs/if[name='eth1']"));
    assert!(
        e.contains(
            &"/refs:peers/peer[id='p']/ifname: leafref: no /refs:ifs/if/name with value 'eth1' (it was removed)"
                .to_string()
        ),
        "{e:#?}"
    );
    assert!(e.iter().any(|v| v.starts_with("/refs:peers/peer[id='p']/mtu: ")), "{e:#?}");
    assert!(e.iter().any(|v| v.starts_with("/refs:peers/peer[id='p']/addr: ")), "{e:#?}");
    assert_eq!(e.len(), 3, "{e:#?}");
    assert_eq!(s.revision().unwrap(), rev + 2, "only the two valid edits were stored");
    // Moving the peer and its values together is valid.
    r.apply(&[
        edit("/refs:peers/peer[id='p']/ifname", st("eth0")),
        edit("/refs:peers/peer[id='p']/addr", st("10.0.0.1")),
    ])
    .unwrap();
    r.delete("/refs:ifs/if[name='eth1']").unwrap();
    assert_eq!(s.check().unwrap(), Vec::<String>::new());
}

#[test]
fn leafref_predicates_select_the_entry_uncached() {
    leafref_predicates(false);
}

#[test]
fn leafref_predicates_select_the_entry_cached() {
    leafref_predicates(true);
}

fn instance_identifier_targets(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = refs_store(&dir, cache);
    let r = s.running();
    let marks = r#"{"refs:marks":{"pick":"/refs:ifs/if[name='eth0']/mtu",
                                  "also":["/refs:nets/net[network='n1'][node='a']"],
                                  "loose":"/refs:ifs/if[name='eth1']"}}"#;
    r.import(marks.as_bytes(), Operation::Merge).unwrap();
    let rev = s.revision().unwrap();
    // Deleting the target, or a subtree holding it: rejected, naming the leaf.
    let e = rejected(r.delete("/refs:ifs/if[name='eth0']/mtu"));
    assert_eq!(e, ["/refs:marks/pick: instance-identifier: /refs:ifs/if[name='eth0']/mtu does not exist"]);
    let e = rejected(r.delete("/refs:ifs"));
    assert_eq!(e, ["/refs:marks/pick: instance-identifier: /refs:ifs/if[name='eth0']/mtu does not exist"]);
    let e = rejected(r.delete("/refs:nets/net"));
    assert_eq!(
        e,
        ["/refs:marks/also[.=\"/refs:nets/net[network='n1'][node='a']\"]: instance-identifier: /refs:nets/net[network='n1'][node='a'] does not exist"]
    );
    assert_eq!(s.revision().unwrap(), rev, "nothing stored");
    // Unrelated deletions, a target deleted and created again in one
    // transaction, and a target that need not exist: accepted.
    r.delete("/refs:ifs/if[name='eth0']/addr").unwrap();
    r.delete("/refs:nets/net[network='n2'][node='a']").unwrap();
    r.apply(&[
        canopy::Edit::delete("/refs:ifs/if[name='eth0']".parse().unwrap()),
        edit("/refs:ifs/if[name='eth0']/mtu", Value::Number("1400".into())),
    ])
    .unwrap();
    r.delete("/refs:ifs/if[name='eth1']").unwrap();
    assert_eq!(s.check().unwrap(), Vec::<String>::new());
}

#[test]
fn deleting_an_instance_identifier_target_is_rejected_uncached() {
    instance_identifier_targets(false);
}

#[test]
fn deleting_an_instance_identifier_target_is_rejected_cached() {
    instance_identifier_targets(true);
}

fn expressions_reading_elsewhere(cache: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = refs_store(&dir, cache);
    let r = s.running();
    let st = |v: &str| Value::String(v.into());
    r.apply(&[
        edit("/refs:policy/rule[name='a']/ifname", st("eth0")),
        edit("/refs:policy/rule[name='a']/mtu-cap", Value::Number("1400".into())),
        edit("/refs:policy/rule[name='a']/slot", Value::Number("1".into())),
        edit("/refs:policy/rule[name='b']/ifname", st("eth1")),
        edit("/refs:policy/rule[name='b']/slot", Value::Number("2".into())),
    ])
    .unwrap();
    let rev = s.revision().unwrap();
    let before = json(&s, "/", ReadOptions::default());
    // A must reading another subtree: disabling the interface a rule names.
    let e = rejected(r.set("/refs:ifs/if[name='eth0']/enabled", Value::Bool(false)));
    assert_eq!(
        e,
        ["/refs:policy/rule[name='a']/ifname: the rule's interface must exist and be enabled (must `/r:ifs/r:if[r:name = current()]/r:enabled = 'true'`)"]
    );
    // Removing it.
    let e = rejected(r.delete("/refs:ifs/if[name='eth1']"));
    assert_eq!(
        e,
        ["/refs:policy/rule[name='b']/ifname: the rule's interface must exist and be enabled (must `/r:ifs/r:if[r:name = current()]/r:enabled = 'true'`)"]
    );
    // A when made false by a change elsewhere: rejected (the node is not
    // removed on the committer's behalf).
    let e = rejected(r.set("/refs:ifs/if[name='eth0']/mtu", Value::Number("576".into())));
    assert_eq!(
        e,
        ["/refs:policy/rule[name='a']/mtu-cap: when condition `/r:ifs/r:if[r:name = current()/../ifname]/r:mtu > 1000` is not satisfied"]
    );
    // A must reading other entries of its own list: changing one rule's slot
    // to another's fails both.
    let e = rejected(r.set("/refs:policy/rule[name='b']/slot", Value::Number("1".into())));
    assert_eq!(
        e,
        [
            "/refs:policy/rule[name='a']/slot: slot used by another rule (must `count(../../r:rule[r:slot = current()]) = 1`)",
            "/refs:policy/rule[name='b']/slot: slot used by another rule (must `count(../../r:rule[r:slot = current()]) = 1`)",
        ]
    );
    assert_eq!(s.revision().unwrap(), rev, "nothing stored");
    assert_eq!(json(&s, "/", ReadOptions::default()), before, "nothing changed");
    // Changes the expressions allow, and changes nothing reads.
    r.set("/refs:ifs/if[name='eth0']/mtu", Value::Number("1200".into())).unwrap();
    r.set("/refs:ifs/if[name='eth1']/enabled", Value::Bool(true)).unwrap();
    r.set("/refs:policy/rule[name='b']/slot", Value::Number("3".into())).unwrap();
    r.apply(&[
        edit("/refs:policy/rule[name='a']/ifname", st("eth1")),
        edit("/refs:ifs/if[name='eth1']/mtu", Value::Number("1500".into())),
    ])
    .unwrap();
    r.delete("/refs:ifs/if[name='eth0']").unwrap();
    assert_eq!(s.check().unwrap(), Vec::<String>::new());
}

#[test]
fn must_and_when_see_changes_elsewhere_uncached() {
    expressions_reading_elsewhere(false);
}

#[test]
fn must_and_when_see_changes_elsewhere_cached() {
    expressions_reading_elsewhere(true);
}

#[test]
fn expressions_load_only_what_they_read() {
    use std::sync::atomic::Ordering;
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let backend = counting::Counting { inner: canopy_store::memory::MemoryBackend::new(), reads: reads.clone() };
    let s = Store::from_backend(Box::new(backend), "counting:", canopy::Options::default()).unwrap();
    s.schema_add(&[module("refs.yang")], &[]).unwrap();
    let n = 2000;
    let mut doc = String::from(r#"{"refs:ifs":{"if":["#);
    for i in 0..n {
        let sep = if i > 0 { "," } else { "" };
        doc.push_str(&format!(r#"{sep}{{"name":"e{i}","mtu":1500}}"#));
    }
    doc.push_str(r#"]},"refs:policy":{"rule":[{"name":"a","ifname":"e1","mtu-cap":1400}]}}"#);
    let r = s.running();
    r.import(doc.as_bytes(), Operation::Merge).unwrap();
    let count = |f: &dyn Fn()| {
        reads.store(0, Ordering::Relaxed);
        f();
        reads.load(Ordering::Relaxed)
    };
    // Nothing reads `description`: the commit reads a few records.
    let quiet = count(&|| {
        r.set("/refs:ifs/if[name='e5']/description", Value::String("x".into())).unwrap();
    });
    assert!(quiet < 20, "a leaf no expression reads: {quiet} records");
    // The rules' must reads every interface's `enabled`: the rules and the
    // interfaces are loaded to evaluate it.
    let read = count(&|| {
        r.set("/refs:ifs/if[name='e5']/enabled", Value::Bool(false)).unwrap();
    });
    assert!(read >= n, "a leaf a must reads: only {read} records");
    let e = rejected(r.set("/refs:ifs/if[name='e1']/mtu", Value::Number("900".into())));
    assert_eq!(e.len(), 1, "{e:?}");
}
