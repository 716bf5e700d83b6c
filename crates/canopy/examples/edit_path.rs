//! The engine's per-edit path: the sysrepo suite's many-edit rows timed on
//! the library directly, each run on a fresh LMDB store (sync=commit), so a
//! profiler sees only the engine.
//!
//! `cargo run --release -p canopy --example edit_path [-- N [ROUNDS [ROW...]]]`
//! Rows: create-all, create-usr, get-usr, batch, remove-list, remove-cont,
//! get-hash-cached, merge-all (N merge edits of entries, cached and not).

use std::time::{Duration, Instant};

use canopy::{Container, Edit, Insert, List, ListInfo, Node, Operation, ReadOptions, Store, Value};

fn open(dir: &std::path::Path, cache: bool) -> Store {
    let url = format!("lmdb:{}?sync=commit{}", dir.display(), if cache { "&cache=on" } else { "" });
    let store = Store::open(&url).unwrap();
    store.declare_list("/perf:cont/lst", ListInfo::keyed(["k1", "k2"])).unwrap();
    store.declare_list("/perf:cont/usr-lst", ListInfo { keys: vec!["k".into()], user_ordered: true }).unwrap();
    store
}

fn lst_json(n: usize) -> String {
    let mut s = String::from("{\"perf:cont\":{\"lst\":[");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("{{\"k1\":{i},\"k2\":\"str{i}\",\"l\":\"l{i}\"}}"));
    }
    s.push_str("]}}");
    s
}

fn usr_json(n: usize) -> String {
    let mut s = String::from("{\"perf:cont\":{\"usr-lst\":[");
    for i in 0..n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("{{\"k\":{i},\"l\":\"l{i}\"}}"));
    }
    s.push_str("]}}");
    s
}

fn leaf_edits(n: usize, usr: bool) -> Vec<Edit> {
    (0..n)
        .map(|i| {
            let path = match usr {
                true => format!("/perf:cont/usr-lst[k='{i}']/l"),
                false => format!("/perf:cont/lst[k1='{i}'][k2='str{i}']/l"),
            };
            Edit::merge(path.parse().unwrap(), Node::leaf(Value::String(format!("l{i}").into())))
        })
        .collect()
}

fn entry(i: usize) -> Container {
    let mut c = Container::default();
    c.children.insert("k1".into(), Node::leaf(Value::Number(i.to_string().into())));
    c.children.insert("k2".into(), Node::leaf(Value::String(format!("str{i}").into())));
    c.children.insert("l".into(), Node::leaf(Value::String(format!("l{i}").into())));
    c
}

/// Times `run` on a fresh store prepared by `setup` (untimed).
fn time(cache: bool, setup: &dyn Fn(&Store), run: &dyn Fn(&Store)) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), cache);
    setup(&store);
    let t = Instant::now();
    run(&store);
    t.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let only: Vec<&str> = args.iter().skip(2).map(String::as_str).collect();
    let lst = lst_json(n);
    let usr = usr_json(n);
    let none = |_: &Store| {};
    let fill = |s: &Store| {
        s.running().import(lst.as_bytes(), Operation::Merge).unwrap();
        s.running().count("/perf:cont/lst").unwrap();
    };
    let fill_usr = |s: &Store| {
        s.running().import(usr.as_bytes(), Operation::Merge).unwrap();
    };
    type Row<'a> = (&'a str, bool, &'a dyn Fn(&Store), Box<dyn Fn(&Store) + 'a>);
    let rows: Vec<Row> = vec![
        (
            "create-all",
            false,
            &none,
            Box::new(move |s: &Store| drop(s.running().apply(&leaf_edits(n, false)).unwrap())),
        ),
        ("create-all", true, &none, Box::new(move |s: &Store| drop(s.running().apply(&leaf_edits(n, false)).unwrap()))),
        ("create-usr", false, &none, Box::new(move |s: &Store| drop(s.running().apply(&leaf_edits(n, true)).unwrap()))),
        ("create-usr", true, &none, Box::new(move |s: &Store| drop(s.running().apply(&leaf_edits(n, true)).unwrap()))),
        (
            "get-usr",
            false,
            &fill_usr,
            Box::new(move |s: &Store| {
                let t = s.running().get("/perf:cont", ReadOptions::default()).unwrap();
                assert!(!t.children.is_empty());
            }),
        ),
        (
            "batch",
            false,
            &none,
            Box::new(move |s: &Store| {
                let mut list = List::new(ListInfo::keyed(["k1", "k2"]));
                for i in 0..n {
                    list.insert(entry(i), &Insert::Last).unwrap();
                }
                let mut cont = Container::default();
                cont.children.insert("lst".into(), Node::List(Box::new(list)));
                s.running().apply(&[Edit::merge("/perf:cont".parse().unwrap(), Node::Container(cont))]).unwrap();
            }),
        ),
        ("remove-list", false, &fill, Box::new(|s: &Store| drop(s.running().delete("/perf:cont/lst").unwrap()))),
        ("remove-list", true, &fill, Box::new(|s: &Store| drop(s.running().delete("/perf:cont/lst").unwrap()))),
        ("remove-cont", false, &fill, Box::new(|s: &Store| drop(s.running().delete("/perf:cont").unwrap()))),
        ("remove-cont", true, &fill, Box::new(|s: &Store| drop(s.running().delete("/perf:cont").unwrap()))),
        (
            "get-hash-cached",
            true,
            &fill,
            Box::new(move |s: &Store| {
                let m = n / 2;
                let q = format!("/perf:cont/lst[k1='{m}'][k2='str{m}']/l");
                for _ in 0..100 {
                    let t = s.running().get(&q, ReadOptions::default()).unwrap();
                    assert!(!t.children.is_empty());
                }
            }),
        ),
        (
            "merge-all",
            false,
            &fill,
            Box::new(move |s: &Store| {
                let edits: Vec<Edit> = (0..n)
                    .map(|i| {
                        let mut c = Container::default();
                        c.children.insert("l".into(), Node::leaf(Value::String(format!("v{i}").into())));
                        let p = format!("/perf:cont/lst[k1='{i}'][k2='str{i}']");
                        Edit::merge(p.parse().unwrap(), Node::Container(c))
                    })
                    .collect();
                s.running().apply(&edits).unwrap();
            }),
        ),
    ];
    for (name, cache, setup, run) in &rows {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        let mut ts: Vec<Duration> = (0..rounds).map(|_| time(*cache, *setup, &**run)).collect();
        ts.sort();
        let note = if *name == "get-hash-cached" { " (100 reads)" } else { "" };
        println!(
            "{name:<16} cache={:<3} n={n}: median {:>9.2} ms  min {:>9.2} ms{note}",
            if *cache { "on" } else { "off" },
            ts[ts.len() / 2].as_secs_f64() * 1e3,
            ts[0].as_secs_f64() * 1e3
        );
    }
}
