//! `canopy serve` from outside: the server and its clients as child
//! processes, HTTP spoken by curl. Remote subscribers (rejecting, slow,
//! dying), a remote provider, change streams and graceful shutdown.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_canopy");

struct Server {
    child: Child,
    url: String,
    store: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("lmdb:{}", dir.path().join("s").display());
    let mut child = Command::new(BIN)
        .args(["--store", &store, "serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("server said {line:?}")).to_string();
    Server { child, url, store, _dir: dir }
}

/// Runs curl; returns the status code and the body.
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl").args(["-s", "-w", "\n%{http_code}"]).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap_or(0), body.to_string())
}

fn put(url: &str, json: &str) -> (u16, String) {
    curl(&["-X", "PUT", "-H", "Content-Type: application/yang-data+json", url, "-d", json])
}

/// A client verb started against the server, once it says it is ready.
struct Client {
    child: Child,
    out: std::sync::mpsc::Receiver<String>,
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client(server: &Server, args: &[&str]) -> Client {
    let mut child = Command::new(BIN)
        .args(args)
        .args(["--server", &server.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut ready).unwrap();
    assert!(ready.starts_with("subscribed") || ready.starts_with("providing"), "client said {ready:?}");
    Client { out: lines_of(child.stdout.take().unwrap()), child }
}

/// The lines a child prints, as they come (reads never block a test for good).
fn lines_of(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

fn x_of(server: &Server) -> (u16, String) {
    curl(&[&format!("{}/restconf/data/m:a/x", server.url)])
}

#[test]
fn a_rejecting_subscriber_aborts_the_commit_with_its_message() {
    let s = serve();
    let check = "if grep -q forbidden; then echo 'x may not be forbidden' >&2; exit 1; fi";
    let sub = client(&s, &["subscribe", "/m:a", "--validate", check]);
    assert_eq!(put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"fine"}}"#).0, 201);
    let (code, body) = put(&format!("{}/restconf/data/m:a/x", s.url), r#"{"m:x":"forbidden"}"#);
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("x may not be forbidden"), "{body}");
    assert!(x_of(&s).1.contains("fine"), "nothing of the rejected commit is stored");
    // The subscriber saw validate then apply for the first commit, validate for the second.
    let mut phases = Vec::new();
    for _ in 0..3 {
        let l = sub.out.recv_timeout(Duration::from_secs(10)).expect("an event within 10 s");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        phases.push(v["phase"].as_str().unwrap().to_string());
        if v["phase"] == "apply" {
            assert!(v["revision"].as_u64().is_some(), "{l}");
        }
    }
    assert_eq!(phases, ["validate", "apply", "validate"]);
}

#[test]
fn a_slow_subscriber_aborts_the_commit_and_is_dropped() {
    let s = serve();
    let _sub = client(&s, &["subscribe", "/m:a", "--timeout-ms", "300", "--validate", "sleep 5"]);
    // The reply names the timeout: the commit did not wait for the command.
    let (code, body) = put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"1"}}"#);
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("did not answer within 300 ms"), "{body}");
    assert_eq!(x_of(&s).0, 404, "nothing stored");
    // Dropped: the next commit does not wait for it.
    assert_eq!(put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"2"}}"#).0, 201);
}

#[test]
fn a_dying_subscriber_aborts_the_commit() {
    let s = serve();
    // The validating command kills its own subscriber process mid-validate.
    let _sub = client(&s, &["subscribe", "/m:a", "--timeout-ms", "10000", "--validate", "kill -9 $PPID; sleep 5"]);
    // The reply names the disconnection, not the 10 s timeout.
    let (code, body) = put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"1"}}"#);
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("disconnected"), "{body}");
    assert_eq!(x_of(&s).0, 404, "nothing stored");
    assert_eq!(put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"2"}}"#).0, 201);
}

#[test]
fn a_remote_provider_answers_operational_reads() {
    let s = serve();
    let doc = r#"echo '{"m:state":{"up":"yes","checked":"'"$1"'"}}'"#;
    let _prov = client(&s, &["provide", "/m:state", "--cmd", doc]);
    let (code, body) = curl(&[&format!("{}/restconf/ds/ietf-datastores:operational/m:state", s.url)]);
    assert_eq!(code, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["m:state"]["up"], "yes", "{body}");
    assert_eq!(v["m:state"]["checked"], "/m:state", "the provider is told the path read: {body}");
    // Running does not see state.
    assert_eq!(curl(&[&format!("{}/restconf/ds/ietf-datastores:running/m:state", s.url)]).0, 404);
}

#[test]
fn watch_prints_each_commit_and_resumes() {
    let s = serve();
    assert_eq!(put(&format!("{}/restconf/data/m:a", s.url), r#"{"m:a":{"x":"1"}}"#).0, 201);
    // From revision 0 (the new store's): the commit above is replayed.
    let mut w = Command::new(BIN)
        .args(["watch", "/m:a", "--server", &s.url, "--since", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(w.stdout.take().unwrap());
    let first = lines.recv_timeout(Duration::from_secs(10)).expect("an event within 10 s");
    assert!(first.contains("\"operation\":\"create\"") && first.contains("\"target\":\"/m:a\""), "{first}");
    assert_eq!(put(&format!("{}/restconf/data/m:a/x", s.url), r#"{"m:x":"2"}"#).0, 204);
    let second = lines.recv_timeout(Duration::from_secs(10)).expect("an event within 10 s");
    assert!(second.contains("\"operation\":\"replace\"") && second.contains("/m:a/x"), "{second}");
    let _ = w.kill();
    let _ = w.wait();
}

#[test]
fn sigterm_stops_the_server_and_keeps_every_acknowledged_commit() {
    let s = serve();
    for i in 0..20 {
        assert_eq!(
            put(&format!("{}/restconf/data/m:a/x", s.url), &format!(r#"{{"m:x":"{i}"}}"#)).0,
            if i == 0 { 201 } else { 204 }
        );
    }
    let pid = s.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let mut s = s;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "the server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    let out = Command::new(BIN).args(["--store", &s.store, "get", "/m:a/x"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"19\""), "{}", String::from_utf8_lossy(&out.stdout));
}
