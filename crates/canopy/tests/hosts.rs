//! Many hosts on one store: what ties a lock or pushed operational state to
//! a process is a lease in the backend when the store is on a database
//! server, so a process on another host never takes a live holder's records
//! for ended (whatever its process id means here), and a killed holder's
//! records end within the lease's time. A child process plays host A (it
//! names its host with `CANOPY_HOST_ID`, the variable meant for such tests);
//! this process is host B. On the embedded backends (no leases) the check
//! stays the local one: this host's process table.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use canopy::{Datastore, Error, Store, Value};
use canopy_store::conformance::{namespace_of, server_url, with_params};
use canopy_store::{keys, Batch};

const CHILD_STORE: &str = "CANOPY_HOSTS_CHILD_STORE";
/// A bound on how long a killed holder's records may take to end (its lease
/// is 4 s here): a bound on a hang, not a speed target.
const PATIENCE: Duration = Duration::from_secs(60);

fn s(v: &str) -> Value {
    Value::String(v.into())
}

#[test]
#[ignore = "the child process of the tests here; does nothing unless run by them"]
fn host_child() {
    let Ok(url) = std::env::var(CHILD_STORE) else { return };
    let store = Store::open(&url).unwrap_or_else(|e| panic!("child: open {url}: {e}"));
    store.lock(Datastore::Running).unwrap();
    store.session(Datastore::Operational).set("/m:sys/owner", s("host-a")).unwrap();
    println!("ready");
    // Waits for `exit` (then ends its connection normally) or a kill.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "exit");
    drop(store);
    println!("closed");
}

struct HostA {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl HostA {
    /// A child that locks running and pushes `/m:sys/owner` on `url`, as
    /// host `host` (`None`: this host); returns once it did.
    fn start(url: &str, host: Option<&str>) -> HostA {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "host_child", "--ignored", "--nocapture", "--test-threads=1"])
            .env(CHILD_STORE, url)
            .env_remove("CANOPY_HOST_ID")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(h) = host {
            cmd.env("CANOPY_HOST_ID", h);
        }
        let mut child = cmd.spawn().expect("spawn the child");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut a = HostA { child, stdin, stdout };
        a.expect("ready");
        a
    }

    fn expect(&mut self, want: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the child ended before saying `{want}`");
            if line.trim_end().ends_with(want) {
                return;
            }
        }
    }

    fn exit(mut self) {
        writeln!(self.stdin, "exit").unwrap();
        self.expect("closed");
        assert!(self.child.wait().unwrap().success());
    }

    /// SIGKILL, and reaped.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// The server stores, each in a namespace of its own, with a lease of 4 s.
fn server_stores(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for (var, param) in
        [("CANOPY_POSTGRES_URL", "schema"), ("CANOPY_REDIS_URL", "prefix"), ("CANOPY_ETCD_URL", "prefix")]
    {
        if let Some(server) = server_url(var) {
            let ns = namespace_of(&format!("h{}_", std::process::id()), dir);
            out.push(with_params(&server, &format!("{param}={ns}&lease=4s")));
        }
    }
    if let Some(server) = server_url("CANOPY_MONGODB_URL") {
        let db = namespace_of(&format!("h{}_", std::process::id()), dir);
        out.push(with_params(&canopy_store::conformance::with_database(&server, &db), "lease=4s"));
    }
    out
}

/// The connection records (lock values, pusher keys) in the store.
fn records(store: &Store) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let snap = store.backend().snapshot().unwrap();
    let mut locks = Vec::new();
    snap.scan_prefix(keys::LOCK, false, &mut |_, v| {
        locks.push(v.to_vec());
        Ok(true)
    })
    .unwrap();
    let mut pushers = Vec::new();
    snap.scan_prefix(keys::PUSHER, false, &mut |k, _| {
        pushers.push(k[keys::PUSHER.len()..].to_vec());
        Ok(true)
    })
    .unwrap();
    (locks, pushers)
}

/// The process id a connection record names (a 37-byte record: version,
/// host, lease, then the process id).
fn pid_of(record: &[u8]) -> u32 {
    assert_eq!(record.len(), 37, "a connection record with host and lease");
    u32::from_be_bytes(record[17..21].try_into().unwrap())
}

