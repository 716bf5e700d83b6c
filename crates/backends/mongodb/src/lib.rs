//! canopy's MongoDB backend: `mongodb://HOST:PORT/DB?directConnection=true`,
//! over the MongoDB wire protocol (`OP_MSG` commands, written here on a
//! plain TCP stream; documents with the `bson` crate).
//!
//! * Layout, in database `DB` (one store per database): collection `kv`, one
//!   document per key, `{_id: hex of the key, v: the value}`. BSON binary
//!   data sorts by length first, so the key is the lowercase hex of its bytes:
//!   strings compare bytewise, and hex keeps byte order (and a key's prefix
//!   is its hex's prefix), so a subtree is one `_id` range. Values over 8 MiB
//!   (a document holds at most 16 MiB) keep their first 8 MiB in the document
//!   with `more: n`, the rest in collection `kv_parts` under `HEX:i`.
//!   Collection `meta` holds `{_id: "revision", r: the revision}`.
//! * Every snapshot and every commit is a multi-document transaction with
//!   read concern `snapshot` on a logical session of its pooled connection;
//!   the first statement reads the revision. A commit updates the revision
//!   document conditionally on the revision read (no match, or a write
//!   conflict with another transaction: `Conflict`), writes the batch
//!   (updates with `upsert`, and deletes by key: a range's keys are read
//!   first; in commands of up to 250 statements), and commits.
//! * A client killed mid-transaction leaves it open on the server (closing a
//!   connection does not end its session). So each connection records its
//!   session and the server's id of the connection in collection `writers`
//!   before its first transaction, and opening or closing the store, or a
//!   commit that conflicts, ends the recorded sessions whose connection is
//!   gone.
//! * Leases (`lease=10s`): a document per lease in collection `leases`,
//!   whose expiry, by the server's clock, a thread of the holder renews (see
//!   the `lease` module). Commits are announced by a change stream of the
//!   revision document (see the `listen` module).
//! * `sync=commit`: the commit's write concern is `{w: 1, j: true}`: the
//!   server acknowledges it once it is in its journal. `sync=off`: `j: false`.
//! * Authentication and TLS are not built in yet; a single server
//!   (`directConnection=true`), no replica-set discovery.

mod lease;
mod listen;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bson::spec::BinarySubtype;
use bson::{doc, Binary, Bson, Document};
use canopy_store::backend::{prefix_end, Announcements, Backend, Batch, BatchOp, Snapshot, SyncMode, Visit, WriteView};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::StoreUrl;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// Per command of the reap when a store is closed.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_IDLE: usize = 8;
const FIRST_PAGE: i64 = 64;
const MAX_PAGE: i64 = 4096;
/// Statements per write command. SecantusDB counts a transaction idle from
/// the start of its last command and aborts it after 60 s, and runs one
/// command at a time: under a loaded server a command of 10,000 statements
/// took that long, and commands of 1,000 up to 20 s each while another
/// test's waited. 20,000 upserts in commands of 250 took no longer than in
/// commands of 1,000.
const CHUNK: usize = 250;
/// Keys per batch when a commit lists the keys of a range it deletes.
const ID_PAGE: i64 = 50_000;
/// Bytes of a value kept in its document; the rest goes to `kv_parts`.
const PART: usize = 8 << 20;
const OP_MSG: i32 = 2013;
/// The layout's version, in `meta` as `{_id: "format", v: 2}` (version 1
/// had no `k` field).
const FORMAT: i32 = 2;

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

fn binary(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary { subtype: BinarySubtype::Generic, bytes: bytes.to_vec() })
}

/// Why a command failed: on the way (the connection is then unusable), or
/// the server's answer.
enum Failure {
    Io(std::io::Error),
    Server { code: i32, name: String, message: String, transient: bool },
    Protocol(String),
}

/// The error a failed command gives, naming the server (`place`) and what
/// was being done.
fn failure(place: &str, what: &str, f: Failure) -> StoreError {
    match f {
        Failure::Io(e) => {
            let why = match e.kind() {
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => "timed out",
                _ => "unreachable",
            };
            StoreError::new(ErrorKind::Unavailable, format!("{place}: {what}: {why} ({e})"))
        }
        Failure::Protocol(why) => StoreError::new(
            ErrorKind::Unavailable,
            format!("{place}: {what}: the server does not answer as MongoDB does: {why}"),
        ),
        Failure::Server { code, name, message, transient } => {
            let kind = match code {
                112 | 251 | 244 | 246 => ErrorKind::Conflict,
                _ if transient => ErrorKind::Conflict,
                13 | 18 | 91 | 189 | 10107 | 11600 | 11602 | 13435 => ErrorKind::Unavailable,
                14031 => ErrorKind::NoSpace,
                10334 | 17419 | 17420 => ErrorKind::Unsupported,
                _ => ErrorKind::Io,
            };
            let name = if name.is_empty() { String::new() } else { format!(" {name}") };
            StoreError::new(kind, format!("{place}: {what}: {message} (code {code}{name})"))
        }
    }
}

