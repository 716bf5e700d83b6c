//! The server killed (SIGKILL) during a stream of commits, then restarted:
//! while it is down, reads and commits fail as `Unavailable` naming the
//! server; afterwards the same backend goes on, and every commit it reported
//! is there.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canopy_etcd::EtcdBackend;
use canopy_store::{Backend, Batch, ErrorKind, StoreUrl};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An etcd server of this test alone, on free ports, in its own directory.
struct OwnServer {
    dir: tempfile::TempDir,
    port: u16,
    peer: u16,
    child: Option<std::process::Child>,
}

impl OwnServer {
    fn start() -> OwnServer {
        let mut s = OwnServer { dir: tempfile::tempdir().unwrap(), port: free_port(), peer: free_port(), child: None };
        s.restart();
        s
    }

    fn restart(&mut self) {
        let (client, peer) = (format!("http://127.0.0.1:{}", self.port), format!("http://127.0.0.1:{}", self.peer));
        let child = std::process::Command::new("etcd")
            .args(["--name", "faults", "--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("faults={peer}")])
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("etcd (scripts/servers.sh installs it)");
        self.child = Some(child);
        let url = StoreUrl::parse(&format!("etcd://127.0.0.1:{}?timeout=1s", self.port)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while EtcdBackend::open_url(&url).is_err() {
            assert!(Instant::now() < deadline, "etcd did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

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

#[test]
fn server_killed_during_commits() {
    // Runs where the test servers run (their script installs etcd).
    if canopy_store::conformance::server_url("CANOPY_ETCD_URL").is_none() {
        return;
    }
    let mut server = OwnServer::start();
    let url = format!("etcd://127.0.0.1:{}?timeout=2s&connect_timeout=1s", server.port);
    let b = Arc::new(EtcdBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap());
    let acknowledged = Arc::new(Mutex::new(Vec::<u32>::new()));
    let failed = Arc::new(Mutex::new(0usize));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (b, acknowledged, failed, stop) = (b.clone(), acknowledged.clone(), failed.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = Batch::default();
                batch.put(format!("\x10k{i:06}").into_bytes(), i.to_be_bytes().to_vec());
                batch.put(b"\x10last".to_vec(), i.to_be_bytes().to_vec());
                match b.apply(&batch) {
                    Ok(_) => acknowledged.lock().unwrap().push(i),
                    Err(e) => {
                        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
                        *failed.lock().unwrap() += 1;
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
    assert_eq!(down.kind(), ErrorKind::Unavailable, "{down}");
    assert!(down.to_string().contains(&format!("127.0.0.1:{}", server.port)), "{down}");
    server.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < before + 20 {
        assert!(Instant::now() < deadline, "no commits after the restart");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(*failed.lock().unwrap() > 0, "no commit failed while the server was down");
    let s = b.snapshot().unwrap();
    for i in acknowledged.lock().unwrap().iter() {
        assert_eq!(
            s.get(format!("\x10k{i:06}").as_bytes()).unwrap(),
            Some(i.to_be_bytes().to_vec()),
            "commit {i} was acknowledged, and is lost"
        );
    }
    let last = u32::from_be_bytes(s.get(b"\x10last").unwrap().unwrap().try_into().unwrap());
    assert!(s.get(format!("\x10k{last:06}").as_bytes()).unwrap().is_some());
}