/// Rewrites the store's records of process `from` as records of process
/// `to` (same host, same lease): what host B would read if host A's process
/// had number `to`.
fn renumber(store: &Store, from: u32, to: u32) {
    let snap = store.backend().snapshot().unwrap();
    let mut batch = Batch { expect_revision: Some(snap.revision()), ops: Vec::new() };
    let renamed = |record: &[u8]| -> Option<Vec<u8>> {
        (record.len() >= 37 && pid_of(&record[..37]) == from).then(|| {
            let mut r = record.to_vec();
            r[17..21].copy_from_slice(&to.to_be_bytes());
            r
        })
    };
    snap.scan_prefix(keys::LOCK, false, &mut |k, v| {
        if let Some(v) = renamed(v) {
            batch.put(k.to_vec(), v);
        }
        Ok(true)
    })
    .unwrap();
    for prefix in [keys::PUSHER, keys::PUSHED] {
        snap.scan_prefix(prefix, false, &mut |k, v| {
            if let Some(rest) = renamed(&k[prefix.len()..]) {
                batch.delete(k.to_vec());
                let mut nk = prefix.to_vec();
                nk.extend_from_slice(&rest);
                batch.put(nk, v.to_vec());
            }
            Ok(true)
        })
        .unwrap();
    }
    drop(snap);
    assert!(!batch.is_empty());
    store.backend().apply(&batch).unwrap();
}

fn owner_count(store: &Store) -> usize {
    store.session(Datastore::Operational).count("/m:sys/owner").unwrap()
}

/// Whether a connection record names the host and lease of `tag` (A's lock record).
fn of(record: &[u8], tag: &[u8]) -> bool {
    record[1..17] == tag[1..17]
}

/// What host B sees of live host A's lock and pushed state, and does not
/// clear; `tag` is A's lock record.
fn assert_a_holds(b: &Store, a_pid: u32, tag: &[u8], url: &str) {
    let locks = b.locks().unwrap();
    assert_eq!(locks.len(), 1, "{url}: {locks:?}");
    let l = &locks[0];
    assert_eq!((l.datastore, l.pid, l.other_host, l.mine), (Datastore::Running, a_pid, true, false), "{url}");
    match b.running().set("/m:sys/name", s("from-b")) {
        Err(Error::Locked(m)) => assert!(m.contains(&format!("process {a_pid} on another host")), "{url}: {m}"),
        other => panic!("{url}: a commit through A's lock: {other:?}"),
    }
    assert!(matches!(b.lock(Datastore::Running), Err(Error::Locked(_))), "{url}");
    assert_eq!(owner_count(b), 1, "{url}: A's pushed state is read");
    // Writes that collect ended connections' records keep A's: a control
    // write, a push, opening the store.
    b.lock(Datastore::Startup).unwrap();
    b.unlock(Datastore::Startup).unwrap();
    b.session(Datastore::Operational).set("/m:sys/b", s("1")).unwrap();
    drop(Store::open(url).unwrap());
    let (locks, pushers) = records(b);
    assert_eq!(locks.len(), 1, "{url}: A's lock record is kept");
    assert_eq!(pushers.iter().filter(|p| of(p, tag) && pid_of(p) == a_pid).count(), 1, "{url}: A's pusher is kept");
    assert_eq!(owner_count(b), 1, "{url}");
}

/// Polls (up to [`PATIENCE`]) until `done`; asserts it came.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_live_holder_on_another_host_keeps_its_records_and_a_killed_one_loses_them_with_its_lease() {
    let dir = tempfile::tempdir().unwrap();
    for url in server_stores(dir.path()) {
        let b = Store::open(&url).unwrap();
        b.running().set("/m:sys/name", s("before")).unwrap();
        let a = HostA::start(&url, Some("host-a"));
        let real = a.child.id();
        let (locks, pushers) = records(&b);
        assert_eq!((locks.len(), pushers.len()), (1, 1), "{url}");
        assert_eq!(pid_of(&locks[0]), real, "{url}");
        let tag = locks[0].clone();

        // A's process number means nothing here: one that no process has...
        let mut gone = Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        renumber(&b, real, gone_pid);
        assert_a_holds(&b, gone_pid, &tag, &url);
        // ... or this very process's.
        renumber(&b, gone_pid, std::process::id());
        assert_a_holds(&b, std::process::id(), &tag, &url);

        // A killed: its lease ends (at once on PostgreSQL, whose session
        // closes; within the lease's 4 s on Redis, etcd and MongoDB), and with it
        // its lock and pushed state, for B too.
        a.kill();
        eventually(&format!("{url}: A's lock ends"), || b.locks().unwrap().is_empty());
        eventually(&format!("{url}: A's state ends"), || owner_count(&b) == 0);
        b.running().set("/m:sys/name", s("after")).unwrap();
        b.lock(Datastore::Running).unwrap();
        // B's next push collects A's records; B's own stay.
        b.session(Datastore::Operational).set("/m:sys/b", s("2")).unwrap();
        let (locks, pushers) = records(&b);
        assert_eq!(locks.len(), 1, "{url}: only B's lock");
        assert_eq!(pushers.len(), 1, "{url}: only B's pusher record");
        assert!(!of(&pushers[0], &tag), "{url}");
        assert!(b.locks().unwrap()[0].mine, "{url}");
        b.unlock(Datastore::Running).unwrap();
        b.clear_pushed().unwrap();
    }
}