/// A connection with its logical session and transaction number.
struct Conn {
    stream: TcpStream,
    request: i32,
    lsid: Document,
    /// The session's id in hex: its record's `_id` in `writers`.
    session: String,
    txn: i64,
    /// The connection failed on the way: not pooled again.
    broken: bool,
    /// The server's id of the connection (`hello`'s `connectionId`).
    server_id: i64,
    /// Recorded in `writers` (done before its first transaction).
    registered: bool,
}

impl Conn {
    fn open(addr: &str, connect_timeout: Duration, io_timeout: Duration) -> std::io::Result<Conn> {
        let mut last = std::io::Error::new(std::io::ErrorKind::NotFound, "the host name resolves to no address");
        for sa in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&sa, connect_timeout) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(io_timeout))?;
                    stream.set_write_timeout(Some(io_timeout))?;
                    let id: [u8; 16] = rand::random();
                    let lsid = doc! { "id": Bson::Binary(Binary { subtype: BinarySubtype::Uuid, bytes: id.to_vec() }) };
                    let session = hex(&id);
                    return Ok(Conn {
                        stream,
                        request: 0,
                        lsid,
                        session,
                        txn: 0,
                        broken: false,
                        server_id: 0,
                        registered: false,
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends one command and returns the server's reply.
    fn command(&mut self, cmd: &Document) -> std::result::Result<Document, Failure> {
        let result = self.exchange(cmd);
        if matches!(result, Err(Failure::Io(_) | Failure::Protocol(_))) {
            self.broken = true;
        }
        let reply = result?;
        let ok = match reply.get("ok") {
            Some(Bson::Double(d)) => *d == 1.0,
            Some(Bson::Int32(n)) => *n == 1,
            Some(Bson::Int64(n)) => *n == 1,
            _ => false,
        };
        let labels = |d: &Document| {
            d.get_array("errorLabels")
                .map(|a| a.iter().any(|l| l.as_str() == Some("TransientTransactionError")))
                .unwrap_or(false)
        };
        if !ok {
            return Err(Failure::Server {
                code: reply.get_i32("code").unwrap_or(0),
                name: reply.get_str("codeName").unwrap_or("").to_string(),
                message: reply.get_str("errmsg").unwrap_or("the command failed").to_string(),
                transient: labels(&reply),
            });
        }
        if let Some(Bson::Document(e)) = reply.get_array("writeErrors").ok().and_then(|a| a.first()) {
            let code = e.get_i32("code").unwrap_or(0);
            return Err(Failure::Server {
                code,
                name: String::new(),
                message: e.get_str("errmsg").unwrap_or("write error").to_string(),
                transient: code == 112,
            });
        }
        if let Ok(e) = reply.get_document("writeConcernError") {
            return Err(Failure::Server {
                code: e.get_i32("code").unwrap_or(0),
                name: String::new(),
                message: e.get_str("errmsg").unwrap_or("write concern error").to_string(),
                transient: false,
            });
        }
        Ok(reply)
    }

    fn exchange(&mut self, cmd: &Document) -> std::result::Result<Document, Failure> {
        let body = cmd.to_vec().map_err(|e| Failure::Protocol(e.to_string()))?;
        self.request = self.request.wrapping_add(1);
        let len = 16 + 4 + 1 + body.len();
        let mut msg = Vec::with_capacity(len);
        msg.extend_from_slice(&(len as i32).to_le_bytes());
        msg.extend_from_slice(&self.request.to_le_bytes());
        msg.extend_from_slice(&0i32.to_le_bytes());
        msg.extend_from_slice(&OP_MSG.to_le_bytes());
        msg.extend_from_slice(&0u32.to_le_bytes());
        msg.push(0);
        msg.extend_from_slice(&body);
        self.stream.write_all(&msg).map_err(Failure::Io)?;
        let mut header = [0u8; 16];
        self.stream.read_exact(&mut header).map_err(Failure::Io)?;
        let field = |i: usize| i32::from_le_bytes(header[i..i + 4].try_into().expect("4 bytes"));
        let (len, responds_to, op) = (field(0), field(8), field(12));
        if op != OP_MSG || responds_to != self.request || !(21..=(64 << 20)).contains(&len) {
            return Err(Failure::Protocol(format!("an unexpected message (opcode {op}, length {len})")));
        }
        let mut rest = vec![0u8; len as usize - 16];
        self.stream.read_exact(&mut rest).map_err(Failure::Io)?;
        // Flag bits, then a body section (kind 0): one document.
        if rest[4] != 0 {
            return Err(Failure::Protocol("a reply without a body section".into()));
        }
        Document::from_reader(&rest[5..]).map_err(|e| Failure::Protocol(e.to_string()))
    }
}

/// A store in one database of a MongoDB server.
pub struct MongoBackend {
    addr: String,
    /// `mongodb server HOST:PORT (database D)`: what messages name.
    place: String,
    db: String,
    sync: SyncMode,
    connect_timeout: Duration,
    io_timeout: Duration,
    /// How long this process's lease outlives its last renewal (`lease`).
    lease_time: Duration,
    idle: Mutex<Vec<Conn>>,
}

impl MongoBackend {
    /// Opens the store a URL names:
    /// `mongodb://HOST:PORT/DB?directConnection=true&sync=commit|off`
    /// (`connect_timeout=5s`, `timeout=60s` per command, `lease=10s`: the
    /// time of this process's lease, see [`Backend::lease`]).
    ///
    /// # Errors
    /// `InvalidUrl` for a URL that does not parse, several hosts or unknown
    /// parameters; `Unsupported` for credentials or TLS; `Unavailable` when
    /// the server cannot be reached or does not speak the protocol.
    pub fn open_url(url: &StoreUrl) -> Result<MongoBackend> {
        url.check_params(&["sync", "directConnection", "connect_timeout", "timeout", "tls", "ssl", "lease"])?;
        let bad = |why: String| {
            StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {why}", url.redacted()))
        };
        if url.location.trim_start_matches('/').split('/').next().is_some_and(|a| a.contains(',')) {
            return Err(bad("several hosts: only one server is supported (directConnection=true)".into()));
        }
        let parsed = url::Url::parse(&format!("mongodb:{}", url.location)).map_err(|e| bad(e.to_string()))?;
        let host = match parsed.host_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err(bad("no server host (mongodb://HOST:PORT/DB)".into())),
        };
        let port = parsed.port().unwrap_or(27017);
        let db = match parsed.path().trim_start_matches('/') {
            "" => "canopy".to_string(),
            d => d.to_string(),
        };
        if db.len() > 63 || db.contains(['/', '\\', '.', '"', '$', ' ', '*', '<', '>', ':', '|', '?']) {
            return Err(bad(format!("`{db}` is not a MongoDB database name")));
        }
        if url.params.get("directConnection").is_some_and(|v| v != "true") {
            return Err(bad("only directConnection=true is supported".into()));
        }
        let place = format!("mongodb server {host}:{port} (database {db})");
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!("{place}: MongoDB authentication is not built into this backend yet"),
            ));
        }
        if ["tls", "ssl"].iter().any(|k| url.params.get(*k).is_some_and(|v| v == "true")) {
            return Err(StoreError::new(
                ErrorKind::Unsupported,
                format!("{place}: TLS is not built into this backend yet"),
            ));
        }
        let host_part = if host.contains(':') { format!("[{host}]") } else { host.clone() };
        let backend = MongoBackend {
            addr: format!("{host_part}:{port}"),
            place,
            db,
            sync: url.sync_mode()?,
            connect_timeout: url.duration("connect_timeout", CONNECT_TIMEOUT)?,
            io_timeout: url.duration("timeout", IO_TIMEOUT)?,
            lease_time: canopy_store::lease::lease_time(url)?,
            idle: Mutex::new(Vec::new()),
        };
        backend.init()?;
        Ok(backend)
    }

    fn fail(&self, what: &str, f: Failure) -> StoreError {
        failure(&self.place, what, f)
    }

    /// A new connection, its server id learnt from the handshake.
    fn connect(&self) -> Result<Conn> {
        self.connect_with(self.io_timeout)
    }

    /// A new connection whose commands time out after `io_timeout`.
    fn connect_with(&self, io_timeout: Duration) -> Result<Conn> {
        let mut conn = Conn::open(&self.addr, self.connect_timeout, io_timeout).map_err(|e| {
            let why = if e.kind() == std::io::ErrorKind::TimedOut { "timed out" } else { "unreachable" };
            StoreError::new(ErrorKind::Unavailable, format!("{}: {why} (cannot connect: {e})", self.place))
        })?;
        let hello = conn.command(&doc! {"hello": 1, "$db": "admin"}).map_err(|f| self.fail("handshake", f))?;
        conn.server_id = match hello.get("connectionId") {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => 0,
        };
        Ok(conn)
    }

    /// Records the connection's session in `writers` before its first
    /// transaction, a snapshot's as well as a commit's, so that once this
    /// connection is gone the next open of the store (or a writer finding
    /// the transaction in its way) can end it. A snapshot's transaction
    /// left open holds no document, but it pins the server's old versions
    /// of every document: SecantusDB then ran statements tens of times
    /// slower until it expired the transaction.
    fn register(&self, conn: &mut Conn) -> std::result::Result<(), Failure> {
        if conn.registered {
            return Ok(());
        }
        // A record per session, under the hex of its id.
        let w = doc! {"_id": &conn.session, "lsid": conn.lsid.clone(), "conn": conn.server_id};
        let cmd = doc! {
            "update": "writers", "updates": [{"q": {"_id": &conn.session}, "u": w, "upsert": true}],
            "$db": &self.db,
        };
        conn.command(&cmd)?;
        conn.registered = true;
        Ok(())
    }

    /// Ends the sessions of `writers` whose connection the server no longer
    /// has (a client killed, or ended, without ending its transaction):
    /// their transactions would otherwise hold what they wrote, and the
    /// server's old versions, until the server expires them
    /// (`transactionLifetimeLimitSeconds`). Returns how many it ended.
    fn reap(&self, conn: &mut Conn) -> Result<usize> {
        let find =
            doc! {"find": "writers", "filter": {}, "batchSize": 100_000i64, "singleBatch": true, "$db": &self.db};
        let reply = conn.command(&find).map_err(|f| self.fail("read the writers", f))?;
        let writers = first_batch(&reply);
        if writers.is_empty() {
            return Ok(0);
        }
        let ops = conn
            .command(&doc! {"currentOp": 1, "$all": true, "$db": "admin"})
            .map_err(|f| self.fail("list the server's connections", f))?;
        let live = connection_ids(&ops);
        let gone: Vec<&Document> = writers
            .iter()
            .filter(|w| match w.get("conn") {
                Some(Bson::Int64(n)) => !live.contains(n),
                Some(Bson::Int32(n)) => !live.contains(&i64::from(*n)),
                _ => false,
            })
            .collect();
        if gone.is_empty() {
            return Ok(0);
        }
        let sessions: Vec<Bson> =
            gone.iter().filter_map(|w| w.get_document("lsid").ok().cloned().map(Bson::Document)).collect();
        conn.command(&doc! {"killSessions": sessions, "$db": "admin"})
            .map_err(|f| self.fail("end abandoned sessions", f))?;
        let ids: Vec<Bson> = gone.iter().filter_map(|w| w.get("_id").cloned()).collect();
        let delete = doc! {"delete": "writers", "deletes": [{"q": {"_id": {"$in": ids}}, "limit": 0}], "$db": &self.db};
        conn.command(&delete).map_err(|f| self.fail("forget ended writers", f))?;
        Ok(gone.len())
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Conn>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn give_back(&self, conn: Conn) {
        if conn.broken {
            return;
        }
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// Runs one command outside any transaction (its `$db` added) on a pooled
    /// connection; a pooled connection the server closed is replaced once.
    fn outside(&self, what: &str, mut cmd: Document) -> Result<Document> {
        cmd.insert("$db", self.db.clone());
        let mut retried = false;
        loop {
            let pooled = self.idle().pop();
            let from_pool = pooled.is_some();
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            match conn.command(&cmd) {
                Ok(reply) => {
                    self.give_back(conn);
                    return Ok(reply);
                }
                Err(Failure::Io(_)) if from_pool && !retried => {
                    self.idle().clear();
                    retried = true;
                }
                Err(f) => {
                    self.give_back(conn);
                    return Err(self.fail(what, f));
                }
            }
        }
    }

    /// Checks the server speaks the protocol, creates the indexes on `k` and
    /// the format and revision documents when absent, and refuses a store of
    /// another layout.
    fn init(&self) -> Result<()> {
        let mut conn = self.connect()?;
        // Sessions of writers that are gone since the store was last opened.
        self.reap(&mut conn)?;
        for coll in ["kv", "kv_parts"] {
            let create = doc! {
                "createIndexes": coll, "indexes": [{"key": {"k": 1}, "name": "k"}], "$db": &self.db,
            };
            conn.command(&create).map_err(|f| self.fail("create the store's indexes", f))?;
        }
        let find = doc! {"find": "meta", "filter": {}, "$db": &self.db};
        let reply = conn.command(&find).map_err(|f| self.fail("read the store's format", f))?;
        let meta = first_batch(&reply);
        let format = meta.iter().find(|d| d.get_str("_id").ok() == Some("format"));
        let has_revision = meta.iter().any(|d| d.get_str("_id").ok() == Some("revision"));
        match format.map(|d| d.get("v")) {
            Some(Some(Bson::Int32(FORMAT))) => {}
            Some(v) => {
                return Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!("{}: the store's layout is version {v:?}, this canopy reads version {FORMAT}", self.place),
                ))
            }
            None if has_revision => {
                return Err(StoreError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "{}: the store has the first layout (no `k` field), which this canopy no longer reads; \
                         copy it with the canopy that made it (`canopy copy`) to another store",
                        self.place
                    ),
                ))
            }
            None => {
                // The format first: a revision document without one is a
                // store of the first layout.
                let concern = doc! {"w": 1, "j": self.sync == SyncMode::Commit};
                for d in [doc! {"_id": "format", "v": FORMAT}, doc! {"_id": "revision", "r": 0i64}] {
                    let insert =
                        doc! {"insert": "meta", "documents": [d], "$db": &self.db, "writeConcern": concern.clone()};
                    match conn.command(&insert) {
                        Ok(_) | Err(Failure::Server { code: 11000, .. }) => {}
                        Err(f) => return Err(self.fail("create the store", f)),
                    }
                }
            }
        }
        self.give_back(conn);
        Ok(())
    }

    /// A connection in a new transaction whose first statement read the
    /// revision (its session recorded first). A pooled connection the server
    /// closed is replaced (with the rest of the pool) once.
    fn begin(&self) -> Result<(Conn, u64)> {
        let mut retried = false;
        loop {
            let pooled = self.idle().pop();
            let from_pool = pooled.is_some();
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            if let Err(f) = self.register(&mut conn) {
                match f {
                    Failure::Io(_) if from_pool && !retried => {
                        self.idle().clear();
                        retried = true;
                        continue;
                    }
                    f => return Err(self.fail("record the session", f)),
                }
            }
            conn.txn += 1;
            let mut find = doc! {
                "find": "meta", "filter": {"_id": "revision"}, "limit": 1i64, "singleBatch": true,
                "startTransaction": true, "readConcern": {"level": "snapshot"},
            };
            self.in_txn(&conn, &mut find);
            match conn.command(&find) {
                Ok(reply) => {
                    let doc = first_batch(&reply).first().cloned();
                    let revision = match doc {
                        None => 0,
                        Some(d) => match d.get("r") {
                            Some(Bson::Int64(n)) if *n >= 0 => *n as u64,
                            Some(Bson::Int32(n)) if *n >= 0 => *n as u64,
                            _ => {
                                self.end(conn);
                                return Err(StoreError::corrupted(format!(
                                    "{}: the revision document is damaged",
                                    self.place
                                )));
                            }
                        },
                    };
                    return Ok((conn, revision));
                }
                Err(Failure::Io(_)) if from_pool && !retried => {
                    self.idle().clear();
                    retried = true;
                }
                Err(f) => return Err(self.fail("begin a transaction", f)),
            }
        }
    }

    /// The fields every statement of the connection's open transaction carries.
    fn in_txn(&self, conn: &Conn, cmd: &mut Document) {
        cmd.insert("lsid", conn.lsid.clone());
        cmd.insert("txnNumber", conn.txn);
        cmd.insert("autocommit", false);
        cmd.insert("$db", self.db.clone());
    }

    /// Aborts the connection's transaction and pools it again.
    fn end(&self, mut conn: Conn) {
        let mut abort = doc! {"abortTransaction": 1};
        self.in_txn(&conn, &mut abort);
        abort.insert("$db", "admin");
        if conn.command(&abort).is_ok() {
            self.give_back(conn);
        }
    }

    fn run(&self, conn: &mut Conn, what: &str, mut cmd: Document) -> Result<Document> {
        self.in_txn(conn, &mut cmd);
        conn.command(&cmd).map_err(|f| self.fail(what, f))
    }

    fn damaged(&self) -> StoreError {
        StoreError::corrupted(format!("{}: a document of kv is not canopy's", self.place))
    }

    /// Runs a `find` or `getMore` of the connection's transaction: the
    /// cursor to read on (0: none) and the batch.
    fn page(&self, conn: &mut Conn, what: &str, cmd: Document) -> Result<(i64, Vec<Document>)> {
        let reply = self.run(conn, what, cmd)?;
        let bad = |why: &str| StoreError::new(ErrorKind::Io, format!("{}: {what}: a reply without {why}", self.place));
        let c = reply.get_document("cursor").map_err(|_| bad("a cursor"))?;
        let docs = c.get_array("firstBatch").or_else(|_| c.get_array("nextBatch")).map_err(|_| bad("a batch"))?;
        let docs =
            docs.iter().map(|d| d.as_document().cloned().ok_or_else(|| self.damaged())).collect::<Result<_>>()?;
        Ok((c.get_i64("id").unwrap_or(0), docs))
    }

    /// The value of a document of `kv`, its parts read when it has some.
    fn value_of(&self, conn: &mut Conn, d: &Document) -> Result<Vec<u8>> {
        let damaged = || StoreError::corrupted(format!("{}: a document of kv is not canopy's", self.place));
        let mut v = d.get_binary_generic("v").map_err(|_| damaged())?.clone();
        let parts = match d.get("more") {
            None => return Ok(v),
            Some(Bson::Int32(n)) => *n as usize,
            Some(Bson::Int64(n)) => *n as usize,
            _ => return Err(damaged()),
        };
        let id = d.get_str("_id").map_err(|_| damaged())?;
        let find = doc! {
            "find": "kv_parts", "filter": {"k": id}, "batchSize": parts as i64 + 1, "singleBatch": true,
        };
        let reply = self.run(conn, "read", find)?;
        let docs = first_batch(&reply);
        // `HEX:1`, `HEX:2`, ... sort as text: order them by number.
        let mut numbered: Vec<(usize, &Vec<u8>)> = docs
            .iter()
            .filter_map(|p| {
                let n = p.get_str("_id").ok()?.rsplit_once(':')?.1.parse().ok()?;
                Some((n, p.get_binary_generic("v").ok()?))
            })
            .collect();
        numbered.sort_by_key(|(n, _)| *n);
        if numbered.len() != parts || numbered.iter().enumerate().any(|(i, (n, _))| *n != i + 1) {
            return Err(StoreError::corrupted(format!("{}: a long value misses parts", self.place)));
        }
        for (_, bytes) in numbered {
            v.extend_from_slice(bytes);
        }
        Ok(v)
    }

    fn write(&self, conn: &mut Conn, batch: &Batch, revision: u64) -> Result<u64> {
        if let Some(expect) = batch.expect_revision.filter(|e| *e != revision) {
            return Err(StoreError::stale_batch(expect, revision));
        }
        let next = revision + 1;
        let bump = doc! {
            "update": "meta",
            "updates": [{"q": {"_id": "revision", "r": revision as i64}, "u": {"$set": {"r": next as i64}}}],
        };
        let reply = match self.run(conn, "commit", bump) {
            Ok(reply) => reply,
            Err(e) => {
                if e.kind() == ErrorKind::Conflict {
                    // Another transaction holds the revision document: if
                    // its client is gone, end it now rather than when the
                    // server expires it (the engine then tries again).
                    let _ = self.reap(conn);
                }
                return Err(e);
            }
        };
        if count(&reply) != 1 {
            return Err(StoreError::new(
                ErrorKind::Conflict,
                format!("{}: another writer committed first (the revision is no longer {revision})", self.place),
            ));
        }
        // Runs of puts and of deletes, each sent as a few commands, in order.
        let mut w = Writes::default();
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => {
                    let id = hex(k);
                    if !w.deletes.is_empty() {
                        w.flush(self, conn)?;
                    }
                    if v.len() > PART {
                        // Alone, in order: the old parts, the new ones, the document.
                        w.flush(self, conn)?;
                        let delete = doc! {"delete": "kv_parts", "deletes": [{"q": {"k": &id}, "limit": 0}]};
                        self.run(conn, "commit", delete)?;
                        let chunks: Vec<&[u8]> = v.chunks(PART).collect();
                        for (i, c) in chunks.iter().enumerate().skip(1) {
                            let part = doc! {"_id": format!("{id}:{i}"), "k": &id, "v": binary(c)};
                            self.run(conn, "commit", doc! {"insert": "kv_parts", "documents": [part]})?;
                        }
                        let u = doc! {"_id": &id, "k": &id, "v": binary(chunks[0]), "more": (chunks.len() - 1) as i64};
                        w.updates.push(Bson::Document(doc! {"q": {"_id": &id}, "u": u, "upsert": true}));
                    } else {
                        let u = doc! {"_id": &id, "k": &id, "v": binary(v)};
                        w.updates.push(Bson::Document(doc! {"q": {"_id": &id}, "u": u, "upsert": true}));
                    }
                }
                BatchOp::Delete(k) => {
                    if !w.updates.is_empty() {
                        w.flush(self, conn)?;
                    }
                    let id = hex(k);
                    w.deletes.push(Bson::Document(doc! {"q": {"_id": &id}, "limit": 1}));
                    w.part_keys.push(Bson::String(id));
                }
                BatchOp::DeletePrefix(p) => {
                    if !w.updates.is_empty() {
                        w.flush(self, conn)?;
                    }
                    // The range's keys (the batch's puts before included),
                    // then deletes of them by key in commands of `CHUNK`:
                    // SecantusDB does all of a range delete in one statement,
                    // which for 10,000 keys took 23-69 s on a loaded server.
                    let lo = hex(p);
                    let range = match prefix_end(p) {
                        Some(end) => doc! {"$gte": &lo, "$lt": hex(&end)},
                        None => doc! {"$gte": &lo},
                    };
                    let mut next = Some(doc! {
                        "find": "kv", "filter": {"k": range}, "projection": {"_id": 1}, "batchSize": ID_PAGE,
                    });
                    while let Some(cmd) = next.take() {
                        let (cursor, docs) = self.page(conn, "commit", cmd)?;
                        for d in docs {
                            let id = d.get_str("_id").map_err(|_| self.damaged())?;
                            w.deletes.push(Bson::Document(doc! {"q": {"_id": id}, "limit": 1}));
                            w.part_keys.push(Bson::String(id.to_string()));
                            if w.deletes.len() >= CHUNK {
                                w.flush(self, conn)?;
                            }
                        }
                        if cursor != 0 {
                            next = Some(doc! {"getMore": cursor, "collection": "kv", "batchSize": ID_PAGE});
                        }
                    }
                }
            }
            if w.updates.len() >= CHUNK || w.deletes.len() >= CHUNK {
                w.flush(self, conn)?;
            }
        }
        w.flush(self, conn)?;
        let mut commit = doc! {
            "commitTransaction": 1,
            "writeConcern": {"w": 1, "j": self.sync == SyncMode::Commit},
        };
        self.in_txn(conn, &mut commit);
        commit.insert("$db", "admin");
        conn.command(&commit).map_err(|f| self.fail("commit", f))?;
        Ok(next)
    }

    fn commit_on(&self, mut conn: Conn, batch: &Batch, revision: u64) -> Result<u64> {
        let result = self.write(&mut conn, batch, revision);
        match result {
            Ok(_) => self.give_back(conn),
            Err(_) => self.end(conn),
        }
        result
    }
}

