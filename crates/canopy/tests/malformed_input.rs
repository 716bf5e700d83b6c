//! Bad input never panics and never damages the store: malformed paths,
//! queries, JSON and store URLs are refused with a message that says where or
//! what; edits that do not fit the data are refused whole; after each refusal
//! the store's content and revision are unchanged and `check()` is clean.
//!
//! Damaged `data.mdb` files are opened in a child process (the test binary
//! runs itself, as in `crash_consistency.rs`), so a crash inside LMDB shows up
//! as a failed case with its signal instead of killing the test runner.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use canopy::{Container, Edit, Insert, ListInfo, Node, Operation, Store, Value};
use canopy_store::ErrorKind;
use rand::{Rng, SeedableRng};

fn leaf(s: &str) -> Value {
    Value::String(s.into())
}

/// A store with a container, a system-ordered list, a user-ordered list and a leaf-list.
fn populated(url: &str) -> Store {
    let store = Store::open(url).unwrap();
    store.declare_list("/c:u", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    let s = store.running();
    s.set("/c:sys/host", leaf("r1")).unwrap();
    s.set("/c:sys/ntp/server", leaf("10.0.0.1")).unwrap();
    for n in 1..=3 {
        s.set(&format!("/c:log/entry[n='{n}']/v"), leaf(&format!("v{n}"))).unwrap();
    }
    for k in ["a", "b"] {
        s.set(&format!("/c:u[k='{k}']/v"), leaf(k)).unwrap();
    }
    s.set("/c:tags[.='x']", Value::Empty).unwrap();
    store
}

/// Everything `running` holds, and the revision.
fn state(store: &Store) -> (Container, u64) {
    (store.running().get("/", Default::default()).unwrap(), store.revision().unwrap())
}

/// Runs `bad`, which must fail, and asserts the store did not change.
fn refused(store: &Store, what: &str, bad: impl FnOnce(&Store) -> canopy::Result<()>) -> canopy::Error {
    let before = state(store);
    let err = match bad(store) {
        Ok(()) => panic!("{what}: accepted"),
        Err(e) => e,
    };
    assert!(state(store) == before, "{what}: the store changed although the edit was refused ({err})");
    let problems = store.check().unwrap();
    assert!(problems.is_empty(), "{what}: check after the refusal: {problems:?}");
    err
}

/// Asserts `e` is a path error at `pos` whose message names the position.
fn assert_path_error(what: &str, e: &canopy::Error, pos: usize) {
    match e {
        canopy::Error::Data(canopy_core::Error::Path { pos: got, .. }) => {
            assert_eq!(*got, pos, "{what}: {e}");
            assert!(e.to_string().contains(&format!("at position {pos}")), "{what}: {e}");
        }
        other => panic!("{what}: not a path error: {other:?}"),
    }
}

/// Both engine modes on both kinds of backend.
fn stores() -> Vec<(tempfile::TempDir, Store)> {
    ["memory:x", "memory:x?cache=on", "lmdb:{}", "lmdb:{}?cache=on"]
        .into_iter()
        .map(|u| {
            let dir = tempfile::tempdir().unwrap();
            let url = u.replace("{}", &dir.path().display().to_string());
            let store = populated(&url);
            (dir, store)
        })
        .collect()
}

#[test]
fn malformed_paths_are_data_errors_with_their_position() {
    // (path, position of the problem): refused by get, set and delete alike.
    let both: &[(&str, usize)] = &[
        ("", 0),
        ("/c:log/entry[n='1]/v", 15),
        ("/c:log/entry[n='1'/v", 18),
        ("/c:log/entry[", 13),
        ("/c:sys/", 7),
        ("/:sys", 1),
        ("/c:/host", 3),
        ("/c:log/entry[0]/v", 13),
        ("/c:log/entry[]/v", 12),
        ("/c:sys/host]", 11),
        ("/c:sys/h#st", 8),
    ];
    // Valid queries but not instance paths: refused by set and delete only.
    let set_only: &[(&str, usize)] = &[
        ("/c:sys//host", 6),
        ("//host", 0),
        ("/c:sys/*", 7),
        ("/c:sys/../c:log", 7),
        ("/c:log/entry[n!='1']/v", 12),
        ("/c:log/entry[n='1'][2]/v", 19),
        ("/c:tags[.='x'][.='y']", 14),
    ];
    for (_dir, store) in stores() {
        let url = store.url().to_string();
        for &(path, pos) in both.iter().chain(set_only) {
            let what = format!("{url}: set {path:?}");
            let e = refused(&store, &what, |s| s.running().set(path, leaf("z")).map(|_| ()));
            assert_path_error(&what, &e, pos);
            let what = format!("{url}: delete {path:?}");
            let e = refused(&store, &what, |s| s.running().delete(path).map(|_| ()));
            assert_path_error(&what, &e, pos);
        }
        for &(path, pos) in both {
            let what = format!("{url}: get {path:?}");
            let e = refused(&store, &what, |s| s.running().get(path, Default::default()).map(|_| ()));
            assert_path_error(&what, &e, pos);
            let e = refused(&store, &what, |s| s.running().get_item(path).map(|_| ()));
            assert_path_error(&what, &e, pos);
        }
    }
}

#[test]
fn edits_that_do_not_fit_are_refused_whole() {
    let user_entry = |k: &str| {
        let mut c = Container::default();
        c.children.insert("k".into(), Node::leaf(leaf(k)));
        Node::Container(c)
    };
    let p = |s: &str| s.parse::<canopy::Path>().unwrap();
    let ok = || Edit::merge(p("/c:sys/host"), Node::leaf(leaf("changed")));
    // (what, edits, a word the message must contain). Each transaction starts
    // with a valid edit, which must not be stored either.
    let cases: Vec<(&str, Vec<Edit>, &str)> = vec![
        ("a leaf-list entry on a container", vec![ok(), Edit::merge(p("/c:sys[.='x']"), Node::leaf(leaf("x")))], "sys"),
        (
            "a list entry with other key names",
            vec![ok(), Edit::merge(p("/c:log/entry[id='1']/v"), Node::leaf(leaf("x")))],
            "entry",
        ),
        (
            "create of an existing leaf",
            vec![
                ok(),
                Edit {
                    op: Operation::Create,
                    path: p("/c:sys/host"),
                    value: Some(Node::leaf(leaf("x"))),
                    insert: None,
                },
            ],
            "already exists",
        ),
        (
            "create of an existing entry",
            vec![
                ok(),
                Edit {
                    op: Operation::Create,
                    path: p("/c:log/entry[n='2']"),
                    value: Some(Node::Container(Container::default())),
                    insert: None,
                },
            ],
            "already exists",
        ),
        ("delete of a missing leaf", vec![ok(), Edit::delete(p("/c:sys/nothing"))], "does not exist"),
        ("delete of a missing entry", vec![ok(), Edit::delete(p("/c:log/entry[n='9']"))], "does not exist"),
        ("delete of a missing leaf-list entry", vec![ok(), Edit::delete(p("/c:tags[.='nope']"))], "does not exist"),
        ("delete below a missing container", vec![ok(), Edit::delete(p("/c:none/x/y"))], "does not exist"),
        (
            "insert before a missing anchor",
            vec![
                ok(),
                Edit {
                    op: Operation::Merge,
                    path: p("/c:u[k='c']"),
                    value: Some(user_entry("c")),
                    insert: Some(Insert::Before(vec!["zz".into()])),
                },
            ],
            "zz",
        ),
        (
            "move after a missing anchor",
            vec![
                ok(),
                Edit {
                    op: Operation::Merge,
                    path: p("/c:u[k='a']"),
                    value: Some(user_entry("a")),
                    insert: Some(Insert::After(vec!["zz".into()])),
                },
            ],
            "zz",
        ),
        (
            "an entry whose key leaf disagrees with its path",
            vec![
                ok(),
                Edit { op: Operation::Merge, path: p("/c:u[k='d']"), value: Some(user_entry("e")), insert: None },
            ],
            "k",
        ),
        (
            "a position past the end",
            vec![ok(), Edit::merge(p("/c:log/entry[9]/v"), Node::leaf(leaf("x")))],
            "does not exist",
        ),
    ];
    for (_dir, store) in stores() {
        let url = store.url().to_string();
        for (what, edits, needle) in &cases {
            let what = format!("{url}: {what}");
            let e = refused(&store, &what, |s| s.running().apply(edits).map(|_| ()));
            assert!(matches!(e, canopy::Error::Data(_)), "{what}: not a data error: {e:?}");
            assert!(e.to_string().contains(needle), "{what}: {e} lacks {needle:?}");
        }
    }
}

#[test]
fn malformed_json_is_refused_with_line_and_column() {
    let cases: &[(&str, usize, usize)] = &[
        ("", 1, 1),
        ("{", 1, 2),
        ("{\"c:sys\": {\"host\": }}", 1, 20),
        ("{\n  \"c:sys\": {\n    \"host\": \"r2\",\n  }\n}", 4, 3),
        ("{\"c:sys\": {\"host\": \"unterminated}}", 1, 20),
        ("[1, 2]", 1, 1),
        ("{\"c:sys\": {\"host\": \"a\"}, }", 1, 26),
        ("{\"c:log\": {\"entry\": {\"n\": 1}}}", 1, 21),
        ("{\"c:x\": tru}", 1, 9),
        ("{\"c:x\": 01}", 1, 9),
        ("{\"c:sys\": {\"host\": \"a\", \"host\": \"b\"}}", 1, 25),
        ("{\"c:sys\": {\"host\": \"a\"}} trailing", 1, 26),
        ("{\"c:sys\": {\"host\": \"\u{0}\"}}", 1, 21),
    ];
    for (_dir, store) in stores() {
        let url = store.url().to_string();
        for &(doc, line, column) in cases {
            for op in [Operation::Merge, Operation::Replace] {
                let what = format!("{url}: import {op:?} {doc:?}");
                let e = refused(&store, &what, |s| s.running().import(doc.as_bytes(), op).map(|_| ()));
                match &e {
                    canopy::Error::Data(canopy_core::Error::Json { line: l, column: c, .. }) => {
                        assert_eq!((*l, *c), (line, column), "{what}: {e}");
                        assert!(e.to_string().contains(&format!("line {line}, column {column}")), "{what}: {e}");
                    }
                    other => panic!("{what}: not a JSON error: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn malformed_store_urls_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let cases: Vec<(String, ErrorKind, &str)> = vec![
        (String::new(), ErrorKind::InvalidUrl, "empty"),
        ("   ".into(), ErrorKind::InvalidUrl, "empty"),
        ("lmdb:".into(), ErrorKind::InvalidUrl, "no location"),
        ("1x:foo".into(), ErrorKind::InvalidUrl, "not a scheme"),
        ("lm db:foo".into(), ErrorKind::InvalidUrl, "not a scheme"),
        ("nosuch:foo".into(), ErrorKind::InvalidUrl, "unknown backend `nosuch`"),
        (format!("lmdb:{d}?sync"), ErrorKind::InvalidUrl, "`sync` has no `=`"),
        (format!("lmdb:{d}?sync=maybe"), ErrorKind::InvalidUrl, "sync must be"),
        (format!("lmdb:{d}?sync=off&sync=off"), ErrorKind::InvalidUrl, "given twice"),
        (format!("lmdb:{d}?syncc=off"), ErrorKind::InvalidUrl, "unknown parameter `syncc`"),
        (format!("lmdb:{d}?cache=yes"), ErrorKind::InvalidUrl, "cache must be"),
        ("memory:x?sync=off".into(), ErrorKind::InvalidUrl, "unknown parameter `sync`"),
        ("canopy://127.0.0.1:2379".into(), ErrorKind::Unsupported, "not enabled in this build"),
    ];
    for (url, kind, needle) in cases {
        match Store::open(&url) {
            Ok(_) => panic!("{url:?} opened"),
            Err(canopy::Error::Store(e)) => {
                assert_eq!(e.kind(), kind, "{url:?}: {e}");
                assert!(e.to_string().contains(needle), "{url:?}: {e} lacks {needle:?}");
            }
            Err(other) => panic!("{url:?}: {other:?}"),
        }
    }
    // Refused URLs made no store.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------
// Damaged files

const DAMAGED_STORE: &str = "CANOPY_DAMAGED_STORE_CHILD";

#[test]
#[ignore = "the child process of the damaged-file tests; does nothing unless run by it"]
fn damaged_store_child() {
    let Ok(url) = std::env::var(DAMAGED_STORE) else { return };
    // One line with the outcome; a crash prints nothing.
    let outcome = match Store::open(&url) {
        Err(e) => format!("open-error {e}"),
        Ok(store) => match (store.check(), store.running().get("/", Default::default())) {
            (Err(e), _) => format!("check-error {e}"),
            (Ok(p), _) if !p.is_empty() => format!("check-problems {}", p[0]),
            (Ok(_), Err(e)) => format!("read-error {e}"),
            (Ok(_), Ok(_)) => "clean".to_string(),
        },
    };
    println!("\noutcome: {outcome}");
}

/// A healthy store of a few hundred KiB: small and big values, several lists.
fn healthy_file(dir: &Path) -> Vec<u8> {
    {
        let store = Store::open(&format!("lmdb:{}", dir.display())).unwrap();
        let s = store.running();
        let mut edits = Vec::new();
        for i in 0..2000 {
            let p = format!("/c:log/entry[n='{i}']/v").parse().unwrap();
            edits.push(Edit::merge(p, Node::leaf(leaf(&format!("value {i}")))));
        }
        for i in 0..20 {
            let p = format!("/c:blob[n='{i}']/data").parse().unwrap();
            edits.push(Edit::merge(p, Node::leaf(leaf(&"x".repeat(10_000 + i)))));
        }
        s.apply(&edits).unwrap();
        s.delete("/c:log/entry[n='7']").unwrap(); // some free pages too
    }
    std::fs::read(dir.join("data.mdb")).unwrap()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Damage {
    /// Random bytes at random offsets after the two meta pages.
    Scribble,
    /// Both meta pages overwritten with random bytes (and some scribbles).
    MetaDestroyed,
    /// Cut short, to at least one byte.
    Truncated,
}

fn damage(healthy: &[u8], kind: Damage, rng: &mut impl Rng) -> Vec<u8> {
    const PAGE: usize = 4096;
    let mut data = healthy.to_vec();
    match kind {
        Damage::Truncated => data.truncate(rng.gen_range(1..healthy.len())),
        Damage::Scribble | Damage::MetaDestroyed => {
            for _ in 0..rng.gen_range(1..=8) {
                let at = rng.gen_range(2 * PAGE..data.len());
                let len = rng.gen_range(1..=64).min(data.len() - at);
                rng.fill(&mut data[at..at + len]);
            }
            if kind == Damage::MetaDestroyed {
                rng.fill(&mut data[..2 * PAGE]);
            }
        }
    }
    data
}

/// Opens `cases` damaged copies of a healthy store, cycling through `kinds`,
/// each in a child process. Fails on a crash or panic, and on damage to the
/// meta pages or the length that goes unnoticed. Scribbles on data pages may
/// go unnoticed: LMDB keeps no checksums, and a changed value can still decode.
fn damage_cases(name: &str, kinds: &[Damage]) {
    let cases: usize = std::env::var("CANOPY_DAMAGE_CASES").map_or(60, |s| s.parse().unwrap());
    let seed: u64 = std::env::var("CANOPY_DAMAGE_SEED").map_or_else(|_| rand::random(), |s| s.parse().unwrap());
    eprintln!("{name}: {cases} cases, CANOPY_DAMAGE_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let healthy = healthy_file(tempfile::tempdir().unwrap().path());
    let exe = std::env::current_exe().unwrap();
    let mut outcomes: BTreeMap<(Damage, String), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in 0..cases {
        let kind = kinds[case % kinds.len()];
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.mdb"), damage(&healthy, kind, &mut rng)).unwrap();
        let out = Command::new(&exe)
            .args(["--exact", "damaged_store_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(DAMAGED_STORE, format!("lmdb:{}", dir.path().display()))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let outcome = match (out.status.signal(), stdout.lines().find_map(|l| l.strip_prefix("outcome: "))) {
            (Some(sig), _) => format!("crash (signal {sig})"),
            (None, Some(o)) if out.status.success() => o.to_string(),
            _ => format!("panic or failure: {}", String::from_utf8_lossy(&out.stderr)),
        };
        let class = outcome.split(' ').next().unwrap_or_default().to_string();
        let acceptable = match class.as_str() {
            "crash" | "panic" => false,
            "clean" => kind == Damage::Scribble,
            _ => true,
        };
        if !acceptable {
            // Kept for a debugger:
            // `CANOPY_DAMAGED_STORE_CHILD=lmdb:DIR <test binary> --exact damaged_store_child --ignored`.
            let kept = dir.keep();
            failures.push(format!("case {case} ({kind:?}): {outcome}; file kept in {}", kept.display()));
        }
        *outcomes.entry((kind, class)).or_default() += 1;
    }
    eprintln!("{name}: outcomes {outcomes:?}");
    assert!(failures.is_empty(), "CANOPY_DAMAGE_SEED={seed}:\n{}", failures.join("\n"));
}

#[test]
fn damaged_meta_pages_and_truncated_files_are_refused() {
    damage_cases("damaged_meta_pages_and_truncated_files_are_refused", &[Damage::MetaDestroyed, Damage::Truncated]);
}

/// Known to fail: LMDB trusts what it finds inside pages (node offsets, sizes,
/// flags) and crashes on some damaged data pages (SIGSEGV in
/// `mdb_xcursor_init1`, SIGBUS in `mdb_node_read` reading past the file). In a
/// few runs of 20-60 cases, 15-40% of scribbles crashed. See docs/design.md.
#[test]
#[ignore = "known LMDB limitation: some damaged data pages crash the process; run with --ignored"]
fn scribbled_data_pages_are_errors_not_crashes() {
    damage_cases("scribbled_data_pages_are_errors_not_crashes", &[Damage::Scribble]);
}

/// An order key that is empty, holds a `0x00` or ends where nothing fits
/// below it (hand-edited or damaged stores) is refused as damage naming the
/// fragment, by reads, by inserts and by `check`; never an endless loop.
#[test]
fn malformed_order_keys_are_damage_not_endless_loops() {
    use canopy_store::keys::{self, Datastore};
    use canopy_store::{fragment, Batch};
    for bad_order in [&[][..], &[0x40, 0x00, 0x80][..], &[0x40, 0x01][..]] {
        for (_dir, store) in stores() {
            let url = store.url().to_string();
            if url == "memory:x?cache=on" {
                continue; // its tree stays in memory: nothing rereads the record
            }
            let mut key = keys::data_prefix(Datastore::Running);
            key.extend(keys::path_key(&"/c:u[k='a']".parse().unwrap()).unwrap());
            let v = store.backend().snapshot().unwrap().get(&key).unwrap().expect("entry a is stored");
            let d = fragment::decode(&v).unwrap();
            let mut batch = Batch::default();
            batch.put(key, fragment::encode(&d.container, Some(bad_order)));
            store.backend().apply(&batch).unwrap();
            // A fresh handle, so that no cached tree hides the damage.
            let store = if url.starts_with("memory") { store } else { Store::open(&url).unwrap() };
            let what = format!("{url}: order key {bad_order:?}");
            let mut c = Container::default();
            c.children.insert("k".into(), Node::leaf(leaf("z")));
            let edit = Edit {
                op: Operation::Create,
                path: "/c:u[k='z']".parse().unwrap(),
                value: Some(Node::Container(c)),
                insert: Some(Insert::First),
            };
            let e = store.running().apply(&[edit]).expect_err(&what);
            assert!(
                matches!(&e, canopy::Error::Store(s) if s.kind() == ErrorKind::Corrupted),
                "{what}: not damage: {e:?}"
            );
            let msg = e.to_string();
            assert!(msg.contains("/c:u") && msg.contains("order key"), "{what}: {msg}");
            let e = store.running().get("/c:u", Default::default()).expect_err(&what);
            assert!(e.to_string().contains("order key"), "{what}: {e}");
            let problems = store.check().unwrap();
            assert!(problems.iter().any(|p| p.contains("/c:u") && p.contains("order key")), "{what}: {problems:?}");
        }
    }
}

/// Paths are limited to `MAX_STEPS` steps (refused at the step too many, the
/// store unchanged); the deepest data paths and documents allow together (a
/// path of the most steps with a document of the deepest nesting below it) is
/// stored, read, written as JSON, checked and deleted on a test thread's stack.
#[test]
fn paths_past_the_step_limit_are_refused_and_the_deepest_data_works() {
    let max = canopy_core::path::MAX_STEPS;
    for url in ["memory:x", "memory:x?cache=on"] {
        let store = populated(url);
        let long = "/c:a".to_string() + &"/b".repeat(60_000);
        let what = format!("{url}: set on a path of 60,001 steps");
        let e = refused(&store, &what, |s| s.running().set(&long, leaf("z")).map(|_| ()));
        assert_path_error(&what, &e, 4 + 2 * (max - 1));
        assert!(e.to_string().contains("at most 128 steps"), "{e}");
        let e = refused(&store, &what, |s| s.running().get(&long, Default::default()).map(|_| ()));
        assert_path_error(&what, &e, 4 + 2 * (max - 1));

        let deepest = "/c:a".to_string() + &"/b".repeat(max - 1);
        // `set_json` wraps the value in one object: the value may nest one
        // level less than the codec's limit.
        let levels = canopy_core::json::MAX_DEPTH - 2;
        let value = "{\"c\":".repeat(levels) + "{\"v\":1}" + &"}".repeat(levels);
        store.running().set_json(&deepest, &value).unwrap();
        let leaf_path = deepest.clone() + &"/c".repeat(levels) + "/v";
        assert!(store.running().get_item(&leaf_path).is_err(), "{url}: a path past the limit is refused");
        let tree = store.running().get("/c:a", Default::default()).unwrap();
        let mut depth = 0;
        let mut at = &tree;
        while let Some((_, Node::Container(c))) = at.children.iter().next() {
            depth += 1;
            at = c;
        }
        assert_eq!(depth, max + levels, "{url}");
        let mut json = Vec::new();
        store.running().get_json("/c:a", Default::default(), false, &mut json).unwrap();
        assert!(String::from_utf8(json).unwrap().contains("{\"v\":1}"));
        assert!(store.check().unwrap().is_empty());
        store.running().delete("/c:a").unwrap();
        assert!(store.check().unwrap().is_empty());
    }
}

/// An entry of a top-level user-ordered list with a short name whose key is
/// stored string-tagged although it reads as an integer (`"5"`): `check`
/// reports it, with its order record found by the stored bytes, and does not
/// panic on the length of a re-encoded key.
#[test]
fn check_reports_keys_stored_in_another_form() {
    use canopy_store::keys::{self, Datastore};
    use canopy_store::{fragment, Batch};
    for (_dir, store) in stores() {
        let url = store.url().to_string();
        let info = ListInfo { keys: vec!["k".into()], user_ordered: true };
        let mut rel = Vec::new();
        keys::push_name(&mut rel, "u");
        let list_rel = rel.clone();
        rel.push(0x20); // a string-tagged key value "5" (canonical would be 0x10 + 8 bytes)
        canopy_core::keycode::push_escaped(&mut rel, b"5");
        let mut entry = Container::default();
        entry.children.insert("k".into(), Node::leaf(leaf("5")));
        let order = canopy_core::keycode::order_first();
        let mut batch = Batch::default();
        let mut list_key = keys::LIST_INFO.to_vec();
        list_key.extend_from_slice(b"/u");
        batch.put(list_key, keys::encode_list_info(&info));
        let mut data = keys::data_prefix(Datastore::Running);
        data.extend_from_slice(&rel);
        batch.put(data, fragment::encode(&entry, Some(&order)));
        let mut ok = keys::order_prefix(Datastore::Running);
        ok.extend_from_slice(&list_rel);
        ok.extend_from_slice(&order);
        ok.push(0);
        batch.put(ok, rel[list_rel.len()..].to_vec());
        store.backend().apply(&batch).unwrap();
        let problems = store.check().unwrap();
        assert!(
            problems.len() == 1 && problems[0].contains("/u") && problems[0].contains("canonical"),
            "{url}: {problems:?}"
        );
    }
}

/// A fragment key that does not decode is reported with its datastore, the
/// path decoded up to the problem, and what stands there: by reads (tree and
/// streamed JSON) and by `check`.
#[test]
fn malformed_fragment_keys_name_datastore_path_and_problem() {
    use canopy_store::keys::{self, Datastore};
    use canopy_store::{fragment, Batch};
    for (_dir, store) in stores() {
        let url = store.url().to_string();
        if url == "memory:x?cache=on" {
            continue; // its tree stays in memory: nothing rereads the records
        }
        let mut key = keys::data_prefix(Datastore::Running);
        key.extend(keys::path_key(&"/c:log".parse().unwrap()).unwrap());
        keys::push_name(&mut key, "entry");
        key.extend_from_slice(&[0x10, 0x00]); // an integer key value cut short
        let mut batch = Batch::default();
        batch.put(key, fragment::encode(&Container::default(), None));
        store.backend().apply(&batch).unwrap();
        let store = if url.starts_with("memory") { store } else { Store::open(&url).unwrap() };
        let says = ["datastore running", "after `/c:log/entry`", "integer key value cut short"];
        let e = store.running().get("/", Default::default()).expect_err(&url).to_string();
        assert!(says.iter().all(|s| e.contains(s)), "{url}: get: {e}");
        let e = store.running().get_json("/", Default::default(), false, Vec::new()).expect_err(&url).to_string();
        assert!(says.iter().all(|s| e.contains(s)), "{url}: get_json: {e}");
        let problems = store.check().unwrap();
        assert!(problems.iter().any(|p| says.iter().all(|s| p.contains(s))), "{url}: {problems:?}");
    }
}
