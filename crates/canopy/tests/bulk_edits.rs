//! Transactions of many edits that create list entries: each entry is copied
//! into its change once (moved out of the transaction's tree when the batch
//! is built), and the diff is the one the edits make one by one — whole
//! entries, each as its own edit left it, seen by subscribers below them —
//! and `Session::apply_built` builds its edits again when another writer
//! commits first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use canopy::{Change, ChangeEvent, Container, Datastore, Edit, Node, Path, Store, Subscriber, Subtree, Value};

fn urls(dir: &tempfile::TempDir) -> Vec<String> {
    let d = dir.path().display();
    vec![format!("lmdb:{d}/plain?sync=off"), format!("lmdb:{d}/cached?sync=off&cache=on")]
}

fn leaf(v: &str) -> Node {
    Node::leaf(Value::String(v.into()))
}

/// Entry `i` of `/m:top/dev`: its key, a leaf and a nested list of two.
fn device(i: usize) -> Container {
    let mut c = Container::default();
    c.children.insert("id".into(), leaf(&format!("d{i:03}")));
    c.children.insert("state".into(), leaf("up"));
    let mut ports = canopy::List::new(canopy::ListInfo::keyed(["name"]));
    for p in 0..2 {
        let mut e = Container::default();
        e.children.insert("name".into(), leaf(&format!("p{p}")));
        e.children.insert("speed".into(), leaf(&format!("{}", 10 * (i + p))));
        ports.insert(e, &canopy::Insert::Last).unwrap();
    }
    c.children.insert("port".into(), Node::List(Box::new(ports)));
    c
}

fn device_path(i: usize) -> Path {
    format!("/m:top/dev[id='d{i:03}']").parse().unwrap()
}

fn devices(n: usize) -> Vec<Edit> {
    let create = |i| Edit {
        op: canopy::Operation::Create,
        path: device_path(i),
        value: Some(Node::Container(device(i))),
        insert: None,
    };
    (0..n).map(create).collect()
}

/// Entry `i` as stored.
fn stored(store: &Store, i: usize) -> Option<Container> {
    let got = store.running().get(&device_path(i).to_string(), Default::default()).unwrap();
    let Some(Node::Container(top)) = got.children.get("m:top") else { return None };
    let Some(Node::List(devs)) = top.children.get("dev") else { return None };
    devs.get(&[format!("d{i:03}")]).cloned()
}

/// The list entries `changes` create, with their paths.
fn created_entries(changes: &[Change]) -> Vec<(&Path, &Container)> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::Created { path, node: Subtree::Entry(e), .. } => Some((path, e)),
            _ => None,
        })
        .collect()
}

fn json(c: &Container) -> String {
    canopy::json::to_string(c, &Default::default())
}

fn open(url: &str) -> Store {
    let store = Store::open(url).unwrap();
    store.declare_list("/m:top/dev", canopy::ListInfo::keyed(["id"])).unwrap();
    store.declare_list("/m:top/dev/port", canopy::ListInfo::keyed(["name"])).unwrap();
    store
}

#[test]
fn each_created_entry_is_in_the_diff_whole_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = open(&url);
        let commit = store.running().apply_built(|| Ok(devices(50))).unwrap();
        let created = created_entries(&commit.changes);
        assert_eq!(created.len(), 50, "{url}: {:?}", commit.changes);
        for (i, (path, entry)) in created.into_iter().enumerate() {
            assert_eq!(path, &device_path(i), "{url}");
            assert_eq!(entry, &device(i), "{url}: entry {i}");
        }
        for i in [0, 17, 49] {
            assert_eq!(stored(&store, i), Some(device(i)), "{url}: read back {i}");
        }
    }
}