/// The statements of a commit not sent yet: a run of puts or a run of
/// deletes (never both: a run ends where the other kind begins, which keeps
/// the batch's order).
#[derive(Default)]
struct Writes {
    /// Upserts of `kv`.
    updates: Vec<Bson>,
    /// Deletes of `kv`, by key.
    deletes: Vec<Bson>,
    /// The keys deleted, whose parts (if any) go too: one `$in` statement.
    part_keys: Vec<Bson>,
}

impl Writes {
    fn flush(&mut self, b: &MongoBackend, conn: &mut Conn) -> Result<()> {
        if !self.updates.is_empty() {
            let cmd = doc! {"update": "kv", "updates": std::mem::take(&mut self.updates), "ordered": true};
            b.run(conn, "commit", cmd)?;
        }
        if !self.deletes.is_empty() {
            let cmd = doc! {"delete": "kv", "deletes": std::mem::take(&mut self.deletes), "ordered": true};
            b.run(conn, "commit", cmd)?;
            let keys = std::mem::take(&mut self.part_keys);
            let cmd =
                doc! {"delete": "kv_parts", "deletes": [{"q": {"k": {"$in": keys}}, "limit": 0}], "ordered": true};
            b.run(conn, "commit", cmd)?;
        }
        Ok(())
    }
}