#[test]
fn a_holder_that_exits_ends_its_lease_at_once_even_when_its_records_stay() {
    let dir = tempfile::tempdir().unwrap();
    for url in server_stores(dir.path()) {
        let b = Store::open(&url).unwrap();
        let a = HostA::start(&url, Some("host-a"));
        // Renumbered, A's own records are no longer its connection's: its
        // exit leaves them in the store, but its lease ends with it.
        let mut gone = Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        renumber(&b, a.child.id(), gone_pid);
        assert_eq!(b.locks().unwrap().len(), 1, "{url}");
        a.exit();
        assert_eq!(records(&b).0.len(), 1, "{url}: the lock record is still there");
        eventually(&format!("{url}: A's lock ends with its lease"), || b.locks().unwrap().is_empty());
        assert_eq!(owner_count(&b), 0, "{url}");
        b.lock(Datastore::Running).unwrap();
        assert_eq!(records(&b).0.len(), 1, "{url}: A's lock record was replaced by B's");
    }
}

/// The embedded backends keep the local check: a holder of this host ends
/// with its process, at once; one of another host is never taken for ended
/// (nothing here can tell), even after it was killed.
#[test]
fn embedded_stores_judge_by_this_hosts_processes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let mut urls = vec![format!("lmdb:{d}/lmdb")];
    if cfg!(feature = "backend-sqlite") {
        urls.push(format!("sqlite:{d}/store.db"));
    }
    for url in urls {
        let b = Store::open(&url).unwrap();
        let a = HostA::start(&url, None);
        let locks = b.locks().unwrap();
        assert_eq!(locks.len(), 1, "{url}");
        assert!(!locks[0].other_host, "{url}");
        assert_eq!(owner_count(&b), 1, "{url}");
        a.kill();
        assert!(b.locks().unwrap().is_empty(), "{url}: a killed process's lock ends at once");
        assert_eq!(owner_count(&b), 0, "{url}");
        b.lock(Datastore::Running).unwrap();
        b.unlock(Datastore::Running).unwrap();
        assert_eq!(records(&b), (vec![], vec![]), "{url}: the lock write collected the killed process's records");

        let a = HostA::start(&url, Some("host-a"));
        let pid = a.child.id();
        a.kill();
        let locks = b.locks().unwrap();
        assert_eq!(locks.len(), 1, "{url}: another host's lock is kept");
        assert_eq!((locks[0].pid, locks[0].other_host), (pid, true), "{url}");
        assert_eq!(owner_count(&b), 1, "{url}");
    }
}

/// Revokes lease `id` on the etcd server of `server` (`etcd://HOST:PORT`),
/// through its JSON gateway: what the server does to a lease its holder
/// stopped keeping alive.
fn etcd_revoke(server: &str, id: u64) {
    use std::io::Read;
    let addr = server.trim_start_matches("etcd://").split(['?', '/']).next().unwrap();
    let body = format!("{{\"ID\": {id}}}");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /v3/lease/revoke HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

/// A process whose lease the server dropped (as it does when the holder
/// cannot renew it in time) loses its lock and pushed state for every
/// process, itself included; its next push takes a new lease.
#[test]
fn a_lost_lease_takes_its_lock_and_state_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let ns = namespace_of("lost_", dir.path());
    if let Some(server) = server_url("CANOPY_ETCD_URL") {
        let url = with_params(&server, &format!("prefix={ns}&lease=3s"));
        a_lost_lease_on(&url, &|id| etcd_revoke(&server, id));
    }
    if let Some(server) = server_url("CANOPY_MONGODB_URL") {
        let url = with_params(&canopy_store::conformance::with_database(&server, &ns), "lease=3s");
        a_lost_lease_on(&url, &|id| mongodb_end_lease(&server, &ns, id));
    }
}