/// A merge of an existing container holding new entries (a bulk import
/// into a list that has some already) lists each entry it creates whole in
/// the diff, and stores it, with and without a subscriber reading the diff
/// before the commit.
#[test]
fn entries_a_merge_creates_below_an_existing_node_are_in_the_diff_whole() {
    struct Seen(Arc<Mutex<Vec<Container>>>);
    impl Subscriber for Seen {
        fn validate(&self, ev: &ChangeEvent<'_>) -> Result<(), String> {
            for c in ev.changes() {
                if let Change::Created { node: Subtree::Entry(e), .. } = c {
                    self.0.lock().unwrap().push(e.clone());
                }
            }
            Ok(())
        }
    }
    for subscribed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        for url in urls(&dir) {
            let store = open(&url);
            store.running().apply_built(|| Ok(devices(2))).unwrap();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let _sub =
                subscribed.then(|| store.subscribe(Datastore::Running, "/m:top", 0, Seen(seen.clone())).unwrap());
            let mut list = canopy::List::new(canopy::ListInfo::keyed(["id"]));
            for i in 2..40 {
                list.insert(device(i), &canopy::Insert::Last).unwrap();
            }
            let mut top = Container::default();
            top.children.insert("dev".into(), Node::List(Box::new(list)));
            let edit = Edit::merge("/m:top".parse().unwrap(), Node::Container(top));
            let commit = store.running().apply_owned(vec![edit]).unwrap();
            let created = created_entries(&commit.changes);
            assert_eq!(created.len(), 38, "{url}: {:?}", commit.changes);
            for (k, (path, entry)) in created.into_iter().enumerate() {
                assert_eq!(path, &device_path(k + 2), "{url}");
                assert_eq!(entry, &device(k + 2), "{url}: entry {}", k + 2);
            }
            if subscribed {
                let seen = seen.lock().unwrap();
                assert_eq!(seen.len(), 38, "{url}: the subscriber saw {} entries", seen.len());
                assert!(
                    seen.iter().enumerate().all(|(k, e)| e == &device(k + 2)),
                    "{url}: the subscriber saw empty entries"
                );
            }
            for i in [0, 2, 39] {
                assert_eq!(stored(&store, i), Some(device(i)), "{url}: read back {i}");
            }
        }
    }
}

/// A merge naming many entries of a list that holds some of them (stored
/// and new ones interleaved, new ones before the first stored and after the
/// last, the value's entries in any order) merges into each stored entry and
/// creates the others: what is stored is found by seeking through the list,
/// and no stored entry may be taken for new.
#[test]
fn a_merge_of_many_entries_merges_into_the_stored_ones_and_creates_the_rest() {
    for user_ordered_value in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut urls = urls(&dir);
        urls.push(format!("memory:bulk-merge-{user_ordered_value}"));
        for url in urls {
            let store = open(&url);
            // Stored: every third device from 3 to 36, and 100 to 120 (many
            // stored entries the value passes by, then one it names among them).
            let stored_ids: Vec<usize> = (3..=36).step_by(3).chain(100..=120).collect();
            let edits = stored_ids.iter().map(|&i| Edit::merge(device_path(i), Node::Container(device(i)))).collect();
            store.running().apply_owned(edits).unwrap();
            let note = |i: usize| {
                let mut e = Container::default();
                e.children.insert("id".into(), leaf(&format!("d{i:03}")));
                e.children.insert("note".into(), leaf(&format!("n{i}")));
                e
            };
            // The value: devices 0 to 40, 110 and 200, in reverse order when
            // its list is user-ordered.
            let info = canopy::ListInfo { keys: vec!["id".into()], user_ordered: user_ordered_value };
            let mut list = canopy::List::new(info);
            let value_ids: Vec<usize> = (0..=40).chain([110, 200]).collect();
            for &i in &value_ids {
                let at = if user_ordered_value { canopy::Insert::First } else { canopy::Insert::Last };
                list.insert(note(i), &at).unwrap();
            }
            let mut top = Container::default();
            top.children.insert("dev".into(), Node::List(Box::new(list)));
            let commit = store
                .running()
                .apply_owned(vec![Edit::merge("/m:top".parse().unwrap(), Node::Container(top))])
                .unwrap();
            let created: Vec<&Path> = created_entries(&commit.changes).into_iter().map(|(p, _)| p).collect();
            let new_ids: Vec<usize> = value_ids.iter().copied().filter(|i| !stored_ids.contains(i)).collect();
            assert_eq!(created.len(), new_ids.len(), "{url}: {:?}", commit.changes);
            for i in new_ids {
                assert!(created.contains(&&device_path(i)), "{url}: {i} not created");
                assert_eq!(stored(&store, i), Some(note(i)), "{url}: new entry {i}");
            }
            for &i in &stored_ids {
                assert!(!created.contains(&&device_path(i)), "{url}: stored entry {i} taken for new");
                let mut want = device(i);
                if value_ids.contains(&i) {
                    want.children.insert("note".into(), leaf(&format!("n{i}")));
                }
                assert_eq!(stored(&store, i), Some(want), "{url}: stored entry {i} merged");
            }
        }
    }
}

