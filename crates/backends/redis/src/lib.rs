//! canopy's Redis backend: `redis://:PASSWORD@HOST:PORT/DB?prefix=P`.
//!
//! * Layout, under the key prefix `{P}` (one store per prefix; the braces
//!   keep a store's keys in one hash slot): `{P}:k`, a sorted set of the
//!   store's keys, all of score 0, so that Redis orders them bytewise and
//!   `ZRANGE ... BYLEX` is a range scan in canopy's key order; `{P}:v`, a hash
//!   of the values; `{P}:rev`, the revision.
//! * Every batch is one Lua script (`src/lua/commit.lua`): it compares the
//!   revision with the one the batch expects, applies the operations (a
//!   prefix delete is a `ZRANGE BYLEX` and `ZREMRANGEBYLEX` of its range)
//!   and increments the revision. Redis runs a script alone, so a batch is
//!   atomic for every reader and writer.
//! * Snapshots: Redis has none, so a snapshot is registered in the store
//!   (`{P}:snaps`, with a lease renewed by its reads, 5 minutes by default,
//!   `?snapshot_lease=`). While one is registered, each commit saves the
//!   previous state of the keys it changes in undo records of its revision;
//!   a snapshot's reads (scripts too) see the current data through the undo
//!   records of the revisions after its own. A commit deletes the undo
//!   records no registered snapshot needs. A snapshot unused for longer than
//!   its lease loses them, and its next read fails (`Unavailable`) rather
//!   than mixing revisions.
//! * Durability is the server's: with `sync=commit` the store must be
//!   opened on a server with `appendonly yes` and `appendfsync always`,
//!   which writes and flushes the append-only file before it replies to a
//!   script (checked at open when `CONFIG GET` is allowed);
//!   `sync=off` accepts any configuration.
//! * A standalone server (not Redis Cluster: the scripts reach keys of one
//!   prefix that they do not declare).

mod lease;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use canopy_store::backend::{
    prefix_end, Announcements, Backend, Batch, BatchOp, ChannelAnnouncements, Heard, Snapshot, SyncMode, Visit,
    WriteView,
};
use canopy_store::error::{ErrorKind, Result, StoreError};
use canopy_store::StoreUrl;
use redis::{Connection, Script, Value};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one command may take before the server counts as unreachable.
const IO_TIMEOUT: Duration = Duration::from_secs(60);
const SNAPSHOT_LEASE: Duration = Duration::from_secs(300);
const MAX_IDLE: usize = 8;
/// How often the listening thread looks whether anyone still listens.
const LISTEN_POLL: Duration = Duration::from_millis(500);
const FIRST_PAGE: usize = 64;
/// Keys one `get_many` script reads at most.
const GET_MANY_CHUNK: usize = 1000;
const MAX_PAGE: usize = 1024;

const COMMON: &str = include_str!("lua/common.lua");

struct Scripts {
    open: Script,
    close: Script,
    get: Script,
    get_many: Script,
    scan: Script,
    commit: Script,
}

impl Scripts {
    fn new() -> Scripts {
        let s = |body: &str| Script::new(&format!("{COMMON}\n{body}"));
        Scripts {
            open: s(include_str!("lua/open.lua")),
            close: s(include_str!("lua/close.lua")),
            get: s(include_str!("lua/get.lua")),
            get_many: s(include_str!("lua/get_many.lua")),
            scan: s(include_str!("lua/scan.lua")),
            commit: s(include_str!("lua/commit.lua")),
        }
    }
}

/// A store under one key prefix of a Redis database.
pub struct RedisBackend {
    client: redis::Client,
    /// `redis server HOST:PORT (database N, prefix P)`: what messages name.
    place: String,
    /// `{P}`, the scripts' KEYS[1].
    prefix: String,
    sync: SyncMode,
    connect_timeout: Duration,
    io_timeout: Duration,
    lease_ms: u64,
    /// How long this process's lease outlives its last renewal (`lease`).
    lease_time: Duration,
    scripts: Scripts,
    idle: Mutex<Vec<Connection>>,
}

