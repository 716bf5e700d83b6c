//! Operational state pushed by connections is kept in the store, so other
//! processes see it while its connection lives: a child process pushes, this
//! one reads, then the child ends (normally or by SIGKILL).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use canopy::json::{to_string, WriteOptions};
use canopy::{Container, Datastore, Store, Value, ORIGIN};
use canopy_store::keys;

const CHILD_STORE: &str = "CANOPY_PUSH_CHILD_STORE";
const CHILD_EDITS: &str = "CANOPY_PUSH_CHILD_EDITS";

fn s(v: &str) -> Value {
    Value::String(v.into())
}

/// LMDB uncached and cached, and SQLite when it is built (its commits read
/// and write in one transaction).
fn urls(dir: &tempfile::TempDir) -> Vec<String> {
    let d = dir.path().display();
    let mut urls = vec![format!("lmdb:{d}/plain"), format!("lmdb:{d}/cached?cache=on")];
    if cfg!(feature = "backend-sqlite") {
        urls.push(format!("sqlite:{d}/store.db"));
    }
    urls
}

#[test]
#[ignore = "the child process of the tests here; does nothing unless run by them"]
fn push_child() {
    let (Ok(url), Ok(edits)) = (std::env::var(CHILD_STORE), std::env::var(CHILD_EDITS)) else { return };
    let store = Store::open(&url).unwrap_or_else(|e| panic!("child: open {url}: {e}"));
    // One push per line `PATH=VALUE`.
    for line in edits.lines() {
        let (path, value) = line.rsplit_once('=').expect("PATH=VALUE");
        store.session(Datastore::Operational).set(path, s(value)).unwrap_or_else(|e| panic!("child: push {path}: {e}"));
    }
    println!("pushed");
    // Waits for `exit` (then ends its connection normally) or a kill.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "exit");
    drop(store);
    println!("closed");
}

struct Pusher {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Pusher {
    /// Starts a child that pushes `edits` (`PATH=VALUE` lines) to `url`; returns once it pushed.
    fn start(url: &str, edits: &str) -> Pusher {
        let mut p = Pusher::spawn(url, edits);
        p.expect("pushed");
        p
    }

    fn spawn(url: &str, edits: &str) -> Pusher {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "push_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_STORE, url)
            .env(CHILD_EDITS, edits)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the child");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Pusher { child, stdin, stdout }
    }

    /// Reads the child's output up to the line `want`.
    fn expect(&mut self, want: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the child ended before saying `{want}`");
            // The harness may have begun the line (`test push_child ... `).
            if line.trim_end().ends_with(want) {
                return;
            }
        }
    }

    /// Lets the child end its connection and exit normally.
    fn exit(mut self) {
        writeln!(self.stdin, "exit").unwrap();
        self.expect("closed");
        assert!(self.child.wait().unwrap().success());
    }