/// The server's ids of the connections a `currentOp` reply lists.
fn connection_ids(ops: &Document) -> std::collections::HashSet<i64> {
    ops.get_array("inprog")
        .map(|a| {
            a.iter()
                .filter_map(|o| match o.as_document()?.get("connectionId")? {
                    Bson::Int32(n) => Some(i64::from(*n)),
                    Bson::Int64(n) => Some(*n),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The number of documents a write command matched (`n`).
fn count(reply: &Document) -> i64 {
    match reply.get("n") {
        Some(Bson::Int32(n)) => i64::from(*n),
        Some(Bson::Int64(n)) => *n,
        _ => 0,
    }
}

fn first_batch(reply: &Document) -> Vec<Document> {
    reply
        .get_document("cursor")
        .and_then(|c| c.get_array("firstBatch"))
        .map(|a| a.iter().filter_map(|d| d.as_document().cloned()).collect())
        .unwrap_or_default()
}

/// A transaction on a pooled connection; aborted (the connection pooled
/// again) on drop unless committed.
struct MongoView<'a> {
    backend: &'a MongoBackend,
    conn: Mutex<Option<Conn>>,
    revision: u64,
}

impl Drop for MongoView<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            self.backend.end(conn);
        }
    }
}

impl MongoView<'_> {
    fn on_conn<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T>) -> Result<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        f(guard.as_mut().expect("live until dropped or committed"))
    }
}

