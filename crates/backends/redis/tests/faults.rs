//! The server closing canopy's connections (as a restart does): the next
//! command reconnects by itself and nothing committed is lost.

use canopy_redis::RedisBackend;
use canopy_store::conformance::{server_url, with_params};
use canopy_store::{Backend, Batch, StoreUrl};

#[test]
fn connections_closed_by_the_server_are_replaced() {
    let Some(server) = server_url("CANOPY_REDIS_URL") else { return };
    let prefix = format!("faults_{}", std::process::id());
    let b =
        RedisBackend::open_url(&StoreUrl::parse(&with_params(&server, &format!("prefix={prefix}"))).unwrap()).unwrap();
    let client = redis::Client::open(server.as_str()).unwrap();
    let mut admin = client.get_connection().unwrap();
    let name = format!("canopy:{{{prefix}}}");
    for round in 1..=3u64 {
        let mut batch = Batch::default();
        batch.put(format!("\x10k{round}").into_bytes(), b"v".to_vec());
        assert_eq!(b.apply(&batch).unwrap(), round);
        let (s1, s2) = (b.snapshot().unwrap(), b.snapshot().unwrap());
        drop((s1, s2));
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).unwrap();
        let ids: Vec<&str> = list
            .lines()
            .filter(|l| l.split(' ').any(|f| f == format!("name={name}")))
            .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
            .collect();
        assert!(!ids.is_empty(), "no connection named {name} in {list}");
        for id in ids {
            let _: redis::Value = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut admin).unwrap();
        }
        let s = b.snapshot().unwrap();
        assert_eq!(s.revision(), round);
        for r in 1..=round {
            assert_eq!(s.get(format!("\x10k{r}").as_bytes()).unwrap().as_deref(), Some(&b"v"[..]));
        }
    }
}

/// A Redis server of this test alone, on a free port, in `dir`, keeping what
/// it acknowledges (`appendfsync always`), as `scripts/servers.sh` starts them.
struct OwnServer {
    dir: tempfile::TempDir,
    port: u16,
    child: Option<std::process::Child>,
}

impl OwnServer {
    fn start() -> OwnServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut s = OwnServer { dir: tempfile::tempdir().unwrap(), port, child: None };
        s.restart();
        s
    }

    fn restart(&mut self) {
        let child = std::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--appendonly", "yes"])
            .args(["--appendfsync", "always", "--save", ""])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (scripts/servers.sh installs it)");
        self.child = Some(child);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(std::time::Duration::from_millis(10));
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

/// The server killed (SIGKILL) during a stream of commits, then restarted:
/// while it is down, reads and commits fail as `Unavailable` naming the
/// server; afterwards the same backend goes on without reopening, and every
/// commit it reported is there.
#[test]
fn server_killed_during_commits() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    // Runs where the test servers run (their script installs redis-server).
    if server_url("CANOPY_REDIS_URL").is_none() {
        return;
    }
    let mut server = OwnServer::start();
    let url = format!("redis://127.0.0.1:{}/0?timeout=2s&connect_timeout=1s", server.port);
    let b = Arc::new(RedisBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap());
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
                        assert_eq!(e.kind(), canopy_store::ErrorKind::Unavailable, "{e}");
                        errors.lock().unwrap().push(e.to_string());
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
                i += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    let before = acknowledged.lock().unwrap().len();
    assert!(before > 0, "no commit before the kill");
    std::thread::sleep(Duration::from_millis(300));
    let down = b.snapshot().err().expect("a snapshot of a stopped server");
    assert_eq!(down.kind(), canopy_store::ErrorKind::Unavailable, "{down}");
    assert!(down.to_string().contains(&format!("127.0.0.1:{}", server.port)), "{down}");
    server.restart();
    // The same backend commits again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while acknowledged.lock().unwrap().len() < before + 20 {
        assert!(std::time::Instant::now() < deadline, "no commits after the restart");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(!errors.lock().unwrap().is_empty(), "no commit failed while the server was down");
    let s = b.snapshot().unwrap();
    let acknowledged = acknowledged.lock().unwrap();
    for i in acknowledged.iter() {
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
