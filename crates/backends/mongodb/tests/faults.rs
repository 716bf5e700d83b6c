//! Faults against a MongoDB-wire server of the test's own (the program
//! `CANOPY_MONGODB_BIN` names, as `scripts/servers.sh start mongodb` prints
//! it): the server killed (SIGKILL) during a stream of commits and started
//! again on the same data; a server that cannot be reached; the change
//! stream and a lease when the server is killed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canopy_mongodb::MongoBackend;
use canopy_store::conformance::server_url;
use canopy_store::{Backend, Batch, ErrorKind, StoreUrl};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A server of this test alone, on a free port, with its data in `dir`.
struct OwnServer {
    program: String,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<std::process::Child>,
}

impl OwnServer {
    fn start(program: String) -> OwnServer {
        let mut s = OwnServer { program, dir: tempfile::tempdir().unwrap(), port: free_port(), child: None };
        s.restart();
        s
    }

    fn restart(&mut self) {
        let child = std::process::Command::new(&self.program)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string(), "--sync-on-commit", "--storage-path"])
            .arg(self.dir.path().join("data"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.program));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: nothing is flushed on the way out.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The server program, where the test servers run (CI: required).
fn program() -> Option<String> {
    server_url("CANOPY_MONGODB_URL")?;
    match std::env::var("CANOPY_MONGODB_BIN") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            assert!(std::env::var_os("CI").is_none(), "CANOPY_MONGODB_BIN is not set (scripts/servers.sh sets it)");
            eprintln!("skipped: CANOPY_MONGODB_BIN is not set");
            None
        }
    }
}

/// While the server is down, reads and commits fail as `Unavailable` naming
/// it; once it is back the same backend commits again without reopening,
/// and every commit it acknowledged (`sync=commit`) is there, whole.
#[test]
fn server_killed_during_commits() {
    let Some(program) = program() else { return };
    let mut server = OwnServer::start(program);
    let url = format!("mongodb://127.0.0.1:{}/faults?directConnection=true&timeout=5s&connect_timeout=1s", server.port);
    let b = Arc::new(MongoBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap());
    let acknowledged = Arc::new(Mutex::new(Vec::<u32>::new()));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (b, acknowledged, errors, stop) = (b.clone(), acknowledged.clone(), errors.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = Batch::default();
                batch.put(format!("\x10k{i:06}").into_bytes(), i.to_be_bytes().to_vec());
                batch.put(b"\x10last".to_vec(), i.to_be_bytes().to_vec());
                match b.apply(&batch) {
                    Ok(_) => acknowledged.lock().unwrap().push(i),
                    Err(e) => {
                        assert!(matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::Conflict), "{e}");
                        errors.lock().unwrap().push(e.to_string());
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                i += 1;
            }
        })
    };
    let wait_for = |what: &str, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while acknowledged.lock().unwrap().len() < n {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for("no commit before the kill", 10);
    server.kill();
    let before = acknowledged.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    let down = b.snapshot().err().expect("a snapshot of a stopped server");
    assert_eq!(down.kind(), ErrorKind::Unavailable, "{down}");
    assert!(down.to_string().contains(&format!("127.0.0.1:{}", server.port)), "{down}");
    server.restart();
    wait_for("no commits after the restart", before + 10);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(!errors.lock().unwrap().is_empty(), "no commit failed while the server was down");
    let s = b.snapshot().unwrap();
    for i in acknowledged.lock().unwrap().iter() {
        assert_eq!(
            s.get(format!("\x10k{i:06}").as_bytes()).unwrap(),
            Some(i.to_be_bytes().to_vec()),
            "commit {i} was acknowledged, and is lost"
        );
    }
    // Nothing but whole batches: `last` is the key of one of them.
    let last = u32::from_be_bytes(s.get(b"\x10last").unwrap().unwrap().try_into().unwrap());
    assert!(s.get(format!("\x10k{last:06}").as_bytes()).unwrap().is_some());
}

/// Nothing listening: `Unavailable`, naming the server; a server that
/// accepts and never answers: `Unavailable` ("timed out"), not a hang.
#[test]
fn an_unreachable_server_is_unavailable() {
    let port = free_port();
    let e = MongoBackend::open_url(&StoreUrl::parse(&format!("mongodb://127.0.0.1:{port}/db")).unwrap()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")) && e.to_string().contains("unreachable"), "{e}");
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let url = format!("mongodb://127.0.0.1:{port}/db?timeout=300ms&connect_timeout=300ms");
    let e = MongoBackend::open_url(&StoreUrl::parse(&url).unwrap()).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")) && e.to_string().contains("timed out"), "{e}");
}

/// The server killed: the change stream reports `Unavailable` naming the
/// server, and a lease whose renewals fail for its whole time is lost. Once
/// the server is back, the same backend listens again, hears commits and
/// takes a new lease; the lost one stays ended.
#[test]
fn a_killed_server_breaks_the_change_stream_and_ends_the_lease() {
    let Some(program) = program() else { return };
    let mut server = OwnServer::start(program);
    let url = format!(
        "mongodb://127.0.0.1:{}/faults?directConnection=true&timeout=5s&connect_timeout=1s&lease=1s",
        server.port
    );
    let b = MongoBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let lease = b.lease().unwrap();
    let mut heard = b.announcements().unwrap();
    server.kill();
    let deadline = Instant::now() + Duration::from_secs(60);
    let broken = loop {
        match heard.next(Duration::from_secs(1)) {
            Err(e) => break e,
            Ok(_) => assert!(Instant::now() < deadline, "the change stream still runs without its server"),
        }
    };
    assert_eq!(broken.kind(), ErrorKind::Unavailable, "{broken}");
    assert!(broken.to_string().contains(&format!("127.0.0.1:{}", server.port)), "{broken}");
    while !lease.lost() {
        assert!(Instant::now() < deadline, "the lease outlived a minute without its server");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.restart();
    let mut heard = b.announcements().unwrap();
    let mut batch = Batch::default();
    batch.put(b"\x10after".to_vec(), b"1".to_vec());
    let revision = b.apply(&batch).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match heard.next(Duration::from_secs(1)).unwrap() {
            Some(r) if r == revision => break,
            _ => assert!(Instant::now() < deadline, "the commit after the restart was not heard"),
        }
    }
    let new = b.lease().unwrap();
    // The lost lease's document expires within its time of its last renewal.
    while b.leases_held(&[new.id(), lease.id()]).unwrap() != vec![true, false] {
        assert!(Instant::now() < deadline, "the lost lease is still held, or the new one is not");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!new.lost());
}