#[test]
fn an_edit_inside_an_entry_created_before_it_leaves_that_change_as_its_edit_made_it() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = open(&url);
        let mut edits = devices(3);
        edits.push(Edit::merge(format!("{}/note", device_path(1)).parse().unwrap(), leaf("later")));
        let commit = store.running().apply(&edits).unwrap();
        let first = commit.changes.iter().find(|c| c.path() == &device_path(1)).expect("entry created");
        match first {
            Change::Created { node: Subtree::Entry(e), .. } => assert_eq!(e, &device(1), "{url}"),
            other => panic!("{url}: {other:?}"),
        }
        let note = format!("{}/note", device_path(1));
        assert!(commit.changes.iter().any(|c| c.path().to_string() == note), "{url}: {:?}", commit.changes);
        let got = store.running().get(&note, Default::default()).unwrap();
        assert!(json(&got).contains("later"), "{url}");
    }
}

/// Records the paths of the changes and whether a created entry holds `port`.
struct Seen(Arc<Mutex<Vec<String>>>);

impl Subscriber for Seen {
    fn apply(&self, ev: &ChangeEvent<'_>) {
        for c in ev.changes() {
            let ports = match c {
                Change::Created { node: Subtree::Entry(e), .. } => e.children.get("port").is_some(),
                _ => false,
            };
            self.0.lock().unwrap().push(format!("{} {ports}", c.path()));
        }
    }
}

#[test]
fn a_subscriber_below_created_entries_sees_them_whole() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = open(&url);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let _s = store.subscribe(Datastore::Running, "/m:top/dev[id='d002']/port", 0, Seen(seen.clone())).unwrap();
        store.running().apply_built(|| Ok(devices(4))).unwrap();
        // The subscription lies below one created entry: only what the
        // entry's content holds tells that it concerns it.
        assert_eq!(*seen.lock().unwrap(), [format!("{} true", device_path(2))], "{url}");
    }
}

/// `/m:top` holding devices `0..n`, as one container.
fn top_of(n: usize) -> Container {
    let mut devs = canopy::List::new(canopy::ListInfo::keyed(["id"]));
    for i in 0..n {
        devs.insert(device(i), &canopy::Insert::Last).unwrap();
    }
    let mut top = Container::default();
    top.children.insert("dev".into(), Node::List(Box::new(devs)));
    top
}

