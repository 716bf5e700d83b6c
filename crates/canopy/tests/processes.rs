//! Many processes on one store: a commit in one process reaches the
//! subscribers of the others (through the store's change log, on the
//! backend's announcement of the commit), cached reads in another process
//! see it, and writers of one leaf in two processes each get revisions of
//! their own. Run on every server backend whose `CANOPY_*_URL` names a
//! server (`scripts/servers.sh start`), and on LMDB with `?changelog=` (its
//! listeners poll the revision).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canopy::json::{to_string, WriteOptions};
use canopy::{Change, ChangeEvent, Datastore, Node, Store, Subscriber, Subtree, Value};
use canopy_store::conformance::{namespace_of, server_url, with_params};

const CHILD_URL: &str = "CANOPY_PROCESSES_CHILD_URL";
const CHILD_TASK: &str = "CANOPY_PROCESSES_CHILD_TASK";
/// How long a test waits for what another process did to arrive: a bound
/// on a hang, not a speed target (that is `canopy bench`'s).
const PATIENCE: Duration = Duration::from_secs(20);

/// The child process: runs `CANOPY_PROCESSES_CHILD_TASK` on the store of
/// `CANOPY_PROCESSES_CHILD_URL` and prints the revision of each commit.
/// `sets N`: `/m:c/v{i}` = i, one commit each; `leaf TAG N`: `/m:c/x` =
/// "TAG-i", one commit each.
#[test]
fn child() {
    let (Ok(url), Ok(task)) = (std::env::var(CHILD_URL), std::env::var(CHILD_TASK)) else { return };
    let store = Store::open(&url).unwrap();
    let words: Vec<&str> = task.split(' ').collect();
    match words.as_slice() {
        ["sets", n] => {
            for i in 0..n.parse::<u64>().unwrap() {
                let c = store.running().set(&format!("/m:c/v{i}"), Value::Number(i.to_string().into())).unwrap();
                println!("committed {} v{i}", c.revision);
                eprintln!("acknowledged {} at {}", c.revision, now_ns());
            }
        }
        ["leaf", tag, n] => {
            for i in 0..n.parse::<u64>().unwrap() {
                let c = store.running().set("/m:c/x", Value::String(format!("{tag}-{i}").into())).unwrap();
                println!("committed {} {tag}-{i}", c.revision);
            }
        }
        _ => panic!("unknown task {task}"),
    }
}

/// `path` of running as compact JSON.
fn read(store: &Store, path: &str) -> String {
    to_string(&store.running().get(path, Default::default()).unwrap(), &WriteOptions::default())
}