    /// Kills the child with SIGKILL and reaps it.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Kills the child with SIGKILL and returns once it is a zombie (dead,
    /// not yet reaped); the caller reaps it.
    fn kill_leaving_zombie(&mut self) {
        self.child.kill().unwrap();
        let stat = format!("/proc/{}/stat", self.child.id());
        while !std::fs::read_to_string(&stat).unwrap().rsplit_once(')').unwrap().1.trim_start().starts_with('Z') {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// How many pusher records and pushed-state records the store holds.
fn records(store: &Store) -> (usize, usize) {
    let snap = store.backend().snapshot().unwrap();
    let count = |prefix: &[u8]| {
        let mut n = 0;
        snap.scan_prefix(prefix, false, &mut |_, _| {
            n += 1;
            Ok(true)
        })
        .unwrap();
        n
    };
    (count(keys::PUSHER), count(keys::PUSHED))
}

fn origin_of(tree: &Container, path: &str) -> Option<String> {
    let p: canopy::Path = path.parse().unwrap();
    match tree.lookup(&p)? {
        canopy_core::tree::NodeRef::Leaf(_, meta) => meta.get(ORIGIN).map(str::to_owned),
        r => r.container().and_then(|c| c.meta.get(ORIGIN).map(str::to_owned)),
    }
}

fn oper_json(store: &Store, query: &str) -> String {
    to_string(&store.session(Datastore::Operational).get(query, Default::default()).unwrap(), &WriteOptions::default())
}

#[test]
fn state_pushed_by_another_process_is_read_with_its_origin_until_the_process_exits() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.running().set("/m:if[name='eth0']/mtu", Value::Number("1500".into())).unwrap();
        store.session(Datastore::Operational).stored().set("/m:if[name='eth0']/speed", s("1000")).unwrap();
        store.session(Datastore::Operational).set("/m:if[name='eth9']/oper-status", s("mine")).unwrap();

        let child = Pusher::start(
            &url,
            "/m:if[name='eth0']/oper-status=up\n/m:if[name='eth1']/oper-status=down\n/m:if[name='eth1']/in-octets=7",
        );
        let op = store.session(Datastore::Operational).get("/", Default::default()).unwrap();
        assert_eq!(
            to_string(&op, &WriteOptions::default()),
            concat!(
                r#"{"m:if":[{"@":{"ietf-origin:origin":"ietf-origin:intended"},"mtu":1500,"name":"eth0","#,
                r#""oper-status":"up","@oper-status":{"ietf-origin:origin":"ietf-origin:unknown"},"#,
                r#""speed":"1000","@speed":{"ietf-origin:origin":"ietf-origin:unknown"}},"#,
                r#"{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"in-octets":"7","name":"eth1","oper-status":"down"},"#,
                r#"{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"name":"eth9","oper-status":"mine"}]}"#
            ),
            "{url}"
        );
        assert_eq!(origin_of(&op, "/m:if[name='eth1']"), Some("ietf-origin:unknown".into()));
        // A read of a part loads only that part, of every source.
        assert_eq!(
            oper_json(&store, "/m:if[name='eth1']/in-octets"),
            r#"{"m:if":[{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"in-octets":"7","name":"eth1"}]}"#,
            "{url}"
        );
        // Another connection of this process sees the same.
        let other = Store::open(&url).unwrap();
        assert_eq!(other.session(Datastore::Operational).count("/m:if[name='eth1']").unwrap(), 1, "{url}");
        assert_eq!(records(&store).0, 2, "{url}: one pusher record per pushing connection");

        // Ending the connection normally removes its records.
        child.exit();
        assert_eq!(store.session(Datastore::Operational).count("/m:if[name='eth1']").unwrap(), 0, "{url}");
        assert_eq!(store.session(Datastore::Operational).count("/m:if/oper-status").unwrap(), 1, "{url}");
        assert_eq!(records(&store).0, 1, "{url}: only this connection's pusher record is left");
        assert_eq!(
            oper_json(&store, "/m:if[name='eth0']/speed").matches("1000").count(),
            1,
            "{url}: stored state stays"
        );
        assert_eq!(store.session(Datastore::Operational).stored().count("/m:if").unwrap(), 1);
        // The store checks out with pushed records in it.
        assert_eq!(store.check().unwrap(), Vec::<String>::new(), "{url}");
    }
}

#[test]
fn state_of_a_killed_process_disappears_at_once_and_is_collected_later() {
    let dir = tempfile::tempdir().unwrap();
    for url in urls(&dir) {
        let store = Store::open(&url).unwrap();
        store.session(Datastore::Operational).stored().set("/m:sys/booted", s("yes")).unwrap();
        let mut child = Pusher::start(&url, "/m:sys/load=0.5\n/m:sys/proc[pid='1']/name=init");
        assert_eq!(
            oper_json(&store, "/m:sys/load"),
            r#"{"m:sys":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"load":"0.5"}}"#
        );
        assert_eq!(store.session(Datastore::Operational).count("/m:sys/proc").unwrap(), 1, "{url}");
        let (pushers, pushed) = records(&store);
        assert_eq!(pushers, 1, "{url}");
        assert!(pushed >= 2, "{url}: the child's fragments are in the store");

        child.kill_leaving_zombie();
        // Its records are still there (nobody wrote since), but no read shows
        // them, even while the process is a zombie its parent has not reaped.
        assert_eq!(records(&store), (pushers, pushed), "{url}");
        let op = store.session(Datastore::Operational);
        assert_eq!(op.count("/m:sys/load").unwrap(), 0, "{url}");
        child.child.wait().unwrap();
        assert_eq!(op.count("/m:sys/proc").unwrap(), 0, "{url}");
        assert_eq!(op.count("/m:sys/booted").unwrap(), 1, "{url}: stored state is unaffected");
        // A push of a live connection collects them, and keeps its own.
        op.set("/m:sys/load", s("0.7")).unwrap();
        assert_eq!(records(&store).0, 1, "{url}");
        assert_eq!(
            oper_json(&store, "/m:sys/load"),
            r#"{"m:sys":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"load":"0.7"}}"#
        );
        store.clear_pushed().unwrap();
        assert_eq!(records(&store), (0, 0), "{url}: clear_pushed removes the connection's records");
        assert_eq!(op.count("/m:sys/load").unwrap(), 0, "{url}");
    }
}

#[test]
fn opening_a_store_collects_ended_pushers_but_never_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let live = Pusher::start(&url, "/m:a/x=live");
    let dead = Pusher::start(&url, "/m:b/x=dead");
    dead.kill();
    let store = Store::open(&url).unwrap();
    assert_eq!(records(&store).0, 1, "the killed child's records are collected at open");
    assert_eq!(oper_json(&store, "/m:a/x"), r#"{"m:a":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"x":"live"}}"#);
    // Locking (a control write) collects too, and also keeps the live one.
    store.lock(Datastore::Running).unwrap();
    assert_eq!(records(&store).0, 1);
    assert_eq!(store.session(Datastore::Operational).count("/m:a/x").unwrap(), 1);
    live.kill();
    assert_eq!(store.session(Datastore::Operational).count("/m:a/x").unwrap(), 0);
    store.unlock(Datastore::Running).unwrap();
    assert_eq!(records(&store), (0, 0));
}

#[test]
fn concurrent_pushes_from_two_processes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut urls = vec![format!("lmdb:{d}/l?sync=off")];
    if cfg!(feature = "backend-sqlite") {
        urls.push(format!("sqlite:{d}/s.db?sync=off"));
    }
    for url in urls {
        let store = Store::open(&url).unwrap();
        let n = 60;
        let edits = |who: &str| -> String {
            (0..n).map(|i| format!("/m:{who}/item[k='{i}']/v={who}{i}")).collect::<Vec<_>>().join("\n")
        };
        // Both start before either is done: each push retries when the other
        // committed first (no lock is taken).
        let mut a = Pusher::spawn(&url, &edits("a"));
        let mut b = Pusher::spawn(&url, &edits("b"));
        a.expect("pushed");
        b.expect("pushed");
        let op = store.session(Datastore::Operational);
        assert_eq!(op.count("/m:a/item").unwrap(), n, "{url}");
        assert_eq!(op.count("/m:b/item").unwrap(), n, "{url}");
        assert_eq!(
            oper_json(&store, "/m:b/item[k='59']/v"),
            r#"{"m:b":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"item":[{"k":"59","v":"b59"}]}}"#
        );
        a.exit();
        assert_eq!(op.count("/m:a/item").unwrap(), 0, "{url}");
        assert_eq!(op.count("/m:b/item").unwrap(), n, "{url}");
        b.kill();
        assert_eq!(op.count("/m:b/item").unwrap(), 0, "{url}");
    }
}