fn redis_err(place: &str, what: &str, e: &redis::RedisError) -> StoreError {
    let kind = if e.is_timeout() || e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        ErrorKind::Unavailable
    } else {
        match e.code() {
            Some("OOM") => ErrorKind::NoSpace,
            // A write's unregistered read after another writer's commit.
            Some("CONFLICT") => ErrorKind::Conflict,
            Some("WRONGTYPE") => ErrorKind::Corrupted,
            Some("NOAUTH" | "WRONGPASS" | "NOPERM" | "LOADING" | "BUSY" | "MASTERDOWN" | "READONLY" | "EXPIRED") => {
                ErrorKind::Unavailable
            }
            _ if e.kind() == redis::ErrorKind::AuthenticationFailed => ErrorKind::Unavailable,
            _ => ErrorKind::Io,
        }
    };
    let hint = if e.is_timeout() {
        " (timed out: the server is unreachable or busy)"
    } else if kind == ErrorKind::Corrupted {
        " (the prefix holds keys that are not a canopy store's)"
    } else {
        ""
    };
    StoreError::new(kind, format!("{place}: {what}: {e}{hint}"))
}

/// `[bytes` / `(bytes`: a `ZRANGE BYLEX` bound.
fn lex(inclusive: bool, key: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(key.len() + 1);
    b.push(if inclusive { b'[' } else { b'(' });
    b.extend_from_slice(key);
    b
}

fn bytes(v: Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.into_bytes()),
        Value::Int(n) => Some(n.to_string().into_bytes()),
        _ => None,
    }
}

fn number(v: Value) -> Option<u64> {
    bytes(v).and_then(|b| String::from_utf8(b).ok()).and_then(|s| s.parse().ok())
}

