//! `canopy serve` with and without authentication and TLS, from outside: each
//! test starts the server as a child process on a free loopback port and
//! speaks HTTP to it with curl. The users files are made with `canopy user`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_canopy");
const JSON: &str = "content-type: application/yang-data+json";
const DATASTORES: [&str; 4] = ["running", "candidate", "startup", "operational"];

/// An HTTP reply as curl saw it.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// A RESTCONF `access-denied` error with this status.
    fn denied(&self, status: u16) {
        assert_eq!(self.status, status, "{self:?}");
        assert!(self.body.contains("\"error-tag\": \"access-denied\""), "{self:?}");
        assert!(self.body.contains("ietf-restconf:errors"), "{self:?}");
        if status == 401 {
            assert_eq!(self.header("www-authenticate"), Some("Basic realm=\"canopy\", Bearer"), "{self:?}");
        }
    }
}

/// Runs curl with `args` (plus the URL last); a reply cut by `--max-time`
/// (a change stream) still counts.
fn curl(args: &[&str], url: &str) -> Reply {
    let out = Command::new("curl")
        .args(["-sS", "-i", "--max-time", "30", "-H", "Expect:"])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .expect("curl is installed (scripts/setup.sh)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = headers.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        panic!("no HTTP reply from {url} (curl {args:?}): {}", String::from_utf8_lossy(&out.stderr))
    });
    Reply { status, headers: headers.to_string(), body: body.to_string() }
}

/// A temporary directory for users files, certificates and the server's stderr.
struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// `canopy ARGS` with `stdin`; its exit code, stdout and stderr. It must
    /// end within a minute.
    fn canopy(&self, args: &[&str], stdin: &str) -> (i32, String, String) {
        let (out, err) = (self.path("cmd.out"), self.path("cmd.err"));
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(self.0.path())
            .env_remove("CANOPY_STORE")
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("canopy {args:?} did not end");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (out, err) = (std::fs::read_to_string(out).unwrap(), std::fs::read_to_string(err).unwrap());
        assert!(!err.contains("panicked"), "{err}");
        (status.code().expect("exited, not killed"), out, err)
    }

    /// `canopy user add FILE NAME --access ACCESS` with `password`.
    fn add_user(&self, name: &str, password: &str, access: &str) {
        let (code, _, err) = self.canopy(&["user", "add", "users", name, "--access", access], &format!("{password}\n"));
        assert_eq!(code, 0, "{err}");
    }

    /// `canopy user token FILE NAME --access ACCESS`: the token.
    fn add_token(&self, name: &str, access: &str) -> String {
        let (code, out, err) = self.canopy(&["user", "token", "users", name, "--access", access], "");
        assert_eq!(code, 0, "{err}");
        out.trim().to_string()
    }

    /// A refused `canopy serve ARGS`: exit 1, one line on stderr holding every needle.
    fn refused(&self, args: &[&str], needles: &[&str]) {
        let mut all = vec!["--store", "memory:refused", "serve"];
        all.extend_from_slice(args);
        let (code, out, err) = self.canopy(&all, "");
        assert_eq!(code, 1, "stdout {out} stderr {err}");
        assert_eq!(out, "", "never listening");
        assert!(err.starts_with("canopy: ") && err.lines().count() == 1, "{err}");
        for n in needles {
            assert!(err.contains(n), "`{n}` not in {err}");
        }
    }
}

/// A running `canopy serve`, killed when dropped.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT` (or https).
    base: String,
}

