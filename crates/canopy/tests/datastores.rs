//! The NMDA datastores: candidate, copies, locks, the operational view.

use canopy::json::{to_string, WriteOptions};
use canopy::{Container, Datastore, Error, Store, Value, ORIGIN};

/// Uncached and cached, on LMDB (connections of one store share its files).
fn urls(dir: &tempfile::TempDir) -> Vec<String> {
    let d = dir.path().display();
    vec![format!("lmdb:{d}/plain"), format!("lmdb:{d}/cached?cache=on")]
}

fn json(store: &Store, ds: Datastore, query: &str) -> String {
    to_string(&store.session(ds).get(query, Default::default()).unwrap(), &WriteOptions::default())
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

#[test]
fn candidate_reads_as_running_until_edited_then_commits() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        store.running().set("/m:sys/user[name='bob']/uid", Value::Number("7".into())).unwrap();
        assert!(!store.candidate_modified().unwrap());
        assert_eq!(json(&store, Datastore::Candidate, "/"), json(&store, Datastore::Running, "/"), "{url}");
        // Running changes show through an unmodified candidate.
        store.running().set("/m:sys/name", s("r2")).unwrap();
        assert_eq!(json(&store, Datastore::Candidate, "/m:sys/name"), r#"{"m:sys":{"name":"r2"}}"#);

        let c = store.session(Datastore::Candidate).set("/m:sys/name", s("r3")).unwrap();
        assert_eq!(c.changes.len(), 1, "{url}: the candidate's first edit is one change");
        assert!(store.candidate_modified().unwrap());
        assert_eq!(json(&store, Datastore::Running, "/m:sys/name"), r#"{"m:sys":{"name":"r2"}}"#);
        assert_eq!(
            json(&store, Datastore::Candidate, "/"),
            r#"{"m:sys":{"name":"r3","user":[{"name":"bob","uid":7}]}}"#,
            "{url}: the candidate holds running's data plus its edit"
        );
        // Running's later changes no longer show in a modified candidate.
        store.running().set("/m:sys/mtu", Value::Number("1500".into())).unwrap();
        assert_eq!(store.session(Datastore::Candidate).count("/m:sys/mtu").unwrap(), 0);

        let c = store.commit_candidate().unwrap();
        assert_eq!(c.changes.len(), 2, "{url}: commit changes name and drops mtu: {:?}", c.changes);
        assert_eq!(json(&store, Datastore::Running, "/"), r#"{"m:sys":{"name":"r3","user":[{"name":"bob","uid":7}]}}"#);
        assert!(!store.candidate_modified().unwrap());
        assert_eq!(json(&store, Datastore::Candidate, "/"), json(&store, Datastore::Running, "/"));
        // Nothing to commit: nothing changes.
        assert!(store.commit_candidate().unwrap().changes.is_empty());

        // Discard drops the candidate's edits.
        store.session(Datastore::Candidate).delete("/m:sys/user[name='bob']").unwrap();
        assert_eq!(store.session(Datastore::Candidate).count("/m:sys/user").unwrap(), 0);
        store.discard_candidate().unwrap();
        assert_eq!(store.session(Datastore::Candidate).count("/m:sys/user").unwrap(), 1, "{url}");
        assert!(!store.candidate_modified().unwrap());
    }
}

#[test]
fn a_failed_first_candidate_edit_leaves_the_candidate_unmodified() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        let err = store.session(Datastore::Candidate).delete("/m:sys/absent").unwrap_err();
        assert!(matches!(err, Error::Data(_)), "{err}");
        assert!(!store.candidate_modified().unwrap(), "{url}");
        store.running().set("/m:sys/name", s("r2")).unwrap();
        assert_eq!(json(&store, Datastore::Candidate, "/m:sys/name"), r#"{"m:sys":{"name":"r2"}}"#);
    }
}

/// `apply_at` commits only while the store is at the revision it names: a
/// commit of another connection to the same files in between (another
/// process, as far as the store can tell) makes it a conflict that stores
/// nothing, and an unmodified candidate stays unmodified.
#[test]
fn apply_at_commits_only_on_the_revision_it_names() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        let other = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        let name = |v: &str| canopy::Edit::merge("/m:sys/name".parse().unwrap(), canopy::Node::leaf(s(v)));
        let at = store.revision().unwrap();
        let c = store.running().apply_at(&[name("r2")], at).unwrap();
        assert_eq!(c.revision, at + 1, "{url}");

        let at = store.revision().unwrap();
        other.running().set("/m:sys/name", s("theirs")).unwrap();
        for ds in [Datastore::Running, Datastore::Candidate] {
            match store.session(ds).apply_at(&[name("mine")], at) {
                Err(Error::Store(e)) => assert_eq!(e.kind(), canopy_store::ErrorKind::Conflict, "{url}: {e}"),
                other => panic!("{url}: {ds:?} at a revision passed: {other:?}"),
            }
        }
        assert_eq!(json(&store, Datastore::Running, "/m:sys/name"), r#"{"m:sys":{"name":"theirs"}}"#, "{url}");
        assert!(!store.candidate_modified().unwrap(), "{url}: a refused first edit left a copy");

        // At the revision read again it commits, the candidate's first edit too.
        let at = store.revision().unwrap();
        store.session(Datastore::Candidate).apply_at(&[name("mine")], at).unwrap();
        assert_eq!(json(&store, Datastore::Candidate, "/m:sys/name"), r#"{"m:sys":{"name":"mine"}}"#, "{url}");
        assert!(store.candidate_modified().unwrap());
    }
}

#[test]
fn the_candidate_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        store.session(Datastore::Candidate).set("/m:sys/name", s("c1")).unwrap();
    }
    let store = Store::open(&url).unwrap();
    assert!(store.candidate_modified().unwrap());
    assert_eq!(json(&store, Datastore::Candidate, "/m:sys/name"), r#"{"m:sys":{"name":"c1"}}"#);
    assert_eq!(json(&store, Datastore::Running, "/m:sys/name"), r#"{"m:sys":{"name":"r1"}}"#);
}

#[test]
fn copies_replace_the_target_datastore() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:sys/name", s("r1")).unwrap();
        store.session(Datastore::Startup).set("/m:boot/only", s("startup")).unwrap();
        let c = store.copy_datastore(Datastore::Running, Datastore::Startup).unwrap();
        assert_eq!(c.changes.len(), 2, "{url}: {:?}", c.changes);
        assert_eq!(json(&store, Datastore::Startup, "/"), r#"{"m:sys":{"name":"r1"}}"#);
        store.running().set("/m:sys/name", s("r2")).unwrap();
        store.copy_datastore(Datastore::Startup, Datastore::Running).unwrap();
        assert_eq!(json(&store, Datastore::Running, "/"), r#"{"m:sys":{"name":"r1"}}"#);
        // Startup to candidate makes the candidate differ from running.
        store.session(Datastore::Startup).set("/m:sys/name", s("s2")).unwrap();
        store.copy_datastore(Datastore::Startup, Datastore::Candidate).unwrap();
        assert!(store.candidate_modified().unwrap());
        assert_eq!(json(&store, Datastore::Candidate, "/m:sys/name"), r#"{"m:sys":{"name":"s2"}}"#);
        // Running to candidate is a discard.
        store.copy_datastore(Datastore::Running, Datastore::Candidate).unwrap();
        assert!(!store.candidate_modified().unwrap());
        for (from, to) in [(Datastore::Running, Datastore::Operational), (Datastore::Operational, Datastore::Running)] {
            match store.copy_datastore(from, to) {
                Err(Error::Usage(m)) => assert!(m.contains("operational"), "{m}"),
                other => panic!("copy {from:?} to {to:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_lock_keeps_other_connections_from_writing() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let a = Store::open(&url).unwrap();
        let b = Store::open(&url).unwrap();
        a.lock(Datastore::Running).unwrap();
        a.running().set("/m:sys/name", s("a")).unwrap();
        match b.running().set("/m:sys/name", s("b")) {
            Err(e @ Error::Locked(_)) => {
                assert!(e.is_user_error());
                assert!(e.to_string().contains("running is locked by another connection of this process"), "{e}");
            }
            other => panic!("{url}: write through a lock: {other:?}"),
        }
        // Other datastores stay writable; reads are never blocked.
        b.session(Datastore::Startup).set("/m:sys/name", s("b")).unwrap();
        assert_eq!(json(&b, Datastore::Running, "/m:sys/name"), r#"{"m:sys":{"name":"a"}}"#);
        assert!(matches!(b.lock(Datastore::Running), Err(Error::Locked(_))));
        assert!(matches!(a.lock(Datastore::Running), Err(Error::Locked(_))), "locking twice is refused");
        assert!(matches!(b.unlock(Datastore::Running), Err(Error::Usage(_))), "only the holder unlocks");
        let locks = b.locks().unwrap();
        assert_eq!(locks.len(), 1);
        assert_eq!((locks[0].datastore, locks[0].pid, locks[0].mine), (Datastore::Running, std::process::id(), false));
        a.unlock(Datastore::Running).unwrap();
        b.running().set("/m:sys/name", s("b")).unwrap();

        // Dropping the holder releases its locks.
        b.lock(Datastore::Startup).unwrap();
        drop(b);
        a.session(Datastore::Startup).set("/m:sys/name", s("a")).unwrap();
        assert!(a.locks().unwrap().is_empty());

        // Candidate: a lock blocks commit and discard by others; a modified
        // candidate cannot be locked.
        a.lock(Datastore::Candidate).unwrap();
        let c = Store::open(&url).unwrap();
        assert!(matches!(c.session(Datastore::Candidate).set("/m:x/y", s("1")), Err(Error::Locked(_))));
        assert!(matches!(c.discard_candidate(), Err(Error::Locked(_))));
        a.unlock(Datastore::Candidate).unwrap();
        c.session(Datastore::Candidate).set("/m:x/y", s("1")).unwrap();
        match a.lock(Datastore::Candidate) {
            Err(Error::Usage(m)) => assert!(m.contains("uncommitted"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(a.lock(Datastore::Operational), Err(Error::Usage(_))));
    }
}

#[test]
fn locks_of_ended_processes_are_ignored_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    // A lock left by a process that has ended.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let ended_pid = ended.id();
    ended.wait().unwrap();
    write_lock(&store, Datastore::Running, ended_pid, 12345);
    store.running().set("/m:sys/name", s("x")).unwrap();
    assert!(store.locks().unwrap().is_empty());
    // A lock of a live process (its real start time) holds.
    let mut live = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let start = start_time(live.id());
    write_lock(&store, Datastore::Running, live.id(), start);
    let err = store.running().set("/m:sys/name", s("y")).unwrap_err();
    assert!(err.to_string().contains(&format!("a connection of process {}", live.id())), "{err}");
    // The same number, another start time: a later process, not the holder.
    write_lock(&store, Datastore::Running, live.id(), start + 1);
    store.running().set("/m:sys/name", s("y")).unwrap();
    live.kill().unwrap();
    live.wait().unwrap();
}

fn write_lock(store: &Store, ds: Datastore, pid: u32, start: u64) {
    let snap = store.backend().snapshot().unwrap();
    let mut batch = canopy_store::Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
    drop(snap);
    let mut v = pid.to_be_bytes().to_vec();
    v.extend_from_slice(&start.to_be_bytes());
    v.extend_from_slice(&99u64.to_be_bytes());
    batch.put(canopy_store::keys::lock_key(ds), v);
    store.backend().apply(&batch).unwrap();
}

fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn origin_of(tree: &Container, path: &str) -> Option<String> {
    let p: canopy::Path = path.parse().unwrap();
    match tree.lookup(&p)? {
        canopy_core::tree::NodeRef::Leaf(_, meta) => meta.get(ORIGIN).map(str::to_owned),
        r => r.container().and_then(|c| c.meta.get(ORIGIN).map(str::to_owned)),
    }
}

#[test]
fn operational_merges_configuration_stored_and_pushed_state_with_origins() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:if[name='eth0']/mtu", Value::Number("1500".into())).unwrap();
        store.running().set("/m:if[name='eth1']/mtu", Value::Number("9000".into())).unwrap();
        // State kept in the store.
        store
            .session(Datastore::Operational)
            .stored()
            .set("/m:if[name='eth0']/speed", Value::Number("1000".into()))
            .unwrap();
        // State pushed by another connection, which ends later.
        let app = Store::open(&url).unwrap();
        app.session(Datastore::Operational).set("/m:if[name='eth1']/oper-status", s("up")).unwrap();
        app.session(Datastore::Operational).set("/m:if[name='eth2']/oper-status", s("down")).unwrap();

        let op = store.session(Datastore::Operational).get("/", Default::default()).unwrap();
        assert_eq!(
            to_string(&op, &WriteOptions::default()),
            concat!(
                r#"{"m:if":[{"@":{"ietf-origin:origin":"ietf-origin:intended"},"mtu":1500,"name":"eth0","#,
                r#""speed":1000,"@speed":{"ietf-origin:origin":"ietf-origin:unknown"}},"#,
                r#"{"@":{"ietf-origin:origin":"ietf-origin:intended"},"mtu":9000,"name":"eth1","#,
                r#""oper-status":"up","@oper-status":{"ietf-origin:origin":"ietf-origin:unknown"}},"#,
                r#"{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"name":"eth2","oper-status":"down"}]}"#
            ),
            "{url}"
        );
        assert_eq!(origin_of(&op, "/m:if[name='eth0']"), Some("ietf-origin:intended".into()));
        // Running itself is untouched; the stored view has only stored state.
        assert_eq!(store.running().count("/m:if/speed").unwrap(), 0);
        assert_eq!(store.session(Datastore::Operational).stored().count("/m:if").unwrap(), 1);
        assert_eq!(store.session(Datastore::Operational).count("/m:if[name='eth2']").unwrap(), 1);

        // Pushed state goes away with its connection; stored state stays.
        drop(app);
        let op = store.session(Datastore::Operational);
        assert_eq!(op.count("/m:if[name='eth2']").unwrap(), 0, "{url}");
        assert_eq!(op.count("/m:if/oper-status").unwrap(), 0);
        assert_eq!(op.count("/m:if/speed").unwrap(), 1);
        let fresh = Store::open(&url).unwrap();
        assert_eq!(fresh.session(Datastore::Operational).count("/m:if/speed").unwrap(), 1);
        // Reads of a part of operational merge only that part.
        assert_eq!(
            to_string(&op.get("/m:if[name='eth0']/speed", Default::default()).unwrap(), &WriteOptions::default()),
            r#"{"m:if":[{"@":{"ietf-origin:origin":"ietf-origin:intended"},"name":"eth0","speed":1000,"@speed":{"ietf-origin:origin":"ietf-origin:unknown"}}]}"#
        );
    }
}

#[test]
fn providers_supply_state_when_their_subtree_is_read() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    store.running().set("/m:sys/name", s("r1")).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let provider = store
        .provide("/m:stats", move |path| {
            assert_eq!(path.to_string(), "/m:stats");
            let n = seen.fetch_add(1, Ordering::SeqCst);
            canopy::json::parse_str(
                &format!(r#"{{"m:stats": {{"reads": {n}, "up": true}}}}"#),
                &canopy_core::Schemaless::default(),
            )
            .map_err(|e| e.to_string())
        })
        .unwrap();
    let other = Store::open(&url).unwrap();
    let op = other.session(Datastore::Operational);
    let tree = op.get("/", Default::default()).unwrap();
    assert_eq!(
        to_string(&tree, &WriteOptions::default()),
        r#"{"m:stats":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"reads":0,"up":true},"m:sys":{"@":{"ietf-origin:origin":"ietf-origin:intended"},"name":"r1"}}"#
    );
    assert_eq!(op.count("/m:stats/reads").unwrap(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // A read elsewhere does not call it.
    assert_eq!(op.count("/m:sys/name").unwrap(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    drop(provider);
    assert_eq!(op.count("/m:stats").unwrap(), 0);

    // A failing or panicking provider fails the read, naming the provider.
    let _failing = store.provide("/m:bad", |_| Err("sensor offline".to_string())).unwrap();
    let err = op.get("/m:bad", Default::default()).unwrap_err();
    assert!(err.to_string().contains("provider of /m:bad failed: sensor offline"), "{err}");
    drop(_failing);
    let _panicking = store.provide("/m:bad", |_| panic!("provider bug")).unwrap();
    let err = op.get("/", Default::default()).unwrap_err();
    assert!(err.to_string().contains("panicked: provider bug"), "{err}");
    // Configuration datastores never call providers.
    assert_eq!(other.running().count("/m:sys").unwrap(), 1);
}

#[test]
fn pushed_state_is_typed_and_keyed_by_the_yang_schema() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.schema_add_texts(&[("perf.yang".into(), canopy_yang::PERF_YANG.into())], &[]).unwrap();
        store.running().set("/perf:cont/lst[k1='1'][k2='a']/l", s("config")).unwrap();
        let app = Store::open(&url).unwrap();
        let oper = app.session(Datastore::Operational);
        // `01` is the uint32 1: the pushed entry is running's entry.
        oper.set("/perf:cont/lst[k1='01'][k2='a']/l", s("state")).unwrap();
        oper.set("/perf:cont/lst[k1='2'][k2='b']/l", s("state")).unwrap();
        let view = store.session(Datastore::Operational);
        assert_eq!(view.count("/perf:cont/lst").unwrap(), 2, "{url}");
        assert_eq!(
            to_string(
                &view.get("/perf:cont/lst[k1='1'][k2='a']/l", Default::default()).unwrap(),
                &WriteOptions::default()
            ),
            r#"{"perf:cont":{"@":{"ietf-origin:origin":"ietf-origin:intended"},"lst":[{"k1":1,"k2":"a","l":"state","@l":{"ietf-origin:origin":"ietf-origin:unknown"}}]}}"#
        );
        // Values and paths are checked as in any datastore.
        assert!(matches!(
            oper.set("/perf:cont/lst[k1='x'][k2='a']/l", s("v")),
            Err(Error::Data(_) | Error::Invalid(_))
        ));
        assert!(oper.set("/perf:cont/nope", s("v")).is_err());
    }
}
