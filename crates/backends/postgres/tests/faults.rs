//! The server ending canopy's connections (as a restart or an administrator
//! does): the next transaction reconnects by itself and nothing committed is
//! lost.

use canopy_postgres::PostgresBackend;
use canopy_store::conformance::{server_url, with_params};
use canopy_store::{Backend, Batch, StoreUrl};

#[test]
fn connections_ended_by_the_server_are_replaced() {
    let Some(server) = server_url("CANOPY_POSTGRES_URL") else { return };
    let app = format!("canopy_faults_{}", std::process::id());
    let url = with_params(&server, &format!("schema=f_{}&application_name={app}", std::process::id()));
    let b = PostgresBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap();
    let mut admin = postgres::Client::connect(&server, postgres::NoTls).unwrap();
    for round in 1..=3u64 {
        let mut batch = Batch::default();
        batch.put(format!("\x10k{round}").into_bytes(), b"v".to_vec());
        assert_eq!(b.apply(&batch).unwrap(), round);
        // Several pooled connections.
        let (s1, s2) = (b.snapshot().unwrap(), b.snapshot().unwrap());
        drop((s1, s2));
        let ended: i64 = admin
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                &[&app],
            )
            .unwrap()
            .get(0);
        assert!(ended >= 2, "{ended} connections ended");
        // Until the server has ended them all.
        while admin
            .query_one("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", &[&app])
            .unwrap()
            .get::<_, i64>(0)
            > 0
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let s = b.snapshot().unwrap();
        assert_eq!(s.revision(), round);
        for r in 1..=round {
            assert_eq!(s.get(format!("\x10k{r}").as_bytes()).unwrap().as_deref(), Some(&b"v"[..]));
        }
    }
}

/// The uid and gid of the `postgres` account, when running as root (the
/// server refuses to run as root).
fn server_account() -> Option<(u32, u32)> {
    let me = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid_line = me.lines().find(|l| l.starts_with("Uid:"))?;
    if uid_line.split_whitespace().nth(1)? != "0" {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let fields: Vec<&str> = passwd.lines().find(|l| l.starts_with("postgres:"))?.split(':').collect();
    Some((fields[2].parse().ok()?, fields[3].parse().ok()?))
}

/// A PostgreSQL server of this test alone, on a free port, in its own
/// directory (programs from `CANOPY_POSTGRES_BIN`, which `scripts/servers.sh`
/// exports).
struct OwnServer {
    dir: tempfile::TempDir,
    bin: std::path::PathBuf,
    port: u16,
    account: Option<(u32, u32)>,
    child: Option<std::process::Child>,
}

impl OwnServer {
    fn start(bin: std::path::PathBuf) -> OwnServer {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let account = server_account();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        if let Some((uid, gid)) = account {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
            std::os::unix::fs::chown(&data, Some(uid), Some(gid)).unwrap();
        }
        let mut initdb = std::process::Command::new(bin.join("initdb"));
        initdb.args(["-U", "canopy", "--auth=trust", "-E", "UTF8", "--locale=C", "-D"]).arg(&data);
        if let Some((uid, gid)) = account {
            initdb.uid(uid).gid(gid);
        }
        let out = initdb.output().unwrap();
        assert!(out.status.success(), "initdb: {}", String::from_utf8_lossy(&out.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut s = OwnServer { dir, bin, port, account, child: None };
        s.restart();
        s
    }

    fn restart(&mut self) {
        use std::os::unix::process::CommandExt;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let mut cmd = std::process::Command::new(self.bin.join("postgres"));
            cmd.arg("-D").arg(self.dir.path().join("data")).arg("-k").arg(self.dir.path());
            cmd.args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1"]);
            cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
            if let Some((uid, gid)) = self.account {
                cmd.uid(uid).gid(gid);
            }
            let mut child = cmd.spawn().unwrap();
            // Up when it answers; a server that exits at once found the
            // killed one's processes still there: again.
            let exited = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break Some(status);
                }
                if postgres::Client::connect(&self.url(), postgres::NoTls).is_ok() {
                    break None;
                }
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    break Some(child.wait().unwrap());
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            if exited.is_none() {
                self.child = Some(child);
                return;
            }
            assert!(std::time::Instant::now() < deadline, "postgres did not start");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    fn url(&self) -> String {
        format!("postgres://canopy@127.0.0.1:{}/postgres", self.port)
    }

    /// SIGKILL of the postmaster: nothing is flushed or shut down cleanly.
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

    if server_url("CANOPY_POSTGRES_URL").is_none() {
        return;
    }
    let Some(bin) = std::env::var_os("CANOPY_POSTGRES_BIN") else {
        assert!(std::env::var_os("CI").is_none(), "CANOPY_POSTGRES_BIN is not set (scripts/servers.sh sets it)");
        eprintln!("skipped: CANOPY_POSTGRES_BIN is not set");
        return;
    };
    let mut server = OwnServer::start(bin.into());
    let url = format!("{}?connect_timeout=1s", server.url());
    let b = Arc::new(PostgresBackend::open_url(&StoreUrl::parse(&url).unwrap()).unwrap());
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
                        assert_eq!(e.kind(), canopy_store::ErrorKind::Unavailable, "{e}");
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
    assert_eq!(down.kind(), canopy_store::ErrorKind::Unavailable, "{down}");
    assert!(down.to_string().contains(&format!("127.0.0.1:{}", server.port)), "{down}");
    server.restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < before + 20 {
        assert!(std::time::Instant::now() < deadline, "no commits after the restart");
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
