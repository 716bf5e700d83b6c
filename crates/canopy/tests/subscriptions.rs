//! Change subscriptions: validate, apply and abort, in priority order, with
//! each subscriber's part of the diff.

use std::sync::{Arc, Mutex};

use canopy::json::{to_string, WriteOptions};
use canopy::{ChangeEvent, Datastore, Error, Store, Subscriber, Value};

/// What subscribers saw, in order: "name phase path…".
type Log = Arc<Mutex<Vec<String>>>;

struct Recorder {
    name: &'static str,
    log: Log,
    reject: Option<&'static str>,
    panic_in: Option<&'static str>,
}

impl Recorder {
    fn new(name: &'static str, log: &Log) -> Recorder {
        Recorder { name, log: log.clone(), reject: None, panic_in: None }
    }

    fn record(&self, phase: &str, ev: &ChangeEvent<'_>) {
        let paths: Vec<String> = ev.changes().map(|c| c.path().to_string()).collect();
        self.log.lock().unwrap().push(format!("{} {phase} {}", self.name, paths.join(" ")));
        if self.panic_in == Some(phase) {
            panic!("{} failed in {phase}", self.name);
        }
    }
}

impl Subscriber for Recorder {
    fn validate(&self, ev: &ChangeEvent<'_>) -> Result<(), String> {
        assert!(ev.revision.is_none());
        self.record("validate", ev);
        match self.reject {
            Some(r) => Err(r.to_string()),
            None => Ok(()),
        }
    }

    fn apply(&self, ev: &ChangeEvent<'_>) {
        assert!(ev.revision.is_some());
        self.record("apply", ev);
    }

    fn abort(&self, ev: &ChangeEvent<'_>) {
        self.record("abort", ev);
    }
}

fn urls(dir: &tempfile::TempDir) -> Vec<String> {
    let d = dir.path().display();
    vec![format!("lmdb:{d}/plain"), format!("lmdb:{d}/cached?cache=on")]
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

fn whole(store: &Store) -> String {
    to_string(&store.running().get("/", Default::default()).unwrap(), &WriteOptions::default())
}

#[test]
fn subscribers_see_their_subtree_in_priority_order() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        let log: Log = Default::default();
        let _low = store.subscribe(Datastore::Running, "/m:sys", 1, Recorder::new("low", &log)).unwrap();
        let _high = store.subscribe(Datastore::Running, "/m:sys/user", 10, Recorder::new("high", &log)).unwrap();
        let _other = store.subscribe(Datastore::Running, "/m:other", 50, Recorder::new("other", &log)).unwrap();
        let _startup = store.subscribe(Datastore::Startup, "/", 50, Recorder::new("startup", &log)).unwrap();
        let c = store
            .running()
            .apply(&[
                canopy::Edit::merge("/m:sys/name".parse().unwrap(), canopy::Node::leaf(s("r1"))),
                canopy::Edit::merge("/m:sys/user[name='bob']/uid".parse().unwrap(), canopy::Node::leaf(s("7"))),
            ])
            .unwrap();
        assert_eq!(
            take(&log),
            [
                "high validate /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid",
                "low validate /m:sys /m:sys/name /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid",
                "high apply /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid",
                "low apply /m:sys /m:sys/name /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid",
            ],
            "{url}: {:?}",
            c.changes
        );
        // A change above a subtree (deleting its parent) reaches it whole.
        store.running().delete("/m:sys").unwrap();
        assert_eq!(
            take(&log),
            ["high validate /m:sys", "low validate /m:sys", "high apply /m:sys", "low apply /m:sys"]
        );
        // A key predicate in the subscription picks one entry.
        let _bob =
            store.subscribe(Datastore::Running, "/m:sys/user[name='bob']", 0, Recorder::new("bob", &log)).unwrap();
        store.running().set("/m:sys/user[name='eve']/uid", s("8")).unwrap();
        store.running().set("/m:sys/user[name='bob']/uid", s("9")).unwrap();
        let seen: Vec<String> = take(&log).into_iter().filter(|l| l.starts_with("bob")).collect();
        assert_eq!(
            seen,
            [
                "bob validate /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid",
                "bob apply /m:sys/user[name='bob'] /m:sys/user[name='bob']/uid"
            ]
        );
        // An ancestor created empty does not concern a subtree below it; one
        // created holding it does.
        store.running().delete("/m:sys").unwrap();
        take(&log);
        store.running().set_json("/m:sys", r#"{"user": [{"name": "bob", "uid": 1}]}"#).unwrap();
        let seen: Vec<String> = take(&log).into_iter().filter(|l| l.starts_with("bob")).collect();
        assert_eq!(seen, ["bob validate /m:sys", "bob apply /m:sys"], "{url}");
    }
}

