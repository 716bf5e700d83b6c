//! Diff and edit invariants: applying a diff to the old tree gives the new one,
//! its inverse gives the old one back; every edit's returned diff does the same.

use canopy_core::diff::{apply, apply_keeping_removed, diff, invert, Removed};
use canopy_core::edit::{apply_edit, Edit, Operation};
use canopy_core::tree::{Container, Insert, LeafListEntry, List, ListInfo, Node};
use canopy_core::{Error, Meta, Path, Schemaless, Selector, Value};
use proptest::prelude::*;

fn meta_strategy() -> impl Strategy<Value = Meta> {
    prop::collection::btree_map(prop::sample::select(vec!["m:a".to_string(), "m:b".to_string()]), "[xy]{0,2}", 0..2)
        .prop_map(|m| m.into_iter().collect())
}

fn value_strategy() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-c]{0,2}".prop_map(|s| Value::String(s.into())),
        (0i64..20).prop_map(|n| Value::Number(n.to_string().into())),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Empty),
    ]
}

fn entry_strategy(key: u8, inner: BoxedStrategy<Container>) -> impl Strategy<Value = Container> {
    (inner, meta_strategy()).prop_map(move |(mut c, meta)| {
        c.meta = meta;
        c.children.insert("k".into(), Node::leaf(Value::Number(key.to_string().into())));
        c
    })
}

fn list_strategy(info: ListInfo, inner: BoxedStrategy<Container>) -> impl Strategy<Value = Node> {
    prop::collection::vec((0u8..6, inner), 1..4).prop_flat_map(move |items| {
        let info = info.clone();
        let entries: Vec<BoxedStrategy<Container>> =
            items.into_iter().map(|(k, c)| entry_strategy(k, Just(c).boxed()).boxed()).collect();
        entries.prop_map(move |es| {
            let mut l = List::new(info.clone());
            for e in es {
                let _ = l.insert(e, &Insert::Last); // duplicates dropped
            }
            Node::List(Box::new(l))
        })
    })
}

fn container_strategy(depth: u32) -> BoxedStrategy<Container> {
    let leafish = prop_oneof![
        (value_strategy(), meta_strategy()).prop_map(|(value, meta)| Node::Leaf { value, meta }),
        prop::collection::vec(("[a-d]", meta_strategy()), 1..4).prop_map(|vs| {
            let mut seen = std::collections::HashSet::new();
            Node::LeafList(
                vs.into_iter()
                    .filter(|(v, _)| seen.insert(v.clone()))
                    .map(|(v, meta)| LeafListEntry { value: Value::String(v.into()), meta })
                    .collect(),
            )
        }),
    ];
    if depth == 0 {
        return prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "c"]).prop_map(String::from),
            leafish,
            0..3,
        )
        .prop_map(|children| Container {
            meta: Meta::new(),
            children: children.into_iter().map(|(k, v): (String, Node)| (k.into(), v)).collect(),
        })
        .boxed();
    }
    let inner = container_strategy(depth - 1);
    let node = prop_oneof![
        3 => leafish,
        1 => inner.clone().prop_map(Node::Container),
        1 => list_strategy(ListInfo::keyed(["k"]), inner.clone()),
        1 => list_strategy(ListInfo { keys: vec!["k".into()], user_ordered: true }, inner.clone()),
        1 => list_strategy(ListInfo::keyless(), inner),
    ];
    // Names fix the node kind, as a schema would: a-c leaf-ish, d-h anything.
    (
        prop::collection::btree_map(
            prop::sample::select(vec!["a", "b", "d", "e", "f"]).prop_map(String::from),
            node,
            0..4,
        ),
        meta_strategy(),
    )
        .prop_map(|(children, meta)| Container {
            meta,
            children: children.into_iter().map(|(k, v): (String, Node)| (k.into(), v)).collect(),
        })
        .boxed()
}

/// A schema that knows every list the strategies make, by name.
fn schema() -> Schemaless {
    Schemaless::default()
}