impl RedisBackend {
    /// Opens the store a URL names:
    /// `redis://[USER][:PASSWORD@]HOST[:PORT][/DB]?prefix=P&sync=commit|off`
    /// (`connect_timeout=5s`, `timeout=60s` per command, `snapshot_lease=300s`,
    /// `lease=10s`: the time of this process's lease, see [`Backend::lease`]).
    ///
    /// # Errors
    /// `InvalidUrl` for a URL that does not parse or unknown parameters;
    /// `Unavailable` when the server cannot be reached or refuses the login;
    /// `Unsupported` with `sync=commit` on a server that does not flush its
    /// append-only file before replying; `Corrupted` when the prefix holds
    /// other keys of the layout's names.
    pub fn open_url(url: &StoreUrl) -> Result<RedisBackend> {
        url.check_params(&["sync", "prefix", "connect_timeout", "timeout", "snapshot_lease", "lease"])?;
        let bad = |why: String| {
            StoreError::new(ErrorKind::InvalidUrl, format!("invalid store URL `{}`: {why}", url.redacted()))
        };
        let parsed = url::Url::parse(&format!("redis:{}", url.location)).map_err(|e| bad(e.to_string()))?;
        let host = match parsed.host_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => return Err(bad("no server host (redis://HOST:PORT/DB)".into())),
        };
        let port = parsed.port().unwrap_or(6379);
        let db: i64 = match parsed.path().trim_start_matches('/') {
            "" => 0,
            d => d.parse().ok().filter(|n| *n >= 0).ok_or_else(|| bad(format!("`{d}` is not a database number")))?,
        };
        let prefix = url.params.get("prefix").cloned().unwrap_or_else(|| "canopy".into());
        if prefix.is_empty() || prefix.len() > 200 || prefix.contains(['{', '}']) {
            return Err(bad(format!("prefix `{prefix}`: expected 1 to 200 characters without braces")));
        }
        let sync = url.sync_mode()?;
        let connect_timeout = url.duration("connect_timeout", CONNECT_TIMEOUT)?;
        let io_timeout = url.duration("timeout", IO_TIMEOUT)?;
        let lease = url.duration("snapshot_lease", SNAPSHOT_LEASE)?;
        let lease_time = canopy_store::lease::lease_time(url)?;
        let place = format!("redis server {host}:{port} (database {db}, prefix {prefix})");
        // The driver's own URL: credentials and database, nothing of canopy's.
        let mut target = url::Url::parse("redis://localhost").expect("a valid URL");
        target.set_host(Some(&host)).map_err(|e| bad(e.to_string()))?;
        let _ = target.set_port(Some(port));
        let _ = target.set_username(parsed.username());
        let _ = target.set_password(parsed.password());
        target.set_path(&format!("/{db}"));
        let client = redis::Client::open(target.as_str()).map_err(|e| {
            StoreError::new(
                ErrorKind::InvalidUrl,
                format!("{place}: {}", e.to_string().replace(parsed.password().unwrap_or("\u{0}"), "***")),
            )
        })?;
        let backend = RedisBackend {
            client,
            place,
            prefix: format!("{{{prefix}}}"),
            sync,
            connect_timeout,
            io_timeout: if io_timeout.is_zero() { IO_TIMEOUT } else { io_timeout },
            lease_ms: lease.as_millis().max(1) as u64,
            lease_time,
            scripts: Scripts::new(),
            idle: Mutex::new(Vec::new()),
        };
        let mut conn = backend.connect()?;
        backend.check_server(&mut conn)?;
        backend.give_back(conn);
        Ok(backend)
    }

    fn err(&self, what: &str, e: &redis::RedisError) -> StoreError {
        redis_err(&self.place, what, e)
    }

    fn connect(&self) -> Result<Connection> {
        let conn = self.client.get_connection_with_timeout(self.connect_timeout).map_err(|e| {
            let mut err = self.err("connect", &e);
            if err.kind() == ErrorKind::Unavailable && (e.is_io_error() || e.is_timeout()) {
                err = StoreError::new(
                    ErrorKind::Unavailable,
                    format!("{}: unreachable (cannot connect: {e})", self.place),
                );
            }
            err
        })?;
        conn.set_read_timeout(Some(self.io_timeout)).map_err(|e| self.err("connect", &e))?;
        conn.set_write_timeout(Some(self.io_timeout)).map_err(|e| self.err("connect", &e))?;
        // Named after the store, for `CLIENT LIST` (`canopy:{P}`).
        let mut conn = conn;
        redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg(format!("canopy:{}", self.prefix))
            .query::<()>(&mut conn)
            .map_err(|e| self.err("connect", &e))?;
        Ok(conn)
    }

    /// The layout's keys are of their types (or absent), and with
    /// `sync=commit` the server flushes before it replies.
    fn check_server(&self, conn: &mut Connection) -> Result<()> {
        for (suffix, want) in [(":k", "zset"), (":v", "hash"), (":rev", "string")] {
            let key = format!("{}{suffix}", self.prefix);
            let kind: String = redis::cmd("TYPE").arg(&key).query(conn).map_err(|e| self.err("open", &e))?;
            if kind != "none" && kind != want {
                return Err(StoreError::corrupted(format!(
                    "{}: not a canopy store (its key {key} is a {kind}, not a {want})",
                    self.place
                )));
            }
        }
        if self.sync == SyncMode::Commit {
            let config: redis::RedisResult<Vec<String>> = redis::cmd("CONFIG").arg("GET").arg("append*").query(conn);
            // A server that does not let us read its configuration is trusted.
            if let Ok(pairs) = config {
                let get = |name: &str| pairs.chunks(2).find(|kv| kv[0] == name).map(|kv| kv[1].clone());
                let (aof, fsync) = (get("appendonly"), get("appendfsync"));
                if aof.as_deref() != Some("yes") || fsync.as_deref() != Some("always") {
                    return Err(StoreError::new(
                        ErrorKind::Unsupported,
                        format!(
                            "{}: sync=commit needs a server that flushes every write (`appendonly yes`, \
                             `appendfsync always`); this one has appendonly {}, appendfsync {} \
                             (open it with ?sync=off to accept losing recent commits)",
                            self.place,
                            aof.as_deref().unwrap_or("?"),
                            fsync.as_deref().unwrap_or("?")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn idle(&self) -> MutexGuard<'_, Vec<Connection>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn give_back(&self, conn: Connection) {
        let mut idle = self.idle();
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }

    /// Runs `f` on a pooled connection; a connection whose command failed
    /// on the way (not with the server's answer) is dropped.
    fn with_conn<T>(&self, what: &str, f: impl Fn(&mut Connection) -> redis::RedisResult<T>) -> Result<T> {
        self.on_conn(what, false, f)
    }

    /// As [`RedisBackend::with_conn`], for a command that changes nothing: a
    /// pooled connection found closed (the server restarted) is replaced and
    /// the command sent again, once. (A commit is not: whether the server ran
    /// it before the connection broke is unknown.)
    fn reading<T>(&self, what: &str, f: impl Fn(&mut Connection) -> redis::RedisResult<T>) -> Result<T> {
        self.on_conn(what, true, f)
    }

    fn on_conn<T>(&self, what: &str, retry: bool, f: impl Fn(&mut Connection) -> redis::RedisResult<T>) -> Result<T> {
        let mut retried = false;
        loop {
            let pooled = self.idle().pop();
            let from_pool = pooled.is_some();
            let mut conn = match pooled {
                Some(c) => c,
                None => self.connect()?,
            };
            match f(&mut conn) {
                Ok(v) => {
                    self.give_back(conn);
                    return Ok(v);
                }
                Err(e) if e.is_connection_dropped() || e.is_io_error() || e.is_timeout() => {
                    if retry && from_pool && !retried && !e.is_timeout() {
                        self.idle().clear();
                        retried = true;
                        continue;
                    }
                    return Err(self.err(what, &e));
                }
                Err(e) => {
                    self.give_back(conn);
                    return Err(self.err(what, &e));
                }
            }
        }
    }

    fn new_snapshot_id() -> String {
        format!("{:016x}", rand::random::<u64>())
    }
}

/// A registered snapshot: its id and revision; unregistered on drop.
struct RedisSnapshot<'a> {
    backend: &'a RedisBackend,
    id: String,
    revision: u64,
}

impl Drop for RedisSnapshot<'_> {
    fn drop(&mut self) {
        // A write's view registered nothing.
        if self.id.is_empty() {
            return;
        }
        // Best effort: an unregistered snapshot's lease ends it anyway.
        let b = self.backend;
        let _ = b
            .with_conn("end a snapshot", |c| b.scripts.close.key(&b.prefix).arg(&self.id).invoke::<Value>(c).map(drop));
    }
}

impl Snapshot for RedisSnapshot<'_> {
    fn revision(&self) -> u64 {
        self.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let b = self.backend;
        let reply: Vec<Vec<u8>> = b.reading("read", |c| {
            b.scripts.get.key(&b.prefix).arg(&self.id).arg(self.revision).arg(b.lease_ms).arg(key).invoke(c)
        })?;
        Ok(reply.into_iter().next())
    }

    fn remote(&self) -> bool {
        true
    }

    /// One script for every key (for every 1,000: a script's arguments are
    /// unpacked on Lua's stack).
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.len() > GET_MANY_CHUNK {
            let mut out = Vec::with_capacity(keys.len());
            for chunk in keys.chunks(GET_MANY_CHUNK) {
                out.extend(self.get_many(chunk)?);
            }
            return Ok(out);
        }
        let b = self.backend;
        let reply: Vec<Value> = b.reading("read", |c| {
            let mut inv = b.scripts.get_many.key(&b.prefix);
            inv.arg(&self.id).arg(self.revision).arg(b.lease_ms);
            for k in keys {
                inv.arg(*k);
            }
            inv.invoke(c)
        })?;
        let damaged = || StoreError::corrupted(format!("{}: a read's reply is not a canopy script's", b.place));
        let mut items = reply.into_iter().map(bytes);
        let found = items.next().flatten().ok_or_else(damaged)?;
        if found.len() != keys.len() {
            return Err(damaged());
        }
        found
            .iter()
            .map(|f| match f {
                b'1' => items.next().flatten().map(Some).ok_or_else(damaged),
                _ => Ok(None),
            })
            .collect()
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        if end.is_some_and(|end| end <= start) {
            return Ok(());
        }
        let b = self.backend;
        let mut low = lex(true, start);
        let mut high = end.map_or_else(|| b"+".to_vec(), |e| lex(false, e));
        let mut limit = FIRST_PAGE;
        loop {
            let reply: Vec<Value> = b.reading("scan", |c| {
                b.scripts
                    .scan
                    .key(&b.prefix)
                    .arg(&self.id)
                    .arg(self.revision)
                    .arg(b.lease_ms)
                    .arg(&low)
                    .arg(&high)
                    .arg(if reverse { "1" } else { "0" })
                    .arg(limit)
                    .invoke(c)
            })?;
            let damaged = || StoreError::corrupted(format!("{}: a scan's reply is not a canopy script's", b.place));
            let mut items = reply.into_iter().map(bytes);
            let more = items.next().flatten().ok_or_else(damaged)? == b"1";
            let boundary = items.next().flatten().ok_or_else(damaged)?;
            while let Some(k) = items.next() {
                let (Some(k), Some(Some(v))) = (k, items.next()) else { return Err(damaged()) };
                if !visit(&k, &v)? {
                    return Ok(());
                }
            }
            if !more {
                return Ok(());
            }
            if reverse {
                high = lex(false, &boundary);
            } else {
                low = lex(false, &boundary);
            }
            limit = (limit * 4).min(MAX_PAGE);
        }
    }
}

/// A write's view (see [`RedisBackend::begin_write`]).
struct RedisWrite<'a>(RedisSnapshot<'a>);

