//! Crash consistency: a child process commits numbered transactions on an LMDB
//! store with `sync=commit` and is killed with SIGKILL at a random moment, many
//! times over. After each kill the store must open, `check()` must find nothing,
//! every transaction the child reported committed must be there in full, and
//! nothing of a transaction it could not yet have attempted.
//!
//! The test binary runs itself as the child (`crash_child`, ignored unless
//! `CHILD_STORE` is set). The child prints `committed <n>` only after `apply`
//! returned Ok, so every line the parent received completely names a durable
//! transaction; at most one more (committed, killed before printing) may be there.
//!
//! `CANOPY_CRASH_KILLS` sets the number of kills (default 200),
//! `CANOPY_CRASH_SEED` replays a run.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use canopy::{Container, Edit, Node, Store, Value};
use canopy_core::edit::apply_edit;
use canopy_core::Schemaless;
use rand::{Rng, SeedableRng};

/// Env vars the parent sets for the child: the store URL and the first number to commit.
const CHILD_STORE: &str = "CANOPY_CRASH_CHILD_STORE";
const CHILD_START: &str = "CANOPY_CRASH_CHILD_START";
/// A new store every this many kills keeps each cycle's verification small.
const KILLS_PER_STORE: usize = 100;
/// Entries of the big transaction every 10th number makes.
const BATCH: usize = 200;

/// The edits of transaction `n`: one log entry and the counter; every 10th also
/// a batch of 200 entries; every 30th also deletes the batch of `n - 20`.
fn edits_for(n: u64) -> Vec<Edit> {
    let leaf = |path: String, v: Value| Edit::merge(path.parse().unwrap(), Node::leaf(v));
    let mut edits = vec![
        leaf(format!("/c:log/entry[n='{n}']/v"), Value::String(format!("v{n}").into())),
        leaf("/c:state/last".into(), Value::Number(n.to_string().into())),
    ];
    if n.is_multiple_of(10) {
        for i in 0..BATCH {
            edits.push(leaf(format!("/c:batch[n='{n}']/item[i='{i}']/v"), Value::String(format!("{n}.{i}").into())));
        }
    }
    if n.is_multiple_of(30) && n > 20 {
        edits.push(Edit::delete(format!("/c:batch[n='{}']", n - 20).parse().unwrap()));
    }
    edits
}

#[test]
#[ignore = "the child process of kill_during_commits; does nothing unless run by it"]
fn crash_child() {
    let (Ok(url), Ok(start)) = (std::env::var(CHILD_STORE), std::env::var(CHILD_START)) else { return };
    let start: u64 = start.parse().expect("start number");
    let store = Store::open(&url).unwrap_or_else(|e| panic!("child: open {url}: {e}"));
    println!("ready");
    for n in start.. {
        if let Err(e) = store.running().apply(&edits_for(n)) {
            panic!("child: transaction {n}: {e}");
        }
        // Only now is `n` reported committed.
        println!("committed {n}");
    }
}

/// What one child run told the parent.
struct Run {
    /// The numbers reported committed, in order.
    committed: Vec<u64>,
    /// Milliseconds from spawn to the kill.
    alive_ms: u128,
}

/// Runs the child on `url` from `start` and kills it `delay` after it is
/// ready (or after it was spawned, with `from_spawn`).
fn run_child(url: &str, start: u64, delay: Duration, from_spawn: bool) -> Run {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, url)
        .env(CHILD_START, start.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let spawned = Instant::now();
    let (tx, rx) = mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = BufReader::new(stdout);
        let mut line = String::new();
        // A line without its newline was cut by the kill: not reported.
        while out.read_line(&mut line).unwrap_or(0) > 0 && line.ends_with('\n') {
            if tx.send(line.trim_end().to_string()).is_err() {
                break;
            }
            line.clear();
        }
    });
    let mut stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut lines = Vec::new();
    if !from_spawn {
        // Wait for "ready"; a child that never gets there is caught below.
        let deadline = spawned + Duration::from_secs(20);
        while let Ok(l) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            // libtest prints `test crash_child ... ` before the child's first line.
            let ready = l.ends_with("ready");
            lines.push(l);
            if ready {
                break;
            }
        }
    }
    std::thread::sleep(delay);
    let _ = child.kill(); // SIGKILL on Unix
    let alive_ms = spawned.elapsed().as_millis();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let stderr = err_reader.join().unwrap();
    lines.extend(rx.try_iter());
    assert_eq!(
        status.signal(),
        Some(9),
        "the child died on its own ({status}) before the kill; stderr:\n{stderr}\nstdout:\n{}",
        lines.join("\n")
    );
    let committed = lines.iter().filter_map(|l| l.strip_prefix("committed ")).map(|n| n.parse().unwrap()).collect();
    Run { committed, alive_ms }
}