/// The test above on the store of `url`, whose server `end` makes drop a lease.
fn a_lost_lease_on(url: &str, end: &dyn Fn(u64)) {
    let a = Store::open(url).unwrap();
    let other = Store::open(url).unwrap();
    a.lock(Datastore::Running).unwrap();
    a.session(Datastore::Operational).set("/m:sys/owner", s("a")).unwrap();
    assert!(matches!(other.lock(Datastore::Running), Err(Error::Locked(_))), "{url}");
    let record = records(&a).0[0].clone();
    let lease = u64::from_be_bytes(record[9..17].try_into().unwrap());
    assert!(lease > 0);

    end(lease);
    eventually(&format!("{url}: the lost lease's lock ends"), || a.locks().unwrap().is_empty());
    assert_eq!(owner_count(&a), 0, "{url}: its pushed state is gone for its own process too");
    assert_eq!(owner_count(&other), 0, "{url}");
    other.lock(Datastore::Running).unwrap();
    match a.lock(Datastore::Running) {
        Err(Error::Locked(m)) => assert!(m.contains("another connection of this process"), "{url}: {m}"),
        r => panic!("{url}: {r:?}"),
    }
    // A push after the loss: a new lease, and only what was pushed since.
    a.session(Datastore::Operational).set("/m:sys/load", s("1")).unwrap();
    assert_eq!(owner_count(&other), 0, "{url}");
    assert_eq!(other.session(Datastore::Operational).count("/m:sys/load").unwrap(), 1, "{url}");
    let (_, pushers) = records(&a);
    assert_eq!(pushers.len(), 1, "{url}: the lost lease's pusher record was collected");
    let new = u64::from_be_bytes(pushers[0][9..17].try_into().unwrap());
    assert!(new != lease && new > 0, "{url}");
}

/// Deletes lease `id`'s document in database `db` of the MongoDB server of
/// `server` (`mongodb://HOST:PORT/...`): what the server's TTL sweep does to
/// the document of a lease its holder stopped renewing. One `OP_MSG` of
/// `{delete: "leases", deletes: [{q: {_id: id}, limit: 1}], $db: db}`, its
/// BSON written here, and the reply checked for `n: 1` (one deleted).
fn mongodb_end_lease(server: &str, db: &str, id: u64) {
    use std::io::Read;
    fn document(elements: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = elements.concat();
        let mut d = ((body.len() + 5) as i32).to_le_bytes().to_vec();
        d.extend(body);
        d.push(0);
        d
    }
    fn element(kind: u8, name: &str, value: &[u8]) -> Vec<u8> {
        let mut e = vec![kind];
        e.extend(name.as_bytes());
        e.push(0);
        e.extend(value);
        e
    }
    fn string(v: &str) -> Vec<u8> {
        let mut s = ((v.len() + 1) as i32).to_le_bytes().to_vec();
        s.extend(v.as_bytes());
        s.push(0);
        s
    }
    let query = document(&[element(0x12, "_id", &(id as i64).to_le_bytes())]);
    let statement = document(&[element(0x03, "q", &query), element(0x10, "limit", &1i32.to_le_bytes())]);
    let cmd = document(&[
        element(0x02, "delete", &string("leases")),
        element(0x04, "deletes", &document(&[element(0x03, "0", &statement)])),
        element(0x02, "$db", &string(db)),
    ]);
    let mut msg = Vec::new();
    for field in [(16 + 4 + 1 + cmd.len()) as i32, 1, 0, 2013, 0] {
        msg.extend(field.to_le_bytes());
    }
    msg.push(0);
    msg.extend(&cmd);
    let addr = server.trim_start_matches("mongodb://").split(['/', '?']).next().unwrap();
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(&msg).unwrap();
    let mut header = [0u8; 16];
    conn.read_exact(&mut header).unwrap();
    let mut reply = vec![0u8; i32::from_le_bytes(header[..4].try_into().unwrap()) as usize - 16];
    conn.read_exact(&mut reply).unwrap();
    // The reply's `n`: an int32 element named `n`.
    let deleted = element(0x10, "n", &1i32.to_le_bytes());
    assert!(reply.windows(deleted.len()).any(|w| w == deleted), "lease {id}'s document was not deleted: {reply:?}");
}