/// Nanoseconds since the Unix epoch (one clock for every process here).
fn now_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// Starts the child process on `url` with `task`.
fn spawn(url: &str, task: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(CHILD_URL, url)
        .env(CHILD_TASK, task)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What a child committed: revision → what it wrote.
fn committed(child: std::process::Child) -> BTreeMap<u64, String> {
    committed_at(child).0
}

/// What a child committed, and when each commit was acknowledged to it
/// (revision → nanoseconds since the Unix epoch).
fn committed_at(child: std::process::Child) -> (BTreeMap<u64, String>, BTreeMap<u64, u128>) {
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the child failed: {stderr}");
    let pairs = |text: &str, word: &str| -> Vec<(u64, String)> {
        text.lines()
            // The harness may print its "test child ... " in front of the first line.
            .filter_map(|l| l.split_once(word).map(|(_, rest)| rest))
            .map(|l| {
                let (r, what) = l.split_once(' ').unwrap();
                (r.parse().unwrap(), what.to_string())
            })
            .collect()
    };
    let stdout = String::from_utf8(out.stdout).unwrap();
    let times = pairs(&stderr, "acknowledged ")
        .into_iter()
        .map(|(r, at)| (r, at.trim_start_matches("at ").parse().unwrap()))
        .collect();
    (pairs(&stdout, "committed ").into_iter().collect(), times)
}

/// The stores the tests run on, for a test directory: (name, URL).
fn stores(dir: &Path) -> Vec<(&'static str, String)> {
    let mut out = vec![("lmdb", format!("lmdb:{}/lmdb?changelog=100", dir.display()))];
    for (name, var, param) in [
        ("postgres", "CANOPY_POSTGRES_URL", "schema"),
        ("redis", "CANOPY_REDIS_URL", "prefix"),
        ("etcd", "CANOPY_ETCD_URL", "prefix"),
    ] {
        if let Some(server) = server_url(var) {
            let ns = namespace_of(&format!("p{}_", std::process::id()), dir);
            out.push((name, with_params(&server, &format!("{param}={ns}"))));
        }
    }
    // MongoDB: the namespace is the database, in the URL's path.
    if let Some(server) = server_url("CANOPY_MONGODB_URL") {
        out.push((
            "mongodb",
            canopy_store::conformance::with_database(&server, &namespace_of(&format!("p{}_", std::process::id()), dir)),
        ));
    }
    out
}

/// What `apply` was called with: (revision, path, value created or set).
type Seen = Arc<Mutex<Vec<(u64, String, String)>>>;
/// When `apply` was called, by revision (nanoseconds since the Unix epoch).
type Heard = Arc<Mutex<BTreeMap<u64, u128>>>;

struct Recorder(Seen, Heard);

impl Subscriber for Recorder {
    fn apply(&self, ev: &ChangeEvent<'_>) {
        self.1.lock().unwrap().insert(ev.revision.unwrap(), now_ns());
        for c in ev.changes() {
            let value = match c {
                Change::Created { node: Subtree::Node(Node::Leaf { value, .. }), .. }
                | Change::Modified { new: Node::Leaf { value, .. }, .. } => value.as_text().to_string(),
                _ => String::new(),
            };
            self.0.lock().unwrap().push((ev.revision.unwrap(), c.path().to_string(), value));
        }
    }
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "{what}: not within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A subscriber in this process is called for each commit another process
/// makes, once, with that commit's revision and changes; this process's own
/// commits reach it once too (from the commit itself).
#[test]
fn subscriptions_fire_in_every_process() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let store = Store::open(&url).unwrap();
        let (seen, heard): (Seen, Heard) = Default::default();
        let _sub = store.subscribe(Datastore::Running, "/m:c", 0, Recorder(seen.clone(), heard.clone())).unwrap();
        let (theirs, acknowledged) = committed_at(spawn(&url, "sets 20"));
        assert_eq!(theirs.len(), 20, "{name}");
        wait_for(name, || seen.lock().unwrap().iter().filter(|(_, p, _)| p.starts_with("/m:c/v")).count() >= 20);
        let mine = store.running().set("/m:c/own", Value::String("here".into())).unwrap();
        // Long enough for a listener to have handed it on too, were it to.
        std::thread::sleep(Duration::from_millis(1500));
        let got = seen.lock().unwrap().clone();
        let leaves: Vec<_> = got.iter().filter(|(_, p, _)| p.starts_with("/m:c/v")).cloned().collect();
        let expected: Vec<_> = theirs
            .iter()
            .map(|(r, what)| (*r, format!("/m:c/{what}"), what.trim_start_matches('v').to_string()))
            .collect();
        assert_eq!(leaves, expected, "{name}: the other process's commits, in order");
        let own: Vec<_> = got.iter().filter(|(_, p, _)| p == "/m:c/own").collect();
        // How long after the other process's acknowledgement each commit
        // reached this one (a figure for docs/benchmarks.md, not a check).
        let heard = heard.lock().unwrap();
        let mut delays: Vec<f64> =
            acknowledged.iter().filter_map(|(r, at)| heard.get(r).map(|h| (*h as f64 - *at as f64) / 1e6)).collect();
        delays.sort_by(f64::total_cmp);
        if let (Some(p50), Some(max)) = (delays.get(delays.len() / 2), delays.last()) {
            eprintln!("{name}: a commit reached the other process {p50:.2} ms (median), {max:.2} ms (max) after it was acknowledged, {} commits", delays.len());
        }
        assert_eq!(own, [&(mine.revision, "/m:c/own".to_string(), "here".to_string())], "{name}: own commit once");
    }
}

/// With `cache=on`, a process that read a datastore reads what another
/// process committed after it (acknowledged commits only: read once the
/// other process is done).
#[test]
fn cached_reads_see_other_processes_commits() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let cached = Store::open(&with_params(&url, "cache=on")).unwrap();
        cached.running().set("/m:c/v0", Value::String("before".into())).unwrap();
        assert_eq!(read(&cached, "/m:c/v0"), r#"{"m:c":{"v0":"before"}}"#, "{name}");
        for round in 0..3 {
            let theirs = committed(spawn(&url, "sets 3"));
            let last = *theirs.keys().last().unwrap();
            let read = read(&cached, "/m:c");
            assert_eq!(read, r#"{"m:c":{"v0":0,"v1":1,"v2":2}}"#, "{name}, round {round}");
            assert!(cached.info().unwrap().revision >= last, "{name}");
        }
    }
}