/// The counter leaf: the last transaction stored (0: none yet).
fn stored_last(store: &Store) -> u64 {
    match store.running().get_item("/c:state/last").unwrap() {
        None => 0,
        Some(canopy::Subtree::Node(Node::Leaf { value: Value::Number(n), .. })) => n.parse().unwrap(),
        Some(other) => panic!("/c:state/last is {other:?}"),
    }
}

/// Opens the store after a kill and checks it against `reference` (the state
/// after transaction `prev_last`), which it advances to the stored last.
/// Returns the stored last.
fn verify(url: &str, run: &Run, start: u64, reference: &mut Container) -> u64 {
    let store = Store::open(url).unwrap_or_else(|e| panic!("open after the kill: {e}"));
    let problems = store.check().unwrap();
    assert!(problems.is_empty(), "check after the kill: {problems:#?}");
    let expected: Vec<u64> = (start..start + run.committed.len() as u64).collect();
    assert_eq!(run.committed, expected, "the child reports numbers in order from {start}");
    let reported = run.committed.last().copied().unwrap_or(start - 1);
    let last = stored_last(&store);
    assert!(last >= reported, "transaction {reported} was reported committed, the store holds up to {last}");
    // One more may have committed after the last report, never two.
    assert!(last <= reported + 1, "the store holds {last}, the child could not have attempted past {}", reported + 1);
    for n in start..=last {
        for e in edits_for(n) {
            apply_edit(reference, &e, &Schemaless::default()).unwrap();
        }
    }
    let got = store.running().get("/", Default::default()).unwrap();
    assert!(got == *reference, "store content after transaction {last} differs from the reference");
    last
}

/// The durable backends the crash test runs on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Lmdb,
    #[cfg_attr(not(feature = "backend-sqlite"), allow(dead_code))]
    Sqlite,
    #[cfg_attr(not(feature = "backend-file"), allow(dead_code))]
    Snapshot,
    #[cfg_attr(not(feature = "backend-file"), allow(dead_code))]
    Json,
    /// The server `CANOPY_POSTGRES_URL` names, a schema per store.
    #[cfg_attr(not(feature = "backend-postgres"), allow(dead_code))]
    Postgres,
    /// The server `CANOPY_REDIS_URL` names, a key prefix per store.
    #[cfg_attr(not(feature = "backend-redis"), allow(dead_code))]
    Redis,
    /// The server `CANOPY_ETCD_URL` names, a key prefix per store.
    #[cfg_attr(not(feature = "backend-etcd"), allow(dead_code))]
    Etcd,
    /// The server `CANOPY_MONGODB_URL` names, a database per store.
    #[cfg_attr(not(feature = "backend-mongodb"), allow(dead_code))]
    Mongodb,
}

#[test]
fn kill_during_commits() {
    kill_during_commits_on(Kind::Lmdb, 200);
}

#[cfg(feature = "backend-sqlite")]
#[test]
fn kill_during_commits_sqlite() {
    kill_during_commits_on(Kind::Sqlite, 100);
}

#[cfg(feature = "backend-file")]
#[test]
fn kill_during_commits_snapshot() {
    kill_during_commits_on(Kind::Snapshot, 100);
}

#[cfg(feature = "backend-file")]
#[test]
fn kill_during_commits_json() {
    kill_during_commits_on(Kind::Json, 100);
}

#[cfg(feature = "backend-postgres")]
#[test]
fn kill_during_commits_postgres() {
    if canopy_store::conformance::server_url("CANOPY_POSTGRES_URL").is_some() {
        kill_during_commits_on(Kind::Postgres, 50);
    }
}

#[cfg(feature = "backend-redis")]
#[test]
fn kill_during_commits_redis() {
    if canopy_store::conformance::server_url("CANOPY_REDIS_URL").is_some() {
        kill_during_commits_on(Kind::Redis, 50);
    }
}

#[cfg(feature = "backend-etcd")]
#[test]
fn kill_during_commits_etcd() {
    if canopy_store::conformance::server_url("CANOPY_ETCD_URL").is_some() {
        kill_during_commits_on(Kind::Etcd, 50);
    }
}