#[test]
fn a_rejecting_subscriber_aborts_the_transaction() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r0")).unwrap();
        let before = whole(&store);
        let log: Log = Default::default();
        let _first = store.subscribe(Datastore::Running, "/m:sys", 9, Recorder::new("first", &log)).unwrap();
        let _veto = store
            .subscribe(
                Datastore::Running,
                "/m:sys",
                5,
                Recorder { reject: Some("name is reserved"), ..Recorder::new("veto", &log) },
            )
            .unwrap();
        let _last = store.subscribe(Datastore::Running, "/m:sys", 1, Recorder::new("last", &log)).unwrap();
        let err = store.running().set("/m:sys/name", s("r1")).unwrap_err();
        match &err {
            Error::Rejected { datastore, subtree, reason } => {
                assert_eq!(
                    (*datastore, subtree.as_str(), reason.as_str()),
                    (Datastore::Running, "/m:sys", "name is reserved")
                );
                assert!(err.is_user_error());
                assert!(err.to_string().contains("name is reserved"), "{err}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(take(&log), ["first validate /m:sys/name", "veto validate /m:sys/name", "first abort /m:sys/name"]);
        assert_eq!(whole(&store), before, "{url}: nothing stored");
        // The cache (when on) was rolled back too: a fresh connection agrees.
        assert_eq!(whole(&Store::open(&url).unwrap()), before);
    }
}

#[test]
fn a_panicking_subscriber_aborts_in_validate_and_is_contained_in_apply() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        let log: Log = Default::default();
        let bad = store
            .subscribe(
                Datastore::Running,
                "/",
                5,
                Recorder { panic_in: Some("validate"), ..Recorder::new("bad", &log) },
            )
            .unwrap();
        let err = store.running().set("/m:sys/name", s("r1")).unwrap_err();
        assert!(matches!(err, Error::Rejected { .. }), "{err:?}");
        assert!(err.to_string().contains("panicked: bad failed in validate"), "{err}");
        assert_eq!(whole(&store), "{}", "{url}");
        drop(bad);
        take(&log);

        let _worse = store
            .subscribe(Datastore::Running, "/", 5, Recorder { panic_in: Some("apply"), ..Recorder::new("worse", &log) })
            .unwrap();
        let _fine = store.subscribe(Datastore::Running, "/", 1, Recorder::new("fine", &log)).unwrap();
        store.running().set("/m:sys/name", s("r2")).unwrap();
        assert_eq!(whole(&store), r#"{"m:sys":{"name":"r2"}}"#, "{url}: committed despite the panic");
        assert_eq!(take(&log).last().unwrap(), "fine apply /m:sys /m:sys/name", "later subscribers still apply");
        // The store keeps working.
        store.running().set("/m:sys/name", s("r3")).unwrap();
    }
}

#[test]
fn a_failed_commit_tells_subscribers_to_abort() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    let other = Store::open(&url).unwrap();
    let log: Log = Default::default();
    let _sub = store.subscribe(Datastore::Running, "/", 0, Recorder::new("sub", &log)).unwrap();
    other.lock(Datastore::Running).unwrap();
    // Refused before validation: nobody is asked.
    assert!(matches!(store.running().set("/m:a/b", s("1")), Err(Error::Locked(_))));
    assert!(take(&log).is_empty());
    // An edit error happens before validation too.
    assert!(other.running().delete("/m:absent").is_err());
    assert!(take(&log).is_empty());
}