fn check_diff(old: &Container, new: &Container) -> Result<(), TestCaseError> {
    let d = diff(old, new);
    let mut t = old.clone();
    apply(&mut t, &d).map_err(|e| TestCaseError::fail(format!("apply: {e}")))?;
    prop_assert_eq!(&t, new, "diff {:#?}", d);
    // Keeping what deletes took out changes nothing in the tree.
    let mut kept = old.clone();
    apply_keeping_removed(&mut kept, &d, &mut Removed::default())
        .map_err(|e| TestCaseError::fail(format!("apply keeping: {e}")))?;
    prop_assert_eq!(&kept, new, "diff {:#?}", d);
    let mut back = new.clone();
    apply(&mut back, &invert(&d)).map_err(|e| TestCaseError::fail(format!("apply inverse: {e}")))?;
    prop_assert_eq!(&back, old, "diff {:#?}", d);
    if old == new {
        prop_assert!(d.is_empty());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn diff_applies_and_inverts(old in container_strategy(2), new in container_strategy(2)) {
        check_diff(&old, &new)?;
        check_diff(&new, &old)?;
        check_diff(&old, &old)?;
    }

    #[test]
    fn user_ordered_reorders_invert(perm in Just((0u8..8).collect::<Vec<_>>()).prop_shuffle(), keep in prop::collection::vec(any::<bool>(), 8)) {
        let mk = |keys: &[u8]| {
            let mut l = List::new(ListInfo { keys: vec!["k".into()], user_ordered: true });
            for k in keys {
                let mut e = Container::default();
                e.children.insert("k".into(), Node::leaf(Value::Number(k.to_string().into())));
                l.insert(e, &Insert::Last).unwrap();
            }
            let mut c = Container::default();
            if !l.is_empty() {
                c.children.insert("l".into(), Node::List(Box::new(l)));
            }
            c
        };
        let old = mk(&(0u8..8).collect::<Vec<_>>());
        let kept: Vec<u8> = perm.iter().copied().filter(|k| keep[*k as usize]).collect();
        let new = mk(&kept);
        check_diff(&old, &new)?;
        check_diff(&new, &old)?;
    }

    #[test]
    fn edits_return_their_diff(base in container_strategy(2), value in container_strategy(1), op in 0usize..5, target in 0usize..4) {
        let ops = [Operation::Merge, Operation::Replace, Operation::Create, Operation::Delete, Operation::Remove];
        let paths = ["/d", "/e", "/f/a", "/"];
        let path: Path = paths[target].parse().unwrap();
        let mut edit = Edit { op: ops[op], path: path.clone(), value: None, insert: None };
        if matches!(ops[op], Operation::Merge | Operation::Replace | Operation::Create) {
            edit.value = Some(if target == 2 { Node::leaf(Value::String("v".into())) } else { Node::Container(value) });
        }
        let mut t = base.clone();
        // An edit may fail (kind mismatch, create of existing...): then the
        // tree is as it was.
        if let Ok(changes) = apply_edit(&mut t, &edit, &schema()) {
                let mut replay = base.clone();
                apply(&mut replay, &changes).map_err(|e| TestCaseError::fail(format!("apply: {e}: {changes:#?}")))?;
                prop_assert_eq!(&replay, &t);
                let mut back = t.clone();
                apply(&mut back, &invert(&changes)).map_err(|e| TestCaseError::fail(format!("invert: {e}")))?;
                prop_assert_eq!(&back, &base);
        } else {
            prop_assert_eq!(&t, &base);
        }
    }
}

fn p(s: &str) -> Path {
    s.parse().unwrap()
}

fn leaf(s: &str) -> Node {
    Node::leaf(Value::String(s.into()))
}

#[test]
fn create_delete_remove_semantics() {
    let s = schema();
    let mut t = Container::default();
    let ch = apply_edit(
        &mut t,
        &Edit { op: Operation::Create, path: p("/m:c/x"), value: Some(leaf("1")), insert: None },
        &s,
    )
    .unwrap();
    assert_eq!(ch.len(), 2, "container /m:c and leaf x created: {ch:?}");
    let again = apply_edit(
        &mut t,
        &Edit { op: Operation::Create, path: p("/m:c/x"), value: Some(leaf("2")), insert: None },
        &s,
    );
    assert!(matches!(again, Err(Error::Exists { .. })), "{again:?}");
    let gone = apply_edit(&mut t, &Edit::delete(p("/m:c/y")), &s);
    assert!(matches!(gone, Err(Error::NotFound { .. })), "{gone:?}");
    let removed = apply_edit(&mut t, &Edit { op: Operation::Remove, path: p("/m:c/y"), value: None, insert: None }, &s);
    assert_eq!(removed.unwrap(), vec![]);
    apply_edit(&mut t, &Edit::delete(p("/m:c/x")), &s).unwrap();
    assert!(t.children.contains_key("m:c"));
}

/// A merge whose list value is keyed otherwise than the list it merges
/// into (keyless, as JSON parsed without declared keys gives) may name one
/// new entry twice: the second part merges into what the first created.
/// With deferred copies, every created change is filled whole from the tree
/// (moved out of it, as a transaction does once the batch is built), each
/// holding what its own part of the merge made.
#[test]
fn deferred_merges_of_one_new_entry_named_twice_fill_whole() {
    let s = schema();
    let mut t = Container::default();
    apply_edit(&mut t, &Edit::merge(p("/m:top/dev[id='d0']/a"), leaf("0")), &s).unwrap();
    let mut list = List::new(ListInfo::keyless());
    let mut first = Container::default();
    first.children.insert("id".into(), leaf("d7"));
    first.children.insert("a".into(), leaf("1"));
    let mut second = Container::default();
    second.children.insert("id".into(), leaf("d7"));
    let mut b = Container::default();
    b.children.insert("x".into(), leaf("2"));
    second.children.insert("b".into(), Node::Container(b));
    list.insert(first, &Insert::Last).unwrap();
    list.insert(second, &Insert::Last).unwrap();
    let mut top = Container::default();
    top.children.insert("dev".into(), Node::List(Box::new(list)));
    let edit = Edit::merge(p("/m:top"), Node::Container(top));
    let (mut changes, deferred) = canopy_core::edit::apply_edit_deferring(&mut t, edit, &s).unwrap();
    for i in deferred {
        canopy_core::edit::fill_created(&mut t, &mut changes[i], true).unwrap();
    }
    let created: Vec<String> = changes
        .iter()
        .filter(|c| matches!(c, canopy_core::diff::Change::Created { .. }))
        .map(|c| c.path().to_string())
        .collect();
    // The entry as its first part made it, then what the second added.
    assert_eq!(created, ["/m:top/dev[id='d7']", "/m:top/dev[id='d7']/b"], "{changes:?}");
    let whole = changes.iter().all(|c| match c {
        canopy_core::diff::Change::Created { node: canopy_core::diff::Subtree::Entry(e), .. } => {
            e.children.contains_key("a") && e.children.contains_key("id")
        }
        canopy_core::diff::Change::Created { node: canopy_core::diff::Subtree::Node(Node::Container(b)), .. } => {
            b.children.contains_key("x")
        }
        _ => true,
    });
    assert!(whole, "{changes:?}");
}

/// `fill_created_all` fills the created changes as `fill_created` does
/// one by one: many new entries of one list beside one that was there,
/// copied or moved out of the tree; an entry the tree no longer holds is
/// an error naming it.
#[test]
fn filling_created_entries_in_one_pass_matches_one_by_one() {
    use canopy_core::edit::{apply_edit_deferring, fill_created, fill_created_all};
    let s = schema();
    let mut base = Container::default();
    apply_edit(&mut base, &Edit::merge(p("/m:top/dev[id='d05']/a"), leaf("0")), &s).unwrap();
    let mut list = List::new(ListInfo::keyed(["id"]));
    for i in (0..30).rev() {
        let mut e = Container::default();
        e.children.insert("id".into(), leaf(&format!("d{i:02}")));
        let mut b = Container::default();
        b.children.insert("x".into(), leaf(&i.to_string()));
        e.children.insert("b".into(), Node::Container(b));
        list.insert(e, &Insert::Last).unwrap();
    }
    let mut top = Container::default();
    top.children.insert("dev".into(), Node::List(Box::new(list)));
    let edit = Edit::merge(p("/m:top"), Node::Container(top));
    let created = |take: bool, all: bool| {
        let mut t = base.clone();
        let (mut changes, deferred) = apply_edit_deferring(&mut t, edit.clone(), &s).unwrap();
        assert_eq!(deferred.len(), 29);
        match all {
            true => fill_created_all(&mut t, &mut changes, &deferred, take).unwrap(),
            false => {
                for &i in &deferred {
                    fill_created(&mut t, &mut changes[i], take).unwrap();
                }
            }
        }
        (changes, t)
    };
    let (one, kept) = created(false, false);
    assert!(one.iter().all(|c| match c {
        canopy_core::diff::Change::Created { node: canopy_core::diff::Subtree::Entry(e), .. } => {
            e.children.contains_key("b")
        }
        _ => true,
    }));
    assert_eq!(created(false, true), (one.clone(), kept));
    let (moved, emptied) = created(true, true);
    assert_eq!(moved, one);
    assert_eq!(emptied, created(true, false).1);
    // The tree without one of the created entries.
    let mut t = base.clone();
    let (mut changes, deferred) = apply_edit_deferring(&mut t, edit, &s).unwrap();
    apply_edit(&mut t, &Edit::delete(p("/m:top/dev[id='d17']")), &s).unwrap();
    match fill_created_all(&mut t, &mut changes, &deferred, true) {
        Err(Error::NotFound { path }) => assert_eq!(path, "/m:top/dev[id='d17']"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn merge_creates_list_entries_with_keys_from_path() {
    let s = schema();
    let mut t = Container::default();
    apply_edit(&mut t, &Edit::merge(p("/m:c/lst[k1='2'][k2='b']/l"), leaf("x")), &s).unwrap();
    let Some(Node::Container(c)) = t.children.get("m:c") else { panic!("{t:?}") };
    let Some(Node::List(l)) = c.children.get("lst") else { panic!("{c:?}") };
    assert_eq!(l.info.keys, vec!["k1", "k2"]);
    let e = l.get(&["2".into(), "b".into()]).unwrap();
    assert_eq!(e.children.len(), 3);
    // The same entry, keys spelled in the other order.
    let ch = apply_edit(&mut t, &Edit::merge(p("/m:c/lst[k2='b'][k1='2']/l"), leaf("y")), &s).unwrap();
    assert_eq!(ch.len(), 1, "{ch:?}");
    assert_eq!(ch[0].path().to_string(), "/m:c/lst[k1='2'][k2='b']/l");
}

#[test]
fn user_ordered_insert_positions() {
    let mut s = schema();
    s.lists.insert("/m:u".into(), ListInfo { keys: vec!["k".into()], user_ordered: true });
    let mut t = Container::default();
    let put = |t: &mut Container, k: &str, at: Insert| {
        apply_edit(
            t,
            &Edit {
                op: Operation::Merge,
                path: p(&format!("/m:u[k='{k}']")),
                value: Some(Node::Container(Container::default())),
                insert: Some(at),
            },
            &s,
        )
        .unwrap()
    };
    put(&mut t, "b", Insert::Last);
    put(&mut t, "d", Insert::Last);
    put(&mut t, "a", Insert::First);
    put(&mut t, "c", Insert::After(vec!["b".into()]));
    put(&mut t, "e", Insert::Before(vec!["a".into()]));
    let order = |t: &Container| -> Vec<String> {
        let Some(Node::List(l)) = t.children.get("m:u") else { panic!() };
        l.entries().map(|e| e.key_text("k").unwrap().into()).collect()
    };
    assert_eq!(order(&t), ["e", "a", "b", "c", "d"]);
    // Moving an existing entry returns a Moved change that inverts.
    let before = t.clone();
    let ch = put(&mut t, "e", Insert::Last);
    assert_eq!(order(&t), ["a", "b", "c", "d", "e"]);
    assert!(matches!(ch.as_slice(), [canopy_core::diff::Change::Moved { .. }]), "{ch:?}");
    let mut back = t.clone();
    apply(&mut back, &invert(&ch)).unwrap();
    assert_eq!(order(&back), order(&before));
    let missing = apply_edit(
        &mut t,
        &Edit {
            op: Operation::Merge,
            path: p("/m:u[k='z']"),
            value: Some(Node::Container(Container::default())),
            insert: Some(Insert::After(vec!["nope".into()])),
        },
        &s,
    );
    assert!(matches!(missing, Err(Error::NotFound { .. })), "{missing:?}");
}

#[test]
fn leaf_list_entries() {
    let s = schema();
    let mut t = Container::default();
    for v in ["x", "y"] {
        apply_edit(
            &mut t,
            &Edit { op: Operation::Merge, path: p(&format!("/m:ll[.='{v}']")), value: None, insert: None },
            &s,
        )
        .unwrap();
    }
    apply_edit(
        &mut t,
        &Edit { op: Operation::Merge, path: p("/m:ll[.='w']"), value: None, insert: Some(Insert::First) },
        &s,
    )
    .unwrap();
    let Some(Node::LeafList(ll)) = t.children.get("m:ll") else { panic!() };
    let vals: Vec<_> = ll.iter().map(|e| e.value.as_text().into_owned()).collect();
    assert_eq!(vals, ["w", "x", "y"]);
    apply_edit(&mut t, &Edit::delete(p("/m:ll[.='x']")), &s).unwrap();
    let Some(Node::LeafList(ll)) = t.children.get("m:ll") else { panic!() };
    assert_eq!(ll.len(), 2);
    assert_eq!(Selector::Value("w".into()), p("/m:ll[.='w']").segments[0].selector);
}

#[test]
fn failed_edit_leaves_tree_unchanged() {
    let s = schema();
    let mut t = Container::default();
    apply_edit(&mut t, &Edit::merge(p("/m:c/x"), leaf("1")), &s).unwrap();
    let before = t.clone();
    // Merging a container where a leaf is and creating list entries on the way
    // fails at the end: the entry created on the way is undone.
    let bad = Edit { op: Operation::Merge, path: p("/m:c/lst[k='1']/x/y"), value: Some(leaf("v")), insert: None };
    let mut t2 = t.clone();
    apply_edit(&mut t2, &Edit::merge(p("/m:c/lst[k='1']/x"), leaf("leaf")), &s).unwrap();
    let before2 = t2.clone();
    assert!(apply_edit(&mut t2, &bad, &s).is_err());
    assert_eq!(t2, before2);
    let ins = Edit {
        op: Operation::Merge,
        path: p("/m:c/u[k='9']"),
        value: Some(Node::Container(Container::default())),
        insert: Some(Insert::After(vec!["missing".into()])),
    };
    let mut s2 = schema();
    s2.lists.insert("/m:c/u".into(), ListInfo { keys: vec!["k".into()], user_ordered: true });
    assert!(apply_edit(&mut t, &ins, &s2).is_err());
    assert_eq!(t, before, "the empty list made on the way is gone");
}

/// What deletes take out is handed over whole, and weighed: a list as its
/// entries, an entry or container as itself and its children.
#[test]
fn removed_nodes_are_kept_and_weighed() {
    let s = schema();
    let mut t = Container::default();
    for i in 0..300 {
        let e = Edit::merge(p(&format!("/m:c/lst[k='{i}']/v")), leaf("x"));
        apply_edit(&mut t, &e, &s).unwrap();
    }
    let before = t.clone();
    // One entry: itself and its two leaves.
    let one = apply_edit(&mut before.clone(), &Edit::delete(p("/m:c/lst[k='7']")), &s).unwrap();
    let mut removed = Removed::default();
    apply_keeping_removed(&mut t, &one, &mut removed).unwrap();
    assert!(removed.at_least(3) && !removed.at_least(4));
    // The rest of the list, entry by entry (as the edit's diff deletes it),
    // then the empty list: 299 entries of three.
    let all = apply_edit(&mut t.clone(), &Edit::delete(p("/m:c/lst")), &s).unwrap();
    let mut removed = Removed::default();
    apply_keeping_removed(&mut t, &all, &mut removed).unwrap();
    assert!(removed.at_least(897) && !removed.at_least(898));
    // A whole list removed at once weighs its entries.
    let mut whole = before.clone();
    let mut removed = Removed::default();
    let erase = vec![canopy_core::diff::Change::Erased { path: p("/m:c/lst") }];
    apply_keeping_removed(&mut whole, &erase, &mut removed).unwrap();
    assert!(removed.at_least(300) && !removed.at_least(301));
    assert!(!t.children.values().any(|c| matches!(c, Node::Container(c) if c.children.contains_key("lst"))));
    let mut plain = before;
    apply(&mut plain, &one).unwrap();
    apply(&mut plain, &all).unwrap();
    assert_eq!(plain, t);
}

/// A merge into an entry of a keyless list, named by position, that moves the
/// entry (`insert`) changes the entry it names, not the one that comes to
/// stand at that position, and places it by its anchor as the list stood
/// before the move; the changes undo it.
#[test]
fn positional_merges_that_move_an_entry_change_that_entry() {
    let s = schema();
    let entry = |v: &str| {
        let mut e = Container::default();
        e.children.insert("v".into(), leaf(v));
        e
    };
    let mut list = List::new(ListInfo::keyless());
    for v in ["a", "b", "c", "d"] {
        list.insert(entry(v), &Insert::Last).unwrap();
    }
    let mut start = Container::default();
    start.children.insert("m:kl".into(), Node::List(Box::new(list)));
    let values = |t: &Container| -> Vec<String> {
        let Some(Node::List(l)) = t.children.get("m:kl") else { panic!("{t:?}") };
        l.entries()
            .map(|e| {
                let v = e.key_text("v").unwrap_or_default();
                match e.key_text("w") {
                    Some(w) => format!("{v}+{w}"),
                    None => v.into(),
                }
            })
            .collect()
    };
    let cases = [
        ("/m:kl[1]", Insert::After(vec!["3".into()]), ["b", "c", "a+x", "d"]),
        ("/m:kl[4]", Insert::Before(vec!["2".into()]), ["a", "d+x", "b", "c"]),
        ("/m:kl[2]", Insert::Before(vec!["4".into()]), ["a", "c", "b+x", "d"]),
        ("/m:kl[3]", Insert::After(vec!["1".into()]), ["a", "c+x", "b", "d"]),
        ("/m:kl[2]", Insert::First, ["b+x", "a", "c", "d"]),
        ("/m:kl[2]", Insert::Last, ["a", "c", "d", "b+x"]),
    ];
    for (path, at, want) in cases {
        let mut t = start.clone();
        let mut w = Container::default();
        w.children.insert("w".into(), leaf("x"));
        let edit =
            Edit { op: Operation::Merge, path: p(path), value: Some(Node::Container(w)), insert: Some(at.clone()) };
        let ch = apply_edit(&mut t, &edit, &s).unwrap();
        assert_eq!(values(&t), want, "{path} {at:?}: {ch:?}");
        let mut again = start.clone();
        apply(&mut again, &ch).unwrap();
        assert_eq!(values(&again), want, "{path} {at:?} replayed: {ch:?}");
        let mut back = t.clone();
        apply(&mut back, &invert(&ch)).unwrap();
        assert_eq!(values(&back), values(&start), "{path} {at:?} undone: {ch:?}");
    }
    let mut t = start.clone();
    let onto_itself = Edit {
        op: Operation::Merge,
        path: p("/m:kl[2]"),
        value: Some(Node::Container(Container::default())),
        insert: Some(Insert::After(vec!["2".into()])),
    };
    assert!(apply_edit(&mut t, &onto_itself, &s).is_err());
    assert_eq!(t, start);
    // The same position spelled otherwise is the same entry.
    for anchor in ["02", "+2"] {
        let spelled = Edit { insert: Some(Insert::Before(vec![anchor.into()])), ..onto_itself.clone() };
        let e = apply_edit(&mut t, &spelled, &s).unwrap_err();
        assert!(e.to_string().contains("relative to itself"), "{anchor}: {e}");
        assert_eq!(t, start);
    }
}

/// A path whose key predicates follow the order the schema declares is
/// canonical as written (borrowed, not copied); other orders are put in key
/// order, with or without the list in the tree.
#[test]
fn paths_in_declared_key_order_are_canonical_as_written() {
    use canopy_core::edit::canonical_path_cow;
    use std::borrow::Cow;
    let mut s = schema();
    s.lists.insert("/m:l".into(), ListInfo::keyed(["a", "b"]));
    s.lists.insert("/m:l/in".into(), ListInfo::keyed(["n"]));
    let empty = Container::default();
    let mut filled = Container::default();
    apply_edit(&mut filled, &Edit::merge(p("/m:l[a='1'][b='2']/in[n='x']/v"), leaf("v")), &s).unwrap();
    for tree in [&empty, &filled] {
        let written = p("/m:l[a='1'][b='2']/in[n='x']/v");
        assert!(matches!(canonical_path_cow(tree, &written, &s), Cow::Borrowed(_)));
        let swapped = p("/m:l[b='2'][a='1']/in[n='x']/v");
        let c = canonical_path_cow(tree, &swapped, &s);
        assert!(matches!(c, Cow::Owned(_)));
        assert_eq!(*c, written);
    }
}

/// A schema whose typed key values read otherwise than the path's text (a
/// path not put in canonical form first) gets a clear error for an entry
/// the path would create, and the tree stays as it was: the list never holds
/// an entry under a key its key leaves do not encode.
#[test]
fn key_values_typed_otherwise_than_written_are_refused() {
    struct Upper(Schemaless);
    impl canopy_core::Schema for Upper {
        fn kind(&self, schema_path: &str) -> Option<canopy_core::schema::NodeKind> {
            self.0.kind(schema_path)
        }
        fn list_info(&self, schema_path: &str) -> Option<ListInfo> {
            self.0.list_info(schema_path)
        }
        fn path_value(&self, _at: &Path, _key: Option<&str>, text: &str) -> Value {
            Value::String(text.to_uppercase().into())
        }
    }
    let mut lists = schema();
    lists.lists.insert("/m:l".into(), ListInfo::keyed(["k"]));
    let s = Upper(lists);
    let mut t = Container::default();
    apply_edit(&mut t, &Edit::merge(p("/m:l[k='A']/v"), leaf("1")), &s).unwrap();
    let before = t.clone();
    let e = apply_edit(&mut t, &Edit::merge(p("/m:l[k='b']/v"), leaf("2")), &s).unwrap_err();
    assert!(matches!(e, Error::Invalid { .. }) && e.to_string().contains("canonical"), "{e}");
    assert_eq!(t, before);
}

/// A path the schema declares keyed is taken as written; when the tree holds
/// that list keyless (an earlier edit of the same transaction made it from a
/// value parsed before its keys were known), key predicates still name the
/// one entry whose leaves match, as canonical paths would: merged into, not
/// added again.
#[test]
fn keyed_paths_into_a_list_held_keyless_name_its_matching_entry() {
    let mut s = schema();
    s.lists.insert("/m:c/i".into(), ListInfo::keyed(["name"]));
    let mut inner = List::new(ListInfo::keyless());
    let mut e = Container::default();
    e.children.insert("k".into(), leaf("2"));
    inner.insert(e, &Insert::Last).unwrap();
    let mut entry = Container::default();
    entry.children.insert("name".into(), leaf("b"));
    entry.children.insert("q".into(), Node::List(Box::new(inner)));
    let mut i = List::new(ListInfo::keyed(["name"]));
    i.insert(entry, &Insert::Last).unwrap();
    let mut c = Container::default();
    c.children.insert("i".into(), Node::List(Box::new(i)));
    let mut t = Container::default();
    t.children.insert("m:c".into(), Node::Container(c));
    // Now the schema knows the inner list keyed, as a later edit teaches it.
    s.lists.insert("/m:c/i/q".into(), ListInfo::keyed(["k"]));
    apply_edit(&mut t, &Edit::merge(p("/m:c/i[name='b']/q[k='2']/v"), leaf("x")), &s).unwrap();
    let mut w = Container::default();
    w.children.insert("w".into(), leaf("y"));
    apply_edit(&mut t, &Edit::merge(p("/m:c/i[name='b']/q[k='2']"), Node::Container(w)), &s).unwrap();
    let Some(canopy_core::NodeRef::List(q)) = t.lookup(&p("/m:c/i[name='b']/q")) else { panic!("{t:?}") };
    assert_eq!(q.len(), 1, "{q:?}");
    let only = q.entries().next().unwrap();
    assert_eq!(only.key_text("v").as_deref(), Some("x"));
    assert_eq!(only.key_text("w").as_deref(), Some("y"));
}