/// A child killed inside a commit leaves its server-side transaction open,
/// holding the revision document; the next child's first commit finds it in
/// its way and ends it (its connection is gone), rather than conflicting
/// until the server expires it.
#[cfg(feature = "backend-mongodb")]
#[test]
fn kill_during_commits_mongodb() {
    if canopy_store::conformance::server_url("CANOPY_MONGODB_URL").is_some() {
        kill_during_commits_on(Kind::Mongodb, 30);
    }
}

fn kill_during_commits_on(kind: Kind, default_kills: usize) {
    let kills: usize =
        std::env::var("CANOPY_CRASH_KILLS").map_or(default_kills, |s| s.parse().expect("CANOPY_CRASH_KILLS"));
    let seed: u64 = std::env::var("CANOPY_CRASH_SEED").map_or_else(|_| rand::random(), |s| s.parse().unwrap());
    eprintln!("kill_during_commits ({kind:?}): {kills} kills, CANOPY_CRASH_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let started = Instant::now();
    let (mut total_tx, mut unreported, mut alive_ms) = (0u64, 0u64, 0u128);
    let mut dir = tempfile::tempdir().unwrap();
    let mut last = 0;
    let mut reference = Container::default();
    for kill in 0..kills {
        if kill.is_multiple_of(KILLS_PER_STORE) {
            dir = tempfile::tempdir().unwrap();
            last = 0;
            reference = Container::default();
        }
        let url = |cache: bool| store_url(kind, dir.path(), cache);
        // Kills land within the first few commits: a slower store gets longer.
        let max_delay = if matches!(kind, Kind::Mongodb) { 1500 } else { 40 };
        let delay = Duration::from_millis(rng.gen_range(1..=max_delay));
        let run = run_child(&url(rng.gen_bool(0.25)), last + 1, delay, rng.gen_bool(0.1));
        alive_ms += run.alive_ms;
        let reported = run.committed.len() as u64;
        let now = verify(&url(rng.gen_bool(0.25)), &run, last + 1, &mut reference);
        eprintln!("kill {kill}: from {}, {reported} reported, {now} stored, {} ms", last + 1, run.alive_ms);
        total_tx += now - last;
        unreported += now - last - reported;
        last = now;
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "kill_during_commits ({kind:?}): {kills} kills, {total_tx} transactions committed ({unreported} committed but \
         not reported before the kill), {secs:.1} s, {:.1} ms per cycle (child alive {:.1} ms on average)",
        secs * 1000.0 / kills as f64,
        alive_ms as f64 / kills as f64
    );
}

fn store_url(kind: Kind, dir: &Path, cache: bool) -> String {
    let cache = if cache { "&cache=on" } else { "" };
    match kind {
        Kind::Lmdb => format!("lmdb:{}?sync=commit{cache}", dir.display()),
        Kind::Sqlite => format!("sqlite:{}?sync=commit{cache}", dir.join("store.db").display()),
        Kind::Snapshot => format!("snapshot:{}?sync=commit{cache}", dir.join("store.snap").display()),
        Kind::Json => format!("json:{}?sync=commit{cache}", dir.join("store.json").display()),
        Kind::Postgres => server_store("CANOPY_POSTGRES_URL", "schema", dir, cache),
        Kind::Redis => server_store("CANOPY_REDIS_URL", "prefix", dir, cache),
        Kind::Etcd => server_store("CANOPY_ETCD_URL", "prefix", dir, cache),
        Kind::Mongodb => {
            // The namespace is the database, in the URL's path.
            let server = std::env::var("CANOPY_MONGODB_URL").expect("checked by the test");
            let ns = canopy_store::conformance::namespace_of(&format!("c{}_", std::process::id()), dir);
            canopy_store::conformance::with_params(
                &canopy_store::conformance::with_database(&server, &ns),
                &format!("sync=commit{cache}"),
            )
        }
    }
}

/// A store of the server the environment variable `var` names, in the
/// namespace (`schema`, `prefix`) of `dir` and of this run (a server
/// outlives runs).
fn server_store(var: &str, namespace: &str, dir: &Path, cache: &str) -> String {
    let server = std::env::var(var).expect("checked by the test");
    let ns = canopy_store::conformance::namespace_of(&format!("c{}_", std::process::id()), dir);
    canopy_store::conformance::with_params(&server, &format!("{namespace}={ns}&sync=commit{cache}"))
}