/// A container an edit creates is copied into its change once too: the
/// change holds it whole (with a subscriber below it or without), and it
/// is stored.
#[test]
fn a_created_container_is_in_the_diff_whole_and_stored() {
    for watched in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        for url in urls(&dir) {
            let store = open(&url);
            let seen = Arc::new(Mutex::new(Vec::new()));
            let _s = watched.then(|| {
                store.subscribe(Datastore::Running, "/m:top/dev[id='d003']/port", 0, Seen(seen.clone())).unwrap()
            });
            let edit = Edit {
                op: canopy::Operation::Create,
                path: "/m:top".parse().unwrap(),
                value: Some(Node::Container(top_of(5))),
                insert: None,
            };
            let commit = store.running().apply_built(|| Ok(vec![edit.clone()])).unwrap();
            match commit.changes.as_slice() {
                [Change::Created { path, node: Subtree::Node(Node::Container(c)), .. }] => {
                    assert_eq!(path.to_string(), "/m:top", "{url}");
                    assert_eq!(c, &top_of(5), "{url} watched={watched}");
                }
                other => panic!("{url}: {other:?}"),
            }
            for i in [0, 4] {
                assert_eq!(stored(&store, i), Some(device(i)), "{url}: read back {i}");
            }
            if watched {
                assert_eq!(seen.lock().unwrap().len(), 1, "{url}: {:?}", seen.lock().unwrap());
            }
            // Created once: a second create of it is refused, and nothing changed.
            assert!(store.running().apply(&[edit]).is_err(), "{url}");
            assert_eq!(stored(&store, 2), Some(device(2)), "{url}");
        }
    }
}

/// Commits through another connection of the store once, from inside the
/// first attempt of a transaction, so that the attempt meets a conflict.
struct Interloper {
    other: Store,
    done: AtomicUsize,
}

impl Subscriber for Interloper {
    fn validate(&self, _ev: &ChangeEvent<'_>) -> Result<(), String> {
        if self.done.fetch_add(1, Ordering::SeqCst) == 0 {
            self.other.running().set("/m:top/owner", Value::String("other".into())).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[test]
fn apply_built_builds_its_edits_again_after_another_writer_commits_first() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}?sync=off", dir.path().join("s").display());
    let store = open(&url);
    let interloper = Interloper { other: Store::open(&url).unwrap(), done: AtomicUsize::new(0) };
    let _s = store.subscribe(Datastore::Running, "/m:top/dev", 0, interloper).unwrap();
    let builds = AtomicUsize::new(0);
    store
        .running()
        .apply_built(|| {
            builds.fetch_add(1, Ordering::SeqCst);
            Ok(devices(5))
        })
        .unwrap();
    assert_eq!(builds.load(Ordering::SeqCst), 2, "built once more after the conflict");
    let fresh = Store::open(&url).unwrap();
    assert_eq!(fresh.running().count("/m:top/dev").unwrap(), 5);
    let owner = fresh.running().get("/m:top/owner", Default::default()).unwrap();
    assert!(json(&owner).contains("other"), "{}", json(&owner));
}

#[test]
fn apply_built_returns_what_build_refuses_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&format!("lmdb:{}?sync=off", dir.path().join("s").display()));
    let err = store.running().apply_built(|| Err(canopy::Error::Usage("no body".into()))).unwrap_err();
    assert!(matches!(&err, canopy::Error::Usage(m) if m == "no body"), "{err:?}");
    // A create of an entry that is there fails whole: nothing of the batch is stored.
    store.running().apply_built(|| Ok(devices(2))).unwrap();
    let err = store
        .running()
        .apply_built(|| {
            let mut e = devices(4);
            e.rotate_left(2);
            Ok(e)
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "/m:top/dev[id='d000']: already exists");
    assert_eq!(store.running().count("/m:top/dev").unwrap(), 2);
}

#[test]
fn an_entry_created_then_removed_with_its_whole_list_in_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = open(&url);
        let mut edits = devices(3);
        edits.push(Edit::delete("/m:top/dev".parse().unwrap()));
        edits.extend(devices(5).into_iter().skip(3));
        let commit = store.running().apply(&edits).unwrap();
        let created = commit.changes.iter().find(|c| c.path() == &device_path(0)).expect("created");
        assert!(matches!(created, Change::Created { node: Subtree::Entry(e), .. } if e == &device(0)), "{url}");
        assert_eq!(store.running().count("/m:top/dev").unwrap(), 2, "{url}");
        assert_eq!(stored(&store, 4), Some(device(4)), "{url}");
        assert_eq!(stored(&store, 0), None, "{url}");
    }
}