#[test]
fn callbacks_may_use_other_connections() {
    struct Reader {
        url: String,
        seen: Arc<Mutex<Vec<String>>>,
    }
    impl Subscriber for Reader {
        fn validate(&self, _ev: &ChangeEvent<'_>) -> Result<(), String> {
            // Another connection reads the state before the transaction.
            let other = Store::open(&self.url).map_err(|e| e.to_string())?;
            let n = other.running().count("/m:sys/name").map_err(|e| e.to_string())?;
            self.seen.lock().unwrap().push(format!("before {n}"));
            Ok(())
        }
        fn apply(&self, _ev: &ChangeEvent<'_>) {
            // In apply another connection sees the commit and may write.
            let other = Store::open(&self.url).unwrap();
            let n = other.running().count("/m:sys/name").unwrap();
            self.seen.lock().unwrap().push(format!("after {n}"));
            other.session(Datastore::Operational).stored().set("/m:state/applied", Value::Bool(true)).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let store = Store::open(&url).unwrap();
        let _sub =
            store.subscribe(Datastore::Running, "/m:sys", 0, Reader { url: url.clone(), seen: seen.clone() }).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        assert_eq!(*seen.lock().unwrap(), ["before 0", "after 1"], "{url}");
        assert_eq!(store.session(Datastore::Operational).stored().count("/m:state/applied").unwrap(), 1);
    }
}

#[test]
fn using_the_committing_connection_inside_a_callback_is_an_error_not_a_deadlock() {
    struct Reenter {
        store: Arc<Mutex<Option<Arc<Store>>>>,
        seen: Arc<Mutex<Vec<String>>>,
    }
    impl Subscriber for Reenter {
        fn validate(&self, _ev: &ChangeEvent<'_>) -> Result<(), String> {
            let store = self.store.lock().unwrap().clone().unwrap();
            let read = store.running().count("/m:sys").unwrap_err();
            let write = store.running().set("/m:x/y", Value::Bool(true)).unwrap_err();
            self.seen.lock().unwrap().push(format!("{read} | {}", matches!(write, Error::Usage(_))));
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let slot = Arc::new(Mutex::new(None));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let store = Arc::new(Store::open(&url).unwrap());
        *slot.lock().unwrap() = Some(store.clone());
        let _sub =
            store.subscribe(Datastore::Running, "/", 0, Reenter { store: slot.clone(), seen: seen.clone() }).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert!(seen[0].contains("used the connection that is calling it") && seen[0].ends_with("| true"), "{seen:?}");
        *slot.lock().unwrap() = None;
    }
}

#[test]
fn subscriptions_reach_every_connection_of_the_process_and_end_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let log: Log = Default::default();
    let subscriber = Store::open(&url).unwrap();
    let sub = subscriber.subscribe(Datastore::Running, "/", 0, Recorder::new("s", &log)).unwrap();
    let writer = Store::open(&format!("{url}?cache=on")).unwrap();
    writer.running().set("/m:a/b", s("1")).unwrap();
    assert_eq!(take(&log), ["s validate /m:a /m:a/b", "s apply /m:a /m:a/b"]);
    // Still subscribed after its connection closes: the handle owns it.
    drop(subscriber);
    writer.running().set("/m:a/b", s("2")).unwrap();
    assert_eq!(take(&log), ["s validate /m:a/b", "s apply /m:a/b"]);
    drop(sub);
    writer.running().set("/m:a/b", s("3")).unwrap();
    assert!(take(&log).is_empty());
}

#[test]
fn candidate_commits_and_pushed_state_reach_their_subscribers() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    let log: Log = Default::default();
    let _run = store.subscribe(Datastore::Running, "/", 0, Recorder::new("running", &log)).unwrap();
    let _cand = store.subscribe(Datastore::Candidate, "/", 0, Recorder::new("candidate", &log)).unwrap();
    let _oper = store.subscribe(Datastore::Operational, "/m:if", 0, Recorder::new("oper", &log)).unwrap();
    store.session(Datastore::Candidate).set("/m:sys/name", s("c")).unwrap();
    assert_eq!(take(&log), ["candidate validate /m:sys /m:sys/name", "candidate apply /m:sys /m:sys/name"]);
    store.commit_candidate().unwrap();
    assert_eq!(take(&log), ["running validate /m:sys", "running apply /m:sys"]);

    let app = Store::open(&url).unwrap();
    app.session(Datastore::Operational).set("/m:if[name='eth0']/up", Value::Bool(true)).unwrap();
    assert_eq!(
        take(&log),
        [
            "oper validate /m:if[name='eth0'] /m:if[name='eth0']/up",
            "oper apply /m:if[name='eth0'] /m:if[name='eth0']/up"
        ]
    );
    // A rejected push leaves the pushed state as it was.
    let _veto = store
        .subscribe(Datastore::Operational, "/", 9, Recorder { reject: Some("no"), ..Recorder::new("veto", &log) })
        .unwrap();
    assert!(matches!(
        app.session(Datastore::Operational).set("/m:if[name='eth0']/up", Value::Bool(false)),
        Err(Error::Rejected { .. })
    ));
    let op = store.session(Datastore::Operational).get("/m:if[name='eth0']/up", Default::default()).unwrap();
    assert!(to_string(&op, &WriteOptions::default()).contains(r#""up":true"#));
}