impl Snapshot for MongoView<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let b = self.backend;
        self.on_conn(|conn| {
            let find = doc! {"find": "kv", "filter": {"_id": hex(key)}, "limit": 1i64, "singleBatch": true};
            let reply = b.run(conn, "read", find)?;
            match first_batch(&reply).first() {
                None => Ok(None),
                Some(d) => b.value_of(conn, d).map(Some),
            }
        })
    }

    /// One query of the range on the index of `k`, read through its cursor
    /// in batches that grow from `FIRST_PAGE` to `MAX_PAGE` (the server
    /// finds the range once; a scan that stops early closes the cursor).
    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        if end.is_some_and(|end| end <= start) {
            return Ok(());
        }
        let b = self.backend;
        let mut range = doc! {"$gte": hex(start)};
        if let Some(end) = end {
            range.insert("$lt", hex(end));
        }
        let find = doc! {
            "find": "kv", "filter": {"k": range}, "sort": {"k": if reverse { -1 } else { 1 }},
            "batchSize": FIRST_PAGE,
        };
        let mut next = Some(find);
        let mut batch = FIRST_PAGE;
        while let Some(cmd) = next.take() {
            let (cursor, page) = self.on_conn(|conn| {
                let (cursor, docs) = b.page(conn, "scan", cmd)?;
                let mut page = Vec::with_capacity(docs.len());
                for d in &docs {
                    let k = d.get_str("_id").ok().and_then(unhex).ok_or_else(|| b.damaged())?;
                    page.push((k, b.value_of(conn, d)?));
                }
                Ok((cursor, page))
            })?;
            for (k, v) in &page {
                if !visit(k, v)? {
                    if cursor != 0 {
                        // Best effort: the server drops an idle cursor anyway.
                        let _ =
                            self.on_conn(|conn| b.run(conn, "scan", doc! {"killCursors": "kv", "cursors": [cursor]}));
                    }
                    return Ok(());
                }
            }
            if cursor != 0 {
                batch = (batch * 4).min(MAX_PAGE);
                next = Some(doc! {"getMore": cursor, "collection": "kv", "batchSize": batch});
            }
        }
        Ok(())
    }
}