/// A store with the two-key list `/m:top/link` declared.
fn link_store(url: &str) -> Store {
    let store = Store::open(url).unwrap();
    store.declare_list("/m:top/link", canopy::ListInfo::keyed(["a", "b"])).unwrap();
    store
}

/// The entry of `link_store`'s list with keys `a` and `b`.
fn link(a: &str, b: &str) -> Container {
    let mut c = Container::default();
    c.children.insert("a".into(), leaf(a));
    c.children.insert("b".into(), leaf(b));
    c
}

/// An edit creating [`link`]`(a, b)`.
fn create_link(a: &str, b: &str) -> Edit {
    Edit {
        op: canopy::Operation::Create,
        path: format!("/m:top/link[a='{a}'][b='{b}']").parse().unwrap(),
        value: Some(Node::Container(link(a, b))),
        insert: None,
    }
}

#[test]
fn an_entry_named_with_its_keys_in_another_order_is_the_same_entry() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = link_store(&url);
        let edits = vec![
            create_link("1", "2"),
            create_link("3", "4"),
            Edit::merge("/m:top/link[b='2'][a='1']/x".parse().unwrap(), leaf("later")),
        ];
        let commit = store.running().apply(&edits).unwrap();
        let first: Path = "/m:top/link[a='1'][b='2']".parse().unwrap();
        let created = commit.changes.iter().find(|c| c.path() == &first).expect("created");
        assert!(
            matches!(created, Change::Created { node: Subtree::Entry(e), .. } if e == &link("1", "2")),
            "{url}: {:?}",
            commit.changes
        );
        assert_eq!(store.running().count("/m:top/link").unwrap(), 2, "{url}");
        assert_eq!(store.running().count("/m:top/link/x").unwrap(), 1, "{url}");
    }
}

#[test]
fn an_entry_named_by_its_position_is_the_same_entry_as_by_its_key() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.declare_list("/m:top/n", canopy::ListInfo::keyed(["k"])).unwrap();
        let entry = |k: &str| {
            let mut c = Container::default();
            c.children.insert("k".into(), leaf(k));
            c.children.insert("v".into(), leaf("a"));
            c
        };
        let create = |k: &str| Edit {
            op: canopy::Operation::Create,
            path: format!("/m:top/n[k='{k}']").parse().unwrap(),
            value: Some(Node::Container(entry(k))),
            insert: None,
        };
        // `n[1]` names the entry whose key is 1: deleted in the transaction
        // that creates it, it is not stored and the diff says both.
        let edits = vec![create("1"), create("2"), Edit::delete("/m:top/n[1]".parse().unwrap())];
        let commit = store.running().apply(&edits).unwrap();
        let first: Path = "/m:top/n[k='1']".parse().unwrap();
        let created = commit.changes.iter().find(|c| c.path() == &first).expect("created");
        assert!(matches!(created, Change::Created { node: Subtree::Entry(e), .. } if e == &entry("1")), "{url}");
        assert_eq!(store.running().count("/m:top/n").unwrap(), 1, "{url}: {:?}", commit.changes);
    }
}

#[test]
fn an_entry_created_and_deleted_by_its_keys_in_another_order_in_one_transaction() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = link_store(&url);
        let create = create_link("1", "2");
        // The delete names the entry the create made (not a stored one).
        let delete = Edit::delete("/m:top/link[b='2'][a='1']".parse().unwrap());
        let commit = store.running().apply(&[create, delete]).unwrap();
        assert!(matches!(commit.changes.last(), Some(Change::Deleted { .. })), "{url}: {:?}", commit.changes);
        assert_eq!(store.running().count("/m:top/link").unwrap(), 0, "{url}");
    }
}