impl Server {
    /// `canopy --store memory:… serve --listen 127.0.0.1:0 ARGS`, once it says
    /// it listens.
    fn start(dir: &Dir, args: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .args(["--store", "memory:auth", "serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .current_dir(dir.0.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.path("server.err")).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
        let Some(base) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("server did not start: {line:?} {}", std::fs::read_to_string(dir.path("server.err")).unwrap());
        };
        Server { base: base.to_string(), child }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server with the users every test below uses:
/// `admin` may do anything, `reader` read everything, `cand` write only the
/// candidate and read running, `run` read and write running only; the token
/// `bot` reads everything.
struct Fixture {
    server: Server,
    bot: String,
    /// Holds the users file; removed after the server stops.
    _dir: Dir,
}

const ADMIN: [&str; 2] = ["-u", "admin:admin-pw"];
const READER: [&str; 2] = ["-u", "reader:reader-pw"];

impl Fixture {
    fn new() -> Fixture {
        let dir = Dir::new();
        dir.add_user("admin", "admin-pw", "*=rw");
        dir.add_user("reader", "reader-pw", "*=ro");
        dir.add_user("cand", "cand-pw", "candidate=rw,running=ro");
        dir.add_user("run", "run-pw", "running=rw");
        let bot = dir.add_token("bot", "*=ro");
        let server = Server::start(&dir, &["--users", &dir.arg("users")]);
        Fixture { server, bot, _dir: dir }
    }

    /// `curl ARGS` on `path`.
    fn curl(&self, args: &[&str], path: &str) -> Reply {
        curl(args, &self.server.url(path))
    }

    /// What the admin reads of datastore `ds`.
    fn read(&self, ds: &str) -> Reply {
        let r = self.curl(&ADMIN, &format!("/restconf/ds/ietf-datastores:{ds}"));
        assert_eq!(r.status, 200, "{r:?}");
        r
    }

    /// `{"m:a":{"v":V}}` put at /m:a of `ds` by `who`.
    fn put(&self, who: &[&str], ds: &str, v: u32) -> Reply {
        let body = format!("{{\"m:a\":{{\"v\":{v}}}}}");
        let mut args = who.to_vec();
        args.extend_from_slice(&["-X", "PUT", "-H", JSON, "-d", &body]);
        self.curl(&args, &format!("/restconf/ds/ietf-datastores:{ds}/m:a"))
    }
}

#[test]
fn without_users_no_credentials_are_needed() {
    let dir = Dir::new();
    let server = Server::start(&dir, &[]);
    assert!(server.base.starts_with("http://127.0.0.1:"), "{}", server.base);
    let r = curl(&["-X", "PUT", "-H", JSON, "-d", r#"{"m:a":{"v":1}}"#], &server.url("/restconf/data/m:a"));
    assert_eq!(r.status, 201, "{r:?}");
    let r = curl(&[], &server.url("/restconf/data/m:a"));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("\"v\": 1"), "{r:?}");
    assert_eq!(r.header("www-authenticate"), None);
    // Credentials nobody asked for are ignored.
    assert_eq!(curl(&["-u", "x:y"], &server.url("/restconf/data/m:a")).status, 200);
}

#[test]
fn missing_or_wrong_credentials_get_401() {
    let f = Fixture::new();
    let bearer = format!("Authorization: Bearer {}", f.bot);
    let wrong_token = format!("Authorization: Bearer {}0", f.bot);
    for path in ["/restconf/data", "/restconf/data/m:a", "/restconf/ds/ietf-datastores:running", "/nothing"] {
        f.curl(&[], path).denied(401);
        f.curl(&["-u", "admin:wrong"], path).denied(401);
        f.curl(&["-u", "admin:"], path).denied(401);
        f.curl(&["-u", "nobody:admin-pw"], path).denied(401);
        f.curl(&["-H", &wrong_token], path).denied(401);
        f.curl(&["-H", "Authorization: Bearer"], path).denied(401);
        f.curl(&["-H", "Authorization: Basic !!"], path).denied(401);
        f.curl(&["-H", "Authorization: Digest username=\"admin\""], path).denied(401);
        // A token is not a password and a password not a token.
        f.curl(&["-u", &format!("bot:{}", f.bot)], path).denied(401);
        f.curl(&["-H", "Authorization: Bearer admin-pw"], path).denied(401);
    }
    // HEAD and OPTIONS too (without a body).
    assert_eq!(f.curl(&["-I"], "/restconf/data").status, 401);
    f.curl(&["-X", "OPTIONS"], "/restconf/data").denied(401);
    // Discovery stays open.
    for open in ["/.well-known/host-meta", "/restconf", "/restconf/yang-library-version"] {
        assert_eq!(f.curl(&[], open).status, 200, "{open}");
    }
    // The right ones are let in.
    assert_eq!(f.curl(&ADMIN, "/restconf/data").status, 200);
    assert_eq!(f.curl(&["-H", &bearer], "/restconf/data").status, 200);
}

#[test]
fn basic_and_bearer_credentials_are_taken() {
    let f = Fixture::new();
    assert_eq!(f.put(&ADMIN, "running", 1).status, 201);
    // Basic, many requests on one connection: argon2 is paid once (the
    // server remembers the verified password), so this takes far less than
    // 40 hashes.
    let urls: Vec<String> = (0..40).map(|_| f.server.url("/restconf/data/m:a")).collect();
    let started = Instant::now();
    let out = Command::new("curl").args(["-sS", "-u", "reader:reader-pw"]).args(&urls).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\"v\": 1").count(), 40, "{text}");
    let elapsed = started.elapsed();
    // The bearer token.
    let bearer = format!("Authorization: Bearer {}", f.bot);
    let r = f.curl(&["-H", &bearer], "/restconf/data/m:a");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("\"v\": 1"), "{r:?}");
    let r = f.curl(&["-H", &format!("authorization: bearer   {}", f.bot)], "/restconf/data/m:a");
    assert_eq!(r.status, 200, "schemes are case-insensitive: {r:?}");
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

#[test]
fn a_read_only_user_cannot_write_and_nothing_is_stored() {
    let f = Fixture::new();
    assert_eq!(f.put(&ADMIN, "running", 1).status, 201);
    let before = f.read("running").body;
    let bearer = format!("Authorization: Bearer {}", f.bot);
    for who in [&READER[..], &["-H", &bearer]] {
        f.put(who, "running", 2).denied(403);
        for (method, body) in
            [("PUT", r#"{"m:a":{"v":3}}"#), ("POST", r#"{"m:b":{"v":3}}"#), ("PATCH", r#"{"m:a":{"v":3}}"#)]
        {
            let mut args = who.to_vec();
            args.extend_from_slice(&["-X", method, "-H", JSON, "-d", body]);
            f.curl(&args, "/restconf/data").denied(403);
            f.curl(&args, "/restconf/data/m:a").denied(403);
        }
        let mut args = who.to_vec();
        args.extend_from_slice(&["-X", "DELETE"]);
        let r = f.curl(&args, "/restconf/data/m:a");
        r.denied(403);
        assert!(r.body.contains("may not write datastore running"), "{r:?}");
        // But it reads.
        assert_eq!(f.curl(who, "/restconf/data/m:a").status, 200);
    }
    assert_eq!(f.read("running").body, before);
    assert!(before.contains("\"v\": 1"), "{before}");
}

#[test]
fn access_is_per_datastore() {
    let f = Fixture::new();
    let cand = ["-u", "cand:cand-pw"];
    let run = ["-u", "run:run-pw"];
    // cand: candidate rw, running ro, nothing else.
    assert_eq!(f.put(&cand, "candidate", 1).status, 201);
    f.put(&cand, "running", 1).denied(403);
    f.put(&cand, "startup", 1).denied(403);
    assert_eq!(f.curl(&cand, "/restconf/ds/ietf-datastores:running").status, 200);
    assert_eq!(f.curl(&cand, "/restconf/ds/ietf-datastores:candidate/m:a").status, 200);
    f.curl(&cand, "/restconf/ds/ietf-datastores:startup").denied(403);
    // /restconf/data reads running and operational: cand has no operational.
    let r = f.curl(&cand, "/restconf/data");
    r.denied(403);
    assert!(r.body.contains("may not read datastore operational"), "{r:?}");
    // run: running rw only; /restconf/data writes go to running.
    let r = f.curl(&[&run[..], &["-X", "PUT", "-H", JSON, "-d", r#"{"m:a":{"v":7}}"#]].concat(), "/restconf/data/m:a");
    assert_eq!(r.status, 201, "{r:?}");
    f.put(&run, "candidate", 1).denied(403);
    f.curl(&run, "/restconf/data").denied(403);
    f.curl(&run, "/restconf/ds/ietf-datastores:operational").denied(403);
    assert!(f.curl(&run, "/restconf/ds/ietf-datastores:running/m:a").body.contains("\"v\": 7"));
    // Change streams need read access to their datastore.
    f.curl(&run, "/restconf/streams/startup").denied(403);
    f.curl(&run, "/restconf/streams/ietf-datastores:candidate").denied(403);
    f.curl(&[], "/restconf/streams/running").denied(401);
    let r = f.curl(&[&run[..], &["--max-time", "2"]].concat(), "/restconf/streams/running");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{r:?}");
    // What was refused was not stored.
    assert!(!f.read("startup").body.contains("m:a"));
    assert!(f.read("candidate").body.contains("\"v\": 1"));
}

/// Every writing method on every data resource, with every kind of missing
/// or bad credentials, is refused; afterwards every datastore reads as before.
#[test]
fn no_write_succeeds_without_credentials() {
    let f = Fixture::new();
    for (ds, v) in [("running", 1), ("candidate", 2), ("startup", 3)] {
        let r = f.put(&ADMIN, ds, v);
        assert!(r.status == 201 || r.status == 204, "{ds}: {r:?}");
    }
    let before: Vec<String> = DATASTORES.iter().map(|ds| f.read(ds).body).collect();
    let mut resources = vec!["/restconf/data".to_string(), "/restconf/data/m:a".into(), "/restconf/data/m:a/v".into()];
    for ds in DATASTORES {
        resources.push(format!("/restconf/ds/ietf-datastores:{ds}"));
        resources.push(format!("/restconf/ds/ietf-datastores:{ds}/m:a"));
        resources.push(format!("/restconf/ds/ietf-datastores%3A{ds}/m:a"));
    }
    let wrong_token = format!("Authorization: Bearer {}", "0".repeat(64));
    let nobody: [&[&str]; 4] = [&[], &["-u", "admin:wrong"], &["-u", "nobody:x"], &["-H", &wrong_token]];
    let yang_patch = r#"{"ietf-yang-patch:yang-patch":{"patch-id":"p","edit":[{"edit-id":"1","operation":"replace","target":"/m:a","value":{"m:a":{"v":9}}}]}}"#;
    let bodies = [
        ("PUT", JSON, r#"{"m:a":{"v":9}}"#),
        ("POST", JSON, r#"{"m:z":{"v":9}}"#),
        ("PATCH", JSON, r#"{"m:a":{"v":9}}"#),
        ("PATCH", "content-type: application/yang-patch+json", yang_patch),
        ("DELETE", JSON, ""),
        ("FROB", JSON, "{}"),
    ];
    let mut tried = 0;
    for resource in &resources {
        for (method, media, body) in bodies {
            for (i, who) in nobody.iter().enumerate() {
                // The wrong password costs a hash: once per resource and method is enough.
                if i == 1 && method != "PUT" {
                    continue;
                }
                let mut args = who.to_vec();
                args.extend_from_slice(&["-X", method, "-H", media]);
                if !body.is_empty() {
                    args.extend_from_slice(&["-d", body]);
                }
                f.curl(&args, resource).denied(401);
                tried += 1;
            }
            // Nor with credentials that may only read.
            let mut args = READER.to_vec();
            args.extend_from_slice(&["-X", method, "-H", media, "-d", body]);
            let r = f.curl(&args, resource);
            r.denied(403);
            tried += 1;
        }
    }
    assert!(tried > 300, "{tried}");
    let after: Vec<String> = DATASTORES.iter().map(|ds| f.read(ds).body).collect();
    assert_eq!(before, after);
}

#[test]
fn a_malformed_users_file_is_refused_at_start_with_its_line() {
    let dir = Dir::new();
    dir.add_user("alice", "pw", "*=rw");
    let mut text = std::fs::read_to_string(dir.path("users")).unwrap();
    text.push_str("# a comment\nuser bob $argon2id$v=19$nonsense *=rw\n");
    std::fs::write(dir.path("users"), &text).unwrap();
    let users = dir.arg("users");
    dir.refused(&["--users", &users], &[&users, "line 3", "bob", "password hash"]);
    std::fs::write(dir.path("users"), "user\ttoo few\n").unwrap();
    dir.refused(&["--users", &users], &["line 1", "expected 4 fields"]);
    let alice = text.lines().next().unwrap().replace("*=rw", "running=rw,operational=write");
    std::fs::write(dir.path("users"), format!("\n{alice}\n")).unwrap();
    dir.refused(&["--users", &users], &["line 2", "mode `write`"]);
    std::fs::write(dir.path("users"), [0xff, 0xfe]).unwrap();
    dir.refused(&["--users", &users], &["line 1", "not UTF-8"]);
    dir.refused(&["--users", "absent"], &["users file absent", "cannot read it"]);
}

#[test]
fn user_verbs_manage_the_file() {
    let dir = Dir::new();
    dir.add_user("alice", "pw", "*=ro,running=rw");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path("users")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let token = dir.add_token("bot", "operational=ro");
    assert_eq!(token.len(), 64, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    let text = std::fs::read_to_string(dir.path("users")).unwrap();
    assert!(!text.contains(&token), "only the token's hash is stored");
    assert!(text.contains("user alice $argon2id$"), "{text}");
    assert!(text.contains(" running=rw,candidate=ro,startup=ro,operational=ro\n"), "{text}");
    assert!(text.contains("token bot sha256:"), "{text}");
    // A new token replaces the old one.
    let again = dir.add_token("bot", "operational=ro");
    assert_ne!(again, token);
    assert_eq!(std::fs::read_to_string(dir.path("users")).unwrap().matches("token bot").count(), 1);
    let (code, _, err) = dir.canopy(&["user", "remove", "users", "bot"], "");
    assert_eq!(code, 0, "{err}");
    assert!(!std::fs::read_to_string(dir.path("users")).unwrap().contains("bot"));
    let refusals: [(&[&str], &str, &str); 6] = [
        (&["user", "remove", "users", "bot"], "", "no user or token `bot`"),
        (&["user", "add", "users", "eve", "--access", "running=rw"], "", "no password"),
        (&["user", "add", "users", "eve", "--access", "runing=rw"], "pw\n", "no datastore `runing`"),
        (&["user", "add", "users", "e:ve", "--access", "*=ro"], "pw\n", "name `e:ve`"),
        (&["user", "token", "users", "alice", "--access", "*=ro"], "", "`alice` is a user"),
        (&["user", "add", "users", "eve"], "pw\n", "--access"),
    ];
    for (args, stdin, needle) in refusals {
        let (code, out, err) = dir.canopy(args, stdin);
        assert_ne!(code, 0, "{args:?}");
        assert_eq!(out, "");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // The password is the first line, with or without its newline.
    let (code, _, err) = dir.canopy(&["user", "add", "users", "carol", "--access", "*=ro"], "s3cret\r\nignored\n");
    assert_eq!(code, 0, "{err}");
    let server = Server::start(&dir, &["--users", &dir.arg("users")]);
    assert_eq!(curl(&["-u", "carol:s3cret"], &server.url("/restconf/data")).status, 200);
    assert_eq!(curl(&["-u", "alice:pw"], &server.url("/restconf/data")).status, 200);
}

/// A self-signed certificate for localhost and 127.0.0.1, and its key.
fn certificate(dir: &Dir, name: &str) -> (String, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let (cert, key) = (dir.path(&format!("{name}.pem")), dir.path(&format!("{name}.key")));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    (cert.to_str().unwrap().into(), key.to_str().unwrap().into())
}

#[test]
fn tls_with_a_self_signed_certificate() {
    let dir = Dir::new();
    dir.add_user("alice", "pw", "*=rw");
    let (cert, key) = certificate(&dir, "server");
    let users = dir.arg("users");
    let server = Server::start(&dir, &["--users", &users, "--tls-cert", &cert, "--tls-key", &key]);
    assert!(server.base.starts_with("https://127.0.0.1:"), "{}", server.base);
    let url = server.url("/restconf/data/m:a");
    let put = curl(&["--cacert", &cert, "-u", "alice:pw", "-X", "PUT", "-H", JSON, "-d", r#"{"m:a":{"v":5}}"#], &url);
    assert_eq!(put.status, 201, "{put:?}");
    let r = curl(&["--cacert", &cert, "-u", "alice:pw"], &url);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("\"v\": 5"), "{r:?}");
    curl(&["--cacert", &cert], &url).denied(401);
    // By name too, and with HTTP/1.1 whatever the client offers.
    let by_name = url.replace("127.0.0.1", "localhost");
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let resolve = format!("localhost:{port}:127.0.0.1");
    let r = curl(&["--cacert", &cert, "--resolve", &resolve, "--http2", "-u", "alice:pw"], &by_name);
    assert_eq!(r.status, 200, "{r:?}");
    // A client that does not trust the certificate gets nothing; plain HTTP neither.
    let out = Command::new("curl").args(["-sS", "--max-time", "10", "-u", "alice:pw"]).arg(&url).output().unwrap();
    assert!(!out.status.success(), "an untrusted certificate is refused by curl");
    let plain = url.replace("https://", "http://");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(&plain)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).starts_with('2'), "plain HTTP is not served");
    // The server still serves after those.
    assert_eq!(curl(&["--cacert", &cert, "-u", "alice:pw"], &url).status, 200);
}

#[test]
fn bad_certificate_files_are_refused_by_name() {
    let dir = Dir::new();
    let (cert, key) = certificate(&dir, "a");
    let (_, other_key) = certificate(&dir, "b");
    let junk = dir.arg("junk.pem");
    std::fs::write(&junk, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n").unwrap();
    let empty = dir.arg("empty.pem");
    std::fs::write(&empty, "").unwrap();
    dir.refused(&["--tls-cert", &junk, "--tls-key", &key], &["certificate file", &junk, "base64"]);
    dir.refused(&["--tls-cert", &empty, "--tls-key", &key], &["certificate file", &empty, "no PEM certificate"]);
    dir.refused(&["--tls-cert", &cert, "--tls-key", &cert], &["private key file", &cert, "no PEM private key"]);
    dir.refused(&["--tls-cert", "nope.pem", "--tls-key", &key], &["certificate file nope.pem", "cannot read"]);
    dir.refused(&["--tls-cert", &cert, "--tls-key", &other_key], &[&cert, &other_key, "not the certificate's"]);
    // One without the other is a usage error.
    let (code, _, err) = dir.canopy(&["--store", "memory:x", "serve", "--tls-cert", &cert], "");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tls-key"), "{err}");
}

#[test]
fn a_non_loopback_address_needs_tls_and_users() {
    let dir = Dir::new();
    dir.add_user("alice", "pw", "*=rw");
    let (cert, key) = certificate(&dir, "server");
    let users = dir.arg("users");
    let tls = ["--tls-cert", cert.as_str(), "--tls-key", key.as_str()];
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let base = ["--listen", listen];
        dir.refused(&base, &["refusing to listen", "TLS", "--users"]);
        dir.refused(&[&base[..], &["--users", &users]].concat(), &["refusing to listen"]);
        dir.refused(&[&base[..], &tls[..]].concat(), &["refusing to listen"]);
    }
    // With both it listens (reached here through loopback).
    let mut args = vec!["--store", "memory:wide", "serve", "--listen", "0.0.0.0:0", "--users", &users];
    args.extend_from_slice(&tls);
    let mut child = Command::new(BIN)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let server = Server { child, base: String::new() };
    let port = line.trim().rsplit(':').next().unwrap().to_string();
    assert!(line.starts_with("listening on https://0.0.0.0:"), "{line}");
    let r = curl(&["--cacert", &cert, "-u", "alice:pw"], &format!("https://127.0.0.1:{port}/restconf/data"));
    assert_eq!(r.status, 200, "{r:?}");
    drop(server);
}

#[test]
fn the_server_stops_cleanly_with_auth_and_tls() {
    let dir = Dir::new();
    dir.add_user("alice", "pw", "*=rw");
    let (cert, key) = certificate(&dir, "server");
    let mut server = Server::start(&dir, &["--users", &dir.arg("users"), "--tls-cert", &cert, "--tls-key", &key]);
    assert_eq!(curl(&["--cacert", &cert, "-u", "alice:pw"], &server.url("/restconf/data")).status, 200);
    let pid = server.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let start = Instant::now();
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "SIGTERM did not stop the server");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `/canopy/ws` with users: a registration needs rights on its datastore.
/// Watching needs `ro`, a validating subscriber `rw` (it can veto and hold up
/// commits), a provider `rw` on operational (it makes what operational shows).
#[test]
fn remote_subscribers_and_providers_need_rights_on_their_datastore() {
    use canopy_server::client::{Auth, ClientError, Remote, RemoteEvent};
    let f = Fixture::new();
    let base = f.server.base.clone();
    let login = |user: &str| Auth::Basic { user: user.into(), password: format!("{user}-pw") };
    let refused = |r: Result<u64, ClientError>, needle: &str| match r {
        Err(ClientError::Refused(m)) => assert!(m.contains(needle), "`{needle}` not in {m}"),
        other => panic!("expected a refusal naming `{needle}`, got {other:?}"),
    };
    match Remote::connect(&base, None) {
        Err(ClientError::Refused(m)) => assert!(m.contains("401"), "{m}"),
        other => panic!("connected without credentials: {:?}", other.map(|_| ())),
    }
    let ok = |_: &RemoteEvent| Ok(());
    let two = Duration::from_secs(2);

    // reader: ro everywhere. It may watch, not validate or provide.
    let mut reader = Remote::connect(&base, Some(&login("reader"))).unwrap();
    refused(reader.subscribe("running", "/m:a", 0, two, ok), "reader may not write datastore running");
    refused(reader.provide("/m:state", two, |_| Ok("{}".into())), "reader may not write datastore operational");
    let (seen_tx, seen) = std::sync::mpsc::channel();
    reader
        .observe("running", "/m:a", move |ev: &RemoteEvent| {
            let _ = seen_tx.send((ev.phase.clone(), ev.revision));
            Ok(())
        })
        .unwrap();

    // run: rw on running only. It may validate running; it may not watch
    // the candidate (no read there) nor provide operational state.
    let mut run = Remote::connect(&base, Some(&login("run"))).unwrap();
    refused(run.observe("candidate", "/m:a", ok), "run may not read datastore candidate");
    refused(run.subscribe("candidate", "/m:a", 0, two, ok), "run may not write datastore candidate");
    refused(run.provide("/m:state", two, |_| Ok("{}".into())), "run may not write datastore operational");
    run.subscribe("running", "/m:a", 0, Duration::from_secs(10), |ev: &RemoteEvent| {
        match ev.phase == "validate" && ev.patch.to_string().contains("13") {
            true => Err("13 is unlucky".to_string()),
            false => Ok(()),
        }
    })
    .unwrap();

    // cand: rw on the candidate, ro on running: validates the candidate,
    // watches running, provides nothing.
    let mut cand = Remote::connect(&base, Some(&login("cand"))).unwrap();
    cand.subscribe("candidate", "/m:a", 0, two, ok).unwrap();
    cand.observe("running", "/m:a", ok).unwrap();
    refused(cand.subscribe("running", "/m:a", 0, two, ok), "cand may not write datastore running");
    refused(cand.provide("/m:state", two, |_| Ok("{}".into())), "cand may not write datastore operational");

    // The token `bot` (*=ro) watches too; admin provides.
    let mut bot = Remote::connect(&base, Some(&Auth::Bearer(f.bot.clone()))).unwrap();
    bot.observe("operational", "/", ok).unwrap();
    let mut admin = Remote::connect(&base, Some(&login("admin"))).unwrap();
    admin.provide("/m:state", two, |_| Ok(r#"{"m:state":{"up":"yes"}}"#.into())).unwrap();

    for mut remote in [reader, run, cand, bot, admin] {
        std::thread::spawn(move || remote.run());
    }
    // The validating subscriber with rights takes part; the watcher only sees.
    let r = f.put(&ADMIN, "running", 1);
    assert_eq!(r.status, 201, "{r:?}");
    let r = f.put(&ADMIN, "running", 13);
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.body.contains("13 is unlucky"), "{r:?}");
    let r = f.curl(&READER, "/restconf/ds/ietf-datastores:operational/m:state");
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.body.contains("yes"), "{r:?}");
    let (phase, revision) = seen.recv_timeout(Duration::from_secs(10)).expect("the watcher sees the commit");
    assert_eq!(phase, "apply");
    assert!(revision.is_some());
    while let Ok((phase, _)) = seen.recv_timeout(Duration::from_millis(500)) {
        assert_ne!(phase, "validate", "a watcher is never asked to validate");
    }
}