impl Snapshot for RedisWrite<'_> {
    fn revision(&self) -> u64 {
        self.0.revision
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.get(key)
    }

    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.0.get_many(keys)
    }

    fn remote(&self) -> bool {
        true
    }

    fn scan(&self, start: &[u8], end: Option<&[u8]>, reverse: bool, visit: &mut Visit<'_>) -> Result<()> {
        self.0.scan(start, end, reverse, visit)
    }
}

impl WriteView for RedisWrite<'_> {
    fn commit(self: Box<Self>, batch: &Batch) -> Result<u64> {
        canopy_store::backend::apply_at(self.0.backend, self.0.revision, batch)
    }
}

impl Backend for RedisBackend {
    fn kind(&self) -> &'static str {
        "redis"
    }

    fn snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let id = RedisBackend::new_snapshot_id();
        let revision = self.reading("begin a snapshot", |c| {
            self.scripts.open.key(&self.prefix).arg(&id).arg(self.lease_ms).invoke::<Value>(c)
        })?;
        let revision = number(revision)
            .ok_or_else(|| StoreError::corrupted(format!("{}: the revision is damaged", self.place)))?;
        Ok(Box::new(RedisSnapshot { backend: self, id, revision }))
    }

    /// One `GET` of the revision, registering nothing: its reads fail with
    /// `Conflict` once another writer has committed, and nothing ends it.
    fn brief_snapshot(&self) -> Result<Box<dyn Snapshot + '_>> {
        let revision = Backend::revision(self)?;
        Ok(Box::new(RedisSnapshot { backend: self, id: String::new(), revision }))
    }

    fn takes_revisions(&self) -> bool {
        true
    }

    /// Nothing asked: the reads' scripts fail with `Conflict` when the store
    /// is not at `revision`.
    fn brief_snapshot_at(&self, revision: u64) -> Result<Box<dyn Snapshot + '_>> {
        Ok(Box::new(RedisSnapshot { backend: self, id: String::new(), revision }))
    }

    /// One `GET` of the revision key (no snapshot registered).
    fn revision(&self) -> Result<u64> {
        let key = format!("{}:rev", self.prefix);
        let v = self.reading("read the revision", |c| redis::cmd("GET").arg(&key).query::<Value>(c))?;
        match v {
            Value::Nil => Ok(0),
            v => number(v).ok_or_else(|| StoreError::corrupted(format!("{}: the revision is damaged", self.place))),
        }
    }

    fn apply(&self, batch: &Batch) -> Result<u64> {
        let mut inv = self.scripts.commit.key(&self.prefix);
        match batch.expect_revision {
            Some(r) => inv.arg(r),
            None => inv.arg(""),
        };
        for op in &batch.ops {
            match op {
                BatchOp::Put(k, v) => inv.arg("p").arg(k).arg(v),
                BatchOp::Delete(k) => inv.arg("d").arg(k),
                BatchOp::DeletePrefix(p) => {
                    let high = prefix_end(p).map_or_else(|| b"+".to_vec(), |e| lex(false, &e));
                    inv.arg("r").arg(lex(true, p)).arg(high)
                }
            };
        }
        let reply: Vec<Value> = self.with_conn("commit", |c| inv.invoke(c))?;
        let mut it = reply.into_iter().map(bytes);
        let damaged = || StoreError::corrupted(format!("{}: a commit's reply is not a canopy script's", self.place));
        let status = it.next().flatten().ok_or_else(damaged)?;
        let revision: u64 = it
            .next()
            .flatten()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|s| s.parse().ok())
            .ok_or_else(damaged)?;
        match status.as_slice() {
            b"ok" => Ok(revision),
            b"conflict" => Err(StoreError::stale_batch(batch.expect_revision.unwrap_or(revision), revision)),
            _ => Err(damaged()),
        }
    }

    /// A view that registers no snapshot: its reads see the revision it
    /// began at while the store is still there, and fail with `Conflict`
    /// once another writer committed (the commit would conflict anyway, and
    /// the transaction is built again). One `GET` to begin, nothing to end,
    /// and other writers keep no undo records for it.
    fn begin_write(&self) -> Result<Box<dyn WriteView + '_>> {
        let revision = Backend::revision(self)?;
        Ok(Box::new(RedisWrite(RedisSnapshot { backend: self, id: String::new(), revision })))
    }

    /// Nothing asked: the reads fail, and the commit script refuses the
    /// batch, as a conflict when the store is not at `revision`.
    fn begin_write_at(&self, revision: u64) -> Result<Box<dyn WriteView + '_>> {
        Ok(Box::new(RedisWrite(RedisSnapshot { backend: self, id: String::new(), revision })))
    }

    fn sync_mode(&self) -> SyncMode {
        self.sync
    }

    fn announces(&self) -> bool {
        true
    }

    /// A connection of its own subscribed to `{P}:commits`, which every
    /// commit's script publishes its revision to. A thread reads it (a
    /// subscribed connection does nothing else) and hands the revisions on.
    fn announcements(&self) -> Result<Box<dyn Announcements>> {
        let mut conn = self.connect()?;
        let channel = format!("{}:commits", self.prefix);
        let place = self.place.clone();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Heard>(1024);
        // Subscribed before this returns: no commit after it goes unheard.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        std::thread::Builder::new()
            .name("canopy-redis-listen".into())
            .spawn(move || {
                let mut pubsub = conn.as_pubsub();
                let subscribed = pubsub
                    .subscribe(&channel)
                    .and_then(|()| pubsub.set_read_timeout(Some(LISTEN_POLL)))
                    .map_err(|e| redis_err(&place, "subscribe", &e));
                let ok = subscribed.is_ok();
                let _ = ready_tx.send(subscribed);
                if !ok {
                    return;
                }
                loop {
                    let sent = match pubsub.get_message() {
                        Ok(m) => tx.try_send(Heard::Commit(
                            m.get_payload::<String>().ok().and_then(|p| p.parse().ok()).unwrap_or(u64::MAX),
                        )),
                        Err(e) if e.is_timeout() => match tx.try_send(Heard::Tick) {
                            // Nobody listens any more.
                            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => return,
                            _ => continue,
                        },
                        Err(e) => {
                            let _ = tx.try_send(Heard::Broken(redis_err(&place, "listen", &e)));
                            return;
                        }
                    };
                    if let Err(std::sync::mpsc::TrySendError::Disconnected(_)) = sent {
                        return;
                    }
                }
            })
            .map_err(|e| StoreError::io(format!("{}: listen", self.place), e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Box::new(ChannelAnnouncements::new(rx))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::new(ErrorKind::Unavailable, format!("{}: the listener ended", self.place))),
        }
    }

    fn leases(&self) -> bool {
        true
    }

    /// A key with an expiry, renewed by a thread (see the `lease` module).
    fn lease(&self) -> Result<Box<dyn canopy_store::lease::Lease>> {
        self.take_lease()
    }

    fn leases_held(&self, ids: &[u64]) -> Result<Vec<bool>> {
        self.held_leases(ids)
    }

    fn approx_len(&self) -> Result<Option<u64>> {
        let key = format!("{}:v", self.prefix);
        self.with_conn("count", |c| redis::cmd("HLEN").arg(&key).query::<u64>(c)).map(Some)
    }

    /// The memory the store's two main keys take in the server (Redis
    /// samples large keys: an estimate).
    fn disk_size(&self) -> Result<u64> {
        let mut total = 0;
        for suffix in [":k", ":v"] {
            let key = format!("{}{suffix}", self.prefix);
            let n: Option<u64> = self.with_conn("size", |c| redis::cmd("MEMORY").arg("USAGE").arg(&key).query(c))?;
            total += n.unwrap_or(0);
        }
        Ok(total)
    }

    /// The sorted set of keys and the hash of values hold the same keys.
    fn check(&self) -> Result<Vec<String>> {
        let (zk, vk) = (format!("{}:k", self.prefix), format!("{}:v", self.prefix));
        let (keys, values): (u64, u64) =
            self.with_conn("check", |c| redis::pipe().cmd("ZCARD").arg(&zk).cmd("HLEN").arg(&vk).query(c))?;
        let mut problems = Vec::new();
        if keys != values {
            problems.push(format!("{}: {keys} keys in {zk} but {values} values in {vk}", self.place));
        }
        Ok(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_are_refused_without_the_password() {
        for (url, says) in [
            ("redis://:secret@h/x", "database number"),
            ("redis://:secret@h/0?prefix=a{b}", "prefix"),
            ("redis://:secret@h/0?schema=s", "unknown parameter `schema`"),
            ("redis://:secret@h/0?timeout=soon", "timeout"),
        ] {
            let e = RedisBackend::open_url(&StoreUrl::parse(url).unwrap()).err().unwrap();
            assert_eq!(e.kind(), ErrorKind::InvalidUrl, "{url}: {e}");
            assert!(e.to_string().contains(says) && !e.to_string().contains("secret"), "{url}: {e}");
        }
    }
}