impl WriteView for MongoView<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        let conn = self.conn.lock().unwrap_or_else(|p| p.into_inner()).take().expect("live until committed");
        self.backend.commit_on(conn, batch, self.revision)
    }
}

impl Drop for MongoBackend {
    /// Ends the sessions of recorded connections that went while the store
    /// was open: a client killed in the middle of a statement stays listed
    /// until the server has finished that statement, so the reap at open
    /// may have passed it over. Best effort, on a pooled connection (none:
    /// nothing to do), with a short timeout.
    fn drop(&mut self) {
        let pooled = self.idle.get_mut().unwrap_or_else(|p| p.into_inner()).pop();
        if let Some(mut conn) = pooled {
            let timeout = Some(self.io_timeout.min(CLOSE_TIMEOUT));
            if conn.stream.set_read_timeout(timeout).is_ok() && conn.stream.set_write_timeout(timeout).is_ok() {
                let _ = self.reap(&mut conn);
            }
        }
    }
}

impl Backend for MongoBackend {
    fn kind(&self) -> &'static str {
        "mongodb"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let (conn, revision) = self.begin()?;
        Ok(Box::new(MongoView { backend: self, conn: Mutex::new(Some(conn)), revision }))
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let (conn, revision) = self.begin()?;
        self.commit_on(conn, batch, revision)
    }

    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        let (conn, revision) = self.begin()?;
        Ok(Box::new(MongoView { backend: self, conn: Mutex::new(Some(conn)), revision }))
    }

    fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    fn announces(&self) -> bool {
        true
    }

    /// A change stream of the revision document on a connection of its
    /// own, read by a thread that hands the revisions on (see the `listen`
    /// module).
    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        self.listen()
    }

    fn leases(&self) -> bool {
        true
    }

    /// A document whose expiry a thread renews (see the `lease` module).
    fn lease(&self) -> Result<Box<dyn canopy_store::lease::Lease>> {
        self.take_lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.held_leases(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keeps_byte_order() {
        let keys: [&[u8]; 6] = [b"", b"\x00", b"\x00\xff", b"\x01", b"\x10a", b"\xff"];
        for w in keys.windows(2) {
            assert!(hex(w[0]) < hex(w[1]), "{:?} {:?}", w[0], w[1]);
        }
        assert_eq!(unhex(&hex(b"\x00ab\xff")).unwrap(), b"\x00ab\xff");
        assert_eq!(unhex("abc"), None);
    }

    /// The store of a new database of the server `CANOPY_MONGODB_URL`
    /// names (`None`: not set), and the directory its name comes from.
    fn test_store() -> Option<(StoreUrl, tempfile::TempDir)> {
        let server = canopy_store::conformance::server_url("CANOPY_MONGODB_URL")?;
        let dir = tempfile::tempdir().unwrap();
        let mut url = url::Url::parse(&server).unwrap();
        url.set_path(&canopy_store::conformance::namespace_of("u_", dir.path()));
        Some((StoreUrl::parse(url.as_str()).unwrap(), dir))
    }

    /// A client killed in a transaction: its session, transaction and
    /// connection, the connection closed (dropping a `Conn` sends nothing).
    fn kill(conn: Conn) -> (Document, i64, i64) {
        (conn.lsid.clone(), conn.txn, conn.server_id)
    }

    /// Waits until the server no longer lists the connections `killed`.
    fn wait_until_gone(b: &MongoBackend, conn: &mut Conn, killed: &[(Document, i64, i64)]) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let ops = conn
                .command(&doc! {"currentOp": 1, "$all": true, "$db": "admin"})
                .unwrap_or_else(|f| panic!("{}", b.fail("list the connections", f)));
            let live = connection_ids(&ops);
            if killed.iter().all(|(_, _, id)| !live.contains(id)) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "the server still lists the closed connections");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A statement of each transaction `killed`, from `conn` (a session is
    /// not bound to a connection): the server no longer has them.
    fn assert_ended(b: &MongoBackend, conn: &mut Conn, killed: Vec<(Document, i64, i64)>) {
        for (i, (lsid, txn, _)) in killed.into_iter().enumerate() {
            let find = doc! {
                "find": "meta", "filter": {}, "lsid": lsid, "txnNumber": txn, "autocommit": false, "$db": &b.db,
            };
            match conn.command(&find) {
                Err(Failure::Server { code: 251, .. }) => {}
                Ok(_) => panic!("the transaction of killed client {i} is still open"),
                Err(f) => panic!("{}", b.fail("read", f)),
            }
        }
    }

    /// Clients killed with transactions open leave them on the server (a
    /// snapshot's too, which pins the server's old versions); the next open
    /// of the store ends every one of them.
    #[test]
    fn killed_clients_transactions_are_ended_at_the_next_open() {
        let Some((url, _dir)) = test_store() else { return };
        let b = MongoBackend::open_url(&url).unwrap();
        // Two snapshots' transactions, on two connections.
        let (first, _) = b.begin().unwrap();
        let (second, _) = b.begin().unwrap();
        let killed = vec![kill(first), kill(second)];
        let mut conn = b.connect().unwrap();
        wait_until_gone(&b, &mut conn, &killed);
        MongoBackend::open_url(&url).unwrap();
        assert_ended(&b, &mut conn, killed);
    }

    /// A client killed while the store was being opened (still listed then,
    /// as one killed in the middle of a statement is): closing the store
    /// ends its transaction.
    #[test]
    fn a_client_gone_while_the_store_was_open_is_ended_at_close() {
        let Some((url, _dir)) = test_store() else { return };
        let b = MongoBackend::open_url(&url).unwrap();
        let (in_txn, _) = b.begin().unwrap();
        let other = MongoBackend::open_url(&url).unwrap();
        let killed = vec![kill(in_txn)];
        let mut conn = b.connect().unwrap();
        wait_until_gone(&b, &mut conn, &killed);
        drop(other);
        assert_ended(&b, &mut conn, killed);
    }

    #[test]
    fn bad_urls_are_refused() {
        for (url, kind) in [
            ("mongodb://h1:1,h2:2/db", ErrorKind::InvalidUrl),
            ("mongodb://h/a.b", ErrorKind::InvalidUrl),
            ("mongodb://h/db?directConnection=false", ErrorKind::InvalidUrl),
            ("mongodb://h/db?replicaSet=x", ErrorKind::InvalidUrl),
            ("mongodb://me:secret@h/db", ErrorKind::Unsupported),
            ("mongodb://h/db?tls=true", ErrorKind::Unsupported),
        ] {
            let e = MongoBackend::open_url(&StoreUrl::parse(url).unwrap()).err().unwrap();
            assert_eq!(e.kind(), kind, "{url}: {e}");
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }
}