/// With `cache=watch`, cached reads trust the commits the backend announces:
/// this process's own commits are read at once, another process's once its
/// announcement arrives (waited for here, and how long it took printed), and
/// the store reports its mode. On LMDB, which announces nothing, it reads as
/// `cache=on` does: at once.
#[test]
fn watched_cached_reads_follow_announced_commits() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let watched = Store::open(&with_params(&url, "cache=watch")).unwrap();
        assert_eq!(watched.cache_mode(), "watch", "{name}");
        for round in 0..3 {
            // Own commits: read at once.
            let mine = format!("mine-{round}");
            watched.running().set("/m:c/own", Value::String(mine.clone().into())).unwrap();
            for i in 0..3 {
                watched.running().delete(&format!("/m:c/v{i}")).ok();
            }
            assert_eq!(read(&watched, "/m:c"), format!(r#"{{"m:c":{{"own":"{mine}"}}}}"#), "{name}, round {round}");
            // Another process's: once announced.
            let theirs = committed(spawn(&url, "sets 3"));
            let last = *theirs.keys().last().unwrap();
            let want = format!(r#"{{"m:c":{{"own":"{mine}","v0":0,"v1":1,"v2":2}}}}"#);
            let start = Instant::now();
            let mut got = read(&watched, "/m:c");
            while got != want && start.elapsed() < PATIENCE {
                std::thread::sleep(Duration::from_millis(1));
                got = read(&watched, "/m:c");
            }
            eprintln!("{name}: round {round}: the other process's commits read {:?} after it ended", start.elapsed());
            assert_eq!(got, want, "{name}, round {round}");
            assert!(watched.info().unwrap().revision >= last, "{name}");
        }
    }
}

/// With `cache=watch`, commits the store makes outside a transaction (a
/// discard of the candidate) are read at once too, as are those of
/// transactions.
#[test]
fn watched_cached_reads_see_their_stores_other_commits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let watched = Store::open(&with_params(&url, "cache=watch")).unwrap();
        let candidate = watched.session(Datastore::Candidate);
        for round in 0..3 {
            let value = format!("draft-{round}");
            candidate.set("/m:c/draft", Value::String(value.clone().into())).unwrap();
            let read = to_string(&candidate.get("/m:c/draft", Default::default()).unwrap(), &WriteOptions::default());
            assert_eq!(read, format!(r#"{{"m:c":{{"draft":"{value}"}}}}"#), "{name}, round {round}");
            watched.discard_candidate().unwrap();
            let read = to_string(&candidate.get("/m:c/draft", Default::default()).unwrap(), &WriteOptions::default());
            assert_eq!(read, "{}", "{name}, round {round}: the discard read at once");
        }
    }
}

/// Two processes setting one leaf: every acknowledged commit has a revision
/// of its own (no two writers both won one revision), and the leaf holds
/// what the commit of the highest revision wrote.
#[test]
fn writers_of_one_leaf_each_get_their_own_revision() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let a = spawn(&url, "leaf a 25");
        let b = spawn(&url, "leaf b 25");
        let (a, b) = (committed(a), committed(b));
        assert_eq!((a.len(), b.len()), (25, 25), "{name}");
        let mut all = a.clone();
        for (r, what) in &b {
            assert!(all.insert(*r, what.clone()).is_none(), "{name}: revision {r} acknowledged to both writers");
        }
        let (_, last) = all.iter().next_back().unwrap();
        let store = Store::open(&url).unwrap();
        assert_eq!(read(&store, "/m:c/x"), format!(r#"{{"m:c":{{"x":"{last}"}}}}"#), "{name}");
    }
}

/// A store dropped inside an async runtime (a task of a server, say) releases
/// its connection's lock and pushed state as any drop does: PostgreSQL's
/// blocking client, which may not block there, is not called on that thread.
#[test]
fn stores_dropped_in_an_async_runtime_release_their_locks_and_state() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for (name, url) in stores(dir.path()) {
        let holder = Store::open(&url).unwrap();
        holder.lock(Datastore::Running).unwrap();
        holder.session(Datastore::Operational).set("/m:state/up", Value::String("yes".into())).unwrap();
        let other = Store::open(&url).unwrap();
        assert_eq!(other.locks().unwrap().len(), 1, "{name}");
        assert!(other.session(Datastore::Operational).get_item("/m:state/up").unwrap().is_some(), "{name}");
        runtime.block_on(async move { drop(holder) });
        assert!(other.locks().unwrap().is_empty(), "{name}: the lock outlived its connection");
        assert!(other.session(Datastore::Operational).get_item("/m:state/up").unwrap().is_none(), "{name}");
        other.running().set("/m:c/after", Value::String("unlocked".into())).unwrap();
        // A store that never locked nor pushed does no I/O when dropped;
        // nor does one listening for announcements.
        runtime.block_on(async move { drop(other) });
        let watched = Store::open(&with_params(&url, "cache=watch")).unwrap();
        assert_eq!(read(&watched, "/m:c/after"), r#"{"m:c":{"after":"unlocked"}}"#, "{name}");
        runtime.block_on(async move { drop(watched) });
    }
}

/// A store whose newest known revision is stale (another store committed
/// since) still commits at once: a transaction's first try may take the
/// known revision for the store's without asking, and the next asks; a read
/// likewise. One-try writes (`apply_owned`) do not take it.
#[test]
fn writes_and_reads_after_another_stores_commit() {
    let dir = tempfile::tempdir().unwrap();
    for (name, url) in stores(dir.path()) {
        let a = Store::open(&url).unwrap();
        let b = Store::open(&url).unwrap();
        let leaf = |v: &str| Value::String(v.into());
        a.running().set("/m:c/x", leaf("a1")).unwrap();
        for round in 0..3 {
            let theirs = b.running().set("/m:c/x", leaf(&format!("b{round}"))).unwrap().revision;
            assert_eq!(read(&a, "/m:c/x"), format!(r#"{{"m:c":{{"x":"b{round}"}}}}"#), "{name}");
            let mine = a.running().set("/m:c/y", leaf(&format!("a{round}"))).unwrap().revision;
            assert!(mine > theirs, "{name}");
            b.running().set("/m:c/x", leaf("again")).unwrap();
            let edit = canopy::Edit::merge("/m:c/z".parse().unwrap(), Node::leaf(leaf(&format!("z{round}"))));
            a.running().apply_owned(vec![edit]).unwrap();
            assert_eq!(read(&b, "/m:c/z"), format!(r#"{{"m:c":{{"z":"z{round}"}}}}"#), "{name}");
        }
    }
}

/// What one store knows of the newest revision goes stale when another
/// store commits: its locks, its YANG schema and who pushed state are not
/// trusted until the backend has shown the store at that revision.
#[test]
fn another_stores_locks_schemas_and_pushed_state_are_seen() {
    let dir = tempfile::tempdir().unwrap();
    let m = r#"module m { namespace "urn:m"; prefix m;
      container c { leaf x { type int8; } }
      container state { config false; leaf up { type string; } } }"#;
    let n = r#"module n { namespace "urn:n"; prefix n; container top { leaf v { type string; } } }"#;
    for (name, url) in stores(dir.path()) {
        let a = Store::open(&url).unwrap();
        a.schema_add_texts(&[("m.yang".into(), m.into())], &[]).unwrap();
        let b = Store::open(&url).unwrap();
        let cached = Store::open(&with_params(&url, "cache=on")).unwrap();
        b.running().set("/m:c/x", Value::Number("1".into())).unwrap();
        let empty = canopy::ReadOptions::default();
        assert!(cached.session(Datastore::Operational).get("/m:state", empty).unwrap().children.is_empty(), "{name}");
        // A module another store added: its paths read and its types hold at once.
        a.schema_add_texts(&[("n.yang".into(), n.into())], &[]).unwrap();
        assert!(b.running().get("/n:top/v", empty).unwrap().children.is_empty(), "{name}");
        a.running().set("/n:top/v", Value::String("set".into())).unwrap();
        assert_eq!(read(&b, "/n:top/v"), r#"{"n:top":{"v":"set"}}"#, "{name}");
        // A lock another store took, then released.
        a.lock(Datastore::Running).unwrap();
        let locked = b.running().set("/m:c/x", Value::Number("2".into()));
        assert!(matches!(locked, Err(canopy::Error::Locked(_))), "{name}: {locked:?}");
        a.unlock(Datastore::Running).unwrap();
        b.running()
            .set("/m:c/x", Value::Number("3".into()))
            .unwrap_or_else(|e| panic!("{name}: after the unlock: {e}"));
        assert!(b.running().set("/m:c/x", Value::Number("300".into())).is_err(), "{name}: int8 took 300");
        // State another store pushed, read through a cached store's operational view.
        a.session(Datastore::Operational).set("/m:state/up", Value::String("yes".into())).unwrap();
        let state = cached.session(Datastore::Operational).get_item("/m:state/up").unwrap();
        assert!(state.is_some(), "{name}: pushed state not seen");
    }
}