#[test]
fn pushed_state_merges_in_order_of_first_push() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let first = Store::open(&url).unwrap();
    let second = Store::open(&url).unwrap();
    first.session(Datastore::Operational).set("/m:s/x", s("first")).unwrap();
    second.session(Datastore::Operational).set("/m:s/x", s("second")).unwrap();
    // A later push of the first connection does not move it after the second.
    first.session(Datastore::Operational).set("/m:s/x", s("first again")).unwrap();
    first.session(Datastore::Operational).set("/m:s/y", s("only first")).unwrap();
    let reader = Store::open(&url).unwrap();
    assert_eq!(
        oper_json(&reader, "/m:s"),
        r#"{"m:s":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"x":"second","y":"only first"}}"#
    );
    // The same from another process's point of view: the records say it.
    drop(second);
    assert_eq!(
        oper_json(&reader, "/m:s/x"),
        r#"{"m:s":{"@":{"ietf-origin:origin":"ietf-origin:unknown"},"x":"first again"}}"#
    );
}

#[test]
fn operational_subscribers_of_a_push_can_read_operational_through_another_connection() {
    use std::sync::{Arc, Mutex};
    struct Reader {
        other: Store,
        seen: Arc<Mutex<Vec<String>>>,
    }
    impl canopy::Subscriber for Reader {
        fn validate(&self, _ev: &canopy::ChangeEvent<'_>) -> Result<(), String> {
            let v = oper_json(&self.other, "/m:s/x");
            self.seen.lock().unwrap().push(format!("validate {v}"));
            Ok(())
        }
        fn apply(&self, _ev: &canopy::ChangeEvent<'_>) {
            let v = oper_json(&self.other, "/m:s/x");
            self.seen.lock().unwrap().push(format!("apply {v}"));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let url = format!("lmdb:{}", dir.path().display());
    let store = Store::open(&url).unwrap();
    store.session(Datastore::Operational).set("/m:s/x", s("1")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let _sub = store
        .subscribe(Datastore::Operational, "/m:s", 0, Reader { other: Store::open(&url).unwrap(), seen: seen.clone() })
        .unwrap();
    store.session(Datastore::Operational).set("/m:s/x", s("2")).unwrap();
    let x = |v: &str| format!(r#"{{"m:s":{{"@":{{"ietf-origin:origin":"ietf-origin:unknown"}},"x":"{v}"}}}}"#);
    // Validate sees the state before the push, apply the state after it.
    assert_eq!(*seen.lock().unwrap(), [format!("validate {}", x("1")), format!("apply {}", x("2"))]);
}

#[test]
fn every_backend_keeps_pushed_state_for_the_connection_and_drops_it_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut urls = vec![format!("lmdb:{d}/l"), "memory:pushed".to_string()];
    if cfg!(feature = "backend-sqlite") {
        urls.push(format!("sqlite:{d}/s.db"));
    }
    if cfg!(feature = "backend-file") {
        urls.push(format!("json:{d}/j.json"));
        urls.push(format!("snapshot:{d}/s.snap"));
    }
    for (i, url) in urls.into_iter().enumerate() {
        let store = Store::open(&url).unwrap();
        let op = store.session(Datastore::Operational);
        op.set("/m:s/x", s("1")).unwrap();
        op.set("/m:s/item[k='b']/v", s("2")).unwrap();
        op.set("/m:s/item[k='a']/v", s("3")).unwrap();
        op.delete("/m:s/item[k='b']").unwrap();
        assert_eq!(op.count("/m:s/item").unwrap(), 1, "{url}");
        let (pushers, pushed) = records(&store);
        assert_eq!(pushers, 1, "{url}");
        assert_eq!(pushed, 2, "{url}: /m:s and its one entry");
        assert_eq!(store.check().unwrap(), Vec::<String>::new(), "{url}");
        // A copy leaves the connection's state behind.
        if cfg!(feature = "backend-sqlite") {
            let to = Store::open(&format!("sqlite:{d}/copy-{i}.db")).unwrap();
            canopy::copy(&store, &to).unwrap();
            assert_eq!(records(&to), (0, 0), "{url}");
            assert_eq!(to.session(Datastore::Operational).count("/m:s").unwrap(), 0, "{url}");
        }
        store.clear_pushed().unwrap();
        assert_eq!(records(&store), (0, 0), "{url}");
        op.set("/m:s/x", s("again")).unwrap();
        assert_eq!(records(&store).0, 1, "{url}");
        let reopened = store.url().to_string();
        drop(store);
        if !reopened.starts_with("memory:") {
            let store = Store::open(&reopened).unwrap();
            assert_eq!(records(&store), (0, 0), "{url}: dropping the store removed its records");
        }
    }
}
